"""Per-step summaries of an episode (flags, NaN/Inf, non-zero, shapes) that validation checks.

Example:
  >>> import tensorflow as tf
  >>> spec = {'is_first': tf.TensorSpec([None], tf.bool),
  ...         'is_last': tf.TensorSpec([None], tf.bool),
  ...         'reward': tf.TensorSpec([None], tf.float32)}
  >>> plan = make_plan(spec, dense=True, last_step_invalid=True)
  >>> plan.finite_paths, plan.value_paths
  (('reward',), ('reward',))
  >>> steps = {'is_first': [True, False], 'is_last': [False, True],
  ...          'reward': [float('nan'), 2.0]}
  >>> out = summarize({k: tf.constant(v) for k, v in steps.items()}, plan)
  >>> out['nonfinite:reward'].numpy().tolist(), out['nonzero:reward'].numpy().tolist()
  ([True, False], [True, True])
"""

import dataclasses
from typing import Any, Dict, Tuple

import tensorflow as tf

from rlds_lite import nest_paths
from rlds_lite import rlds_types

FLAGS = (rlds_types.IS_FIRST, rlds_types.IS_LAST, rlds_types.IS_TERMINAL)
LENGTH = 'length'


@dataclasses.dataclass(frozen=True)
class Plan:
  """Which summary values to compute for a step structure.

  Attributes:
    flags: the RLDS flags present.
    finite_paths: floating-point fields checked for NaN/Inf.
    shape_paths: fields whose per-step shape is recorded.
    value_paths: ``reward``/``discount`` fields checked for non-zero final-step values.
    length_paths: dense fields whose length along the step axis is recorded.
    last_value_paths: ``action``/``reward``/``discount`` fields whose non-zero final-step
      values are counted (a notice).
  """
  flags: Tuple[str, ...]
  finite_paths: Tuple[str, ...]
  shape_paths: Tuple[str, ...]
  value_paths: Tuple[str, ...]
  length_paths: Tuple[str, ...] = ()
  last_value_paths: Tuple[str, ...] = ()


def _per_step_dims(leaf: Any, dense: bool):
  """The per-step dims of a spec leaf (None: unknown rank)."""
  if leaf.shape.rank is None:
    return None
  dims = leaf.shape.as_list()
  return dims[1:] if dense else dims


def make_plan(step_spec: Any, *, dense: bool, last_step_invalid: bool,
              all_shapes: bool = False, last_values: bool = False) -> Plan:
  """The summary `Plan` of a step spec (dense ``[T, ...]`` specs or per step).

  Args:
    last_step_invalid: check ``reward``/``discount`` on the final step.
    all_shapes: record the shapes of all fields, not only those the spec leaves open.
    last_values: count non-zero final-step values (``last_value_paths``).

  Example:
    >>> make_plan({'is_last': tf.TensorSpec([], tf.bool),
    ...            'obs': tf.TensorSpec([None], tf.float64)},
    ...           dense=False, last_step_invalid=False)
    Plan(flags=('is_last',), finite_paths=('obs',), shape_paths=('obs',), value_paths=(), length_paths=(), last_value_paths=())
  """
  flat = nest_paths.flatten_with_paths(step_spec)
  flags = tuple(f for f in FLAGS if isinstance(step_spec, dict) and
                f in step_spec)
  finite, shapes, values, last_values_ = [], [], [], []
  for path, leaf in flat:
    if leaf.dtype.is_floating or leaf.dtype.is_complex:
      finite.append(path)
    dims = _per_step_dims(leaf, dense)
    if all_shapes or dims is None or None in dims:
      shapes.append(path)
    top = path.split('/')[0]
    if (last_step_invalid and top in (rlds_types.REWARD, rlds_types.DISCOUNT)
        and (leaf.dtype.is_floating or leaf.dtype.is_integer or
             leaf.dtype == tf.bool)):
      values.append(path)
    if (last_values and top in (rlds_types.ACTION, rlds_types.REWARD,
                                rlds_types.DISCOUNT)
        and (leaf.dtype.is_floating or leaf.dtype.is_integer or
             leaf.dtype == tf.bool)):
      last_values_.append(path)
  lengths = tuple(path for path, _ in flat) if dense and len(flat) > 1 else ()
  return Plan(flags, tuple(finite), tuple(shapes), tuple(values), lengths,
              tuple(last_values_))


def _any_inner(x: tf.Tensor) -> tf.Tensor:
  """``[T]`` booleans: whether any value of each step is True."""
  return tf.reduce_any(x, axis=tf.range(1, tf.rank(x)))


def summarize(steps: Any, plan: Plan) -> Dict[str, tf.Tensor]:
  """The summary of an episode's dense steps: ``length``, flags and per-field values.

  Per field: ``length:<path>``, and per step ``nonfinite:<path>``, ``nonzero:<path>``,
  ``lastvalue:<path>`` (booleans) and ``shape:<path>`` (``[T, rank]`` int64).

  Example:
    >>> plan = Plan(('is_last',), (), ('obs',), ())
    >>> out = summarize({'is_last': tf.constant([False, True]),
    ...                  'obs': tf.zeros([2, 3, 4])}, plan)
    >>> int(out['length']), out['shape:obs'].numpy().tolist()
    (2, [[3, 4], [3, 4]])
  """
  flat = dict(nest_paths.flatten_with_paths(steps))
  reference = next((flat[f] for f in FLAGS[:2] if f in flat),
                   next(iter(flat.values())))
  length = tf.shape(reference, out_type=tf.int64)[0]
  out = {LENGTH: length}
  for path in plan.length_paths:
    out['length:' + path] = tf.shape(flat[path], out_type=tf.int64)[0]
  for flag in plan.flags:
    out[flag] = tf.cast(flat[flag], tf.bool)
  for path in plan.finite_paths:
    value = flat[path]
    if value.dtype.is_complex:
      value = tf.math.real(value) + tf.math.imag(value)
    out['nonfinite:' + path] = _any_inner(tf.logical_not(
        tf.math.is_finite(value)))
  for path in plan.value_paths:
    value = flat[path]
    out['nonzero:' + path] = _any_inner(
        tf.not_equal(value, tf.zeros([], value.dtype)))
  for path in plan.last_value_paths:
    value = flat[path]
    out['lastvalue:' + path] = _any_inner(
        tf.not_equal(value, tf.zeros([], value.dtype)))
  for path in plan.shape_paths:
    shape = tf.shape(flat[path], out_type=tf.int64)[1:]
    out['shape:' + path] = tf.tile(shape[None], tf.stack([length, 1]))
  return out


def summarize_step(step: Any, plan: Plan) -> Dict[str, tf.Tensor]:
  """The summary of one step (no leading axis); batch these for an episode.

  Example:
    >>> plan = Plan(('is_last',), (), ('obs',), ())
    >>> out = summarize_step({'is_last': tf.constant(True),
    ...                       'obs': tf.zeros([3])}, plan)
    >>> bool(out['is_last']), out['shape:obs'].numpy().tolist()
    (True, [3])
  """
  one = summarize(tf.nest.map_structure(lambda x: x[None], step),
                  dataclasses.replace(plan, length_paths=()))
  del one[LENGTH]
  return {k: v[0] for k, v in one.items()}
