"""The layout of an EnvLogger recording, checked before anything reads it (`validate_recording`).

The files are described in docs/recording.md; what a killed writer leaves
is read as EnvLogger's reader reads it (docs/guarantees.md, "Recordings").
"""

import contextlib
import logging
import os
import tempfile
import types
from typing import Any, Dict, Iterator, List, Optional, Tuple
import warnings

from rlds_lite.envlogger import riegeli_files
from rlds_lite.envlogger import staging
from rlds_lite.envlogger.compat import CorruptRecordingError
from rlds_lite.envlogger.compat import PathLike
from rlds_lite.envlogger.compat import RecoveredRecordingWarning

METADATA_FILE = 'metadata.riegeli'
"""The dataset-level file at the root of a recording."""
SHARD_FILES = ('steps.riegeli', 'step_offsets.riegeli',
               'episode_metadata.riegeli', 'episode_index.riegeli')
"""The files of each writer's (timestamped) folder in a recording."""



def shard_dirs(data_dir: str) -> List[str]:
  """Sub-folders holding at least one shard file, in chronological order.

  (The staging folder of ``record(if_exists='overwrite')`` holds a recording, not
  shard files: it is not one, for EnvLogger's reader either.)
  """
  shards = []
  for name in sorted(os.listdir(data_dir)):
    path = os.path.join(data_dir, name)
    if os.path.isdir(path) and any(
        os.path.exists(os.path.join(path, f)) for f in SHARD_FILES):
      shards.append(path)
  return shards


def has_recording(data_dir: str) -> bool:
  return (os.path.exists(os.path.join(data_dir, METADATA_FILE)) or
          bool(shard_dirs(data_dir)))


def warn_recovered(message: str) -> None:
  """Issues a `RecoveredRecordingWarning` (shown once per message)."""
  warnings.warn(message, RecoveredRecordingWarning, stacklevel=2)


def _scan(path: str, verify_last: bool = False,
          tail_only: bool = False) -> riegeli_files.Extent:
  """`riegeli_files.scan`, damage raised as an error naming the file."""
  try:
    return riegeli_files.scan(path, verify_last, tail_only)
  except riegeli_files.DamagedFileError as e:
    raise CorruptRecordingError(f'EnvLogger file {path} {e}.') from e


def _check_metadata_file(path: str) -> None:
  """Raises unless ``metadata.riegeli`` is a whole riegeli file with a record.

  EnvLogger writes it whole before any writer folder exists, so (unlike a
  writer folder's files) it is never legitimately cut short.
  """
  if not os.path.isfile(path):
    raise FileNotFoundError(
        f'EnvLogger file {path} is missing: the recording is incomplete.')
  extent = _scan(path)
  if extent.size == 0:
    raise CorruptRecordingError(
        f'EnvLogger file {path} is empty (the writer was killed while '
        'creating the recording, or the copy is incomplete).')
  if extent.problem is not None:
    raise CorruptRecordingError(
        f'EnvLogger file {path} is truncated: it {extent.problem}.')
  if not extent.records:
    raise CorruptRecordingError(f'EnvLogger file {path} holds no records.')


def folder_extents(shard: str) -> Optional[Dict[str, riegeli_files.Extent]]:
  """The `riegeli_files.Extent` of each file of a writer folder.

  Returns:
    ``{file name: extent}``, or None (after a `RecoveredRecordingWarning`) for
    a folder whose writer never flushed.
  """
  extents = {}
  offsets, index = SHARD_FILES[1], SHARD_FILES[3]
  for name in SHARD_FILES:
    path = os.path.join(shard, name)
    if os.path.isfile(path):
      # The last chunk of the offsets and the index decides which episodes
      # exist: damage there (unlike a truncation) must not pass for a kill.
      # Only the end of the (large) steps file is walked: its damage is
      # found when its records are read.
      extents[name] = _scan(path, verify_last=name in (offsets, index),
                            tail_only=name == SHARD_FILES[0])
  if not any(extents[n].records for n in (offsets, index) if n in extents):
    size = sum(e.size for e in extents.values())
    warn_recovered(
        f'EnvLogger writer folder {shard} holds no complete step offsets '
        f'({size} bytes in all): its writer was killed (or is still '
        'recording) before it first flushed. The folder was ignored.')
    return None
  for name in SHARD_FILES:
    if name not in extents:
      raise FileNotFoundError(
          f'EnvLogger file {os.path.join(shard, name)} is missing: the '
          'recording is incomplete.')
  if not extents[offsets].records:
    raise CorruptRecordingError(
        f'EnvLogger file {os.path.join(shard, offsets)} is corrupt: it '
        f'holds no step offsets but {index} lists episodes.')
  for name, extent in extents.items():
    if extent.problem is not None:
      warn_recovered(
          f'EnvLogger file {os.path.join(shard, name)} {extent.problem}: its '
          f'last {extent.ignored_bytes} bytes (after byte '
          f'{extent.whole_end}) were ignored. A writer killed while writing '
          'leaves such a truncated tail.')
  return extents


def _check_directory(data_dir: str) -> None:
  if not os.path.exists(data_dir):
    raise FileNotFoundError(f'EnvLogger directory {data_dir} does not exist.')
  if not os.path.isdir(data_dir):
    raise NotADirectoryError(
        f'EnvLogger directory {data_dir} is a file, not a directory.')
  metadata_path = os.path.join(data_dir, METADATA_FILE)
  if (not os.path.exists(metadata_path) and
      staging.overwrite_in_progress(data_dir)):
    raise FileNotFoundError(
        f'EnvLogger file {metadata_path} is missing: a record(..., '
        "if_exists='overwrite') was interrupted while it swapped the new "
        'recording '
        'in. Call rlds_lite.envlogger.finish_overwrite('
        f'{data_dir!r}) (or record into it again) to complete it.')
  if not [n for n in os.listdir(data_dir) if not n.startswith('.')]:
    raise FileNotFoundError(
        f'{data_dir} is empty: no EnvLogger recording (expected '
        f'{METADATA_FILE} and one folder per writer).')
  _check_metadata_file(metadata_path)


def recording_folders(data_dir: PathLike, require_folders: bool = True
                      ) -> Dict[str, Dict[str, riegeli_files.Extent]]:
  """`validate_recording`'s checks; ``{writer folder: its file extents}``.

  With ``require_folders`` False, a recording without writer folders (its
  first writer was killed before its first reset) has none.
  """
  data_dir = os.fspath(data_dir)
  _check_directory(data_dir)
  shards = shard_dirs(data_dir)
  if not shards and require_folders:
    raise FileNotFoundError(
        f'EnvLogger recording {data_dir} holds no episodes: it has '
        f'{METADATA_FILE} but no writer folder with {", ".join(SHARD_FILES)}.')
  folders = {}
  for shard in shards:
    extents = folder_extents(shard)
    if extents is not None:
      folders[shard] = extents
  return folders


def validate_recording(data_dir: PathLike) -> Tuple[str, ...]:
  """Checks the files of an EnvLogger recording; returns its writer folders, oldest first.

  Names, riegeli signatures and chunk headers are checked; a missing or
  damaged file is a FileNotFoundError or `CorruptRecordingError` naming it.

  Args:
    data_dir: The recording directory.

  Example:
    >>> import tempfile
    >>> validate_recording(tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    FileNotFoundError: ... is empty: no EnvLogger recording ...
  """
  return tuple(recording_folders(data_dir))


@contextlib.contextmanager
def _view(data_dir: str, shard: Optional[str]) -> Iterator[str]:
  """A temporary directory linking `metadata.riegeli` and at most one folder.

  EnvLogger's readers take a whole recording; this view lets each writer
  folder be read, and its errors be reported, on its own. Readers keep their
  files open, so the links can go once a reader is open.
  """
  with tempfile.TemporaryDirectory(prefix='rlds_lite_envlogger_') as view:
    os.symlink(os.path.abspath(os.path.join(data_dir, METADATA_FILE)),
               os.path.join(view, METADATA_FILE))
    if shard is not None:
      os.symlink(os.path.abspath(shard),
                 os.path.join(view, os.path.basename(shard)))
    yield view


def _open_error(data_dir: str, shard: str,
                error: Exception) -> CorruptRecordingError:
  """The error for a folder EnvLogger cannot open: names the culprit file."""
  culprit = shard
  try:
    with _view(data_dir, None) as view:
      from envlogger.backends.python import riegeli_dataset_reader  # pylint: disable=g-import-not-at-top
      reader = riegeli_dataset_reader.RiegeliDatasetReader()
      reader.init(view)
      reader.close()
  except (RuntimeError, ValueError, TypeError):
    culprit = os.path.join(data_dir, METADATA_FILE)
  return CorruptRecordingError(f'Cannot read EnvLogger data {culprit}: {error}')


@contextlib.contextmanager
def open_native(data_dir: str, shard: str) -> Iterator[Any]:
  """EnvLogger's native ``RiegeliDatasetReader`` over one writer folder.

  Raises:
    CorruptRecordingError: naming the file EnvLogger cannot read.
  """
  from envlogger.backends.python import riegeli_dataset_reader  # pylint: disable=g-import-not-at-top
  reader = riegeli_dataset_reader.RiegeliDatasetReader()
  with _view(data_dir, shard) as view:
    try:
      reader.init(view)
    except RuntimeError as e:
      message = str(e).replace(view, data_dir)
      if message.startswith('NOT_FOUND: Empty steps in '):
        error = CorruptRecordingError(
            f'EnvLogger file {os.path.join(shard, SHARD_FILES[1])} is '
            'corrupt: EnvLogger cannot read its step offsets.')
      else:
        error = _open_error(data_dir, shard, RuntimeError(message))
      reader.close()
      raise error from e
  try:
    yield reader
  finally:
    reader.close()


class _EmptyStepsFilter(logging.Filter):
  """Catches EnvLogger's "empty step offset file" log, which it then ignores.

  EnvLogger's reader logs a misleading "you likely forgot to call close()"
  traceback and carries on when `step_offsets.riegeli` cannot be read; the
  folder plan (`rlds_lite.envlogger.folders`) has already raised a clear
  error for that, so the log is hidden.
  """

  def filter(self, record: logging.LogRecord) -> bool:
    return 'empty step offset file' not in str(record.msg)


def backend_reader(data_dir: str, shard: Optional[str]) -> Any:
  """EnvLogger's ``RiegeliBackendReader`` over `metadata.riegeli` and a folder.

  With ``shard`` None, it reads only the recording's metadata and specs.
  """
  from envlogger.backends import riegeli_backend_reader  # pylint: disable=g-import-not-at-top
  absl_logger = logging.getLogger('absl')
  empty_steps = _EmptyStepsFilter()
  with _view(data_dir, shard) as view:
    absl_logger.addFilter(empty_steps)
    try:
      return riegeli_backend_reader.RiegeliBackendReader(view)
    except (RuntimeError, ValueError, TypeError) as e:
      message = str(e).replace(view, data_dir)
      if shard is None:
        raise CorruptRecordingError(
            f'Cannot read EnvLogger data '
            f'{os.path.join(data_dir, METADATA_FILE)}: {message}') from e
      raise _open_error(data_dir, shard, RuntimeError(message)) from e
    finally:
      absl_logger.removeFilter(empty_steps)


@contextlib.contextmanager
def open_shard(envlogger: types.ModuleType, data_dir: str,
               shard: Optional[str]):
  """An `envlogger.Reader` over one writer folder of a recording (or, with
  ``shard`` None, over its metadata and specs only)."""
  reader = envlogger.Reader(backend=backend_reader(data_dir, shard))
  try:
    yield reader
  finally:
    reader.close()
