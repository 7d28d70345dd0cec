"""When sampling and inserting may go on: Reverb's ``MinSize`` and ``SampleToInsertRatio``, with timeouts."""

import dataclasses
import time
from typing import Callable, Optional

__all__ = ['RateLimiter', 'RateLimitTimeout']

_POLL_SECONDS = (0.0005, 0.05)


class RateLimitTimeout(TimeoutError):
  """Sampling or inserting waited longer than the rate limiter's timeout."""


@dataclasses.dataclass(frozen=True)
class RateLimiter:
  """Reverb's rate limiting: a minimum size, and optionally a samples-per-insert ratio.

  With ``samples_per_insert`` ``r`` and ``error_buffer`` ``e``, the difference
  ``d = inserts * r - samples`` stays in ``[m*r - e, m*r + e]`` once
  ``m = min_size`` steps are in: sampling ``n`` waits while ``d - n`` is below,
  inserting ``n`` waits while ``d + n*r`` is above (Reverb's
  ``SampleToInsertRatio``). Inserts and samples count steps (items).

  Attributes:
    min_size: steps inserted before any sample.
    samples_per_insert: the target ratio, or None (``MinSize`` only).
    error_buffer: how far the ratio may stray, in samples (needed with a ratio,
      at least ``max(1, samples_per_insert)`` as in Reverb).
    timeout: seconds a sample or insert waits before `RateLimitTimeout`
      (None: forever).

  Example:
    >>> limiter = RateLimiter(min_size=2, samples_per_insert=4.0, error_buffer=8.0)
    >>> limiter.can_sample(inserts=2, samples=0, n=8), limiter.can_sample(2, 0, 9)
    (True, False)
    >>> limiter.can_insert(inserts=4, samples=0, n=1)
    False
  """
  min_size: int = 1
  samples_per_insert: Optional[float] = None
  error_buffer: Optional[float] = None
  timeout: Optional[float] = 60.0

  def __post_init__(self):
    if isinstance(self.min_size, bool) or not isinstance(self.min_size, int) or self.min_size < 1:
      raise ValueError(f'RateLimiter: min_size must be an int >= 1, got {self.min_size!r}.')
    if self.samples_per_insert is None:
      if self.error_buffer is not None:
        raise ValueError('RateLimiter: error_buffer needs samples_per_insert.')
      return
    ratio = float(self.samples_per_insert)
    if not ratio > 0:
      raise ValueError(f'RateLimiter: samples_per_insert must be > 0, got {ratio}.')
    if self.error_buffer is None or float(self.error_buffer) < max(1.0, ratio):
      raise ValueError(
          'RateLimiter: error_buffer must be at least max(1, samples_per_insert) = '
          f'{max(1.0, ratio)} (else neither side could move), got {self.error_buffer}.')

  def _bounds(self):
    offset = self.min_size * float(self.samples_per_insert)
    return offset - float(self.error_buffer), offset + float(self.error_buffer)

  def can_sample(self, inserts: int, samples: int, n: int) -> bool:
    if inserts < self.min_size:
      return False
    if self.samples_per_insert is None:
      return True
    low, _ = self._bounds()
    return inserts * float(self.samples_per_insert) - samples - n >= low

  def can_insert(self, inserts: int, samples: int, n: int) -> bool:
    if self.samples_per_insert is None or inserts + n <= self.min_size:
      return True
    _, high = self._bounds()
    return inserts * float(self.samples_per_insert) - samples + n * float(
        self.samples_per_insert) <= high

  def wait(self, ready: Callable[[], bool], what: Callable[[], str]) -> None:
    """Returns once ``ready()``; raises `RateLimitTimeout` (saying ``what()``) after the timeout."""
    if ready():
      return
    deadline = None if self.timeout is None else time.monotonic() + self.timeout
    pause = _POLL_SECONDS[0]
    while not ready():
      if deadline is not None and time.monotonic() >= deadline:
        raise RateLimitTimeout(f'{what()}; waited {self.timeout:g} s (RateLimiter('
                               f'timeout={self.timeout:g})).')
      time.sleep(pause)
      pause = min(2 * pause, _POLL_SECONDS[1])
