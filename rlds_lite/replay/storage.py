"""Where a buffer's steps live: `MemoryStorage` (this process) or `MemmapStorage` (files, shared by processes)."""

import contextlib
import fcntl
import json
import os
import shutil
import threading
from typing import Dict, Iterator, Optional

import numpy as np

from rlds_lite import byte_sizes
from rlds_lite.replay import spec as spec_lib

__all__ = ['MemoryStorage', 'MemmapStorage', 'Storage', 'INSERTED', 'RESERVED',
           'NEXT_EPISODE', 'SAMPLED']

# The header: counters every process sharing a storage reads and writes under its lock.
INSERTED, RESERVED, NEXT_EPISODE, SAMPLED = 0, 1, 2, 3
_HEADER_SIZE = 8
_LAYOUT = 1


class Storage:
  """``capacity`` slots of steps: one array per field, each slot's episode id and step index.

  A slot is readable once ``header[INSERTED]`` passes it; slots in
  ``[INSERTED, RESERVED)`` (ring positions) are being written and never read.
  """

  def __init__(self, capacity: int, spec: Optional[spec_lib.Spec] = None):
    if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 1:
      raise ValueError(f'{type(self).__name__}: capacity must be a positive int, '
                       f'got {capacity!r}.')
    self.capacity = int(capacity)
    self.spec: Optional[spec_lib.Spec] = None
    self.columns: Dict[str, np.ndarray] = {}
    self.episode_ids = np.zeros([0], np.int64)
    self.step_ids = np.zeros([0], np.int32)
    self.header = np.zeros([_HEADER_SIZE], np.int64)
    self._thread_lock = threading.RLock()
    if spec is not None:
      self.allocate(dict(spec))

  @property
  def size(self) -> int:
    """Readable slots: the published ones, less those a killed writer left torn past the cursor."""
    inserted, reserved = int(self.header[INSERTED]), int(self.header[RESERVED])
    return inserted - max(0, reserved - self.capacity)

  def readable(self) -> np.ndarray:
    """The readable slots, oldest first."""
    inserted, reserved = int(self.header[INSERTED]), int(self.header[RESERVED])
    return np.arange(max(0, reserved - self.capacity), inserted) % self.capacity

  def allocate(self, spec: spec_lib.Spec) -> None:
    raise NotImplementedError

  @contextlib.contextmanager
  def lock(self) -> Iterator[None]:
    with self._thread_lock:
      yield

  def bytes_per_step(self) -> int:
    """Bytes a slot takes (strings: the pointer only)."""
    assert self.spec is not None
    return sum(int(np.prod(f.shape, dtype=np.int64)) * np.dtype(f.dtype).itemsize
               for f in self.spec.values()) + 12

  def nbytes(self) -> int:
    """Bytes of every column and the slots' ids."""
    return sum(c.nbytes for c in self.columns.values()) + (
        self.episode_ids.nbytes + self.step_ids.nbytes)

  def describe(self) -> str:
    held = 'empty' if self.spec is None else (
        f'{len(self.spec)} fields, {byte_sizes.format_bytes(self.nbytes())}')
    return f'{type(self).__name__}(capacity={self.capacity}, {held})'

  __repr__ = describe


class MemoryStorage(Storage):
  """Slots in this process's memory, allocated from ``spec`` or the first item.

  Example:
    >>> storage = MemoryStorage(4, spec={'reward': spec_lib.Field((), 'float32')})
    >>> storage
    MemoryStorage(capacity=4, 1 fields, 64 B)
  """

  def allocate(self, spec: spec_lib.Spec) -> None:
    self.spec = dict(spec)
    self.columns = {path: np.zeros((self.capacity,) + f.shape, f.dtype)
                    for path, f in self.spec.items()}
    for path, f in self.spec.items():
      if f.dtype == 'object':
        self.columns[path][...] = b''
    self.episode_ids = np.full([self.capacity], -1, np.int64)
    self.step_ids = np.zeros([self.capacity], np.int32)


def _check_disk(path: str, needed: int) -> None:
  free = shutil.disk_usage(path).free
  if needed > free:
    raise OSError(
        f'{path}: a memory-mapped buffer of this capacity needs '
        f'{byte_sizes.format_bytes(needed)} on disk, but only '
        f'{byte_sizes.format_bytes(free)} is free; lower the capacity or use '
        'another disk.')


class MemmapStorage(Storage):
  """Slots in memory-mapped files under ``path``: larger than RAM, reopened after a restart, shared by processes.

  ``MemmapStorage(path)`` reopens a storage made before; strings need a fixed
  width (``Field(shape, 'S64')``). Several processes open the same ``path``;
  `lock` is an ``flock`` that the kernel releases when a holder dies.

  Example:
    >>> import tempfile
    >>> path = tempfile.mkdtemp() + '/buffer'
    >>> _ = MemmapStorage(path, 8, spec={'reward': spec_lib.Field((), 'float32')})
    >>> MemmapStorage(path).capacity   # reopened
    8
  """

  def __init__(self, path: str, capacity: Optional[int] = None,
               spec: Optional[spec_lib.Spec] = None):
    self.path = os.fspath(path)
    os.makedirs(self.path, exist_ok=True)
    self._open_lock_file()
    # Under the lock: processes opening one path at once make its files once
    # (a second 'w+' would truncate files the first has mapped).
    fcntl.flock(self._lock_file, fcntl.LOCK_EX)
    try:
      self._open_or_make(capacity, spec)
    finally:
      fcntl.flock(self._lock_file, fcntl.LOCK_UN)

  def _open_or_make(self, capacity: Optional[int], spec: Optional[spec_lib.Spec]) -> None:
    layout = os.path.join(self.path, 'layout.json')
    stored = None
    if os.path.exists(layout):
      with open(layout) as f:
        stored = json.load(f)
      if capacity is not None and capacity != stored['capacity']:
        raise ValueError(
            f'{self.path} holds a buffer of capacity {stored["capacity"]}, not '
            f'{capacity}; give no capacity to reopen it, or another path.')
      capacity = stored['capacity']
    elif capacity is None:
      raise FileNotFoundError(
          f'{self.path} holds no memory-mapped buffer (no layout.json); give a '
          'capacity to make one.')
    super().__init__(capacity)
    header = os.path.join(self.path, 'header.npy')
    self.header = self._open('header', (_HEADER_SIZE,), np.int64,
                             create=not os.path.exists(header))
    if stored is not None and stored['spec'] is not None:
      stored_spec = spec_lib.from_json(stored['spec'])
      if spec is not None and dict(spec) != stored_spec:
        raise ValueError(
            f'{self.path} holds a buffer of spec {stored["spec"]}, not '
            f'{spec_lib.to_json(spec)}.')
      self._map(stored_spec, create=False)
    elif spec is not None:
      self.allocate(dict(spec))
    elif stored is None:
      self._write_layout()   # Reopened by path before its first step allocates it.

  def _open(self, name, shape, dtype, create):
    file = os.path.join(self.path, name + '.npy')
    if create:
      return np.lib.format.open_memmap(file, 'w+', dtype, shape)
    array = np.lib.format.open_memmap(file, 'r+')
    if array.shape != tuple(shape) or array.dtype != np.dtype(dtype):
      raise ValueError(f'{file} holds {array.dtype}{list(array.shape)}, not '
                       f'{np.dtype(dtype)}{list(shape)}: the buffer was changed.')
    return array

  def _map(self, spec: spec_lib.Spec, create: bool) -> None:
    self.spec = dict(spec)
    cap = self.capacity
    self.columns = {path: self._open(f'column-{i}', (cap,) + f.shape, f.dtype, create)
                    for i, (path, f) in enumerate(sorted(self.spec.items()))}
    self.episode_ids = self._open('episode_ids', (cap,), np.int64, create)
    self.step_ids = self._open('step_ids', (cap,), np.int32, create)
    if create:
      self.episode_ids[:] = -1

  def allocate(self, spec: spec_lib.Spec) -> None:
    for path, f in spec.items():
      if f.dtype == 'object':
        raise ValueError(
            f'MemmapStorage cannot hold the string field {path!r} of variable '
            f"length: give it a fixed width in the spec, e.g. Field({f.shape}, 'S64').")
    self.spec = dict(spec)
    _check_disk(self.path, self.capacity * self.bytes_per_step())
    self._map(self.spec, create=True)
    self._write_layout()

  def _write_layout(self) -> None:
    with open(os.path.join(self.path, '.layout.json.tmp'), 'w') as f:
      json.dump({'layout': _LAYOUT, 'capacity': self.capacity,
                 'spec': None if self.spec is None else spec_lib.to_json(self.spec)}, f)
    os.replace(os.path.join(self.path, '.layout.json.tmp'),
               os.path.join(self.path, 'layout.json'))

  def _open_lock_file(self) -> None:
    # An flock belongs to an open file: a forked child opens its own, else it
    # would share its parent's lock instead of waiting for it.
    self._lock_file = open(os.path.join(self.path, 'lock'), 'a+')
    self._lock_pid = os.getpid()

  @contextlib.contextmanager
  def lock(self) -> Iterator[None]:
    if self._lock_pid != os.getpid():
      self._open_lock_file()
      self._thread_lock = threading.RLock()   # Another thread may have held it at the fork.
    with self._thread_lock:
      fcntl.flock(self._lock_file, fcntl.LOCK_EX)
      try:
        if self.spec is None:
          self._reload()
        yield
      finally:
        fcntl.flock(self._lock_file, fcntl.LOCK_UN)

  def _reload(self) -> None:
    """Maps the columns another process allocated since this one opened the path."""
    layout = os.path.join(self.path, 'layout.json')
    if os.path.exists(layout):
      with open(layout) as f:
        stored = json.load(f)['spec']
      if stored is not None:
        self._map(spec_lib.from_json(stored), create=False)

  def flush(self) -> None:
    """Writes the mapped pages to the files (a restart after a power loss keeps them)."""
    for array in list(self.columns.values()) + [self.episode_ids, self.step_ids, self.header]:
      array.flush()
