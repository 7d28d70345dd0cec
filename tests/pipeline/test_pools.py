"""Tests of rlds_lite.pipeline.pools beyond what its users' tests cover."""

import numpy as np
import pytest
import tensorflow as tf

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
  ds = pools.pooled_batches(episodes, _sampler(8, gather_size=8), 4,
                            pool='samples', pool_episodes=3, seed=0)
  batches = [b['x'].numpy() for b in ds]
  assert [len(b) for b in batches] == [4] * 75
  assert sorted(np.concatenate(batches).tolist()) == sorted(
      list(range(100)) * 3)
  # By default the spec sizes the gathers: 4-byte samples, all 300 at once.
  default = pools.pooled_batches(episodes, _sampler(8), 4, pool='samples',
                                 pool_episodes=3, seed=0)
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match='gathered too many at once'):
    list(default)
