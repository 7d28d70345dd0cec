"""An error's context added once, at the public function it escapes (`named`).

Helpers raise plain messages; the public function is ``@named('frame_stack')``
and its ValueErrors and TypeErrors read ``'frame_stack: ...'``. Nested public
calls keep the outermost name (docs/guarantees.md, "Error messages").
"""

import contextlib
import contextvars
import functools
from typing import Any, Callable, ContextManager, Optional

from rlds_lite import option_objects

__all__ = ['current', 'deprecated_op', 'named', 'old_op_message']

_ACTIVE: contextvars.ContextVar = contextvars.ContextVar(
    'rlds_lite_op', default=None)
_PREFIXED = (ValueError, TypeError, FileNotFoundError)
"""The exact types that gain the prefix. Subclasses (``CorruptDatasetError``,
``UnicodeError``, ...) name their own context and are left as they are; a
FileNotFoundError only when it was raised with a message."""


def old_op_message(function: str) -> str:
  """The deprecation warning of a public function's old ``op=`` keyword.

  Example:
    >>> old_op_message('parse_bytes')[:45]
    'parse_bytes: op= is now `with rlds_lite.op_co'
  """
  return (f'{function}: op= is now `with rlds_lite.op_context.named(op): ...` '
          'around the call; the old keyword will go in a later release.')


def deprecated_op(op: Optional[str], function: str,
                  default: Optional[str] = None) -> ContextManager[Any]:
  """``named(op or default)`` for ``function``'s deprecated ``op=``, warned once.

  No block at all when neither ``op`` nor ``default`` is given.

  Example:
    >>> with deprecated_op(None, 'parse_bytes', 'load'):
    ...   current()
    'load'
  """
  if op is not None:
    option_objects.warn_once((function, 'op'), old_op_message(function))
  name = op or default
  return named(name) if name else contextlib.nullcontext()


def current() -> Optional[str]:
  """The name of the public function running now (the outermost), or None.

  Example:
    >>> with named('frame_stack'):
    ...   current()
    'frame_stack'
    >>> current() is None
    True
  """
  return _ACTIVE.get()


class named(contextlib.ContextDecorator):  # pylint: disable=invalid-name
  """A decorator or block whose escaping errors start with ``f'{op}: '``.

  Only the outermost active ``named`` acts, and only on a ValueError,
  TypeError or FileNotFoundError itself (not a subclass); a message that
  already starts with ``op: `` or ``op(`` is left as it is. The exception is
  the same object (type, traceback, ``__cause__``); only its first argument
  changes.

  Args:
    op: the public function's name.

  Example:
    >>> @named('frame_stack')
    ... def frame_stack(history):
    ...   if history < 1:
    ...     raise ValueError(f'history must be a positive int, got {history}.')
    >>> frame_stack(0)
    Traceback (most recent call last):
    ...
    ValueError: frame_stack: history must be a positive int, got 0.
  """

  def __init__(self, op: str):
    self.op = op
    self._token = None

  def __repr__(self) -> str:
    return f'named({self.op!r})'

  def _recreate_cm(self) -> 'named':
    return type(self)(self.op)  # One per call: calls may nest or run at once.

  def __call__(self, function: Callable[..., Any]) -> Callable[..., Any]:
    # ContextDecorator's own wrapper lives in contextlib: warnings that point
    # at the first caller outside rlds_lite would stop at it.
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
      with self._recreate_cm():
        return function(*args, **kwargs)

    return wrapper

  def __enter__(self) -> 'named':
    if _ACTIVE.get() is None:
      self._token = _ACTIVE.set(self.op)
    return self

  def __exit__(self, kind, error, traceback) -> bool:
    if self._token is None:
      return False
    _ACTIVE.reset(self._token)
    self._token = None
    if type(error) in _PREFIXED:
      _prefix(error, self.op)
    return False


def _prefix(error: BaseException, op: str) -> None:
  """Puts ``op: `` before the message of ``error``, in place (once)."""
  if not error.args or not isinstance(error.args[0], str):
    return
  message = error.args[0]
  if message.startswith((f'{op}: ', f'{op}(')):
    return
  error.args = (f'{op}: {message}',) + error.args[1:]
  # Inside a tf.data / tf.function trace, autograph keeps the message it saw
  # first and re-raises with it: give it the prefixed one too.
  metadata = getattr(error, 'ag_error_metadata', None)
  seen = f'{type(error).__name__}: {message}'
  if getattr(metadata, 'cause_message', None) == seen:
    metadata.cause_message = f'{type(error).__name__}: {op}: {message}'
