"""What a writer may write: `check_replaceable`, `check_apart_from_sources`, and the like.

The rules are in docs/guarantees.md ("Converters' overwrites replace only their own kind").
"""

import os
import re
from typing import Any, Callable, Optional, Sequence, Union

__all__ = ['check_apart_from_sources', 'check_creatable', 'check_replaceable',
           'path_inside']

PathLike = Union[str, os.PathLike]


class _FileSystem:
  """Local paths through ``os``; ``gs://...`` and the like through gfile."""

  def __init__(self, path: str):
    self._remote = '://' in path
    if self._remote:
      import tensorflow as tf  # pylint: disable=g-import-not-at-top
      self._gfile = tf.io.gfile

  def exists(self, path: str) -> bool:
    if self._remote:
      return self._gfile.exists(path)
    return os.path.lexists(path)

  def isdir(self, path: str) -> bool:
    return self._gfile.isdir(path) if self._remote else os.path.isdir(path)

  def listdir(self, path: str) -> Sequence[str]:
    if self._remote:
      return self._gfile.listdir(path)
    return os.listdir(path)

  def contains(self, directory: str, path: str) -> bool:
    """Whether ``path`` is ``directory`` or lies under it."""
    if self._remote or '://' in path:
      directory, path = directory.rstrip('/'), path.rstrip('/')
      return path == directory or path.startswith(directory + '/')
    directory, path = os.path.realpath(directory), os.path.realpath(path)
    return os.path.commonpath([directory, path]) == directory


def check_apart_from_sources(out: PathLike, sources: Sequence[PathLike], *,
                             kind: str, writer: str) -> None:
  """Raises a ValueError if ``out`` is one of ``sources`` or lies inside one.

  ``kind`` (``'chunk dataset'``) and ``writer`` name the output and operation in the message.

  Example:
    >>> import tempfile
    >>> source = tempfile.mkdtemp()
    >>> try:
    ...   check_apart_from_sources(os.path.join(source, 'out'), [source],
    ...                            kind='chunk dataset', writer='convert')
    ... except ValueError as e:
    ...   print(str(e).replace(source, 'SOURCE'))
    convert: SOURCE/out is inside the source SOURCE; writing there would change the source dataset. Choose an output outside it.
  """
  out = os.fspath(out)
  files = _FileSystem(out)
  for source in sources:
    source = os.fspath(source)
    if files.contains(out, source) and files.contains(source, out):
      raise ValueError(f'{writer}: {out} is the source {source}; writing '
                       'there would destroy it. Choose another output.')
    if files.contains(source, out):
      raise ValueError(f'{writer}: {out} is inside the source {source}; '
                       'writing there would change the source dataset. '
                       'Choose an output outside it.')


def check_replaceable(out: PathLike, *, kind: str, marker: str,
                      writer: str, sources: Sequence[PathLike] = (),
                      is_kind: Optional[Callable[[str], bool]] = None
                      ) -> None:
  """Raises unless ``out`` is absent, empty, or a ``kind`` to replace (it holds ``marker``).

  ``is_kind`` is a finer test than ``marker``; ``sources`` go to `check_apart_from_sources`.

  Example:
    >>> import tempfile
    >>> source = tempfile.mkdtemp()
    >>> try:
    ...   check_replaceable(os.path.dirname(source), kind='chunk dataset',
    ...                     marker='dataset_info.json', writer='convert',
    ...                     sources=[source])
    ... except ValueError as e:
    ...   print('holds the source' in str(e))
    True
  """
  out = os.fspath(out)
  files = _FileSystem(out)
  check_apart_from_sources(out, sources, kind=kind, writer=writer)
  for source in sources:
    if files.contains(out, os.fspath(source)):
      raise ValueError(f'{writer}: {out} holds the source {source}; '
                       'overwriting it would delete the source. Choose an '
                       f'output directory for the new {kind} itself.')
  if not files.exists(out):
    return
  if not files.isdir(out):
    raise FileExistsError(f'{writer}: {out} is a file, not a {kind}; '
                          'nothing was replaced.')
  if not files.listdir(out):
    return
  is_kind = is_kind or (
      lambda path: files.exists(os.path.join(path, marker)))
  if not is_kind(out):
    raise FileExistsError(
        f'{writer}: {out} is not a {kind} (it has no {marker}); overwrite '
        f'replaces only a {kind}, so nothing was replaced. Choose a new '
        f'output directory (the {kind} itself, not its parent).')


def check_creatable(out: PathLike, *, writer: str) -> None:
  """Raises unless ``out`` (a file or directory) can be made or written in (a few ``stat`` calls).

  Example:
    >>> import tempfile
    >>> file = os.path.join(tempfile.mkdtemp(), 'notes.txt')
    >>> open(file, 'w').close()
    >>> try:
    ...   check_creatable(os.path.join(file, 'out'), writer='convert')
    ... except NotADirectoryError as e:
    ...   print(str(e).replace(file, 'FILE'))
    convert: FILE/out: its directory FILE is not a directory
  """
  out = os.fspath(out)
  if '://' in out:
    return
  path = directory = os.path.abspath(os.path.expanduser(out))
  while not os.path.lexists(directory):
    directory = os.path.dirname(directory)
  if not os.path.isdir(directory):
    if directory == path:
      return
    raise NotADirectoryError(
        f'{writer}: {out}: its directory {directory} is not a directory')
  if os.access(directory, os.W_OK):
    return
  where = out if directory == path else f'{out}: its directory {directory}'
  if os.statvfs(directory).f_flag & os.ST_RDONLY:
    raise PermissionError(f'{writer}: {where} is on a read-only file system')
  raise PermissionError(f'{writer}: {where} is not writable (permission '
                        'denied)')


def path_inside(target: PathLike, name: Any, *, what: str,
                writer: str) -> str:
  """``target/name``; a ValueError (naming argument ``what``) if ``name`` leads outside ``target``.

  Example:
    >>> path_inside('/data', 'ns/walk-v0', what='dataset_id', writer='to_minari')
    '/data/ns/walk-v0'
    >>> try:
    ...   path_inside('/data', '../x', what='name', writer='convert')
    ... except ValueError as e:
    ...   print(e)
    convert: name='../x' leads outside /data; a name must stay inside its target (a relative path without empty, '.' or '..' parts).
  """
  target = os.fspath(target)
  if not isinstance(name, str) or os.path.isabs(name) or any(
      part in ('', '.', '..') for part in re.split(r'[/\\]', name)):
    raise ValueError(f'{writer}: {what}={name!r} leads outside {target}; a '
                     'name must stay inside its target (a relative path '
                     "without empty, '.' or '..' parts).")
  return os.path.join(target, name)
