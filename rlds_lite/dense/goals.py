"""Hindsight goal relabelling: a goal observation for every step.

Example:
  >>> import tensorflow as tf
  >>> steps = {'observation': tf.constant([10, 11, 12])}
  >>> relabel_goals(steps, 'final')['goal'].numpy().tolist()
  [12, 12, 12]
"""

from typing import Any, Dict, Mapping, Optional

import tensorflow as tf

from rlds_lite import op_context
from rlds_lite import rlds_types
from rlds_lite.dense import indexing
from rlds_lite.dense import seeding

GOAL = 'goal'
"""Default key of the relabelled goal."""

STRATEGIES = ('future', 'final', 'uniform', 'geometric')
"""The goal-sampling strategies of ``relabel_goals``."""


def goal_indices(length: tf.Tensor, strategy: str, seed: tf.Tensor,
                 p: Optional[float] = None) -> tf.Tensor:
  """The ``[T]`` int32 step index of each step's goal (see ``relabel_goals``).

  Example:
    >>> goal_indices(tf.constant(3), 'final', seed=tf.constant([0, 0])).numpy().tolist()
    [2, 2, 2]
  """
  length = tf.convert_to_tensor(length, tf.int32)
  last = length - 1
  t = tf.range(length)
  if strategy == 'final':
    return tf.fill([length], last)
  u = tf.random.stateless_uniform([length], seed, dtype=tf.float64)  # [0, 1)
  if strategy == 'future':
    offsets = tf.floor(u * tf.cast(length - t, tf.float64))
    return tf.minimum(t + tf.cast(offsets, tf.int32), last)
  if strategy == 'uniform':
    draws = tf.floor(u * tf.cast(length, tf.float64))
    return tf.minimum(tf.cast(draws, tf.int32), last)
  # geometric: K = 1 + floor(log(V) / log(1 - p)) with V = 1 - u in (0, 1]
  # has P(K = k) = p (1 - p)^(k - 1), k >= 1 (numpy.random.geometric's law).
  ratio = tf.math.log(1.0 - u) / tf.math.log1p(tf.constant(-p, tf.float64))
  ratio = tf.minimum(tf.floor(ratio), tf.cast(length, tf.float64))
  return tf.minimum(t + 1 + tf.cast(ratio, tf.int32), last)


@op_context.named('relabel_goals')
def relabel_goals(steps: Mapping[str, Any], strategy: str = 'future', *,
                  key: str = rlds_types.OBSERVATION, goal_key: str = GOAL,
                  seed: Optional[Any] = None, p: Optional[float] = None,
                  index_key: Optional[str] = None) -> Dict[str, Any]:
  """Adds to every step a goal: the ``key`` field at a step drawn after it.

  Strategies: ``'future'`` (uniform in ``[t, T-1]``), ``'final'`` (``T-1``),
  ``'uniform'`` (``[0, T-1]``), ``'geometric'`` (``min(t + K, T-1)``, ``K ~
  Geometric(p)`` on ``{1, 2, ...}``). Stateless: the same seed, the same goals.

  Args:
    steps: one episode's dense steps; ``steps[key]`` may be nested.
    strategy: ``'future'``, ``'final'``, ``'uniform'`` or ``'geometric'``.
    key: the field goals are taken from; goal_key: the field added.
    seed: an int, a shape-``[2]`` int tensor, or None (random).
    p: for ``'geometric'`` only, in ``(0, 1]``.
    index_key: also add the goal's step index (``[T]`` int32) here.

  Example:
    >>> out = relabel_goals({'observation': tf.range(4)}, 'geometric', p=1.0,
    ...                     index_key='goal_index')
    >>> out['goal'].numpy().tolist(), out['goal_index'].numpy().tolist()
    ([1, 2, 3, 3], [1, 2, 3, 3])
  """
  steps = indexing.as_dense_steps(steps)
  if strategy not in STRATEGIES:
    raise ValueError(
        f'strategy must be one of {STRATEGIES}, got {strategy!r}.')
  if strategy == 'geometric':
    if p is None or isinstance(p, bool) or not 0.0 < float(p) <= 1.0:
      raise ValueError(
          f"strategy 'geometric' needs p in (0, 1], got {p!r}.")
    p = float(p)
  elif p is not None:
    raise ValueError(f"p only applies to strategy 'geometric', not "
                     f'{strategy!r}.')
  indexing.require_fields(steps, [key])
  new_keys = [goal_key] + ([index_key] if index_key is not None else [])
  indexing.reject_fields(steps, new_keys)
  if strategy == 'final':
    seed = tf.zeros([2], tf.int64)  # unused
  else:
    seed = seeding.stateless_seed(seed)
  indices = goal_indices(indexing.episode_length(steps), strategy, seed, p)
  out = dict(steps)
  out[goal_key] = indexing.gather_steps(steps[key], indices)
  if index_key is not None:
    out[index_key] = indices
  return out
