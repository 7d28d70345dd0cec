"""The learner's table of the stored episodes (first slot, length, ends) and which slots start a sample of a kind."""

from typing import Dict, List, Optional, Tuple

import numpy as np

from rlds_lite import sample_kinds

__all__ = ['EpisodeIndex']


class EpisodeIndex:
  """Rows of stored episodes, kept up to date as slots are evicted and added.

  An episode occupies consecutive ring slots. A row is *open* until its
  ``is_last`` step arrives; an open episode offers a sample once every step
  the sample reads has arrived.

  Args:
    capacity: the storage's slots.
    evict: ``'episode'`` (a row loses every step when its first is evicted)
      or ``'cut'`` (it keeps the rest).
    kind: the sample kind whose starts `starts_of` computes.
  """

  def __init__(self, capacity: int, evict: str, kind: sample_kinds.SampleKind):
    self.capacity = capacity
    self.evict = evict
    self.kind = kind
    self.row_of_slot = np.full([capacity], -1, np.int32)
    self.first = np.zeros([capacity], np.int32)
    self.length = np.zeros([capacity], np.int32)
    self.closed = np.zeros([capacity], bool)
    self.terminated = np.zeros([capacity], bool)
    self.episode = np.full([capacity], -1, np.int64)
    self.next_row = 0
    self.rows: Dict[int, int] = {}   # episode id -> row
    self.dropped: List[np.ndarray] = []
    self._reach = int(np.max(kind.offsets))

  def evict_slots(self, slots: np.ndarray) -> np.ndarray:
    """Forgets ``slots`` (the oldest of their rows); returns the rows touched.

    Slots of rows evicted whole go to `dropped` (their samples are gone too).
    """
    rows = self.row_of_slot[slots]
    rows, counts = np.unique(rows[rows >= 0], return_counts=True)
    self.row_of_slot[slots] = -1
    for row, count in zip(rows.tolist(), counts.tolist()):
      self.first[row] = (self.first[row] + count) % self.capacity
      self.length[row] -= count
      if self.evict == 'episode' or self.length[row] <= 0:
        self._kill(row)
    return rows

  def _kill(self, row: int) -> None:
    slots = self.slots_of(row)
    self.dropped.append(slots)
    self.row_of_slot[slots] = -1
    self.length[row] = 0
    self.rows.pop(int(self.episode[row]), None)

  def take_dropped(self) -> np.ndarray:
    """The slots of rows evicted whole since the last call."""
    dropped, self.dropped = self.dropped, []
    return np.concatenate(dropped) if dropped else np.zeros([0], np.int64)

  def add_slots(self, slots: np.ndarray, episode_ids: np.ndarray,
                is_last: np.ndarray, is_terminal: np.ndarray,
                step_ids: Optional[np.ndarray] = None) -> np.ndarray:
    """Adds ``slots`` (in insertion order) to their episodes' rows; returns the rows touched.

    With ``evict='episode'``, steps of an episode first seen past its step 0
    (its head was overwritten before this index saw it: a learner that fell
    more than a capacity behind, or reopened a full ring) get no row.
    """
    if not len(slots):
      return np.zeros([0], np.int64)
    change = np.flatnonzero(np.diff(episode_ids)) + 1
    bounds = np.concatenate([[0], change, [len(slots)]])
    touched = []
    for begin, end in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
      episode = int(episode_ids[begin])
      row = self.rows.get(episode)
      if row is None and self.evict == 'episode' and (
          step_ids is not None and step_ids[begin] > 0):
        continue   # Headless: never sampled, as if evicted whole.
      if row is None:
        row = self._new_row(episode, int(slots[begin]))
      elif (self.first[row] + self.length[row]) % self.capacity != slots[begin]:
        raise RuntimeError(f'replay: episode {episode} continues at slot {slots[begin]}, '
                           'not right after its last step; add(step) was interleaved '
                           "with another writer's steps on the same storage.")
      self.length[row] += end - begin
      self.row_of_slot[slots[begin:end]] = row
      self.closed[row] = bool(is_last[end - 1])
      self.terminated[row] = bool(is_last[end - 1] and is_terminal[end - 1])
      touched.append(row)
    return np.asarray(touched, np.int64)

  def _new_row(self, episode: int, first: int) -> int:
    row = self.next_row % self.capacity
    if self.length[row] > 0:
      self._kill(row)
    self.next_row += 1
    self.rows[episode] = row
    self.episode[row] = episode
    self.first[row], self.length[row] = first, 0
    self.closed[row] = self.terminated[row] = False
    return row

  def slots_of(self, row: int) -> np.ndarray:
    return (self.first[row] + np.arange(self.length[row])) % self.capacity

  def starts_of(self, row: int) -> Tuple[np.ndarray, np.ndarray]:
    """The row's slots and whether each starts a sample of the kind."""
    slots = self.slots_of(row)
    length = int(self.length[row])
    ok = np.zeros([length], bool)
    if length:
      count = int(self.kind.counts(np.array([length]),
                                   np.array([self.terminated[row]]))[0])
      starts = self.kind.starts(np.arange(count))
      if not self.closed[row]:
        starts = starts[starts + self._reach <= length - 1]
      ok[starts[starts < length]] = True
    return slots, ok

  def locate(self, slots: np.ndarray):
    """``(row, start, length, terminated)`` of samples starting at ``slots``.

    An open episode's ``length`` is one more than it holds, so that its last
    stored action counts as valid (the samples never read past what it holds).
    """
    rows = self.row_of_slot[slots]
    start = (slots - self.first[rows]) % self.capacity
    length = self.length[rows] + (~self.closed[rows]).astype(np.int32)
    return rows, start.astype(np.int64), length.astype(np.int64), self.terminated[rows]

  def state(self) -> Dict[str, np.ndarray]:
    return {'row_of_slot': self.row_of_slot, 'first': self.first, 'length': self.length,
            'closed': self.closed, 'terminated': self.terminated,
            'episode': self.episode, 'next_row': np.array(self.next_row)}

  def load_state(self, state) -> None:
    for name in ('row_of_slot', 'first', 'length', 'closed', 'terminated', 'episode'):
      getattr(self, name)[...] = state[name]
    self.next_row = int(state['next_row'])
    live = np.flatnonzero(self.length > 0)
    self.rows = dict(zip(self.episode[live].tolist(), live.tolist()))
