"""Publish one output file or directory atomically, one writer at a time (docs/guarantees.md)."""

import contextlib
import errno
import os
import re
import shutil
import uuid
from typing import Callable, List, Optional, Sequence, Union

from rlds_lite.tfds import locking
from rlds_lite.tfds import publish

__all__ = ['OUTPUT_STEPS', 'AtomicOutput', 'existing_check', 'missing_hint',
           'recover']

PathLike = Union[str, os.PathLike]

OUTPUT_STEPS = ('output_locked', 'output_staged', 'output_set_aside',
                'output_published', 'output_cleaned')
"""The steps of publishing an output, in order (see the module docstring)."""

STAGING_MARK = '.incomplete-'
ASIDE_MARK = '.replaced-'
_TOKEN = r'(\d+-)?[0-9a-f]{32}'  # <pid>-<uuid hex>; chunk's once had no pid.
_STAGING = re.escape(STAGING_MARK) + _TOKEN
_ASIDE = re.escape(ASIDE_MARK) + _TOKEN
_LEGACY = r'\.tmp-[a-z0-9_]{8}'  # mkdtemp names of rlds_lite before the lock.


def _local(path: str) -> bool:
  return '://' not in path


def _gfile():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.io.gfile


def _exists(path: str) -> bool:
  return os.path.lexists(path) if _local(path) else _gfile().exists(path)


def _isdir(path: str) -> bool:
  return os.path.isdir(path) if _local(path) else _gfile().isdir(path)


def _listdir(path: str) -> List[str]:
  if _local(path):
    return os.listdir(path)
  return [name.rstrip('/') for name in _gfile().listdir(path)]


def _remove(path: str) -> None:
  """Removes a file or a directory tree (what is already gone is fine)."""
  if _local(path):
    if os.path.isdir(path) and not os.path.islink(path):
      shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
      try:
        os.remove(path)
      except FileNotFoundError:
        pass
  elif _gfile().isdir(path):
    _gfile().rmtree(path)
  elif _gfile().exists(path):
    _gfile().remove(path)


def _absolute(target: PathLike) -> str:
  """``target`` normalised; a local one made absolute (its parent is known)."""
  target = os.fspath(target)
  return os.path.normpath(os.path.abspath(target) if _local(target)
                          else target)


def _hidden(target: str, mark: str) -> str:
  parent, base = os.path.split(target)
  return os.path.join(parent,
                      f'.{base}{mark}{os.getpid()}-{uuid.uuid4().hex}')


def _marked(target: str, patterns: Sequence[str]) -> List[str]:
  """Paths beside ``target`` named exactly ``.<base><pattern>`` (sorted)."""
  parent, base = os.path.split(target)
  if not _isdir(parent):
    return []
  pattern = re.compile(rf'^\.{re.escape(base)}(?:{"|".join(patterns)})$')
  return [os.path.join(parent, name) for name in sorted(_listdir(parent))
          if pattern.match(name)]


def recover(target: PathLike) -> List[str]:
  """Removes a dead writer's leftovers beside ``target`` (hold its lock); the paths handled.

  A set-aside old directory is renamed back if the target is missing, else deleted.

  Example (killed between setting the old dataset aside and renaming the new one in):
    >>> import os, tempfile
    >>> parent = tempfile.mkdtemp()
    >>> token = '7-' + 'ab' * 16  # <pid>-<32 hex digits>
    >>> os.makedirs(os.path.join(parent, '.out.replaced-' + token, 'data'))
    >>> os.mkdir(os.path.join(parent, '.out.incomplete-' + token))
    >>> os.mkdir(os.path.join(parent, '.out.tmp-notes'))  # Not a leftover.
    >>> [os.path.basename(p)[:16] for p in recover(os.path.join(parent, 'out'))]
    ['.out.incomplete-', '.out.replaced-7-']
    >>> sorted(os.listdir(parent)), os.listdir(os.path.join(parent, 'out'))
    (['.out.tmp-notes', 'out'], ['data'])
  """
  target = _absolute(target)
  handled = []
  for path in _marked(target, [_STAGING, _LEGACY]):
    _remove(path)
    handled.append(path)
  for path in _marked(target, [_ASIDE]):
    if not _exists(target):
      publish.rename(path, target)
    else:
      _remove(path)
    handled.append(path)
  if handled:
    publish.fsync_dir(os.path.dirname(target))
  return handled


def existing_check(if_exists: str, op: str
                   ) -> Optional[Callable[[str], None]]:
  """`AtomicOutput`'s ``check`` for a file writer's ``if_exists`` (None or 'error').

  Example:
    >>> existing_check('error', 'to_d4rl')('/')
    Traceback (most recent call last):
    ...
    FileExistsError: / exists; choose a new target
    >>> existing_check('overwrite', 'to_d4rl') is None
    True
  """
  if if_exists == 'overwrite':
    return None
  if if_exists != 'error':
    raise ValueError(f"{op}: if_exists must be 'error' or 'overwrite', got "
                     f'{if_exists!r}.')

  def check(target: str) -> None:
    if _exists(target):
      raise FileExistsError(f'{target} exists; choose a new target')

  return check


def missing_hint(target: PathLike) -> str:
  """What a reader of a missing ``target`` should know ('' if nothing).

  Example:
    >>> import os, tempfile
    >>> parent = tempfile.mkdtemp()
    >>> os.mkdir(os.path.join(parent, '.out.replaced-7-' + 'ab' * 16))
    >>> print(missing_hint(os.path.join(parent, 'out')).replace(parent, 'P'))
    ; its writer died while replacing it: the old one is whole at P/.out.replaced-7-abab...abab (the next writer of P/out puts it back; or rename it yourself)
  """
  target = _absolute(target)
  if _exists(target):
    return ''
  aside = _marked(target, [_ASIDE])
  if not aside:
    return ''
  return (f'; its writer died while replacing it: the old one is whole at '
          f'{aside[-1]} (the next writer of {target} puts it back; or rename '
          'it yourself)')


class AtomicOutput:
  """Writes one file or directory under a hidden name, then renames it in, under a lock.

  A context manager: write to `path`, then call `publish`; leaving without publishing removes
  the staging path.

  Args:
    directory: whether the output is a directory (`path` is created).
    check: ``target -> None``, raising if the target may not be written (run before writing
      and again just before the switch).
    replace: whether `publish` may replace a file or non-empty directory at the target.
    lock_timeout: seconds to wait for another writer (None: forever; 0: none).
    label: how errors name the output (default: its path).

  Example (a file: replaced atomically; a failure leaves the old one):
    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), 'data.npz')
    >>> for text in (b'old', b'new'):
    ...   with AtomicOutput(target, replace=True) as output:
    ...     with open(output.path, 'wb') as f:
    ...       _ = f.write(text)
    ...     _ = output.publish()
    >>> try:
    ...   with AtomicOutput(target, replace=True) as output:
    ...     open(output.path, 'wb').close()
    ...     raise OSError('disk full')
    ... except OSError:
    ...   pass
    >>> open(target, 'rb').read(), sorted(os.listdir(os.path.dirname(target)))
    (b'new', ['data.npz'])
  """

  def __init__(self, target: PathLike, *, directory: bool = False,
               check: Optional[Callable[[str], None]] = None,
               replace: bool = False,
               lock_timeout: Optional[float] = None,
               label: Optional[str] = None):
    target = os.fspath(target)
    if _local(target) and os.path.islink(target):
      target = os.path.realpath(target)  # Replace what the link points to.
    self._target = _absolute(target)
    self._directory = directory
    self._check = check
    self._replace = replace
    self._lock = locking.DatasetLock(self._target, timeout=lock_timeout,
                                     label=label or repr(self._target),
                                     remove_file=True)
    self._path: Optional[str] = None
    self._aside: Optional[str] = None
    self._published = False

  @property
  def target(self) -> str:
    """The final path."""
    return self._target

  @property
  def path(self) -> str:
    """Where to write (the hidden staging path) until `publish`."""
    if self._path is None:
      raise RuntimeError('AtomicOutput: use it as a context manager.')
    return self._path

  def __enter__(self) -> 'AtomicOutput':
    if _local(self._target) and os.path.ismount(self._target):
      raise ValueError(
          f'{self._target} is a mount point, which a rename cannot replace: '
          f'write to a directory inside it (e.g. {self._target}/out).')
    if not self._directory and _isdir(self._target):
      raise IsADirectoryError(f'{self._target} is a directory; give a file '
                              'path')
    parent = os.path.dirname(self._target)
    created = publish.missing_dirs(parent)
    if _local(parent):
      os.makedirs(parent, exist_ok=True)
    else:
      _gfile().makedirs(parent)
    for directory in reversed(created):
      publish.fsync_dir(os.path.dirname(directory))
    self._lock.acquire()
    try:
      recover(self._target)
      if self._check is not None:
        self._check(self._target)
      publish.step('output_locked', OUTPUT_STEPS)
      self._path = _hidden(self._target, STAGING_MARK)
      if self._directory:
        if _local(self._path):
          os.mkdir(self._path)  # 0o777 less the umask, as any directory.
        else:
          _gfile().makedirs(self._path)
    except BaseException:
      self._lock.release()
      raise
    return self

  def publish(self) -> str:
    """Flushes the staging path and renames it to the target; returns the target.

    Example:
      >>> import os, tempfile
      >>> target = os.path.join(tempfile.mkdtemp(), 'out')
      >>> with AtomicOutput(target, directory=True) as output:
      ...   os.makedirs(target + '/by_someone_else')   # no lock taken
      ...   output.publish()
      Traceback (most recent call last):
      ...
      FileExistsError: ... appeared while this output was written ...
      >>> os.listdir(target)
      ['by_someone_else']
    """
    staging, target = self.path, self._target
    parent = os.path.dirname(target)
    if self._directory:
      publish.fsync_tree(staging)
    else:
      publish.fsync_file(staging)
    publish.step('output_staged', OUTPUT_STEPS)
    if self._check is not None:
      self._check(target)
    if not self._replace:
      _rename_no_replace(staging, target, self._directory)
    else:
      if (self._directory and _isdir(target) and not os.path.islink(target)
          and _listdir(target)):
        self._aside = _hidden(target, ASIDE_MARK)
        publish.rename(target, self._aside)
        publish.fsync_dir(parent)
        publish.step('output_set_aside', OUTPUT_STEPS)
      publish.rename(staging, target)
    self._published = True
    publish.fsync_dir(parent)
    publish.step('output_published', OUTPUT_STEPS)
    if self._aside is not None:
      # A staging name first: a kill while deleting never leaves a partial
      # old directory under the name `recover` would put back.
      doomed = _hidden(target, STAGING_MARK)
      publish.rename(self._aside, doomed)
      self._aside = None
      _remove(doomed)
      publish.fsync_dir(parent)
    publish.step('output_cleaned', OUTPUT_STEPS)
    return target

  def __exit__(self, *unused_exc) -> None:
    try:
      if not self._published:
        if self._path is not None:
          _remove(self._path)
        if self._aside is not None and not _exists(self._target):
          publish.rename(self._aside, self._target)  # The old one, back.
          publish.fsync_dir(os.path.dirname(self._target))
    finally:
      self._lock.release()

  def __repr__(self) -> str:
    state = 'published' if self._published else 'not published'
    return f'AtomicOutput({self._target!r}, {state})'


def _rename_no_replace(staging: str, target: str, directory: bool) -> None:
  """Renames ``staging`` to ``target`` unless a file or non-empty directory is there.

  Example:
    >>> import os, tempfile
    >>> parent = tempfile.mkdtemp()
    >>> for name in ('.new', 'taken'):
    ...   open(os.path.join(parent, name), 'w').close()
    >>> _rename_no_replace(parent + '/.new', parent + '/taken', False)
    Traceback (most recent call last):
    ...
    FileExistsError: .../taken appeared while this output was written ...
  """
  appeared = FileExistsError(
      f'{target} appeared while this output was written (a process not '
      'holding its lock created it): it is left as it is, and this output '
      'was discarded')
  if not _local(target):
    if _exists(target) and not (directory and _isdir(target)
                                and not _listdir(target)):
      raise appeared
    publish.rename(staging, target)
    return
  try:
    if directory:
      if os.path.lexists(target) and not os.path.isdir(target):
        raise appeared
      os.rename(staging, target)  # Fails on a non-empty directory.
    else:
      _link_file(staging, target)
  except OSError as error:
    if error.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR,
                       errno.EISDIR):
      raise appeared from None
    raise


def _link_file(staging: str, target: str) -> None:
  """Gives the file ``staging`` the name ``target`` if that name is free (a hard link)."""
  try:
    os.link(staging, target)
  except OSError as error:
    if error.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV):
      raise
    if os.path.lexists(target):
      raise FileExistsError(errno.EEXIST, 'exists', target) from None
    os.rename(staging, target)
    return
  with contextlib.suppress(OSError):  # A leftover the next writer removes.
    os.remove(staging)
