"""TFDS features and RLDS dataset configs inferred from data or specs.

Upstream ``rlds.tfds``'s ``generate_config_from_spec`` and
``extract_feature_from_data``, with its defects fixed (``docs/upstream.md``).
"""

from typing import Any, Dict, List, Mapping, Optional, Union

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import rlds_types

__all__ = ['extract_feature_from_data', 'generate_config_from_spec']

_STEP_KEYS = (rlds_types.OBSERVATION, rlds_types.ACTION, rlds_types.DISCOUNT,
              rlds_types.REWARD, rlds_types.IS_LAST, rlds_types.IS_FIRST,
              rlds_types.IS_TERMINAL)
_IMAGE_HINTS = ('image', 'pixels')
_TOP_LEVEL_IMAGE_CHANNELS = (1, 3, 4)

Encoding = tfds.features.Encoding


def _shape_and_dtype(data: Any, field_name: Optional[str]):
  """``(shape tuple or None, np.dtype)`` of a spec, array, tensor or scalar."""
  if hasattr(data, 'shape') and hasattr(data, 'dtype'):
    shape = tf.TensorShape(data.shape)
    dims = None if shape.rank is None else tuple(shape.as_list())
    try:
      dtype = tf.as_dtype(data.dtype)
    except TypeError as e:
      raise ValueError(f'Field {field_name!r}: dtype {data.dtype!r} is not '
                       'supported by TFDS.') from e
    if dtype.is_complex or dtype in (tf.resource, tf.variant):
      raise ValueError(f'Field {field_name!r}: dtype {dtype.name} is not '
                       'supported by TFDS.')
    return dims, dtype
  if isinstance(data, (str, bytes)):
    return (), tf.string
  array = np.asarray(data)
  if array.dtype == object:
    raise ValueError(f'Field {field_name!r}: cannot infer a TFDS feature from '
                     f'{type(data).__name__} value {data!r}.')
  return array.shape, tf.as_dtype(array.dtype)


def _is_image_name(field_name: Optional[str]) -> bool:
  return bool(field_name) and any(
      hint in field_name.lower() for hint in _IMAGE_HINTS)


def _is_image(shape, dtype: tf.DType, field_name: Optional[str],
              image_encoding: Optional[str]) -> bool:
  """Whether a value of ``shape``/``dtype`` named ``field_name`` is an image.

  A field whose name hints an image (``image``, ``pixels``) is one if it is a
  string scalar (already encoded) or an ``(h, w, c)`` array TFDS can encode.
  An unnamed (top-level) value is one if it is a uint8 ``(h, w, c)`` array
  with 1, 3 or 4 channels.
  """
  try:
    tfds.features.image_feature.get_and_validate_encoding(image_encoding)
  except ValueError:
    return False
  named = _is_image_name(field_name)
  if not named and field_name is not None:
    return False
  if shape is None:
    return False
  if shape == ():
    return named and dtype == tf.string
  if len(shape) != 3 or None in shape[:2]:
    return False
  channels = shape[-1]
  if not named and (dtype != tf.uint8 or
                    channels not in _TOP_LEVEL_IMAGE_CHANNELS):
    return False
  try:
    tfds.features.image_feature.get_and_validate_shape(shape, image_encoding)
    tfds.features.image_feature.get_and_validate_dtype(
        dtype.as_numpy_dtype, image_encoding)
  except ValueError:
    return False
  if channels in (0, None):
    return False
  # TFDS encodes float32 images only as 1-channel PNGs.
  return dtype != tf.float32 or channels == 1


def _is_scalar(shape, squeeze: bool) -> bool:
  """Whether ``shape`` is a scalar (or ``(1,)`` when ``squeeze``)."""
  return shape == () or (squeeze and shape == (1,))


def _tensor_feature(shape, dtype: tf.DType, squeeze: bool,
                    tensor_encoding) -> Any:
  """The TFDS feature of a non-image value (float64 kept exact)."""
  if shape is None:
    raise ValueError('TFDS needs tensors of known rank.')
  encoding = Encoding(tensor_encoding)
  if _is_scalar(shape, squeeze):
    if dtype == tf.float64:
      return tfds.features.Tensor(shape=(), dtype=np.float64,
                                  encoding=Encoding.BYTES)
    return dtype
  if dtype == tf.string:
    encoding = Encoding.NONE  # TFDS cannot byte-encode string tensors.
  elif encoding == Encoding.NONE and (dtype == tf.float64 or
                                      shape.count(None) > 1 or 0 in shape):
    # float64 would be stored as float32; several unknown dims need bytes;
    # a zero-size step field as plain values is read with a division by zero.
    encoding = Encoding.ZLIB if shape.count(None) > 1 else Encoding.BYTES
  return tfds.features.Tensor(shape=shape, dtype=dtype, encoding=encoding)


def extract_feature_from_data(
    data: Union[Dict[str, Any], List[Any], Any],
    use_images: bool,
    image_encoding: Optional[str],
    field_name: Optional[str] = None,
    squeeze_scalars: bool = True,
    convert_tuple_to_list: bool = False,
    tensor_encoding=tfds.features.Encoding.ZLIB,
) -> Union[tfds.features.FeatureConnector, tf.DType]:
  """The TFDS feature describing ``data`` (a nested structure of values or specs).

    Args:
      data: nested dicts/lists of arrays, tensors, scalars or specs (anything
        with ``shape`` and ``dtype``).
      use_images: detect images (fields named like ``image``/``pixels``, a
        top-level uint8 ``(h, w, c)`` array).
      image_encoding: the encoding of detected images (``'png'``, ``'jpeg'``).
      field_name: the name of ``data`` in its parent dict, if any.
      squeeze_scalars: shape ``(1,)`` becomes a scalar feature.
      convert_tuple_to_list: tuples become ``Sequence`` s (else an error).
      tensor_encoding: the ``tfds.features.Encoding`` of non-scalar tensors.

    Example:
      >>> feature = extract_feature_from_data({'pos': np.zeros(2), 'r': 1.5},
      ...                                     use_images=False, image_encoding=None)
      >>> feature['pos'].dtype, feature['r'].dtype, feature['r'].shape
      (tf.float64, tf.float64, ())
  """
  recurse = lambda value, name: extract_feature_from_data(  # pylint: disable=g-long-lambda
      value, use_images, image_encoding, name, squeeze_scalars,
      convert_tuple_to_list, tensor_encoding)
  if isinstance(data, Mapping):
    return tfds.features.FeaturesDict(
        {k: recurse(v, k) for k, v in data.items()})
  if isinstance(data, tuple) and not hasattr(data, 'shape'):
    if not convert_tuple_to_list:
      raise ValueError(
          f'Field {field_name!r}: tuples are not supported in TFDS; use '
          'dictionaries or lists instead (or convert_tuple_to_list=True).')
    data = list(data)
  if isinstance(data, list):
    if not data:
      raise ValueError(
          f'Field {field_name!r}: cannot infer the feature of an empty list.')
    return tfds.features.Sequence(feature=recurse(data[0], field_name))
  shape, dtype = _shape_and_dtype(data, field_name)
  if use_images and _is_image(shape, dtype, field_name, image_encoding):
    if not image_encoding:
      raise ValueError('Image encoding is not defined.')
    if shape == ():
      return tfds.features.Image(encoding_format=image_encoding)
    return tfds.features.Image(shape=shape, dtype=dtype.as_numpy_dtype,
                               encoding_format=image_encoding)
  try:
    return _tensor_feature(shape, dtype, squeeze_scalars, tensor_encoding)
  except ValueError as e:
    raise ValueError(f'Field {field_name!r}: {e}') from e


def _step_spec(episode_spec: Mapping[str, Any]) -> Mapping[str, Any]:
  """The per-step spec of an episode spec (a steps DatasetSpec or a dict)."""
  if rlds_types.STEPS not in episode_spec:
    raise ValueError(f'episode_spec has no {rlds_types.STEPS!r} entry; its '
                     f'keys: {sorted(episode_spec)}.')
  steps = episode_spec[rlds_types.STEPS]
  step_spec = getattr(steps, 'element_spec', steps)
  if not isinstance(step_spec, Mapping):
    raise ValueError(
        f'episode_spec[{rlds_types.STEPS!r}] must be a steps dataset spec or a '
        f'dict of step specs, got {type(steps).__name__}.')
  return step_spec


def generate_config_from_spec(
    episode_spec: Mapping[str, Any],
    name: str = 'default_config',
    use_images: bool = True,
    image_encoding: str = 'png') -> tfds.rlds.rlds_base.DatasetConfig:
  """An RLDS ``tfds.rlds.rlds_base.DatasetConfig`` from an episode spec.

    ``episode_spec['steps']`` is a ``tf.data.DatasetSpec`` or a dict of
    per-step specs; other entries are episode metadata. ``use_images`` and
    ``image_encoding`` as in `extract_feature_from_data`.

    Example:
      >>> import tensorflow as tf
      >>> spec = {'steps': {'observation': tf.TensorSpec([84, 84, 3], tf.uint8),
      ...                   'action': tf.TensorSpec([], tf.int64),
      ...                   'reward': tf.TensorSpec([], tf.float64),
      ...                   'is_first': tf.TensorSpec([], tf.bool),
      ...                   'is_last': tf.TensorSpec([], tf.bool)},
      ...         'episode_id': tf.TensorSpec([], tf.int64)}
      >>> config = generate_config_from_spec(spec)
      >>> config.observation_info
      Image(shape=(84, 84, 3), dtype=uint8)
      >>> config.reward_info.to_json_content().encoding, config.discount_info
      ('bytes', None)
  """
  extract = lambda value, key: extract_feature_from_data(  # pylint: disable=g-long-lambda
      value, use_images, image_encoding, key)
  step_spec = _step_spec(episode_spec)
  info = {}
  for key, config_key in ((rlds_types.OBSERVATION, 'observation_info'),
                          (rlds_types.ACTION, 'action_info'),
                          (rlds_types.REWARD, 'reward_info'),
                          (rlds_types.DISCOUNT, 'discount_info')):
    info[config_key] = (extract(step_spec[key], None)
                        if key in step_spec else None)
  return tfds.rlds.rlds_base.DatasetConfig(  # pytype: disable=wrong-keyword-args
      name=name,
      episode_metadata_info={
          k: extract(v, k)
          for k, v in episode_spec.items()
          if k != rlds_types.STEPS
      },
      step_metadata_info={
          k: extract(v, k) for k, v in step_spec.items() if k not in _STEP_KEYS
      },
      **info)
