"""The sample index: the (episode, start) of every sample, from per-episode counts.

Example:
  >>> import numpy as np
  >>> from rlds_lite.random_access.samples import Windows
  >>> index = SampleIndex.from_lengths(Windows(size=2, shift=2), [5, 1, 4])
  >>> index
  SampleIndex(Windows(size=2, shift=2, stride=1, drop_remainder=True): 4 samples of 3 episodes)
  >>> index.episode.tolist(), index.start.tolist()
  ([0, 0, 2, 2], [0, 2, 0, 2])
  >>> [a.tolist() for a in index.locate([3, 1])]
  [[2, 0], [2, 2]]
"""

import hashlib
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from rlds_lite import sample_kinds as samples_lib

__all__ = ['SampleIndex', 'compact_dtype']


def compact_dtype(maximum: int) -> np.dtype:
  """The smallest of uint16, uint32, int64 that holds ``0..maximum``.

  Example:
    >>> compact_dtype(70000).name
    'uint32'
  """
  for dtype in (np.uint16, np.uint32):
    if maximum <= np.iinfo(dtype).max:
      return np.dtype(dtype)
  return np.dtype(np.int64)


class SampleIndex:
  """The samples of one kind over one split, in episode order (one int64 per episode).

  Attributes: ``kind``, ``counts`` (``[E]`` samples per episode), ``first`` (``[E + 1]``: each
  episode's first sample id, then the number of samples), ``lengths``, ``terminated`` and
  ``fingerprint`` (the data and the kind).

  Example:
    >>> from rlds_lite import synthetic
    >>> from rlds_lite import random_access as ra
    >>> path = synthetic.dataset(3, 4, 6, seed=0)
    >>> chunks = ra.convert(path, progress=False)
    >>> index = ra.SampleIndex.build(ra.Windows(size=2),
    ...                              ra.ChunkStorage(chunks))
    >>> len(index), index.counts.tolist()
    (14, [4, 5, 5])
    >>> [a.tolist() for a in index.locate([0, 5])]   # episodes, starts
    [[0, 1], [0, 1]]
  """

  def __init__(self, kind: samples_lib.SampleKind, lengths: np.ndarray,
               terminated: np.ndarray, data_fingerprint: str = ''):
    self.kind = kind
    self.lengths = np.asarray(lengths, np.int64).reshape(-1)
    self.terminated = np.asarray(terminated, bool).reshape(-1)
    if self.terminated.shape != self.lengths.shape:
      raise ValueError('SampleIndex: lengths and terminated differ in size '
                       f'({len(self.lengths)} and {len(self.terminated)}).')
    self.counts = kind.counts(self.lengths, self.terminated).astype(np.int64)
    self.first = np.concatenate([[0], np.cumsum(self.counts)]).astype(
        np.int64)
    self.data_fingerprint = data_fingerprint
    digest = hashlib.sha256(f'{data_fingerprint}|{kind!r}'.encode())
    digest.update(np.ascontiguousarray(self.lengths).tobytes())
    self.fingerprint = digest.hexdigest()[:16]

  @classmethod
  def from_lengths(cls, kind: samples_lib.SampleKind,
                   lengths: Sequence[int],
                   terminated: Optional[Sequence[bool]] = None,
                   data_fingerprint: str = '') -> 'SampleIndex':
    """The index of episodes of ``lengths`` (and ``terminated`` flags)."""
    lengths = np.asarray(lengths, np.int64).reshape(-1)
    if terminated is None:
      terminated = np.zeros(len(lengths), bool)
    return cls(kind, lengths, terminated, data_fingerprint)

  @classmethod
  def build(cls, kind: samples_lib.SampleKind, storage: Any) -> 'SampleIndex':
    """The index of a `ChunkStorage` (its episode table and fingerprint)."""
    return cls(kind, storage.lengths, storage.terminated, storage.fingerprint)

  def locate(self, sample_ids: Any) -> Tuple[np.ndarray, np.ndarray]:
    """``(episode, start)`` of ``sample_ids`` (int64 arrays, same shape; one binary search)."""
    ids = np.asarray(sample_ids, np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= len(self)):
      bad = ids[(ids < 0) | (ids >= len(self))].reshape(-1)[0]
      raise IndexError(f'random access: sample {bad} is out of range: the '
                       f'index has {len(self)} samples.')
    episode = np.searchsorted(self.first, ids, side='right') - 1
    return episode, self.kind.starts(ids - self.first[episode])

  @property
  def episode(self) -> np.ndarray:
    """``[N]`` the episode of every sample (smallest unsigned type)."""
    episode = np.repeat(np.arange(len(self.lengths), dtype=compact_dtype(
        max(len(self.lengths) - 1, 0))), self.counts)
    return episode

  @property
  def start(self) -> np.ndarray:
    """``[N]`` the start step of every sample (smallest unsigned type)."""
    start = self.locate(np.arange(len(self)))[1]
    return start.astype(compact_dtype(int(start.max()) if len(self) else 0))

  def __len__(self) -> int:
    return int(self.first[-1])

  @property
  def num_samples(self) -> int:
    return len(self)

  @property
  def nbytes(self) -> int:
    """Bytes of the index's arrays (per episode)."""
    return int(self.counts.nbytes + self.first.nbytes + self.lengths.nbytes +
               self.terminated.nbytes)

  def __repr__(self) -> str:
    return (f'SampleIndex({self.kind!r}: {len(self)} samples of '
            f'{len(self.lengths)} episodes)')
