"""Decode EnvLogger timesteps in batches with ``tf.io.decode_proto``, one tree level at a time.

What it cannot decode raises `Unsupported`; the caller then decodes in Python.
"""

import functools
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from rlds_lite import envlogger as envlogger_compat

_SCALAR_DIM = -438  # EnvLogger's marker of a scalar datum.
# Byte-buffer fields (big-endian): field -> decode_raw type.
_RAW = {
    'float_values_buffer': tf.float32,
    'int8_values': tf.int8,
    'int16_values': tf.int16,
    'uint8_values': tf.uint8,
    'uint16_values': tf.uint16,
}
# Repeated numeric fields: field -> decode_proto output type.
_REPEATED = {
    'float_values': tf.float32,
    'double_values': tf.float64,
    'int32_values': tf.int32,
    'int64_values': tf.int64,
    'uint32_values': tf.uint32,
    'uint64_values': tf.uint64,
    'bool_values': tf.bool,
}


class Unsupported(Exception):
  """The batch needs per-timestep decoding (see the module docstring)."""


@functools.lru_cache(maxsize=None)
def _proto_module():
  envlogger_compat.import_envlogger()
  from envlogger.proto import storage_pb2  # pylint: disable=g-import-not-at-top
  return storage_pb2


@functools.lru_cache(maxsize=None)
def _descriptor_source() -> bytes:
  """``bytes://`` + the FileDescriptorSet of EnvLogger's storage.proto."""
  from google.protobuf import descriptor_pb2  # pylint: disable=g-import-not-at-top
  file_descriptor = _proto_module().DESCRIPTOR
  descriptor_set = descriptor_pb2.FileDescriptorSet()
  for dependency in file_descriptor.dependencies:
    dependency.CopyToProto(descriptor_set.file.add())
  file_descriptor.CopyToProto(descriptor_set.file.add())
  return b'bytes://' + descriptor_set.SerializeToString()


def _decode(serialized: tf.Tensor, message: str, fields: Sequence[str],
            types: Sequence[tf.DType]) -> Any:
  package = _proto_module().DESCRIPTOR.package
  return tf.io.decode_proto(serialized, f'{package}.{message}', list(fields),
                            list(types), descriptor_source=_descriptor_source())


def _exactly(sizes: Any, count: int) -> None:
  """Raises Unsupported unless every size (a tensor or array) is ``count``."""
  if not np.all(np.asarray(sizes) == count):
    raise Unsupported()


def _single(values: tf.Tensor) -> tf.Tensor:
  """``[N]`` from ``[N, 1]`` (sizes checked): a reshape, no copy or slice op."""
  return tf.reshape(values, [-1])


def _message_field(serialized: tf.Tensor, message: str, field: str
                   ) -> tf.Tensor:
  """The serialized sub-message ``field`` of every row (each must have it)."""
  sizes, (values,) = _decode(serialized, message, [field], [tf.string])
  _exactly(sizes, 1)
  return _single(values)


def _repeated_messages(serialized: tf.Tensor, message: str, field: str,
                       count: int) -> tf.Tensor:
  """``[N, count]`` serialized messages of a repeated field."""
  sizes, (values,) = _decode(serialized, message, [field], [tf.string])
  _exactly(sizes, count)
  return tf.reshape(values, [-1, count])


def _repeated_columns(serialized: tf.Tensor, message: str, field: str,
                      count: int) -> List[tf.Tensor]:
  """The ``count`` columns (``[N]`` each) of `_repeated_messages`, one op."""
  return tf.unstack(_repeated_messages(serialized, message, field, count),
                    num=count, axis=1)


def _datum_column(serialized: tf.Tensor, template: Any) -> np.ndarray:
  """``[N, ...]`` array of ``Datum`` messages shaped like ``template``."""
  sizes, (shapes, values) = _decode(serialized, 'Datum', ['shape', 'values'],
                                    [tf.string, tf.string])
  sizes = sizes.numpy()
  _exactly(sizes[:, 1], 1)
  values = _single(values)
  shape_bytes = template.shape.SerializeToString()
  if shape_bytes:
    _exactly(sizes[:, 0], 1)
    if not bool(tf.reduce_all(tf.equal(_single(shapes), shape_bytes))):
      raise Unsupported()
  else:
    _exactly(sizes[:, 0], 0)
  dims = [dim.size for dim in template.shape.dim]
  shape = () if dims == [_SCALAR_DIM] else tuple(dims)
  if any(d < 0 for d in shape):
    raise Unsupported()
  fields = template.values.ListFields()
  if len(fields) != 1:
    raise Unsupported()
  name = fields[0][0].name
  count = int(serialized.shape[0])
  size = int(np.prod(shape, dtype=np.int64))
  if name in _RAW:
    field_sizes, (raw,) = _decode(values, 'Datum.Values', [name],
                                  [tf.string])
    _exactly(field_sizes, 1)
    flat = tf.io.decode_raw(_single(raw), _RAW[name], little_endian=False)
  elif name in _REPEATED:
    field_sizes, (flat,) = _decode(values, 'Datum.Values', [name],
                                   [_REPEATED[name]])
    _exactly(field_sizes, size)
  elif name == 'bigint_values' and not shape:
    return _python_ints(values)
  else:
    raise Unsupported()  # Strings, bytes, arrays of Python ints: per timestep.
  array = flat.numpy()
  if array.size != count * size:
    raise Unsupported()
  return array.reshape((count,) + shape)


def _python_ints(values: tf.Tensor) -> np.ndarray:
  """``[N]`` int64 of scalar Python ints (``Datum.Values.bigint_values``)."""
  sizes, (ints,) = _decode(values, 'Datum.Values', ['bigint_values'],
                           [tf.string])
  _exactly(sizes, 1)
  ints = [int.from_bytes(b, 'big', signed=True)
          for b in _single(ints).numpy()]
  try:
    return np.array(ints, np.int64)
  except OverflowError:
    raise Unsupported() from None  # Beyond int64: kept as Python ints.


def _column(serialized: tf.Tensor, template: Any) -> Any:
  """Decodes ``[N]`` serialized ``Data`` shaped like ``template``."""
  kind = template.WhichOneof('value')
  if kind == 'datum':
    return _datum_column(_message_field(serialized, 'Data', 'datum'),
                         template.datum)
  if kind == 'tuple':
    width = len(template.tuple.values)
    items = _repeated_columns(_message_field(serialized, 'Data', 'tuple'),
                              'Data.Tuple', 'values', width)
    return tuple(_column(items[i], template.tuple.values[i])
                 for i in range(width))
  if kind == 'dict':
    if template.dict.HasField('kvs'):
      raise Unsupported()  # Non-string keys.
    keys = sorted(template.dict.values.keys())
    entries = _repeated_messages(_message_field(serialized, 'Data', 'dict'),
                                 'Data.Dict', 'values', len(keys))
    sizes, (names, values) = _decode(tf.reshape(entries, [-1]),
                                     'Data.Dict.ValuesEntry', ['key', 'value'],
                                     [tf.string, tf.string])
    _exactly(sizes, 1)
    names = tf.reshape(names, [-1, len(keys)]).numpy()
    values = tf.reshape(values, [-1, len(keys)])
    columns = {}
    for key in keys:  # Map entries come in any order, row by row.
      where = names == key.encode()
      if not where.any(axis=1).all():
        raise Unsupported()
      columns[key] = _column(
          tf.gather(values, where.argmax(axis=1), batch_dims=1),
          template.dict.values[key])
    return columns
  raise Unsupported()  # Data.Array or an empty value.


def _step_types(serialized: tf.Tensor, template: Any) -> np.ndarray:
  """The timesteps' step types (EnvLogger stores them as Python ints)."""
  return np.asarray(_column(serialized, template), np.int64)


def _optional_column(serialized: tf.Tensor, step_types: np.ndarray
                     ) -> Optional[Any]:
  """Column whose reset (step type 0) rows may be empty; None if all are.

  Empty rows become zeros of the other rows' dtype and shape.
  """
  present = tf.strings.length(serialized).numpy() > 0
  if not present.any():
    return None
  if (~present & (step_types != 0)).any():
    raise Unsupported()  # Only a reset may lack a value: error per timestep.
  rows = np.flatnonzero(present)
  template = _proto_module().Data.FromString(serialized[rows[0]].numpy())
  values = _column(tf.gather(serialized, rows) if not present.all()
                   else serialized, template)
  if present.all():
    return values

  def fill(column):
    out = np.zeros((len(present),) + column.shape[1:], column.dtype)
    out[present] = column
    return out

  return tf.nest.map_structure(fill, values)


def decode_column(serialized: List[bytes]) -> Any:
  """``[N, ...]`` columns of serialized ``Data`` values of one structure.

  Raises:
    Unsupported: if the values need per-value decoding.
  """
  template = _proto_module().Data.FromString(serialized[0])
  return _column(tf.constant(serialized, tf.string), template)


def decode_timesteps(serialized: List[bytes]) -> Dict[str, Any]:
  """Columns of serialized EnvLogger steps ``(timestep, action, custom data)``.

  Args:
    serialized: the serialized ``Data`` of consecutive timesteps.

  Returns:
    ``{'step_type', 'observation', 'reward', 'discount', 'action',
    'custom'}``: ``[N, ...]`` arrays (nests for structured values); the
    action, reward and discount are None when no timestep has one, else
    zero-filled on reset timesteps without one; ``custom`` None when no
    timestep has custom data.

  Raises:
    Unsupported: if the batch needs per-timestep decoding.
  """
  data = _proto_module().Data
  top = tf.constant(serialized, tf.string)
  step = _repeated_columns(_message_field(top, 'Data', 'tuple'), 'Data.Tuple',
                           'values', 3)
  timestep = _repeated_columns(_message_field(step[0], 'Data', 'tuple'),
                               'Data.Tuple', 'values', 4)
  first = data.FromString(serialized[0]).tuple.values[0].tuple.values
  step_types = _step_types(timestep[0], first[0])
  observation = _column(timestep[3], first[3])
  custom = step[2]
  has_custom = tf.strings.length(custom).numpy() > 0
  if has_custom.any() and not has_custom.all():
    raise Unsupported()
  return {
      'step_type': step_types,
      'observation': observation,
      'reward': _optional_column(timestep[1], step_types),
      'discount': _optional_column(timestep[2], step_types),
      'action': _optional_column(step[1], step_types),
      'custom': (_column(custom, data.FromString(serialized[0]).tuple.values[2])
                 if has_custom.all() else None),
  }
