"""N-step transitions of one dense episode, with discounted returns.

Example:
  >>> import tensorflow as tf
  >>> steps = {'observation': tf.constant([0, 1, 2]),
  ...          'action': tf.constant([5, 6, 0]),
  ...          'reward': tf.constant([1.0, 2.0, 0.0]),
  ...          'is_last': tf.constant([False, False, True])}
  >>> out = transitions(steps, n=2, gamma=0.5)
  >>> out['reward'].numpy().tolist(), out['next_observation'].numpy().tolist()
  ([2.0, 2.0], [2, 2])
"""

from typing import Any, Dict, Mapping, Union

import tensorflow as tf

from rlds_lite import op_context
from rlds_lite import rlds_types
from rlds_lite.dense import indexing
from rlds_lite.dense import last_step as last_step_lib

NEXT_OBSERVATION = 'next_observation'
"""Key of the observation that follows a transition."""


def _check_gamma(gamma: Any) -> Any:
  if isinstance(gamma, (tf.Tensor, tf.Variable)):
    return gamma
  try:
    value = float(gamma)
  except (TypeError, ValueError):
    raise TypeError(
        f'gamma must be a number in [0, 1], got {gamma!r}.') from None
  if not 0.0 <= value <= 1.0:
    raise ValueError(f'gamma must be in [0, 1], got {value}.')
  return value


def _float_field(steps: Mapping[str, Any], field: str) -> tf.Tensor:
  value = steps[field]
  if not isinstance(value, tf.Tensor) or not value.dtype.is_floating:
    kind = value.dtype.name if isinstance(value, tf.Tensor) else 'a structure'
    raise TypeError(
        f'step field {field!r} must be a float tensor, got '
        f'{kind}; cast it first.')
  return value


@op_context.named('transitions')
def transitions(
    steps: Mapping[str, Any], n: int = 1,
    gamma: Union[float, tf.Tensor] = 1.0, *,
    last_step: Union[last_step_lib.LastStep, str] = last_step_lib.LastStep.INVALID
) -> Dict[str, Any]:
  """The n-step transitions of one dense episode: returns, discounts, next observations.

  A transition starts at every step but the last (docs/guarantees.md, "Dense
  ops", for the sums, terminal and truncated episodes and ``'valid'``).

  Args:
    steps: dense steps with ``observation`` and a float ``reward``
      (``discount``, ``is_terminal`` used when present).
    n: rewards summed per transition at most (positive).
    gamma: the discount factor in ``[0, 1]``.
    last_step: ``'invalid'`` (RLDS) or ``'valid'`` (docs/last_step.md).

  Returns:
    The start step's fields with ``reward``, ``discount`` and
    ``next_observation``, ``[N, ...]``.

  Example:
    >>> steps = {'observation': tf.constant([0, 1, 2]),
    ...          'reward': tf.constant([1.0, 2.0, 0.0]),
    ...          'is_terminal': tf.constant([False, False, True])}
    >>> transitions(steps)['discount'].numpy().tolist()
    [1.0, 0.0]
    >>> valid = transitions(steps, last_step='valid')
    >>> valid['reward'].numpy().tolist(), valid['discount'].numpy().tolist()
    ([1.0, 2.0, 0.0], [1.0, 1.0, 0.0])
  """
  steps = indexing.as_dense_steps(steps)
  indexing.require_fields(steps, [rlds_types.OBSERVATION, rlds_types.REWARD])
  indexing.reject_fields(steps, [NEXT_OBSERVATION])
  n = indexing.check_positive_int(n, 'n')
  gamma = _check_gamma(gamma)
  policy = last_step_lib.as_last_step(last_step)
  reward = _float_field(steps, rlds_types.REWARD)
  length = indexing.episode_length(steps)
  if rlds_types.DISCOUNT in steps:
    discount = _float_field(steps, rlds_types.DISCOUNT)
  else:
    discount = tf.ones([length], reward.dtype)
  if discount.shape.rank > reward.shape.rank:
    raise ValueError(
        f'discount has rank {discount.shape.rank}, more than the '
        f'rank {reward.shape.rank} of reward.')

  if rlds_types.IS_TERMINAL in steps:
    is_terminal = tf.cast(steps[rlds_types.IS_TERMINAL], tf.bool)
    terminal_end = tf.reduce_any(is_terminal[-1:])
  else:
    terminal_end = tf.constant(False)
  # `end`: the step where the last transition ends. Under VALID a terminal
  # last step starts one more transition, ending at a virtual step T.
  last = length - 1
  end = last
  if policy is last_step_lib.LastStep.VALID:
    end = last + tf.cast(terminal_end, tf.int32)
  starts = tf.range(tf.maximum(end, 0))                              # [N]
  indices = starts[:, tf.newaxis] + tf.range(n)[tf.newaxis, :]       # [N, n]
  inside = indices < end                                             # k < m
  clipped = tf.minimum(indices, last)
  factors = tf.cast(gamma, discount.dtype) * tf.gather(discount, clipped)
  factors = tf.where(indexing.broadcast_mask(inside, factors), factors,
                     tf.ones_like(factors))                          # [N, n, ...]
  weights = tf.math.cumprod(factors, axis=1, exclusive=True)
  rewards = tf.gather(reward, clipped)
  rewards = tf.where(indexing.broadcast_mask(inside, rewards), rewards,
                     tf.zeros_like(rewards))
  weights = tf.cast(indexing.broadcast_mask(weights, rewards), reward.dtype)
  n_step_reward = tf.reduce_sum(weights * rewards, axis=1)
  n_step_discount = tf.reduce_prod(factors, axis=1)
  ends = tf.minimum(starts + n, end)                                 # t + m
  reaches_terminal = (ends == end) & terminal_end
  n_step_discount = tf.where(
      indexing.broadcast_mask(reaches_terminal, n_step_discount),
      tf.zeros_like(n_step_discount), n_step_discount)

  out = {rlds_types.OBSERVATION: None}
  if rlds_types.ACTION in steps:
    out[rlds_types.ACTION] = None
  others = {k: v for k, v in steps.items()
            if k not in (rlds_types.REWARD, rlds_types.DISCOUNT)}
  out.update(indexing.gather_steps(others, starts))
  out[rlds_types.REWARD] = n_step_reward
  out[rlds_types.DISCOUNT] = n_step_discount
  out[NEXT_OBSERVATION] = indexing.gather_steps(
      steps[rlds_types.OBSERVATION], tf.minimum(ends, last))
  return out
