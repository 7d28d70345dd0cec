"""Fixed-size windows of one dense episode, as ``transformations.batch`` makes them.

Example:
  >>> import tensorflow as tf
  >>> steps = {'observation': tf.range(5)}
  >>> windows(steps, size=2, shift=2)['observation'].numpy().tolist()
  [[0, 1], [2, 3]]
"""

from typing import Any, Dict, Mapping

import tensorflow as tf

from rlds_lite import op_context
from rlds_lite.dense import indexing

MASK = 'mask'
"""Key of the ``[N, size]`` validity mask added by ``drop_remainder=False``."""


def window_indices(length: tf.Tensor, size: int, shift: int = 1,
                   stride: int = 1, drop_remainder: bool = True) -> tf.Tensor:
  """The ``[N, size]`` step indices of the windows: ``i * shift + j * stride``.

  Without ``drop_remainder`` every start ``< length`` makes a window, whose
  indices may reach past the end.

  Example:
    >>> window_indices(tf.constant(4), 2, stride=2, drop_remainder=False).numpy().tolist()
    [[0, 2], [1, 3], [2, 4], [3, 5]]
  """
  length = tf.convert_to_tensor(length, tf.int32)
  if drop_remainder:
    span = (size - 1) * stride + 1
    count = tf.maximum((length - span) // shift + 1, 0)
  else:
    count = (length + shift - 1) // shift
  starts = tf.range(count) * shift
  return starts[:, tf.newaxis] + tf.range(size)[tf.newaxis, :] * stride


@op_context.named('windows')
def windows(steps: Mapping[str, Any], size: int, shift: int = 1,
            stride: int = 1, drop_remainder: bool = True) -> Dict[str, Any]:
  """Windows of ``size`` steps of one dense episode, as ``transformations.batch`` makes them.

  Args:
    steps: one episode's dense steps (nested dicts/tuples allowed).
    size: steps per window; shift: between window starts; stride: between a
      window's steps (all positive).
    drop_remainder: drop windows running past the end; else they are
      zero-padded and ``'mask'`` (``[N, size]`` bool) is added.

  Returns:
    ``steps``' structure with leaves ``[N, size, ...]``.

  Example:
    >>> out = windows({'r': tf.constant([1, 2, 3])}, 2, drop_remainder=False)
    >>> out['r'].numpy().tolist(), out['mask'].numpy().tolist()
    ([[1, 2], [2, 3], [3, 0]], [[True, True], [True, True], [True, False]])
  """
  steps = indexing.as_dense_steps(steps)
  size = indexing.check_positive_int(size, 'size')
  shift = indexing.check_positive_int(shift, 'shift')
  stride = indexing.check_positive_int(stride, 'stride')
  if not drop_remainder:
    indexing.reject_fields(steps, [MASK])
  length = indexing.episode_length(steps)
  indices = window_indices(length, size, shift, stride, bool(drop_remainder))
  if drop_remainder:
    return indexing.gather_steps(steps, indices)
  mask = indices < length
  out = indexing.gather_steps(steps, tf.minimum(indices, length - 1), mask)
  out[MASK] = mask
  return out
