"""Truncate a dataset of steps after the first step meeting a condition."""

from typing import Any, Callable

import tensorflow as tf

from rlds_lite import rlds_types

__all__ = ['truncate_after_condition']


def _as_scalar_bool(value: Any) -> tf.Tensor:
  """The condition as a scalar bool tensor, or a clear error."""
  value = tf.convert_to_tensor(value)
  if value.dtype != tf.bool or value.shape.rank != 0:
    raise TypeError(
        'truncate_condition must return a scalar boolean, got a tensor of '
        f'dtype {value.dtype.name} and shape {value.shape}.')
  return value


def truncate_after_condition(
    steps_dataset: tf.data.Dataset,
    truncate_condition: Callable[[rlds_types.Step], Any]) -> tf.data.Dataset:
  """Keeps the steps up to and including the first one meeting a condition.

    All steps if none does; lazy (steps after the match are never read).

    Args:
      steps_dataset: dataset of steps (any structure).
      truncate_condition: function of one step returning a scalar boolean.

    Example:
      >>> steps = tf.data.Dataset.from_tensor_slices(
      ...     {'r': [1, 5, 2, 7], 'is_terminal': [False, True, False, True]})
      >>> [s['r'].tolist() for s in truncate_after_condition(
      ...     steps, lambda s: s['is_terminal']).as_numpy_iterator()]
      [1, 5]
  """
  if not isinstance(steps_dataset, tf.data.Dataset):
    raise TypeError('steps_dataset must be a tf.data.Dataset, got '
                    f'{type(steps_dataset).__name__}.')
  if not callable(truncate_condition):
    raise TypeError('truncate_condition must be callable.')
  condition = tf.function(truncate_condition)

  def tag_with_previous(previous_met, step):
    # Emit (step, whether an earlier step met the condition).
    met = _as_scalar_bool(condition(step))
    return tf.logical_or(previous_met, met), (step, previous_met)

  tagged = steps_dataset.scan(
      tf.constant(False),
      tf.autograph.experimental.do_not_convert(tag_with_previous))
  kept = tagged.take_while(lambda step, previous_met: ~previous_met)
  return kept.map(lambda step, previous_met: step)
