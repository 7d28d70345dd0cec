"""Octo-shaped samples of one episode: observation history, action chunk, goal.

``robot_samples(steps, RobotSamples(...))`` gathers each field once, at the
step indices of ``robot_sample_indices``.

Example:
  >>> import tensorflow as tf
  >>> from rlds_lite import RobotSamples
  >>> steps = {'observation': tf.constant([0, 1, 2]),
  ...          'action': tf.constant([5, 6, 7])}
  >>> out = robot_samples(steps, RobotSamples(history=2, action_chunk=2))
  >>> out['observation'].numpy().tolist(), out['action'].numpy().tolist()
  ([[0, 0], [0, 1]], [[5, 6], [6, 6]])
"""

from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence

import tensorflow as tf

from rlds_lite import op_context
from rlds_lite import option_objects
from rlds_lite import rlds_types
from rlds_lite.dense import chunking
from rlds_lite.dense import goals as goals_lib
from rlds_lite.dense import indexing
from rlds_lite.dense import last_step as last_step_lib
from rlds_lite.dense import seeding

GOAL_INDEX = 'goal_index'
"""Key of the goal's step index (``[N]`` int32) added with a goal."""

SAMPLE_DEFAULTS = {
    'history': 1, 'action_chunk': 1, 'last_step': 'invalid',
    'history_stride': 1, 'shift': 1, 'history_pad': 'first',
    'action_pad': 'last', 'keep_actionless': False, 'max_samples': None,
    'goal': None, 'goal_p': None, 'observation_key': rlds_types.OBSERVATION,
    'action_key': rlds_types.ACTION, 'goal_key': goals_lib.GOAL,
    'index_key': None}
"""A robot sample's knobs and defaults: `rlds_lite.RobotSamples`' fields
(tested equal), the flat keywords these functions took before kinds."""
_INDEX_KNOBS = ('history', 'action_chunk', 'last_step', 'history_stride',
                'shift', 'keep_actionless', 'max_samples', 'goal', 'goal_p')
_PADS = (('history_pad', ('first', 'zero')), ('action_pad', ('last', 'zero')))


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


def _check_goal(goal: Optional[str], goal_p: Optional[float]
                ) -> Optional[float]:
  if goal is None:
    if goal_p is not None:
      raise ValueError('goal_p is only used with a goal strategy.')
    return None
  if goal not in goals_lib.STRATEGIES:
    raise ValueError('goal must be None or one of '
                     f'{goals_lib.STRATEGIES}, got {goal!r}.')
  if goal == 'geometric':
    if goal_p is None or isinstance(goal_p, bool) or not 0 < float(goal_p) <= 1:
      raise ValueError(f"goal 'geometric' needs goal_p in (0, 1], got "
                       f'{goal_p!r}.')
    return float(goal_p)
  if goal_p is not None:
    raise ValueError(f"goal_p only applies to goal 'geometric', not "
                     f'{goal!r}.')
  return None


def check_sample_args(history: int, action_chunk: int, history_stride: int,
                      shift: int, max_samples: Optional[int],
                      goal: Optional[str], goal_p: Optional[float]
                      ) -> Optional[float]:
  """Checks the counts and goal of a robot sample; returns ``goal_p`` (float or None).

  Example:
    >>> check_sample_args(2, 0, 1, 1, None, None, None)
    Traceback (most recent call last):
    ...
    ValueError: action_chunk must be a positive int, got 0.
  """
  for name, value in (('history', history), ('action_chunk', action_chunk),
                      ('history_stride', history_stride), ('shift', shift)):
    indexing.check_positive_int(value, name)
  if max_samples is not None:
    indexing.check_positive_int(max_samples, 'max_samples')
  return _check_goal(goal, goal_p)


def check_knobs(knobs: Mapping[str, Any]) -> Dict[str, Any]:
  """``knobs`` (some of `SAMPLE_DEFAULTS`' keys) checked and normalised.

  ``last_step`` becomes its string, ``goal_p`` a float; a bad value is a
  ValueError.

  Example:
    >>> check_knobs({'history_pad': 'last'})
    Traceback (most recent call last):
    ...
    ValueError: history_pad must be one of ('first', 'zero'), got 'last'.
  """
  out = {**SAMPLE_DEFAULTS, **knobs}
  out['goal_p'] = check_sample_args(
      out['history'], out['action_chunk'], out['history_stride'],
      out['shift'], out['max_samples'], out['goal'], out['goal_p'])
  out['last_step'] = last_step_lib.as_last_step(out['last_step']).value
  for name, choices in _PADS:
    if out[name] not in choices:
      raise ValueError(f'{name} must be one of {choices}, got '
                       f'{out[name]!r}.')
  return out


def _knobs(op: str, kind: Any, args: Sequence[Any], legacy: Dict[str, Any],
           allowed: Sequence[str]) -> Dict[str, Any]:
  """The checked knobs of a kind, or of the flat spelling (warned once).

  ``op`` (the public function) is named where Python would name it (``op()
  takes ...``) and in the rename warning; other errors gain it at the boundary.
  """
  if isinstance(kind, int) or args:   # The old positional history, chunk.
    if len(args) > 1:
      raise TypeError(f'{op}() takes from 1 to 3 positional arguments but '
                      f'{len(args) + 2} were given')
    named = ('history', 'action_chunk')
    legacy = {**dict(zip(named, (kind,) + tuple(args))), **legacy}
    kind = None
  unknown = sorted(set(legacy) - set(allowed))
  if unknown:
    raise TypeError(f'{op}() got an unexpected keyword argument '
                    f'{unknown[0]!r}')
  if kind is not None:
    if legacy:
      raise TypeError(f'pass the sample arguments in the kind '
                      f'(RobotSamples(...)), not beside it: {sorted(legacy)}.')
    if not callable(getattr(kind, 'dense_kwargs', None)):
      raise TypeError(f'kind must be a RobotSamples(...), got '
                      f'{type(kind).__name__}.')
    legacy = {k: v for k, v in kind.dense_kwargs().items() if k in allowed}
  elif legacy:
    spelt = ', '.join(f'{k}={v!r}' for k, v in legacy.items())
    option_objects.warn_once(
        ('dense', op), f'{op}: the sample keywords are now a kind: '
        f'{op}(..., RobotSamples({spelt})) (rlds_lite.RobotSamples); the old '
        'keywords will go in a later release.')
  return check_knobs(legacy)


@op_context.named('robot_sample_indices')
def robot_sample_indices(length: tf.Tensor, kind: Any = None,
                         *legacy_args: Any, seed: Optional[Any] = None,
                         **legacy: Any) -> SampleIndices:
  """The step indices (`SampleIndices`) of the samples of an episode of ``length`` steps.

  Anchors are steps ``0, shift, ...`` with a valid action; each gets its
  history, action chunk and goal steps, masked outside the episode.

  Args:
    length: the episode length ``T`` (scalar int).
    kind: a `rlds_lite.RobotSamples` (None: its defaults).
    seed: seed of the random choices (``max_samples``, ``goal``).

  Example:
    >>> from rlds_lite import RobotSamples
    >>> kind = RobotSamples(history=2, action_chunk=3, history_stride=2)
    >>> out = robot_sample_indices(tf.constant(4), kind)
    >>> out.anchors.numpy().tolist(), out.history.numpy().tolist()
    ([0, 1, 2], [[0, 0], [0, 1], [0, 2]])
    >>> out.action_mask.numpy().tolist()
    [[True, True, True], [True, True, False], [True, False, False]]
  """
  knobs = _knobs('robot_sample_indices', kind, legacy_args, legacy,
                 _INDEX_KNOBS)
  return _indices(length, knobs, seed)


def _indices(length: tf.Tensor, knobs: Dict[str, Any], seed: Optional[Any]
             ) -> SampleIndices:
  """`robot_sample_indices` of checked knobs."""
  history, chunk, goal = knobs['history'], knobs['action_chunk'], knobs['goal']
  max_samples = knobs['max_samples']
  policy = last_step_lib.as_last_step(knobs['last_step'])
  length = tf.convert_to_tensor(length, tf.int32)
  num_valid = last_step_lib.num_valid_actions(length, policy)
  limit = length if knobs['keep_actionless'] else num_valid
  anchors = tf.range(0, limit, knobs['shift'])
  needs_seed = max_samples is not None or goal not in (None, 'final')
  seed = seeding.stateless_seed(seed if needs_seed else 0)
  subsample_seed, goal_seed = tf.unstack(
      tf.random.experimental.stateless_split(seed, 2))
  if max_samples is not None:
    count = tf.shape(anchors)[0]
    keys = tf.random.stateless_uniform([count], subsample_seed)
    _, chosen = tf.math.top_k(keys, k=tf.minimum(count, max_samples),
                              sorted=False)
    anchors = tf.gather(anchors, tf.sort(chosen))
  history_steps, history_mask = chunking.history_indices(
      anchors, history, knobs['history_stride'])
  action_steps, action_mask = chunking.chunk_indices(anchors, chunk, num_valid)
  goal_steps = None
  if goal is not None:
    goal_steps = tf.gather(
        goals_lib.goal_indices(length, goal, goal_seed, knobs['goal_p']),
        anchors)
  return SampleIndices(anchors, history_steps, history_mask, action_steps,
                       action_mask, goal_steps)


def _added_keys(steps: Dict[str, Any], knobs: Dict[str, Any]) -> List[str]:
  """The keys `robot_samples` adds (the pad masks first); a clash refused."""
  obs_key, action_key = knobs['observation_key'], knobs['action_key']
  indexing.require_fields(steps, [obs_key, action_key])
  added = [obs_key + chunking.PAD_MASK_SUFFIX,
           action_key + chunking.PAD_MASK_SUFFIX]
  if knobs['goal'] is not None:
    added += [knobs['goal_key'], GOAL_INDEX]
  if knobs['index_key'] is not None:
    added.append(knobs['index_key'])
  indexing.reject_fields(steps, added)
  if len(set(added + [obs_key, action_key])) != len(added) + 2:
    raise ValueError(f'the output keys {added} collide with '
                     f'{obs_key!r} / {action_key!r}.')
  return added


@op_context.named('robot_samples')
def robot_samples(steps: Mapping[str, Any], kind: Any = None,
                  *legacy_args: Any, seed: Optional[Any] = None,
                  **legacy: Any) -> Dict[str, Any]:
  """Observation histories, action chunks and step fields of one episode, ``[N, ...]``.

  The samples of ``robot_sample_indices``: ``observation`` ``[N, history,
  ...]`` and ``action`` ``[N, action_chunk, ...]`` with their pad masks, the
  anchor's other fields, the goal (and ``'goal_index'``) with a goal.

  Args:
    steps: one episode's dense steps (``observation``, ``action`` may nest).
    kind: a `rlds_lite.RobotSamples` (None: its defaults).
    seed: seed of the random choices (``max_samples``, ``goal``).

  Example:
    >>> from rlds_lite import RobotSamples
    >>> steps = {'observation': tf.range(4), 'action': tf.range(4) * 10,
    ...          'is_terminal': tf.constant([False, False, False, True])}
    >>> kind = RobotSamples(action_chunk=2, goal='final', index_key='t')
    >>> out = robot_samples(steps, kind)
    >>> out['goal'].numpy().tolist(), out['t'].numpy().tolist()
    ([3, 3, 3], [0, 1, 2])
    >>> out['action'].numpy().tolist()
    [[0, 10], [10, 20], [20, 20]]
  """
  knobs = _knobs('robot_samples', kind, legacy_args, legacy,
                 tuple(SAMPLE_DEFAULTS))
  steps = indexing.as_dense_steps(steps)
  obs_key, action_key = knobs['observation_key'], knobs['action_key']
  added = _added_keys(steps, knobs)
  length = indexing.episode_length(steps)
  index = _indices(length, knobs, seed)
  num_valid = last_step_lib.num_valid_actions(
      length, last_step_lib.as_last_step(knobs['last_step']))
  out = indexing.gather_steps(
      {k: v for k, v in steps.items() if k not in (obs_key, action_key)},
      index.anchors)
  out[obs_key] = indexing.gather_steps(
      steps[obs_key], index.history,
      index.history_mask if knobs['history_pad'] == 'zero' else None)
  out[added[0]] = index.history_mask
  keep = index.action_mask
  if knobs['action_pad'] == 'last':
    keep = keep | (num_valid > 0)
  out[action_key] = indexing.gather_steps(steps[action_key], index.actions,
                                          keep)
  out[added[1]] = index.action_mask
  if knobs['goal'] is not None:
    out[knobs['goal_key']] = indexing.gather_steps(steps[obs_key], index.goals)
    out[GOAL_INDEX] = index.goals
  if knobs['index_key'] is not None:
    out[knobs['index_key']] = index.anchors
  return out
