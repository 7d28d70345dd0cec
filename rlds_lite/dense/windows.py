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
  """The ``[N, size]`` int32 step indices of the windows of an episode.

  Windows start at ``0, shift, 2 * shift, ...`` and window ``i`` takes steps
  ``i * shift + j * stride`` for ``j < size``. With ``drop_remainder`` only
  windows whose steps all exist are kept; otherwise every start ``< length``
  makes a window and indices may reach past the end (``>= length``).

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
  """Windows of ``size`` steps of one dense episode, never across episodes.

  The same windows, in the same order, as
  ``rlds_lite.transformations.batch(steps_dataset, size, shift, stride,
  drop_remainder)`` on this episode's steps dataset: window ``i`` holds steps
  ``i * shift + j * stride`` for ``j < size``, for starts ``i * shift < T``.
  With ``drop_remainder=True`` only complete windows are kept (none if the
  episode is shorter than ``(size - 1) * stride + 1``). With
  ``drop_remainder=False`` partial windows at the end are zero-padded to
  ``size`` (``b''``/False for strings/booleans) and a ``'mask'`` field
  (``[N, size]`` bool, True for real steps) is added; unlike
  ``transformations.batch`` all windows then have the same static shape.

  Steps are copied verbatim, last step included: a window's ``is_last``
  field tells where the (RLDS-invalid) last action/reward/discount are, so
  ``windows`` takes no last-step policy.

  Args:
    steps: one episode's dense steps (dict of ``[T, ...]`` tensors, nested
      dicts/tuples allowed).
    size: steps per window (positive).
    shift: steps between the starts of consecutive windows (positive).
    stride: steps between consecutive elements of a window (positive).
    drop_remainder: whether to drop the windows that would run past the end.

  Returns:
    A dict shaped like ``steps`` whose leaves are ``[N, size, ...]``, plus
    ``'mask'`` when ``drop_remainder`` is False.

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
