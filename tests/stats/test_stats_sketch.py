"""QuantileSketch: exact below capacity, the documented rank bound above it."""

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest

from rlds_lite.stats import sketch as sketch_lib
import stats_testing

QS = (0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.99, 1.0)


def _data(name, n, rng):
  return {
      'uniform': lambda: rng.uniform(size=(n, 3)),
      'normal': lambda: rng.normal(size=(n, 3)),
      'ascending': lambda: np.tile(np.arange(n, dtype=float)[:, None], 3),
      'descending': lambda: np.tile(np.arange(n, 0, -1.0)[:, None], 3),
      'few-values': lambda: rng.integers(0, 3, (n, 3)).astype(float),
      'constant': lambda: np.full((n, 3), 7.0),
  }[name]()


@pytest.mark.parametrize('name', ['uniform', 'normal', 'ascending',
                                  'descending', 'few-values', 'constant'])
@pytest.mark.parametrize('n', [1, 37, 127], ids=['one', 'few', 'full'])
def test_exact_below_capacity(name, n):
  values = _data(name, n, np.random.default_rng(0))
  sketch = sketch_lib.QuantileSketch((3,), k=64)
  sketch.update(values[: n // 2])
  sketch.update(values[n // 2:])
  assert sketch.rank_error == 0 and sketch.count == n
  np.testing.assert_array_equal(
      sketch.quantile(QS),
      np.quantile(values, QS, axis=0, method='inverted_cdf'))


@pytest.mark.parametrize('name', ['uniform', 'normal', 'ascending',
                                  'descending', 'few-values', 'constant'])
@pytest.mark.parametrize('batch', [1000, 7, 20000], ids=['batches', 'small-batches', 'one-batch'])
def test_rank_error_within_documented_bound(name, batch):
  n, k = 20000, 32
  values = _data(name, n, np.random.default_rng(1))
  sketch = sketch_lib.QuantileSketch((3,), k=k, seed=3)
  for start in range(0, n, batch):
    sketch.update(values[start:start + batch])
  assert sketch.rank_error > 0
  assert sketch.rank_error <= n * sketch.levels / (2 * k)
  assert sketch.size <= sketch.levels * 2 * k  # Bounded memory.
  for q in QS:
    stats_testing.check_rank(values, q, sketch.quantile(q), sketch.rank_error)


@hypothesis.given(
    parts=st.lists(st.lists(st.floats(-1e6, 1e6), min_size=0, max_size=300),
                   min_size=1, max_size=5),
    k=st.integers(2, 40), seed=st.integers(0, 5))
def test_merged_sketches_keep_the_bound(parts, k, seed):
  sketches = []
  for part in parts:
    s = sketch_lib.QuantileSketch(k=k, seed=seed)
    s.update(np.asarray(part, np.float64))
    sketches.append(s)
  merged = sketches[0]
  for s in sketches[1:]:
    merged.merge(s)
  values = np.concatenate([np.asarray(p, np.float64) for p in parts])
  assert merged.count == len(values)
  if not len(values):
    assert np.isnan(merged.quantile(0.5))
    return
  for q in QS:
    stats_testing.check_rank(values, q, merged.quantile(q), merged.rank_error)


def test_deterministic_and_json_round_trip():
  values = np.random.default_rng(2).normal(size=(5000, 2))
  a, b = (sketch_lib.QuantileSketch((2,), k=16, seed=4) for _ in range(2))
  a.update(values)
  b.update(values)
  np.testing.assert_array_equal(a.quantile(QS), b.quantile(QS))
  c = sketch_lib.QuantileSketch.from_dict(a.to_dict())
  np.testing.assert_array_equal(c.quantile(QS), a.quantile(QS))
  assert (c.count, c.rank_error, c.levels) == (a.count, a.rank_error, a.levels)


def test_scalar_and_matrix_shapes():
  s = sketch_lib.QuantileSketch((2, 2), k=8)
  s.update(np.arange(12.0).reshape(3, 2, 2))
  assert s.quantile(0.5).tolist() == [[4.0, 5.0], [6.0, 7.0]]
  assert s.quantile([0.0, 1.0]).shape == (2, 2, 2)
  scalar = sketch_lib.QuantileSketch()
  scalar.update([3.0, 1.0, 2.0])
  assert float(scalar.quantile(0.5)) == 2.0


@pytest.mark.parametrize('call, message', [
    (lambda s: s.update(np.zeros((3, 2))), r'rows of shape \(2,\), the sketch has shape \(\)'),
    (lambda s: s.merge(sketch_lib.QuantileSketch(k=5)), 'differ in shape or k'),
    (lambda s: s.quantile(1.5), r'q must be in \[0, 1\]'),
    (lambda s: sketch_lib.QuantileSketch(k=1), 'k must be at least 2'),
], ids=['shape', 'merge-k', 'q-range', 'tiny-k'])
def test_errors(call, message):
  with pytest.raises(ValueError, match=message):
    call(sketch_lib.QuantileSketch(k=8))


@pytest.mark.parametrize('dtype, expected', [
    ('float32', np.float32), ('float16', np.float32), ('bool', np.float32),
    ('uint8', np.float32), ('int16', np.float32), ('int32', np.float64),
    ('int64', np.float64), ('float64', np.float64),
], ids=lambda v: str(v))
def test_holding_dtype(dtype, expected):
  assert sketch_lib.holding_dtype(dtype) is expected


def test_float32_holding_is_exact_for_float32_data():
  values = np.random.default_rng(5).normal(size=(300, 2)).astype(np.float32)
  held = sketch_lib.QuantileSketch((2,), k=256, dtype=np.float32)
  held.update(values)
  got = held.quantile(QS)
  assert got.dtype == np.float64
  np.testing.assert_array_equal(
      got, np.quantile(values.astype(np.float64), QS, axis=0,
                       method='inverted_cdf'))
  again = sketch_lib.QuantileSketch.from_dict(held.to_dict())
  assert again.dtype == np.float32
  np.testing.assert_array_equal(again.quantile(QS), got)
  with pytest.raises(ValueError, match='dtype must be float32 or float64'):
    sketch_lib.QuantileSketch(dtype=np.int32)


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_nonfinite_values_are_counted_and_left_out_of_quantiles(dtype):
  rng = np.random.default_rng(6)
  values = rng.normal(size=(100, 3))
  values[rng.random(values.shape) < 0.2] = np.nan
  values[:7, 1] = np.inf
  values[7:9, 1] = -np.inf
  values[:, 2] = np.nan
  sketch = sketch_lib.QuantileSketch((3,), k=64, dtype=dtype)
  sketch.update(values[:40])
  sketch.update(values[40:])
  assert sketch.count == 100
  assert sketch.nonfinite.tolist() == (~np.isfinite(values)).sum(0).tolist()
  got = sketch.quantile(QS)  # Exact: fewer than 2k values.
  for d in range(2):
    finite = values[np.isfinite(values[:, d]), d].astype(dtype)
    np.testing.assert_array_equal(
        got[:, d], np.quantile(finite.astype(np.float64), QS,
                               method='inverted_cdf'))
  assert np.isnan(got[:, 2]).all()
  again = sketch_lib.QuantileSketch.from_dict(sketch.to_dict())
  assert again.nonfinite.tolist() == sketch.nonfinite.tolist()
  np.testing.assert_array_equal(again.quantile(QS), got)
  old = sketch.to_dict()
  del old['nonfinite']  # Files before the counts: zeros.
  assert sketch_lib.QuantileSketch.from_dict(old).nonfinite.tolist() == [0] * 3


@pytest.mark.parametrize('seed', range(4))
def test_a_lone_finite_value_survives_compaction_within_the_bound(seed):
  values = np.full((1000, 2), np.nan)
  values[500, 0] = 3.0  # One finite value among NaN, compacted many times.
  values[::3, 1] = np.arange(334.0)
  sketch = sketch_lib.QuantileSketch((2,), k=4, seed=seed)
  for part in np.array_split(values, 7):
    sketch.update(part)
  assert sketch.rank_error > 0
  assert sketch.quantile([0.0, 0.5, 1.0])[:, 0].tolist() == [3.0] * 3
  finite = values[::3, 1]
  for q in QS:
    stats_testing.check_rank(finite, q, sketch.quantile(q)[1],
                             sketch.rank_error)
