"""Which samples a batch takes: `Uniform`, `WithoutReplacement` (each once per epoch), `Prioritized` (sum tree)."""

import dataclasses
from typing import Dict, Optional, Tuple

import numpy as np

from rlds_lite.replay import sum_tree

__all__ = ['Uniform', 'WithoutReplacement', 'Prioritized', 'SAMPLERS']

_DENSE_ENOUGH = 0.25
"""Below this share of valid slots, `Uniform` draws from a list of them instead of rejecting."""


class _Candidates:
  """Which slots start a sample now (``ok``) and how many."""

  def attach(self, capacity: int) -> None:
    self.ok = np.zeros([capacity], bool)
    self.count = 0
    self._listed: Optional[np.ndarray] = None

  def set(self, slots: np.ndarray, ok: np.ndarray) -> None:
    """Marks ``slots`` as starting a sample (``ok``) or not."""
    if not len(slots):
      return
    once = np.unique(slots)   # A slot given twice (TopK refilling it) counts once.
    before = int(np.count_nonzero(self.ok[once]))
    self.ok[slots] = ok
    self.count += int(np.count_nonzero(self.ok[once])) - before
    self._listed = None

  def listed(self) -> np.ndarray:
    if self._listed is None:
      self._listed = np.flatnonzero(self.ok)
    return self._listed

  def update(self, slots: np.ndarray, priorities: np.ndarray) -> None:
    del slots, priorities  # Only `Prioritized` ranks samples.

  def state(self) -> Dict[str, np.ndarray]:
    return {'ok': self.ok}

  def load_state(self, state) -> None:
    self.set(np.arange(len(self.ok)), state['ok'])


@dataclasses.dataclass
class Uniform(_Candidates):
  """Uniform with replacement over every sample the buffer holds (TorchRL's ``RandomSampler``).

  Example:
    >>> Uniform()
    Uniform()
  """

  def sample(self, batch_size: int, rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
    if self.count >= _DENSE_ENOUGH * len(self.ok):
      picked = np.zeros([0], np.int64)
      while len(picked) < batch_size:
        draw = rng.integers(0, len(self.ok), 2 * batch_size)
        picked = np.concatenate([picked, draw[self.ok[draw]]])
      slots = picked[:batch_size]
    else:
      listed = self.listed()
      slots = listed[rng.integers(0, len(listed), batch_size)]
    return slots, np.ones([batch_size], np.float32)


@dataclasses.dataclass
class WithoutReplacement(_Candidates):
  """Every sample once per epoch, in a random order (TorchRL's ``SamplerWithoutReplacement``).

  An epoch is the samples held when it starts; a batch that ends an epoch is
  completed from the next. Samples evicted during an epoch are skipped.

  Example:
    >>> WithoutReplacement()
    WithoutReplacement()
  """

  def attach(self, capacity: int) -> None:
    super().attach(capacity)
    self._order = np.zeros([0], np.int64)
    self._next = 0
    self.epoch = 0

  def sample(self, batch_size: int, rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
    taken = []
    need = batch_size
    while need:
      if self._next >= len(self._order):
        self._order = rng.permutation(self.listed())
        self._next = 0
        self.epoch += 1
      chunk = self._order[self._next:self._next + need]
      self._next += len(chunk)
      chunk = chunk[self.ok[chunk]]
      taken.append(chunk)
      need -= len(chunk)
    return np.concatenate(taken), np.ones([batch_size], np.float32)

  def state(self) -> Dict[str, np.ndarray]:
    return {'ok': self.ok, 'order': self._order, 'next': np.array(self._next),
            'epoch': np.array(self.epoch)}

  def load_state(self, state) -> None:
    super().load_state(state)
    self._order = np.array(state['order'], np.int64)
    self._next, self.epoch = int(state['next']), int(state['epoch'])


@dataclasses.dataclass
class Prioritized(_Candidates):
  """Proportional prioritized replay (Schaul et al. 2016; TorchRL's ``PrioritizedSampler``).

  A sample is drawn with probability ``p_i**alpha / sum_j p_j**alpha``; its
  importance weight is ``(p_i / p_min)**-beta`` (the largest weight is 1). New
  samples get the largest priority seen so far (``max_priority`` at first).

  Attributes:
    alpha: how much priorities count (0: uniform).
    beta: importance-weight correction (0: none; 1: full).
    eps: added to every priority given to `update`.
    max_priority: the priority of the first samples.

  Example:
    >>> Prioritized(alpha=0.6, beta=0.4)
    Prioritized(alpha=0.6, beta=0.4, eps=1e-06, max_priority=1.0)
  """
  alpha: float = 0.6
  beta: float = 0.4
  eps: float = 1e-6
  max_priority: float = 1.0

  def __post_init__(self):
    for name in ('alpha', 'beta', 'eps', 'max_priority'):
      value = float(getattr(self, name))
      if not np.isfinite(value) or value < 0:
        raise ValueError(f'Prioritized: {name} must be a finite number >= 0, got {value}.')
    if self.max_priority <= 0:
      raise ValueError(f'Prioritized: max_priority must be > 0, got {self.max_priority}.')

  def attach(self, capacity: int) -> None:
    super().attach(capacity)
    self._sums = sum_tree.SegmentTree(capacity, 'sum')
    self._mins = sum_tree.SegmentTree(capacity, 'min')
    self._max_seen = float(self.max_priority)

  def set(self, slots: np.ndarray, ok: np.ndarray) -> None:
    ok = np.broadcast_to(np.asarray(ok, bool), np.shape(slots))
    fresh = ok & ~self.ok[slots]
    super().set(slots, ok)
    self._put(slots[~ok], None)
    self._put(slots[fresh], np.full([int(fresh.sum())], self._max_seen))

  def _put(self, slots: np.ndarray, priorities: Optional[np.ndarray]) -> None:
    if priorities is None:
      self._sums.set(slots, np.zeros([len(slots)]))
      self._mins.set(slots, np.full([len(slots)], np.inf))
      return
    scaled = np.power(priorities, self.alpha)
    self._sums.set(slots, scaled)
    self._mins.set(slots, np.where(scaled > 0, scaled, np.inf))  # Never drawn.

  def sample(self, batch_size: int, rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
    total = self._sums.total()
    if not total > 0:
      raise ValueError(f'sample: all {self.count} samples have priority 0; give some '
                       'a positive priority (or eps > 0).')
    slots = self._sums.find(rng.uniform(0.0, total, batch_size))
    scaled = self._sums.leaves(slots)
    weights = np.power(scaled / self._mins.total(), -self.beta)
    return slots, weights.astype(np.float32)

  def update(self, slots: np.ndarray, priorities: np.ndarray) -> None:
    slots = np.asarray(slots, np.int64).reshape(-1)
    priorities = np.asarray(priorities, np.float64).reshape(-1)
    if slots.shape != priorities.shape:
      raise ValueError(f'update_priority: {len(slots)} indices but {len(priorities)} '
                       'priorities.')
    bad = np.flatnonzero(~np.isfinite(priorities) | (priorities < 0))
    if len(bad):
      i = int(bad[0])
      raise ValueError(f'update_priority: the priority of index {int(slots[i])} is '
                       f'{priorities[i]}; priorities must be finite and >= 0.')
    live = self.ok[slots]   # Samples evicted since they were drawn keep no priority.
    priorities = priorities + self.eps
    if len(priorities):
      self._max_seen = max(self._max_seen, float(priorities.max()))
    self._put(slots[live], priorities[live])

  def probabilities(self, slots: np.ndarray) -> np.ndarray:
    """Each slot's probability of being drawn (for tests and plots)."""
    return self._sums.leaves(slots) / self._sums.total()

  def state(self) -> Dict[str, np.ndarray]:
    return {'ok': self.ok, 'sums': self._sums.state(), 'mins': self._mins.state(),
            'max_seen': np.array(self._max_seen)}

  def load_state(self, state) -> None:
    _Candidates.set(self, np.arange(len(self.ok)), state['ok'])
    self._sums.load_state(state['sums'])
    self._mins.load_state(state['mins'])
    self._max_seen = float(state['max_seen'])


SAMPLERS = (Uniform, WithoutReplacement, Prioritized)
