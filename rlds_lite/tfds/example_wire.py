"""``tf.train.Example`` bytes written straight from NumPy columns.

Building a ``tf.train.Example`` through the protobuf API costs a Python list
(``tolist()``) and a message object per field, then a serialization pass;
for RLDS episodes of a few steps that is most of the cost of writing a
dataset. This module writes the protobuf wire format directly: packed
``float`` lists are one ``astype('<f4').tobytes()``, packed ``int64`` lists
one vectorised varint encoding (short ones, up to 64 values, in plain Python,
which is faster there), byte lists a join.

The bytes are those of ``tf.train.Example(...).SerializeToString(
deterministic=True)``: the same fields, with the feature map in sorted key
order (protobuf leaves the order of map entries unspecified; parsers accept
any).

Example:
  >>> import numpy as np
  >>> record = example({'x': int64_feature(np.array([1, -2])),
  ...                   'y': float_feature(np.array([0.5], np.float32)),
  ...                   'z': bytes_feature([b'ab'])})
  >>> parsed = tf.train.Example.FromString(record).features.feature
  >>> list(parsed['x'].int64_list.value), list(parsed['y'].float_list.value)
  ([1, -2], [0.5])
  >>> record == tf.train.Example.FromString(record).SerializeToString(
  ...     deterministic=True)
  True
"""

from typing import Iterable, Mapping

import numpy as np
import tensorflow as tf

__all__ = ['bytes_feature', 'example', 'fixed_size_bytes_feature',
           'float_feature', 'int64_feature']

# Wire tags (field number << 3 | wire type 2, length-delimited).
_FIELD_1 = b'\x0a'   # Example.features, Features.feature, *List.value, key.
_FIELD_2 = b'\x12'   # Feature.float_list, map entry value.
_FIELD_3 = b'\x1a'   # Feature.int64_list.
_VARINT_BYTES = 10   # Bytes of the longest varint (a negative int64).
_SHIFTS = np.arange(_VARINT_BYTES, dtype=np.uint64) * np.uint64(7)


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


def _delimited(tag: bytes, payload: bytes) -> bytes:
  """A length-delimited field: tag, length, payload."""
  return tag + _varint(len(payload)) + payload


_UINT64_MASK = (1 << 64) - 1
_SMALL = 64  # Arrays up to this size are encoded in Python (fewer calls).


def _varints(values: np.ndarray) -> bytes:
  """int64 values as concatenated varints (two's complement, as protobuf)."""
  values = np.asarray(values)
  if values.dtype == np.bool_:   # 0/1: one byte each, as they are stored.
    return values.tobytes()
  if values.size <= _SMALL:
    ints = values.ravel().tolist()
    if all(0 <= v < 0x80 for v in ints):
      return bytes(ints)
    return b''.join(_varint(v & _UINT64_MASK) for v in ints)
  unsigned = np.ascontiguousarray(values, dtype=np.int64).ravel().view(
      np.uint64)
  if unsigned.max() < 0x80:   # Flags, small counts and ids: one byte each.
    return unsigned.astype(np.uint8).tobytes()
  groups = (unsigned[:, None] >> _SHIFTS) & np.uint64(0x7f)
  # Groups up to the highest non-zero one (at least one group for zero).
  significant = _VARINT_BYTES - np.argmax(groups[:, ::-1] != 0, axis=1)
  significant[~groups.any(axis=1)] = 1
  position = np.arange(_VARINT_BYTES)
  more = position[None, :] < (significant[:, None] - 1)
  encoded = groups.astype(np.uint8) | (more.astype(np.uint8) << 7)
  return encoded[position[None, :] < significant[:, None]].tobytes()


def int64_feature(values: np.ndarray) -> bytes:
  """A serialized ``Feature`` with an ``int64_list`` of ``values`` (any shape).

  Example:
    >>> tf.train.Feature.FromString(int64_feature(np.array([[300]])))
    int64_list {
      value: 300
    }
    <BLANKLINE>
  """
  packed = _varints(values)
  inner = _delimited(_FIELD_1, packed) if packed else b''
  return _delimited(_FIELD_3, inner)


def float_feature(values: np.ndarray) -> bytes:
  """A serialized ``Feature`` with a ``float_list`` (values cast to float32).

  Example:
    >>> tf.train.Feature.FromString(float_feature(np.array([1.5])))
    float_list {
      value: 1.5
    }
    <BLANKLINE>
  """
  packed = np.asarray(values).astype('<f4', copy=False).tobytes()
  inner = _delimited(_FIELD_1, packed) if packed else b''
  return _delimited(_FIELD_2, inner)


def bytes_feature(items: Iterable[bytes]) -> bytes:
  """A serialized ``Feature`` with a ``bytes_list`` of ``items``.

  Example:
    >>> tf.train.Feature.FromString(bytes_feature([b'a', b'']))
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
    inner = prefix + prefix.join(items)
  else:
    inner = b''.join(_delimited(_FIELD_1, item) for item in items)
  return _delimited(_FIELD_1, inner)


def fixed_size_bytes_feature(rows: np.ndarray) -> bytes:
  """A serialized ``Feature`` whose ``bytes_list`` holds each row's bytes.

  The same as ``bytes_feature([row.tobytes() for row in rows])``, framed in
  one NumPy operation (a byte-encoded ``[T, ...]`` tensor column).

  Example:
    >>> rows = np.arange(4, dtype=np.int16).reshape(2, 2)
    >>> fixed_size_bytes_feature(rows) == bytes_feature(
    ...     [row.tobytes() for row in rows])
    True
  """
  rows = np.ascontiguousarray(rows)
  if not len(rows):
    return _delimited(_FIELD_1, b'')
  data = rows.reshape(len(rows), -1).view(np.uint8)
  prefix = np.frombuffer(_FIELD_1 + _varint(data.shape[1]), np.uint8)
  framed = np.empty((len(rows), len(prefix) + data.shape[1]), np.uint8)
  framed[:, :len(prefix)] = prefix
  framed[:, len(prefix):] = data
  return _delimited(_FIELD_1, framed.tobytes())


def example(features: Mapping[str, bytes]) -> bytes:
  """A serialized ``Example`` of serialized ``Feature``s, keys sorted.

  Example:
    >>> example({'a': bytes_feature([b'x'])})
    b'\\n\\x0c\\n\\n\\n\\x01a\\x12\\x05\\n\\x03\\n\\x01x'
  """
  entries = b''.join(
      _delimited(_FIELD_1, _delimited(_FIELD_1, key.encode('utf-8')) +
                 _delimited(_FIELD_2, features[key]))
      for key in sorted(features))
  return _delimited(_FIELD_1, entries)
