"""Checks and preparation of the inputs of the pipeline builders.

Example:
  >>> import tensorflow as tf
  >>> check_positive_int(3, 'batch_size')
  3
"""

from typing import Any, Dict, Optional, Tuple

import tensorflow as tf

from rlds_lite import nest_paths
from rlds_lite import rlds_types
from rlds_lite.dense import conversion
from rlds_lite.dense import indexing


def check_positive_int(value: Any, name: str) -> int:
  """``value`` as an int if it is a positive (non-bool) integer.

  Example:
    >>> check_positive_int(0, 'batch_size')
    Traceback (most recent call last):
    ...
    ValueError: batch_size must be a positive int, got 0.
  """
  return indexing.check_positive_int(value, name)


def is_int(value: Any) -> bool:
  """Whether ``value`` is an integer (not a bool).

  Example:
    >>> is_int(3), is_int(True), is_int(2.0)
    (True, False, False)
  """
  return not isinstance(value, bool) and hasattr(value, '__index__')


def check_non_negative_int(value: Any, name: str) -> int:
  """``value`` as an int if it is a non-negative (non-bool) integer.

  Example:
    >>> check_non_negative_int(-1, 'episode_shuffle_buffer')
    Traceback (most recent call last):
    ...
    ValueError: episode_shuffle_buffer must be a non-negative int, got -1.
  """
  if isinstance(value, bool) or not hasattr(value, '__index__'):
    raise TypeError(f'{name} must be a non-negative int, got '
                    f'{type(value).__name__}.')
  value = int(value.__index__())
  if value < 0:
    raise ValueError(f'{name} must be a non-negative int, got {value}.')
  return value


def check_seed(seed: Any) -> Optional[int]:
  """``seed`` as an int, or None (a fresh random seed).

  Example:
    >>> check_seed('x')
    Traceback (most recent call last):
    ...
    TypeError: seed must be an int or None, got str.
  """
  if seed is None:
    return None
  if isinstance(seed, bool) or not hasattr(seed, '__index__'):
    raise TypeError(f'seed must be an int or None, got '
                    f'{type(seed).__name__}.')
  return int(seed.__index__())


def dense_episodes(episodes: tf.data.Dataset) -> tf.data.Dataset:
  """``episodes`` with dense steps (nested steps datasets are converted).

  Example:
    >>> steps = tf.data.Dataset.from_tensor_slices({'x': [1, 2]})
    >>> ds = dense_episodes(tf.data.Dataset.from_tensors({'steps': steps}))
    >>> ds.element_spec['steps']['x'].shape
    TensorShape([None])
  """
  if not isinstance(episodes, tf.data.Dataset):
    raise TypeError(f'episodes must be a tf.data.Dataset of episodes, '
                    f'got {type(episodes).__name__}.')
  spec = episodes.element_spec
  if not isinstance(spec, dict) or rlds_types.STEPS not in spec:
    raise TypeError(f'episodes must be dicts with a {rlds_types.STEPS!r} '
                    f'field; got elements {spec}.')
  if isinstance(spec[rlds_types.STEPS], tf.data.DatasetSpec):
    return conversion.to_dense(episodes)
  if not isinstance(spec[rlds_types.STEPS], dict):
    raise TypeError(f'episode field {rlds_types.STEPS!r} must be a dataset '
                    f'of steps or a dict of [T, ...] tensors, got '
                    f'{spec[rlds_types.STEPS]}.')
  return episodes


def check_step_shapes(episodes: tf.data.Dataset) -> None:
  """Raises a ValueError if a step field's shape beyond the time axis is unknown.

  Example:
    >>> ds = tf.data.Dataset.from_tensors({'steps': {'x': tf.zeros([2, 3])}})
    >>> check_step_shapes(ds)
  """
  spec = episodes.element_spec[rlds_types.STEPS]
  for path, leaf in nest_paths.flatten_with_paths(spec):
    dims = leaf.shape.as_list() if leaf.shape.rank is not None else None
    if dims is None or any(d is None for d in dims[1:]):
      raise ValueError(
          f'step field {path!r} has shape {leaf.shape}; pooled batches '
          'need every step field to have a known shape beyond the time axis '
          '(resize or pad it first).')


def episode_values(episode: Dict[str, Any], fields: Tuple[str, ...],
                   num_samples: tf.Tensor) -> Dict[str, Any]:
  """Episode metadata ``fields`` repeated once per sample (leading axis N).

  Example:
    >>> out = episode_values({'id': tf.constant(7)}, ('id',), tf.constant(3))
    >>> out['id'].numpy().tolist()
    [7, 7, 7]
  """

  def tile(value: tf.Tensor) -> tf.Tensor:
    return tf.repeat(tf.expand_dims(value, 0), num_samples, axis=0)

  return {f: tf.nest.map_structure(tile, episode[f]) for f in fields}


def check_episode_fields(episodes: tf.data.Dataset, fields: Any,
                         reserved: Any) -> Tuple[str, ...]:
  """Validates ``episode_fields``: names of episode metadata, no collisions.

  Example:
    >>> ds = tf.data.Dataset.from_tensors({'steps': {'x': [1]}, 'id': 1})
    >>> check_episode_fields(ds, ['id'], ['x'])
    ('id',)
  """
  if isinstance(fields, str):
    fields = (fields,)
  fields = tuple(fields)
  spec = episodes.element_spec
  available = sorted(k for k in spec if k != rlds_types.STEPS)
  for field in fields:
    if field == rlds_types.STEPS or field not in spec:
      raise ValueError(f'episode_fields names {field!r}, which is not '
                       f'episode metadata; the episodes have {available}.')
    if field in reserved:
      raise ValueError(f'episode field {field!r} has the name of a '
                       'field of the samples; rename it first.')
  return fields
