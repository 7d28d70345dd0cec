"""Options objects (frozen dataclasses of knobs): a short repr, the old keywords they replaced."""

import dataclasses
import os
import sys
from typing import Any, Dict, Hashable, Iterable
import warnings

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_WARNED = set()
"""The keys already warned about: each rename warns once per process."""


def short_repr(value: Any, always: int = 0) -> str:
  """``Name(a=1, b='x')``: the fields that differ from their default (and the first ``always``).

  Example:
    >>> @dataclasses.dataclass(frozen=True)
    ... class Knobs:
    ...   size: int = 1
    ...   name: str = 'a'
    >>> short_repr(Knobs(name='b')), short_repr(Knobs(), always=1)
    ("Knobs(name='b')", 'Knobs(size=1)')
  """
  shown = [f'{f.name}={getattr(value, f.name)!r}'
           for i, f in enumerate(dataclasses.fields(value))
           if i < always or getattr(value, f.name) != f.default]
  return f'{type(value).__name__}({", ".join(shown)})'


def _outside_stacklevel() -> int:
  """The ``stacklevel`` (for `warn_once`'s call) of the first caller outside rlds_lite."""
  frame, level = sys._getframe(1), 1  # pylint: disable=protected-access
  while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
    frame, level = frame.f_back, level + 1
  return level


def warn_once(key: Hashable, message: str) -> None:
  """A ``DeprecationWarning`` with ``message`` the first time ``key`` is seen, at the user's line.

  Example:
    >>> with warnings.catch_warnings(record=True) as caught:
    ...   warnings.simplefilter('always')
    ...   for _ in range(2):
    ...     warn_once('doc_key', 'doc: x= is now y=.')
    >>> [str(w.message) for w in caught]
    ['doc: x= is now y=.']
  """
  if key in _WARNED:
    return
  _WARNED.add(key)
  warnings.warn(message, DeprecationWarning, stacklevel=_outside_stacklevel())


def warn_renamed(op: str, old: Iterable[str], new: str) -> None:
  """One warning per ``(op, new)``: the ``old`` keywords of ``op`` are now ``new``.

  Example:
    >>> with warnings.catch_warnings(record=True) as caught:
    ...   warnings.simplefilter('always')
    ...   warn_renamed('doc_op', ['pool_episodes'], 'pooling=Pooling(...)')
    ...   warn_renamed('doc_op', ['prefetch'], 'pooling=Pooling(...)')
    >>> [str(w.message) for w in caught]
    ["doc_op: ['pool_episodes'] are now pooling=Pooling(...); the old keywords will go in a later release."]
  """
  warn_once((op, new), f'{op}: {sorted(old)} are now {new}; the old keywords '
            'will go in a later release.')


def check_keywords(op: str, keywords: Dict[str, Any],
                   known: Iterable[str]) -> None:
  """A TypeError (as Python's) for a keyword of ``keywords`` not in ``known``.

  Example:
    >>> check_keywords('windows_dataset', {'sise': 2}, ['size'])
    Traceback (most recent call last):
    ...
    TypeError: windows_dataset() got an unexpected keyword argument 'sise'
  """
  unknown = sorted(set(keywords) - set(known))
  if unknown:
    raise TypeError(f'{op}() got an unexpected keyword argument '
                    f'{unknown[0]!r}')


def knobs_object(cls: Any, value: Any, keywords: Dict[str, Any], op: str,
                 spelling: str) -> Any:
  """``value`` (a ``cls``), or ``cls(**keywords)`` of old flat keywords (warning once).

  Keywords beside ``value`` are a TypeError; ``cls``'s errors are named by ``op``.

  Example:
    >>> import dataclasses
    >>> @dataclasses.dataclass(frozen=True)
    ... class Knobs:
    ...   size: int = 1
    >>> knobs_object(Knobs, None, {}, 'op', 'knobs=Knobs(...)')
    Knobs(size=1)
    >>> knobs_object(Knobs, Knobs(2), {'size': 3}, 'op', 'knobs=Knobs(...)')
    Traceback (most recent call last):
    ...
    TypeError: op: pass ['size'] in knobs=Knobs(...), not beside it.
  """
  if not keywords:
    return cls() if value is None else value
  if value is not None:
    raise TypeError(f'{op}: pass {sorted(keywords)} in {spelling}, not '
                    'beside it.')
  warn_renamed(op, keywords, spelling)
  try:
    return cls(**keywords)
  except (TypeError, ValueError) as error:
    message = str(error).replace(f'{cls.__name__}: ', f'{op}: ', 1)
    raise type(error)(message) from None
