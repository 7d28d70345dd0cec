"""Statistics of a string field: count, distinct values, the most frequent.

`StringStats` keeps them in bounded memory and merges across datasets (a
Misra-Gries summary for the most frequent, a k-minimum-values sketch for the
distinct count; their bounds: docs/stats.md).

Example:
  >>> import numpy as np
  >>> s = StringStats.empty('language_instruction')
  >>> s.update(np.array([b'pick', b'place', b'pick'], dtype=object))
  >>> s.count, s.distinct, s.top()
  (3, 2, [(b'pick', 2), (b'place', 1)])
  >>> StringStats.from_json(s.to_json()) == s
  True
"""

import dataclasses
import hashlib
import json
from typing import Any, Dict, List, Tuple

import numpy as np

from rlds_lite import nesting

DEFAULT_CAPACITY = 1024
"""Counters of the frequency summary, and hashes of the distinct sketch."""
TOP = 5
"""Most frequent values shown by `StringStats.summary`."""
_HASH_RANGE = float(2**64)


def _hash(value: bytes) -> int:
  return int.from_bytes(hashlib.blake2b(value, digest_size=8).digest(), 'little')


def _text(value: bytes) -> str:
  """``value`` as JSON-safe text that `_bytes` turns back into the same bytes."""
  return value.decode('utf-8', 'surrogateescape')


def _bytes(text: str) -> bytes:
  return text.encode('utf-8', 'surrogateescape')


def _as_bytes(value: Any) -> bytes:
  return value.encode('utf-8') if isinstance(value, str) else bytes(value)


@dataclasses.dataclass(eq=False)
class StringStats:
  """Count, distinct values and most frequent values of one string field.

  Attributes:
    path: the field (``'language_instruction'``).
    shape: the per-step shape (``()`` for a string per step); every string
      of a step counts.
    count: the number of strings.
    counters: the frequency summary (value -> count, at most ``capacity``).
    error: how much any count in ``counters`` may be low (0: exact).
    hashes: the smallest distinct 64-bit value hashes, sorted (at most
      ``capacity``).
    capacity: the size of both summaries.
  """

  path: str
  shape: tuple
  count: int
  counters: Dict[bytes, int]
  error: int
  hashes: np.ndarray
  capacity: int = DEFAULT_CAPACITY

  @classmethod
  def empty(cls, path: str, shape: Tuple[int, ...] = (),
            capacity: int = DEFAULT_CAPACITY) -> 'StringStats':
    """Statistics of no strings."""
    return cls(path, tuple(shape), 0, {}, 0, np.zeros(0, np.uint64), capacity)

  def update(self, values: Any) -> None:
    """Adds strings (an array of any shape of ``bytes``/``str``), in place."""
    flat = np.asarray(values, dtype=object).ravel()
    if not flat.size:
      return
    unique, counts = np.unique(flat, return_counts=True)
    self.count += int(flat.size)
    for value, count in zip(unique, counts):
      key = _as_bytes(value)
      self.counters[key] = self.counters.get(key, 0) + int(count)
    self._prune()
    self._add_hashes(np.array([_hash(_as_bytes(v)) for v in unique],
                              np.uint64))

  def _prune(self) -> None:
    """Misra-Gries: keep ``capacity`` counters, all lowered by the next one."""
    if len(self.counters) <= self.capacity:
      return
    cut = sorted(self.counters.values(), reverse=True)[self.capacity]
    self.counters = {k: c - cut for k, c in self.counters.items() if c > cut}
    self.error += cut

  def _add_hashes(self, hashes: np.ndarray) -> None:
    self.hashes = np.union1d(self.hashes, hashes)[:self.capacity]

  @property
  def exact(self) -> bool:
    """Whether the counts of `top` are exact."""
    return self.error == 0

  @property
  def distinct_exact(self) -> bool:
    """Whether `distinct` is exact (fewer distinct values than ``capacity``)."""
    return len(self.hashes) < self.capacity

  @property
  def distinct(self) -> int:
    """The number of distinct strings (exact, or a k-minimum-values estimate)."""
    if self.distinct_exact:
      return len(self.hashes)
    largest = float(self.hashes[-1]) + 1.0
    return int(round((self.capacity - 1) * _HASH_RANGE / largest))

  def top(self, n: int = TOP) -> List[Tuple[bytes, int]]:
    """The ``n`` most frequent strings with their counts (ties by value)."""
    ranked = sorted(self.counters.items(), key=lambda kv: (-kv[1], kv[0]))
    return ranked[:n]

  def merge(self, other: 'StringStats') -> 'StringStats':
    """Statistics of the strings of both (a new object)."""
    if other.shape != self.shape:
      raise ValueError(f'StringStats.merge: field {self.path!r} has shape '
                       f'{self.shape} and {other.shape}.')
    merged = self.copy()
    merged.capacity = min(self.capacity, other.capacity)
    merged.count += other.count
    merged.error += other.error
    for key, count in other.counters.items():
      merged.counters[key] = merged.counters.get(key, 0) + count
    merged._prune()  # pylint: disable=protected-access
    merged.hashes = merged.hashes[:merged.capacity]
    merged._add_hashes(other.hashes)  # pylint: disable=protected-access
    return merged

  def copy(self) -> 'StringStats':
    return dataclasses.replace(self, counters=dict(self.counters),
                               hashes=self.hashes.copy())

  def summary(self, n: int = TOP) -> Dict[str, Any]:
    """The readable statistics, JSON-ready (values as text)."""
    return {'path': self.path, 'dtype': 'string', 'shape': list(self.shape),
            'count': self.count, 'distinct': self.distinct,
            'distinct_exact': self.distinct_exact,
            'top': [[_text(value), count] for value, count in self.top(n)],
            'top_exact': self.exact}

  def to_dict(self) -> Dict[str, Any]:
    return {**self.summary(), 'capacity': self.capacity, 'error': self.error,
            'counters': [[_text(k), c] for k, c in sorted(
                self.counters.items())],
            'hashes': [int(h) for h in self.hashes]}

  @classmethod
  def from_dict(cls, data: Dict[str, Any]) -> 'StringStats':
    return cls(data['path'], tuple(data['shape']), int(data['count']),
               {_bytes(k): int(c) for k, c in data['counters']},
               int(data['error']), np.array(data['hashes'], np.uint64),
               int(data['capacity']))

  def to_json(self) -> str:
    return json.dumps(self.to_dict())

  @classmethod
  def from_json(cls, text: str) -> 'StringStats':
    return cls.from_dict(nesting.loads(text))

  def __eq__(self, other: Any) -> bool:
    return isinstance(other, StringStats) and self.to_dict() == other.to_dict()

  def __repr__(self) -> str:
    return (f'StringStats(path={self.path!r}, count={self.count}, '
            f'distinct={self.distinct}, top={self.top(3)!r})')
