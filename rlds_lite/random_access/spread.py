"""The *spread* order: each batch takes its samples from as many episodes as it can.

Example:
  >>> import numpy as np
  >>> order = SpreadOrder(np.array([4, 4, 4, 4]), batch_size=4, seed=0)
  >>> ids = order.sample_ids(np.arange(16))
  >>> sorted(ids.tolist()) == list(range(16))
  True
  >>> [len(set(ids[k:k + 4] // 4)) for k in range(0, 16, 4)]   # episodes per batch
  [4, 4, 4, 4]
"""

from typing import Dict, Tuple

import numpy as np

__all__ = ['SpreadOrder', 'hash64']

_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def hash64(*values) -> np.ndarray:
  """SplitMix64 of the values combined (uint64 arrays broadcast together).

  Example:
    >>> int(hash64(1, 2)) == int(hash64(1, 2)) != int(hash64(2, 1))
    True
  """
  out = np.uint64(0x9E3779B97F4A7C15)
  with np.errstate(over='ignore'):
    for value in values:
      x = (np.asarray(value).astype(np.uint64) + out) * np.uint64(
          0xBF58476D1CE4E5B9)
      x = (x ^ (x >> np.uint64(30))) * np.uint64(0x94D049BB133111EB)
      x = (x ^ (x >> np.uint64(27))) * np.uint64(0xD6E8FEB86659FD63)
      out = x ^ (x >> np.uint64(31))
  return out


def _permutation(size: int, *key) -> np.ndarray:
  """A permutation of ``0..size-1`` from the key (argsort of hashes)."""
  return np.argsort(hash64(*key, np.arange(size, dtype=np.uint64)),
                    kind='stable')


class SpreadOrder:
  """Position in a dataset -> sample id, in the spread order (docs/random_access.md).

  Args:
    episode_counts: ``[E]`` samples of each episode, in index order.
    batch_size: ``B``, the samples of this dataset in one (global) batch.

  Example:
    >>> import numpy as np
    >>> order = SpreadOrder([6, 2, 2, 2], batch_size=3, seed=7)
    >>> order.size, order.rows  # N samples; R = ceil(N / B) batches an epoch.
    (12, 4)
    >>> order.sample_ids(np.arange(12)).tolist()  # Epoch 0, on any machine.
    [0, 10, 2, 11, 3, 1, 7, 9, 5, 4, 6, 8]
    >>> sorted(order.sample_ids(np.arange(12, 24)).tolist()) == list(range(12))
    True
  """

  def __init__(self, episode_counts: np.ndarray, batch_size: int, seed: int):
    counts = np.asarray(episode_counts, np.int64)
    self.counts = counts
    self.first = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    self.size = int(self.first[-1])
    self.batch_size = max(1, min(int(batch_size), self.size))
    self.rows = -(-self.size // self.batch_size)           # R
    self.seed = np.uint64(int(seed) & ((1 << 64) - 1))
    self._epochs: Dict[int, Tuple[np.ndarray, ...]] = {}

  def _tables(self, epoch: int) -> Tuple[np.ndarray, ...]:
    if epoch not in self._epochs:
      nonempty = np.flatnonzero(self.counts > 0)
      order = nonempty[_permutation(len(nonempty), self.seed, epoch, 1)]
      starts = np.concatenate([[0], np.cumsum(self.counts[order])])
      rotation = (hash64(self.seed, epoch, 2, np.arange(len(self.counts))) %
                  np.maximum(self.counts, 1).astype(np.uint64)).astype(np.int64)
      batches = _permutation(self.rows, self.seed, epoch, 3)
      if len(self._epochs) >= 2:
        self._epochs.pop(min(self._epochs))
      self._epochs[epoch] = (order, starts, rotation, batches)
    return self._epochs[epoch]

  def _ring(self, index: np.ndarray, epoch: int,
            batches: np.ndarray) -> np.ndarray:
    """One step of the map ``[0, B * R)`` -> ``[0, B * R)``."""
    k, j = index // self.batch_size, index % self.batch_size
    # The slots of batch k rotated by a random amount (a bijection).
    mix = hash64(self.seed, epoch, 4, k)
    shift = (mix % np.uint64(self.batch_size)).astype(np.int64)
    slot = (j + shift) % self.batch_size
    return slot * self.rows + batches[k]

  def sample_ids(self, positions: np.ndarray) -> np.ndarray:
    """The sample ids at ``positions`` (int64, any shape)."""
    positions = np.asarray(positions, np.int64)
    epoch_of = positions // self.size
    out = np.empty(positions.shape, np.int64)
    for epoch in np.unique(epoch_of):
      chosen = epoch_of == epoch
      order, starts, rotation, batches = self._tables(int(epoch))
      index = positions[chosen] % self.size
      q = self._ring(index, int(epoch), batches)
      outside = q >= self.size
      while outside.any():    # Cycle-walking: stays a bijection of [0, N).
        q[outside] = self._ring(q[outside], int(epoch), batches)
        outside = q >= self.size
      slot = np.searchsorted(starts, q, side='right') - 1
      episode = order[slot]
      rank = (q - starts[slot] + rotation[episode]) % self.counts[episode]
      out[chosen] = self.first[episode] + rank
    return out
