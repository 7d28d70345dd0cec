"""`Actor`: another process adds whole episodes to a shared storage under its lock, without TensorFlow."""

import os
from typing import Any, Dict, List, Mapping, Optional, Union

import numpy as np

from rlds_lite import rlds_names
from rlds_lite.replay import rate_limit
from rlds_lite.replay import spec as spec_lib
from rlds_lite.replay import storage as storage_lib
from rlds_lite.replay import writers as writers_lib

__all__ = ['Actor']

Flat = Dict[str, np.ndarray]


def _check_flags(values: Flat, label: str) -> None:
  """An episode starts with ``is_first``, ends with ``is_last``, and has neither inside."""
  n = len(next(iter(values.values())))
  for name, expected in ((rlds_names.IS_FIRST, 0), (rlds_names.IS_LAST, n - 1)):
    flags = values.get(name)
    if flags is None:
      continue
    at = np.flatnonzero(flags.astype(bool)).tolist()
    if at != [expected]:
      raise ValueError(
          f'{label}: an episode of {n} steps has {name}=True on step {expected} '
          f'only, got it on steps {at}; give one whole episode.')


class Actor:
  """Adds episodes to a buffer's storage, usually from another process: each published whole, at once.

  Steps given to `add` stay in this process until the episode's ``is_last``
  step; then the episode is written at the ring's cursor in one write under
  the storage's lock (reserve, write, publish), so its steps are consecutive
  slots and a learner's `ReplayBuffer` on the same storage sees it whole or
  not at all. Several actors (and the learner) open one `MemmapStorage` path;
  its ``flock`` is the one lock. This module never imports TensorFlow.

  A kill loses at most this actor's open episode (and the episode it was
  writing, which stays unreadable): every episode published before stays
  (docs/guarantees.md, "Actors in other processes").

  Args:
    storage: a `MemmapStorage`, or its path (reopened: it must exist), or a
      `MemoryStorage` shared with a learner in this process.
    writer: `RoundRobin()` (default) or `Immutable()`: the learner's writer.
    rate_limiter: the learner's `RateLimiter`, or None: publishing waits
      while ``samples_per_insert`` says the learner must sample first.

  Example:
    >>> import tempfile
    >>> from rlds_lite import replay
    >>> path = tempfile.mkdtemp() + '/buffer'
    >>> learner = replay.ReplayBuffer(replay.MemmapStorage(path, 100), seed=0)
    >>> actor = replay.Actor(path)   # usually in another process
    >>> for t in range(3):
    ...   published = actor.add({'observation': [t, t], 'reward': 1.0,
    ...                          'is_first': t == 0, 'is_last': t == 2})
    >>> published, actor.published_episodes, len(learner), learner.num_episodes()
    (0, 1, 3, 1)
    >>> actor
    Actor(MemmapStorage(capacity=100, 4 fields, ...), writer=RoundRobin(evict='episode'), 1 episode published, 0 steps open)
  """

  def __init__(self, storage: Union[str, os.PathLike, storage_lib.Storage], *,
               writer: Optional[Any] = None,
               rate_limiter: Optional[rate_limit.RateLimiter] = None):
    if isinstance(storage, (str, os.PathLike)):
      storage = storage_lib.MemmapStorage(storage)
    if not isinstance(storage, storage_lib.Storage):
      raise TypeError('Actor: storage must be a MemmapStorage, its path, or a '
                      f'MemoryStorage, got {storage!r}.')
    writer = writers_lib.RoundRobin() if writer is None else writer
    if not getattr(writer, 'sequential', False):
      raise ValueError(f'Actor: {writer!r} keeps single steps by their key in this '
                       "process's heap; actors share RoundRobin() or Immutable().")
    self.storage = storage
    self.writer = writer
    self.rate_limiter = rate_limiter
    self.published_episodes = 0
    self.published_steps = 0
    self._open: List[Flat] = []

  @property
  def open_steps(self) -> int:
    """Steps of the episode being collected (not in the buffer yet: a kill loses them)."""
    return len(self._open)

  def add(self, step: Mapping[str, Any]) -> Optional[int]:
    """Adds one step; publishes the episode at its ``is_last`` step (returns its id, else None)."""
    flat = spec_lib.flat_step(step)
    if rlds_names.IS_LAST not in flat:
      raise ValueError("Actor.add: a step needs an 'is_last' field (where its episode "
                       'ends); give whole episodes to add_episode instead.')
    first = flat.get(rlds_names.IS_FIRST)
    if first is not None and bool(first) != (not self._open):
      raise ValueError(
          'Actor.add: ' + (f'a step with is_first=True, but the open episode holds '
                           f'{len(self._open)} steps and no is_last step.' if self._open
                           else 'the first step of an episode needs is_first=True.'))
    self._open.append(flat)
    if not bool(flat[rlds_names.IS_LAST]):
      return None
    steps, self._open = self._open, []
    return self._publish(spec_lib.stacked(steps), 'Actor.add')

  def add_episode(self, episode: Mapping[str, Any]) -> int:
    """Publishes a whole episode ``{'steps': ...}`` (dense ``[T, ...]`` fields or a list of steps); returns its id."""
    steps = episode.get(rlds_names.STEPS) if isinstance(episode, Mapping) else None
    if isinstance(steps, (list, tuple)):
      values = spec_lib.stacked(steps)
    elif isinstance(steps, Mapping):
      values = spec_lib.flat_batch(steps, 'Actor.add_episode')
    else:
      raise TypeError(
          "Actor.add_episode: an episode is {'steps': dense [T, ...] fields or a "
          f'list of steps}}, got {type(steps).__name__} steps (a steps dataset: '
          'rlds_lite.dense.dense_episode first, or ReplayBuffer.add_episode).')
    return self._publish(values, 'Actor.add_episode')

  def _publish(self, values: Flat, label: str) -> int:
    n = len(next(iter(values.values()))) if values else 0
    storage = self.storage
    if not n or n > storage.capacity:
      raise ValueError(f'{label}: an episode of {n} steps does not fit in a buffer of '
                       f'capacity {storage.capacity}; nothing was added.')
    with storage.lock():
      if storage.spec is None:
        storage.allocate(spec_lib.spec_of(values, leading=1))
    values = spec_lib.check(values, storage.spec, 1, label)
    _check_flags(values, label)
    if self.rate_limiter is not None:
      self.rate_limiter.wait(lambda: self.rate_limiter.can_insert(*self._counts(), n),
                             lambda: f'{label}: publishing {n} steps: the learner has '
                             'not sampled enough')
    with storage.lock():
      header = storage.header
      episode = int(header[storage_lib.NEXT_EPISODE])
      header[storage_lib.NEXT_EPISODE] = episode + 1
      self.writer.write(storage, values, np.full([n], episode, np.int64),
                        np.arange(n, dtype=np.int32))
    self.published_episodes += 1
    self.published_steps += n
    return episode

  def _counts(self):
    header = self.storage.header
    return int(header[storage_lib.INSERTED]), int(header[storage_lib.SAMPLED])

  def __repr__(self) -> str:
    plural = '' if self.published_episodes == 1 else 's'
    return (f'Actor({self.storage!r}, writer={self.writer!r}, {self.published_episodes} '
            f'episode{plural} published, {self.open_steps} steps open)')
