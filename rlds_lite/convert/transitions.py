"""Episodes as N transitions plus a final observation, and back to ``T = N + 1`` RLDS steps.

How the discount is derived and what ``last_step='valid'`` changes:
docs/convert.md.
"""

from typing import Any, Dict, Iterable, Iterator, Optional, Union

import numpy as np
import tensorflow as tf

from rlds_lite import nest_paths
from rlds_lite import op_context
from rlds_lite import rlds_types
from rlds_lite.convert import episodes as episodes_lib
from rlds_lite.convert import strings
from rlds_lite.dense import last_step as last_step_lib

FLAG_FIELDS = (rlds_types.IS_FIRST, rlds_types.IS_LAST, rlds_types.IS_TERMINAL)
"""RLDS flags: derived from the formats' end flags, never stored as data."""

CORE_FIELDS = frozenset((rlds_types.OBSERVATION, rlds_types.ACTION,
                         rlds_types.REWARD, rlds_types.DISCOUNT) + FLAG_FIELDS)
"""Step fields with a place of their own in a transition layout."""


def derived_discount(length: int, terminated: bool,
                     dtype: Any = np.float32) -> np.ndarray:
  """The RLDS discount of an episode of ``length`` steps with no stored one.

  Example:
    >>> derived_discount(3, terminated=True).tolist()
    [1.0, 0.0, 0.0]
    >>> derived_discount(3, terminated=False).tolist()
    [1.0, 1.0, 0.0]
  """
  discount = np.ones(length, dtype)
  discount[-1] = 0
  if terminated and length >= 2:
    discount[-2] = 0
  return discount


def _append_zero_row(leaf: np.ndarray) -> np.ndarray:
  leaf = np.asarray(leaf)
  pad = np.zeros((1,) + leaf.shape[1:], leaf.dtype)
  if leaf.dtype.kind == 'O':
    pad[...] = b''
  return np.concatenate([leaf, pad])


def append_zero_step(value: Any) -> Any:
  """Every leaf of a nest of ``[N, ...]`` arrays with a zero row appended.

  Example:
    >>> append_zero_step({'a': np.array([[1, 2]]), 'b': np.array([3.])})
    {'a': array([[1, 2],
           [0, 0]]), 'b': array([3., 0.])}
  """
  return tf.nest.map_structure(_append_zero_row, value)


def steps_from_transitions(observations: Any, actions: Any, rewards: Any,
                           terminated: bool, *,
                           discounts: Optional[np.ndarray] = None,
                           extras: Optional[Dict[str, Any]] = None
                           ) -> Dict[str, Any]:
  """RLDS steps from ``N + 1`` observations and ``N`` actions and rewards.

  Args:
    observations: nest of ``[N + 1, ...]`` arrays (``o_0 .. o_N``).
    actions: nest of ``[N, ...]`` arrays.
    rewards: ``[N]`` array.
    terminated: whether the last transition terminates the episode.
    discounts: stored ``[N]`` transition discounts, or None to derive them
      (see `derived_discount`); the last step's discount is 0.
    extras: more step fields, each a nest of ``[N + 1, ...]`` arrays.

  Returns:
    The ``steps`` dict of an Episode with ``T = N + 1`` steps.

  Example:
    >>> s = steps_from_transitions(np.zeros((1, 2)), np.zeros((0, 1)),
    ...                            np.zeros(0), terminated=False)
    >>> s['action'].shape, s['is_last'].tolist()
    ((1, 1), [True])
  """
  rewards = np.asarray(rewards)
  length = rewards.shape[0] + 1
  if discounts is None:
    discount = derived_discount(length, terminated)
  else:
    discount = _append_zero_row(discounts)
  steps = dict(extras or {})
  steps.update({
      rlds_types.OBSERVATION: observations,
      rlds_types.ACTION: append_zero_step(actions),
      rlds_types.REWARD: _append_zero_row(rewards),
      rlds_types.DISCOUNT: discount,
      **episodes_lib.rlds_flags(length, terminated),
  })
  return steps


def transitions_from_steps(steps: Dict[str, Any]) -> Dict[str, Any]:
  """The transition view of checked RLDS steps (the inverse of `steps_from_transitions`).

  Returns:
    A dict with ``observations`` (``T`` entries), ``actions`` and ``rewards``
    (``N = T - 1``), ``terminated``, ``discounts`` (``[N]``, or None when
    derived) and ``extras`` (the other step fields).

  Example:
    >>> t = transitions_from_steps({'observation': np.arange(3),
    ...     'action': np.array([4, 5, 0]), 'reward': np.array([1., 1., 0.]),
    ...     'discount': np.array([1., .5, 0.], np.float32),
    ...     **episodes_lib.rlds_flags(3, False)})
    >>> t['actions'].tolist(), t['discounts'].tolist(), t['terminated']
    ([4, 5], [1.0, 0.5], False)
  """
  terminated = bool(np.asarray(steps[rlds_types.IS_TERMINAL])[-1])
  length = len(np.asarray(steps[rlds_types.IS_LAST]))
  discounts = None
  if rlds_types.DISCOUNT in steps:
    discount = np.asarray(steps[rlds_types.DISCOUNT])
    derived = derived_discount(length, terminated)
    if (discount.dtype != np.float32 or
        not np.array_equal(discount[:-1], derived[:-1])):
      discounts = discount[:-1]
  return {
      'observations': steps[rlds_types.OBSERVATION],
      'actions': tf.nest.map_structure(lambda x: np.asarray(x)[:-1],
                                       steps[rlds_types.ACTION]),
      'rewards': np.asarray(steps[rlds_types.REWARD])[:-1],
      'terminated': terminated,
      'discounts': discounts,
      'extras': {k: v for k, v in steps.items() if k not in CORE_FIELDS},
  }


LastStepLike = Union[last_step_lib.LastStep, str]
"""``'invalid'`` (RLDS's default) or ``'valid'``, or a ``LastStep``."""
_ACTION_REWARD_DISCOUNT = (rlds_types.ACTION, rlds_types.REWARD,
                           rlds_types.DISCOUNT)


def _nonzero_last(leaf: Any) -> bool:
  """Whether the last row of a ``[T, ...]`` array holds a non-zero value
  (for strings: a non-empty one)."""
  leaf = np.asarray(leaf)
  last = leaf[-1:]
  if leaf.dtype.kind in 'OSUT':
    return any(len(x) for x in last.ravel())
  return bool(np.any(last != 0))


class LastStepValues:
  """Counts, per field, the episodes whose last-step values a writer drops.

  Args:
    where: the writer, for the warning (``'to_d4rl'``).
    extras: the writer drops the last step of step fields other than the
      observation too (the row formats: D4RL, il-representations, TED).

  Example:
    >>> values = LastStepValues('to_x', extras=False)
    >>> values.add({'observation': np.zeros(2), 'reward': np.array([0., 1.]),
    ...             'action': np.zeros(2), **episodes_lib.rlds_flags(2, True)})
    >>> values.counts, values.episodes
    ({'reward': 1}, 1)
  """

  def __init__(self, where: str, extras: bool):
    self.where = where
    self.extras = extras
    self.why = (
        "this format has no row for a last step, whose action, reward and "
        'discount RLDS says are invalid' if extras else None)
    self.counts: Dict[str, int] = {}
    self.episodes = 0

  def _dropped(self, key: str) -> bool:
    if key in _ACTION_REWARD_DISCOUNT:
      return True
    return self.extras and key not in CORE_FIELDS

  def add(self, steps: Dict[str, Any]) -> None:
    """Counts one checked episode's non-zero last-step values."""
    self.episodes += 1
    for key, value in steps.items():
      if not self._dropped(key):
        continue
      for path, leaf in nest_paths.flatten_with_paths(value, key):
        if np.size(leaf) and _nonzero_last(leaf):
          self.counts[path] = self.counts.get(path, 0) + 1

  def warn(self, stacklevel: int = 4) -> None:
    """The one `LastStepValuesWarning` of the call, if a value was dropped.

    Args:
      stacklevel: as ``warnings.warn``'s, counted from here (4: the caller
        of the function that calls this).
    """
    kwargs = {'why': self.why} if self.why else {}
    last_step_lib.warn_last_step_values(self.where, self.counts,
                                        self.episodes, stacklevel=stacklevel,
                                        **kwargs)


def _with_row(leaf: Any, zero: bool) -> np.ndarray:
  leaf = np.asarray(leaf)
  row = strings.zero_rows(1, leaf) if zero else leaf[-1:]
  return np.concatenate([leaf, row])


def with_final_step(episode: episodes_lib.Episode) -> episodes_lib.Episode:
  """A ``'valid'`` episode of ``T`` steps as ``T + 1`` RLDS steps (a placeholder final step).

  Example:
    >>> e = {'steps': {'observation': np.array([0., 1.]),
    ...                'reward': np.array([0., 1.]),
    ...                **episodes_lib.rlds_flags(2, True)}}
    >>> steps = with_final_step(e)['steps']
    >>> steps['observation'].tolist(), steps['reward'].tolist()
    ([0.0, 1.0, 1.0], [0.0, 1.0, 0.0])
    >>> steps['is_terminal'].tolist()
    [False, False, True]
  """
  steps = episode[rlds_types.STEPS]
  length = len(np.asarray(steps[rlds_types.IS_LAST]))
  terminated = bool(np.asarray(steps[rlds_types.IS_TERMINAL])[-1])
  out = {k: tf.nest.map_structure(
      lambda leaf, zero=k in _ACTION_REWARD_DISCOUNT: _with_row(leaf, zero), v)
         for k, v in steps.items() if k not in FLAG_FIELDS}
  out.update(episodes_lib.rlds_flags(length + 1, terminated))
  return {**episode, rlds_types.STEPS: out}


def without_final_step(episode: episodes_lib.Episode, *,
                       source: str = '<episodes>', index: int = 0
                       ) -> episodes_lib.Episode:
  """The inverse of `with_final_step`: the last step dropped, its end kept.

  Raises:
    ConversionError: for a one-step episode (nothing would be left).

  Example:
    >>> e = {'steps': {'reward': np.array([0., 1., 0.]),
    ...                **episodes_lib.rlds_flags(3, True)}}
    >>> steps = without_final_step(e)['steps']
    >>> steps['reward'].tolist(), steps['is_terminal'].tolist()
    ([0.0, 1.0], [False, True])
  """
  steps = episode[rlds_types.STEPS]
  length = len(np.asarray(steps[rlds_types.IS_LAST]))
  if length < 2:
    raise episodes_lib.ConversionError(
        "has one step, only a final observation: with last_step='valid' "
        'every step holds a real action, so nothing is left', source=source,
        episode=index, field=rlds_types.IS_LAST)
  terminated = bool(np.asarray(steps[rlds_types.IS_TERMINAL])[-1])
  out = {k: tf.nest.map_structure(lambda leaf: np.asarray(leaf)[:-1], v)
         for k, v in steps.items() if k not in FLAG_FIELDS}
  out.update(episodes_lib.rlds_flags(length - 1, terminated))
  return {**episode, rlds_types.STEPS: out}


def last_step_policy(last_step: LastStepLike, op: str) -> last_step_lib.LastStep:
  """``last_step`` as a ``LastStep``; a ValueError naming ``op`` otherwise."""
  with op_context.named(op):
    return last_step_lib.as_last_step(last_step)


def prepared_for_writing(episodes: Iterable[episodes_lib.Episode],
                         policy: last_step_lib.LastStep,
                         values: LastStepValues
                         ) -> Iterator[episodes_lib.Episode]:
  """Checked episodes as a writer takes them (see the module docstring).

  ``'invalid'``: counted into ``values`` and passed on; ``'valid'``: with
  their placeholder final step (`with_final_step`).
  """
  for episode in episodes:
    if policy is last_step_lib.LastStep.VALID:
      yield with_final_step(episode)
    else:
      values.add(episode[rlds_types.STEPS])
      yield episode


def read_with_policy(episodes: Iterable[episodes_lib.Episode],
                     policy: last_step_lib.LastStep, source: str
                     ) -> Iterator[episodes_lib.Episode]:
  """A reader's episodes; with ``'valid'`` their final step dropped."""
  for index, episode in enumerate(episodes):
    if policy is last_step_lib.LastStep.VALID:
      episode = without_final_step(episode, source=source, index=index)
    yield episode
