"""Tests of rlds_lite.dense.relabel_goals: exact cases, supports and laws."""

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest
import tensorflow as tf

import dense_testing as dt
import rlds_testing
from rlds_lite import dense

STRATEGY_KWARGS = {
    'future': {'strategy': 'future'},
    'final': {'strategy': 'final'},
    'uniform': {'strategy': 'uniform'},
    'geometric': {'strategy': 'geometric', 'p': 0.5},
}


def goals_reference(steps, goal_indices, key='observation'):
  """steps plus 'goal' = steps[key] at the given indices (plain loops)."""
  out = dict(steps)
  rows = [dt.np_map(lambda x, g=g: x[g], steps[key]) for g in goal_indices]
  out['goal'] = dt.stack_rows(rows, steps[key], [])
  out['goal_index'] = np.asarray(goal_indices, np.int32).reshape(-1)
  return out


def in_support(strategy, t, goal, length):
  if strategy == 'future':
    return t <= goal <= length - 1
  if strategy == 'final':
    return goal == length - 1
  if strategy == 'uniform':
    return 0 <= goal <= length - 1
  return min(t + 1, length - 1) <= goal <= length - 1  # geometric: K >= 1


def check_goals(steps, strategy, out):
  out = dt.to_numpy(out)
  indices = out['goal_index']
  length = dt.length_of(steps)
  assert indices.shape == (length,)
  for t, goal in enumerate(indices):
    assert in_support(strategy, t, goal, length), (t, goal, length)
  rlds_testing.assert_structures_equal(out, goals_reference(steps, indices))


@pytest.mark.parametrize('episode_name', dt.EPISODE_IDS)
@pytest.mark.parametrize('kwargs', list(STRATEGY_KWARGS.values()),
                         ids=list(STRATEGY_KWARGS))
def test_relabel_goals_table(episode_name, kwargs):
  steps = dt.NAMED_EPISODES[episode_name]
  out = dense.relabel_goals(steps, seed=3, index_key='goal_index', **kwargs)
  check_goals(steps, kwargs['strategy'], out)


@pytest.mark.parametrize('length,kwargs,indices', [
    (0, {'strategy': 'final'}, []),
    (1, {'strategy': 'final'}, [0]),
    (4, {'strategy': 'final'}, [3, 3, 3, 3]),
    (1, {'strategy': 'future'}, [0]),
    (2, {'strategy': 'uniform', 'seed': 5}, None),
    (4, {'strategy': 'geometric', 'p': 1.0}, [1, 2, 3, 3]),
    (1, {'strategy': 'geometric', 'p': 0.5}, [0]),
], ids=['empty_final', 'one_step_final', 'final', 'one_step_future',
        'two_step_uniform', 'geometric_p1_is_next_step', 'one_step_geometric'])
def test_relabel_goals_exact(length, kwargs, indices):
  steps = dt.episode(length, nested=True)
  out = dt.to_numpy(dense.relabel_goals(steps, index_key='goal_index',
                                        **kwargs))
  if indices is not None:
    assert out['goal_index'].tolist() == indices
  rlds_testing.assert_structures_equal(
      out, goals_reference(steps, out['goal_index']))


def test_relabel_goals_other_keys():
  steps = dt.episode(3, nested=True)
  out = dense.relabel_goals(steps, 'final', key='action', goal_key='target')
  assert out['target'][0].numpy().tolist() == [20, 20, 20]
  assert 'goal' not in out and 'goal_index' not in out


@pytest.mark.parametrize('strategy', ['future', 'uniform', 'geometric'])
def test_relabel_goals_seeded(strategy):
  steps = dt.episode(40)
  p = 0.2 if strategy == 'geometric' else None
  def goals(seed):
    return dense.relabel_goals(steps, strategy, seed=seed, p=p,
                               index_key='i')['i'].numpy().tolist()
  assert goals(1) == goals(1)
  assert goals(tf.constant([1, 0])) == goals(1)
  assert goals(1) != goals(2)
  ds = tf.data.Dataset.range(1).map(lambda _: dense.relabel_goals(
      {k: tf.constant(v) for k, v in steps.items()}, strategy, seed=1, p=p,
      index_key='i'))
  assert next(ds.as_numpy_iterator())['i'].tolist() == goals(1)  # graph == eager


def test_relabel_goals_laws():
  """Sample statistics on long episodes (fixed seeds, 5-sigma bounds)."""
  length = 20000
  steps = {'observation': tf.range(length), 'is_last': tf.range(length) == length - 1}
  t = np.arange(length)
  future = dense.relabel_goals(steps, 'future', seed=0, index_key='i')['i'].numpy()
  u = (future - t) / (length - t)  # ~ U[0, 1)
  assert abs(u.mean() - 0.5) < 5 * np.sqrt(1 / 12 / length)
  uniform = dense.relabel_goals(steps, 'uniform', seed=0, index_key='i')['i'].numpy()
  assert abs(uniform.mean() / length - 0.5) < 5 * np.sqrt(1 / 12 / length)
  geometric = dense.relabel_goals(steps, 'geometric', p=0.25, seed=0,
                                  index_key='i')['i'].numpy()
  k = (geometric - t)[:length - 200]  # away from the clipped end
  assert k.min() >= 1
  assert abs(k.mean() - 4.0) < 5 * np.sqrt(0.75 / 0.25**2 / len(k))
  assert abs((k == 1).mean() - 0.25) < 5 * np.sqrt(0.25 * 0.75 / len(k))


@hypothesis.given(length=st.integers(0, 12),
                  strategy=st.sampled_from(list(STRATEGY_KWARGS)),
                  seed=st.integers(0, 2**31), nested=st.booleans())
def test_relabel_goals_property(length, strategy, seed, nested):
  steps = dt.episode(length, nested=nested)
  out = dense.relabel_goals(steps, seed=seed, index_key='goal_index',
                            **STRATEGY_KWARGS[strategy])
  check_goals(steps, strategy, out)


def test_relabel_goals_in_dataset_map():
  episodes = [dt.episode(n, nested=True) for n in (0, 1, 2, 5, 3)]
  ds = dt.dense_episodes(episodes).enumerate().map(
      lambda i, ep: dense.relabel_goals(ep['steps'], seed=tf.stack([i, 7]),
                                        index_key='goal_index'))
  assert ds.element_spec['goal']['pos'].shape.as_list() == [None, 2]
  for actual, steps in zip(ds, episodes, strict=True):
    check_goals(steps, 'future', actual)


@pytest.mark.parametrize('kwargs,error,match', [
    ({'strategy': 'past'}, ValueError, 'strategy must be one of'),
    ({'strategy': 'geometric'}, ValueError, "'geometric' needs p in"),
    ({'strategy': 'geometric', 'p': 0.0}, ValueError, "needs p in \\(0, 1\\]"),
    ({'strategy': 'future', 'p': 0.5}, ValueError, "p only applies to"),
    ({'key': 'image'}, ValueError, "relabel_goals: needs the step field 'image'"),
    ({'goal_key': 'action'}, ValueError, "adds the field 'action'"),
    ({'index_key': 'reward'}, ValueError, "adds the field 'reward'"),
    ({'seed': 1.5}, TypeError, 'seed must be an int'),
    ({'seed': [1, 2, 3]}, TypeError, 'shape-\\[2\\] integer'),
], ids=['unknown_strategy', 'geometric_without_p', 'zero_p', 'p_for_future',
        'missing_key', 'existing_goal_key', 'existing_index_key', 'float_seed',
        'long_seed'])
def test_relabel_goals_bad_arguments(kwargs, error, match):
  with pytest.raises(error, match=match):
    dense.relabel_goals(dt.episode(3), **kwargs)
