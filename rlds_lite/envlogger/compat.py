"""EnvLogger on today's stack: load it, or say exactly why it cannot load.

EnvLogger 1.3's wheel needs glibc >= 2.38 and EnvLogger 1.2 uses `np.unicode_`
/ `np.string_`, which NumPy 2 removed. rlds_lite pins `envlogger==1.2` and
`import_envlogger()` defines those two aliases (only if missing) before
loading it, or raises `EnvLoggerUnavailableError` naming the cause.
"""

import importlib
import importlib.metadata
import os
import platform
import types
from typing import Optional, Tuple, Union

import numpy as np


SUPPORTED_ENVLOGGER = '1.2'
"""The EnvLogger version rlds_lite pins (1.3 wheels need glibc >= 2.38)."""

# NumPy 2 removed these aliases; EnvLogger 1.2's codec still uses them.
_NUMPY_ALIASES = (('unicode_', 'str_'), ('string_', 'bytes_'))
_INSTALL_HINT = f"pip install 'envlogger=={SUPPORTED_ENVLOGGER}'"

PathLike = Union[str, os.PathLike]


class EnvLoggerUnavailableError(ImportError):
  """EnvLogger is missing or cannot load here; the message says why."""


class CorruptRecordingError(ValueError):
  """A file of an EnvLogger recording is damaged; the message names it."""


class RecoveredRecordingWarning(UserWarning):
  """Data a killed writer left unfinished was skipped; the message says which.

  Issued (once per file or writer folder) when a reader ignores the
  truncated tail of a file, a writer folder holding nothing yet, or the
  unfinished episode at the end of a writer folder. Turn it into an error
  with ``warnings.simplefilter('error', RecoveredRecordingWarning)``.
  """


def patch_numpy_for_envlogger() -> Tuple[str, ...]:
  """Defines `np.unicode_` and `np.string_` if missing (NumPy 2); returns the names added.

  Example:
    >>> patch_numpy_for_envlogger() in ((), ('unicode_', 'string_'))
    True
    >>> np.unicode_ is np.str_, np.string_ is np.bytes_
    (True, True)
  """
  added = []
  for alias, target in _NUMPY_ALIASES:
    if not hasattr(np, alias):
      setattr(np, alias, getattr(np, target))
      added.append(alias)
  return tuple(added)


def _installed_version() -> Optional[str]:
  try:
    return importlib.metadata.version('envlogger')
  except importlib.metadata.PackageNotFoundError:
    return None


def _explain_import_error(error: ImportError) -> str:
  """A message naming why `import envlogger` failed and how to fix it."""
  version = _installed_version()
  if (isinstance(error, ModuleNotFoundError) and
      (error.name or '').split('.')[0] == 'envlogger' and version is None):
    return (f'EnvLogger is not installed. rlds_lite records with EnvLogger '
            f'{SUPPORTED_ENVLOGGER}: {_INSTALL_HINT}')
  installed = f'EnvLogger {version or "(unknown version)"}'
  if 'GLIBC' in str(error):
    libc, libc_version = platform.libc_ver()
    return (f'{installed} is installed but its native modules need a newer '
            f'C library than this system has ({libc or "libc"} '
            f'{libc_version or "unknown"}); EnvLogger 1.3 wheels need '
            f'glibc >= 2.38. Install EnvLogger {SUPPORTED_ENVLOGGER}, which '
            f'needs glibc >= 2.29: {_INSTALL_HINT}. Original error: {error}')
  if (isinstance(error, ModuleNotFoundError) and error.name and
      error.name.split('.')[0] != 'envlogger'):
    return (f'{installed} cannot be imported: its dependency '
            f'{error.name!r} is missing ({error}). Reinstall it with its '
            f'dependencies: {_INSTALL_HINT}')
  return (f'{installed} failed to import: {error}. rlds_lite supports '
          f'EnvLogger {SUPPORTED_ENVLOGGER}: {_INSTALL_HINT}')


def import_envlogger() -> types.ModuleType:
  """Imports EnvLogger after `patch_numpy_for_envlogger()` (else `EnvLoggerUnavailableError`).

  Example:
    >>> envlogger = import_envlogger()
    >>> envlogger.Reader.__name__, envlogger.EnvLogger.__name__
    ('Reader', 'EnvLogger')
  """
  patch_numpy_for_envlogger()
  try:
    return importlib.import_module('envlogger')
  except ImportError as e:
    raise EnvLoggerUnavailableError(_explain_import_error(e)) from e
