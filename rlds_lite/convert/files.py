"""Read and write every supported format on disk, by name (``rlds-lite convert``).

=============  ===============================================  ==============
format         on disk                                          module
=============  ===============================================  ==============
``rlds``       a TFDS dataset directory (read: any split)       `rlds_lite.load`
``minari``     a Minari dataset root (``data/main_data.hdf5``)   `minari`
``d4rl``       a D4RL-style HDF5 file                           `d4rl`
``il``         an il-representations dict saved as ``.npz``     `il_representations`
``webdataset`` a directory of il-representations tar shards     `il_representations`
``ted``        a TorchRL TED H5 file                            `ted`
``alf``        ALF TimeSteps saved as ``.npz``                  `alf`
``lerobot``    a LeRobotDataset directory (v3.0; reads v2.x)    `lerobot`
=============  ===============================================  ==============

In ``.npz`` files nested dicts are stored under ``'a/b'`` keys.

Example:
  >>> import os, tempfile, rlds_lite
  >>> work = tempfile.mkdtemp()
  >>> episodes = rlds_lite.synthetic.episodes(num_episodes=3, seed=0)
  >>> path = write_episodes('ted', episodes, os.path.join(work, 'buffer.h5'))
  >>> [len(e['steps']['is_last']) for e in read_episodes('ted', path)]
  [5, 46, 46]
"""

import os
import zipfile
from typing import Any, Callable, Dict, Iterable, Iterator, NamedTuple, Optional

import numpy as np

from rlds_lite import source as source_lib
from rlds_lite import atomic_output
from rlds_lite import nest_paths
from rlds_lite import overwriting
from rlds_lite import progress as progress_lib
from rlds_lite.convert import episodes as episodes_lib
from rlds_lite.convert import strings

PathLike = os.PathLike


class Format(NamedTuple):
  """How one format is read from and written to disk.

  Attributes:
    read: ``(path, **options) -> Episodes``.
    write: ``(episodes, path, **options) -> written path``.
    read_options: the options ``read`` takes (others are an error).
    write_options: the options ``write`` takes.
    describe: one line for ``--help``.
  """
  read: Callable[..., Iterable[episodes_lib.Episode]]
  write: Callable[..., str]
  read_options: frozenset
  write_options: frozenset
  describe: str


def _file_target(path: PathLike) -> str:
  """``path`` as a string; a FileNotFoundError if its directory is missing.

  ``convert`` writes a file only into a directory that exists (a typo in
  the directory is an error, not a new directory tree; the library writers,
  `rlds_lite.atomic_output`, create missing parents).

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


def _read_rlds(path, split='train'):
  """Episodes of a TFDS dataset; a damaged file is named (CorruptDatasetError).

  Opening errors are raised here; damage found while reading, by the
  returned iterator.
  """
  source = source_lib.as_source(path, split)
  episodes = source.episodes(dense=True)

  def read():
    with source.read_errors():
      yield from episodes_lib.numpy_episodes(episodes)

  return read()


def _rlds_target(path: PathLike, name: Optional[str]) -> str:
  """The dataset directory an ``rlds`` target writes versions into.

  Example:
    >>> _rlds_target('/data/toy', None), _rlds_target('/data/toy', 'other')
    ('/data/toy', '/data/other')
  """
  path = os.path.abspath(os.fspath(path))
  if name is None:
    return path
  return overwriting.path_inside(os.path.dirname(path), name, what='name',
                                 writer='convert')


_RLDS_VERSION = '1.0.0'
"""The version an ``rlds`` target is written as."""


def _write_rlds(episodes, path, name=None, split='train'):
  if os.path.isfile(path):  # Before the name: 'x.txt' is not a bad name.
    raise FileExistsError(f'{path} exists (a file); choose a new target')
  target = _rlds_target(path, name)
  version = os.path.join(target, _RLDS_VERSION)
  if os.path.isfile(target):
    raise FileExistsError(f'{target} exists (a file); choose a new target')
  if os.path.isfile(os.path.join(version, 'dataset_info.json')):
    # Checked before reading (write_tfds would find it at the first episode).
    raise FileExistsError(f'{version} exists; choose a new target')
  return episodes_lib.write_tfds(
      episodes, os.path.dirname(target), os.path.basename(target),
      split=split, version=_RLDS_VERSION)


def _read_minari(path, repair=None, last_step='invalid'):
  from rlds_lite.convert import minari  # pylint: disable=g-import-not-at-top
  return minari.from_minari(path, repair=repair, last_step=last_step)


def _minari_root(path: PathLike, dataset_id: Optional[str]):
  """``(root, dataset_id)`` of a Minari target: a root, or a dataset's
  directory (what ``--from minari`` reads) ending in the id or named like one.

  Example:
    >>> _minari_root('out', 'demo/point-v0')
    ('out', 'demo/point-v0')
    >>> _minari_root('out/demo/point-v0', 'demo/point-v0')
    ('out', 'demo/point-v0')
    >>> _minari_root('out/point-v0', None)
    ('out', 'point-v0')
  """
  from rlds_lite.convert import minari  # pylint: disable=g-import-not-at-top
  path = os.path.normpath(os.fspath(path))
  if not dataset_id:
    name = os.path.basename(path)
    if not minari.is_dataset_id(name):
      raise ValueError('writing minari needs a dataset id, e.g. '
                       "dataset_id='demo/point-v0'")
    dataset_id = name
  parts, components = dataset_id.split('/'), path.split(os.sep)
  if components[-len(parts):] == parts:  # The dataset's own directory.
    path = os.sep.join(components[:-len(parts)]) or (
        os.sep if path.startswith(os.sep) else os.curdir)
  return path, dataset_id


def _write_minari(episodes, path, dataset_id=None, last_step='invalid'):
  from rlds_lite.convert import minari  # pylint: disable=g-import-not-at-top
  root, dataset_id = _minari_root(path, dataset_id)
  target = os.path.join(root, dataset_id)
  if os.path.exists(target):  # The root may hold other datasets; not this.
    raise FileExistsError(f'{target} exists; choose a new target')
  return minari.to_minari(episodes, root, dataset_id, last_step=last_step)


def _read_d4rl(path, repair=None, final_observation=None,
               last_step='invalid'):
  from rlds_lite.convert import d4rl  # pylint: disable=g-import-not-at-top
  return d4rl.from_d4rl(os.fspath(path), repair=repair,
                        final_observation=final_observation,
                        last_step=last_step)


def _write_d4rl(episodes, path, one_step='error', last_step='invalid'):
  from rlds_lite.convert import d4rl  # pylint: disable=g-import-not-at-top
  d4rl.to_d4rl(episodes, _file_target(path), one_step=one_step,
               last_step=last_step, if_exists='error')
  return os.fspath(path)


def _read_il(path, repair=None, last_step='invalid'):
  from rlds_lite.convert import il_representations  # pylint: disable=g-import-not-at-top
  return il_representations.from_il_dict(_load_npz(path), repair=repair,
                                         last_step=last_step)


def _write_il(episodes, path, one_step='error', last_step='invalid'):
  from rlds_lite.convert import il_representations  # pylint: disable=g-import-not-at-top
  target = _file_target(path)  # Checked before any work.
  return _save_npz(il_representations.to_il_dict(
      episodes, one_step=one_step, last_step=last_step), target)


def _read_webdataset(path, repair=None, allow_pickle=False,
                     last_step='invalid'):
  from rlds_lite.convert import il_representations  # pylint: disable=g-import-not-at-top
  return il_representations.from_webdataset(path, repair=repair,
                                            allow_pickle=allow_pickle,
                                            last_step=last_step)


def _write_webdataset(episodes, path, one_step='error', last_step='invalid'):
  from rlds_lite.convert import il_representations  # pylint: disable=g-import-not-at-top
  il_representations.to_webdataset(episodes, path, one_step=one_step,
                                    last_step=last_step)
  return os.fspath(path)


def _read_ted(path, repair=None, check_continuity=True, last_step='invalid'):
  from rlds_lite.convert import ted  # pylint: disable=g-import-not-at-top
  return ted.from_ted(os.fspath(path), repair=repair,
                      check_continuity=check_continuity, last_step=last_step)


def _write_ted(episodes, path, one_step='error', last_step='invalid'):
  from rlds_lite.convert import ted  # pylint: disable=g-import-not-at-top
  return ted.to_ted_h5(episodes, _file_target(path), one_step=one_step,
                       last_step=last_step, if_exists='error')


def _read_alf(path, repair=None, last_step='invalid'):
  from rlds_lite.convert import alf  # pylint: disable=g-import-not-at-top
  return alf.from_alf(_load_npz(path), repair=repair, last_step=last_step)


def _write_alf(episodes, path, one_step='error', last_step='invalid'):
  from rlds_lite.convert import alf  # pylint: disable=g-import-not-at-top
  target = _file_target(path)  # Checked before any work.
  return _save_npz(alf.to_alf(episodes, one_step=one_step,
                              last_step=last_step), target)


def _read_lerobot(path, task_key=None):
  from rlds_lite.convert import lerobot  # pylint: disable=g-import-not-at-top
  return lerobot.from_lerobot(path, task_key=task_key)


def _write_lerobot(episodes, path, fps=None, task_key=None, no_video=False):
  from rlds_lite.convert import lerobot  # pylint: disable=g-import-not-at-top
  if fps is None:  # 0 and negatives: to_lerobot says they are not rates.
    raise ValueError('writing lerobot needs the frame rate, e.g. fps=10: '
                     'RLDS does not record it')
  return lerobot.to_lerobot(
      episodes, path, fps=fps, video=not no_video,
      task_key=lerobot.DEFAULT_TASK_KEY if task_key is None else task_key)


FORMATS: Dict[str, Format] = {
    'rlds': Format(_read_rlds, _write_rlds, frozenset({'split'}),
                   frozenset({'split', 'name'}),
                   'a TFDS dataset directory (RLDS)'),
    'minari': Format(_read_minari, _write_minari,
                     frozenset({'repair', 'last_step'}),
                     frozenset({'dataset_id', 'last_step'}),
                     'a Minari dataset root'),
    'd4rl': Format(_read_d4rl, _write_d4rl,
                   frozenset({'repair', 'final_observation', 'last_step'}),
                   frozenset({'one_step', 'last_step'}),
                   'a D4RL-style HDF5 file'),
    'il': Format(_read_il, _write_il, frozenset({'repair', 'last_step'}),
                 frozenset({'one_step', 'last_step'}),
                 'an il-representations dict in a .npz file'),
    'webdataset': Format(_read_webdataset, _write_webdataset,
                         frozenset({'repair', 'allow_pickle', 'last_step'}),
                         frozenset({'one_step', 'last_step'}),
                         'a directory of il-representations tar shards'),
    'ted': Format(_read_ted, _write_ted,
                  frozenset({'repair', 'check_continuity', 'last_step'}),
                  frozenset({'one_step', 'last_step'}),
                  'a TorchRL TED H5 file'),
    'alf': Format(_read_alf, _write_alf, frozenset({'repair', 'last_step'}),
                  frozenset({'one_step', 'last_step'}),
                  'ALF TimeSteps in a .npz file'),
    'lerobot': Format(_read_lerobot, _write_lerobot, frozenset({'task_key'}),
                      frozenset({'fps', 'task_key', 'no_video'}),
                      'a LeRobotDataset directory (v3.0; reads v2.x too)'),
}
"""The formats `read_episodes` and `write_episodes` know, by name."""

_READ_OPTIONS = frozenset({'repair', 'allow_pickle', 'split',
                           'final_observation', 'check_continuity'})
"""Options `convert` hands to the reader (the others go to the writer;
``last_step`` goes to each side whose format takes it)."""


def _format(name: str) -> Format:
  if name not in FORMATS:
    raise ValueError(f'unknown format {name!r}; known: {", ".join(FORMATS)}')
  return FORMATS[name]


_DEFAULTS = {'check_continuity': True}
"""Options whose default is not None or False (set: any other value)."""


def _options(name: str, options: Dict[str, Any], reading: bool
             ) -> Dict[str, Any]:
  """The options that are set (not their default), or a ValueError naming one.

  Example:
    >>> _options('ted', {'repair': 'drop', 'dataset_id': None,
    ...                  'allow_pickle': False, 'check_continuity': False},
    ...          reading=True)
    {'repair': 'drop', 'check_continuity': False}
    >>> _options('ted', {'one_step': 'skip'}, reading=True)
    Traceback (most recent call last):
    ...
    ValueError: ted does not take one_step='skip' when read
  """
  known = (_format(name).read_options if reading
           else _format(name).write_options)
  chosen = {k: v for k, v in options.items()
            if v is not None and v is not _DEFAULTS.get(k, False)}
  for key, value in chosen.items():
    if key not in known:
      raise ValueError(f'{name} does not take {key}={value!r} when '
                       f'{"read" if reading else "written"}')
  return chosen


def read_episodes(fmt: str, path: PathLike,
                  **options: Any) -> Iterator[episodes_lib.Episode]:
  """Episodes of the file or directory ``path`` in format ``fmt``.

  Args:
    fmt: a key of `FORMATS`.
    path: where the data is.
    **options: format options (``repair``, ``allow_pickle``, ``split``,
      ``final_observation``, ``check_continuity``).

  Raises:
    FileNotFoundError: if ``path`` does not exist.
    ValueError: for an unknown format or an option it does not take.
  """
  reader = _format(fmt).read
  chosen = _options(fmt, options, reading=True)
  if not os.path.exists(path):
    raise FileNotFoundError(f'{path}: no such file or directory'
                            f'{atomic_output.missing_hint(path)}')
  return iter(reader(path, **chosen))


def write_episodes(fmt: str, episodes: episodes_lib.EpisodesLike,
                   path: PathLike, **options: Any) -> str:
  """Writes ``episodes`` to ``path`` in format ``fmt``; returns what was written.

  Args:
    fmt: a key of `FORMATS`.
    episodes: Episodes or an RLDS dataset.
    path: the target file or directory (``rlds``: the dataset directory's
      parent gets a dataset named after the last path part, or ``name``).
    **options: format options (``dataset_id``, ``name``, ``one_step``).

  Raises:
    FileExistsError: if ``path`` exists.
    ValueError: for an unknown format or an option it does not take.
  """
  writer = _format(fmt).write
  chosen = _options(fmt, options, reading=False)
  if os.path.exists(path) and fmt not in ('minari', 'rlds'):
    raise FileExistsError(f'{path} exists; choose a new target')
  return writer(episodes, path, **chosen)


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
    return _rlds_target(target, write_options.get('name'))
  if to_format == 'minari':
    root, dataset_id = _minari_root(target, write_options.get('dataset_id'))
    return os.path.join(root, *dataset_id.split('/'))
  return os.fspath(target)


def convert(source: PathLike, target: PathLike, *, from_format: str,
            to_format: str, progress: Optional[bool] = False,
            **options: Any) -> Counted:
  """Converts ``source`` (``from_format``) into ``target`` (``to_format``).

  Options go to the reader or the writer that takes them (``repair``,
  ``allow_pickle``, ``split``, ``final_observation`` (d4rl),
  ``check_continuity`` (ted) and what the source format reads, e.g. a
  lerobot ``task_key``, to the reader; ``dataset_id``, ``name``,
  ``one_step``, ``fps`` and the rest to the writer; ``last_step``,
  ``'invalid'`` or ``'valid'``, to each side whose format takes it (not
  ``rlds``, which holds last steps as they are, nor ``lerobot``, which
  writes every step's values): with
  ``'valid'`` the episodes' last steps hold real actions and rewards, see
  `rlds_lite.convert.transitions`). A writer that leaves out non-zero
  last-step values warns once (`rlds_lite.dense.LastStepValuesWarning`).

  Raises:
    ValueError: what the target writes is or lies inside ``source``
      (checked before anything is read or written; a target that holds a
      source file is fine: convert only creates); an unknown format or an
      option it does not take.
    FileExistsError: the target exists.
    NotADirectoryError, PermissionError: the target cannot be made (it would
      be inside a file, or on a read-only file system; checked before
      anything is read).

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
  reads = _format(from_format).read_options | _READ_OPTIONS
  read_options = {k: v for k, v in options.items() if k in reads}
  write_options = {k: v for k, v in options.items() if k not in reads}
  if last_step is not None:  # lerobot keeps every value: it takes none.
    if 'last_step' in _format(from_format).read_options:
      read_options['last_step'] = last_step
    if 'last_step' in _format(to_format).write_options:
      write_options['last_step'] = last_step
  if 'split' in read_options and to_format == 'rlds':
    write_options['split'] = read_options['split']
  _format(to_format)
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
