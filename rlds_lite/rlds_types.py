"""Names and builders of the RLDS format: steps, episodes and their fields.

An *episode* is a dict whose ``steps`` holds the steps (a dataset of step
dicts, or dense ``[T, ...]`` tensors); its other entries are metadata.
"""

from typing import Any, Callable, Dict, List, Mapping, Optional, Union

import tensorflow as tf

# The names live in a module of their own, below `validation` (which checks
# them) and this module (which also offers upstream's `is_valid_rlds_dataset`).
from rlds_lite.rlds_names import ACTION
from rlds_lite.rlds_names import ALIGNMENT
from rlds_lite.rlds_names import CORE_STEP_FIELDS
from rlds_lite.rlds_names import DISCOUNT
from rlds_lite.rlds_names import IS_FIRST
from rlds_lite.rlds_names import IS_LAST
from rlds_lite.rlds_names import IS_TERMINAL
from rlds_lite.rlds_names import MANDATORY_STEP_FIELDS
from rlds_lite.rlds_names import OBSERVATION
from rlds_lite.rlds_names import REWARD
from rlds_lite.rlds_names import STEPS
from rlds_lite.validation import is_valid_rlds_dataset

Episode = Dict[str, Any]
Step = Dict[str, Any]
BatchedStep = Step
BatchedEpisode = Episode

StepFilterFn = Callable[[Step], bool]
EpisodeFilterFn = Callable[[Episode], bool]
StepsToStepsFn = Callable[[tf.data.Dataset], tf.data.Dataset]
StepMapFn = Callable[[Step], Step]


def build_step(
    observation: Optional[Any],
    action: Optional[Any],
    reward: Optional[Any],
    discount: Optional[Any],
    is_terminal: Optional[Union[List[bool], bool]],
    is_first: Union[List[bool], bool],
    is_last: Union[List[bool], bool],
    metadata: Optional[Mapping[str, Any]] = None) -> Step:
  """Returns a step dict; fields given as ``None`` are left out.

  Values may be scalars or lists (a batch of steps). ``metadata`` holds extra
  step fields; one named like a step field is a ValueError.

  Example:
    >>> build_step(None, None, None, None, None, True, True, {'t': 0})
    {'is_first': True, 'is_last': True, 't': 0}
  """
  step = {IS_FIRST: is_first, IS_LAST: is_last}
  optional = {
      OBSERVATION: observation,
      ACTION: action,
      REWARD: reward,
      DISCOUNT: discount,
      IS_TERMINAL: is_terminal,
  }
  step.update({k: v for k, v in optional.items() if v is not None})
  for key, value in (metadata or {}).items():
    if key in step or key in CORE_STEP_FIELDS:
      raise ValueError(  # Starts as upstream RLDS's message does.
          f'Invalid Step Metadata: it contains step key {key} ({key!r} is '
          'a step field; rename it).')
    step[key] = value
  return step


def build_episode(steps: Union[List[Any], tf.data.Dataset, Mapping[str, Any]],
                  metadata: Optional[Mapping[str, Any]] = None) -> Episode:
  """Returns an episode dict ``{'steps': steps, **metadata}``.

  Example:
    >>> build_episode(steps=[], metadata={'episode_id': 7})
    {'steps': [], 'episode_id': 7}
  """
  metadata = dict(metadata or {})
  if STEPS in metadata:
    raise ValueError(  # Upstream RLDS's message, word for word.
        f'Invalid Episode Metadata: it contains an episode key ({STEPS})')
  return {STEPS: steps, **metadata}
