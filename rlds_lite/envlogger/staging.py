"""One recorder at a time (`recorder_lock`), and `record(if_exists='overwrite')` never losing both.

The lock and the overwrite's staged swap are in docs/guarantees.md
("Recordings: append and overwrite", "one recorder at a time").
"""

import contextlib
import fcntl
import json
import os
import shutil
from typing import Iterator, List

from rlds_lite.envlogger.compat import PathLike

LOCK_FILE = '.rlds_lite.lock'
"""The lock file `record` holds in the recording directory."""
STAGING_DIR = '.rlds_lite_overwrite'
"""Where ``record(if_exists='overwrite')`` records before swapping the result in."""
REPLACED_DIR = '.rlds_lite_replaced'
"""Where the swap moves the old recording before deleting it."""
_COMPLETE = 'COMPLETE.json'
_METADATA_FILE = 'metadata.riegeli'
_OFFSETS_FILE = 'step_offsets.riegeli'
_SHARD_FILES = ('steps.riegeli', _OFFSETS_FILE, 'episode_metadata.riegeli',
                'episode_index.riegeli')


class RecordingLockedError(RuntimeError):
  """Another recorder is writing into the directory; the message names it."""


@contextlib.contextmanager
def recorder_lock(data_dir: PathLike) -> Iterator[None]:
  """Holds the exclusive recorder lock of ``data_dir`` (which must exist).

  Raises:
    RecordingLockedError: another process (or another open of the lock in
      this one) holds it; the message names the holder's pid if known.

  Example:
    >>> import tempfile
    >>> data_dir = tempfile.mkdtemp()
    >>> with recorder_lock(data_dir):
    ...   overwrite_in_progress(data_dir)
    False
  """
  path = os.path.join(os.fspath(data_dir), LOCK_FILE)
  fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
  try:
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      holder = os.pread(fd, 64, 0).decode('ascii', 'replace').strip()
      raise RecordingLockedError(
          f'Another recorder (pid {holder or "unknown"}) is recording into '
          f'{os.fspath(data_dir)} (it holds {path}); wait for it to finish '
          'or record into another directory.') from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode('ascii'), 0)
    yield
  finally:
    os.close(fd)  # Releases the lock.


def _fsync_dir(path: str) -> None:
  fd = os.open(path, os.O_RDONLY)
  try:
    os.fsync(fd)
  finally:
    os.close(fd)


def _writer_folders(path: str) -> List[str]:
  """Names of the sub-folders of ``path`` that are writer folders."""
  if not os.path.isdir(path):
    return []
  return sorted(
      name for name in os.listdir(path)
      if not name.startswith('.') and os.path.isdir(os.path.join(path, name))
      and any(os.path.exists(os.path.join(path, name, f))
              for f in _SHARD_FILES))


def staging_dir(data_dir: PathLike) -> str:
  """The staging folder of ``record(if_exists='overwrite')`` in ``data_dir``."""
  return os.path.join(os.fspath(data_dir), STAGING_DIR)


def overwrite_in_progress(data_dir: PathLike) -> bool:
  """Whether a complete overwrite waits to be swapped in (see the module)."""
  return os.path.exists(os.path.join(staging_dir(data_dir), _COMPLETE))


def mark_complete(data_dir: PathLike) -> None:
  """Marks the staged recording complete: from now on it is swapped in."""
  staged = staging_dir(data_dir)
  folders = _writer_folders(staged)
  for name in folders:
    for f in _SHARD_FILES:
      path = os.path.join(staged, name, f)
      if os.path.exists(path):
        fd = os.open(path, os.O_RDONLY)
        try:
          os.fsync(fd)
        finally:
          os.close(fd)
  temporary = os.path.join(staged, _COMPLETE + '.tmp')
  with open(temporary, 'w') as f:
    json.dump({'folders': folders}, f)
    f.flush()
    os.fsync(f.fileno())
  os.replace(temporary, os.path.join(staged, _COMPLETE))
  _fsync_dir(staged)


def _swap(data_dir: str) -> None:
  """Swaps the complete staged recording in; resumes an interrupted swap."""
  staged = staging_dir(data_dir)
  with open(os.path.join(staged, _COMPLETE)) as f:
    new_folders = set(json.load(f)['folders'])
  replaced = os.path.join(data_dir, REPLACED_DIR)
  os.makedirs(replaced, exist_ok=True)
  root_metadata = os.path.join(data_dir, _METADATA_FILE)
  staged_metadata = os.path.join(staged, _METADATA_FILE)
  if os.path.exists(staged_metadata) and os.path.exists(root_metadata):
    # From here until the new metadata is in place, no reader reads a mix.
    os.replace(root_metadata, os.path.join(replaced, _METADATA_FILE))
  for name in _writer_folders(data_dir):
    if name not in new_folders:
      os.replace(os.path.join(data_dir, name), os.path.join(replaced, name))
  for name in _writer_folders(staged):
    os.replace(os.path.join(staged, name), os.path.join(data_dir, name))
  if os.path.exists(staged_metadata):
    os.replace(staged_metadata, root_metadata)
  _fsync_dir(data_dir)
  shutil.rmtree(replaced)
  shutil.rmtree(staged)


def finish_overwrite(data_dir: PathLike) -> bool:
  """Completes a ``record(if_exists='overwrite')`` that was killed while swapping.

  Under the recorder lock, a complete staged recording is swapped in; an
  incomplete one is deleted, leaving the old recording.

  Args:
    data_dir: the recording directory.

  Returns:
    Whether a staged recording was swapped in.

  Example:
    >>> import tempfile
    >>> finish_overwrite(tempfile.mkdtemp())
    False
  """
  data_dir = os.fspath(data_dir)
  with recorder_lock(data_dir):
    return clean_up(data_dir)


def clean_up(data_dir: str) -> bool:
  """`finish_overwrite` for a caller already holding the recorder lock."""
  swapped = False
  if overwrite_in_progress(data_dir):
    _swap(data_dir)
    swapped = True
  for name in (STAGING_DIR, REPLACED_DIR):
    path = os.path.join(data_dir, name)
    if os.path.exists(path):
      shutil.rmtree(path)
  return swapped
