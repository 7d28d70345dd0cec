"""Build tensors and datasets from element specs (zeros, uniform noise, sizes)."""

import sys
from typing import Any, Optional, Tuple

import tensorflow as tf

ASSUMED_STRING_BYTES = 64
"""Bytes a string element is assumed to take when sizing batches."""


def _concrete_shape(shape: tf.TensorShape) -> Tuple[int, ...]:
  """The shape with every unknown dimension (e.g. a batch dim) set to 1."""
  if shape.rank is None:
    return ()
  return tuple(1 if dim is None else dim for dim in shape.as_list())


def _leaf_size_in_bytes(spec: Any) -> int:
  if not isinstance(spec, tf.TensorSpec):
    raise TypeError(f'cannot size a {type(spec).__name__}')
  if spec.shape.rank is None:
    raise TypeError('cannot size a tensor of unknown rank')
  elements = 1
  for dim in _concrete_shape(spec.shape):
    elements *= dim
  item = ASSUMED_STRING_BYTES if spec.dtype == tf.string else spec.dtype.size
  return max(1, item) * elements


def size_from_spec(spec: Any) -> int:
  """Estimated size in bytes of one element with structure ``spec``.

    Unknown dimensions count as 1, a string as ``ASSUMED_STRING_BYTES``;
    ``sys.maxsize`` when it cannot be estimated (nested datasets, ragged).

    Example:
      >>> size_from_spec((tf.TensorSpec([3], tf.float32), tf.TensorSpec([], tf.int64)))
      20
  """
  try:
    return max(1, sum(_leaf_size_in_bytes(s) for s in tf.nest.flatten(spec)))
  except TypeError:
    return sys.maxsize


def zeros_from_spec(spec: Any) -> Any:
  """A structure of zero tensors matching ``spec`` (unknown dims become 1).

  Strings become ``b''`` and booleans ``False``.

  Example:
    >>> zeros_from_spec(tf.TensorSpec([None, 2], tf.int32)).shape
    TensorShape([1, 2])
  """
  return tf.nest.map_structure(
      lambda s: tf.zeros(_concrete_shape(s.shape), s.dtype), spec)


def uniform_from_spec(spec: Any,
                      minval: Any = 0,
                      maxval: Optional[Any] = None,
                      seed: Optional[int] = None) -> Any:
  """A structure of uniformly random tensors in ``[minval, maxval)``.

    Unknown dims become 1; floats default to ``maxval=1``, integers need it.

    Example:
      >>> x = uniform_from_spec(tf.TensorSpec([3], tf.float32), 2.0, 3.0, seed=1)
      >>> bool(tf.reduce_all((x >= 2.0) & (x < 3.0)))
      True
  """

  def uniform(s: tf.TensorSpec) -> tf.Tensor:
    shape = _concrete_shape(s.shape)
    if s.dtype == tf.bool:
      draws = tf.random.uniform(shape, 0, 2, dtype=tf.int32, seed=seed)
      return tf.cast(draws, tf.bool)
    if s.dtype == tf.string:
      raise TypeError('uniform_from_spec cannot sample a tf.string field.')
    if s.dtype.is_integer and maxval is None:
      raise ValueError(
          f'uniform_from_spec needs maxval for the integer dtype {s.dtype.name}.')
    if s.dtype.is_integer and s.dtype not in (tf.int32, tf.int64):
      # tf.random.uniform draws only int32/int64 integers (e.g. not uint8).
      draws = tf.random.uniform(
          shape, minval=minval, maxval=maxval, dtype=tf.int64, seed=seed)
      return tf.cast(draws, s.dtype)
    if not s.dtype.is_floating and not s.dtype.is_integer:
      raise TypeError(
          f'uniform_from_spec cannot sample the dtype {s.dtype.name}.')
    return tf.random.uniform(
        shape, minval=minval, maxval=maxval, dtype=s.dtype, seed=seed)

  return tf.nest.map_structure(uniform, spec)


def zero_dataset_like(ds: tf.data.Dataset) -> tf.data.Dataset:
  """A one-element dataset of zeros with the element structure of ``ds``.

  Example:
    >>> ds = tf.data.Dataset.from_tensor_slices({'r': [1.0, 2.0]})
    >>> [e['r'].numpy() for e in zero_dataset_like(ds)]
    [np.float32(0.0)]
  """
  return tf.data.Dataset.from_tensors(zeros_from_spec(ds.element_spec))
