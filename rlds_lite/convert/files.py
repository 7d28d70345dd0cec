"""Read and write every supported format on disk, by name (``rlds-lite convert``).

The formats are `rlds_lite.convert.registry`'s; options, source and target
are checked first.
"""

import os
import zipfile
from typing import Any, Dict, Iterable, Iterator, NamedTuple, Optional

import numpy as np

from rlds_lite import atomic_output
from rlds_lite import nest_paths
from rlds_lite import overwriting
from rlds_lite import progress as progress_lib
from rlds_lite.convert import episodes as episodes_lib
from rlds_lite.convert import minari_layout
from rlds_lite.convert import registry
from rlds_lite.convert import rlds_dirs
from rlds_lite.convert import strings

PathLike = os.PathLike
Format = registry.Format
FORMATS = registry.FORMATS
"""The formats `read_episodes` and `write_episodes` know, by name
(`rlds_lite.convert.registry`)."""


def _file_target(path: PathLike) -> str:
  """``path`` as a string; a FileNotFoundError if its directory is missing.

  Example:
    >>> _file_target('/no/such/dir/x.h5')
    Traceback (most recent call last):
    ...
    FileNotFoundError: /no/such/dir/x.h5: its directory /no/such/dir does not exist
  """
  path = os.fspath(path)
  parent = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(parent):
    problem = ('is not a directory' if os.path.exists(parent)
               else 'does not exist')
    raise FileNotFoundError(f'{path}: its directory {parent} {problem}')
  return path


def _save_npz(data: Dict[str, Any], path: str) -> str:
  """Saves nested arrays as ``a/b`` keys; strings as ``S`` arrays (no pickle).

  Atomically, one writer at a time (`rlds_lite.atomic_output`): a second
  writer of ``path`` waits, then fails (it exists); a failure or a kill
  leaves no file at ``path`` (a killed writer's hidden file is removed by
  the next writer).
  """
  flat = {}
  for key, value in nest_paths.flatten_with_paths(data):
    value = np.asarray(value)
    if value.dtype.kind in 'OSUT':
      value = strings.for_npz(value, key, path)
    flat[key] = value

  check = atomic_output.existing_check('error', 'convert')  # One wins.
  with atomic_output.AtomicOutput(path, check=check) as output:
    with open(output.path, 'xb') as f:  # A hidden name; np.savez adds no
      np.savez(f, **flat)               # '.npz' to a file object's name.
    output.publish()
  return path


def _load_npz(path: str) -> Dict[str, Any]:
  if os.path.isfile(path) and not zipfile.is_zipfile(path):
    # np.load would try it as a pickle and talk about allow_pickle.
    raise episodes_lib.ConversionError(
        'is not a .npz file (a zip archive of .npy arrays, as numpy.savez '
        'writes)', source=os.fspath(path))
  try:
    with np.load(path, allow_pickle=False) as data:
      return nest_paths.nest_from_paths({k: data[k] for k in data.files})
  except (OSError, EOFError, ValueError, zipfile.BadZipFile) as error:
    raise episodes_lib.ConversionError(
        f'is not a readable .npz file: {error}', source=os.fspath(path)
    ) from None


_READ_OPTIONS = frozenset({'repair', 'allow_pickle', 'split',
                           'final_observation', 'check_continuity'})
"""Options `convert` hands to the reader (the others go to the writer;
``last_step`` goes to each side whose format takes it)."""


def _read(fmt: Format, path: PathLike, options: Dict[str, Any]
          ) -> Iterable[episodes_lib.Episode]:
  """Calls the reader of ``fmt`` as its layout says (`registry.LAYOUTS`)."""
  reader, _ = fmt.functions()
  if fmt.layout == 'npz':
    return reader(_load_npz(path), **options)
  return reader(os.fspath(path) if fmt.layout == 'file' else path, **options)


def _write(fmt: Format, episodes: episodes_lib.EpisodesLike, path: PathLike,
           options: Dict[str, Any]) -> str:
  """Calls the writer of ``fmt`` as its layout says; returns what it wrote."""
  _, writer = fmt.functions()
  if fmt.layout == 'npz':
    target = _file_target(path)  # Checked before any work.
    return _save_npz(writer(episodes, **options), target)
  if fmt.layout == 'file':
    writer(episodes, _file_target(path), if_exists='error', **options)
  elif fmt.layout == 'directory':
    writer(episodes, path, **options)
  else:  # 'own'
    return writer(episodes, path, **options)
  return os.fspath(path)


_DEFAULTS = {'check_continuity': True}
"""Options whose default is not None or False (set: any other value)."""


def _options(fmt: Format, options: Dict[str, Any], reading: bool
             ) -> Dict[str, Any]:
  """The options that are set (not their default), or a ValueError naming one.

  Example:
    >>> _options(FORMATS['ted'], {'repair': 'drop', 'dataset_id': None,
    ...                  'allow_pickle': False, 'check_continuity': False},
    ...          reading=True)
    {'repair': 'drop', 'check_continuity': False}
    >>> _options(FORMATS['ted'], {'one_step': 'skip'}, reading=True)
    Traceback (most recent call last):
    ...
    ValueError: ted does not take one_step='skip' when read
  """
  known = fmt.read_options if reading else fmt.write_options
  chosen = {k: v for k, v in options.items()
            if v is not None and v is not _DEFAULTS.get(k, False)}
  for key, value in chosen.items():
    if key not in known:
      raise ValueError(f'{fmt.name} does not take {key}={value!r} when '
                       f'{"read" if reading else "written"}')
  return chosen


def read_episodes(fmt: str, path: PathLike,
                  **options: Any) -> Iterator[episodes_lib.Episode]:
  """Episodes of the file or directory ``path`` in format ``fmt``.

  Args:
    fmt: a key of `FORMATS`.
    path: where the data is.
    **options: format options (``repair``, ``allow_pickle``, ``split``, ...).

  Example:
    >>> import os, tempfile, rlds_lite
    >>> work = tempfile.mkdtemp()
    >>> episodes = rlds_lite.synthetic.episodes(num_episodes=3, seed=0)
    >>> path = write_episodes('ted', episodes, os.path.join(work, 'buffer.h5'))
    >>> [len(e['steps']['is_last']) for e in read_episodes('ted', path)]
    [5, 46, 46]
  """
  source_format = registry.get(fmt)
  chosen = _options(source_format, options, reading=True)
  if not os.path.exists(path):
    raise FileNotFoundError(f'{path}: no such file or directory'
                            f'{atomic_output.missing_hint(path)}')
  return iter(_read(source_format, path, chosen))


def write_episodes(fmt: str, episodes: episodes_lib.EpisodesLike,
                   path: PathLike, **options: Any) -> str:
  """Writes ``episodes`` to ``path`` in format ``fmt``; returns what was written.

  Args:
    fmt: a key of `FORMATS`.
    episodes: Episodes or an RLDS dataset.
    path: the target file or directory (``rlds``: a dataset named after the
      last path part, or ``name``, in its parent); it must not exist.
    **options: format options (``dataset_id``, ``name``, ``one_step``).

  Example: see `read_episodes`.
  """
  target_format = registry.get(fmt)
  chosen = _options(target_format, options, reading=False)
  if os.path.exists(path) and not target_format.into_root:
    raise FileExistsError(f'{path} exists; choose a new target')
  return _write(target_format, episodes, path, chosen)


class Counted(NamedTuple):
  """What went through a conversion: episodes and steps written, the
  one-step episodes left out (``one_step='skip'``) and the file or directory
  written (``rlds``: the dataset directory; ``minari``: the dataset's)."""
  episodes: int
  steps: int
  skipped_one_step: int = 0
  written: str = ''


def counting(episodes: Iterable[episodes_lib.Episode], counts: list,
             progress: Optional[Any] = None, *,
             skip_one_step: bool = False) -> Iterator[episodes_lib.Episode]:
  """Passes ``episodes`` through, adding ``[episodes, steps, skipped]`` to
  ``counts`` (with ``skip_one_step``, a one-step episode, which the writer
  leaves out, counts as skipped, not written)."""
  for episode in episodes:
    leaves = nest_paths.flatten_with_paths(episode['steps'])
    length = len(leaves[0][1]) if leaves else 0
    if skip_one_step and length == 1:
      counts[2] += 1
    else:
      counts[0] += 1
      counts[1] += length
    if progress is not None:
      progress.update(1)
    yield episode


def _written(to_format: str, target: PathLike,
             write_options: Dict[str, Any]) -> str:
  """The file or directory a ``to_format`` writer writes for ``target``.

  Example:
    >>> _written('minari', '/out', {'dataset_id': 'ns/walk-v0'})
    '/out/ns/walk-v0'
    >>> _written('rlds', '/data/toy', {'name': 'copy'})
    '/data/copy'
  """
  if to_format == 'rlds':
    return rlds_dirs.dataset_dir(target, write_options.get('name'))
  if to_format == 'minari':
    root, dataset_id = minari_layout.dataset_root(
        target, write_options.get('dataset_id'))
    return os.path.join(root, *dataset_id.split('/'))
  return os.fspath(target)


def convert(source: PathLike, target: PathLike, *, from_format: str,
            to_format: str, progress: Optional[bool] = False,
            **options: Any) -> Counted:
  """Converts ``source`` (``from_format``) into ``target`` (``to_format``).

  Each option goes to the reader or the writer that takes it (``last_step``
  to each side that does); source and target are checked before anything is
  read (docs/convert.md).

  Example:
    >>> import os, tempfile, rlds_lite
    >>> work = tempfile.mkdtemp()
    >>> episodes = rlds_lite.synthetic.episodes(num_episodes=3, seed=0)
    >>> ted_file = write_episodes('ted', episodes, os.path.join(work, 'b.h5'))
    >>> convert(ted_file, os.path.join(work, 'alf.npz'), from_format='ted',
    ...         to_format='alf')
    Counted(episodes=3, steps=97, skipped_one_step=0, written='.../alf.npz')
  """
  last_step = options.pop('last_step', None)
  source_format, target_format = (registry.get(from_format),
                                   registry.get(to_format))
  reads = source_format.read_options | _READ_OPTIONS
  read_options = {k: v for k, v in options.items() if k in reads}
  write_options = {k: v for k, v in options.items() if k not in reads}
  if last_step is not None:  # lerobot keeps every value: it takes none.
    if 'last_step' in source_format.read_options:
      read_options['last_step'] = last_step
    if 'last_step' in target_format.write_options:
      write_options['last_step'] = last_step
  if 'split' in read_options and to_format == 'rlds':
    write_options['split'] = read_options['split']
  written = _written(to_format, target, write_options)
  overwriting.check_apart_from_sources(written, [source], kind='dataset',
                                       writer='convert')
  overwriting.check_creatable(written, writer='convert')
  episodes = read_episodes(from_format, source, **read_options)
  counts = [0, 0, 0]
  skip = write_options.get('one_step') == 'skip'
  with progress_lib.bar(progress, desc=f'{from_format} -> {to_format}',
                        unit=' episodes') as bar:
    write_episodes(to_format, counting(episodes, counts, bar,
                                       skip_one_step=skip), target,
                   **write_options)
  return Counted(*counts, written=written)
