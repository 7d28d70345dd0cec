"""D4RL-style dicts (concatenated transitions) to RLDS Episodes and back.

How ``terminals``, ``timeouts`` and ``next_observations`` map to RLDS steps:
docs/convert_minari_d4rl.md.
"""

import os
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Optional,
                    Tuple, Union)

import numpy as np

from rlds_lite import atomic_output
from rlds_lite import nest_paths
from rlds_lite import rlds_types
from rlds_lite.convert import episodes as episodes_lib
from rlds_lite.convert import hdf5_formats
from rlds_lite.convert import hdf5_output
from rlds_lite.convert import input_checks
from rlds_lite.convert import strings
from rlds_lite.convert import transitions

ConversionError = episodes_lib.ConversionError

REQUIRED_KEYS = ('observations', 'actions', 'rewards', 'terminals')
"""Keys a D4RL dict must have (``timeouts`` absent = no timeouts)."""
REPAIRS = frozenset({'drop_unfinished', 'truncate_unfinished'})
"""``repair=`` options of `from_d4rl`."""
FINAL_OBSERVATIONS = ('repeat', 'zeros')
"""``final_observation=`` options of `from_d4rl` without next_observations."""

_FLAG_KEYS = ('rewards', 'terminals', 'timeouts')
_NOT_STEP_KEYS = frozenset(REQUIRED_KEYS + ('timeouts', 'next_observations',
                                            'discounts', 'metadata'))

D4RLLike = Union[Dict[str, Any], str, os.PathLike, Any]
"""A dict of arrays (flat ``a/b`` keys or nested), an HDF5 path or group."""


def _load(data: D4RLLike) -> Tuple[Dict[str, Any], str]:
  """The data as nested dicts of NumPy arrays, and a name for errors."""
  if isinstance(data, dict):
    return nest_paths.nest_from_paths(data), '<d4rl dict>'
  if isinstance(data, (str, os.PathLike)):
    hdf5_formats.check_not_minari_directory(data, 'd4rl')
    with episodes_lib.open_hdf5(data) as file:
      hdf5_formats.check_format(file.keys(), 'd4rl', os.fspath(data))
      return _load_group(file), os.fspath(data)
  return _load_group(data), getattr(data, 'name', '<hdf5 group>')


def _load_group(group: Any) -> Dict[str, Any]:
  return {k: _load_group(v) if hasattr(v, 'keys') else v[()]
          for k, v in group.items()}


def _map(fn, nest: Any) -> Any:
  if isinstance(nest, dict):
    return {k: _map(fn, v) for k, v in nest.items()}
  return fn(nest)


def _column(data: Dict[str, Any], key: str, source: str) -> np.ndarray:
  value = np.asarray(data[key])
  if value.ndim == 2 and value.shape[1] == 1:
    value = value[:, 0]
  if value.ndim != 1:
    raise ConversionError(f'has shape {value.shape}; expected [rows]',
                          source=source, field=key)
  return value


def _check_rows(nest: Any, name: str, rows: int, source: str) -> None:
  for path, leaf in nest_paths.flatten_with_paths(nest, name):
    length = np.shape(leaf)[0] if np.ndim(leaf) else None
    if length != rows:
      raise ConversionError(f'has {length} rows; rewards has {rows}',
                            source=source, field=path)


def _is_rows(nest: Any, rows: int) -> bool:
  return all(np.ndim(leaf) and np.shape(leaf)[0] == rows
             for _, leaf in nest_paths.flatten_with_paths(nest))


def _unfinished(ends: np.ndarray, repairs: frozenset, source: str
                ) -> np.ndarray:
  """End flags with trailing rows (no end flag) repaired, or an error."""
  if not len(ends) or ends[-1]:
    return ends
  done = np.flatnonzero(ends)
  first = int(done[-1]) + 1 if len(done) else 0
  if 'drop_unfinished' in repairs:
    return ends[:first]
  if 'truncate_unfinished' in repairs:
    ends = ends.copy()
    ends[-1] = True
    return ends
  raise ConversionError(
      f'neither terminals nor timeouts is set on the last row '
      f'({len(ends) - 1}): rows {first}..{len(ends) - 1} do not end an '
      "episode; pass repair='drop_unfinished' to drop them or "
      "repair='truncate_unfinished' to end them as a truncated episode",
      source=source, episode=len(done), field='timeouts')


def from_d4rl(data: D4RLLike, *, final_observation: Optional[str] = None,
              repair: Union[None, str, Iterable[str]] = None,
              last_step: transitions.LastStepLike = 'invalid'
              ) -> Iterator[episodes_lib.Episode]:
  """RLDS Episodes from a D4RL-style dict or HDF5 file (checked now, cut as iterated).

  Args:
    data: dict of row arrays (``a/b`` keys or nested), an HDF5 file path or an
      ``h5py`` group.
    final_observation: without ``next_observations``: ``'repeat'`` the last
      row's observation, ``'zeros'``, or None (raises).
    repair: rows after the last end flag: ``'drop_unfinished'``,
      ``'truncate_unfinished'``, or None (raises).
    last_step: ``'invalid'`` (default, RLDS) or ``'valid'`` (every row a
      real step, as `to_d4rl` with ``'valid'`` wrote).

  Example:
    >>> data = {'observations': np.zeros((2, 1)), 'actions': np.zeros(2),
    ...         'rewards': np.zeros(2), 'terminals': [False, False]}
    >>> from_d4rl(data, final_observation='repeat')
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: <d4rl dict>: episode 0, field 'timeouts': neither terminals nor timeouts is set on the last row (1): rows 0..1 do not end an episode; pass repair='drop_unfinished' to drop them or repair='truncate_unfinished' to end them as a truncated episode
  """
  repairs = frozenset([repair] if isinstance(repair, str) else repair or ())
  if repairs - REPAIRS:
    raise ValueError(f'from_d4rl: repair={sorted(repairs - REPAIRS)[0]!r} '
                     f'is unknown; choose from {sorted(REPAIRS)}.')
  if final_observation not in (None,) + FINAL_OBSERVATIONS:
    raise ValueError(f'from_d4rl: final_observation={final_observation!r}; '
                     f'choose from {FINAL_OBSERVATIONS} or None.')
  policy = transitions.last_step_policy(last_step, 'from_d4rl')
  data, source = _load(data)
  for key in REQUIRED_KEYS:
    if key not in data:
      raise ConversionError(
          'is missing; a D4RL dict needs ' + ', '.join(REQUIRED_KEYS) +
          ' (and timeouts)', source=source, field=key)
  rewards = _column(data, 'rewards', source)
  rows = len(rewards)
  terminals, timeouts = (
      input_checks.flags(_column(data, key, source), source=source, field=key)
      if key in data else np.zeros(rows, bool)
      for key in ('terminals', 'timeouts'))
  row_data = {k: data[k] for k in
              ('observations', 'actions', 'next_observations', 'discounts')
              if k in data}
  row_data.update(terminals=terminals, timeouts=timeouts)
  for key, value in row_data.items():
    _check_rows(value, key, rows, source)
  extras = {k: v for k, v in data.items()
            if k not in _NOT_STEP_KEYS and (k == 'infos' or _is_rows(v, rows))}
  for key, value in extras.items():
    _check_rows(value, key, rows, source)
  next_observations = data.get('next_observations')
  if next_observations is None and final_observation not in FINAL_OBSERVATIONS:
    raise ConversionError(
        "is missing, so each episode's final observation is unknown; pass "
        "final_observation='repeat' (repeat the last row's observation) or "
        "final_observation='zeros'", source=source,
        field='next_observations')
  ends = _unfinished(terminals | timeouts, repairs, source)
  slices = episodes_lib.episode_slices(ends, source=source, field='timeouts')
  return transitions.read_with_policy(
      _episodes(data, extras, terminals, slices, next_observations,
                final_observation, np.asarray(rewards), source), policy,
      source)


def _episodes(data: Dict[str, Any], extras: Dict[str, Any],
              terminals: np.ndarray, slices: List[slice],
              next_observations: Any, final_observation: Optional[str],
              rewards: np.ndarray, source: str
              ) -> Iterator[episodes_lib.Episode]:
  """Cuts Episodes out of all rows with one ``np.insert`` per field."""
  if not slices:
    return
  stops = np.array([s.stop for s in slices])
  last_rows = stops - 1

  def with_final(leaf, final_leaf=None):
    leaf = np.asarray(leaf)
    if final_leaf is not None:
      final = np.asarray(final_leaf)[last_rows]
    elif final_observation == 'repeat':
      final = leaf[last_rows]
    else:
      final = strings.zero_rows(len(stops), leaf)
    return np.insert(leaf, stops, final, axis=0)

  def with_zero(leaf):
    leaf = np.asarray(leaf)
    return np.insert(leaf, stops, strings.zero_rows(len(stops), leaf), axis=0)

  if next_observations is not None:
    observations = _map_pair(with_final, data['observations'],
                             next_observations, source)
  else:
    observations = _map(with_final, data['observations'])
  actions = _map(with_zero, data['actions'])
  all_rewards = with_zero(rewards)
  discounts = data.get('discounts')
  all_discounts = None if discounts is None else with_zero(
      np.asarray(discounts).reshape(-1))
  all_extras = {k: _map(with_zero, v) for k, v in extras.items()}
  for index, rows in enumerate(slices):
    cut = slice(rows.start + index, rows.stop + index + 1)
    terminated = bool(terminals[rows.stop - 1])
    take = lambda leaf, cut=cut: leaf[cut]  # pylint: disable=cell-var-from-loop
    if all_discounts is None:
      discount = transitions.derived_discount(cut.stop - cut.start, terminated)
    else:
      discount = all_discounts[cut]
    steps = {k: _map(take, v) for k, v in all_extras.items()}
    steps.update({
        rlds_types.OBSERVATION: _map(take, observations),
        rlds_types.ACTION: _map(take, actions),
        rlds_types.REWARD: all_rewards[cut],
        rlds_types.DISCOUNT: discount,
        **episodes_lib.rlds_flags(cut.stop - cut.start, terminated),
    })
    yield {rlds_types.STEPS: strings.canonical(steps)}


def _map_pair(fn, nest: Any, other: Any, source: str,
              path: str = 'next_observations') -> Any:
  if isinstance(nest, dict):
    if not isinstance(other, dict) or sorted(other) != sorted(nest):
      keys = sorted(other) if isinstance(other, dict) else 'an array'
      raise ConversionError(f'has keys {keys}; observations has '
                            f'{sorted(nest)}', source=source, field=path)
    return {k: _map_pair(fn, v, other[k], source, f'{path}/{k}')
            for k, v in nest.items()}
  if isinstance(other, dict):
    raise ConversionError('is a dict; observations is an array',
                          source=source, field=path)
  if np.shape(other)[1:] != np.shape(nest)[1:]:
    raise ConversionError(
        f'has rows of shape {np.shape(other)[1:]}; '
        f'{path.replace("next_observations", "observations", 1)} has '
        f'{np.shape(nest)[1:]}', source=source, field=path)
  return fn(nest, other)


def d4rl_to_tfds(data: D4RLLike, data_dir: Union[str, os.PathLike], name: str,
                 *, final_observation: Optional[str] = None,
                 repair: Union[None, str, Iterable[str]] = None,
                 last_step: transitions.LastStepLike = 'invalid',
                 **write_kwargs: Any) -> str:
  """Writes D4RL-style data as an RLDS TFDS dataset; returns its directory.

  Arguments as `from_d4rl` and `rlds_lite.convert.write_tfds`.

  Example:
    >>> import tempfile, rlds_lite
    >>> data = {'observations': np.zeros((3, 2), np.float32),
    ...         'actions': np.zeros((3, 1), np.float32),
    ...         'rewards': np.ones(3, np.float32),
    ...         'terminals': [0, 0, 1], 'timeouts': [0, 0, 0]}
    >>> out = d4rl_to_tfds(data, tempfile.mkdtemp(), 'toy',
    ...                    final_observation='zeros')
    >>> [int(e['steps']['reward'].shape[0])
    ...  for e in rlds_lite.load(out, dense=True)]
    [4]
  """
  return episodes_lib.write_tfds(
      from_d4rl(data, final_observation=final_observation, repair=repair,
                last_step=last_step),
      data_dir, name, **write_kwargs)


def _append(columns: Dict[str, List[np.ndarray]], name: str, nest: Any) -> None:
  for path, leaf in nest_paths.flatten_with_paths(nest, name):
    columns.setdefault(path, []).append(np.asarray(leaf))


def to_d4rl(episodes: episodes_lib.EpisodesLike,
            path: Optional[Union[str, os.PathLike]] = None, *,
            one_step: str = 'error',
            last_step: transitions.LastStepLike = 'invalid',
            if_exists: str = 'overwrite') -> Dict[str, np.ndarray]:
  """D4RL-style row arrays (with ``next_observations``) from Episodes.

  Each episode of ``T`` steps gives ``T - 1`` rows; nested fields get ``a/b``
  keys. What round-trips: docs/convert_minari_d4rl.md.

  Args:
    episodes: Episodes or an RLDS dataset with ``observation``, ``action``
      and ``reward``.
    path: if given, also written there as an HDF5 file (atomically).
    if_exists: ``'overwrite'`` (default) or ``'error'`` for an existing ``path``.
    one_step: a one-step episode has no row: ``'error'`` (default) or ``'skip'``.
    last_step: ``'invalid'`` (default, RLDS): the last step's action,
      reward and discount are left out, warning once if any is non-zero;
      ``'valid'``: they are real and kept (docs/convert.md).

  Returns:
    Flat dict of row arrays.

  Example:
    >>> from rlds_lite.convert import episodes as episodes_lib
    >>> e = {'steps': {'observation': np.arange(3.), 'action': np.zeros(3),
    ...                'reward': np.array([1., 1., 0.]),
    ...                **episodes_lib.rlds_flags(3, True)}}
    >>> d = to_d4rl([e])
    >>> d['next_observations'].tolist(), d['terminals'].tolist(), d['timeouts'].tolist()
    ([1.0, 2.0], [False, True], [False, False])
    >>> e['steps']['reward'][-1] = 5.0  # A success reward on the last step.
    >>> to_d4rl([e], last_step='valid')['rewards'].tolist()
    [1.0, 1.0, 5.0]
  """
  check = (atomic_output.existing_check(if_exists, 'to_d4rl')
           if path is not None else None)
  if one_step not in ('error', 'skip'):
    raise ValueError(f"to_d4rl: one_step={one_step!r}; 'error' or 'skip'.")
  policy = transitions.last_step_policy(last_step, 'to_d4rl')
  dropped = transitions.LastStepValues('to_d4rl', extras=True)
  columns: Dict[str, List[np.ndarray]] = {}
  discounts: List[np.ndarray] = []
  stored_discount = False
  source = '<episodes>'
  for index, episode in enumerate(transitions.prepared_for_writing(
      episodes_lib.checked_episodes(episodes, source=source,
                                    numbers=(rlds_types.REWARD,)), policy,
      dropped)):
    steps = episode[rlds_types.STEPS]
    for field in (rlds_types.OBSERVATION, rlds_types.ACTION, rlds_types.REWARD):
      if field not in steps:
        raise ConversionError('is missing; D4RL needs it', source=source,
                              episode=index, field=field)
    view = transitions.transitions_from_steps(steps)
    count = len(view['rewards'])
    if not count:
      if one_step == 'skip':
        continue
      raise ConversionError(
          "has one step (only a final observation), so no D4RL row; pass "
          "one_step='skip' to leave such episodes out", source=source,
          episode=index, field=rlds_types.IS_LAST)
    observations = view['observations']
    _append(columns, 'observations',
            _map(lambda x: np.asarray(x)[:-1], observations))
    _append(columns, 'next_observations',
            _map(lambda x: np.asarray(x)[1:], observations))
    _append(columns, 'actions', view['actions'])
    _append(columns, 'rewards', view['rewards'])
    ends = np.zeros(count, bool)
    terminals, timeouts = ends.copy(), ends.copy()
    terminals[-1] = view['terminated']
    timeouts[-1] = not view['terminated']
    _append(columns, 'terminals', terminals)
    _append(columns, 'timeouts', timeouts)
    for key, value in view['extras'].items():
      _append(columns, key, _map(lambda x: np.asarray(x)[:-1], value))
    if view['discounts'] is None:
      discounts.append(transitions.derived_discount(count + 1,
                                                    view['terminated'])[:-1])
    else:
      stored_discount = True
      discounts.append(np.asarray(view['discounts']))
  if not columns:
    raise ValueError('to_d4rl: no episodes with rows; the shapes of the '
                     'arrays cannot be inferred.')
  out = {k: np.concatenate(v) for k, v in columns.items()}
  if stored_discount:
    out['discounts'] = np.concatenate(discounts)
  if path is not None:
    _write_hdf5(out, os.fspath(path), check, if_exists == 'overwrite')
  dropped.warn()
  return out


def _write_hdf5(arrays: Dict[str, np.ndarray], path: str,
                check: Optional[Callable[[str], None]], replace: bool) -> None:
  with atomic_output.AtomicOutput(path, check=check,
                                  replace=replace) as output:
    # Not h5py.File: see HDF5Output.
    with hdf5_output.HDF5Output(output.path, label=path) as hdf5:
      for key, value in arrays.items():
        strings.create_hdf5_dataset(hdf5.file, key, value, key, path)
        hdf5.check()   # A failed write stops here, not at HDF5's close.
    output.publish()
