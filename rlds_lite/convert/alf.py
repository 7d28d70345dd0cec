"""ALF TimeSteps (a dict of concatenated ``[N, ...]`` arrays; no ALF needed) to RLDS and back.

How ``step_type``, ``prev_action`` and ``discount`` map to RLDS steps:
docs/convert_formats.md.
"""

import warnings
from typing import Any, Dict, List, Optional

import numpy as np

from rlds_lite import rlds_types
from rlds_lite.convert import episodes as episodes_lib
from rlds_lite.convert import il_representations as rows_lib
from rlds_lite.convert import input_checks
from rlds_lite.convert import strings
from rlds_lite.convert import transitions

ConversionError = episodes_lib.ConversionError

FIRST, MID, LAST = 0, 1, 2
"""ALF ``StepType`` values."""
STEP_TYPE_NAMES = {FIRST: 'FIRST', MID: 'MID', LAST: 'LAST'}
REQUIRED_KEYS = ('step_type', 'observation', 'prev_action', 'reward',
                 'discount')
"""The TimeStep fields `from_alf` needs (``env_id``, ``env_info`` optional)."""


def _map(fn, nest: Any) -> Any:
  if isinstance(nest, dict):
    return {k: _map(fn, v) for k, v in nest.items()}
  return fn(nest)


def _as_dict(time_steps: Any) -> Dict[str, Any]:
  if isinstance(time_steps, dict):
    return dict(time_steps)
  if hasattr(time_steps, '_asdict'):  # alf.data_structures.TimeStep
    return dict(time_steps._asdict())
  raise TypeError('from_alf: expected a dict of arrays or a TimeStep '
                  f'namedtuple, got {type(time_steps).__name__}.')


def _check_step_types(step_type: np.ndarray, ends: np.ndarray,
                      source: str) -> List[slice]:
  """Episode slices; raises unless each is FIRST, MID..., LAST."""
  slices = episodes_lib.episode_slices(ends, source=source,
                                       field='step_type')
  starts = np.array([s.start for s in slices], int)
  bad = np.flatnonzero(step_type[starts] != FIRST)
  if len(bad):
    row = int(starts[bad[0]])
    raise ConversionError(
        f'row {row} starts the episode with '
        f'{STEP_TYPE_NAMES[int(step_type[row])]}; expected FIRST (0)',
        source=source, episode=int(bad[0]), field='step_type')
  inner = np.flatnonzero(step_type[:len(ends)] == FIRST)
  inner = inner[~np.isin(inner, starts)]
  if len(inner):
    row = int(inner[0])
    raise ConversionError(
        f'row {row} is FIRST inside the episode that starts on row '
        f'{int(starts[starts < row][-1])}: that episode has no LAST',
        source=source, episode=int(ends[:row].sum()), field='step_type')
  return slices


def from_alf(time_steps: Any, *, repair: Optional[str] = None,
             last_step: transitions.LastStepLike = 'invalid'
             ) -> List[episodes_lib.Episode]:
  """RLDS Episodes from ALF TimeSteps (mapping: docs/convert_formats.md).

  Args:
    time_steps: dict (or ``TimeStep`` namedtuple) of ``[N, ...]`` (or
      ``[B, T, ...]``) arrays: ``step_type``, ``observation``, ``prev_action``,
      ``reward``, ``discount``; optionally ``env_id`` and ``env_info``.
    repair: time steps after the last ``LAST``: None raises, ``'truncate'``
      ends them as a truncated episode, ``'drop'`` drops them.
    last_step: ``'invalid'`` (default, RLDS) or ``'valid'`` (as `to_alf`
      with ``'valid'`` wrote).

  Example:
    >>> from_alf({'step_type': np.array([1, 2]), 'observation': np.zeros(2),
    ...           'prev_action': np.zeros(2), 'reward': np.zeros(2),
    ...           'discount': np.ones(2)})
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: <alf time steps>: episode 0, field 'step_type': row 0 starts the episode with MID; expected FIRST (0)
  """
  data = _as_dict(time_steps)
  source = '<alf time steps>'
  policy = transitions.last_step_policy(last_step, 'from_alf')
  for key in REQUIRED_KEYS:
    if data.get(key) is None:
      raise ConversionError('is missing; ALF TimeSteps need ' +
                            ', '.join(REQUIRED_KEYS), source=source,
                            field=key)
  step_type = np.asarray(data['step_type'])
  if step_type.ndim == 2:
    data = {k: _map(lambda x: np.asarray(x).reshape(
        (-1,) + np.shape(x)[2:]), v) for k, v in data.items()
            if v is not None}
    step_type = np.asarray(data['step_type'])
  if step_type.ndim != 1:
    raise ConversionError(f'has shape {step_type.shape}; expected [N] or '
                          '[B, T]', source=source, field='step_type')
  unknown = np.flatnonzero(~np.isin(step_type, (FIRST, MID, LAST)))
  if len(unknown):
    row = int(unknown[0])
    raise ConversionError(
        f'is {step_type[row]} on row {row}; expected 0 (FIRST), 1 (MID) or '
        '2 (LAST)', source=source,
        episode=int((step_type[:row] == LAST).sum()), field='step_type')
  rows = len(step_type)
  env_info = data.get('env_info') or {}
  if not isinstance(env_info, dict):
    raise ConversionError('must be a dict of [N, ...] arrays', source=source,
                          field='env_info')
  for key in REQUIRED_KEYS[1:]:
    rows_lib.check_rows(data[key], key, rows, source, 'step_type')
  rows_lib.check_rows(env_info, 'env_info', rows, source, 'step_type')
  reward = np.asarray(data['reward'])
  discount = input_checks.finite(data['discount'], source=source,
                                 field='discount')
  if discount.ndim != 1:
    raise ConversionError(f'has shape {discount.shape}; expected [N]',
                          source=source, field='discount')
  ends = rows_lib.repair_ends(step_type == LAST, repair, source, 'step_type')
  slices = _check_step_types(step_type, ends, source)
  if not slices:
    return []
  count = len(ends)
  last_rows = np.array([s.stop - 1 for s in slices])
  terminated = (discount[last_rows] == 0) & (step_type[last_rows] == LAST)

  def shifted(leaf):
    leaf = np.asarray(leaf)[:count]
    out = strings.zero_rows(len(leaf), leaf)
    out[:-1] = leaf[1:]
    out[last_rows] = strings.zero_rows(len(last_rows), leaf)
    return out

  columns = {k: _map(lambda x: np.asarray(x)[:count], v)
             for k, v in env_info.items()}
  columns.update({
      rlds_types.OBSERVATION: _map(lambda x: np.asarray(x)[:count],
                                   data['observation']),
      rlds_types.ACTION: _map(shifted, data['prev_action']),
      rlds_types.REWARD: shifted(reward),
      rlds_types.DISCOUNT: shifted(discount),
  })
  out = []
  for index, cut in enumerate(slices):
    steps = {k: _map(lambda leaf, cut=cut: leaf[cut], v)
             for k, v in columns.items()}
    steps.update(episodes_lib.rlds_flags(cut.stop - cut.start,
                                         bool(terminated[index])))
    out.append({rlds_types.STEPS: strings.canonical(steps)})
  return list(transitions.read_with_policy(out, policy, source))


def _concat(nests: List[Any]) -> Any:
  if isinstance(nests[0], dict):
    return {k: _concat([n[k] for n in nests]) for k in nests[0]}
  return np.concatenate([np.asarray(n) for n in nests])


def _delayed(leaf: Any) -> np.ndarray:
  """``[T, ...]`` values moved one step later, zero first."""
  leaf = np.asarray(leaf)
  out = strings.zero_rows(len(leaf), leaf)
  out[1:] = leaf[:-1]
  return out


def to_alf(episodes: episodes_lib.EpisodesLike, *,
           one_step: str = 'error',
           last_step: transitions.LastStepLike = 'invalid') -> Dict[str, Any]:
  """ALF TimeSteps (concatenated ``[N]`` dict of arrays) from RLDS Episodes.

  Fields ``step_type``, ``observation``, ``prev_action``, ``reward``,
  ``discount``, ``env_id`` and ``env_info`` (the other step fields); the
  mapping and what round-trips: docs/convert_formats.md.

  Args:
    episodes: Episodes or an RLDS dataset with ``observation`` and ``action``.
    one_step: a one-step episode cannot be written: ``'error'`` or ``'skip'``.
    last_step: ``'invalid'`` (default, RLDS): the last step's action,
      reward and discount are left out, warning once if any is non-zero;
      ``'valid'``: they are real and kept (docs/convert.md).

  Example:
    >>> e = {'steps': {'observation': np.arange(3.), 'action': np.array([4, 5, 0]),
    ...                'reward': np.array([1., 2., 0.]),
    ...                **episodes_lib.rlds_flags(3, True)}}
    >>> ts = to_alf([e])
    >>> ts['step_type'].tolist(), ts['prev_action'].tolist(), ts['discount'].tolist()
    ([0, 1, 2], [0, 4, 5], [1.0, 1.0, 0.0])
  """
  if one_step not in ('error', 'skip'):
    raise ValueError(f"to_alf: one_step={one_step!r}; 'error' or 'skip'.")
  policy = transitions.last_step_policy(last_step, 'to_alf')
  dropped = transitions.LastStepValues('to_alf', extras=False)
  source = '<episodes>'
  parts: Dict[str, List[Any]] = {}
  disagreeing = 0
  for index, episode in enumerate(transitions.prepared_for_writing(
      episodes_lib.checked_episodes(episodes, source=source), policy,
      dropped)):
    steps = episode[rlds_types.STEPS]
    for name in (rlds_types.OBSERVATION, rlds_types.ACTION):
      if name not in steps:
        raise ConversionError('is missing; ALF TimeSteps need it',
                              source=source, episode=index, field=name)
    length = len(steps[rlds_types.IS_LAST])
    if length == 1:
      if one_step == 'skip':
        continue
      raise ConversionError(
          'has one step (only a reset), which ALF cannot hold as FIRST ... '
          "LAST; pass one_step='skip' to leave such episodes out",
          source=source, episode=index, field=rlds_types.IS_LAST)
    terminated = bool(steps[rlds_types.IS_TERMINAL][-1])
    step_type = np.full(length, MID, np.int32)
    step_type[0], step_type[-1] = FIRST, LAST
    reward = steps.get(rlds_types.REWARD, np.zeros(length, np.float32))
    discount = steps.get(rlds_types.DISCOUNT)
    if discount is None:
      discount = transitions.derived_discount(length, terminated)
    discount = _delayed(discount)
    discount[0] = 1
    if _end_discount_disagrees(discount[-1], terminated):
      disagreeing += 1
      discount[-1] = 0 if terminated else 1
    add = lambda key, value: parts.setdefault(key, []).append(value)
    add('step_type', step_type)
    add('observation', steps[rlds_types.OBSERVATION])
    add('prev_action', _map(_delayed, steps[rlds_types.ACTION]))
    add('reward', _delayed(reward))
    add('discount', discount)
    add('env_info', {k: v for k, v in steps.items()
                     if k not in transitions.CORE_FIELDS})
  if not parts:
    raise ValueError('to_alf: no episodes with two or more steps; the shapes '
                     'of the arrays cannot be inferred.')
  out = {k: _concat(v) for k, v in parts.items()}
  out['env_id'] = np.zeros(len(out['step_type']), np.int32)
  dropped.warn()
  if disagreeing:
    warnings.warn(
        f'to_alf: {disagreeing} episode(s) end with a discount that disagrees '
        'with is_terminal (1 before a terminal step, as Open X-Embodiment '
        'data has, or 0 before a truncated one). ALF tells a terminated '
        'episode by discount 0 at LAST, so that discount was written from '
        'is_terminal: the endings are kept, the discount of those final '
        'transitions changed.', UserWarning, stacklevel=2)
  return out


def _end_discount_disagrees(discount: Any, terminated: bool) -> bool:
  """Whether a LAST step's discount says the other ending than the flag."""
  ends_game = bool(np.all(np.asarray(discount) == 0))
  return ends_game != terminated

