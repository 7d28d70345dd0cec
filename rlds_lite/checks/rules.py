"""The RLDS format rules, checked on spec and episode summaries; each returns `Problem` lists."""

from typing import Any, Dict, List, Mapping, Tuple

import numpy as np
import tensorflow as tf

from rlds_lite import nest_paths
from rlds_lite import rlds_types
from rlds_lite.checks import problems as problems_lib
from rlds_lite.checks import summaries

Problem = problems_lib.Problem
_MAX_LISTED_STEPS = 5


def check_spec(steps_spec: Any, dense: bool) -> List[Problem]:
  """Dataset-wide problems of a steps spec (``dense``: ``[T, ...]``): missing or bad flags.

  Example:
    >>> [p.kind for p in check_spec({'is_first': tf.TensorSpec([], tf.bool)},
    ...                             dense=False)]
    ['missing_field']
  """
  if not isinstance(steps_spec, Mapping):
    return [Problem(None, rlds_types.STEPS, problems_lib.NOT_RLDS,
                    f'steps must be dicts of fields; got {steps_spec!r}.')]
  found = []
  for flag in (rlds_types.IS_FIRST, rlds_types.IS_LAST):
    if flag not in steps_spec:
      found.append(Problem(None, flag, problems_lib.MISSING_FIELD,
                           'the mandatory step field is missing.'))
  for flag in summaries.FLAGS:
    spec = steps_spec.get(flag)
    if spec is None:
      continue
    rank = 1 if dense else 0
    if (not isinstance(spec, tf.TensorSpec) or spec.dtype != tf.bool or
        spec.shape.rank != rank):
      found.append(Problem(None, flag, problems_lib.BAD_FLAG,
                           f'must be a boolean scalar per step; got {spec!r}.'))
  return found


def check_structure(index: int, dtypes: Dict[str, str],
                    reference: Dict[str, str]) -> List[Problem]:
  """Fields and dtypes of an episode against those of the first episode (Python episodes).

  Example:
    >>> [str(p) for p in check_structure(1, {'r': 'float64'}, {'r': 'float32'})]
    ["episode 1, field 'r': dtype float64 differs from float32 in episode 0."]
  """
  found = []
  for path in sorted(set(reference) - set(dtypes)):
    found.append(Problem(index, path, problems_lib.STRUCTURE_MISMATCH,
                         'the field is missing; episode 0 has it.'))
  for path in sorted(set(dtypes) - set(reference)):
    found.append(Problem(index, path, problems_lib.STRUCTURE_MISMATCH,
                         'the field is not in episode 0.'))
  for path in sorted(set(dtypes) & set(reference)):
    if dtypes[path] != reference[path]:
      found.append(Problem(
          index, path, problems_lib.DTYPE_MISMATCH,
          f'dtype {dtypes[path]} differs from {reference[path]} in episode 0.'))
  return found


def _steps_text(steps: np.ndarray) -> str:
  listed = ', '.join(str(s) for s in steps[:_MAX_LISTED_STEPS])
  more = f', ... ({len(steps)} steps)' if len(steps) > _MAX_LISTED_STEPS else ''
  return listed + more


def _flag_problems(index: int, summary: Mapping[str, Any],
                   length: int) -> List[Problem]:
  """is_first / is_last / is_terminal placement."""
  found = []
  last = length - 1
  if rlds_types.IS_FIRST in summary:
    is_first = summary[rlds_types.IS_FIRST]
    if not is_first[0]:
      found.append(Problem(index, rlds_types.IS_FIRST,
                           problems_lib.IS_FIRST_MISSING,
                           'step 0 must have is_first=True.', 0))
    extra = np.flatnonzero(is_first[1:]) + 1
    if extra.size:
      found.append(Problem(
          index, rlds_types.IS_FIRST, problems_lib.IS_FIRST_NOT_AT_START,
          f'only step 0 may have is_first=True; step {_steps_text(extra)} '
          'has it.', int(extra[0])))
  if rlds_types.IS_LAST in summary:
    is_last = summary[rlds_types.IS_LAST]
    if not is_last[-1]:
      found.append(Problem(
          index, rlds_types.IS_LAST, problems_lib.IS_LAST_MISSING,
          f'the final step (index {last}) must have is_last=True.', last))
    early = np.flatnonzero(is_last[:-1])
    if early.size:
      found.append(Problem(
          index, rlds_types.IS_LAST, problems_lib.IS_LAST_EARLY,
          f'only the final step (index {last}) may have is_last=True; step '
          f'{_steps_text(early)} has it.', int(early[0])))
  if rlds_types.IS_TERMINAL in summary:
    early = np.flatnonzero(summary[rlds_types.IS_TERMINAL][:-1])
    if early.size:
      found.append(Problem(
          index, rlds_types.IS_TERMINAL, problems_lib.IS_TERMINAL_NOT_LAST,
          f'only the final step (index {last}) may have is_terminal=True; '
          f'step {_steps_text(early)} has it.', int(early[0])))
  return found


def _shape_problems(index: int, path: str, shapes: np.ndarray,
                    reference: Dict[str, Tuple[int, ...]]) -> List[Problem]:
  """Per-step shapes of one field against the first shape seen."""
  expected = reference.setdefault(path, tuple(shapes[0].tolist()))
  if shapes.shape[1] != len(expected):
    return [Problem(index, path, problems_lib.SHAPE_MISMATCH,
                    f'step 0 has shape {shapes[0].tolist()} but earlier '
                    f'steps have {list(expected)}.', 0)]
  differs = np.flatnonzero(np.any(shapes != np.asarray(expected, np.int64),
                                  axis=-1))
  if not differs.size:
    return []
  step = int(differs[0])
  return [Problem(index, path, problems_lib.SHAPE_MISMATCH,
                  f'step {step} has shape {shapes[step].tolist()} but earlier '
                  f'steps have {list(expected)}; all steps must share one '
                  'shape.', step)]


def _length_problems(index: int, summary: Mapping[str, Any],
                     length: int) -> List[Problem]:
  """Dense fields whose entries along the step axis differ from the length."""
  found = []
  reference = next((f for f in (rlds_types.IS_FIRST, rlds_types.IS_LAST)
                    if f in summary), 'the first field')
  for key, value in summary.items():
    if key.startswith('length:') and int(value) != length:
      found.append(Problem(
          index, key[len('length:'):], problems_lib.LENGTH_MISMATCH,
          f'has {int(value)} entries along the step axis, but the episode '
          f'has {length} steps ({reference} has {length}); every step field '
          'needs one entry per step.'))
  return found


def check_episode(index: int, summary: Mapping[str, Any],
                  reference_shapes: Dict[str, Tuple[int, ...]]
                  ) -> List[Problem]:
  """The problems of episode ``index`` from its summary: flags, shapes, NaN/Inf, last values.

  ``reference_shapes`` (per-step shapes seen first, per field) is updated.

  Example:
    >>> import numpy as np
    >>> [p.kind for p in check_episode(0, {'length': 0}, {})]
    ['empty_episode']
  """
  length = int(summary.get(summaries.LENGTH, -1))
  if length < 0:
    length = len(summary[rlds_types.IS_LAST])
  if length == 0:
    return [Problem(index, rlds_types.STEPS, problems_lib.EMPTY_EPISODE,
                    'the episode has no steps; an RLDS episode has at least '
                    'the step with is_last=True.')]
  found = _flag_problems(index, summary, length)
  found.extend(_length_problems(index, summary, length))
  for key, value in summary.items():
    if key.startswith('shape:'):
      found.extend(_shape_problems(index, key[len('shape:'):],
                                   np.asarray(value), reference_shapes))
  for key, value in summary.items():
    if key.startswith('nonfinite:'):
      bad = np.flatnonzero(value)
      if bad.size:
        found.append(Problem(
            index, key[len('nonfinite:'):], problems_lib.NON_FINITE,
            f'NaN or Inf at step {_steps_text(bad)}.', int(bad[0])))
  for key, value in summary.items():
    if key.startswith('nonzero:') and value[-1]:
      found.append(Problem(
          index, key[len('nonzero:'):], problems_lib.LAST_STEP_VALUE,
          f'non-zero on the final step (index {length - 1}), whose reward and '
          'discount the dataset declares invalid.', length - 1))
  return found


def nonzero_last_values(summary: Mapping[str, Any]) -> List[str]:
  """The fields whose final step holds a non-zero value (``lastvalue:``).

  Example:
    >>> nonzero_last_values({'lastvalue:reward': np.array([False, True]),
    ...                      'lastvalue:action': np.array([True, False])})
    ['reward']
  """
  return [key[len('lastvalue:'):] for key, value in summary.items()
          if key.startswith('lastvalue:') and len(value) and value[-1]]


def field_dtypes(steps: Mapping[str, Any]) -> Dict[str, str]:
  """``{path: dtype name}`` of a nest of arrays.

  Example:
    >>> import numpy as np
    >>> field_dtypes({'obs': {'x': np.zeros(2, np.float32)},
    ...               'is_last': np.array([True])})
    {'is_last': 'bool', 'obs/x': 'float32'}
  """
  return {path: np.asarray(leaf).dtype.name
          for path, leaf in nest_paths.flatten_with_paths(steps)}
