"""One recorder at a time, and `record(if_exists='overwrite')` never losing both.

`recorder_lock` holds an exclusive ``flock`` on ``data_dir/.rlds_lite.lock``
while `record` writes, so a second recorder into the same directory (another
process or thread) fails at once with `RecordingLockedError` instead of
mixing its episodes in. The lock file stays (removing it would let two
recorders lock two different files); the kernel releases the lock when its
holder exits, killed or not.

Overwriting records the new recording into the hidden folder
``data_dir/.rlds_lite_overwrite`` (which no reader looks into, EnvLogger's
included), marks it complete once EnvLogger closed it, and only then swaps
it in: the old ``metadata.riegeli`` first (so that no reader can take the
folders of two recordings for one), the old writer folders into
``data_dir/.rlds_lite_replaced``, the new folders out of the staging folder,
the new ``metadata.riegeli`` last; then the old files are deleted. Each step
is a ``rename`` within ``data_dir``. Killed before the mark, the old
recording is untouched (the next `record` deletes the staged one); killed
during the swap (a few renames), no reader reads a mix, the error names
`finish_overwrite`, which (as the next `record` into the directory) completes
the swap from where it stopped.

Example:
  >>> import tempfile
  >>> data_dir = tempfile.mkdtemp()
  >>> with recorder_lock(data_dir):
  ...   overwrite_in_progress(data_dir)
  False
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

  Takes the recorder lock. A staged recording that was complete is swapped
  in (resuming where the swap stopped); one that was not (the overwrite was
  killed while recording) is deleted, leaving the old recording as it was;
  what remains of a replaced recording is deleted.

  Args:
    data_dir: the recording directory.

  Returns:
    Whether a staged recording was swapped in.

  Raises:
    RecordingLockedError: a recorder is writing into ``data_dir``.

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
