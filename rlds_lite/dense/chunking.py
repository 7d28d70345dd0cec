"""Per-step observation histories (frame stacking) and action chunks.

Both keep one sample per step and add a ``*_pad_mask``, so they compose with
each other and with ``relabel_goals`` / ``subsample``.

Example:
  >>> import tensorflow as tf
  >>> steps = {'observation': tf.constant([0, 1, 2]), 'action': tf.constant([5, 6, 7])}
  >>> out = chunk_actions(frame_stack(steps, 2), 2)
  >>> out['observation'].numpy().tolist(), out['action'].numpy().tolist()
  ([[0, 0], [0, 1], [1, 2]], [[5, 6], [6, 6], [6, 6]])
  >>> out['action_pad_mask'].numpy().tolist()
  [[True, True], [True, False], [False, False]]
"""

from typing import Any, Dict, Mapping, Tuple, Union

import tensorflow as tf

from rlds_lite import op_context
from rlds_lite import rlds_types
from rlds_lite.dense import indexing
from rlds_lite.dense import last_step as last_step_lib

PAD_MASK_SUFFIX = '_pad_mask'
"""Suffix of the mask field added next to a stacked or chunked field."""


def _check_choice(value: Any, choices: tuple, name: str) -> str:
  if value not in choices:
    raise ValueError(f'{name} must be one of {choices}, got {value!r}.')
  return value


def history_indices(anchors: tf.Tensor, history: int,
                    stride: int = 1) -> Tuple[tf.Tensor, tf.Tensor]:
  """``(indices, mask)`` ``[N, history]``: anchor ``t``'s steps ``t - (history - 1) * stride .. t``.

  Indices are clipped at 0; ``mask`` is False before the episode.

  Example:
    >>> indices, mask = history_indices(tf.range(3), 2, stride=2)
    >>> indices.numpy().tolist(), mask.numpy().tolist()
    ([[0, 0], [0, 1], [0, 2]], [[False, True], [False, True], [True, True]])
  """
  anchors = tf.convert_to_tensor(anchors, tf.int32)
  offsets = (tf.range(history) - (history - 1)) * stride
  indices = anchors[:, tf.newaxis] + offsets[tf.newaxis, :]
  return tf.maximum(indices, 0), indices >= 0


def chunk_indices(anchors: tf.Tensor, horizon: int, num_valid: tf.Tensor
                  ) -> Tuple[tf.Tensor, tf.Tensor]:
  """``(indices, mask)`` ``[N, horizon]``: anchor ``t``'s steps ``t .. t + horizon - 1``.

  ``mask`` is True for indices ``< num_valid``; indices are clipped into the
  valid actions, so masked entries repeat the last one.

  Example:
    >>> indices, mask = chunk_indices(tf.range(3), 2, num_valid=tf.constant(2))
    >>> indices.numpy().tolist(), mask.numpy().tolist()
    ([[0, 1], [1, 1], [1, 1]], [[True, True], [True, False], [False, False]])
  """
  anchors = tf.convert_to_tensor(anchors, tf.int32)
  indices = anchors[:, tf.newaxis] + tf.range(horizon)[tf.newaxis, :]
  mask = indices < num_valid
  return tf.maximum(tf.minimum(indices, num_valid - 1), 0), mask


@op_context.named('frame_stack')
def frame_stack(steps: Mapping[str, Any], history: int, pad: str = 'first', *,
                key: str = rlds_types.OBSERVATION) -> Dict[str, Any]:
  """Replaces each step's observation by its last ``history`` observations.

  Leaves of ``steps[key]`` become ``[T, history, ...]`` (oldest first) and
  ``f'{key}_pad_mask'`` is added; padding repeats ``o_0`` or is zeros.

  Args:
    steps: one episode's dense steps; ``steps[key]`` may be nested.
    history: observations per step (positive).
    pad: ``'first'`` (as Octo) or ``'zero'``.
    key: the field to stack.

  Returns:
    ``steps`` with ``key`` stacked and its pad mask added.

  Example:
    >>> out = frame_stack({'observation': tf.constant([1, 2])}, 3, pad='zero')
    >>> out['observation'].numpy().tolist()
    [[0, 0, 1], [0, 1, 2]]
    >>> out['observation_pad_mask'].numpy().tolist()
    [[False, False, True], [False, True, True]]
  """
  steps = indexing.as_dense_steps(steps)
  history = indexing.check_positive_int(history, 'history')
  _check_choice(pad, ('first', 'zero'), 'pad')
  indexing.require_fields(steps, [key])
  mask_key = key + PAD_MASK_SUFFIX
  indexing.reject_fields(steps, [mask_key])
  length = indexing.episode_length(steps)
  indices, mask = history_indices(tf.range(length), history)   # [T, history]
  out = dict(steps)
  out[key] = indexing.gather_steps(steps[key], indices,
                                   mask if pad == 'zero' else None)
  out[mask_key] = mask
  return out


@op_context.named('chunk_actions')
def chunk_actions(
    steps: Mapping[str, Any], horizon: int,
    last_step: Union[last_step_lib.LastStep, str] = last_step_lib.LastStep.INVALID,
    *, pad: str = 'last', key: str = rlds_types.ACTION) -> Dict[str, Any]:
  """Replaces each step's action by its next ``horizon`` actions.

  Leaves of ``steps[key]`` become ``[T, horizon, ...]`` and
  ``f'{key}_pad_mask'`` (True for valid actions, by ``last_step``) is added.

  Args:
    steps: one episode's dense steps; ``steps[key]`` may be nested.
    horizon: actions per step (positive).
    last_step: ``'invalid'`` (RLDS) or ``'valid'`` (docs/last_step.md).
    pad: ``'last'`` (the last valid action, as Octo) or ``'zero'``.
    key: the field to chunk.

  Returns:
    ``steps`` with ``key`` chunked and its pad mask added.

  Example:
    >>> steps = {'action': tf.constant([5, 6, 7])}
    >>> out = chunk_actions(steps, 2, 'valid', pad='zero')
    >>> out['action'].numpy().tolist()
    [[5, 6], [6, 7], [7, 0]]
  """
  steps = indexing.as_dense_steps(steps)
  horizon = indexing.check_positive_int(horizon, 'horizon')
  _check_choice(pad, ('last', 'zero'), 'pad')
  policy = last_step_lib.as_last_step(last_step)
  indexing.require_fields(steps, [key])
  mask_key = key + PAD_MASK_SUFFIX
  indexing.reject_fields(steps, [mask_key])
  length = indexing.episode_length(steps)
  valid = last_step_lib.num_valid_actions(length, policy)
  source, mask = chunk_indices(tf.range(length), horizon, valid)
  keep = mask if pad == 'zero' else mask | (valid > 0)
  out = dict(steps)
  out[key] = indexing.gather_steps(steps[key], source, keep)
  out[mask_key] = mask
  return out
