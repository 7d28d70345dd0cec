"""Exit cleanly with a reader still running: `tracked` calls and the exit wait.

Example:
  >>> double = tracked(lambda x: 2 * x)
  >>> double(3), in_flight()
  (6, 0)
"""

import atexit
import threading
import time
from typing import Any, Callable

__all__ = ['tracked', 'in_flight', 'wait_until_idle']

IDLE_SECONDS = 0.2
"""No call started for this long (and none running): the pipeline is idle."""
MAX_WAIT_SECONDS = 30.0
"""`wait_until_idle` gives up after this long (calls still starting)."""

_lock = threading.Lock()
_active = 0
_last_start = 0.0


def tracked(fn: Callable[..., Any]) -> Callable[..., Any]:
  """``fn``, counted while it runs (for `wait_until_idle`).

  Example:
    >>> tracked(max)(2, 5)
    5
  """

  def call(*args: Any) -> Any:
    global _active, _last_start
    with _lock:
      _active += 1
      _last_start = time.monotonic()
    try:
      return fn(*args)
    finally:
      with _lock:
        _active -= 1

  return call


def in_flight() -> int:
  """Tracked calls running now.

  Example:
    >>> in_flight()
    0
  """
  with _lock:
    return _active


def wait_until_idle(idle_seconds: float = IDLE_SECONDS,
                    max_seconds: float = MAX_WAIT_SECONDS) -> bool:
  """Whether, within ``max_seconds``, no tracked call ran or started for ``idle_seconds``.

  Example:
    >>> wait_until_idle(idle_seconds=0.0)
    True
  """
  deadline = time.monotonic() + max_seconds
  while True:
    with _lock:
      now = time.monotonic()
      if _active == 0 and now - _last_start >= idle_seconds:
        return True
    if now >= deadline:
      return False
    time.sleep(0.01)


atexit.register(wait_until_idle)
