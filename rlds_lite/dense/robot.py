"""Octo-shaped training samples: observation history, action chunk, task.

Robot policies (Octo, OpenVLA, openpi) train on samples made at a step
``t`` (the *anchor*) of an episode: the last ``history`` observations up to
``t`` with a pad mask, the ``action_chunk`` actions from ``t`` on with a pad
mask, the step's other fields (e.g. the language instruction) and
optionally a goal observation. ``robot_samples`` makes all of an episode's
samples with one gather per field, from the index matrices of
``robot_sample_indices``, whose padding rules are those of ``frame_stack``
(history before the first step), ``chunk_actions`` (actions past the last
valid one, per ``LastStep``) and ``relabel_goals``.

Example:
  >>> import tensorflow as tf
  >>> steps = {'observation': tf.constant([0, 1, 2]),
  ...          'action': tf.constant([5, 6, 7]),
  ...          'language_instruction': tf.constant([b'go'] * 3)}
  >>> out = robot_samples(steps, history=2, action_chunk=2)
  >>> out['observation'].numpy().tolist(), out['observation_pad_mask'].numpy().tolist()
  ([[0, 0], [0, 1]], [[False, True], [True, True]])
  >>> out['action'].numpy().tolist(), out['action_pad_mask'].numpy().tolist()
  ([[5, 6], [6, 6]], [[True, True], [True, False]])
  >>> out['language_instruction'].numpy().tolist()
  [b'go', b'go']
"""

from typing import Any, Dict, Mapping, NamedTuple, Optional, Union

import tensorflow as tf

from rlds_lite import rlds_types
from rlds_lite.dense import chunking
from rlds_lite.dense import goals as goals_lib
from rlds_lite.dense import indexing
from rlds_lite.dense import last_step as last_step_lib
from rlds_lite.dense import seeding

GOAL_INDEX = 'goal_index'
"""Key of the goal's step index (``[N]`` int32) added with a goal."""


class SampleIndices(NamedTuple):
  """The step indices of an episode's samples (see ``robot_sample_indices``).

  Attributes:
    anchors: ``[N]`` int32, the step each sample is made at.
    history: ``[N, history]`` int32 observation steps, clipped at 0.
    history_mask: ``[N, history]`` bool, False before the first step.
    actions: ``[N, action_chunk]`` int32 action steps, clipped into the
      valid actions.
    action_mask: ``[N, action_chunk]`` bool, True for valid actions.
    goals: ``[N]`` int32 goal steps, or None without a goal.
  """
  anchors: tf.Tensor
  history: tf.Tensor
  history_mask: tf.Tensor
  actions: tf.Tensor
  action_mask: tf.Tensor
  goals: Optional[tf.Tensor]


def _check_goal(goal: Optional[str], goal_p: Optional[float], op: str
                ) -> Optional[float]:
  if goal is None:
    if goal_p is not None:
      raise ValueError(f'{op}: goal_p is only used with a goal strategy.')
    return None
  if goal not in goals_lib.STRATEGIES:
    raise ValueError(f'{op}: goal must be None or one of '
                     f'{goals_lib.STRATEGIES}, got {goal!r}.')
  if goal == 'geometric':
    if goal_p is None or isinstance(goal_p, bool) or not 0 < float(goal_p) <= 1:
      raise ValueError(f"{op}: goal 'geometric' needs goal_p in (0, 1], got "
                       f'{goal_p!r}.')
    return float(goal_p)
  if goal_p is not None:
    raise ValueError(f"{op}: goal_p only applies to goal 'geometric', not "
                     f'{goal!r}.')
  return None


def check_sample_args(history: int, action_chunk: int, history_stride: int,
                      shift: int, max_samples: Optional[int],
                      goal: Optional[str], goal_p: Optional[float],
                      op: str) -> Optional[float]:
  """Checks the arguments shared by ``robot_samples`` and its pipeline.

  Returns ``goal_p`` as a float (or None).

  Example:
    >>> check_sample_args(2, 0, 1, 1, None, None, None, 'robot_samples')
    Traceback (most recent call last):
    ...
    ValueError: robot_samples: action_chunk must be a positive int, got 0.
  """
  for name, value in (('history', history), ('action_chunk', action_chunk),
                      ('history_stride', history_stride), ('shift', shift)):
    indexing.check_positive_int(value, name, op)
  if max_samples is not None:
    indexing.check_positive_int(max_samples, 'max_samples', op)
  return _check_goal(goal, goal_p, op)


def robot_sample_indices(
    length: tf.Tensor,
    history: int = 1,
    action_chunk: int = 1,
    *,
    last_step: Union[last_step_lib.LastStep, str] = last_step_lib.LastStep.INVALID,
    history_stride: int = 1,
    shift: int = 1,
    keep_actionless: bool = False,
    max_samples: Optional[int] = None,
    goal: Optional[str] = None,
    goal_p: Optional[float] = None,
    seed: Optional[Any] = None) -> SampleIndices:
  """The step indices of the samples of an episode of ``length`` steps.

  Anchors are steps ``0, shift, 2 * shift, ...`` that have a valid action
  (``t < num_valid_actions(length, last_step)``), or every step with
  ``keep_actionless``; with ``max_samples``, at most that many of them,
  drawn uniformly without replacement and kept in order (as
  ``dense.subsample``). Anchor ``t`` gets:

  * observation steps ``t - (history - 1) * history_stride, ..., t``
    (``chunking.history_indices``: clipped at 0, masked before the episode);
  * action steps ``t, ..., t + action_chunk - 1``
    (``chunking.chunk_indices``: masked from the first invalid action);
  * with ``goal``, a goal step drawn by ``relabel_goals``'s strategy.

  Args:
    length: the episode length ``T`` (scalar int).
    history: observations per sample (positive).
    action_chunk: actions per sample (positive).
    last_step: whether the last step's action is valid (``LastStep``).
    history_stride: steps between consecutive history observations.
    shift: steps between consecutive anchors.
    keep_actionless: also make samples at steps without a valid action
      (their action mask is all False).
    max_samples: keep at most this many anchors (random, seeded).
    goal: None or a ``relabel_goals`` strategy.
    goal_p: the ``'geometric'`` strategy's success probability.
    seed: seed of the random choices (``max_samples``, ``goal``).

  Returns:
    A ``SampleIndices``.

  Example:
    >>> out = robot_sample_indices(tf.constant(4), 2, 3, history_stride=2)
    >>> out.anchors.numpy().tolist(), out.history.numpy().tolist()
    ([0, 1, 2], [[0, 0], [0, 1], [0, 2]])
    >>> out.action_mask.numpy().tolist()
    [[True, True, True], [True, True, False], [True, False, False]]
  """
  op = 'robot_sample_indices'
  goal_p = check_sample_args(history, action_chunk, history_stride, shift,
                             max_samples, goal, goal_p, op)
  policy = last_step_lib.as_last_step(last_step, op)
  length = tf.convert_to_tensor(length, tf.int32)
  num_valid = last_step_lib.num_valid_actions(length, policy)
  limit = length if keep_actionless else num_valid
  anchors = tf.range(0, limit, shift)
  needs_seed = max_samples is not None or goal not in (None, 'final')
  seed = seeding.stateless_seed(seed if needs_seed else 0, op)
  subsample_seed, goal_seed = tf.unstack(
      tf.random.experimental.stateless_split(seed, 2))
  if max_samples is not None:
    count = tf.shape(anchors)[0]
    keys = tf.random.stateless_uniform([count], subsample_seed)
    _, chosen = tf.math.top_k(keys, k=tf.minimum(count, max_samples),
                              sorted=False)
    anchors = tf.gather(anchors, tf.sort(chosen))
  history_steps, history_mask = chunking.history_indices(
      anchors, history, history_stride)
  action_steps, action_mask = chunking.chunk_indices(anchors, action_chunk,
                                                     num_valid)
  goal_steps = None
  if goal is not None:
    goal_steps = tf.gather(
        goals_lib.goal_indices(length, goal, goal_seed, goal_p), anchors)
  return SampleIndices(anchors, history_steps, history_mask, action_steps,
                       action_mask, goal_steps)


def robot_samples(
    steps: Mapping[str, Any],
    history: int = 1,
    action_chunk: int = 1,
    *,
    last_step: Union[last_step_lib.LastStep, str] = last_step_lib.LastStep.INVALID,
    history_stride: int = 1,
    shift: int = 1,
    keep_actionless: bool = False,
    max_samples: Optional[int] = None,
    goal: Optional[str] = None,
    goal_p: Optional[float] = None,
    seed: Optional[Any] = None,
    history_pad: str = 'first',
    action_pad: str = 'last',
    observation_key: str = rlds_types.OBSERVATION,
    action_key: str = rlds_types.ACTION,
    goal_key: str = goals_lib.GOAL,
    index_key: Optional[str] = None) -> Dict[str, Any]:
  """Observation histories, action chunks and step fields of one episode.

  One sample per anchor of ``robot_sample_indices`` (same arguments), as a
  dict of ``[N, ...]`` tensors:

  * ``observation_key``: leaves ``[N, history, ...]``, padded before the
    episode with the first observation (``history_pad='first'``, as Octo)
    or zeros (``'zero'``); ``f'{observation_key}_pad_mask'`` ``[N,
    history]``, True for real observations;
  * ``action_key``: leaves ``[N, action_chunk, ...]``, padded past the last
    valid action with that action (``action_pad='last'``, as Octo; zeros
    when the episode has none) or zeros (``'zero'``);
    ``f'{action_key}_pad_mask'`` ``[N, action_chunk]``, True for valid
    actions (under ``LastStep.INVALID`` the last step's action is never
    valid);
  * every other step field at the anchor (``[N, ...]``): ``reward``,
    ``is_last``, ``is_terminal``, ``language_instruction``, ...;
  * with ``goal``: ``goal_key`` (the observation at the goal step, leaves
    ``[N, ...]``) and ``'goal_index'``;
  * with ``index_key``: the anchor's step index (``[N]`` int32).

  Terminal and truncated episodes get the same samples and masks: the
  difference is in the anchors' ``is_terminal`` (and the discount), carried
  along. Works eagerly and inside ``tf.data.Dataset.map``.

  Args:
    steps: one episode's dense steps; ``observation`` and ``action`` may be
      nested.
    history, action_chunk, last_step, history_stride, shift,
    keep_actionless, max_samples, goal, goal_p, seed: see
      ``robot_sample_indices``.
    history_pad: ``'first'`` or ``'zero'``.
    action_pad: ``'last'`` or ``'zero'``.
    observation_key: the observation field.
    action_key: the action field.
    goal_key: the key of the goal observation.
    index_key: if given, add the anchors' step indices under this key.

  Returns:
    A dict of ``[N, ...]`` tensors.

  Raises:
    ValueError: on a bad argument, a missing field or a field the op would
      overwrite.

  Example:
    >>> steps = {'observation': tf.range(4), 'action': tf.range(4) * 10,
    ...          'is_terminal': tf.constant([False, False, False, True])}
    >>> out = robot_samples(steps, 1, 2, goal='final', index_key='t')
    >>> out['goal'].numpy().tolist(), out['t'].numpy().tolist()
    ([3, 3, 3], [0, 1, 2])
    >>> out['action'].numpy().tolist()
    [[0, 10], [10, 20], [20, 20]]
  """
  op = 'robot_samples'
  steps = indexing.as_dense_steps(steps, op)
  for name, value, choices in (('history_pad', history_pad, ('first', 'zero')),
                               ('action_pad', action_pad, ('last', 'zero'))):
    if value not in choices:
      raise ValueError(f'{op}: {name} must be one of {choices}, got '
                       f'{value!r}.')
  indexing.require_fields(steps, [observation_key, action_key], op)
  added = [observation_key + chunking.PAD_MASK_SUFFIX,
           action_key + chunking.PAD_MASK_SUFFIX]
  if goal is not None:
    added += [goal_key, GOAL_INDEX]
  if index_key is not None:
    added.append(index_key)
  indexing.reject_fields(steps, added, op)
  if len(set(added + [observation_key, action_key])) != len(added) + 2:
    raise ValueError(f'{op}: the output keys {added} collide with '
                     f'{observation_key!r} / {action_key!r}.')
  length = indexing.episode_length(steps)
  index = robot_sample_indices(
      length, history, action_chunk, last_step=last_step,
      history_stride=history_stride, shift=shift,
      keep_actionless=keep_actionless, max_samples=max_samples, goal=goal,
      goal_p=goal_p, seed=seed)
  num_valid = last_step_lib.num_valid_actions(
      length, last_step_lib.as_last_step(last_step, op))
  out = indexing.gather_steps(
      {k: v for k, v in steps.items() if k not in (observation_key, action_key)},
      index.anchors)
  out[observation_key] = indexing.gather_steps(
      steps[observation_key], index.history,
      index.history_mask if history_pad == 'zero' else None)
  out[added[0]] = index.history_mask
  keep = index.action_mask
  if action_pad == 'last':
    keep = keep | (num_valid > 0)
  out[action_key] = indexing.gather_steps(steps[action_key], index.actions,
                                          keep)
  out[added[1]] = index.action_mask
  if goal is not None:
    out[goal_key] = indexing.gather_steps(steps[observation_key], index.goals)
    out[GOAL_INDEX] = index.goals
  if index_key is not None:
    out[index_key] = index.anchors
  return out
