"""The layout of an EnvLogger recording, checked before anything reads it.

A recording (EnvLogger's riegeli backend) is a directory with
`metadata.riegeli` (dataset metadata and the environment specs) and one
timestamped folder per writer holding `steps.riegeli`, `step_offsets.riegeli`,
`episode_metadata.riegeli` and `episode_index.riegeli`. `validate_recording`
checks the files (names, riegeli signatures, truncated chunks) and names the
damaged one.
"""

import contextlib
import logging
import os
import tempfile
import types
from typing import Any, List, Optional, Tuple

from rlds_lite.envlogger.compat import CorruptRecordingError
from rlds_lite.envlogger.compat import PathLike

METADATA_FILE = 'metadata.riegeli'
"""The dataset-level file at the root of a recording."""
SHARD_FILES = ('steps.riegeli', 'step_offsets.riegeli',
               'episode_metadata.riegeli', 'episode_index.riegeli')
"""The files of each writer's (timestamped) folder in a recording."""

# Every riegeli file starts with this 64-byte file signature.
_RIEGELI_SIGNATURE = bytes.fromhex(
    '83af70d10d884a3f00000000000000004000000000000000'
    '91bac23c9287e1a90000000000000000e19f13c0e9b1c372'
    '73000000000000000000000000000000')


def shard_dirs(data_dir: str) -> List[str]:
  """Sub-folders holding at least one shard file, in chronological order."""
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


# Riegeli layout constants (github.com/google/riegeli, riegeli_records_file_format.md).
_BLOCK_SIZE = 1 << 16
_BLOCK_HEADER_SIZE = 24
_USABLE_BLOCK_SIZE = _BLOCK_SIZE - _BLOCK_HEADER_SIZE
_CHUNK_HEADER_SIZE = 40
_CHUNK_TYPES = frozenset(b'smprt')  # signature, metadata, padding, records.


def _chunk_end(chunk_begin: int, data_size: int, num_records: int) -> int:
  """End of a riegeli chunk, counting the block headers that interrupt it."""
  size = _CHUNK_HEADER_SIZE + data_size
  overhead = (size + (chunk_begin + _USABLE_BLOCK_SIZE - 1) % _BLOCK_SIZE
             ) // _USABLE_BLOCK_SIZE
  end = chunk_begin + size + overhead * _BLOCK_HEADER_SIZE
  records_end = chunk_begin + num_records
  remaining = _BLOCK_SIZE - 1 - (records_end + _BLOCK_SIZE - 1) % _BLOCK_SIZE
  return max(end, records_end + max(remaining - (_USABLE_BLOCK_SIZE - 1), 0))


def _read_skipping_block_headers(f: Any, pos: int, n: int) -> Optional[bytes]:
  """`n` chunk bytes from file position `pos`; None if the file ends first."""
  out = b''
  while len(out) < n:
    if pos % _BLOCK_SIZE == 0:
      pos += _BLOCK_HEADER_SIZE
    take = min(n - len(out), _BLOCK_SIZE - pos % _BLOCK_SIZE)
    f.seek(pos)
    data = f.read(take)
    if len(data) < take:
      return None
    out += data
    pos += take
  return out


def _riegeli_damage(path: str) -> Optional[str]:
  """Why `path` is not a complete riegeli file, or None if it looks whole.

  Walks the chunk headers (no hashes: damage inside chunk data is found by
  EnvLogger's reader): the file must start with the signature and its last
  chunk must end exactly at the end of the file.
  """
  size = os.path.getsize(path)
  if size == 0:
    return ('is empty (the writer was killed before EnvLogger.close(), or '
            'the copy is incomplete)')
  with open(path, 'rb') as f:
    if f.read(len(_RIEGELI_SIGNATURE)) != _RIEGELI_SIGNATURE:
      return ('is corrupt: it does not start with the riegeli file '
              'signature (truncated or overwritten)')
    pos = len(_RIEGELI_SIGNATURE)
    while pos < size:
      header = _read_skipping_block_headers(f, pos, _CHUNK_HEADER_SIZE)
      if header is None:
        return f'is truncated: it ends inside the chunk header at byte {pos}'
      if header[24] not in _CHUNK_TYPES:
        return f'is corrupt: the chunk at byte {pos} has an unknown type'
      end = _chunk_end(pos, int.from_bytes(header[8:16], 'little'),
                       int.from_bytes(header[25:32], 'little'))
      if end > size:
        return (f'is truncated: the chunk at byte {pos} ends at byte {end} '
                f'but the file has {size} bytes')
      pos = end
  return None


def _check_riegeli_file(path: str, needs_records: bool = False) -> None:
  """Raises if `path` is missing, or is not a complete riegeli file."""
  if not os.path.isfile(path):
    raise FileNotFoundError(
        f'EnvLogger file {path} is missing: the recording is incomplete.')
  damage = _riegeli_damage(path)
  if damage is None and needs_records and (
      os.path.getsize(path) <= len(_RIEGELI_SIGNATURE)):
    damage = 'holds no records'
  if damage is not None:
    raise CorruptRecordingError(f'EnvLogger file {path} {damage}.')


def validate_recording(data_dir: PathLike) -> Tuple[str, ...]:
  """Checks the files of an EnvLogger recording; returns its writer folders.

  Checks that `data_dir` exists, has `metadata.riegeli` and at least one
  writer folder, that every writer folder has all of `SHARD_FILES`, and that
  every file is a whole riegeli file: it starts with the riegeli signature and
  its chunks end exactly at the end of the file (this finds empty, truncated
  and overwritten files, naming them). Folders with none of the shard files
  are ignored. Damage inside chunk data is found when reading
  (`read_episodes`).

  Args:
    data_dir: The recording directory.

  Returns:
    The writer folders' paths, oldest first.

  Raises:
    FileNotFoundError: `data_dir`, `metadata.riegeli`, every writer folder,
      or one shard file is missing (the message names it).
    NotADirectoryError: `data_dir` is a file.
    CorruptRecordingError: A file is empty, truncated or not a riegeli file.

  Example:
    >>> import tempfile
    >>> validate_recording(tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    FileNotFoundError: ... is empty: no EnvLogger recording ...
  """
  data_dir = os.fspath(data_dir)
  if not os.path.exists(data_dir):
    raise FileNotFoundError(f'EnvLogger directory {data_dir} does not exist.')
  if not os.path.isdir(data_dir):
    raise NotADirectoryError(
        f'EnvLogger directory {data_dir} is a file, not a directory.')
  if not os.listdir(data_dir):
    raise FileNotFoundError(
        f'{data_dir} is empty: no EnvLogger recording (expected '
        f'{METADATA_FILE} and one folder per writer).')
  _check_riegeli_file(os.path.join(data_dir, METADATA_FILE), needs_records=True)
  shards = shard_dirs(data_dir)
  if not shards:
    raise FileNotFoundError(
        f'EnvLogger recording {data_dir} holds no episodes: it has '
        f'{METADATA_FILE} but no writer folder with {", ".join(SHARD_FILES)}.')
  for shard in shards:
    for name in SHARD_FILES:
      # A writer without episode metadata leaves that file with no records.
      _check_riegeli_file(os.path.join(shard, name),
                          needs_records=name != SHARD_FILES[2])
  return tuple(shards)


class _EmptyStepsFilter(logging.Filter):
  """Catches EnvLogger's "empty step offset file" log, which it then ignores.

  EnvLogger's reader logs a misleading "you likely forgot to call close()"
  traceback and carries on when `step_offsets.riegeli` cannot be read; this
  filter hides that log and remembers it so that a clear error is raised.
  """

  def __init__(self):
    super().__init__()
    self.seen = False

  def filter(self, record: logging.LogRecord) -> bool:
    if 'empty step offset file' in str(record.msg):
      self.seen = True
      return False
    return True


def _backend_reader(data_dir: str, shard: Optional[str]) -> Any:
  """EnvLogger's riegeli reader over `metadata.riegeli` and one folder.

  EnvLogger's reader takes a whole recording; a temporary directory of
  symbolic links (the root metadata plus at most one writer folder) lets each
  folder be read, and its errors be reported, on its own. The links are
  removed once the native reader has opened the files.
  """
  from envlogger.backends import riegeli_backend_reader  # pylint: disable=g-import-not-at-top
  absl_logger = logging.getLogger('absl')
  empty_steps = _EmptyStepsFilter()
  with tempfile.TemporaryDirectory(prefix='rlds_lite_envlogger_') as view:
    os.symlink(os.path.abspath(os.path.join(data_dir, METADATA_FILE)),
               os.path.join(view, METADATA_FILE))
    if shard is not None:
      os.symlink(os.path.abspath(shard),
                 os.path.join(view, os.path.basename(shard)))
    absl_logger.addFilter(empty_steps)
    try:
      backend = riegeli_backend_reader.RiegeliBackendReader(view)
    except (RuntimeError, ValueError, TypeError) as e:
      e.args = tuple(str(a).replace(view, data_dir) for a in e.args)
      raise
    finally:
      absl_logger.removeFilter(empty_steps)
  if empty_steps.seen and shard is not None:
    backend.close()
    raise CorruptRecordingError(
        f'EnvLogger file {os.path.join(shard, SHARD_FILES[1])} is corrupt: '
        'EnvLogger cannot read its step offsets.')
  return backend


@contextlib.contextmanager
def open_shard(envlogger: types.ModuleType, data_dir: str, shard: str):
  """An `envlogger.Reader` over one writer folder of a recording."""
  try:
    backend = _backend_reader(data_dir, shard)
  except CorruptRecordingError:
    raise
  except (RuntimeError, ValueError, TypeError) as e:
    culprit = shard
    try:
      _backend_reader(data_dir, None).close()
    except (RuntimeError, ValueError, TypeError):
      culprit = os.path.join(data_dir, METADATA_FILE)
    raise CorruptRecordingError(
        f'Cannot read EnvLogger data {culprit}: {e}') from e
  reader = envlogger.Reader(backend=backend)
  try:
    yield reader
  finally:
    reader.close()
