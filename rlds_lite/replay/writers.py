"""Where new steps go: `RoundRobin` (FIFO), `TopK` (keep the best steps by a key), `Immutable` (fill once)."""

import dataclasses
import heapq
from typing import Dict, List, Tuple

import numpy as np

from rlds_lite import rlds_names
from rlds_lite.replay import storage as storage_lib

__all__ = ['RoundRobin', 'TopK', 'Immutable', 'EVICTIONS']

EVICTIONS = ('episode', 'cut')
"""What `RoundRobin` does to the rest of an episode whose first steps it overwrites."""


def _check_fits(storage: storage_lib.Storage, n: int) -> None:
  if n > storage.capacity:
    raise ValueError(f'{n} steps do not fit in a buffer of capacity '
                     f'{storage.capacity}; raise its capacity.')


def _write_slots(storage, slots, values, episode_ids, step_ids) -> None:
  for path, column in storage.columns.items():
    column[slots] = values[path]
  storage.episode_ids[slots] = episode_ids
  storage.step_ids[slots] = step_ids


def _sequential(storage, values, episode_ids, step_ids) -> np.ndarray:
  """Writes ``n`` steps at the ring's cursor: reserve, write, then publish (a kill leaves no torn slot readable)."""
  header = storage.header
  start = int(header[storage_lib.INSERTED])
  n = len(episode_ids)
  header[storage_lib.RESERVED] = max(int(header[storage_lib.RESERVED]), start + n)
  slots = (start + np.arange(n)) % storage.capacity
  _write_slots(storage, slots, values, episode_ids, step_ids)
  header[storage_lib.INSERTED] = start + n
  return slots


@dataclasses.dataclass(frozen=True)
class RoundRobin:
  """Overwrites the oldest steps first (FIFO), like TorchRL's ``RoundRobinWriter``.

  Attributes:
    evict: ``'episode'``: an episode whose first steps are overwritten is no
      longer sampled (evicted whole); ``'cut'``: its remaining steps stay, the
      first of them marked ``is_first``.

  Example:
    >>> RoundRobin()
    RoundRobin(evict='episode')
  """
  evict: str = 'episode'

  def __post_init__(self):
    if self.evict not in EVICTIONS:
      raise ValueError(f'RoundRobin: evict must be one of {EVICTIONS}, got {self.evict!r}.')

  sequential = True

  def write(self, storage, values, episode_ids, step_ids) -> np.ndarray:
    _check_fits(storage, len(episode_ids))
    slots = _sequential(storage, values, episode_ids, step_ids)
    if self.evict == 'cut':
      _mark_cut(storage, int(storage.header[storage_lib.INSERTED]))
    return slots


def _mark_cut(storage, inserted: int) -> None:
  """Marks ``is_first`` on the step after the cursor if the write cut its episode."""
  cap = storage.capacity
  if inserted < cap or rlds_names.IS_FIRST not in storage.columns:
    return
  after, before = inserted % cap, (inserted - 1) % cap
  ids = storage.episode_ids
  if ids[after] >= 0 and ids[after] != ids[before] and storage.step_ids[after] > 0:
    storage.columns[rlds_names.IS_FIRST][after] = True


@dataclasses.dataclass(frozen=True)
class Immutable:
  """Accepts steps until the buffer is full, then refuses any more (an offline dataset loaded once).

  Example:
    >>> Immutable()
    Immutable()
  """
  sequential = True

  def write(self, storage, values, episode_ids, step_ids) -> np.ndarray:
    held = int(storage.header[storage_lib.INSERTED])
    if held + len(episode_ids) > storage.capacity:
      raise ValueError(
          f'the buffer is immutable (writer=Immutable()): it holds {held} of '
          f'{storage.capacity} steps and cannot take {len(episode_ids)} more; '
          'use writer=RoundRobin() for a buffer that evicts.')
    return _sequential(storage, values, episode_ids, step_ids)


@dataclasses.dataclass
class TopK:
  """Keeps the ``capacity`` steps with the largest ``key`` (TorchRL's max-value writer).

  When full, a step replaces the smallest-key step if its key is larger, and
  is dropped otherwise. Steps are single items: no slices (``kind``) with it.

  Attributes:
    key: the scalar step field ranked (e.g. ``'reward'``).

  Example:
    >>> TopK('reward')
    TopK(key='reward')
  """
  key: str = rlds_names.REWARD
  _heap: List[Tuple[float, int]] = dataclasses.field(default_factory=list, repr=False)

  sequential = False

  def write(self, storage, values: Dict[str, np.ndarray], episode_ids, step_ids) -> np.ndarray:
    if self.key not in values:
      raise ValueError(f'TopK: the steps have no field {self.key!r} to rank by '
                       f'(they have {sorted(values)}).')
    keys = np.asarray(values[self.key], np.float64)
    if keys.ndim != 1:
      raise ValueError(f'TopK: field {self.key!r} must be one number per step, got shape '
                       f'{list(keys.shape[1:])} per step.')
    header = storage.header
    taken, slots = [], []
    for i, key in enumerate(keys.tolist()):
      filled = int(header[storage_lib.INSERTED])
      if filled < storage.capacity:
        slot = filled
        header[storage_lib.INSERTED] = header[storage_lib.RESERVED] = filled + 1
        heapq.heappush(self._heap, (key, slot))
      elif key > self._heap[0][0]:
        slot = heapq.heapreplace(self._heap, (key, self._heap[0][1]))[1]
      else:
        continue
      taken.append(i)
      slots.append(slot)
    slots = np.asarray(slots, np.int64)
    taken = np.asarray(taken, np.int64)
    _write_slots(storage, slots, {p: v[taken] for p, v in values.items()},
                 episode_ids[taken], step_ids[taken])
    return slots

  def state(self) -> Dict[str, np.ndarray]:
    keys, slots = zip(*self._heap) if self._heap else ((), ())
    return {'keys': np.asarray(keys, np.float64), 'slots': np.asarray(slots, np.int64)}

  def load_state(self, state) -> None:
    self._heap = list(zip(state['keys'].tolist(), state['slots'].tolist()))
    heapq.heapify(self._heap)
