"""Episodes as N transitions plus a final observation, and back to RLDS steps.

Minari and D4RL store an episode as ``N`` transitions ``(o_t, a_t, r_t)``
with their end flags, plus (Minari always, D4RL through
``next_observations``) the final observation ``o_N``. RLDS stores the same
episode as ``T = N + 1`` steps: step ``t < N`` holds ``(o_t, a_t, r_t)``, the
last step holds ``o_N`` with zero action and reward. The discount is not
stored by those formats; it is derived as RLDS (dm_env) defines it: ``d_t``
is the discount of the transition ``t -> t+1``, so it is 1, except 0 on the
transition that terminates (step ``N - 1`` of a terminated episode), and 0 on
the last step (which has no transition).

Example:
  >>> import numpy as np
  >>> steps = steps_from_transitions(np.array([0., 1., 2.]), np.array([5, 6]),
  ...                                np.array([1., 2.]), terminated=True)
  >>> steps['action'].tolist(), steps['discount'].tolist()
  ([5, 6, 0], [1.0, 0.0, 0.0])
  >>> transitions_from_steps(steps)['terminated']
  True
"""

from typing import Any, Dict, Optional

import numpy as np
import tensorflow as tf

from rlds_lite import rlds_types
from rlds_lite.convert import episodes as episodes_lib

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
  """The transition view of checked RLDS steps (see `steps_from_transitions`).

  Returns:
    A dict with ``observations`` (nest, ``T`` entries: ``o_0 .. o_N``),
    ``actions`` and ``rewards`` (``N = T - 1`` entries), ``terminated``
    (bool), ``discounts`` (``[N]``, or None when the discount is absent or
    the derived float32 one), ``extras`` (the other step fields, ``T``
    entries each).
    The last step's action, reward and discount are not kept (RLDS: invalid).

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
