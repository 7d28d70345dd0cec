"""Check that a dataset follows the RLDS format, and say where it does not.

What is checked is in ``docs/validate_and_video.md``; how it differs from
upstream ``rlds.is_valid_rlds_dataset`` in ``docs/upstream.md``.
"""

from typing import Any, Dict, Iterator, Optional, Tuple

import numpy as np
import tensorflow as tf

from rlds_lite import nest_paths
from rlds_lite import rlds_names


class RLDSFormatError(ValueError):
  """A dataset breaks the RLDS format; ``episode_index`` and ``field`` say where (or None)."""

  def __init__(self, message: str, episode_index: Optional[int] = None,
               field: Optional[str] = None):
    where = []
    if episode_index is not None:
      where.append(f'episode {episode_index}')
    if field is not None:
      where.append(f'field {field!r}')
    super().__init__(', '.join(where) + ': ' + message if where else message)
    self.episode_index = episode_index
    self.field = field


_SUMMARY_CHUNK = 1024  # Steps summarised per batch (tf.data reserves this much up front).


def _joined_paths(structure: Any) -> Iterator[Tuple[str, Any]]:
  """Yields ('observation/image', leaf) pairs of a nested structure."""
  yield from nest_paths.flatten_with_paths(structure)


def _steps_spec(episodes: tf.data.Dataset) -> Tuple[Any, bool]:
  """Returns (step spec, is_dense) or raises RLDSFormatError."""
  spec = episodes.element_spec
  if not isinstance(spec, dict) or rlds_names.STEPS not in spec:
    raise RLDSFormatError(
        f'elements must be episode dicts with a {rlds_names.STEPS!r} entry; '
        f'got element spec {spec!r}.')
  steps_spec = spec[rlds_names.STEPS]
  if isinstance(steps_spec, tf.data.DatasetSpec):
    return steps_spec.element_spec, False
  return steps_spec, True


def _check_spec(step_spec: Any, is_dense: bool) -> None:
  if not isinstance(step_spec, dict):
    raise RLDSFormatError(
        f'steps must be dicts of fields; got a step spec {step_spec!r}.')
  for flag in (rlds_names.IS_FIRST, rlds_names.IS_LAST):
    if flag not in step_spec:
      raise RLDSFormatError('the mandatory step field is missing.', field=flag)
  for flag in (rlds_names.IS_FIRST, rlds_names.IS_LAST, rlds_names.IS_TERMINAL):
    if flag not in step_spec:
      continue
    flag_spec = step_spec[flag]
    expected_rank = 1 if is_dense else 0
    if (not isinstance(flag_spec, tf.TensorSpec) or flag_spec.dtype != tf.bool
        or flag_spec.shape.rank != expected_rank):
      raise RLDSFormatError(
          f'must be a boolean scalar per step; got {flag_spec!r}.', field=flag)


def _open_dims_paths(step_spec: Any, is_dense: bool) -> Dict[str, tf.TensorSpec]:
  """Fields whose per-step shape the spec leaves open (checked on the data)."""
  open_fields = {}
  for path, leaf in _joined_paths(step_spec):
    if not isinstance(leaf, tf.TensorSpec):
      continue
    dims = leaf.shape.as_list() if leaf.shape.rank is not None else None
    per_step = dims[1:] if (is_dense and dims) else dims
    if per_step is None or any(d is None for d in per_step):
      open_fields[path] = leaf
  return open_fields


def _episode_summary(steps: Any, is_dense: bool,
                     open_fields: Dict[str, tf.TensorSpec]) -> Dict[str, np.ndarray]:
  """Flags and open-field shapes of one episode, as NumPy arrays."""

  def summarize(step: Any) -> Dict[str, tf.Tensor]:
    flat = dict(_joined_paths(step))
    out = {
        rlds_names.IS_FIRST: step[rlds_names.IS_FIRST],
        rlds_names.IS_LAST: step[rlds_names.IS_LAST],
    }
    if rlds_names.IS_TERMINAL in step:
      out[rlds_names.IS_TERMINAL] = step[rlds_names.IS_TERMINAL]
    for path in open_fields:
      shape = tf.shape(flat[path], out_type=tf.int64)
      out['shape:' + path] = shape[1:] if is_dense else shape
    return out

  if is_dense:
    summary = summarize(steps)
    for path, leaf in _joined_paths(steps):  # One entry per step, each field.
      summary['length:' + path] = tf.shape(leaf)[0]
    num_steps = tf.shape(steps[rlds_names.IS_FIRST])[0]
    for path in open_fields:  # one shape per episode in dense form
      summary['shape:' + path] = tf.tile(summary['shape:' + path][None],
                                         [num_steps, 1])
    return {k: np.asarray(v) for k, v in summary.items()}
  chunks = list(steps.map(summarize).batch(_SUMMARY_CHUNK).as_numpy_iterator())
  if not chunks:
    return {rlds_names.IS_FIRST: np.zeros([0], bool),
            rlds_names.IS_LAST: np.zeros([0], bool)}
  return {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}


def _check_episode(index: int, summary: Dict[str, np.ndarray],
                   reference_shapes: Dict[str, np.ndarray]) -> None:
  is_first = summary[rlds_names.IS_FIRST]
  is_last = summary[rlds_names.IS_LAST]
  length = len(is_first)
  for key, value in summary.items():
    if key.startswith('length:') and int(value) != length:
      raise RLDSFormatError(
          f'has {int(value)} entries along the step axis, but the episode has '
          f'{length} steps (is_first has {length}); every step field needs '
          'one entry per step.', index, key[len('length:'):])
  if length == 0:
    raise RLDSFormatError(
        'the episode has no steps; an RLDS episode has at least the step with '
        'is_last=True.', index, rlds_names.STEPS)
  if not is_first[0]:
    raise RLDSFormatError('step 0 must have is_first=True.', index,
                          rlds_names.IS_FIRST)
  extra_first = np.flatnonzero(is_first[1:])
  if extra_first.size:
    raise RLDSFormatError(
        f'only step 0 may have is_first=True; step {extra_first[0] + 1} has it.',
        index, rlds_names.IS_FIRST)
  if not is_last[-1]:
    raise RLDSFormatError(
        f'the final step (index {length - 1}) must have is_last=True.', index,
        rlds_names.IS_LAST)
  early_last = np.flatnonzero(is_last[:-1])
  if early_last.size:
    raise RLDSFormatError(
        f'only the final step (index {length - 1}) may have is_last=True; step '
        f'{early_last[0]} has it.', index, rlds_names.IS_LAST)
  if rlds_names.IS_TERMINAL in summary:
    early_terminal = np.flatnonzero(summary[rlds_names.IS_TERMINAL][:-1])
    if early_terminal.size:
      raise RLDSFormatError(
          f'only the final step (index {length - 1}) may have is_terminal=True; '
          f'step {early_terminal[0]} has it.', index, rlds_names.IS_TERMINAL)
  for key, shapes in summary.items():
    if not key.startswith('shape:'):
      continue
    path = key[len('shape:'):]
    reference = reference_shapes.setdefault(path, shapes[0])
    differs = np.flatnonzero(np.any(shapes != reference, axis=-1))
    if differs.size:
      step = differs[0]
      raise RLDSFormatError(
          f'step {step} has shape {shapes[step].tolist()} but earlier steps have '
          f'{reference.tolist()}; all steps must share one structure.', index,
          path)


def validate_episodes(episodes: tf.data.Dataset,
                      num_episodes: Optional[int] = None) -> int:
  """Checks the RLDS format of (the first ``num_episodes``) episodes; how many were checked.

  Raises `RLDSFormatError` at the first violation.

  Example:
    >>> import tensorflow as tf
    >>> steps = {'is_first': [True, False], 'is_last': [False, True]}
    >>> episodes = tf.data.Dataset.from_tensors(
    ...     {'steps': tf.data.Dataset.from_tensor_slices(steps)})
    >>> validate_episodes(episodes)
    1
  """
  step_spec, is_dense = _steps_spec(episodes)
  _check_spec(step_spec, is_dense)
  open_fields = _open_dims_paths(step_spec, is_dense)
  if num_episodes is not None:
    episodes = episodes.take(num_episodes)
  reference_shapes: Dict[str, np.ndarray] = {}
  checked = 0
  for index, episode in enumerate(episodes):
    summary = _episode_summary(episode[rlds_names.STEPS], is_dense, open_fields)
    _check_episode(index, summary, reference_shapes)
    checked += 1
  return checked


def is_valid_rlds_dataset(episodes: tf.data.Dataset,
                          num_episodes: Optional[int] = None) -> bool:
  """Whether ``episodes`` follows the RLDS format (see ``validate_episodes``).

  Example:
    >>> import tensorflow as tf
    >>> is_valid_rlds_dataset(tf.data.Dataset.range(3))
    False
  """
  try:
    validate_episodes(episodes, num_episodes)
  except RLDSFormatError:
    return False
  return True
