"""The sampler: a bijection per epoch, exact mixing, hosts by position."""

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite.random_access import Sampler


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
