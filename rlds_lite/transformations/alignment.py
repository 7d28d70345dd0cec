"""Re-alignment of step fields: shift some keys forwards or backwards in time."""

import enum
from typing import Any, Dict, Sequence, Union

import tensorflow as tf

from rlds_lite import rlds_types
from rlds_lite.transformations import stacked_rows
from rlds_lite.transformations.auto_batch import BATCH_AUTO_TUNE
from rlds_lite.transformations.auto_batch import get_batch_size

__all__ = ['shift_keys', 'AlignmentType', 'add_alignment_to_step']


def _validated_keys(spec: Any, keys: Union[str, Sequence[str]]) -> frozenset:
  """``keys`` as a set, checked against the step spec."""
  if not isinstance(spec, dict):
    raise TypeError('shift_keys needs a dataset of step dicts, got elements '
                    f'of type {type(spec).__name__}.')
  if isinstance(keys, str):
    keys = [keys]
  keys = list(keys)
  for key in keys:
    if not isinstance(key, str):
      raise TypeError(f'keys must be step field names (str), got {key!r}.')
  if not all(isinstance(s, tf.TensorSpec) for s in tf.nest.flatten(spec)):
    raise TypeError('shift_keys needs steps made of dense tensors.')
  missing = sorted(set(keys) - set(spec))
  if missing:
    raise ValueError(f'keys {missing} are not step fields; the steps have '
                     f'{sorted(spec)}.')
  return frozenset(keys)










def _output_length(n: Any, distance: int) -> Any:
  if isinstance(n, int):
    return max(n - distance, 0)
  return tf.maximum(n - distance, 0)


@tf.autograph.experimental.do_not_convert  # Graph-building code: no AutoGraph.
def _with_cardinality(shifted: tf.data.Dataset, steps: tf.data.Dataset,
                      distance: int) -> tf.data.Dataset:
  """``shifted`` with cardinality ``n - distance`` when ``n`` is known."""
  n = steps.cardinality()
  static_n = tf.get_static_value(n)
  if static_n is not None:
    static_n = int(static_n)
    if static_n == tf.data.UNKNOWN_CARDINALITY:
      return shifted
    expected = (static_n if static_n == tf.data.INFINITE_CARDINALITY
                else _output_length(static_n, distance))
    return shifted.apply(tf.data.experimental.assert_cardinality(expected))
  # Inside a traced function the cardinality is only known at run time.
  expected = tf.where(n >= 0, _output_length(n, distance), n)
  return tf.cond(
      n != tf.data.UNKNOWN_CARDINALITY,
      lambda: shifted.apply(tf.data.experimental.assert_cardinality(expected)),
      lambda: shifted)


@tf.autograph.experimental.do_not_convert  # Graph-building code: no AutoGraph.
def _shifted(steps: tf.data.Dataset, later: frozenset, distance: int,
             size: int) -> tf.data.Dataset:
  """Steps whose ``later`` fields come from ``distance`` steps further on.

  A ``scan`` over batches of ``size`` steps keeps the last ``distance`` steps
  seen (a fixed length keeps the state shape static) and how many of them are
  real; one gather per field and batch pairs each step with its partner.
  """
  spec = steps.element_spec

  @tf.autograph.experimental.do_not_convert
  def realign(state, block):
    history, kept = state
    added = stacked_rows.leading_dim(block)
    buf = stacked_rows.extend_history(history, kept, block, spec)
    first = distance - kept  # The oldest real step in `buf`.
    count = tf.maximum(kept + added - distance, 0)
    earlier = first + tf.range(count, dtype=tf.int64)
    out = {k: stacked_rows.gather_rows(
               v, earlier + distance if k in later else earlier)
           for k, v in buf.items()}
    history = stacked_rows.gather_rows(
        buf, added + tf.range(distance, dtype=tf.int64))
    return (history, tf.minimum(kept + added, distance)), out

  initial = (stacked_rows.zero_rows(spec, distance), tf.constant(0, tf.int64))
  return steps.batch(size).scan(initial, realign).unbatch()


def shift_keys(steps: tf.data.Dataset,
               keys: Union[str, Sequence[str]],
               shift: int,
               batch_size: int = BATCH_AUTO_TUNE) -> tf.data.Dataset:
  """Shifts the fields ``keys`` by ``shift`` steps relative to the others.

    In every output step the ``keys`` come from ``shift`` steps after the
    other fields, and the ``|shift|`` steps without a partner are dropped
    (``max(n - |shift|, 0)`` steps). ``shift=-1`` on action and reward gives
    EnvLogger alignment, ``shift=1`` undoes it.

    Args:
      steps: dataset of step dicts.
      keys: the top-level step fields to shift (or one field name).
      shift: how many steps later (earlier if negative) ``keys`` are taken.
      batch_size: steps per vectorised batch (``BATCH_AUTO_TUNE``: from the
        step size); it does not change the result.

    Example:
      >>> steps = tf.data.Dataset.from_tensor_slices(
      ...     {'obs': [0, 1, 2], 'action': [10, 11, 12]})
      >>> shifted = shift_keys(steps, ['action'], -1)
      >>> [(s['obs'].tolist(), s['action'].tolist())
      ...  for s in shifted.as_numpy_iterator()]
      [(1, 10), (2, 11)]
      >>> int(shifted.cardinality())
      2
  """
  spec = steps.element_spec
  keys = _validated_keys(spec, keys)
  if isinstance(shift, bool) or not hasattr(shift, '__index__'):
    raise TypeError(f'shift must be an int, got {shift!r}.')
  shift = int(shift)
  size = get_batch_size(steps, batch_size)
  if shift == 0:
    return steps
  return _with_cardinality(
      _shifted(steps, keys if shift > 0 else frozenset(spec) - keys,
               abs(shift), size),
      steps, abs(shift))


@enum.unique
class AlignmentType(enum.Enum):
  """How a dataset pairs observations, actions and rewards in a step.

    ``SAR``: observation, the action taken from it, its reward (RLDS).
    ``ARS``: the action and reward that led to the observation (EnvLogger).
    ``RSA``: the reward that led to the observation, then the action.

    Example:
      >>> AlignmentType(3), AlignmentType['SAR']
      (<AlignmentType.ARS: 3>, <AlignmentType.SAR: 2>)
  """
  UNKNOWN = enum.auto()
  SAR = enum.auto()
  ARS = enum.auto()
  RSA = enum.auto()


def add_alignment_to_step(step: rlds_types.Step,
                          alignment: AlignmentType) -> rlds_types.Step:
  """A copy of ``step`` with ``ALIGNMENT`` set to ``alignment.value``.

    Example:
      >>> add_alignment_to_step({'reward': 1.0}, AlignmentType.SAR)
      {'reward': 1.0, 'alignment': 2}
  """
  if not isinstance(alignment, AlignmentType):
    raise TypeError(
        f'alignment must be an AlignmentType, got {alignment!r}.')
  return {**step, rlds_types.ALIGNMENT: alignment.value}
