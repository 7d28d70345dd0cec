"""How many steps to process at once when the caller says BATCH_AUTO_TUNE."""

from typing import Any

import tensorflow as tf

from rlds_lite import rlds_types
from rlds_lite.transformations import shape_ops

BATCH_AUTO_TUNE = -1
"""Pass as a batch size to let rlds_lite choose it from the step size."""

DEFAULT_BATCH_SIZE_IN_BYTES = 200_000
"""Target size of one auto-tuned batch."""


def step_element_spec(dataset: tf.data.Dataset) -> Any:
  """The step spec of a steps dataset, or of the nested steps of episodes."""
  spec = dataset.element_spec
  if isinstance(spec, dict) and isinstance(spec.get(rlds_types.STEPS),
                                           tf.data.DatasetSpec):
    return spec[rlds_types.STEPS].element_spec
  return spec


def get_batch_size(dataset: tf.data.Dataset,
                   optimization_batch_size: int = BATCH_AUTO_TUNE) -> int:
  """The batch size to use for ``dataset`` (steps or episodes).

    ``optimization_batch_size``, or for ``BATCH_AUTO_TUNE``
    ``DEFAULT_BATCH_SIZE_IN_BYTES`` divided by the estimated step size (at
    least 1).

    Example:
      >>> steps = tf.data.Dataset.from_tensor_slices({'obs': tf.zeros([4, 10])})
      >>> get_batch_size(steps), get_batch_size(steps, 16)  # 200_000 / 40 bytes
      (5000, 16)
  """
  return batch_size_for_steps(step_element_spec(dataset),
                              optimization_batch_size)


def batch_size_for_steps(step_spec: Any,
                         optimization_batch_size: int = BATCH_AUTO_TUNE
                         ) -> int:
  """`get_batch_size` given the spec of one step instead of a dataset.

  Example:
    >>> batch_size_for_steps({'obs': tf.TensorSpec([10], tf.float32)})
    5000
  """
  if (isinstance(optimization_batch_size, bool) or
      not hasattr(optimization_batch_size, '__index__')):
    raise TypeError('batch size must be an int or BATCH_AUTO_TUNE (-1), got '
                    f'{optimization_batch_size!r}.')
  if optimization_batch_size != BATCH_AUTO_TUNE:
    if optimization_batch_size < 1:
      raise ValueError(
          'batch size must be positive or BATCH_AUTO_TUNE (-1), got '
          f'{optimization_batch_size}.')
    return int(optimization_batch_size)
  step_size = shape_ops.size_from_spec(step_spec)
  return max(1, DEFAULT_BATCH_SIZE_IN_BYTES // step_size)
