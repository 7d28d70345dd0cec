"""``tf.train.Example`` bytes written straight from NumPy columns.

The bytes are ``SerializeToString(deterministic=True)``'s; a message stays
`Chunks` until `example` joins the record once.
"""

from typing import Iterable, List, Mapping, Optional, Sequence, Union

import numpy as np
import tensorflow as tf

__all__ = ['Chunks', 'RecordTooLargeError', 'bytes_feature', 'example',
           'fixed_size_bytes_feature', 'float_feature', 'int64_feature']

# Wire tags (field number << 3 | wire type 2, length-delimited).
_FIELD_1 = b'\x0a'   # Example.features, Features.feature, *List.value, key.
_FIELD_2 = b'\x12'   # Feature.float_list, map entry value.
_FIELD_3 = b'\x1a'   # Feature.int64_list.
_VARINT_BYTES = 10   # Bytes of the longest varint (a negative int64).
_CHUNK = 1 << 20     # Values varint-encoded at a time (bounds the temporaries).
_DEFER = 1 << 16     # Chunks of at least this many values are encoded late.


class _Varints:
  """Non-negative ints (an unsigned dtype, 1-D), varint-encoded when joined.

  Holds the values (a view of the column: no copy) and the encoded size, so
  a record's size is known, and its encoding is done chunk by chunk into the
  record itself, without holding every encoded chunk at once.
  """

  __slots__ = ('values', 'nbytes')

  def __init__(self, values: np.ndarray):
    self.values = values
    self.nbytes = _varints_size(values)

  def encode(self) -> np.ndarray:
    return _unsigned_varints(self.values)


Buffer = Union[bytes, np.ndarray, _Varints]


class RecordTooLargeError(ValueError):
  """A serialized record is larger than a reader can parse (see `example`).

  Example:
    >>> try:
    ...   example({'a': bytes_feature([b'x' * 100])}, max_bytes=64)
    ... except ValueError as error:  # A RecordTooLargeError.
    ...   print(type(error).__name__, error.nbytes, error.limit)
    RecordTooLargeError 113 64
  """

  def __init__(self, message: str, nbytes: int, limit: int):
    super().__init__(message)
    self.nbytes = nbytes
    self.limit = limit


class Chunks:
  """A serialized protobuf message as the buffers it is made of.

  ``bytes(chunks)`` joins them; ``len(chunks)`` is the size in bytes.

  Example:
    >>> chunks = float_feature(np.array([1.0, 2.0], np.float32))
    >>> len(chunks), bytes(chunks) == tf.train.Feature(
    ...     float_list=tf.train.FloatList(value=[1, 2])).SerializeToString()
    (12, True)
  """

  __slots__ = ('buffers', 'nbytes')

  def __init__(self, buffers: Sequence[Buffer] = ()):
    self.buffers: List[Buffer] = list(buffers)
    self.nbytes = sum(_size(b) for b in self.buffers)

  def framed(self, tag: bytes) -> 'Chunks':
    """This message as a length-delimited field: tag, length, buffers."""
    framed = Chunks()
    header = tag + _varint(self.nbytes)
    framed.buffers = [header] + self.buffers
    framed.nbytes = len(header) + self.nbytes
    return framed

  def __len__(self) -> int:
    return self.nbytes

  def __bytes__(self) -> bytes:
    if self.deferred:
      return bytes(self.to_bytearray())
    return b''.join([
        np.ascontiguousarray(b) if isinstance(b, np.ndarray) and
        not b.flags.c_contiguous else b for b in self.buffers])

  @property
  def deferred(self) -> bool:
    """Whether some buffer is a large integer list still to be encoded."""
    return any(isinstance(b, _Varints) for b in self.buffers)

  def to_bytearray(self) -> bytearray:
    """The message in one new ``bytearray``, each buffer written into it.

    Deferred varints are encoded one chunk at a time, in place: the peak is
    the message plus one chunk's temporaries. (For many small buffers,
    ``bytes(chunks)``'s join is faster.)
    """
    out = bytearray(self.nbytes)
    target = memoryview(out)
    position = 0
    for buffer in self.buffers:
      if isinstance(buffer, _Varints):
        buffer = buffer.encode()
      if isinstance(buffer, np.ndarray):
        buffer = memoryview(_bytes_of(buffer))
      size = len(buffer)
      target[position:position + size] = buffer
      position += size
    if position != self.nbytes:
      raise AssertionError(f'example_wire: wrote {position} bytes of a '
                           f'{self.nbytes}-byte message.')
    return out

  def __repr__(self) -> str:
    return f'Chunks({len(self.buffers)} buffers, {self.nbytes} bytes)'


def _size(buffer: Buffer) -> int:
  if isinstance(buffer, (np.ndarray, _Varints)):
    return buffer.nbytes
  return len(buffer)


def _bytes_of(array: np.ndarray) -> np.ndarray:
  """A C-contiguous array as a flat uint8 view (copied only if not contiguous)."""
  return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def _varint_slow(value: int) -> bytes:
  """One non-negative int as a protobuf varint."""
  out = bytearray()
  while value >= 0x80:
    out.append((value & 0x7f) | 0x80)
    value >>= 7
  out.append(value)
  return bytes(out)


_SMALL_VARINTS = tuple(_varint_slow(n) for n in range(1 << 14))


def _varint(value: int) -> bytes:
  """One non-negative int as a protobuf varint (lengths < 16384 looked up)."""
  if value < len(_SMALL_VARINTS):
    return _SMALL_VARINTS[value]
  return _varint_slow(value)


_UINT64_MASK = (1 << 64) - 1
_SMALL = 64  # Arrays up to this size are encoded in Python (fewer calls).


def _unsigned_varints(values: np.ndarray) -> np.ndarray:
  """Non-negative ints (an unsigned dtype, 1-D) as concatenated varints.

  Computed in the values' own width with as many 7-bit groups as the
  largest value needs: a uint8 chunk costs about 4 bytes per value of
  temporaries, a uint64 one with 10 groups about 30.
  """
  top = int(values.max())
  if top < 0x80:   # Flags, small counts and ids: one byte each.
    return values.astype(np.uint8, copy=False)
  groups = (top.bit_length() + 6) // 7
  encoded = np.empty((len(values), groups), np.uint8)
  lengths = np.ones(len(values), np.uint8)
  rest = values
  for k in range(groups):
    low = (rest & 0x7f).astype(np.uint8)
    rest = rest >> 7
    more = rest != 0
    encoded[:, k] = low | (more.view(np.uint8) << 7)
    lengths += more
  valid = np.arange(groups, dtype=np.uint8)[None, :] < lengths[:, None]
  return encoded[valid]


def _varints_size(values: np.ndarray) -> int:
  """Bytes of `_unsigned_varints` of ``values``, without encoding them."""
  if not values.size:
    return 0
  top = int(values.max())
  total = values.size
  for k in range(1, (top.bit_length() + 6) // 7):
    total += int(np.count_nonzero(values >> (7 * k)))
  return total


def _varint_buffers(values: np.ndarray) -> List[Buffer]:
  """int64 values as concatenated varints (two's complement, as protobuf)."""
  values = np.asarray(values)
  if values.dtype == np.bool_:   # 0/1: one byte each, as they are stored.
    return [_bytes_of(values)]
  if values.size <= _SMALL:
    ints = values.ravel().tolist()
    if all(0 <= v < 0x80 for v in ints):
      return [bytes(ints)]
    return [b''.join(_varint(v & _UINT64_MASK) for v in ints)]
  flat = values.reshape(-1)
  unsigned_dtype = np.dtype(f'u{flat.dtype.itemsize}')
  buffers = []
  for start in range(0, len(flat), _CHUNK):
    chunk = flat[start:start + _CHUNK]
    if flat.dtype.kind == 'u':
      unsigned = chunk
    elif int(chunk.min()) >= 0:   # Non-negative: the same bits unsigned.
      unsigned = chunk.view(unsigned_dtype)
    else:   # Negative values are 10-byte varints of their int64 bits.
      unsigned = chunk.astype(np.int64).view(np.uint64)
    unsigned = np.ascontiguousarray(unsigned)
    buffers.append(_Varints(unsigned) if len(unsigned) >= _DEFER else
                   _unsigned_varints(unsigned))
  return buffers


def int64_feature(values: np.ndarray) -> Chunks:
  """A serialized ``Feature`` with an ``int64_list`` of ``values`` (any shape).

  Example:
    >>> tf.train.Feature.FromString(bytes(int64_feature(np.array([[300]]))))
    int64_list {
      value: 300
    }
    <BLANKLINE>
  """
  packed = Chunks(_varint_buffers(values))
  inner = packed.framed(_FIELD_1) if packed.nbytes else Chunks()
  return inner.framed(_FIELD_3)


def float_feature(values: np.ndarray) -> Chunks:
  """A serialized ``Feature`` with a ``float_list`` (values cast to float32).

  A float32 array is used as it is (no copy).

  Example:
    >>> tf.train.Feature.FromString(bytes(float_feature(np.array([1.5]))))
    float_list {
      value: 1.5
    }
    <BLANKLINE>
  """
  packed = np.asarray(values).astype('<f4', copy=False)
  inner = (Chunks([packed]).framed(_FIELD_1) if packed.size else Chunks())
  return inner.framed(_FIELD_2)


def bytes_feature(items: Iterable[bytes]) -> Chunks:
  """A serialized ``Feature`` with a ``bytes_list`` of ``items``.

  Example:
    >>> tf.train.Feature.FromString(bytes(bytes_feature([b'a', b''])))
    bytes_list {
      value: "a"
      value: ""
    }
    <BLANKLINE>
  """
  items = items if isinstance(items, list) else list(items)
  sizes = set(map(len, items))
  if len(sizes) == 1:   # Fixed-size values (byte-encoded tensors): one join.
    prefix = _FIELD_1 + _varint(sizes.pop())
    inner = Chunks([prefix + prefix.join(items)])
  else:
    buffers = []
    for item in items:
      buffers.append(_FIELD_1 + _varint(len(item)))
      buffers.append(item)
    inner = Chunks(buffers)
  return inner.framed(_FIELD_1)


def fixed_size_bytes_feature(rows: np.ndarray) -> Chunks:
  """A serialized ``Feature`` whose ``bytes_list`` holds each row's bytes.

  The same as ``bytes_feature([row.tobytes() for row in rows])``, framed in
  one NumPy operation (a byte-encoded ``[T, ...]`` tensor column).

  Example:
    >>> rows = np.arange(4, dtype=np.int16).reshape(2, 2)
    >>> bytes(fixed_size_bytes_feature(rows)) == bytes(bytes_feature(
    ...     [row.tobytes() for row in rows]))
    True
  """
  rows = np.ascontiguousarray(rows)
  if not len(rows):
    return Chunks().framed(_FIELD_1)
  data = rows.reshape(len(rows), -1).view(np.uint8)
  prefix = np.frombuffer(_FIELD_1 + _varint(data.shape[1]), np.uint8)
  framed = np.empty((len(rows), len(prefix) + data.shape[1]), np.uint8)
  framed[:, :len(prefix)] = prefix
  framed[:, len(prefix):] = data
  return Chunks([framed.reshape(-1)]).framed(_FIELD_1)


def _as_chunks(feature: Union[Chunks, bytes]) -> Chunks:
  return feature if isinstance(feature, Chunks) else Chunks([feature])


def example(features: Mapping[str, Union[Chunks, bytes]],
            max_bytes: Optional[int] = None,
            allow_bytearray: bool = False) -> Union[bytes, bytearray]:
  """A serialized ``Example`` of serialized ``Feature``s, keys sorted.

  Args:
    features: ``{key: serialized Feature}`` (`Chunks` or bytes).
    max_bytes: if given, a record larger than this raises
      `RecordTooLargeError` before it is built (nothing is allocated).
    allow_bytearray: a record holding large integer lists (encoded late,
      straight into the record) may come back as the ``bytearray`` it was
      built in (``tf.io.TFRecordWriter.write`` takes it), saving a copy of
      the record; other records are ``bytes`` either way.

  Returns:
    The record.

  Example:
    >>> example({'a': bytes_feature([b'x'])})
    b'\\n\\x0c\\n\\n\\n\\x01a\\x12\\x05\\n\\x03\\n\\x01x'
    >>> example({'a': bytes_feature([b'x' * 100])}, max_bytes=64)
    Traceback (most recent call last):
    ...
    rlds_lite.tfds.example_wire.RecordTooLargeError: the serialized tf.train.Example is 113 bytes, over the 64 bytes a record can hold.
  """
  entries = Chunks()
  for key in sorted(features):
    entry = Chunks([_FIELD_1 + _varint(len(key.encode('utf-8'))) +
                    key.encode('utf-8')])
    value = _as_chunks(features[key]).framed(_FIELD_2)
    entry.buffers += value.buffers
    entry.nbytes += value.nbytes
    framed = entry.framed(_FIELD_1)
    entries.buffers += framed.buffers
    entries.nbytes += framed.nbytes
  record = entries.framed(_FIELD_1)
  if max_bytes is not None and record.nbytes > max_bytes:
    raise RecordTooLargeError(
        f'the serialized tf.train.Example is {describe_size(record.nbytes)}, '
        f'over the {describe_size(max_bytes)} a record can hold.',
        record.nbytes, max_bytes)
  if allow_bytearray and record.deferred:
    return record.to_bytearray()
  return bytes(record)


def describe_size(nbytes: int) -> str:
  """A byte count for people: ``'2.2 GB'``, ``'2 GiB'`` for 2**31 - 1, ...

  Example:
    >>> describe_size(2_200_000_000), describe_size(2**31 - 1), describe_size(5)
    ('2.2 GB', '2 GiB', '5 bytes')
  """
  if nbytes in (2**31 - 1, 2**31):
    return '2 GiB'
  for unit, size in (('GB', 10**9), ('MB', 10**6), ('kB', 10**3)):
    if nbytes >= size:
      return f'{nbytes / size:.1f} {unit}'
  return f'{nbytes} bytes'
