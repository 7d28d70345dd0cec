"""The checks every reader of a foreign format applies to what a file says.

`flags`, `count`, `number` and `finite` raise one `ConversionError` naming
the file, episode and field.
"""

import numbers
from typing import Any, Optional, Union

import numpy as np

from rlds_lite.convert import episodes as episodes_lib

ConversionError = episodes_lib.ConversionError
Episode = Optional[Union[int, str]]


_held = episodes_lib.held_text
flags = episodes_lib.flags


def number(value: Any, *, source: str, field: str, positive: bool = False,
           integer: bool = False, episode: Episode = None) -> Any:
  """A numeric metadata value, checked: a finite number (not a bool).

  Args:
    value: the value read from the file's metadata.
    source, field, episode: for the error.
    positive: it must be > 0.
    integer: it must be a whole number (returned as int).

  Raises:
    ConversionError: naming the value and what it must be.

  Example:
    >>> number('ten', source='info.json', field='fps', positive=True)
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: info.json: field 'fps': is 'ten'; expected a positive number
  """
  what = ('a positive ' if positive else 'an ' if integer else 'a ') + (
      'integer' if integer else 'number')
  if isinstance(value, np.generic):
    value = value.item()
  fail = ConversionError(f'is {value!r}; expected {what}', source=source,
                         episode=episode, field=field)
  if isinstance(value, bool) or not isinstance(value, numbers.Real):
    raise fail
  if not np.isfinite(value) or (positive and value <= 0):
    raise fail
  if integer:
    if value != int(value):
      raise fail
    return int(value)
  return value


def count(stated: Any, held: int, *, source: str, field: str, what: str,
          episode: Episode = None) -> None:
  """Raises unless the count ``stated`` in metadata equals the ``held`` one.

  Args:
    stated: the count the metadata gives (checked to be an integer).
    held: what the file holds.
    source, field, episode: for the error.
    what: what is counted, for the message (``'episode groups'``).

  Example:
    >>> count(3, 2, source='main_data.hdf5', field='total_episodes',
    ...       what='episode groups')
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: main_data.hdf5: field 'total_episodes': is 3, but the file holds 2 episode groups
  """
  stated = number(stated, source=source, field=field, integer=True,
                  episode=episode)
  if stated != held:
    raise ConversionError(f'is {stated}, but the file holds {held} {what}',
                          source=source, episode=episode, field=field)


def finite(values: Any, *, source: str, field: str,
           episode: Episode = None) -> np.ndarray:
  """``values`` as an array, checked to hold no NaN or infinity.

  Example:
    >>> finite([0., float('nan')], source='d.parquet', field='timestamp',
    ...        episode=0)
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: d.parquet: episode 0, field 'timestamp': holds nan at index 1; it must be a finite number
  """
  array = np.asarray(values)
  if array.dtype.kind in 'fc':
    bad = np.flatnonzero(~np.isfinite(array))
    if len(bad):
      first = int(bad[0])
      raise ConversionError(
          f'{_held(array, first)}; it must be a finite number',
          source=source, episode=episode, field=field)
  return array
