"""Whether the last step of an episode carries a valid action: `LastStep` (docs/last_step.md).

Example:
  >>> import tensorflow as tf
  >>> int(num_valid_actions(tf.constant(4), LastStep.INVALID))
  3
  >>> int(num_valid_actions(tf.constant(4), 'valid'))
  4
"""

import enum
from typing import Mapping, Optional, Union
import warnings

import tensorflow as tf


class LastStep(str, enum.Enum):
  """Validity of the action on an episode's last step.

  Attributes:
    INVALID: the RLDS spec: the last step's action/reward/discount are
      meaningless (the default).
    VALID: the last step's action is a real action (common in robot data).
  """
  INVALID = 'invalid'
  VALID = 'valid'


def as_last_step(value: Union[LastStep, str]) -> LastStep:
  """``value`` as a ``LastStep`` (accepts the enum or ``'invalid'``/``'valid'``).

  Example:
    >>> as_last_step('valid')
    <LastStep.VALID: 'valid'>
  """
  try:
    return LastStep(value)
  except ValueError:
    raise ValueError(
        'last_step must be LastStep.INVALID or LastStep.VALID '
        f"('invalid'/'valid'), got {value!r}.") from None


class LastStepValuesWarning(UserWarning):
  """Non-zero action/reward/discount values of last steps were left out.

  Raised (as a warning, once per call) by what follows the RLDS default
  ``last_step='invalid'`` and finds such values: they may be real (a success
  reward on the final step); ``last_step='valid'`` keeps them.
  """


_RLDS_SAYS = "RLDS says a last step's action, reward and discount are invalid"


def last_step_message(where: str, counts: Mapping[str, int],
                      num_episodes: Optional[int] = None,
                      why: str = _RLDS_SAYS) -> str:
  """The text of a `LastStepValuesWarning`: fields, episodes, how to keep them.

  Example:
    >>> last_step_message('stats', {'reward': 3}, 10)
    "stats: left out non-zero last-step values of reward (3 of 10 episodes): RLDS says a last step's action, reward and discount are invalid; pass last_step='valid' (command line: --last-step valid) to keep them."
  """
  of = f' of {num_episodes}' if num_episodes is not None else ''
  listed = ', '.join(
      f'{field} ({count}{of} episode{"" if count == 1 and not of else "s"})'
      for field, count in sorted(counts.items()))
  return (f'{where}: left out non-zero last-step values of {listed}: {why}; '
          "pass last_step='valid' (command line: --last-step valid) to keep "
          'them.')


def warn_last_step_values(where: str, counts: Mapping[str, int],
                          num_episodes: Optional[int] = None,
                          stacklevel: int = 3, why: str = _RLDS_SAYS) -> None:
  """Warns once (`LastStepValuesWarning`) if ``counts`` has any field.

  Args:
    where: what left the values out (``'stats'``, ``'to_d4rl'``).
    counts: episodes with a non-zero last-step value, by field path.
    num_episodes: the episodes looked at, if known.
    stacklevel: passed to ``warnings.warn`` (3: the caller's caller).
    why: why they were left out.
  """
  counts = {k: v for k, v in counts.items() if v}
  if counts:
    warnings.warn(LastStepValuesWarning(
        last_step_message(where, counts, num_episodes, why)),
                  stacklevel=stacklevel)


def num_valid_actions(length: tf.Tensor,
                      last_step: Union[LastStep, str]) -> tf.Tensor:
  """How many leading steps of an episode of ``length`` steps have a valid action.

  ``length - 1`` (at least 0) under ``LastStep.INVALID``, ``length`` under
  ``LastStep.VALID``.

  Example:
    >>> int(num_valid_actions(tf.constant(0), LastStep.INVALID))
    0
  """
  length = tf.convert_to_tensor(length)
  if as_last_step(last_step) is LastStep.VALID:
    return length
  return tf.maximum(length - 1, 0)
