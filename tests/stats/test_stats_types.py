"""FieldStats / DatasetStats: merge and JSON round trip as properties."""

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
