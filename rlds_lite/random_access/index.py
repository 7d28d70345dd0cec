"""The sample index: the (episode, start) of every sample, as compact arrays.

``SampleIndex.build(kind, storage)`` lists every sample of a sample kind
(`rlds_lite.random_access.samples`) in episode order, from the episode
lengths alone (the chunk dataset's episode table, as the episode catalog
gives them): sample ``i`` is the window / transition starting at step
``start[i]`` of episode ``episode[i]``. Each array uses the smallest
unsigned type that holds it (``uint16`` for up to 65,536 episodes or steps),
so an index costs 4 to 8 bytes per sample. Its fingerprint ties it to the
data and the kind: a sampler state saved with one index cannot be restored
with another.

Example:
  >>> import numpy as np
  >>> from rlds_lite.random_access.samples import Windows
  >>> index = SampleIndex.from_lengths(Windows(size=2, shift=2), [5, 1, 4])
  >>> index
  SampleIndex(Windows(size=2, shift=2, stride=1, drop_remainder=True): 4 samples of 3 episodes, 4 bytes/sample)
  >>> index.episode.tolist(), index.start.tolist()
  ([0, 0, 2, 2], [0, 2, 0, 2])
"""

import hashlib
from typing import Any, Optional, Sequence

import numpy as np

from rlds_lite.random_access import samples as samples_lib

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
  """The samples of one kind over one split, in episode order.

  Attributes:
    kind: the sample kind (`Windows`, `Transitions`).
    episode: ``[N]`` the episode of each sample (split index).
    start: ``[N]`` the start step of each sample in its episode.
    lengths: ``[E]`` int64 episode lengths.
    terminated: ``[E]`` bool.
    fingerprint: identifies the data (``data_fingerprint``) and the kind.
  """

  def __init__(self, kind: samples_lib.SampleKind, episode: np.ndarray,
               start: np.ndarray, lengths: np.ndarray, terminated: np.ndarray,
               data_fingerprint: str = ''):
    self.kind = kind
    self.episode = episode
    self.start = start
    self.lengths = np.asarray(lengths, np.int64)
    self.terminated = np.asarray(terminated, bool)
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
    terminated = np.asarray(terminated, bool).reshape(-1)
    if terminated.shape != lengths.shape:
      raise ValueError('SampleIndex: lengths and terminated differ in size '
                       f'({len(lengths)} and {len(terminated)}).')
    counts = kind.counts(lengths, terminated).astype(np.int64)
    total = int(counts.sum())
    episode = np.repeat(np.arange(len(lengths), dtype=np.int64), counts)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    within = np.arange(total, dtype=np.int64) - np.repeat(first, counts)
    start = kind.starts(within)
    return cls(kind,
               episode.astype(compact_dtype(max(len(lengths) - 1, 0))),
               start.astype(compact_dtype(int(start.max()) if total else 0)),
               lengths, terminated, data_fingerprint)

  @classmethod
  def build(cls, kind: samples_lib.SampleKind, storage: Any) -> 'SampleIndex':
    """The index of a `ChunkStorage` (its episode table and fingerprint)."""
    return cls.from_lengths(kind, storage.lengths, storage.terminated,
                            storage.fingerprint)

  def __len__(self) -> int:
    return int(len(self.episode))

  @property
  def num_samples(self) -> int:
    return len(self)

  @property
  def nbytes(self) -> int:
    """Bytes of the per-sample arrays."""
    return int(self.episode.nbytes + self.start.nbytes)

  def __repr__(self) -> str:
    per = self.episode.itemsize + self.start.itemsize
    return (f'SampleIndex({self.kind!r}: {len(self)} samples of '
            f'{len(self.lengths)} episodes, {per} bytes/sample)')
