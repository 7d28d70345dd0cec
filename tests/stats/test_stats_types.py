"""FieldStats / DatasetStats: merge and JSON round trip as properties."""

import json
import warnings

import hypothesis
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
import numpy as np
import pytest

from rlds_lite.stats import types

_values = hnp.arrays(np.float64, st.tuples(st.integers(0, 60), st.just(2)),
                     elements=st.floats(-1e6, 1e6))


@hypothesis.given(a=_values, b=_values, k=st.integers(2, 16))
def test_merge_matches_one_pass_and_json_round_trips(a, b, k):
  merged = types.FieldStats.from_values('x', a, k=k).merge(
      types.FieldStats.from_values('x', b, k=k))
  both = np.concatenate([a, b])
  assert merged.count == len(both)
  again = types.FieldStats.from_json(merged.to_json())
  assert again == merged
  if not len(both):
    assert np.isnan(merged.mean).all() and np.isnan(merged.std).all()
    return
  np.testing.assert_array_equal(merged.min, both.min(0))
  np.testing.assert_array_equal(merged.max, both.max(0))
  np.testing.assert_allclose(merged.mean, both.mean(0), rtol=1e-9, atol=1e-6)
  np.testing.assert_allclose(merged.std, both.std(0), rtol=1e-6, atol=1e-6)
  np.testing.assert_array_equal(again.quantile([0.01, 0.5, 0.99]),
                                merged.quantile([0.01, 0.5, 0.99]))


def _dataset(values, terminated):
  return types.DatasetStats(
      1, len(values), terminated, 1 - terminated,
      types.FieldStats.from_values('episode_length', [len(values)]),
      types.FieldStats.from_values('episode_return', [float(np.sum(values))]),
      {'reward': types.FieldStats.from_values('reward', values)},
      source={'name': str(len(values))})


def test_merge_datasets_and_fields_present_in_some():
  a, b = _dataset(np.array([1.0, 2.0]), 1), _dataset(np.array([4.0]), 0)
  b.fields['extra'] = types.FieldStats.from_values('extra', [[1, 2]], 'int32')
  merged = types.merge(a, b)
  assert (merged.num_episodes, merged.num_steps, merged.num_terminated,
          merged.num_truncated) == (2, 3, 1, 1)
  assert merged['reward'].mean.tolist() == pytest.approx(7 / 3)
  assert merged['extra'].count == 1
  assert merged.episode_return.max.tolist() == 4.0
  assert merged.source == {'merged': [{'name': '2'}, {'name': '1'}]}
  assert a['reward'].count == 2  # Inputs unchanged.
  with pytest.raises(ValueError, match='no statistics given'):
    types.merge()
  with pytest.raises(KeyError, match=r"no statistics of field 'nope' \(fields: "
                     r"\['reward'\]\)"):
    a['nope']  # pylint: disable=pointless-statement


def test_shape_mismatch_and_format_version():
  with pytest.raises(ValueError, match=r"field 'x' has shape \(2,\) and \(3,\)"):
    types.FieldStats.from_values('x', np.zeros((1, 2))).merge(
        types.FieldStats.from_values('x', np.zeros((1, 3))))
  data = _dataset(np.array([1.0]), 1).to_dict()
  data['format_version'] = 99
  with pytest.raises(ValueError, match='unsupported format_version 99'):
    types.DatasetStats.from_dict(data)


def test_table_shows_each_dimension_and_truncates():
  stats = _dataset(np.array([1.0, 2.0]), 1)
  stats.fields['wide'] = types.FieldStats.from_values('wide', np.ones((2, 10)))
  table = stats.table(max_dims=3)
  lines = table.splitlines()
  assert lines[0] == '1 episodes, 2 steps: 1 terminated, 0 truncated'
  assert [l.split()[0] for l in lines[3:]] == [
      'episode', 'episode', 'reward', 'wide[0]', 'wide[1]', 'wide[2]',
      'wide[3:10]']
  assert lines[5].split() == ['reward', '2', '1.5', '0.5', '1', '1', '1', '2',
                              '2']


_with_nonfinite = hnp.arrays(
    np.float64, st.tuples(st.integers(0, 40), st.just(2)),
    elements=st.one_of(st.floats(-1e6, 1e6), st.sampled_from(
        [np.nan, np.inf, -np.inf])))


def _strict(text):
  """json.loads that refuses NaN/Infinity (not JSON)."""
  def refuse(constant):
    raise ValueError(f'not strict JSON: {constant}')
  return json.loads(text, parse_constant=refuse)


@hypothesis.given(a=_with_nonfinite, b=_with_nonfinite)
def test_nonfinite_values_are_counted_exactly_and_left_out(a, b):
  with warnings.catch_warnings():
    warnings.simplefilter('error', RuntimeWarning)  # No raw NumPy warnings.
    merged = types.FieldStats.from_values('x', a, k=4).merge(
        types.FieldStats.from_values('x', b, k=4))
    std = merged.std
  both = np.concatenate([a, b])
  assert merged.count == len(both)
  np.testing.assert_array_equal(merged.nan_count, np.isnan(both).sum(0))
  np.testing.assert_array_equal(merged.inf_count, np.isinf(both).sum(0))
  np.testing.assert_array_equal(merged.finite_count,
                                np.isfinite(both).sum(0))
  for i in range(2):
    finite = both[np.isfinite(both[:, i]), i]
    if not len(finite):
      assert np.isnan([merged.mean[i], std[i], merged.min[i], merged.max[i],
                       merged.p50[i]]).all()
      continue
    assert merged.min[i] == finite.min() and merged.max[i] == finite.max()
    np.testing.assert_allclose(merged.mean[i], finite.mean(), rtol=1e-9,
                               atol=1e-6)
    np.testing.assert_allclose(std[i], finite.std(), rtol=1e-6, atol=1e-6)
    assert finite.min() <= merged.p50[i] <= finite.max()
  text = merged.to_json()
  _strict(text)
  assert types.FieldStats.from_json(text) == merged


def test_statistics_of_finite_values_and_strict_json():
  values = np.array([[1.0, np.nan], [np.inf, np.nan], [3.0, -np.inf]])
  field = types.FieldStats.from_values('x', values)
  assert (field.count, field.nan_count.tolist(), field.inf_count.tolist(),
          field.nonfinite_count) == (3, [0, 2], [1, 1], 4)
  assert field.mean[0] == 2.0 and field.min[0] == 1.0 and field.max[0] == 3.0
  assert field.p50[0] == 1.0 and np.isnan(field.p50[1])
  summary = field.summary()
  assert (summary['nan_count'], summary['inf_count']) == ([0, 2], [1, 1])
  assert summary['mean'] == [2.0, None]
  huge = types.FieldStats.from_values('h', [1.5e308, 1.5e308])  # Overflows.
  assert _strict(huge.to_json())['mean'] == 'inf'
  assert types.FieldStats.from_json(huge.to_json()) == huge


def test_table_counts_nan_and_inf_and_the_message_names_fields():
  stats = _dataset(np.array([1.0, np.nan, np.inf]), 1)
  stats.fields['wide'] = types.FieldStats.from_values(
      'wide', np.where(np.eye(4, 10) > 0, np.nan, 1.0))
  lines = stats.table(max_dims=3).splitlines()
  assert lines[1].split() == ['field', 'count', 'nan', 'inf', 'mean', 'std',
                              'min', 'p01', 'p50', 'p99', 'max']
  rows = {line.split()[0]: line.split() for line in lines[3:]}
  assert rows['reward'] == ['reward', '3', '1', '1', '1', '0', '1', '1', '1',
                            '1', '1']
  assert rows['wide[0]'][:5] == ['wide[0]', '4', '1', '0', '1']
  assert rows['wide[3:10]'] == ['wide[3:10]', '...', '1', '0']  # Added up.
  assert lines[-1].startswith('nan, inf: values left out of mean')
  assert stats.nonfinite == {'episode_return': (1, 0), 'reward': (1, 1),
                             'wide': (4, 0)}
  assert stats.nonfinite_message() == (
      'non-finite values in episode_return (1 NaN), reward (1 NaN, 1 inf), '
      'wide (4 NaN): left out of mean, std, min, max and quantiles, which are '
      'of the finite values (counted in nan_count and inf_count).')
  _strict(stats.to_json())
  _strict(json.dumps(stats.summary(), allow_nan=False))
  assert types.DatasetStats.from_json(stats.to_json()) == stats
  clean = _dataset(np.array([1.0]), 1)
  assert clean.nonfinite == {} and clean.nonfinite_message() is None
  assert 'nan, inf' not in clean.table()


def test_version_2_files_are_read_with_zero_counts():
  data = _dataset(np.array([1.0, 2.0]), 1).to_dict()
  assert data['format_version'] == 3
  data['format_version'] = 2
  for field in [data['episode_length'], data['episode_return'],
                *data['fields'].values()]:
    del field['nan_count'], field['inf_count'], field['sketch']['nonfinite']
  old = types.DatasetStats.from_dict(data)
  assert old['reward'].nan_count.tolist() == 0
  assert old['reward'].mean.tolist() == 1.5 and old['reward'].p50 == 1.0
