"""An HDF5 file to write that fails cleanly when the disk does (`HDF5Output`).

Why: docs/guarantees.md ("HDF5 writers on a full disk").
"""

import errno
import io
import os
from typing import Any, Optional, Union


class _DroppingAfterFailure(io.RawIOBase):
  """A file HDF5 writes through; after a failed write, writes are dropped.

  The first ``OSError`` of a write or truncate is kept in ``failure``;
  later writes only move the position, so HDF5 can finish and close.
  """

  def __init__(self, path: str):
    super().__init__()
    self._file = io.FileIO(path, 'w+')
    self.failure: Optional[OSError] = None

  def readable(self) -> bool:
    return True

  def writable(self) -> bool:
    return True

  def seekable(self) -> bool:
    return True

  def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
    return self._file.seek(offset, whence)

  def tell(self) -> int:
    return self._file.tell()

  def readinto(self, buffer: Any) -> int:
    return self._file.readinto(buffer)

  def write(self, data: Any) -> int:
    view = memoryview(data).cast('B')
    size = done = len(view)
    if self.failure is None:
      done = 0
      try:
        while done < size:  # A short write (the disk filling): write the
          written = self._file.write(view[done:])  # rest, to get its error.
          if not written:
            raise OSError(errno.EIO, 'a write wrote nothing', self._file.name)
          done += written
      except OSError as error:
        self.failure = error
    self._file.seek(size - done, os.SEEK_CUR)
    return size

  def truncate(self, size: Optional[int] = None) -> int:
    if self.failure is None:
      try:
        return self._file.truncate(size)
      except OSError as error:
        self.failure = error
    return self.tell() if size is None else size

  def flush(self) -> None:
    if self.failure is None:
      self._file.flush()

  def close(self) -> None:
    try:
      super().close()  # Flushes.
    finally:
      self._file.close()


class HDF5Output:
  """``h5py.File(path, 'w')`` that closes cleanly on a failed write and raises one ``OSError``.

  A context manager: ``file`` is the ``h5py.File``; call `check` after each
  episode to stop at a failure.

  Args:
    path: the file to write.
    label: how errors name the file (default ``path``).

  Example:
    >>> import os, tempfile, numpy as np
    >>> staging = os.path.join(tempfile.mkdtemp(), '.out.h5.staging')
    >>> with HDF5Output(staging, label='out.h5') as output:
    ...   _ = output.file.create_dataset('x', data=np.arange(3))
    ...   output.check()   # no failed write so far
    >>> output.label
    'out.h5'
  """

  def __init__(self, path: Union[str, os.PathLike],
               label: Optional[Union[str, os.PathLike]] = None):
    self.path = os.fspath(path)
    self.label = os.fspath(label) if label is not None else self.path
    self._sink: Optional[_DroppingAfterFailure] = None
    self.file: Any = None

  def __enter__(self) -> 'HDF5Output':
    import h5py  # pylint: disable=g-import-not-at-top
    self._sink = _DroppingAfterFailure(self.path)
    try:
      self.file = h5py.File(self._sink, 'w')
    except BaseException:
      self._sink.close()
      raise
    return self

  def _failure(self) -> Optional[OSError]:
    """The first failed write as an ``OSError`` naming ``label`` (or None)."""
    failure = self._sink.failure
    if failure is None:
      return None
    error = OSError(failure.errno, failure.strerror or str(failure),
                    self.label)
    error.__cause__ = failure
    return error

  def check(self) -> None:
    """Raises the first failed write (an ``OSError`` naming the file).

    Example:
      (see `HDF5Output`)
    """
    failure = self._failure()
    if failure is not None:
      raise failure

  def __exit__(self, kind: Optional[type], error: Optional[BaseException],
               traceback: Any) -> None:
    try:
      try:
        self.file.close()
      finally:
        self._sink.close()
    except Exception:  # pylint: disable=broad-except
      if self._sink.failure is None:
        raise   # HDF5's own error, with no failed write behind it.
    failure = self._failure()
    if failure is None or isinstance(error, KeyboardInterrupt):
      return
    if isinstance(error, OSError) and error.__cause__ is self._sink.failure:
      return   # `check` raised it already: it goes on its way.
    raise failure from error
