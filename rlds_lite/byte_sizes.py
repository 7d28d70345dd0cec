"""Byte counts: parsed from ``'512MB'`` / ``'1.5 GiB'``, and shown short (``'1.2 MB'``)."""

import re
from typing import Any, Optional

import numpy as np

from rlds_lite import op_context

__all__ = ['format_bytes', 'parse_bytes']

_UNITS = {'': 1, 'B': 1, 'KB': 10**3, 'MB': 10**6, 'GB': 10**9, 'TB': 10**12,
          'KIB': 1 << 10, 'MIB': 1 << 20, 'GIB': 1 << 30, 'TIB': 1 << 40}


def format_bytes(num_bytes: float) -> str:
  """``num_bytes`` as a short decimal string.

  Example:
    >>> format_bytes(999), format_bytes(1234567), format_bytes(5e12)
    ('999 B', '1.2 MB', '5000.0 GB')
  """
  for unit in ('B', 'KB', 'MB', 'GB'):
    if abs(num_bytes) < 1000 or unit == 'GB':
      return (f'{int(num_bytes)} {unit}' if unit == 'B' else
              f'{num_bytes:.1f} {unit}')
    num_bytes /= 1000
  return f'{num_bytes:.1f} GB'


def parse_bytes(value: Any, name: str = 'memory_budget',
                op: Optional[str] = None) -> int:
  """A byte count from an int or a string like ``'512MB'`` or ``'1.5 GiB'``.

  ``KB``/``MB``/``GB``/``TB`` are powers of 1000, ``KiB``/``MiB``/``GiB``/
  ``TiB`` powers of 1024 (case-insensitive). ``op`` is deprecated (errors
  name the public function they escape).

  Example:
    >>> parse_bytes('512MB'), parse_bytes('1 KiB'), parse_bytes(10)
    (512000000, 1024, 10)
    >>> parse_bytes('lots')
    Traceback (most recent call last):
    ...
    ValueError: memory_budget must be a positive number of bytes or a string like '512MB', got 'lots'.
  """
  if op is not None:
    with op_context.deprecated_op(op, 'parse_bytes'):
      return parse_bytes(value, name)
  error = ValueError(f'{name} must be a positive number of bytes or a '
                     f"string like '512MB', got {value!r}.")
  if isinstance(value, str):
    match = re.fullmatch(r'\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*', value)
    if not match or match.group(2).upper() not in _UNITS:
      raise error
    value = float(match.group(1)) * _UNITS[match.group(2).upper()]
  if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
    raise error
  if not value >= 1:
    raise error
  return int(value)
