"""TFRecord framing: where each record of a file starts and ends, read from the headers alone.

A record is ``uint64 length, uint32 masked CRC-32C of the length, data,
uint32 masked CRC-32C of the data``.

Example:
  >>> import io, struct
  >>> frame = lambda data: struct.pack('<QI', len(data), 0) + data + b'\\0' * 4
  >>> blob = frame(b'abc') + frame(b'')
  >>> list(frames(io.BytesIO(blob), len(blob)))
  [(0, 3), (19, 0)]
"""

import struct
from typing import BinaryIO, Callable, Iterator, Optional, Tuple

__all__ = ['HEADER', 'FOOTER', 'FramingError', 'frames']

HEADER = 12
"""Bytes before a record's data: its length and the length's checksum."""
FOOTER = 4
"""Bytes after a record's data: the data's checksum."""


class FramingError(ValueError):
  """A record whose framing is cut off or fails ``header_ok``.

  Attributes: ``record`` (its index), ``offset`` (its first byte),
  ``length`` (its data length; None when the header itself is cut off),
  ``size`` (the file's), ``cut`` (False: ``header_ok`` refused the header).
  """

  def __init__(self, record: int, offset: int, length: Optional[int],
               size: int, cut: bool = True):
    self.record, self.offset, self.length = record, offset, length
    self.size, self.cut = size, cut
    if length is None:
      what = 'its header is cut off'
    elif cut:
      what = (f'it is cut off (it needs {offset + HEADER + length + FOOTER} '
              f'bytes, the file has {size})')
    else:
      what = 'its header is damaged'
    super().__init__(f'record {record} (byte {offset}): {what}')


def frames(f: BinaryIO, size: int,
           header_ok: Optional[Callable[[bytes], bool]] = None
           ) -> Iterator[Tuple[int, int]]:
  """``(offset, data length)`` of each record of the open file ``f`` of ``size`` bytes, in order.

  Args:
    f: a binary file (or ``mmap``) supporting ``seek`` and ``read``.
    size: the bytes of the file.
    header_ok: a check of each 12-byte header (e.g. its checksum), done
      before its length is trusted.

  Raises:
    FramingError: at the first record cut off or refused.
  """
  offset = record = 0
  while offset < size:
    f.seek(offset)
    header = f.read(HEADER)
    if len(header) < HEADER:
      raise FramingError(record, offset, None, size)
    (length,) = struct.unpack('<Q', header[:8])
    if header_ok is not None and not header_ok(header):
      raise FramingError(record, offset, length, size, cut=False)
    if offset + HEADER + length + FOOTER > size:
      raise FramingError(record, offset, length, size)
    yield offset, length
    offset += HEADER + length + FOOTER
    record += 1
