"""A thread-safe LRU cache that computes each key once (a failure is not cached).

Example:
  >>> calls = []
  >>> cache = Memo(capacity=2)
  >>> cache.get('a', lambda: calls.append('a') or 1)
  1
  >>> cache.get('a', lambda: calls.append('a') or 2), calls
  (1, ['a'])
  >>> _ = cache.get('b', lambda: 2), cache.get('c', lambda: 3)
  >>> 'a' in cache, 'c' in cache
  (False, True)
"""

import collections
import threading
from typing import Any, Callable, Hashable, Optional


class _Entry:
  __slots__ = ('lock', 'done', 'value')

  def __init__(self):
    self.lock = threading.Lock()
    self.done = False
    self.value = None


class Memo:
  """Values by key, computed once each; past ``capacity`` (None: all) the least recent go."""

  def __init__(self, capacity: Optional[int] = None):
    self._capacity = capacity
    self._lock = threading.Lock()
    self._entries: 'collections.OrderedDict[Hashable, _Entry]' = (
        collections.OrderedDict())

  def __contains__(self, key: Hashable) -> bool:
    with self._lock:
      entry = self._entries.get(key)
      return entry is not None and entry.done

  def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
    """The value of ``key``, computed by ``compute()`` if not cached."""
    with self._lock:
      entry = self._entries.get(key)
      if entry is None:
        entry = self._entries[key] = _Entry()
      self._entries.move_to_end(key)
    with entry.lock:
      if not entry.done:
        entry.value = compute()
        entry.done = True
    with self._lock:
      while self._capacity is not None and len(self._entries) > self._capacity:
        self._entries.popitem(last=False)
    return entry.value
