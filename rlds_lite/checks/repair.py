"""Repairs of the RLDS flags ``is_first`` / ``is_last`` from the step index, only when asked."""

from typing import Any, Dict, Iterable, List, Sequence, Union

import numpy as np
import tensorflow as tf

from rlds_lite import dense
from rlds_lite import nest_paths
from rlds_lite import rlds_types
from rlds_lite.checks import sources

REPAIRS = (rlds_types.IS_FIRST, rlds_types.IS_LAST)
"""The names of the available repairs: the flags they rewrite."""


def repair_names(repair: Union[bool, str, Sequence[str], None]) -> tuple:
  """The repairs asked for: False/None/() -> none, True -> all, a name, names.

  Example:
    >>> repair_names(True), repair_names('is_last'), repair_names(False)
    (('is_first', 'is_last'), ('is_last',), ())
  """
  if repair is None or repair is False:
    return ()
  if repair is True:
    return REPAIRS
  names = (repair,) if isinstance(repair, str) else tuple(repair)
  unknown = [n for n in names if n not in REPAIRS]
  if unknown:
    raise ValueError(f'unknown repair {unknown[0]!r}; the repairs are '
                     f'{list(REPAIRS)} (or True for all).')
  return tuple(n for n in REPAIRS if n in names)


def _flag_at(length: tf.Tensor, index: tf.Tensor) -> tf.Tensor:
  return tf.equal(tf.range(length), index)


def repair_dense_steps(steps: Dict[str, Any], names: Sequence[str]
                       ) -> Dict[str, Any]:
  """Dense steps (``[T, ...]`` tensors) with the named flags rewritten.

  Example:
    >>> fixed = repair_dense_steps({'is_first': tf.constant([True, True])},
    ...                            ['is_first', 'is_last'])
    >>> {k: v.numpy().tolist() for k, v in fixed.items()}
    {'is_first': [True, False], 'is_last': [False, True]}
  """
  length = tf.shape(tf.nest.flatten(steps)[0])[0]
  fixed = dict(steps)
  if rlds_types.IS_FIRST in names:
    fixed[rlds_types.IS_FIRST] = _flag_at(length, 0)
  if rlds_types.IS_LAST in names:
    fixed[rlds_types.IS_LAST] = _flag_at(length, length - 1)
  return fixed


def repair_episodes(episodes: tf.data.Dataset,
                    names: Sequence[str]) -> tf.data.Dataset:
  """Episodes (nested or dense steps, kept so) with the named flags rewritten.

  Example:
    >>> steps = tf.data.Dataset.from_tensor_slices(
    ...     {'is_first': [False, False], 'is_last': [True, False]})
    >>> fixed = repair_episodes(tf.data.Dataset.from_tensors({'steps': steps}),
    ...                         REPAIRS)
    >>> [bool(s['is_last']) for s in next(iter(fixed))['steps']]
    [False, True]
  """
  names = repair_names(tuple(names))
  nested = sources.open_source(episodes).kind == sources.NESTED
  data = dense.to_dense(episodes) if nested else episodes

  def fix(episode):
    return {**episode, rlds_types.STEPS: repair_dense_steps(
        episode[rlds_types.STEPS], names)}

  data = data.map(fix)
  return dense.to_nested(data) if nested else data


def repair_is_last(episodes: tf.data.Dataset) -> tf.data.Dataset:
  """Episodes whose final step, and only it, has ``is_last=True``.

  Example:
    >>> steps = {'is_first': [True], 'is_last': [False]}
    >>> fixed = repair_is_last(tf.data.Dataset.from_tensors({'steps': steps}))
    >>> next(iter(fixed))['steps']['is_last'].numpy().tolist()
    [True]
  """
  return repair_episodes(episodes, (rlds_types.IS_LAST,))


def repair_is_first(episodes: tf.data.Dataset) -> tf.data.Dataset:
  """Episodes whose step 0, and only it, has ``is_first=True``.

  Example:
    >>> steps = {'is_first': [False, True], 'is_last': [False, True]}
    >>> fixed = repair_is_first(tf.data.Dataset.from_tensors({'steps': steps}))
    >>> next(iter(fixed))['steps']['is_first'].numpy().tolist()
    [True, False]
  """
  return repair_episodes(episodes, (rlds_types.IS_FIRST,))


def repair_python_episodes(episodes: Iterable[Any],
                           names: Sequence[str]) -> List[Dict[str, Any]]:
  """Python episodes (dicts of arrays) with the named flags rewritten, as ``{'steps': ...}``.

  Example:
    >>> fixed = repair_python_episodes([{'is_last': [False, False]}],
    ...                                ['is_last'])
    >>> fixed[0]['steps']['is_last'].tolist()
    [False, True]
  """
  out = []
  for episode in episodes:
    steps = sources.python_steps(episode)
    length = len(nest_paths.flatten_with_paths(steps)[0][1])
    index = np.arange(length)
    if rlds_types.IS_FIRST in names:
      steps[rlds_types.IS_FIRST] = index == 0
    if rlds_types.IS_LAST in names:
      steps[rlds_types.IS_LAST] = index == length - 1
    extra = ({k: v for k, v in episode.items() if k != rlds_types.STEPS}
             if rlds_types.STEPS in episode else {})
    out.append({**extra, rlds_types.STEPS: steps})
  return out
