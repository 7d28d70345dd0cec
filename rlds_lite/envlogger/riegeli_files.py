"""The structure of a riegeli file: where its whole chunks end, checked (`scan`).

The format (signature, chunk and block headers, HighwayHash-64) is in
docs/recording.md and riegeli's ``doc/riegeli_records_file_format.md``.
"""

import mmap
import os
from typing import List, NamedTuple, Optional, Sequence

SIGNATURE = bytes.fromhex(
    '83af70d10d884a3f00000000000000004000000000000000'
    '91bac23c9287e1a90000000000000000e19f13c0e9b1c372'
    '73000000000000000000000000000000')
"""The first 64 bytes of every riegeli file (a block header and the
signature chunk)."""

_BLOCK_SIZE = 1 << 16
_BLOCK_HEADER_SIZE = 24
_USABLE_BLOCK_SIZE = _BLOCK_SIZE - _BLOCK_HEADER_SIZE
_CHUNK_HEADER_SIZE = 40
_CHUNK_TYPES = frozenset(b'smprt')  # signature, metadata, padding, records.

# HighwayHash-64 (github.com/google/highwayhash, the portable C version).
_MASK = (1 << 64) - 1
_RIEGELI_KEY = (0x2f696c6567656952, 0x0a7364726f636572,
                0x2f696c6567656952, 0x0a7364726f636572)
_INIT_MUL0 = (0xdbe6d5d5fe4cce2f, 0xa4093822299f31d0, 0x13198a2e03707344,
              0x243f6a8885a308d3)
_INIT_MUL1 = (0x3bd39e10cb0ef593, 0xc0acf169b5f18a8c, 0xbe5466cf34e90c6c,
              0x452821e638d01377)


def _swap_halves(x: int) -> int:
  return ((x >> 32) | (x << 32)) & _MASK


def _zipper_merge(v1: int, v0: int):
  add0 = ((((v0 & 0xff000000) | (v1 & 0xff00000000)) >> 24) |
          (((v0 & 0xff0000000000) | (v1 & 0xff000000000000)) >> 16) |
          (v0 & 0xff0000) | ((v0 & 0xff00) << 32) |
          ((v1 & 0xff00000000000000) >> 8) | (v0 << 56)) & _MASK
  add1 = ((((v1 & 0xff000000) | (v0 & 0xff00000000)) >> 24) |
          (v1 & 0xff0000) | ((v1 & 0xff0000000000) >> 16) |
          ((v1 & 0xff00) << 24) | ((v0 & 0xff000000000000) >> 8) |
          ((v1 & 0xff) << 48) | (v0 & 0xff00000000000000)) & _MASK
  return add1, add0


def _update(state: Sequence[List[int]], lanes: Sequence[int]) -> None:
  v0, v1, mul0, mul1 = state
  for i in range(4):
    v1[i] = (v1[i] + mul0[i] + lanes[i]) & _MASK
    mul0[i] ^= ((v1[i] & 0xffffffff) * (v0[i] >> 32)) & _MASK
    v0[i] = (v0[i] + mul1[i]) & _MASK
    mul1[i] ^= ((v0[i] & 0xffffffff) * (v1[i] >> 32)) & _MASK
  for target, source in ((v0, v1), (v1, v0)):
    for a, b in ((0, 1), (2, 3)):
      add1, add0 = _zipper_merge(source[b], source[a])
      target[b] = (target[b] + add1) & _MASK
      target[a] = (target[a] + add0) & _MASK


def _lanes(packet: bytes) -> List[int]:
  return [int.from_bytes(packet[8 * i:8 * i + 8], 'little') for i in range(4)]


def highway_hash(data: bytes, key: Sequence[int] = _RIEGELI_KEY) -> int:
  """HighwayHash-64 of ``data`` (riegeli's key by default), in pure Python.

  Example:
    >>> hex(highway_hash(SIGNATURE[32:64]))  # The signature header's hash.
    '0xa9e187923cc2ba91'
    >>> SIGNATURE[24:32] == highway_hash(SIGNATURE[32:64]).to_bytes(8, 'little')
    True
  """
  mul0, mul1 = list(_INIT_MUL0), list(_INIT_MUL1)
  v0 = [mul0[i] ^ key[i] for i in range(4)]
  v1 = [mul1[i] ^ _swap_halves(key[i]) for i in range(4)]
  state = (v0, v1, mul0, mul1)
  whole = len(data) // 32 * 32
  for start in range(0, whole, 32):
    _update(state, _lanes(data[start:start + 32]))
  size = len(data) - whole
  if size:
    remainder = data[whole:]
    for i in range(4):
      v0[i] = (v0[i] + ((size << 32) + size)) & _MASK
      low, high = v1[i] & 0xffffffff, v1[i] >> 32
      low = ((low << size) | (low >> (32 - size))) & 0xffffffff
      high = ((high << size) | (high >> (32 - size))) & 0xffffffff
      v1[i] = low | (high << 32)
    packet = bytearray(32)
    words = size & ~3
    packet[:words] = remainder[:words]
    size_mod4 = size & 3
    if size & 16:
      packet[28:32] = remainder[words + size_mod4 - 4:words + size_mod4]
    elif size_mod4:
      tail = remainder[words:]
      packet[16:19] = bytes((tail[0], tail[size_mod4 >> 1],
                             tail[size_mod4 - 1]))
    _update(state, _lanes(bytes(packet)))
  for _ in range(4):
    _update(state, [_swap_halves(v0[2]), _swap_halves(v0[3]),
                    _swap_halves(v0[0]), _swap_halves(v0[1])])
  return (v0[0] + v1[0] + mul0[0] + mul1[0]) & _MASK


class Extent(NamedTuple):
  """What `scan` found in a riegeli file.

  Attributes:
    size: the file's size in bytes.
    whole_end: where its last whole chunk ends (``size`` for a whole file).
    records: the records its whole chunks hold (None if only the tail was walked).
    problem: None for a whole file; else why bytes after ``whole_end`` were not counted.

  Example:
    >>> Extent(size=64, whole_end=64, records=0, problem=None).whole_end
    64
  """
  size: int
  whole_end: int
  records: Optional[int]
  problem: Optional[str]

  @property
  def ignored_bytes(self) -> int:
    """Bytes after the last whole chunk."""
    return self.size - self.whole_end


class DamagedFileError(ValueError):
  """A riegeli file damaged before its end; the message says how."""


def _chunk_end(chunk_begin: int, data_size: int, num_records: int) -> int:
  """End of a riegeli chunk, counting the block headers that interrupt it."""
  size = _CHUNK_HEADER_SIZE + data_size
  overhead = (size + (chunk_begin + _USABLE_BLOCK_SIZE - 1) % _BLOCK_SIZE
             ) // _USABLE_BLOCK_SIZE
  end = chunk_begin + size + overhead * _BLOCK_HEADER_SIZE
  records_end = chunk_begin + num_records
  remaining = _BLOCK_SIZE - 1 - (records_end + _BLOCK_SIZE - 1) % _BLOCK_SIZE
  return max(end, records_end + max(remaining - (_USABLE_BLOCK_SIZE - 1), 0))


def _read_chunk_bytes(buf, pos: int, n: int) -> Optional[bytes]:
  """``n`` chunk bytes of ``buf`` (a file's bytes) from ``pos``, skipping
  block headers; None if the file ends first."""
  out = b''
  while len(out) < n:
    if pos % _BLOCK_SIZE == 0:
      pos += _BLOCK_HEADER_SIZE
    take = min(n - len(out), _BLOCK_SIZE - pos % _BLOCK_SIZE)
    data = buf[pos:pos + take]
    if len(data) < take:
      return None
    out += data
    pos += take
  return out


def _last_block_chunk(buf, size: int) -> int:
  """Where the chunk holding the file's last whole block header begins.

  Riegeli puts a block header every 64 KiB, saying how far back the chunk it
  interrupts began; a walk can start there instead of at the first chunk.
  """
  block = (size - 1) // _BLOCK_SIZE * _BLOCK_SIZE
  while block > 0 and block + _BLOCK_HEADER_SIZE > size:
    block -= _BLOCK_SIZE
  if block <= 0:
    return len(SIGNATURE)
  header = buf[block:block + _BLOCK_HEADER_SIZE]
  if header[:8] != highway_hash(header[8:]).to_bytes(8, 'little'):
    raise DamagedFileError(
        f'is corrupt: the block header at byte {block} does not match its '
        'hash')
  return block - int.from_bytes(header[8:16], 'little')


_VERIFY_MAX_BYTES = 1 << 18


def _verify_chunk(buf, pos: int) -> None:
  """Raises unless the chunk at ``pos`` matches its header and data hashes.

  Data larger than 256 KiB is not hashed (pure Python: ~1 ms per KiB).
  """
  header = _read_chunk_bytes(buf, pos, _CHUNK_HEADER_SIZE)
  data_size = int.from_bytes(header[8:16], 'little')
  ok = header[:8] == highway_hash(header[8:]).to_bytes(8, 'little')
  if ok and data_size <= _VERIFY_MAX_BYTES:
    data = _read_chunk_bytes(buf, pos, _CHUNK_HEADER_SIZE + data_size)
    ok = header[16:24] == highway_hash(
        data[_CHUNK_HEADER_SIZE:]).to_bytes(8, 'little')
  if not ok:
    raise DamagedFileError(
        f'is corrupt: the chunk at byte {pos} does not match its hash')


def scan(path: str, verify_last: bool = False,
         tail_only: bool = False) -> Extent:
  """Walks the chunk headers of the riegeli file ``path``; returns an `Extent`.

  A file ending inside a chunk has a truncated tail (``problem``); a damaged
  header or signature is a `DamagedFileError`.

  Args:
    path: a riegeli file.
    tail_only: walk only the chunks from the last 64 KiB block on
      (``records`` is then None).
    verify_last: also check the hashes of the last whole chunk.

  Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), 'x.riegeli')
    >>> with open(path, 'wb') as f:
    ...   _ = f.write(SIGNATURE)
    >>> scan(path)
    Extent(size=64, whole_end=64, records=0, problem=None)
  """
  size = os.path.getsize(path)
  if size == 0:
    return Extent(0, 0, 0, None)
  with open(path, 'rb') as f, mmap.mmap(f.fileno(), 0,
                                        access=mmap.ACCESS_READ) as buf:
    head = buf[:len(SIGNATURE)]
    if head != SIGNATURE[:len(head)]:
      raise DamagedFileError(
          'is corrupt: it does not start with the riegeli file signature '
          '(truncated or overwritten)')
    if size < len(SIGNATURE):
      return Extent(size, 0, 0,
                    f'ends inside the riegeli signature ({size} bytes)')
    pos, records, last = len(SIGNATURE), 0, None
    if tail_only and size > _BLOCK_SIZE:
      pos, records = max(pos, _last_block_chunk(buf, size)), None
    header = end = None
    while pos < size:
      header = _read_chunk_bytes(buf, pos, _CHUNK_HEADER_SIZE)
      if header is None:
        break
      if header[24] not in _CHUNK_TYPES:
        raise DamagedFileError(
            f'is corrupt: the chunk at byte {pos} has an unknown type')
      num_records = int.from_bytes(header[25:32], 'little')
      end = _chunk_end(pos, int.from_bytes(header[8:16], 'little'),
                       num_records)
      if end > size:
        if header[:8] != highway_hash(header[8:]).to_bytes(8, 'little'):
          raise DamagedFileError(
              f'is corrupt: the header of the chunk at byte {pos} does not '
              'match its hash')
        break
      if records is not None:
        records += num_records
      last, pos = pos, end
    if verify_last and last is not None:
      _verify_chunk(buf, last)
  if pos >= size:
    return Extent(size, size, records, None)
  if header is None:
    return Extent(size, pos, records,
                  f'ends inside the chunk header at byte {pos}')
  return Extent(size, pos, records,
                f'ends inside the chunk at byte {pos} (which ends at byte '
                f'{end})')
