"""Which sample comes at each position: a stateless permutation per epoch (docs/random_access.md).

Example:
  >>> sampler = Sampler([10], seed=0, batch_size=5)
  >>> first = sampler.numpy_ids(range(10))[1]
  >>> sorted(first.tolist()) == list(range(10))   # each sample once per epoch
  True
  >>> sampler.host_positions(position=0, batch=1).tolist()
  [5, 6, 7, 8, 9]
"""

import hashlib
from typing import Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from rlds_lite.pipeline import mixing
from rlds_lite.random_access import spread as spread_lib

__all__ = ['Sampler', 'derive_seed']

_MAX_SEED = (1 << 63) - 1
ORDERS = ('spread', 'uniform')
"""The sample orders of a `Sampler`."""


def derive_seed(seed: int, *labels: object) -> int:
  """A non-negative int64 seed derived from ``seed`` and labels (SHA-256).

  Example:
    >>> derive_seed(0, 'mix') != derive_seed(0, 'dataset', 0)
    True
  """
  text = '|'.join([str(int(seed))] + [str(label) for label in labels])
  return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8],
                        'little') & _MAX_SEED


def _check_int(value, name: str, minimum: int) -> int:
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
    raise TypeError(f'Sampler: {name} must be an int, got {value!r}.')
  if value < minimum:
    raise ValueError(f'Sampler: {name} must be >= {minimum}, got {value}.')
  return int(value)


def _index_shuffle(index: tf.Tensor, seed: tf.Tensor, stream: tf.Tensor,
                   max_index: tf.Tensor) -> tf.Tensor:
  """Position of each ``index`` in the permutation keyed by its own ``(seed, stream)``.

  Calls ``tf.raw_ops``: ``index_shuffle``'s wrapper pads a per-element seed matrix (TF 2.21).
  """
  keys = tf.stack([seed, stream, tf.zeros_like(seed)], axis=-1)
  max_index = tf.broadcast_to(tf.cast(max_index, tf.int64), tf.shape(index))
  return tf.raw_ops.RandomIndexShuffle(index=index, seed=keys,
                                       max_index=max_index, rounds=4)


class Sampler:
  """Maps positions to ``(dataset, sample id)``.

  Args:
    sizes: the number of samples of each dataset (all positive).
    weights: the datasets' weights (non-negative, summing to one); needed with several.
    batch_size: samples per batch on each host.
    num_hosts, host: the number of hosts, and this one.
    order: ``'uniform'`` (default here) or ``'spread'`` (with ``episode_counts``: each
      dataset's samples per episode).

  Example:
    >>> sampler = Sampler([10], seed=0, batch_size=4)
    >>> sampler.numpy_ids(range(4))[1].tolist()   # the first batch's sample ids
    [6, 2, 1, 5]
  """

  def __init__(self, sizes: Sequence[int], weights: Optional[Sequence[float]] = None,
               *, seed: int, batch_size: int, num_hosts: int = 1,
               host: int = 0, order: str = 'uniform',
               episode_counts: Optional[Sequence[np.ndarray]] = None):
    sizes = [int(s) for s in sizes]
    if not sizes:
      raise ValueError('Sampler: no dataset.')
    for i, size in enumerate(sizes):
      if size < 1:
        raise ValueError(f'Sampler: dataset {i} has no sample; nothing to '
                         'sample from.')
    self.seed = _check_int(seed, 'seed', -(1 << 63))
    self.batch_size = _check_int(batch_size, 'batch_size', 1)
    self.num_hosts = _check_int(num_hosts, 'num_hosts', 1)
    self.host = _check_int(host, 'host', 0)
    if self.host >= self.num_hosts:
      raise ValueError(f'Sampler: host must be in [0, {self.num_hosts}), '
                       f'got {self.host}.')
    self.sizes = tuple(sizes)
    if weights is None:
      if len(sizes) > 1:
        raise ValueError('Sampler: several datasets need weights.')
      weights = [1.0]
    weights = [float(w) for w in weights]
    if len(weights) != len(sizes):
      raise ValueError(f'Sampler: {len(weights)} weights for {len(sizes)} '
                       'datasets.')
    if min(weights) < 0 or abs(sum(weights) - 1.0) > mixing.WEIGHT_TOLERANCE:
      raise ValueError(f'Sampler: weights must be non-negative and sum to '
                       f'one, got {weights}.')
    self.weights = tuple(weights)
    self.counts = tuple(mixing.exact_counts(weights, self.global_batch_size))
    mixing.check_exact_shares(
        [f'dataset {i}' for i in range(len(sizes))], weights, self.counts,
        'Sampler', 'global batch size', 'other weights')
    self._cumulative = np.concatenate([[0], np.cumsum(self.counts)]).astype(
        np.int64)
    self._dataset_seeds = tuple(derive_seed(self.seed, 'dataset', i)
                                for i in range(len(sizes)))
    self._mix_seed = derive_seed(self.seed, 'mix')
    if order not in ORDERS:
      raise ValueError(f'Sampler: order must be one of {ORDERS}, got '
                       f'{order!r}.')
    self.order = order
    self._spread = None
    if order == 'spread':
      if episode_counts is None or len(episode_counts) != len(sizes):
        raise ValueError("Sampler: order='spread' needs episode_counts, one "
                         'array per dataset.')
      self._episode_counts = [np.asarray(c, np.int64) for c in episode_counts]
      for i, (counts, size) in enumerate(zip(self._episode_counts, sizes)):
        if int(counts.sum()) != size:
          raise ValueError(f'Sampler: episode_counts of dataset {i} sum to '
                           f'{int(counts.sum())}, not its {size} samples.')
      self._spread = [spread_lib.SpreadOrder(counts, self.counts[i],
                                             self._dataset_seeds[i])
                      for i, counts in enumerate(self._episode_counts)]

  @property
  def global_batch_size(self) -> int:
    """Samples per batch over all hosts (``G``)."""
    return self.batch_size * self.num_hosts

  @property
  def mixed(self) -> bool:
    return len(self.sizes) > 1

  def __repr__(self) -> str:
    mix = '' if not self.mixed else f', weights={list(self.weights)} (per batch {list(self.counts)})'
    return (f'Sampler(sizes={list(self.sizes)}{mix}, order={self.order!r}, '
            f'seed={self.seed}, '
            f'batch_size={self.batch_size}, host={self.host} of '
            f'{self.num_hosts})')

  # Positions ----------------------------------------------------------------

  def host_positions(self, position: int, batch: int) -> np.ndarray:
    """This host's positions of its ``batch``-th batch after ``position``.

    Example:
      >>> Sampler([9], seed=0, batch_size=2, num_hosts=3, host=1
      ...         ).host_positions(position=6, batch=0).tolist()
      [8, 9]
    """
    first = position + batch * self.global_batch_size + self.host * self.batch_size
    return np.arange(first, first + self.batch_size, dtype=np.int64)

  def host_positions_tf(self, position: tf.Tensor, batch: tf.Tensor) -> tf.Tensor:
    """`host_positions` in TensorFlow ops: a ``batch`` of shape ``S`` gives ``[*S, batch_size]``."""
    first = (tf.cast(position, tf.int64) + batch * self.global_batch_size +
             self.host * self.batch_size)
    return first[..., tf.newaxis] + tf.range(self.batch_size, dtype=tf.int64)

  # Samples ------------------------------------------------------------------

  def local_positions(self, positions: tf.Tensor
                      ) -> Tuple[tf.Tensor, tf.Tensor]:
    """``(dataset [P] int32, position in that dataset [P] int64)`` (TF ops)."""
    positions = tf.cast(positions, tf.int64)
    if not self.mixed:
      return tf.zeros_like(positions, tf.int32), positions
    block_size = self.global_batch_size
    block = positions // block_size
    rank_in_block = _index_shuffle(
        positions % block_size,
        tf.fill(tf.shape(positions), tf.constant(self._mix_seed, tf.int64)),
        block, tf.constant(block_size - 1, tf.int64))
    cumulative = tf.constant(self._cumulative, tf.int64)
    dataset = tf.cast(tf.searchsorted(cumulative[1:], rank_in_block,
                                      side='right'), tf.int32)
    counts = tf.gather(tf.constant(self.counts, tf.int64), dataset)
    local = block * counts + rank_in_block - tf.gather(cumulative, dataset)
    return dataset, local

  def sample_ids(self, positions: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    """``(dataset, sample id)`` at ``positions`` [P] in TF ops (``order='uniform'`` only)."""
    if self.order != 'uniform':
      raise ValueError("Sampler.sample_ids is the uniform order's; use "
                       'local_positions and spread_ids.')
    dataset, local = self.local_positions(positions)
    sizes = tf.gather(tf.constant(self.sizes, tf.int64), dataset)
    seeds = tf.gather(tf.constant(self._dataset_seeds, tf.int64), dataset)
    return dataset, _index_shuffle(local % sizes, seeds, local // sizes,
                                   sizes - 1)

  def spread_ids(self, dataset: int, local: np.ndarray) -> np.ndarray:
    """Sample ids of ``dataset`` at its positions ``local`` (NumPy; ``order='spread'``)."""
    return self._spread[dataset].sample_ids(local)

  def numpy_ids(self, positions: Sequence[int]) -> Tuple[np.ndarray, np.ndarray]:
    """``(dataset, sample id)`` at ``positions``, as NumPy arrays."""
    positions = tf.constant(np.asarray(positions, np.int64).reshape(-1))
    if self.order == 'uniform':
      dataset, sample = self._compiled('sample_ids')(positions)
      return dataset.numpy(), sample.numpy()
    dataset, local = (x.numpy() for x in
                      self._compiled('local_positions')(positions))
    sample = np.empty_like(local)
    for d in np.unique(dataset):
      sample[dataset == d] = self.spread_ids(int(d), local[dataset == d])
    return dataset, sample

  def _compiled(self, name: str):
    if not hasattr(self, '_functions'):
      self._functions = {}
    if name not in self._functions:
      self._functions[name] = tf.function(
          getattr(self, name),
          input_signature=[tf.TensorSpec([None], tf.int64)])
    return self._functions[name]

  def __getstate__(self):
    state = dict(self.__dict__)
    state.pop('_functions', None)
    return state

  def fingerprint(self) -> str:
    """Identifies what positions mean: sizes, weights, global batch."""
    text = f'{self.sizes}|{self.weights}|{self.global_batch_size}|{self.order}'
    return hashlib.sha256(text.encode()).hexdigest()[:16]
