"""One line for a file system failure (a full disk, a read-only target, ...) a command lets through.

`describe` is what ``rlds_lite.cli.main`` calls; what it turns into one line:
docs/cli.md ("Adding a command").
"""

import errno
import os
import re
import sys
from typing import Optional, Tuple

FAILED = 2
"""The exit status: as for bad input (`dataset_options.BAD_INPUT`)."""

_WRITING_ONLY = {
    errno.ENOSPC: 'no space left on device (the disk is full)',
    errno.EDQUOT: 'disk quota exceeded (no space left for this user)',
    errno.EROFS: 'read-only file system',
    errno.EFBIG: 'file too large',
}
"""Failures only a write has, and what they say."""

_TF_REASONS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG,
               errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.EISDIR,
               errno.EIO)
"""The ``strerror`` endings of TensorFlow file system errors we report."""

_TF_MESSAGE = re.compile(
    r'(?P<path>\S+?);? (?P<reason>' +
    '|'.join(re.escape(os.strerror(code)) for code in _TF_REASONS) +
    r'|is not a directory)\b')
"""``PATH; No space left on device`` or ``PATH is not a directory``."""

_HDF5_ERRNO = re.compile(r"filename = '(?P<path>[^']*)'.*errno = (?P<code>\d+)",
                         re.S)
"""HDF5's ``file write failed: ..., filename = '...', ..., errno = 28``."""


def _tensorflow_io(error: BaseException) -> Optional[Tuple[int, str]]:
  """``(errno, path)`` of a TensorFlow file system error, else None."""
  tf = sys.modules.get('tensorflow')
  if tf is None or not isinstance(error, (
      tf.errors.ResourceExhaustedError, tf.errors.PermissionDeniedError,
      tf.errors.FailedPreconditionError, tf.errors.OutOfRangeError)):
    return None
  match = _TF_MESSAGE.search(error.message)
  if not match:  # e.g. out of memory: not the file system.
    return None
  reason = match.group('reason')
  code = errno.ENOTDIR if reason == 'is not a directory' else next(
      c for c in _TF_REASONS if os.strerror(c) == reason)
  return code, match.group('path')


def _os_error(error: OSError) -> Tuple[Optional[int], Optional[str]]:
  """``(errno, path)`` of an OSError (h5py's name them in their text)."""
  code, path = error.errno, error.filename
  match = _HDF5_ERRNO.search(str(error))
  if match:
    code = code or int(match.group('code'))
    path = path or match.group('path')
  return code, (os.fspath(path) if path is not None else None)


def _file_above(path: str) -> Optional[str]:
  """The nearest ancestor of ``path`` that exists, if it is not a directory."""
  parent = os.path.dirname(os.path.abspath(path))
  while parent and not os.path.lexists(parent):
    if parent == os.path.dirname(parent):
      return None
    parent = os.path.dirname(parent)
  return None if os.path.isdir(parent) else parent


def describe(error: BaseException,
             output: Optional[str] = None) -> Optional[str]:
  """One line for a file system ``error``, or None if it is not one.

  Args:
    error: what a command raised.
    output: what the command writes (``--out``, ``TARGET``), named for a
      failure only a write can have; None if unknown.

  Example:
    >>> import errno
    >>> describe(OSError(errno.ENOSPC, 'No space left on device',
    ...                  '/data/out/.tmp-1/shard'), output='/data/out')
    '/data/out: no space left on device (the disk is full)'
    >>> describe(TypeError('a bug')) is None
    True
  """
  if isinstance(error, OSError):
    code, path = _os_error(error)
  else:
    found = _tensorflow_io(error)
    if found is None:
      return None
    code, path = found
  if code is None:  # Our own OSErrors: their message names the path.
    return ' '.join(str(error).split())
  if code in _WRITING_ONLY:
    where = output or path
    return (f'{where}: ' if where else '') + _WRITING_ONLY[code]
  if code == errno.ENOTDIR:
    file = _file_above(output or path or '')
    if file is not None:
      return f'{output or path}: its directory {file} is not a directory'
  reason = os.strerror(code)
  reason = reason[0].lower() + reason[1:]
  return f'{path}: {reason}' if path else reason
