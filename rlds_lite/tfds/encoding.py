"""Encode and serialize whole RLDS episodes column by column (TFDS's bytes, faster).

How and what is checked: ``docs/recording.md``, "Why writing is fast".
"""

import functools
import itertools
import zlib
from typing import (Any, Callable, Dict, List, Mapping, NamedTuple, Optional,
                    Sequence, Tuple, Union)

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds
from tensorflow_datasets.core import example_serializer

from rlds_lite import rlds_types
from rlds_lite.dense import conversion
from rlds_lite.tfds import example_wire
from rlds_lite.tfds import png

__all__ = ['EpisodeEncoder', 'JPEG_QUALITY', 'MAX_RECORD_BYTES',
           'RecordTooLargeError', 'adjacent_runs', 'check_jpeg_quality',
           'check_record_size', 'columnar_steps', 'exact_cast', 'size_bound']

MAX_RECORD_BYTES = 2**31 - 1
"""The largest serialized ``tf.train.Example`` a reader can parse, in bytes.

Measured with TF 2.21: ``tf.io.parse_single_example`` parses a record of
``2**31 - 1`` bytes; one of ``2**31`` bytes crashes the process
(segmentation fault), and larger ones parse as if the features were missing
(a reader then sees episodes of 0 steps). Every writer refuses larger
episodes (`check_record_size`)."""

RecordTooLargeError = example_wire.RecordTooLargeError


def check_record_size(nbytes: int) -> None:
  """Raises `RecordTooLargeError` if a record of ``nbytes`` cannot be read.

    Example:
      >>> check_record_size(2_200_000_000)
      Traceback (most recent call last):
      ...
      rlds_lite.tfds.example_wire.RecordTooLargeError: its serialized tf.train.Example is 2.2 GB, over the 2 GiB a record can hold; store images encoded (image_encoding='png' or 'jpeg') or split the episode into shorter ones.
  """
  if nbytes > MAX_RECORD_BYTES:
    raise RecordTooLargeError(
        f'its serialized tf.train.Example is '
        f'{example_wire.describe_size(nbytes)}, over the '
        f'{example_wire.describe_size(MAX_RECORD_BYTES)} a record can hold; '
        "store images encoded (image_encoding='png' or 'jpeg') or split the "
        'episode into shorter ones.', nbytes, MAX_RECORD_BYTES)


def size_bound(value: Any) -> int:
  """An upper bound of the serialized size of a conformed episode, in bytes.

    Example:
      >>> size_bound({'steps': {'x': np.zeros(3, np.float32)}, 'id': b'ab'})
      272
  """
  if isinstance(value, Mapping):
    return sum(size_bound(v) + 2 * len(str(k)) + 32 for k, v in value.items())
  if isinstance(value, (bytes, bytearray, str)):
    return len(value) + 16
  if isinstance(value, np.ndarray) and value.dtype != object:
    return 10 * value.size + 16 * (len(value) if value.ndim else 1) + 64
  if isinstance(value, (list, tuple, np.ndarray)):
    return sum(size_bound(v) for v in value) + 64
  return 64


def _example(features: Mapping[str, Any],
             allow_bytearray: bool = False) -> Union[bytes, bytearray]:
  """`example_wire.example` of ``features``; `check_record_size` first."""
  try:
    return example_wire.example(features, max_bytes=MAX_RECORD_BYTES,
                                allow_bytearray=allow_bytearray)
  except RecordTooLargeError as e:
    check_record_size(e.nbytes)
    raise

_PLAIN_TENSOR_TYPES = (tfds.features.Tensor, tfds.features.Scalar)
_NUMPY_VALUES = (np.ndarray, np.generic)
_FLAGS = (rlds_types.IS_FIRST, rlds_types.IS_LAST)


def _to_numpy(value: Any) -> Any:
  if isinstance(value, (tf.Tensor, tf.Variable)):
    return value.numpy()
  return value


def _is_mapping(value: Any) -> bool:
  """``isinstance(value, Mapping)``, without the ABC check for plain dicts."""
  return type(value) is dict or isinstance(value, Mapping)  # pylint: disable=unidiomatic-typecheck


def _stack_steps(steps: Sequence[Mapping[str, Any]], path: str) -> Any:
  """A list of (nested) step dicts as one dict of stacked columns."""
  first = steps[0]
  if _is_mapping(first):
    fields = first.keys()
    for i, step in enumerate(steps):
      if not _is_mapping(step) or step.keys() != fields:
        raise ValueError(
            f'{path}: step {i} has fields {sorted(step)} but step 0 has '
            f'{sorted(first)}.')
    return {k: _stack_steps([s[k] for s in steps], f'{path}/{k}')
            for k in first}
  kinds = set(map(type, steps))
  if len(kinds) == 1 and issubclass(next(iter(kinds)), np.generic):
    return np.array(steps)  # NumPy scalars of one type: one call.
  if all(issubclass(kind, _NUMPY_VALUES) for kind in kinds):
    values = list(steps)  # NumPy values already: no per-value conversion.
  else:
    values = [_to_numpy(s) for s in steps]
    if not all(isinstance(v, _NUMPY_VALUES) for v in values):
      return values
  try:
    return np.stack(values)  # Keeps the dtype (checked against the feature).
  except ValueError:
    return values  # Shapes differ: left to the feature (e.g. image sizes).


def columnar_steps(steps: Any) -> Dict[str, Any]:
  """The steps of one episode (columns, a dataset or a list of steps) as ``[T, ...]`` columns.

    Example:
      >>> columnar_steps([{'a': 1}, {'a': 2}])
      {'a': [1, 2]}
  """
  if isinstance(steps, tf.data.Dataset):
    dense = conversion.dense_episode(steps)
    return tf.nest.map_structure(_to_numpy, dense)
  if isinstance(steps, Mapping):
    return steps
  if isinstance(steps, (list, tuple)):
    return _stack_steps(steps, rlds_types.STEPS) if steps else {}
  raise TypeError(
      f'episode[{rlds_types.STEPS!r}] must be a dict of [T, ...] columns, a '
      f'tf.data.Dataset of steps or a list of step dicts; got '
      f'{type(steps).__name__}.')


def _column_length(column: Any) -> int:
  if isinstance(column, Mapping):
    lengths = {_column_length(v) for v in column.values()}
    return lengths.pop() if len(lengths) == 1 else -1
  return len(column)


def _is_plain_tensor(feature: Any) -> bool:
  """A ``Tensor``/``Scalar`` feature, or a ``Text`` one without an encoder.

  ``tfds.features.Text()`` stores its values as a scalar ``tf.string``
  tensor does: the same serialized bytes, the same decoded tensor.
  """
  return type(feature) in _PLAIN_TENSOR_TYPES or (  # pylint: disable=unidiomatic-typecheck
      type(feature) is tfds.features.Text and feature.encoder is None)  # pylint: disable=unidiomatic-typecheck


def _string_array(value: Any, path: str) -> np.ndarray:
  """Strings (``str``/``bytes`` values, lists, arrays of kind S, U, T or O)
  as an object array of ``bytes`` (``str`` as UTF-8), as TF gives strings.

  Raises:
    ValueError: naming the field, for a value that is not a string.
  """
  array = np.asarray(value) if isinstance(value, _NUMPY_VALUES) else (
      np.asarray(value, dtype=object))
  kind = array.dtype.kind
  if kind == 'S':
    return array.astype(object)
  if kind in 'UT':
    return np.vectorize(lambda s: s.encode('utf-8'), otypes=[object])(array)
  if kind != 'O':
    raise ValueError(f'{path}: dtype {array.dtype} does not match the feature '
                     'dtype string; strings must be str or bytes.')
  flat = array.ravel()
  if all(type(item) is bytes for item in flat):  # pylint: disable=unidiomatic-typecheck
    return array
  flat = flat.copy()  # The caller's array stays as it is.
  for i, item in enumerate(flat):
    if isinstance(item, bytes):  # np.bytes_ too.
      flat[i] = bytes(item)
    elif isinstance(item, str):
      flat[i] = item.encode('utf-8')
    else:
      index = tuple(int(d) for d in np.unravel_index(i, array.shape))
      where = f' at index {index}' if array.ndim else ''
      raise ValueError(f'{path}: {type(item).__name__} value {item!r}{where} '
                       'is not a string (str or bytes).')
  return flat.reshape(array.shape)


def _leaf_array(feature: tfds.features.Tensor, value: Any, path: str,
                batched: bool) -> np.ndarray:
  """``value`` as an array of the feature's dtype/shape (+ a batch axis)."""
  dtype = feature.np_dtype
  value = _to_numpy(value)
  if np.dtype(dtype) == object:  # A string feature: bytes, as TF gives them.
    array = np.asarray(_string_array(value, path), dtype=object)
  elif isinstance(value, _NUMPY_VALUES):
    array = np.asarray(value)
  else:  # Python values take the feature's dtype, as in TFDS.
    try:
      array = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError, OverflowError) as e:
      raise ValueError(
          f'{path}: cannot convert {type(value).__name__} to '
          f'{np.dtype(dtype)}: {e}') from e
  if array.dtype != dtype:
    array = _cast(array, dtype, path)
  shape = tuple(feature.shape)
  lead = array.shape[:1] if batched else ()
  item_shape = array.shape[len(lead):]
  if shape == () and item_shape == (1,):
    array = array.reshape(lead)
    item_shape = ()
  if len(item_shape) != len(shape) or any(
      s is not None and s != d for s, d in zip(shape, item_shape)):
    raise ValueError(f'{path}: shape {item_shape} does not match the '
                     f'feature shape {shape}.')
  return array


def exact_cast(array: np.ndarray, dtype: Any) -> Optional[np.ndarray]:
  """``array`` as ``dtype`` if no value changes, else None (floats never narrow).

    Example:
      >>> exact_cast(np.array([1, 2], np.int64), np.int32).dtype
      dtype('int32')
      >>> exact_cast(np.array([2**40]), np.int32) is None
      True
  """
  src, dst = array.dtype, np.dtype(dtype)
  if np.can_cast(src, dst, casting='safe'):
    return array.astype(dst)
  if src.kind not in 'iub' or dst.kind not in 'iubf':
    return None
  if array.size == 0:
    return array.astype(dst)
  if dst.kind == 'b':
    return array.astype(dst) if np.isin(array, (0, 1)).all() else None
  if dst.kind in 'iu':
    info = np.iinfo(dst)
    fits = int(array.min()) >= info.min and int(array.max()) <= info.max
    return array.astype(dst) if fits else None
  # Every integer of magnitude <= 2**(mantissa bits + 1) is a float exactly.
  bound = 2**(np.finfo(dst).nmant + 1)
  fits = -bound <= int(array.min()) and int(array.max()) <= bound
  return array.astype(dst) if fits else None


def _cast(array: np.ndarray, dtype: np.dtype, path: str) -> np.ndarray:
  """``array`` cast to ``dtype`` if no value changes; a ValueError otherwise."""
  if array.dtype == object or np.dtype(dtype) == object:
    raise ValueError(f'{path}: dtype {array.dtype} does not match the feature '
                     f'dtype {np.dtype(dtype)}.')
  cast = exact_cast(array, dtype)
  if cast is not None:
    return cast
  raise ValueError(
      f'{path}: dtype {array.dtype} does not match the feature dtype '
      f'{np.dtype(dtype)} and casting would change values; cast the data or '
      f'declare the feature as {array.dtype}.')


def _as_bytes(value: Any) -> bytes:
  if isinstance(value, (bytes, bytearray)):
    return bytes(value)
  if isinstance(value, str):
    return value.encode('utf-8')
  raise TypeError(f'expected bytes or str, got {type(value).__name__}')


def _flat_strings(value: Any) -> List[Any]:
  """The strings of nested lists/arrays (0-d arrays unwrapped), in order."""
  if isinstance(value, np.ndarray):
    if value.ndim == 0:
      return [value.item()]
    value = value.ravel().tolist()
  if isinstance(value, (list, tuple)):
    return [x for item in value for x in _flat_strings(item)]
  return [value]


class _PlainLeaf(NamedTuple):
  """A plain tensor feature, serialized straight from an array of its type."""
  key: str  # The flat key of the serialized example ('steps/reward').
  path: Tuple[str, ...]  # Where its value sits in an episode dict.
  dtype: np.dtype
  shape: Tuple[int, ...]  # Of one step (steps) or of the value (metadata).
  in_steps: bool
  write: Callable[[np.ndarray], bytes]


def _plain_writer(dtype: np.dtype, encoding: str
                  ) -> Optional[Callable[[np.ndarray], bytes]]:
  """How a plain tensor of ``dtype`` and ``encoding`` is serialized, or None.

  Numbers as TFDS stores them: floats in a ``float_list`` (as float32), bools
  (0/1) and integers in an ``int64_list`` (uint64 as its int64 bits);
  ``encoding='bytes'``: each value's bytes in a ``bytes_list``.
  """
  if encoding == 'bytes':
    return example_wire.fixed_size_bytes_feature
  if encoding != 'none':
    return None
  if dtype == object:
    return _strings_feature
  if dtype.kind == 'f':
    return example_wire.float_feature
  if dtype == np.uint64:
    return lambda array: example_wire.int64_feature(array.view(np.int64))
  if dtype.kind in 'biu':
    return example_wire.int64_feature
  return None


def _strings_feature(array: np.ndarray) -> Optional[bytes]:
  """The ``bytes_list`` of an object array of ``bytes``; None for other items."""
  items = array.ravel().tolist()
  if not all(type(item) is bytes for item in items):  # pylint: disable=unidiomatic-typecheck
    return None  # str (or worse): converted, or named, by the checked path.
  return example_wire.bytes_feature(items)


class _ByteRows(NamedTuple):
  """A byte-encoded tensor column whose rows' bytes are the stored values."""
  array: np.ndarray


def _feature_bytes(value: Any, info: Any, key: str) -> bytes:
  """The serialized ``tf.train.Feature`` TFDS writes for an encoded column."""
  if isinstance(value, _ByteRows):
    return example_wire.fixed_size_bytes_feature(value.array)
  dtype = np.dtype(info.np_dtype)
  rank = info.sequence_rank
  if dtype == object:  # Strings and encoded bytes.
    items = value
    if not isinstance(items, list) or any(
        not isinstance(x, (bytes, str)) for x in items):
      items = _flat_strings(value)
    try:
      return example_wire.bytes_feature([_as_bytes(x) for x in items])
    except TypeError as e:
      raise ValueError(f'{key}: cannot serialize as bytes: {e}') from e
  array = np.asarray(value, dtype=dtype)
  expected = tuple(info.shape)[rank:]
  actual = array.shape[rank:]
  if len(actual) != len(expected) or any(
      e is not None and e != a for e, a in zip(expected, actual)):
    raise ValueError(f'{key}: shape {actual} does not match {expected}.')
  write = _plain_writer(array.dtype, 'none')
  if write is None:
    raise ValueError(f'{key}: cannot serialize dtype {dtype}.')
  return write(array)


JPEG_QUALITY = 95
"""The JPEG quality TFDS writes (``tf.image.encode_jpeg``'s default)."""


def check_jpeg_quality(quality: Any) -> Optional[int]:
  """``quality`` as an int in [0, 100], or None (TFDS's default, 95).

  Example:
    >>> check_jpeg_quality(101)
    Traceback (most recent call last):
    ...
    ValueError: jpeg_quality must be None or an int in [0, 100], got 101.
  """
  if quality is None:
    return None
  if (isinstance(quality, bool) or not hasattr(quality, '__index__') or
      not 0 <= int(quality) <= 100):
    raise ValueError('jpeg_quality must be None or an int in [0, 100], got '
                     f'{quality!r}.')
  return int(quality)


@functools.lru_cache(maxsize=None)
def _jpeg_batch_encoder(dtype: tf.DType, shape: Tuple[int, ...],
                        quality: int = JPEG_QUALITY
                        ) -> Callable[[Any], tf.Tensor]:
  """A graph encoding ``[T, h, w, c]`` images as TFDS does, one call per batch."""

  @tf.function(input_signature=[tf.TensorSpec((None,) + shape, dtype)],
               autograph=False)
  def encode_batch(images):
    return tf.map_fn(lambda image: tf.image.encode_jpeg(image, quality=quality),
                     images, fn_output_signature=tf.TensorSpec([], tf.string))

  return encode_batch


def _writes_png(feature: Any) -> bool:
  """Whether `png.encode_png_batch` writes ``feature``'s images.

  A plain ``tfds.features.Image`` (not a subclass) of static shape, PNG
  encoded (TFDS's default), uint8 or uint16, with 1-4 channels.
  """
  return (type(feature) is tfds.features.Image and  # pylint: disable=unidiomatic-typecheck
          None not in feature.shape and
          (feature.encoding_format or 'png') == 'png' and
          feature.np_dtype in (np.uint8, np.uint16) and
          feature.shape[-1] in png.CHANNELS)


def _png_feature(frames: np.ndarray) -> bytes:
  """The serialized ``bytes_list`` feature of a ``[T, h, w, c]`` image column."""
  return example_wire.bytes_feature(png.encode_png_batch(frames))


def _png_image_feature(image: np.ndarray) -> bytes:
  """The serialized ``bytes_list`` feature of one ``[h, w, c]`` image."""
  return _png_feature(image[None])


def _lookup(episode: Any, path: Tuple[str, ...]) -> Any:
  """The value at ``path`` of nested plain dicts, or None."""
  for name in path:
    if type(episode) is not dict:  # pylint: disable=unidiomatic-typecheck
      return None
    episode = episode.get(name)
  return episode


def adjacent_runs(columns: Sequence[np.ndarray]
                  ) -> List[Tuple[int, int, np.ndarray]]:
  """Runs ``(start, stop, rows)`` of columns that are consecutive rows of one array.

    ``rows`` views the same memory (no copy); any other column is a run of its own.

    Example:
      >>> chunk = np.arange(12).reshape(6, 2)
      >>> columns = [chunk[0:2], chunk[2:5], np.zeros((1, 2), int), chunk[5:6]]
      >>> [(a, b, rows.shape) for a, b, rows in adjacent_runs(columns)]
      [(0, 2, (5, 2)), (2, 3, (1, 2)), (3, 4, (1, 2))]
  """
  runs = []
  start = 0
  for i in range(1, len(columns) + 1):
    if i < len(columns) and _continues(columns[start], columns[i - 1],
                                      columns[i]):
      continue
    runs.append((start, i, _joined(columns[start:i])))
    start = i
  return runs


def _address(array: np.ndarray) -> int:
  return array.__array_interface__['data'][0]


def _continues(first: np.ndarray, last: np.ndarray, column: np.ndarray
               ) -> bool:
  """Whether ``column`` continues the run ``first..last`` in memory."""
  base = first.base
  return (isinstance(base, np.ndarray) and base.flags.c_contiguous and
          column.base is base and
          first.flags.c_contiguous and column.flags.c_contiguous and
          column.dtype == first.dtype and column.shape[1:] == first.shape[1:]
          and _address(column) == _address(last) + last.nbytes)


def _joined(run: Sequence[np.ndarray]) -> np.ndarray:
  """The rows of a run (see `adjacent_runs`) as one array, uncopied."""
  first = run[0]
  if len(run) == 1:
    return first
  base = first.base
  rows = sum(len(column) for column in run)
  return np.ndarray((rows,) + first.shape[1:], first.dtype, buffer=base,
                    offset=_address(first) - _address(base))


def _png_column(feature: Any, column: Any) -> Optional[List[bytes]]:
  """PNG files of a column of ``feature`` images (see `_writes_png`), or None."""
  if not _writes_png(feature):
    return None
  column = _to_numpy(column)
  if (not isinstance(column, np.ndarray) or column.ndim != 4 or
      column.shape[1:] != tuple(feature.shape) or
      column.dtype != feature.np_dtype):
    return None
  return png.encode_png_batch(column)


def _png_image(feature: Any, image: Any) -> Optional[bytes]:
  """The PNG file of one ``feature`` image, or None (see `_png_column`)."""
  if not isinstance(image, np.ndarray):
    return None
  files = _png_column(feature, image[None])
  return None if files is None else files[0]


def _jpeg_image(feature: Any, image: Any, quality: int) -> Optional[bytes]:
  """One uint8 ``feature`` image as a JPEG file of ``quality``, or None."""
  if (type(feature) is not tfds.features.Image or  # pylint: disable=unidiomatic-typecheck
      feature.encoding_format != 'jpeg' or
      not isinstance(image, np.ndarray) or image.dtype != np.uint8 or
      image.ndim != 3):
    return None
  return tf.image.encode_jpeg(image, quality=quality).numpy()


def _batch_encodable_images(feature: Any, column: Any, encoding_format: str,
                            jpeg_quality: Optional[int] = None
                            ) -> Optional[List[bytes]]:
  """PNG/JPEG bytes of a column of images, one call per column, or None.

    Only for a plain static-shape integer ``tfds.features.Image`` whose column
    is already an array of its shape and dtype.
  """
  if type(feature) is not tfds.features.Image:  # pylint: disable=unidiomatic-typecheck
    return None
  encoding_format = encoding_format or 'png'
  if encoding_format == 'png':
    return _png_column(feature, column)
  shape = tuple(feature.shape)
  column = _to_numpy(column)
  if (encoding_format != 'jpeg' or None in shape or
      not isinstance(column, np.ndarray) or column.shape[1:] != shape or
      column.dtype != feature.np_dtype or column.dtype != np.uint8):
    return None
  encoder = _jpeg_batch_encoder(tf.as_dtype(column.dtype), shape,
                                JPEG_QUALITY if jpeg_quality is None
                                else jpeg_quality)
  return list(encoder(column).numpy())


class EpisodeEncoder:
  """Encodes/serializes episodes of an RLDS ``FeaturesDict``, column-wise.

  ``jpeg_quality`` (0-100) of the JPEG images written; None writes TFDS's bytes (95).

  Example:
    >>> import numpy as np
    >>> from rlds_lite.tfds.features import rlds_features
    >>> features = rlds_features({'reward': np.float32})
    >>> encoder = EpisodeEncoder(features)
    >>> record = encoder.serialize({'steps': {'reward': [0.5, 1.0],
    ...                                       'is_terminal': [False, True]}})
    >>> [bool(s['is_first']) for s in features.deserialize_example(record)['steps']]
    [True, False]
    >>> encoder.encode({'steps': {'reward': np.array([0.1]), 'is_terminal': [True]}})
    Traceback (most recent call last):
    ...
    ValueError: steps/reward: dtype float64 does not match the feature dtype float32 and casting would change values; cast the data or declare the feature as float64.
  """

  def __init__(self, features: tfds.features.FeaturesDict,
               jpeg_quality: Optional[int] = None):
    if (rlds_types.STEPS not in features.keys() or
        not isinstance(features[rlds_types.STEPS], tfds.features.Dataset)):
      raise ValueError('EpisodeEncoder: features need a '
                       f'{rlds_types.STEPS!r} tfds.features.Dataset entry.')
    self._features = features
    self._jpeg_quality = check_jpeg_quality(jpeg_quality)
    self._steps = features[rlds_types.STEPS]
    self._serializer = example_serializer.ExampleSerializer(
        features.get_serialized_info())
    self._json_contents: Dict[int, Any] = {}
    self._flat_specs = tfds.core.utils.flatten_nest_dict(
        features.get_serialized_info())
    # Nested sequences (ragged) are left to TFDS's serializer.
    self._columnar_serializable = all(
        info.sequence_rank <= 1 for info in self._flat_specs.values())
    self._dict_keys: Dict[Tuple[str, ...], frozenset] = {}
    self._plain = self._plain_leaves()

  def _plain_leaves(self) -> Optional[Tuple[_PlainLeaf, ...]]:
    """The leaves `_serialize_exact` writes, or None if a feature is not plain.

        Plain: static-shape ``Tensor``/``Scalar``/``Text`` features and PNG
        images (`_writes_png`); other dicts go to the checked path.
    """
    leaves = []

    def walk(feature: Any, path: Tuple[str, ...], in_steps: bool) -> bool:
      if isinstance(feature, tfds.features.FeaturesDict):
        self._dict_keys[path] = frozenset(feature.keys())
        return all(walk(feature[k], path + (k,), in_steps)
                   for k in feature.keys())
      if _writes_png(feature):
        leaves.append(_PlainLeaf(
            '/'.join(path), path, np.dtype(feature.np_dtype),
            tuple(feature.shape), in_steps,
            _png_feature if in_steps else _png_image_feature))
        return True
      if not _is_plain_tensor(feature) or None in feature.shape:
        return False
      dtype = np.dtype(feature.np_dtype)
      write = _plain_writer(dtype, self._tensor_encoding(feature))
      if write is None:
        return False
      leaves.append(_PlainLeaf('/'.join(path), path, dtype,
                               tuple(feature.shape), in_steps, write))
      return True

    self._dict_keys[()] = frozenset(self._features.keys())
    for key in self._features.keys():
      if key == rlds_types.STEPS:
        plain = walk(self._steps.feature, (key,), True)
      else:
        plain = walk(self._features[key], (key,), False)
      if not plain:
        return None
    if {leaf.key for leaf in leaves} != set(self._flat_specs):
      return None
    return tuple(leaves)

  def _serialize_exact(self, episode: Any,
                       pngs: Optional[Mapping[str, List[bytes]]] = None,
                       allow_bytearray: bool = False
                       ) -> Optional[Union[bytes, bytearray]]:
    """`serialize` for an episode already of the features' exact types, else None.

        ``pngs``: the PNG files of image step columns already encoded, by flat key.
    """
    if self._plain is None or type(episode) is not dict:  # pylint: disable=unidiomatic-typecheck
      return None
    for path, keys in self._dict_keys.items():
      node = episode
      for name in path:
        node = node[name]
      if type(node) is not dict or node.keys() != keys:  # pylint: disable=unidiomatic-typecheck
        return None
    length = None
    features = {}
    for leaf in self._plain:
      value = episode
      for name in leaf.path:
        value = value[name]
      if type(value) is not np.ndarray:  # pylint: disable=unidiomatic-typecheck
        if leaf.in_steps or not isinstance(value, np.generic):
          return None
        value = np.asarray(value)
      if value.dtype != leaf.dtype:
        return None
      if leaf.in_steps:
        if not value.ndim or value.shape[1:] != leaf.shape:
          return None
        if length is None:
          length = value.shape[0]
        elif value.shape[0] != length:
          return None
      elif value.shape != leaf.shape:
        return None
      if pngs and leaf.key in pngs:
        features[leaf.key] = example_wire.bytes_feature(pngs[leaf.key])
      else:
        record = leaf.write(value)
        if record is None:
          return None  # Strings that are not all bytes: left to `encode`.
        features[leaf.key] = record
    if not length:
      return None  # No steps: TFDS's own encoding of an empty sequence.
    return _example(features, allow_bytearray)

  @property
  def features(self) -> tfds.features.FeaturesDict:
    return self._features

  def encode(self, episode: Mapping[str, Any]) -> Dict[str, Any]:
    """The encoded episode, as ``features.encode_example`` returns it.

        ``episode`` is ``{'steps': steps, **metadata}`` (steps as
        `columnar_steps` takes them); missing ``is_first``/``is_last`` are
        derived, other problems are a ValueError naming the field.
    """
    return self._encode(episode, byte_rows=False)

  def _encode(self, episode: Mapping[str, Any], byte_rows: bool
              ) -> Dict[str, Any]:
    """`encode`; with ``byte_rows``, byte-encoded columns stay `_ByteRows`."""
    if not isinstance(episode, Mapping) or rlds_types.STEPS not in episode:
      raise ValueError(f'An episode must be a dict with a {rlds_types.STEPS!r} '
                       f'entry; got {type(episode).__name__}.')
    self._check_keys(self._features, episode, '')
    encoded = {}
    for key in self._features.keys():
      if key == rlds_types.STEPS:
        encoded[key] = self._encode_steps(episode[key], byte_rows)
      else:
        encoded[key] = self._encode_value(self._features[key], episode[key], key)
    return encoded

  def conform(self, episode: Mapping[str, Any]) -> Dict[str, Any]:
    """``episode`` with values TFDS's own ``encode_example`` accepts as is.

        Steps become columns of the features' dtypes and shapes (checked as in
        `encode`), flags are derived, and image columns TFDS would encode per
        frame become PNG (or JPEG) files; other values are left to TFDS.
    """
    if not isinstance(episode, Mapping) or rlds_types.STEPS not in episode:
      raise ValueError(f'An episode must be a dict with a {rlds_types.STEPS!r} '
                       f'entry; got {type(episode).__name__}.')
    self._check_keys(self._features, episode, '')
    conformed = {}
    for key in self._features.keys():
      if key == rlds_types.STEPS:
        columns = self._step_columns(episode[key])
        conformed[key] = (self._conform(self._steps.feature, columns, key, True)
                          if columns else [])
      else:
        conformed[key] = self._conform(self._features[key], episode[key], key,
                                       False)
    return conformed

  def _conform(self, feature: Any, value: Any, path: str, batched: bool) -> Any:
    if isinstance(feature, tfds.features.FeaturesDict):
      self._check_keys(feature, value, path)
      return {k: self._conform(feature[k], value[k], f'{path}/{k}', batched)
              for k in feature.keys()}
    if _is_plain_tensor(feature) and None not in feature.shape:
      return _leaf_array(feature, value, path, batched)
    value = _to_numpy(value)
    encoded = (_png_column(feature, value) if batched else
               _png_image(feature, value))
    if encoded is None and self._jpeg_quality is not None:
      encoded = (_batch_encodable_images(feature, value, 'jpeg',
                                         self._jpeg_quality)
                 if batched and type(feature) is tfds.features.Image and  # pylint: disable=unidiomatic-typecheck
                 feature.encoding_format == 'jpeg' else
                 _jpeg_image(feature, value, self._jpeg_quality))
    return value if encoded is None else encoded

  def serialize(self, episode: Mapping[str, Any],
                allow_bytearray: bool = False) -> Union[bytes, bytearray]:
    """The serialized ``tf.train.Example`` of ``episode`` (see `encode`).

        TFDS's bytes in canonical form (PNG files excepted), written from whole
        columns. An episode already of the exact dtypes and shapes is written
        straight from its arrays. ``allow_bytearray=True`` may return the
        ``bytearray`` the record was built in (no copy). A record over
        `MAX_RECORD_BYTES` is a `RecordTooLargeError`.
    """
    steps = (episode.get(rlds_types.STEPS) if isinstance(episode, Mapping)
             else None)
    if isinstance(steps, (list, tuple)):  # Step dicts: stacked once, here.
      episode = {**episode, rlds_types.STEPS: columnar_steps(steps)}
    record = self._serialize_exact(episode, allow_bytearray=allow_bytearray)
    if record is None:
      record = self._serialize_checked(episode, allow_bytearray)
    check_record_size(len(record))
    return record

  def serialize_many(self, episodes: Sequence[Mapping[str, Any]]
                     ) -> List[bytes]:
    """`serialize` of each episode, image columns of adjacent episodes encoded together.

        Example:
          >>> from rlds_lite.tfds.features import rlds_features
          >>> encoder = EpisodeEncoder(rlds_features(
          ...     {'image': tfds.features.Image(shape=(2, 2, 1))}))
          >>> frames = np.zeros((5, 2, 2, 1), np.uint8)
          >>> flags = np.zeros(5, bool)
          >>> episodes = [{'steps': {'image': frames[a:b], 'is_first': flags[a:b],
          ...                        'is_last': flags[a:b],
          ...                        'is_terminal': flags[a:b]}}
          ...             for a, b in [(0, 2), (2, 5)]]
          >>> [len(r) for r in encoder.serialize_many(episodes)] == [
          ...     len(encoder.serialize(e)) for e in episodes]
          True
    """
    episodes = list(episodes)
    pngs = self._png_runs(episodes)
    records = []
    for i, episode in enumerate(episodes):
      record = self._serialize_exact(
          episode, {key: files[i] for key, files in pngs.items()
                    if files[i] is not None})
      if record is None:
        record = self.serialize(episode)
      check_record_size(len(record))
      records.append(record)
    return records

  def _png_runs(self, episodes: List[Any]
                ) -> Dict[str, List[Optional[List[bytes]]]]:
    """``{flat key: each episode's PNG files or None}`` of image step columns in a run."""
    if self._plain is None or len(episodes) < 2:
      return {}
    encoded = {}
    for leaf in self._plain:
      if not (leaf.in_steps and leaf.write is _png_feature):
        continue
      columns = [_lookup(episode, leaf.path) for episode in episodes]
      exact = [type(c) is np.ndarray and c.dtype == leaf.dtype and  # pylint: disable=unidiomatic-typecheck
               c.ndim > 0 and c.shape[1:] == leaf.shape for c in columns]
      files: List[Optional[List[bytes]]] = [None] * len(columns)
      for is_exact, group in itertools.groupby(range(len(columns)),
                                               exact.__getitem__):
        group = list(group)
        if not is_exact or len(group) < 2:
          continue
        first = group[0]
        for a, b, rows in adjacent_runs(columns[first:group[-1] + 1]):
          if b - a < 2:
            continue
          pngs = png.encode_png_batch(rows)
          offset = 0
          for i in range(first + a, first + b):
            files[i] = pngs[offset:offset + len(columns[i])]
            offset += len(columns[i])
      if any(f is not None for f in files):
        encoded[leaf.key] = files
    return encoded

  def _serialize_checked(self, episode: Mapping[str, Any],
                         allow_bytearray: bool = False
                         ) -> Union[bytes, bytearray]:
    """`serialize` through `encode`: converts, derives flags, checks all."""
    if not self._columnar_serializable:
      return self._serializer.serialize_example(self.encode(episode))
    encoded = self._encode(episode, byte_rows=True)
    flat = tfds.core.utils.flatten_nest_dict(encoded)
    features = {}
    for key, info in self._flat_specs.items():
      value = flat[key]
      if value is None and info.optional:
        continue
      features[key] = _feature_bytes(value, info, key)
    return _example(features, allow_bytearray)

  def _check_keys(self, feature: tfds.features.FeaturesDict,
                  value: Mapping[str, Any], path: str,
                  optional: Sequence[str] = ()) -> None:
    if not isinstance(value, Mapping):
      raise ValueError(f'{path or "episode"}: expected a dict with fields '
                       f'{sorted(feature.keys())}, got {type(value).__name__}.')
    missing = sorted(set(feature.keys()) - set(value) - set(optional))
    extra = sorted(set(value) - set(feature.keys()))
    where = path or 'episode'
    if missing:
      raise ValueError(f'{where}: missing field(s) {missing}.')
    if extra:
      raise ValueError(f'{where}: field(s) {extra} are not in the dataset '
                       f'features {sorted(feature.keys())}.')

  def _step_columns(self, steps: Any) -> Dict[str, Any]:
    """Checked step columns, flags derived; ``{}`` for an empty episode."""
    columns = dict(columnar_steps(steps))
    step_feature = self._steps.feature
    if not columns:
      return {}
    self._check_keys(step_feature, columns, rlds_types.STEPS, optional=_FLAGS)
    lengths = {k: _column_length(v) for k, v in columns.items()}
    length = max(lengths.values())
    bad = {k: n for k, n in lengths.items() if n != length}
    if bad:
      raise ValueError(f'{rlds_types.STEPS}: all step fields must have the same '
                       f'number of steps; got lengths {lengths}.')
    index = np.arange(length)
    columns.setdefault(rlds_types.IS_FIRST, index == 0)
    columns.setdefault(rlds_types.IS_LAST, index == length - 1)
    return columns if length else {}

  def _encode_steps(self, steps: Any, byte_rows: bool) -> Dict[str, Any]:
    columns = self._step_columns(steps)
    if not columns:
      return self._steps.encode_example([])
    return self._encode_column(self._steps.feature, columns, rlds_types.STEPS,
                               byte_rows)

  def _encode_column(self, feature: Any, column: Any, path: str,
                     byte_rows: bool = False) -> Any:
    """Encodes a ``[T, ...]`` column of ``feature`` values.

    With ``byte_rows``, a byte-encoded tensor column is returned as
    `_ByteRows` (its rows' bytes, not yet split) for `serialize`.
    """
    if isinstance(feature, tfds.features.FeaturesDict):
      self._check_keys(feature, column, path)
      return {k: self._encode_column(feature[k], column[k], f'{path}/{k}',
                                     byte_rows)
              for k in feature.keys()}
    if _is_plain_tensor(feature) and None not in feature.shape:
      array = _leaf_array(feature, column, path, batched=True)
      encoding = self._tensor_encoding(feature)
      if encoding == 'none':
        return array
      if encoding == 'zlib':
        return [zlib.compress(row.tobytes()) for row in array]
      if byte_rows:
        return _ByteRows(array)
      return [row.tobytes() for row in array]
    images = None
    if type(feature) is tfds.features.Image:  # pylint: disable=unidiomatic-typecheck
      images = _batch_encodable_images(
          feature, column, self._json_content(feature).encoding_format,
          self._jpeg_quality)
    if images is not None:
      return images
    return self._encode_per_step(feature, column, path)

  def _json_content(self, feature: Any) -> Any:
    """``feature.to_json_content()``, cached (it is slow)."""
    key = id(feature)
    if key not in self._json_contents:
      self._json_contents[key] = feature.to_json_content()
    return self._json_contents[key]

  def _tensor_encoding(self, feature: tfds.features.Tensor) -> str:
    """'none', 'bytes' or 'zlib'."""
    if type(feature) is tfds.features.Text:  # pylint: disable=unidiomatic-typecheck
      return 'none'  # TFDS stores text as plain strings.
    return self._json_content(feature).encoding

  def _encode_per_step(self, feature: Any, column: Any, path: str) -> List[Any]:
    """TFDS's own per-step encoding, for features without a columnar one."""
    encoded = []
    for i, value in enumerate(column):
      try:
        encoded.append(self._encode_value(feature, value, f'{path}[{i}]'))
      except ValueError:
        raise
      except Exception as e:  # pylint: disable=broad-except
        raise ValueError(f'{path}[{i}]: cannot encode the value as '
                         f'{feature!r}: {e}') from e
    return tfds.features.sequence_feature.stack_nested(encoded)

  def _encode_value(self, feature: Any, value: Any, path: str) -> Any:
    """Encodes one (unbatched) value of ``feature``."""
    if isinstance(feature, tfds.features.FeaturesDict):
      self._check_keys(feature, value, path)
      return {k: self._encode_value(feature[k], value[k], f'{path}/{k}')
              for k in feature.keys()}
    value = _to_numpy(value)
    if _is_plain_tensor(feature):
      value = _leaf_array(feature, value, path, batched=False)
    else:
      encoded = _png_image(feature, value)
      if encoded is None and self._jpeg_quality is not None:
        encoded = _jpeg_image(feature, value, self._jpeg_quality)
      if encoded is not None:
        return encoded
    try:
      return feature.encode_example(value)
    except Exception as e:  # pylint: disable=broad-except
      raise ValueError(f'{path}: cannot encode the value as {feature!r}: '
                       f'{e}') from e
