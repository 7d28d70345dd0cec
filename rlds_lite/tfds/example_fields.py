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
from typing import Any, Dict, Iterator, Sequence, Tuple

import numpy as np
import tensorflow as tf

from rlds_lite import tfrecord_frames

__all__ = ['RecordFormatError', 'features', 'fields', 'read']


class RecordFormatError(ValueError):
  """A TFRecord file whose framing or ``Example`` wire format is broken."""


def _varint(buf: Any, at: int, end: int) -> Tuple[int, int]:
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


def fields(buf: Any, start: int, end: int) -> Iterator[Tuple[int, int, int]]:
  """``(field number, payload start, payload end)`` of the message in ``buf[start:end]`` (length-delimited fields only).

  Example:
    >>> list(fields(b'\\x0a\\x02hi', 0, 4))
    [(1, 2, 4)]
  """
  at = start
  while at < end:
    tag, at = _varint(buf, at, end)
    if tag & 7 != 2:
      raise RecordFormatError(f'unexpected wire type {tag & 7} at byte {at}')
    size, at = _varint(buf, at, end)
    if at + size > end:
      raise RecordFormatError(f'a field of {size} bytes at byte {at} runs '
                              'past its message')
    yield tag >> 3, at, at + size
    at += size


def features(buf: Any, start: int, end: int) -> Iterator[Tuple[str, int, int]]:
  """``(key, start, end)`` of each ``Feature`` message of the ``Example`` in ``buf[start:end]``.

  Example:
    >>> one = tf.train.Feature(int64_list=tf.train.Int64List(value=[5]))
    >>> ex = tf.train.Example(features=tf.train.Features(
    ...     feature={'a': one})).SerializeToString()
    >>> [(key, ex[a:b] == one.SerializeToString())
    ...  for key, a, b in features(ex, 0, len(ex))]
    [('a', True)]
  """
  for number, outer, outer_end in fields(buf, start, end):
    if number != 1:  # Example.features
      continue
    for _, entry, entry_end in fields(buf, outer, outer_end):
      parts = {n: (a, b) for n, a, b in fields(buf, entry, entry_end)}
      if 1 not in parts:
        raise RecordFormatError(f'a feature without a key at byte {entry}')
      value = parts.get(2, (entry_end, entry_end))  # No value: an empty Feature.
      yield bytes(buf[parts[1][0]:parts[1][1]]).decode('utf-8'), *value


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
        records = tfrecord_frames.frames(mapped, len(mapped))
        for index, (offset, length) in enumerate(records):
          start = offset + tfrecord_frames.HEADER
          yield {key: _values(bytes(buf[a:b])) for key, a, b
                 in features(buf, start, start + length) if key in wanted}
      except tfrecord_frames.FramingError as e:
        raise RecordFormatError(f'{path}: {e}') from None
      except RecordFormatError as e:
        raise RecordFormatError(f'{path}: record {index}: {e}') from None
      finally:
        buf.release()
