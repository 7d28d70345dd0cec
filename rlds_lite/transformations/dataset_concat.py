"""Concatenate datasets of steps, e.g. to add absorbing steps after a terminal."""

from typing import Any, Callable, Mapping

import tensorflow as tf

from rlds_lite import rlds_types
from rlds_lite.transformations import nested_ops
from rlds_lite.transformations import shape_ops

__all__ = ['concat_if_terminal', 'concatenate']


def _check_steps(steps: Any, arg: str) -> None:
  if not isinstance(steps, tf.data.Dataset):
    raise TypeError(
        f'{arg} must be a tf.data.Dataset, got {type(steps).__name__}.')


def _check_compatible(key: str, spec1: Any, spec2: Any) -> None:
  """Raises unless the two specs of field ``key`` can be concatenated."""
  try:
    tf.nest.assert_same_structure(spec1, spec2)
  except (TypeError, ValueError):
    raise ValueError(
        f'concatenate: field {key!r} has a different structure in the two '
        f'datasets: {spec1} vs {spec2}.') from None
  for s1, s2 in zip(tf.nest.flatten(spec1), tf.nest.flatten(spec2)):
    if not s1.is_compatible_with(s2):
      raise ValueError(
          f'concatenate: field {key!r} has a different dtype or shape in the '
          f'two datasets: {s1} vs {s2}.')


def _with_zeros_for(steps: tf.data.Dataset,
                    missing: Mapping[str, Any]) -> tf.data.Dataset:
  """``steps`` with the ``missing`` fields (name -> spec) added as zeros."""
  if not missing:
    return steps

  def add_zeros(step):
    return {**step, **shape_ops.zeros_from_spec(dict(missing))}

  return steps.map(tf.autograph.experimental.do_not_convert(add_zeros))


def concatenate(steps1: tf.data.Dataset,
                steps2: tf.data.Dataset) -> tf.data.Dataset:
  """The steps of ``steps1`` followed by those of ``steps2``.

    A field present in only one dataset is added to the other's steps as
    zeros (``False``, ``b''``); a shared field must match in dtype, structure
    and shape (else a ValueError naming it).

    Example:
      >>> a = tf.data.Dataset.from_tensor_slices({'x': [1]})
      >>> b = tf.data.Dataset.from_tensor_slices({'y': [2.5]})
      >>> [{k: v.tolist() for k, v in s.items()}
      ...  for s in concatenate(a, b).as_numpy_iterator()]
      [{'x': 1, 'y': 0.0}, {'x': 0, 'y': 2.5}]
  """
  _check_steps(steps1, 'steps1')
  _check_steps(steps2, 'steps2')
  spec1, spec2 = steps1.element_spec, steps2.element_spec
  if not (isinstance(spec1, dict) and isinstance(spec2, dict)):
    if isinstance(spec1, dict) or isinstance(spec2, dict):
      raise TypeError(
          'concatenate: steps1 and steps2 must both hold dicts, got '
          f'{spec1} and {spec2}.')
    _check_compatible('<step>', spec1, spec2)
    return steps1.concatenate(steps2)
  for key in spec1.keys() & spec2.keys():
    _check_compatible(key, spec1[key], spec2[key])
  steps1 = _with_zeros_for(
      steps1, {k: v for k, v in spec2.items() if k not in spec1})
  steps2 = _with_zeros_for(
      steps2, {k: v for k, v in spec1.items() if k not in spec2})
  return steps1.concatenate(steps2)


def concat_if_terminal(
    steps: tf.data.Dataset,
    make_extra_steps: Callable[[rlds_types.Step], tf.data.Dataset]
) -> tf.data.Dataset:
  """Appends ``make_extra_steps(last_step)`` if the last step is terminal.

    The skeleton for absorbing states; lazy, and ``make_extra_steps`` runs in
    the tf.data graph (it must be graph-compatible).

    Args:
      steps: a finite dataset of step dicts with ``is_terminal``.
      make_extra_steps: function from the final step to a dataset of steps.

    Example:
      >>> steps = tf.data.Dataset.from_tensor_slices(
      ...     {'obs': [1, 2], 'is_terminal': [False, True]})
      >>> absorbing = lambda last: tf.data.Dataset.from_tensors(
      ...     {'obs': last['obs'] * 0, 'is_terminal': True})
      >>> [s['obs'].tolist() for s in
      ...  concat_if_terminal(steps, absorbing).as_numpy_iterator()]
      [1, 2, 0]
  """
  _check_steps(steps, 'steps')
  if not callable(make_extra_steps):
    raise TypeError('make_extra_steps must be callable.')
  spec = steps.element_spec
  if not isinstance(spec, dict):
    raise TypeError(f'concat_if_terminal: steps must hold dicts, got {spec}.')
  if rlds_types.IS_TERMINAL not in spec:
    raise ValueError(
        f'concat_if_terminal: the steps have no {rlds_types.IS_TERMINAL!r} '
        f'field; they have {sorted(spec)}.')
  if (tf.executing_eagerly() and
      steps.cardinality() == tf.data.INFINITE_CARDINALITY):
    raise ValueError('concat_if_terminal: steps is infinite.')

  def extra_steps(last_step):
    extra = make_extra_steps(last_step)
    if not isinstance(extra, tf.data.Dataset):
      raise TypeError(
          'make_extra_steps must return a tf.data.Dataset, got '
          f'{type(extra).__name__}.')
    return extra

  def ends_in_terminal(last_step, found):
    return tf.logical_and(
        found, tf.cast(last_step[rlds_types.IS_TERMINAL], tf.bool))

  last_step = nested_ops.last_element(steps, shape_ops.zeros_from_spec(spec))
  extra = last_step.filter(ends_in_terminal).flat_map(
      lambda last, found: extra_steps(last))
  return concatenate(steps, extra)
