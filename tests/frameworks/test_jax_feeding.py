"""Tests of rlds_lite.frameworks.as_jax_iterator."""

import importlib
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

import rlds_lite as rlds
import rlds_lite.frameworks.jax
from rlds_lite.frameworks import as_jax_iterator


class CountingBatches:
  """An iterable of batches that counts how many have been pulled."""

  def __init__(self, num):
    self.num = num
    self.pulled = 0

  def __iter__(self):
    for i in range(self.num):
      self.pulled += 1
      yield {'x': np.full((2,), i, np.int32)}


def _numpy_batches():
  episodes = rlds.synthetic.episodes(num_episodes=5, seed=0, dense=True)
  return rlds.pipeline.transitions_dataset(episodes, rlds.Transitions(), 16,
                                          shuffle=False)


def test_values_equal_numpy():
  ds = _numpy_batches()
  want = list(ds.as_numpy_iterator())
  got = list(as_jax_iterator(ds))
  assert len(got) == len(want) > 1
  for g, w in zip(got, want):
    assert set(g) == set(w)
    for key in w:
      assert isinstance(g[key], jax.Array), key
      np.testing.assert_array_equal(np.asarray(g[key]), w[key])


def test_nested_structure_kept():
  ds = tf.data.Dataset.from_tensors(
      {'obs': {'pos': [1.0, 2.0]}, 'pair': (np.int32(3), np.int32(4))})
  (batch,) = list(as_jax_iterator(ds))
  assert isinstance(batch['pair'], tuple)
  assert np.asarray(batch['obs']['pos']).tolist() == [1.0, 2.0]
  assert [int(v) for v in batch['pair']] == [3, 4]


@pytest.mark.parametrize('prefetch', [1, 2, 5], ids=['one', 'two', 'five'])
def test_prefetch_count(prefetch):
  batches = CountingBatches(10)
  it = as_jax_iterator(batches, prefetch=prefetch)
  assert batches.pulled == 0  # Nothing is read before the first next().
  pulled = []
  for _ in range(3):
    next(it)
    pulled.append(batches.pulled)
  # The yielded batch plus `prefetch` in flight.
  assert pulled == [prefetch + 1, prefetch + 2, prefetch + 3]
  assert [int(b['x'][0]) for b in it] == list(range(3, 10))


def test_prefetch_more_than_batches():
  batches = CountingBatches(2)
  assert [int(b['x'][0]) for b in as_jax_iterator(batches, prefetch=8)] == [0, 1]


@pytest.mark.parametrize('prefetch', [0, -1, 1.5, True],
                         ids=['zero', 'negative', 'float', 'bool'])
def test_bad_prefetch(prefetch):
  with pytest.raises(ValueError, match='prefetch must be a positive int'):
    as_jax_iterator(CountingBatches(1), prefetch=prefetch)


def test_string_field_named():
  ds = tf.data.Dataset.from_tensors({'x': [1], 'info': {'name': [b'a']}})
  with pytest.raises(TypeError, match="field 'info/name' has dtype object"):
    next(as_jax_iterator(ds))


def test_64_bit_fields_without_x64():
  assert not jax.config.jax_enable_x64   # JAX's default.
  big = [{'id': np.array([2**40 + 1, 2**33], np.int64)}]
  with pytest.raises(ValueError, match="^as_jax_iterator: field 'id' holds "
                     'int64 values outside the 32-bit range, which JAX '
                     'truncates when jax_enable_x64 is off'):
    next(as_jax_iterator(big))
  small = [{'id': np.array([3, -4], np.int64),
            'x': np.array([0.5, 1.5], np.float64),
            'y': np.array([1, 2], np.int32)}] * 2
  with pytest.warns(UserWarning, match=r"^as_jax_iterator: fields \['id', "
                    r"'x'\] are 64-bit; JAX holds them as 32-bit arrays") as w:
    out = list(as_jax_iterator(small))
  assert len(w) == 1
  assert out[1]['id'].tolist() == [3, -4] and out[1]['id'].dtype == jnp.int32
  with pytest.raises(TypeError, match="field 'a' has dtype str"):
    list(as_jax_iterator([{'a': np.ones(2, np.float32)}, {'a': 'x'}]))


def test_not_iterable():
  with pytest.raises(TypeError, match='ds must be a tf.data.Dataset or an '
                     'iterable of batches, got int'):
    as_jax_iterator(3)


def test_single_device_sharding():
  sharding = jax.sharding.SingleDeviceSharding(jax.devices('cpu')[0])
  for batch in as_jax_iterator(_numpy_batches(), sharding=sharding):
    assert batch['observation'].sharding == sharding
    assert batch['reward'].sharding == sharding


def test_named_sharding_over_a_batch_axis():
  mesh = jax.sharding.Mesh(np.array(jax.devices('cpu')[:1]), ('batch',))
  sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec('batch'))
  want = list(_numpy_batches().as_numpy_iterator())
  got = list(as_jax_iterator(_numpy_batches(), sharding=sharding))
  assert len(got) == len(want)
  for g, w in zip(got, want):
    assert g['observation'].sharding == sharding
    np.testing.assert_array_equal(np.asarray(g['observation']), w['observation'])


def test_missing_jax_names_the_extra(monkeypatch):
  monkeypatch.setitem(sys.modules, 'jax', None)
  # The module imports without JAX (JAX is imported on use only).
  importlib.reload(rlds_lite.frameworks.jax)
  with pytest.raises(ImportError, match=r"pip install 'rlds_lite\[jax\]'"):
    as_jax_iterator(CountingBatches(1))


def test_jitted_sgd_reduces_loss():
  # Linear model: next observation from (observation, action).
  episodes = rlds.synthetic.episodes(num_episodes=40, max_length=30, seed=0,
                                     dense=True)
  transitions = rlds.pipeline.transitions_dataset(episodes, rlds.Transitions(),
                                                 64, seed=0)

  def loss_fn(params, batch):
    x = jnp.concatenate([batch['observation'], batch['action']], axis=-1)
    prediction = x @ params['w'] + params['b']
    return jnp.mean((prediction - batch['next_observation'])**2)

  @jax.jit
  def sgd_step(params, batch):
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    params = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
    return params, loss

  key = jax.random.PRNGKey(0)
  params = {'w': 0.1 * jax.random.normal(key, (6, 4)), 'b': jnp.zeros(4)}
  losses = []
  for _ in range(6):
    for batch in as_jax_iterator(transitions.map(
        lambda b: {k: b[k] for k in ('observation', 'action',
                                     'next_observation')})):
      params, loss = sgd_step(params, batch)
      losses.append(float(loss))
  assert np.mean(losses[-5:]) < 0.2 * np.mean(losses[:5]), losses
