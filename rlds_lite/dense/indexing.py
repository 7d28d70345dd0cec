"""Index-based selection on dense steps (``[T, ...]`` leaves): one ``tf.gather`` per leaf, and the input checks.

Example:
  >>> import tensorflow as tf
  >>> steps = {'observation': tf.constant([0.0, 1.0, 2.0]),
  ...          'is_last': tf.constant([False, False, True])}
  >>> int(episode_length(steps))
  3
  >>> gather_steps(steps, tf.constant([[0, 1], [1, 2]]))['observation'].numpy().tolist()
  [[0.0, 1.0], [1.0, 2.0]]
"""

from typing import Any, Dict, Iterable, Mapping, Optional

import tensorflow as tf

from rlds_lite import nest_paths
from rlds_lite import rlds_types


def as_dense_steps(steps: Any) -> Dict[str, Any]:
  """``steps`` checked as dense steps (one leading time axis), every leaf a ``tf.Tensor``.

  Example:
    >>> sorted(as_dense_steps({'reward': tf.constant([1.0, 2.0])}))
    ['reward']
  """
  if isinstance(steps, tf.data.Dataset):
    raise TypeError(
        'steps is a tf.data.Dataset of steps; dense ops take dense '
        'steps (a dict of [T, ...] tensors). Convert episodes with '
        'rlds_lite.dense.to_dense or steps with rlds_lite.dense.dense_episode.')
  if not isinstance(steps, Mapping):
    raise TypeError(
        f'steps must be a dict of [T, ...] tensors, got '
        f'{type(steps).__name__}.')
  if not steps:
    raise ValueError('steps has no field.')
  converted = {}
  for key, value in steps.items():
    try:
      converted[key] = tf.nest.map_structure(tf.convert_to_tensor, value)
    except (TypeError, ValueError) as e:
      raise TypeError(
          f'step field {key!r} is not a (nested) tensor: {e}') from e
  lengths = {}
  for path, leaf in nest_paths.flatten_with_paths(converted):
    if leaf.shape.rank == 0:
      raise ValueError(
          f'step field {path!r} is a scalar; every field of dense steps '
          'needs a leading time axis [T, ...].')
    if leaf.shape.rank is not None and leaf.shape[0] is not None:
      lengths[path] = leaf.shape[0]
  if len(set(lengths.values())) > 1:
    raise ValueError(
        f'step fields have different lengths (leading dims) {lengths}.')
  return converted


def require_fields(steps: Mapping[str, Any], fields: Iterable[str]) -> None:
  """Raises a ValueError naming the first of ``fields`` missing in ``steps``.

  Example:
    >>> require_fields({'reward': 0}, ['observation'])
    Traceback (most recent call last):
    ...
    ValueError: needs the step field 'observation'; steps has ['reward'].
  """
  for field in fields:
    if field not in steps:
      raise ValueError(f'needs the step field {field!r}; steps has '
                       f'{sorted(steps)}.')


def reject_fields(steps: Mapping[str, Any], fields: Iterable[str]) -> None:
  """Raises a ValueError if ``steps`` already has a field the caller would add.

  Example:
    >>> reject_fields({'mask': 0}, ['mask'])
    Traceback (most recent call last):
    ...
    ValueError: adds the field 'mask' but steps already has it; rename it first.
  """
  for field in fields:
    if field in steps:
      raise ValueError(f'adds the field {field!r} but steps already has '
                       'it; rename it first.')


def check_positive_int(value: Any, name: str) -> int:
  """Returns ``value`` as an int if it is a positive (non-bool) integer.

  Example:
    >>> check_positive_int(0, 'size')
    Traceback (most recent call last):
    ...
    ValueError: size must be a positive int, got 0.
  """
  if isinstance(value, bool) or not hasattr(value, '__index__'):
    raise TypeError(
        f'{name} must be a positive int, got {type(value).__name__}.')
  value = int(value.__index__())
  if value < 1:
    raise ValueError(f'{name} must be a positive int, got {value}.')
  return value


def episode_length(steps: Mapping[str, Any]) -> tf.Tensor:
  """``T`` of dense steps, an int32 scalar (from ``is_last`` if present; static when known).

  Example:
    >>> int(episode_length({'reward': tf.zeros([5, 2])}))
    5
  """
  if rlds_types.IS_LAST in steps:
    leaf = tf.nest.flatten(steps[rlds_types.IS_LAST])[0]
  else:
    leaf = tf.nest.flatten(steps)[0]
  leaf = tf.convert_to_tensor(leaf)
  if leaf.shape.rank is not None and leaf.shape[0] is not None:
    return tf.constant(leaf.shape[0], tf.int32)
  return tf.shape(leaf, out_type=tf.int32)[0]


def broadcast_mask(mask: tf.Tensor, like: tf.Tensor) -> tf.Tensor:
  """``mask`` with trailing size-1 axes added to broadcast against ``like``.

  Example:
    >>> broadcast_mask(tf.constant([True, False]), tf.zeros([2, 3, 4])).shape
    TensorShape([2, 1, 1])
  """
  mask_rank = mask.shape.rank
  if mask_rank is not None and like.shape.rank is not None:
    return tf.reshape(mask, tf.concat(
        [tf.shape(mask), tf.ones([like.shape.rank - mask_rank], tf.int32)], 0))
  extra = tf.rank(like) - tf.rank(mask)
  return tf.reshape(mask, tf.concat(
      [tf.shape(mask), tf.ones(tf.reshape(extra, [1]), tf.int32)], 0))


def gather_steps(steps: Any, indices: tf.Tensor,
                 mask: Optional[tf.Tensor] = None) -> Any:
  """Every leaf of ``steps`` gathered along time at ``indices`` (``[T, ...]`` -> ``[*indices.shape, ...]``).

  Where ``mask`` (shaped like ``indices``) is False the values are zeros
  (``b''`` / False).

  Example:
    >>> out = gather_steps({'r': tf.constant([1, 2, 3])}, tf.constant([[2, 0]]),
    ...                    mask=tf.constant([[True, False]]))
    >>> out['r'].numpy().tolist()
    [[3, 0]]
  """

  def gather(leaf: tf.Tensor) -> tf.Tensor:
    gathered = tf.gather(leaf, indices)
    if mask is None:
      return gathered
    return tf.where(broadcast_mask(mask, gathered), gathered,
                    tf.zeros_like(gathered))

  return tf.nest.map_structure(gather, steps)
