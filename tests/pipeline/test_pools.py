"""Tests of rlds_lite.pipeline.pools beyond what its users' tests cover."""

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite import option_objects
from rlds_lite.pipeline import pools


def _sampler(max_rows, gather_size=None):
  """Samples ``x[i]``; assembling more than ``max_rows`` at once fails."""

  def assemble(steps, index, values):
    del values
    check = tf.debugging.assert_less_equal(
        tf.shape(index)[0], max_rows, message='gathered too many at once')
    with tf.control_dependencies([check]):
      return {'x': tf.gather(steps['x'], index[:, 0])}

  return pools.Sampler(
      samples=lambda e: {'x': e['steps']['x']},
      plan=lambda e: (e['steps'], tf.range(100)[:, None], {}),
      assemble=assemble, gather_size=gather_size)


def test_gather_size_bounds_the_samples_gathered_at_once():
  episodes = tf.data.Dataset.from_tensors(
      {'steps': {'x': tf.range(100)}}).repeat(3)
  ds = pools.pooled_batches(episodes, _sampler(8, gather_size=8), 4, seed=0,
                            pooling=pools.Pooling('samples', pool_episodes=3))
  batches = [b['x'].numpy() for b in ds]
  assert [len(b) for b in batches] == [4] * 75
  assert sorted(np.concatenate(batches).tolist()) == sorted(
      list(range(100)) * 3)
  # By default the spec sizes the gathers: 4-byte samples, all 300 at once.
  default = pools.pooled_batches(
      episodes, _sampler(8), 4, seed=0,
      pooling=pools.Pooling('samples', pool_episodes=3))
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match='gathered too many at once'):
    list(default)


def _linked_sampler():
  """Samples ``x[i]``; a link appends ``1000 + pool number`` to each pool's
  steps and points each pool's first sample (in element order) at it."""

  def imports(state, extras):
    del extras
    return {'x': 1000 + state[tf.newaxis]}, state

  def finish(state, steps, index, extras, num_steps, num_samples):
    del steps, extras, num_samples
    index = tf.tensor_scatter_nd_update(index, [[0, 0]],
                                        [tf.reduce_sum(num_steps)])
    return state + 1, index

  link = pools.PoolLink(extras=lambda e: {'tag': e['tag'][tf.newaxis]},
                        initial=tf.constant(0), imports=imports,
                        finish=finish)
  return pools.Sampler(
      samples=lambda e: {'x': e['steps']['x']},
      plan=lambda e: (e['steps'], tf.range(10)[:, None], {}),
      assemble=lambda steps, index, values: {
          'x': tf.gather(steps['x'], index[:, 0])},
      link=link)


def test_a_link_appends_rows_and_threads_its_state_through_the_pools():
  episodes = tf.data.Dataset.range(3).map(
      lambda e: {'steps': {'x': tf.range(10) + 100 * tf.cast(e, tf.int32)},
                 'tag': e})
  ds = pools.pooled_batches(episodes, _linked_sampler(), 4, seed=0,
                            pooling=pools.Pooling('samples', pool_episodes=1))
  got = sorted(np.concatenate([b['x'].numpy() for b in ds]).tolist())
  expected = [100 * e + t for e in range(3) for t in range(1, 10)]
  assert got == sorted(expected + [1000, 1001, 1002])


def test_a_link_needs_shuffled_sample_pools():
  episodes = tf.data.Dataset.from_tensors({'steps': {'x': tf.range(10)},
                                           'tag': tf.constant(0, tf.int64)})
  for kwargs in (dict(pooling=pools.Pooling('episodes')),
                 dict(pooling=pools.Pooling('samples'), shuffle=False)):
    with pytest.raises(ValueError, match="a Sampler with a link needs "
                       "pool='samples' and shuffle=True"):
      pools.pooled_batches(episodes, _linked_sampler(), 4, **kwargs)


def test_pooling_checks_its_fields_and_shows_what_is_set():
  assert repr(pools.Pooling()) == 'Pooling()'
  assert repr(pools.Pooling('episodes', spread_episodes=True)) == (
      "Pooling(pool='episodes', spread_episodes=True)")
  with pytest.raises(ValueError, match=r"^Pooling: pool must be one of "
                     r"\('auto', 'samples', 'episodes'\), got 'steps'\.$"):
    pools.Pooling('steps')
  with pytest.raises(ValueError, match='^Pooling: prefetch must be a '
                     'non-negative int, got -1.$'):
    pools.Pooling(prefetch=-1)


def test_old_pool_keywords_still_work_and_warn_once():
  episodes = tf.data.Dataset.from_tensors({'steps': {'x': tf.range(100)}})
  option_objects._WARNED.clear()  # pylint: disable=protected-access
  with pytest.warns(DeprecationWarning, match=r"^pooled_batches: \['pool', "
                    r"'pool_episodes'\] are now pooling=Pooling\(...\)"):
    old = pools.pooled_batches(episodes, _sampler(100), 2, seed=0,
                               pool='samples', pool_episodes=3)
  new = pools.pooled_batches(episodes, _sampler(100), 2, seed=0,
                             pooling=pools.Pooling('samples', pool_episodes=3))
  assert ([b['x'].numpy().tolist() for b in old] ==
          [b['x'].numpy().tolist() for b in new])
  with pytest.raises(TypeError, match=r"^pooled_batches: pass \['prefetch'\] "
                     r'in pooling=Pooling\(...\), not beside it\.$'):
    pools.pooled_batches(episodes, _sampler(100), 2, pooling=pools.Pooling(),
                         prefetch=0)
  with pytest.raises(TypeError, match="unexpected keyword argument 'pools'"):
    pools.pooled_batches(episodes, _sampler(100), 2, pools=3)
