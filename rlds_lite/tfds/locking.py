"""An OS-level lock (``flock`` on ``data_dir/name/.<version>.lock``) serialising a dataset's writers.

What it guarantees: ``docs/guarantees.md``, "Serialised writers".
"""

import errno
import fcntl
import os
import socket
import threading
import time
from typing import Dict, Optional, Union

__all__ = ['DatasetLock', 'DatasetLockedError', 'lock_path']

PathLike = Union[str, os.PathLike]
_POLL_SECONDS = 0.05
_MAX_POLL_SECONDS = 0.5

# Lock files held by this process (by real path): a second holder fails.
_HELD: Dict[str, 'DatasetLock'] = {}
_HELD_GUARD = threading.Lock()


class DatasetLockedError(TimeoutError):
  """Another writer holds the dataset's lock (and the timeout ran out).

  Example (the lock file held as another process's writer would hold it):
    >>> import fcntl, tempfile
    >>> dataset_dir = tempfile.mkdtemp() + '/toy/1.0.0'
    >>> lock = DatasetLock(dataset_dir).acquire()
    >>> lock.release()
    >>> other = open(lock.path, 'w')
    >>> _ = other.write('pid 4242 on host robot-1'); other.flush()
    >>> fcntl.flock(other, fcntl.LOCK_EX)
    >>> try:
    ...   DatasetLock(dataset_dir, timeout=0.1).acquire()
    ... except TimeoutError as error:
    ...   print(type(error).__name__, str(error).split(';')[0])
    DatasetLockedError dataset '.../toy/1.0.0' is being written by another writer (pid 4242 on host robot-1
    >>> other.close()
  """


def is_local(path: PathLike) -> bool:
  """Whether ``path`` is on the local file system (not a ``scheme://`` URL).

  Example:
    >>> is_local('/data/toy'), is_local('gs://bucket/toy')
    (True, False)
  """
  return '://' not in os.fspath(path)


def lock_path(dataset_dir: PathLike) -> str:
  """The lock file of a dataset directory: ``parent/.<basename>.lock``.

  Example:
    >>> lock_path('/data/toy/1.0.0')
    '/data/toy/.1.0.0.lock'
  """
  dataset_dir = os.path.normpath(os.fspath(dataset_dir))
  return os.path.join(os.path.dirname(dataset_dir),
                      f'.{os.path.basename(dataset_dir)}.lock')


def _holder(fd: int) -> str:
  """What the lock file says about its holder ('pid 12 on host h since ...')."""
  try:
    text = os.pread(fd, 512, 0).decode('utf-8', 'replace').strip()
  except OSError:
    text = ''
  return text or 'a writer that has not written its pid yet'


class DatasetLock:
  """The exclusive lock of one dataset directory.

    Args:
      dataset_dir: ``data_dir/name/version`` (it need not exist).
      timeout: seconds to wait (None: as long as it takes; 0: fail at once).
      label: how errors name the dataset.
      remove_file: delete the lock file on release (for other outputs).

    Example:
      >>> import os, tempfile
      >>> dataset_dir = tempfile.mkdtemp() + '/toy/1.0.0'
      >>> with DatasetLock(dataset_dir, timeout=0) as lock:
      ...   print(lock.held)
      True
      >>> lock  # doctest: +ELLIPSIS
      DatasetLock('.../toy/.1.0.0.lock', not held)
  """

  def __init__(self, dataset_dir: PathLike, *,
               timeout: Optional[float] = None,
               label: Optional[str] = None,
               remove_file: bool = False):
    if timeout is not None and timeout < 0:
      raise ValueError(f'lock timeout must be None or >= 0, got {timeout!r}.')
    self._dataset_dir = os.fspath(dataset_dir)
    self._path = lock_path(self._dataset_dir)
    self._timeout = timeout
    self._label = label or f'dataset {self._dataset_dir!r}'
    self._remove_file = remove_file
    self._fd: Optional[int] = None
    self._key: Optional[str] = None

  @property
  def path(self) -> str:
    """The lock file."""
    return self._path

  @property
  def held(self) -> bool:
    """Whether this object holds the lock."""
    return self._fd is not None

  def acquire(self) -> 'DatasetLock':
    """Takes the lock, waiting up to the timeout; returns self."""
    if self._fd is not None or not is_local(self._path):
      return self
    os.makedirs(os.path.dirname(self._path), exist_ok=True)
    start = time.monotonic()
    while True:
      fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
      try:
        key = os.path.realpath(self._path)
        with _HELD_GUARD:
          if key in _HELD:
            raise DatasetLockedError(
                f'{self._label} is already being written in this process '
                f'(pid {os.getpid()}); close() or abort() the other writer '
                'first (one writer per dataset at a time).')
          _HELD[key] = self
        try:
          self._wait(fd, start)
          current = self._still_at_path(fd)
        except BaseException:
          with _HELD_GUARD:
            _HELD.pop(key, None)
          raise
      except BaseException:
        os.close(fd)
        raise
      if current:
        break
      with _HELD_GUARD:  # Its holder deleted it: lock the new file.
        _HELD.pop(key, None)
      os.close(fd)
    self._fd, self._key = fd, key
    try:  # Only a note for the next writer's message: a full disk is fine.
      os.ftruncate(fd, 0)
      os.pwrite(fd, (f'pid {os.getpid()} on host {socket.gethostname()} '
                     f'since {time.strftime("%Y-%m-%d %H:%M:%S")}\n').encode(),
                0)
    except OSError:
      pass
    return self

  def _still_at_path(self, fd: int) -> bool:
    """Whether the locked file is still the one at the path (not deleted)."""
    try:
      on_path = os.stat(self._path)
    except FileNotFoundError:
      return False
    locked = os.fstat(fd)
    return (locked.st_ino, locked.st_dev) == (on_path.st_ino, on_path.st_dev)

  def _wait(self, fd: int, start: float) -> None:
    """Polls ``flock(LOCK_EX | LOCK_NB)`` until it succeeds or time runs out."""
    pause = _POLL_SECONDS
    while True:
      try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
      except OSError as e:
        if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
          raise
      waited = time.monotonic() - start
      if self._timeout is not None and waited >= self._timeout:
        raise DatasetLockedError(
            f'{self._label} is being written by another writer '
            f'({_holder(fd)}; lock file {self._path}); gave up after '
            f'waiting {self._timeout:g} s (lock_timeout). Retry when it is '
            'done, or pass lock_timeout=None to wait for it.')
      left = (float('inf') if self._timeout is None
              else self._timeout - waited)
      time.sleep(max(0.0, min(pause, left)))
      pause = min(pause * 1.5, _MAX_POLL_SECONDS)

  def release(self) -> None:
    """Releases the lock (the lock file stays, unless ``remove_file``)."""
    if self._fd is None:
      return
    fd, self._fd = self._fd, None
    with _HELD_GUARD:
      _HELD.pop(self._key, None)
    try:
      if self._remove_file:  # Last, while still held (module docstring).
        try:
          os.remove(self._path)
        except FileNotFoundError:
          pass
      fcntl.flock(fd, fcntl.LOCK_UN)  # Also for copies of fd in forked children.
    finally:
      os.close(fd)

  def __enter__(self) -> 'DatasetLock':
    return self.acquire()

  def __exit__(self, *unused_exc) -> None:
    self.release()

  def __repr__(self) -> str:
    state = 'held' if self.held else 'not held'
    return f'DatasetLock({self._path!r}, {state})'
