"""Convert episodes between nested steps datasets and dense ``[T, ...]`` steps.

Example:
  >>> import tensorflow as tf
  >>> steps = tf.data.Dataset.from_tensor_slices({'reward': [1.0, 2.0]})
  >>> episodes = tf.data.Dataset.from_tensors({'steps': steps, 'episode_id': 3})
  >>> dense = next(iter(to_dense(episodes)))
  >>> dense['steps']['reward'].numpy().tolist(), int(dense['episode_id'])
  ([1.0, 2.0], 3)
"""

from typing import Any, Dict

import tensorflow as tf

from rlds_lite import op_context
from rlds_lite import nest_paths
from rlds_lite import rlds_types
from rlds_lite.dense import indexing

_ALL_STEPS = tf.int64.max
"""A batch size no episode reaches: batching by it yields the whole episode."""
_CHUNK_STEPS = 1024
"""Steps batched at once before the chunks are concatenated."""


def _zero_length(spec: Any) -> Any:
  """Tensors of ``spec`` with a zero-length leading axis (unknown dims -> 0)."""

  def empty(leaf_spec: tf.TensorSpec) -> tf.Tensor:
    dims = [0 if d is None else d for d in leaf_spec.shape.as_list()]
    return tf.zeros([0] + dims, leaf_spec.dtype)

  return tf.nest.map_structure(empty, spec)


def _check_tensor_specs(spec: Any) -> None:
  for path, leaf in nest_paths.flatten_with_paths(spec):
    if (not isinstance(leaf, tf.TensorSpec) or leaf.shape.rank is None):
      raise TypeError(
          f'step field {path or "<root>"!r} has spec {leaf}; only '
          'tensors of known rank can be made dense.')


@op_context.named('dense_episode')
def dense_episode(steps: tf.data.Dataset) -> Any:
  """The steps of one episode as dense ``[T, ...]`` tensors (eager or in a map).

  Args:
    steps: a ``tf.data.Dataset`` of steps (dicts, possibly nested).

  Example:
    >>> ds = tf.data.Dataset.from_tensor_slices({'a': tf.zeros([0, 2])})
    >>> dense_episode(ds)['a'].shape
    TensorShape([0, 2])
  """
  if not isinstance(steps, tf.data.Dataset):
    raise TypeError(
        f'steps must be a tf.data.Dataset of steps, got '
        f'{type(steps).__name__}.')
  _check_tensor_specs(steps.element_spec)
  fallback = tf.data.Dataset.from_tensors(_zero_length(steps.element_spec))
  # batch(_ALL_STEPS) alone would reserve room for that many steps when the
  # cardinality is unknown (e.g. after a map): batch in chunks, then rebatch
  # (which concatenates without reserving).
  whole = steps.batch(_CHUNK_STEPS).rebatch(_ALL_STEPS)
  return whole.concatenate(fallback).take(1).get_single_element()


def _episodes_spec(episodes: tf.data.Dataset) -> Dict[str, Any]:
  if not isinstance(episodes, tf.data.Dataset):
    raise TypeError(
        f'episodes must be a tf.data.Dataset of episodes, got '
        f'{type(episodes).__name__}.')
  spec = episodes.element_spec
  if not isinstance(spec, dict) or rlds_types.STEPS not in spec:
    raise TypeError(
        f"episodes must be dicts with a {rlds_types.STEPS!r} field; "
        f'got elements {spec}.')
  return spec


@op_context.named('to_dense')
def to_dense(episodes: tf.data.Dataset) -> tf.data.Dataset:
  """Episodes with ``steps`` as a dict of ``[T, ...]`` tensors, metadata kept.

  ``rlds_lite.load(..., dense=True)`` reads a TFDS dataset this way, faster.

  Args:
    episodes: episodes whose ``steps`` is a dataset of steps.

  Example:
    >>> steps = tf.data.Dataset.from_tensor_slices({'reward': tf.zeros([0])})
    >>> episodes = tf.data.Dataset.from_tensors({'steps': steps})
    >>> to_dense(episodes).element_spec
    {'steps': {'reward': TensorSpec(shape=(None,), dtype=tf.float32, name=None)}}
  """
  spec = _episodes_spec(episodes)
  if not isinstance(spec[rlds_types.STEPS], tf.data.DatasetSpec):
    raise TypeError(
        f'episode field {rlds_types.STEPS!r} must be a nested dataset of '
        f'steps, got {spec[rlds_types.STEPS]} (already dense?).')
  _check_tensor_specs(spec[rlds_types.STEPS].element_spec)

  def densify(episode: Dict[str, Any]) -> Dict[str, Any]:
    return {**episode, rlds_types.STEPS: dense_episode(episode[rlds_types.STEPS])}

  return episodes.map(densify, num_parallel_calls=tf.data.AUTOTUNE,
                      deterministic=True)


@op_context.named('to_nested')
def to_nested(episodes: tf.data.Dataset) -> tf.data.Dataset:
  """Episodes with ``steps`` as a nested ``tf.data.Dataset`` (the inverse of ``to_dense``).

  Args:
    episodes: episodes whose ``steps`` is a dict of ``[T, ...]`` tensors.

  Example:
    >>> episodes = tf.data.Dataset.from_tensors({'steps': {'reward': [1.0, 2.0]}})
    >>> [s['reward'].numpy().tolist() for e in to_nested(episodes) for s in e['steps']]
    [1.0, 2.0]
  """
  spec = _episodes_spec(episodes)
  steps_spec = spec[rlds_types.STEPS]
  if isinstance(steps_spec, tf.data.DatasetSpec):
    raise TypeError(
        f'episode field {rlds_types.STEPS!r} is already a nested dataset '
        'of steps.')
  if not isinstance(steps_spec, dict):
    raise TypeError(
        f'episode field {rlds_types.STEPS!r} must be a dict of '
        f'[T, ...] tensors, got {steps_spec}.')

  def nest(episode: Dict[str, Any]) -> Dict[str, Any]:
    steps = indexing.as_dense_steps(episode[rlds_types.STEPS])
    return {**episode,
            rlds_types.STEPS: tf.data.Dataset.from_tensor_slices(steps)}

  return episodes.map(nest)
