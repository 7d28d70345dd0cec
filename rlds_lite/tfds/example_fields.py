"""Chosen features of the ``tf.train.Example`` records of TFRecord files, read without the rest.

A record's features are length-prefixed on the wire, so the reader maps
the file and steps over every feature it was not asked for: a dataset's
actions are read without reading its camera frames. Record framing is
checked (lengths, truncation); the record checksums are not, since they
cover the bytes left unread (docs/guarantees.md).

Example:
  >>> import os, tempfile
  >>> path = os.path.join(tempfile.mkdtemp(), 'x.tfrecord')
  >>> with tf.io.TFRecordWriter(path) as w:
  ...   w.write(tf.train.Example(features=tf.train.Features(feature={
  ...       'a': tf.train.Feature(float_list=tf.train.FloatList(value=[1, 2])),
  ...       'img': tf.train.Feature(bytes_list=tf.train.BytesList(
  ...           value=[b'x' * 1000]))})).SerializeToString())
  >>> [r['a'].tolist() for r in read(path, ['a'])]
  [[1.0, 2.0]]
"""

import mmap
from typing import Dict, Iterator, Sequence, Tuple

import numpy as np
import tensorflow as tf

__all__ = ['RecordFormatError', 'read']

_HEADER = 12   # uint64 length, uint32 masked CRC of the length.
_FOOTER = 4    # uint32 masked CRC of the data.


class RecordFormatError(ValueError):
  """A TFRecord file whose framing or ``Example`` wire format is broken."""


def _varint(buf: memoryview, at: int, end: int) -> Tuple[int, int]:
  """The varint at ``at`` and the offset after it."""
  value = shift = 0
  while at < end:
    byte = buf[at]
    at += 1
    value |= (byte & 0x7F) << shift
    if byte < 0x80:
      return value, at
    shift += 7
  raise RecordFormatError('a varint runs past its message')


def _delimited(buf: memoryview, at: int, end: int, tag: int
               ) -> Tuple[int, int]:
  """The ``[start, stop)`` of the length-delimited field ``tag`` at ``at``."""
  if at >= end or buf[at] != tag:
    raise RecordFormatError(f'expected wire tag {tag:#x} at byte {at}')
  size, start = _varint(buf, at + 1, end)
  if start + size > end:
    raise RecordFormatError(f'a field of {size} bytes at byte {at} runs past '
                            'its message')
  return start, start + size


def _values(feature: bytes) -> np.ndarray:
  parsed = tf.train.Feature.FromString(feature)
  kind = parsed.WhichOneof('kind')
  if kind == 'float_list':
    return np.asarray(parsed.float_list.value, np.float32)
  if kind == 'int64_list':
    return np.asarray(parsed.int64_list.value, np.int64)
  if kind == 'bytes_list':
    return np.asarray(parsed.bytes_list.value, object)
  return np.zeros([0], np.float32)


def _features(buf: memoryview, start: int, end: int, wanted: frozenset
              ) -> Dict[str, np.ndarray]:
  """The wanted features of the ``Example`` in ``buf[start:end]``."""
  at, end = _delimited(buf, start, end, 0x0A)  # Example.features
  out = {}
  while at < end:
    entry, at = _delimited(buf, at, end, 0x0A)  # Features.feature map entry
    key_start, key_end = _delimited(buf, entry, at, 0x0A)
    key = bytes(buf[key_start:key_end]).decode('utf-8')
    if key in wanted:
      value_start, value_end = _delimited(buf, key_end, at, 0x12)
      out[key] = _values(bytes(buf[value_start:value_end]))
  return out


def _records(buf: memoryview) -> Iterator[Tuple[int, int]]:
  """The ``[start, stop)`` of every record's data in a TFRecord file."""
  at = index = 0
  while at < len(buf):
    if at + _HEADER > len(buf):
      raise RecordFormatError(f'record {index}: its header is cut off')
    size = int(np.frombuffer(buf[at:at + 8], '<u8')[0])
    start = at + _HEADER
    at = start + size + _FOOTER
    if at > len(buf):
      raise RecordFormatError(f'record {index}: it is cut off')
    yield start, start + size
    index += 1


def read(path: str, keys: Sequence[str]) -> Iterator[Dict[str, np.ndarray]]:
  """The ``keys`` features of every record of an uncompressed TFRecord file, in order.

  Args:
    path: a local TFRecord file of serialized ``tf.train.Example``.
    keys: the feature keys to read (a record without one leaves it out).

  Returns:
    An iterator of ``{key: 1-D array}`` per record (float32, int64 or bytes).

  Raises:
    RecordFormatError: naming the file and the record, on a broken record.
  """
  wanted = frozenset(keys)
  with open(path, 'rb') as f:
    if not f.seek(0, 2):
      return
    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
      buf = memoryview(mapped)
      index = 0
      try:
        for index, (start, end) in enumerate(_records(buf)):
          yield _features(buf, start, end, wanted)
      except RecordFormatError as e:
        where = '' if str(e).startswith('record ') else f'record {index}: '
        raise RecordFormatError(f'{path}: {where}{e}') from None
      finally:
        buf.release()
