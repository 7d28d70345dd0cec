"""TorchRL Episode Data (TED) layout, in memory or H5, to RLDS and back, in NumPy (no torch).

How ``next/done``, ``terminated`` and ``truncated`` map: docs/convert_formats.md.
"""

import os
from typing import Any, Callable, Dict, Optional, Union

import numpy as np

from rlds_lite import atomic_output
from rlds_lite import nest_paths
from rlds_lite import rlds_types
from rlds_lite.convert import episodes as episodes_lib
from rlds_lite.convert import hdf5_formats
from rlds_lite.convert import hdf5_output
from rlds_lite.convert import il_representations as rows_lib
from rlds_lite.convert import strings
from rlds_lite.convert import transitions

ConversionError = episodes_lib.ConversionError

NEXT = 'next'
DONE_KEYS = ('done', 'terminated', 'truncated')
"""The end flags at the root (time t) and under ``next`` (time t + 1)."""
_NOT_OBSERVATION = frozenset(DONE_KEYS + ('reward', 'discount'))

TEDLike = Union[Dict[Any, Any], str, os.PathLike, Any]
"""A nested dict (or tuple-keyed flat dict) of arrays, an H5 path or group."""


def _load_group(group: Any) -> Dict[str, Any]:
  return {k: _load_group(v) if hasattr(v, 'keys') else v[()]
          for k, v in group.items()}


def _load(data: TEDLike) -> (Dict[str, Any], str):
  if not isinstance(data, dict) and hasattr(data, 'to_dict'):
    data = data.to_dict()  # a tensordict.TensorDict (CPU tensors)
  if isinstance(data, dict):
    return nest_paths.nest_from_paths(data), '<ted dict>'
  if isinstance(data, (str, os.PathLike)):
    hdf5_formats.check_not_minari_directory(data, 'ted')
    with episodes_lib.open_hdf5(data) as file:
      hdf5_formats.check_format(file.keys(), 'ted', os.fspath(data))
      return _load_group(file), os.fspath(data)
  return _load_group(data), getattr(data, 'name', '<h5 group>')


def _flatten_batch(nest: Any, batch_dims: int) -> Any:
  if isinstance(nest, dict):
    return {k: _flatten_batch(v, batch_dims) for k, v in nest.items()}
  array = np.asarray(nest)
  return array.reshape((-1,) + array.shape[batch_dims:])


def _continuity(observations: Any, next_observations: Any, ends: np.ndarray,
                source: str, path: str = 'next/observation') -> None:
  """Raises unless ``next/observation[t] == observation[t + 1]`` in episodes."""
  if isinstance(observations, dict):
    for key in observations:
      _continuity(observations[key], next_observations[key], ends, source,
                  f'{path}/{key}')
    return
  inside = ~ends[:-1]
  if not inside.any():
    return
  now = np.asarray(next_observations)[:len(ends) - 1][inside]
  later = np.asarray(observations)[1:len(ends)][inside]
  differ = now != later
  if now.dtype.kind in 'fc':
    differ &= ~(np.isnan(now) & np.isnan(later))
  differ = differ.reshape(len(now), -1).any(axis=1)
  if differ.any():
    row = int(np.flatnonzero(inside)[np.flatnonzero(differ)[0]])
    raise ConversionError(
        f'differs on row {row} from observation on row {row + 1} of the same '
        'episode (pass check_continuity=False for multi-step data)',
        source=source, episode=int(ends[:row].sum()), field=path)


def from_ted(data: TEDLike, *, batch_dims: int = 1,
             repair: Optional[str] = None, check_continuity: bool = True,
             last_step: transitions.LastStepLike = 'invalid') -> list:
  """RLDS Episodes from a TED nest or its H5 file.

  Args:
    data: nested dict of arrays, a CPU ``TensorDict``, an H5 file path or an
      ``h5py`` group.
    batch_dims: 2 for a ``[B, T]`` storage (each row whole episodes).
    repair: rows after the last ``next/done``: None raises, ``'truncate'``
      ends them as a truncated episode, ``'drop'`` drops them.
    check_continuity: check ``next/observation[t] == observation[t + 1]``.
    last_step: ``'invalid'`` (default, RLDS) or ``'valid'`` (every row a
      real step, as `to_ted` with ``'valid'`` wrote).

  Example:
    >>> from_ted({'observation': np.zeros(2), 'action': np.zeros(2),
    ...           'next': {'observation': np.zeros(2),
    ...                    'done': np.array([False, True]),
    ...                    'terminated': np.array([False, False]),
    ...                    'truncated': np.array([False, False])}})
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: <ted dict>: episode 0, field 'next/done': is True on row 1 but next/terminated | next/truncated is False
  """
  policy = transitions.last_step_policy(last_step, 'from_ted')
  data, source = _load(data)
  if batch_dims not in (1, 2):
    raise ValueError(f'batch_dims={batch_dims}; 1 ([N]) or 2 ([B, T]).')
  if batch_dims == 2:
    data = _flatten_batch(data, 2)
  following = data.get(NEXT)
  if not isinstance(following, dict):
    raise ConversionError('is missing; TED keeps time t + 1 under next',
                          source=source, field=NEXT)
  for key in ('action',):
    if key not in data:
      raise ConversionError('is missing', source=source, field=key)
  flags = {k: rows_lib.end_column(following[k], f'next/{k}', source)
           for k in DONE_KEYS if k in following}
  if not flags:
    raise ConversionError('is missing (and so are next/terminated and '
                          'next/truncated)', source=source, field='next/done')
  rows = len(next(iter(flags.values())))
  for key, flag in flags.items():
    if len(flag) != rows:
      raise ConversionError(f'has {len(flag)} rows; next/'
                            f'{next(iter(flags))} has {rows}', source=source,
                            field=f'next/{key}')
  terminated = flags.get('terminated')
  truncated = flags.get('truncated', np.zeros(rows, bool))
  if terminated is None:
    terminated = flags['done'] & ~truncated
  either = terminated | truncated
  done = flags.get('done', either)
  bad = np.flatnonzero(done != either)
  if len(bad):
    row = int(bad[0])
    raise ConversionError(
        f'is {bool(done[row])} on row {row} but next/terminated | '
        f'next/truncated is {bool(either[row])}', source=source,
        episode=int(done[:row].sum()), field='next/done')
  if 'observation' in data:
    observations = data['observation']
    if 'observation' not in following:
      raise ConversionError('is missing; it holds the final observations',
                            source=source, field='next/observation')
    next_observations = following['observation']
  else:
    keys = sorted(k for k in data if k in following and
                  k not in _NOT_OBSERVATION)
    if not keys:
      raise ConversionError('is missing (and no other root key is also under '
                            'next)', source=source, field='observation')
    observations = {k: data[k] for k in keys}
    next_observations = {k: following[k] for k in keys}
  taken = ({'observation'} if 'observation' in data else set(observations))
  taken.update((NEXT, 'action') + DONE_KEYS)
  extras = {k: v for k, v in data.items() if k not in taken}
  rows_lib.same_structure(observations, next_observations, 'next/observation',
                          'observation', source)
  for name, value in (('observation', observations),
                      ('next/observation', next_observations),
                      ('action', data['action'])):
    rows_lib.check_rows(value, name, rows, source, 'next/done')
  for key, value in extras.items():
    rows_lib.check_rows(value, key, rows, source, 'next/done')
  rewards = following.get('reward')
  if rewards is not None:
    rewards = _squeeze(rewards)
    rows_lib.check_rows(rewards, 'next/reward', rows, source, 'next/done')
  discounts = following.get('discount')
  if discounts is not None:
    discounts = _squeeze(discounts)
    rows_lib.check_rows(discounts, 'next/discount', rows, source, 'next/done')
  ends = rows_lib.repair_ends(done, repair, source, 'next/done')
  if check_continuity:
    _continuity(observations, next_observations, ends, source)
  rows = rows_lib.TransitionRows(observations, next_observations,
                                 data['action'], rewards, discounts, extras)
  return list(transitions.read_with_policy(rows_lib.episodes_from_rows(
      rows, ends, terminated, source=source, field='next/done'), policy,
      source))


def _squeeze(value: Any) -> np.ndarray:
  value = np.asarray(value)
  return value[:, 0] if value.ndim == 2 and value.shape[1] == 1 else value


def to_ted(episodes: episodes_lib.EpisodesLike, *,
           one_step: str = 'error',
           last_step: transitions.LastStepLike = 'invalid') -> Dict[str, Any]:
  """A TED nest of NumPy ``[N]`` row arrays from RLDS Episodes.

  ``tensordict.TensorDict(to_ted(e), batch_size=[N])`` makes it a TensorDict;
  what round-trips is in docs/convert_formats.md.

  Args:
    episodes: Episodes or an RLDS dataset.
    one_step: a one-step episode has no row: ``'error'`` or ``'skip'``.
    last_step: ``'invalid'`` (default, RLDS): the last step's action,
      reward and discount are left out, warning once if any is non-zero;
      ``'valid'``: they are real and kept (docs/convert.md).

  Example:
    >>> e = {'steps': {'observation': np.arange(3.), 'action': np.zeros(3),
    ...                'reward': np.array([1., 1., 0.]),
    ...                **episodes_lib.rlds_flags(3, True)}}
    >>> td = to_ted([e])
    >>> td['next']['observation'].tolist(), td['next']['terminated'][:, 0].tolist()
    ([1.0, 2.0], [False, True])
  """
  rows = rows_lib.rows_from_episodes(episodes, one_step=one_step,
                                     what='TED', last_step=last_step,
                                     where='to_ted')
  if rows is None:
    raise ValueError('to_ted: no episodes with rows; the shapes of the '
                     'arrays cannot be inferred.')
  count = len(rows['ends'])
  column = lambda flag: np.asarray(flag, bool).reshape(count, 1)
  following = {'observation': rows['next_observations'],
               'done': column(rows['ends']),
               'terminated': column(rows['terminated']),
               'truncated': column(rows['truncated'])}
  if rows['rewards'] is not None:
    rewards = rows['rewards']
    following['reward'] = rewards.reshape((count, 1)) if rewards.ndim == 1 \
        else rewards
  if rows['discounts'] is not None:
    following['discount'] = rows['discounts'].reshape(count, 1)
  out = dict(rows['extras'])
  out.update({'observation': rows['observations'], 'action': rows['actions'],
              **{k: np.zeros((count, 1), bool) for k in DONE_KEYS},
              NEXT: following})
  return out


def _write_group(group: Any, nest: Dict[str, Any], source: str,
                 check: Callable[[], None], prefix: str = '') -> None:
  """Writes ``nest`` under ``group``; ``check`` after each array (it raises
  a failed write before HDF5 writes on into nothing: `HDF5Output`)."""
  for key, value in nest.items():
    path = f'{prefix}{key}'
    if isinstance(value, dict):
      _write_group(group.create_group(key), value, source, check, f'{path}/')
    else:
      strings.create_hdf5_dataset(group, key, value, path, source)
      check()


def to_ted_h5(episodes: episodes_lib.EpisodesLike,
              path: Union[str, os.PathLike], *, one_step: str = 'error',
              last_step: transitions.LastStepLike = 'invalid',
              if_exists: str = 'overwrite') -> str:
  """Writes `to_ted` as an H5 file, atomically; ``if_exists``: ``'overwrite'`` or ``'error'``.

  Example:
    >>> import tempfile
    >>> e = {'steps': {'observation': np.arange(3.), 'action': np.zeros(3),
    ...                **episodes_lib.rlds_flags(3, False)}}
    >>> path = to_ted_h5([e], os.path.join(tempfile.mkdtemp(), 'ted.h5'))
    >>> [x['steps']['observation'].tolist() for x in from_ted(path)]
    [[0.0, 1.0, 2.0]]
  """
  check = atomic_output.existing_check(if_exists, 'to_ted_h5')
  nest = to_ted(episodes, one_step=one_step, last_step=last_step)
  path = os.fspath(path)
  with atomic_output.AtomicOutput(path, check=check,
                                  replace=if_exists == 'overwrite') as output:
    # Not h5py.File: see HDF5Output.
    with hdf5_output.HDF5Output(output.path, label=path) as hdf5:
      _write_group(hdf5.file, nest, path, hdf5.check)
    output.publish()
  return path
