"""The sampler: a bijection per epoch, exact mixing, hosts by position."""

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite.random_access import Sampler
from rlds_lite.random_access.spread import SpreadOrder


@pytest.mark.parametrize('size', [1, 2, 7, 1000])
def test_every_sample_exactly_once_per_epoch(size):
  sampler = Sampler([size], seed=5, batch_size=3)
  _, ids = sampler.numpy_ids(range(4 * size))
  epochs = ids.reshape(4, size)
  for epoch in epochs:
    assert sorted(epoch.tolist()) == list(range(size))
  if size >= 7:
    assert len({tuple(e) for e in epochs.tolist()}) == 4   # A new order each.


def test_same_seed_same_order_other_seed_other_order():
  a = Sampler([50], seed=1, batch_size=4).numpy_ids(range(50))[1]
  b = Sampler([50], seed=1, batch_size=9).numpy_ids(range(50))[1]
  c = Sampler([50], seed=2, batch_size=4).numpy_ids(range(50))[1]
  assert a.tolist() == b.tolist() and a.tolist() != c.tolist()


def test_in_graph_and_eager_agree():
  sampler = Sampler([10, 3], [0.5, 0.5], seed=0, batch_size=4)
  graph = tf.function(sampler.sample_ids)(tf.range(40, dtype=tf.int64))
  eager = sampler.numpy_ids(range(40))
  assert [g.numpy().tolist() for g in graph] == [e.tolist() for e in eager]


def test_weighted_mixing_exact_counts_and_own_epochs():
  sizes, weights = [10, 7, 3], [0.5, 0.375, 0.125]
  sampler = Sampler(sizes, weights, seed=3, batch_size=8)
  assert sampler.counts == (4, 3, 1)
  positions = np.arange(8 * 60)
  datasets, ids = sampler.numpy_ids(positions)
  per_batch = np.stack([np.bincount(d, minlength=3)
                        for d in datasets.reshape(-1, 8)])
  assert (per_batch == [4, 3, 1]).all()
  local_d, local = (x.numpy() for x in sampler.local_positions(positions))
  assert (local_d == datasets).all()
  for d, size in enumerate(sizes):
    mine = np.argsort(local[datasets == d])
    order = ids[datasets == d][mine]
    assert sorted(local[datasets == d].tolist()) == list(range(len(order)))
    for epoch in range(len(order) // size):
      assert sorted(order[epoch * size:(epoch + 1) * size].tolist()) == list(
          range(size))


@pytest.mark.parametrize('num_hosts', [1, 2, 3, 4])
def test_hosts_partition_the_positions(num_hosts):
  hosts = [Sampler([23], seed=0, batch_size=5, num_hosts=num_hosts, host=h)
           for h in range(num_hosts)]
  for batch in range(4):
    parts = [h.host_positions(position=10, batch=batch) for h in hosts]
    together = np.concatenate(parts)
    g = 5 * num_hosts
    assert together.tolist() == list(range(10 + batch * g, 10 + (batch + 1) * g))


@pytest.mark.parametrize('kwargs, error, message', [
    (dict(sizes=[0]), ValueError, 'dataset 0 has no sample'),
    (dict(sizes=[3, 4]), ValueError, 'several datasets need weights'),
    (dict(sizes=[3, 4], weights=[0.7, 0.7]), ValueError, 'sum to one'),
    (dict(sizes=[3], host=2, num_hosts=2), ValueError, r'host must be in \[0, 2\)'),
    (dict(sizes=[3], batch_size=0), ValueError, 'batch_size must be >= 1'),
    (dict(sizes=[3], seed=1.5), TypeError, 'seed must be an int'),
], ids=['empty', 'no-weights', 'weights-sum', 'host', 'batch', 'seed'])
def test_bad_arguments(kwargs, error, message):
  kwargs = {'seed': 0, 'batch_size': 2, **kwargs}
  with pytest.raises(error, match=message):
    Sampler(kwargs.pop('sizes'), kwargs.pop('weights', None), **kwargs)


SPREAD_CASES = {   # episode samples, batch size
    'one-episode': ([7], 3),
    'batch-larger-than-dataset': ([2, 3], 8),
    'named-lengths': ([0, 3, 14, 0, 37, 6], 4),
    'many-short': ([5] * 40, 32),
    'uneven': (list(range(1, 60)), 16),
}


@pytest.mark.parametrize('name', sorted(SPREAD_CASES))
def test_spread_order_is_a_bijection_per_epoch(name):
  counts, batch = SPREAD_CASES[name]
  order = SpreadOrder(np.array(counts), batch, seed=11)
  size = sum(counts)
  ids = order.sample_ids(np.arange(3 * size)).reshape(3, size)
  for epoch in ids:
    assert sorted(epoch.tolist()) == list(range(size))
  if size > 10:
    assert ids[0].tolist() != ids[1].tolist()


@pytest.mark.parametrize('episodes, length, batch', [
    (200, 497, 256), (1600, 497, 256), (320, 497, 256), (40, 50, 32),
    (1000, 30, 64)])
def test_spread_batches_hold_distinct_episodes(episodes, length, batch):
  counts = np.full(episodes, length) - np.arange(episodes) % 3
  order = SpreadOrder(counts, batch, seed=0)
  first = np.concatenate([[0], np.cumsum(counts)])
  ids = order.sample_ids(np.arange(40 * batch))
  episode = np.searchsorted(first, ids, side='right') - 1
  distinct = [len(set(e)) for e in episode.reshape(-1, batch)]
  assert min(distinct) >= 0.95 * min(batch, episodes)


def test_spread_is_the_same_for_the_same_seed_and_position():
  a = SpreadOrder(np.array([5, 9, 2]), 4, seed=3).sample_ids(np.arange(40, 50))
  b = SpreadOrder(np.array([5, 9, 2]), 4, seed=3).sample_ids(np.arange(40, 50))
  c = SpreadOrder(np.array([5, 9, 2]), 4, seed=4).sample_ids(np.arange(40, 50))
  assert a.tolist() == b.tolist() != c.tolist()


def test_a_source_rounded_to_no_sample_is_refused():
  with pytest.raises(ValueError) as raised:
    Sampler([10, 10], weights=[0.9, 0.1], batch_size=1,
            num_hosts=2, seed=0)
  assert str(raised.value) == (
      'Sampler: global batch size 2 gives dataset 1 (weight 0.1) no row in '
      'any batch (the weights round to [2, 0] rows); a global batch size of '
      '10 or more gives every source a row, or use other weights.')
