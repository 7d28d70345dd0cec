"""NumPy reference statistics and small episode tables for the stats tests."""

from typing import Any, Dict, List, Optional

import numpy as np
import tensorflow as tf

from rlds_lite import nest_paths

MASKED_ROOTS = ('action', 'reward', 'discount')
FLAGS = ('is_first', 'is_last', 'is_terminal')


def flags(length: int, terminal: bool) -> Dict[str, np.ndarray]:
  index = np.arange(length)
  return {'is_first': index == 0, 'is_last': index == length - 1,
          'is_terminal': (index == length - 1) & terminal}


def episode(length: int, terminal: bool, seed: int, action_shape=(2,),
            nested: bool = False, int_action: bool = False) -> Dict[str, Any]:
  """One episode's dense steps (NumPy)."""
  rng = np.random.default_rng(seed)
  if int_action:
    action = rng.integers(-3, 4, (length,) + action_shape).astype(np.int32)
  else:
    action = rng.normal(size=(length,) + action_shape).astype(np.float32)
  action[-1:] = 0  # Invalid on the last step.
  reward = rng.normal(size=length).astype(np.float32)
  reward[-1:] = 0
  if nested:
    observation = {'pos': rng.normal(size=(length, 3)).astype(np.float32),
                   'gripper': rng.integers(0, 2, length).astype(bool)}
  else:
    observation = rng.normal(size=(length, 4)).astype(np.float64)
  discount = np.ones(length, np.float32)
  discount[-1:] = 0  # Invalid on the last step: zero, as RLDS writes it.
  return {'observation': observation, 'action': action, 'reward': reward,
          'discount': discount, **flags(length, terminal)}


def to_dataset(episodes: List[Dict[str, Any]], nested_steps: bool = False
               ) -> tf.data.Dataset:
  """A tf.data dataset of the episodes (dense steps, or nested)."""
  def make(steps):
    return {'steps': tf.data.Dataset.from_tensor_slices(steps)
            if nested_steps else tf.nest.map_structure(tf.constant, steps)}
  if not episodes:
    raise ValueError('use empty_dataset for no episodes')
  datasets = [tf.data.Dataset.from_tensors(make(e)) for e in episodes]
  out = datasets[0]
  for d in datasets[1:]:
    out = out.concatenate(d)
  return out


def reference(episodes: List[Dict[str, Any]],
              mask_last_step: bool = True) -> Dict[str, Any]:
  """The expected statistics, computed with NumPy on the concatenated arrays."""
  fields: Dict[str, List[np.ndarray]] = {}
  lengths, returns, terminated = [], [], 0
  for steps in episodes:
    flat = dict(nest_paths.flatten_with_paths(steps))
    valid = ~flat['is_last'] if mask_last_step else np.ones_like(
        flat['is_last'])
    lengths.append(len(flat['is_last']))
    returns.append(float(np.sum(flat['reward'].astype(np.float64)[valid])))
    terminated += int(flat['is_terminal'][-1])
    for path, values in flat.items():
      if path in FLAGS:
        continue
      rows = values[valid] if path.split('/')[0] in MASKED_ROOTS else values
      fields.setdefault(path, []).append(rows.astype(np.float64))
  return {'fields': {p: np.concatenate(v) for p, v in fields.items()},
          'lengths': np.asarray(lengths, np.float64),
          'returns': np.asarray(returns), 'terminated': terminated}


def check_field(stats_field, values: np.ndarray,
                exact_quantiles: Optional[bool] = None) -> None:
  """Compares a FieldStats with NumPy on ``values`` ([n, ...] float64)."""
  assert stats_field.count == len(values)
  if not len(values):
    assert np.all(np.isnan(stats_field.mean))
    return
  np.testing.assert_array_equal(stats_field.min, values.min(axis=0))
  np.testing.assert_array_equal(stats_field.max, values.max(axis=0))
  np.testing.assert_allclose(stats_field.mean, values.mean(axis=0), rtol=1e-6,
                             atol=1e-12)
  np.testing.assert_allclose(stats_field.std, values.std(axis=0), rtol=1e-6,
                             atol=1e-12)
  if exact_quantiles is None:
    exact_quantiles = stats_field.sketch.rank_error == 0
  for q in (0.01, 0.5, 0.99):
    got = stats_field.quantile(q)
    if exact_quantiles:
      np.testing.assert_array_equal(
          got, np.quantile(values, q, axis=0, method='inverted_cdf'))
    else:
      check_rank(values, q, got, stats_field.sketch.rank_error)


def check_rank(values: np.ndarray, q: float, got: np.ndarray,
               error: float) -> None:
  """The documented guarantee: #(< v) <= qn + E and #(<= v) >= qn - E."""
  n = len(values)
  below = (values < got).sum(axis=0)
  at_most = (values <= got).sum(axis=0)
  assert np.all(below <= q * n + error + 1e-9), (q, below, q * n, error)
  assert np.all(at_most >= q * n - error - 1e-9), (q, at_most, q * n, error)


def nonfinite_episodes() -> List[Dict[str, Any]]:
  """Two episodes holding NaN and +-inf on valid steps (none on last steps).

  observation: NaN at [0][1, 0], inf at [0][2, 1], -inf at [1][0, 1]; action:
  NaN at [0][0, 0]; reward: NaN at [0][1] (episode 0's return is NaN).
  """
  first, second = episode(4, True, 20), episode(3, False, 21)
  first['observation'][1, 0] = np.nan
  first['observation'][2, 1] = np.inf
  second['observation'][0, 1] = -np.inf
  first['action'][0, 0] = np.nan
  first['reward'][1] = np.nan
  return [first, second]


def check_finite_field(stats_field, values: np.ndarray) -> None:
  """Compares a FieldStats with NumPy on the finite ``values`` per element
  (exact quantiles: few values); NaN/inf counted, not summarised."""
  assert stats_field.count == len(values)
  np.testing.assert_array_equal(stats_field.nan_count,
                                np.isnan(values).sum(axis=0))
  np.testing.assert_array_equal(stats_field.inf_count,
                                np.isinf(values).sum(axis=0))
  columns = values.reshape(len(values), -1)
  for name in ('mean', 'std', 'min', 'max', 'p01', 'p50', 'p99'):
    got = np.asarray(getattr(stats_field, name)).reshape(-1)
    for i in range(columns.shape[1]):
      finite = columns[:, i][np.isfinite(columns[:, i])]
      if not len(finite):
        assert np.isnan(got[i]), (name, i)
        continue
      expected = {'mean': np.mean, 'std': np.std, 'min': np.min,
                  'max': np.max,
                  'p01': lambda x: np.quantile(x, 0.01, method='inverted_cdf'),
                  'p50': lambda x: np.quantile(x, 0.5, method='inverted_cdf'),
                  'p99': lambda x: np.quantile(x, 0.99, method='inverted_cdf'),
                  }[name](finite)
      np.testing.assert_allclose(got[i], expected, rtol=1e-9, err_msg=name)
