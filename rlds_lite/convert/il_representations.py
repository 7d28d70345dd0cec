"""il-representations data (dicts and webdataset shards) to RLDS and back.

Both forms hold one row per transition ``(o_t, a_t, o_{t+1})``: the dict of
``auto.load_dataset_dict()`` (`from_il_dict`, `to_il_dict`) and webdataset
tar shards (`from_webdataset`, `to_webdataset`). An episode's ``N`` rows
become ``N + 1`` RLDS steps; how ``dones``, truncation and discounts map:
docs/convert_formats.md. `episodes_from_rows` is shared with the TED
converter.

Example:
  >>> import numpy as np
  >>> data = {'obs': np.array([0., 1., 5.]), 'next_obs': np.array([1., 2., 6.]),
  ...         'acts': np.array([1, 2, 3]), 'dones': np.array([0, 1, 1])}
  >>> [e['steps']['observation'].tolist() for e in from_il_dict(data)]
  [[0.0, 1.0, 2.0], [5.0, 6.0]]
  >>> sorted(to_il_dict(from_il_dict(data)))
  ['acts', 'dones', 'next_obs', 'obs', 'truncated']
"""

import dataclasses
import glob
import io
import os
import pickle
import tarfile
from typing import (Any, Dict, Iterable, Iterator, List, Optional, Sequence,
                    Tuple, Union)

import numpy as np
import tensorflow as tf

from rlds_lite import option_objects
from rlds_lite import atomic_output
from rlds_lite import nest_paths
from rlds_lite import rlds_types
from rlds_lite.convert import episodes as episodes_lib
from rlds_lite.convert import input_checks
from rlds_lite.convert import pickles
from rlds_lite.convert import strings
from rlds_lite.convert import transitions

ConversionError = episodes_lib.ConversionError

REQUIRED_KEYS = ('obs', 'next_obs', 'acts', 'dones')
"""Keys an il-representations dict (and every shard frame) must have."""
REPAIRS = ('truncate', 'drop')
"""``repair=`` options: end unfinished trailing rows as truncated, or drop."""
DONES_MEANINGS = ('terminated', 'truncated')
"""``dones_mean=`` options when no ``truncated`` marker is stored."""
TRUNCATED_INFO = 'TimeLimit.truncated'
"""gym's info key for an episode cut by a time limit (shards)."""
EPISODE_METADATA_INFO = 'episode_metadata'
"""Info key of an episode's first frame holding its RLDS metadata (shards)."""
DISCOUNT_INFO = 'discount'
"""Info key holding a stored (non-derived) discount (shards)."""
METADATA_MEMBER = '_metadata.meta.pickle'
"""The first member of every shard: the dataset's metadata."""

_ROW_ROLES = {'obs': rlds_types.OBSERVATION, 'acts': rlds_types.ACTION,
              'rews': rlds_types.REWARD}
_NOT_STEP_KEYS = frozenset(REQUIRED_KEYS + ('rews', 'truncated', 'discounts'))
_FRAME_FIELDS = frozenset(REQUIRED_KEYS + ('rews', 'infos'))
# ----------------------------------------------------------------------------
# Rows <-> Episodes (shared with the TED converter).


def _map(fn, nest: Any) -> Any:
  if isinstance(nest, dict):
    return {k: _map(fn, v) for k, v in nest.items()}
  return fn(nest)


def _concat(nests: List[Any]) -> Any:
  if isinstance(nests[0], dict):
    return {k: _concat([n[k] for n in nests]) for k in nests[0]}
  return np.concatenate([np.asarray(n) for n in nests])


def check_rows(nest: Any, name: str, rows: int, source: str,
               against: str) -> None:
  """Raises ConversionError unless every leaf of ``nest`` has ``rows`` rows.

  Example:
    >>> check_rows({'a': np.zeros(3)}, 'obs', 2, 'x.tar', 'dones')
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: x.tar: field 'obs/a': has 3 rows; dones has 2
  """
  for path, leaf in nest_paths.flatten_with_paths(nest, name):
    length = np.shape(leaf)[0] if np.ndim(leaf) else None
    if length != rows:
      raise ConversionError(f'has {length} rows; {against} has {rows}',
                            source=source, field=path)


def end_column(value: Any, name: str, source: str) -> np.ndarray:
  """A ``[N]`` or ``[N, 1]`` flag column as bool ``[N]`` (numbers: 0 or 1).

  Example:
    >>> end_column([[0], [1]], 'done', 'x').tolist()
    [False, True]
  """
  value = np.asarray(value)
  if value.ndim == 2 and value.shape[1] == 1:
    value = value[:, 0]
  if value.ndim != 1:
    raise ConversionError(f'has shape {value.shape}; expected [rows]',
                          source=source, field=name)
  return input_checks.flags(value, source=source, field=name)


def repair_ends(ends: np.ndarray, repair: Optional[str], source: str,
                field: str) -> np.ndarray:
  """End flags whose trailing unfinished rows are repaired, or an error.

  ``repair='truncate'`` ends those rows as a truncated episode,
  ``'drop'`` drops them; None raises a ConversionError naming the episode.

  Example:
    >>> repair_ends(np.array([True, False]), 'truncate', 'x', 'dones').tolist()
    [True, True]
    >>> repair_ends(np.array([True, False]), None, 'x', 'dones')
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: x: episode 1, field 'dones': is not set on the last row (1): rows 1..1 do not end an episode; pass repair='truncate' to end them as a truncated episode or repair='drop' to drop them
  """
  if repair not in (None,) + REPAIRS:
    raise ValueError(f'repair={repair!r} is unknown; choose from '
                     f'{sorted(REPAIRS)}.')
  if not len(ends) or ends[-1]:
    return ends
  done = np.flatnonzero(ends)
  first = int(done[-1]) + 1 if len(done) else 0
  if repair == 'drop':
    return ends[:first]
  if repair == 'truncate':
    ends = ends.copy()
    ends[-1] = True
    return ends
  raise ConversionError(
      f'is not set on the last row ({len(ends) - 1}): rows {first}..'
      f'{len(ends) - 1} do not end an episode; pass repair=\'truncate\' to '
      "end them as a truncated episode or repair='drop' to drop them",
      source=source, episode=len(done), field=field)


@dataclasses.dataclass(frozen=True)
class TransitionRows:
  """Checked transition rows ``(o_t, a_t, o_{t+1})``, every leaf ``[R, ...]``.

  Attributes:
    observations, next_observations: nests of ``o_t`` and ``o_{t+1}``.
    actions: a nest of ``a_t``.
    rewards: ``[R]``, or None (no reward field).
    discounts: stored ``[R]`` transition discounts, or None to derive them.
    extras: more step fields (name -> nest), zero on the last step.

  Example:
    >>> TransitionRows(np.zeros((3, 2)), np.ones((3, 2)), np.zeros(3))
    TransitionRows(3 rows: observations, next_observations, actions)
  """
  observations: Any
  next_observations: Any
  actions: Any
  rewards: Optional[np.ndarray] = None
  discounts: Optional[np.ndarray] = None
  extras: Optional[Dict[str, Any]] = None

  def __repr__(self) -> str:
    leaves = [leaf for _, leaf in nest_paths.flatten_with_paths(self.actions)]
    rows = len(np.asarray(leaves[0])) if leaves else 0
    names = [f.name for f in dataclasses.fields(self)
             if f.name != 'extras' and getattr(self, f.name) is not None]
    names += sorted(self.extras or {})
    return f'TransitionRows({rows} rows: {", ".join(names)})'




def _legacy_rows(args: Tuple[Any, ...], legacy: Dict[str, Any]
                 ) -> Tuple[TransitionRows, Any, Any]:
  """The rows, ends and terminated of the call of before `TransitionRows`."""
  unknown = sorted(set(legacy) - {'discounts', 'extras'})
  if unknown or len(args) != 6:
    raise TypeError('episodes_from_rows(rows, ends, terminated): got '
                    f'{len(args)} positional arguments'
                    + (f' and {unknown}' if unknown else ''))
  option_objects.warn_once(
      ('episodes_from_rows', 'rows'), 'episodes_from_rows(observations, '
      'next_observations, actions, rewards, ends, terminated, discounts=, '
      'extras=) is now episodes_from_rows(TransitionRows(...), ends, '
      'terminated); the old form will go in a later release.')
  observations, next_observations, actions, rewards, ends, terminated = args
  return (TransitionRows(observations, next_observations, actions, rewards,
                         **legacy), ends, terminated)


def episodes_from_rows(rows: Any, ends: Any, terminated: Any,
                       *legacy_args: Any,
                       metadata: Optional[Sequence[Dict[str, Any]]] = None,
                       source: str = '<rows>', field: str = 'dones',
                       **legacy: Any) -> List[episodes_lib.Episode]:
  """RLDS Episodes from checked transition rows, cut at ``ends``.

  Rows past ``len(ends)`` are dropped; one ``np.insert`` per field adds each
  episode's last step (the final observation, zero action and reward).

  Args:
    rows: the `TransitionRows` (``R >= len(ends)`` rows).
    ends: bool ``[N]``, True on each episode's last row; ``ends[-1]`` True.
    terminated: bool ``[N]``: the row's transition terminates its episode.
    metadata: one dict of episode metadata per episode, or None.
    source, field: for error messages.
    *legacy_args, **legacy: the call of before `TransitionRows`
      (``observations, next_observations, actions, rewards, ends,
      terminated, discounts=, extras=``), still taken, warning once.

  Example:
    >>> rows = TransitionRows(np.arange(3.), np.arange(1., 4.), np.ones(3))
    >>> e = episodes_from_rows(rows, np.array([0, 1, 1], bool),
    ...                        np.array([0, 1, 0], bool))
    >>> [x['steps']['discount'].tolist() for x in e]
    [[1.0, 0.0, 0.0], [1.0, 0.0]]
  """
  if not isinstance(rows, TransitionRows):
    rows, ends, terminated = _legacy_rows((rows, ends, terminated) +
                                          legacy_args, legacy)
  elif legacy_args or legacy:
    raise TypeError('episodes_from_rows: pass discounts and extras in the '
                    'TransitionRows, not beside them.')
  observations, next_observations, actions = (
      rows.observations, rows.next_observations, rows.actions)
  rewards, discounts, extras = rows.rewards, rows.discounts, rows.extras
  slices = episodes_lib.episode_slices(ends, source=source, field=field)
  if not slices:
    return []
  count = len(ends)
  stops = np.array([s.stop for s in slices])
  last_rows = stops - 1
  end_terminated = np.asarray(terminated, bool)[last_rows]

  def with_final(leaf, next_leaf):
    leaf = np.asarray(leaf)[:count]
    return np.insert(leaf, stops, np.asarray(next_leaf)[last_rows], axis=0)

  def with_zero(leaf):
    leaf = np.asarray(leaf)[:count]
    return np.insert(leaf, stops, strings.zero_rows(len(stops), leaf), axis=0)

  observations = _map_pair(with_final, observations, next_observations)
  actions = _map(with_zero, actions)
  if discounts is None:
    discounts = np.ones(count, np.float32)
    discounts[last_rows[end_terminated]] = 0
  columns = {rlds_types.OBSERVATION: observations,
             rlds_types.ACTION: actions,
             rlds_types.DISCOUNT: with_zero(discounts)}
  if rewards is not None:
    columns[rlds_types.REWARD] = with_zero(rewards)
  for key, value in (extras or {}).items():
    columns[key] = _map(with_zero, value)
  out = []
  for index, rows in enumerate(slices):
    cut = slice(rows.start + index, rows.stop + index + 1)
    steps = {k: _map(lambda leaf, cut=cut: leaf[cut], v)
             for k, v in columns.items()}
    steps.update(episodes_lib.rlds_flags(cut.stop - cut.start,
                                         bool(end_terminated[index])))
    episode = dict(metadata[index]) if metadata is not None else {}
    episode[rlds_types.STEPS] = strings.canonical(steps)
    out.append(episode)
  return out


def _map_pair(fn, nest: Any, other: Any) -> Any:
  if isinstance(nest, dict):
    return {k: _map_pair(fn, v, other[k]) for k, v in nest.items()}
  return fn(nest, other)


def same_structure(nest: Any, other: Any, name: str, other_name: str,
                   source: str) -> None:
  """Raises unless both nests have the same dict keys and per-row shapes.

  Example:
    >>> same_structure({'a': 1}, {'b': 1}, 'next_obs', 'obs', 'x')
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: x: field 'next_obs': has keys ['b']; obs has ['a']
    >>> same_structure(np.zeros((3, 2)), np.zeros((3, 4)), 'next_obs', 'obs', 'x')
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: x: field 'next_obs': has rows of shape (4,); obs has (2,)
  """
  if isinstance(nest, dict) != isinstance(other, dict):
    kind = 'a dict' if isinstance(other, dict) else 'an array'
    raise ConversionError(f'is {kind}; {other_name} is not', source=source,
                          field=name)
  if isinstance(nest, dict):
    if sorted(nest) != sorted(other):
      raise ConversionError(f'has keys {sorted(other)}; {other_name} has '
                            f'{sorted(nest)}', source=source, field=name)
    for key in nest:
      same_structure(nest[key], other[key], f'{name}/{key}',
                     f'{other_name}/{key}', source)
  elif np.shape(nest)[1:] != np.shape(other)[1:]:
    raise ConversionError(f'has rows of shape {np.shape(other)[1:]}; '
                          f'{other_name} has {np.shape(nest)[1:]}',
                          source=source, field=name)


def rows_from_episodes(episodes: episodes_lib.EpisodesLike, *,
                       one_step: str = 'error', source: str = '<episodes>',
                       what: str = 'this format',
                       last_step: transitions.LastStepLike = 'invalid',
                       where: str = 'rows_from_episodes'
                       ) -> Optional[Dict[str, Any]]:
  """Transition rows of RLDS Episodes (the inverse of `episodes_from_rows`).

  Args:
    episodes: Episodes or an RLDS dataset with ``observation`` and
      ``action`` (``reward`` optional).
    one_step: a one-step episode has no row: ``'error'`` or ``'skip'``.
    source, what: for error messages.
    last_step: ``'invalid'`` (default, RLDS): the last step's action,
      reward, discount and other non-observation fields have no row and are
      left out, with one `rlds_lite.dense.LastStepValuesWarning` naming the
      fields of non-zero ones; ``'valid'``: they are real (e.g. a success
      reward) and kept: the last step becomes a row too, its next
      observation repeating the last one (the one after the last action is
      unknown); reading with ``last_step='valid'`` gives the episodes back
      exactly.
    where: the writer, named in the warning.

  Returns:
    None if no rows, else a dict: ``observations``, ``next_observations``,
    ``actions`` (nests of ``[N, ...]``), ``rewards`` (``[N]`` or None),
    ``ends``, ``terminated``, ``truncated`` (bool ``[N]``, set on last rows),
    ``discounts`` (``[N]``, or None if every episode has the derived float32
    discount), ``extras`` (other step fields, ``[N, ...]``), ``metadata``
    (one dict per episode with rows).

  Example:
    >>> e = {'steps': {'observation': np.arange(3.), 'action': np.zeros(3),
    ...                **episodes_lib.rlds_flags(3, True)}}
    >>> r = rows_from_episodes([e])
    >>> r['next_observations'].tolist(), r['terminated'].tolist()
    ([1.0, 2.0], [False, True])
  """
  if one_step not in ('error', 'skip'):
    raise ValueError(f"one_step={one_step!r}; 'error' or 'skip'.")
  policy = transitions.last_step_policy(last_step, where)
  dropped = transitions.LastStepValues(where, extras=True)
  parts: Dict[str, List[Any]] = {}
  discounts: List[np.ndarray] = []
  stored_discount = False
  metadata = []
  has_reward = None
  for index, episode in enumerate(transitions.prepared_for_writing(
      episodes_lib.checked_episodes(episodes, source=source), policy,
      dropped)):
    steps = episode[rlds_types.STEPS]
    for name in (rlds_types.OBSERVATION, rlds_types.ACTION):
      if name not in steps:
        raise ConversionError(f'is missing; {what} needs it', source=source,
                              episode=index, field=name)
    if has_reward is None:
      has_reward = rlds_types.REWARD in steps
    elif has_reward != (rlds_types.REWARD in steps):
      raise ConversionError('is in some episodes only', source=source,
                            episode=index, field=rlds_types.REWARD)
    length = len(steps[rlds_types.IS_LAST])
    if length == 1:
      if one_step == 'skip':
        continue
      raise ConversionError(
          f'has one step (only a final observation), so no row in {what}; '
          "pass one_step='skip' to leave such episodes out", source=source,
          episode=index, field=rlds_types.IS_LAST)
    terminated = bool(steps[rlds_types.IS_TERMINAL][-1])
    head = lambda x: np.asarray(x)[:-1]
    last = np.arange(length - 1) == length - 2
    add = lambda key, value: parts.setdefault(key, []).append(value)
    add('observations', _map(head, steps[rlds_types.OBSERVATION]))
    add('next_observations',
        _map(lambda x: np.asarray(x)[1:], steps[rlds_types.OBSERVATION]))
    add('actions', _map(head, steps[rlds_types.ACTION]))
    if has_reward:
      add('rewards', head(steps[rlds_types.REWARD]))
    add('ends', last)
    add('terminated', last & terminated)
    add('truncated', last & (not terminated))
    add('extras', {k: _map(head, v) for k, v in steps.items()
                   if k not in transitions.CORE_FIELDS})
    derived = transitions.derived_discount(length, terminated)
    discount = steps.get(rlds_types.DISCOUNT)
    if discount is None:
      discounts.append(derived[:-1])
    else:
      discount = np.asarray(discount)
      if (discount.dtype != np.float32 or
          not np.array_equal(discount[:-1], derived[:-1])):
        stored_discount = True
      discounts.append(discount[:-1])
    metadata.append({k: v for k, v in episode.items()
                     if k != rlds_types.STEPS})
  dropped.warn(stacklevel=5)
  if not parts:
    return None
  out = {k: _concat(v) for k, v in parts.items()}
  out.setdefault('rewards', None)
  out['discounts'] = np.concatenate(discounts) if stored_discount else None
  out['metadata'] = metadata
  return out


# ----------------------------------------------------------------------------
# The in-memory dict.


def _rows_of(data: Dict[str, Any], source: str, dones_mean: str,
             repair: Optional[str], field: str = 'dones',
             metadata: Optional[List[Dict[str, Any]]] = None
             ) -> List[episodes_lib.Episode]:
  """Episodes of an il-representations row dict that has the required keys."""
  if dones_mean not in DONES_MEANINGS:
    raise ValueError(f'dones_mean={dones_mean!r}; choose from '
                     f'{DONES_MEANINGS}.')
  dones = end_column(data['dones'], 'dones', source)
  rows = len(dones)
  for key in REQUIRED_KEYS[:3] + ('rews', 'truncated', 'discounts'):
    if key in data:
      check_rows(data[key], key, rows, source, 'dones')
  same_structure(data['obs'], data['next_obs'], 'next_obs', 'obs', source)
  extras = {k: v for k, v in data.items() if k not in _NOT_STEP_KEYS}
  for key, value in extras.items():
    check_rows(value, key, rows, source, 'dones')
  if 'truncated' in data:
    truncated = end_column(data['truncated'], 'truncated', source)
    bad = np.flatnonzero(truncated & ~dones)
    if len(bad):
      raise ConversionError(
          f'is True on row {bad[0]} where dones is False',
          source=source, episode=int(dones[:bad[0]].sum()),
          field='truncated')
    terminated = dones & ~truncated
  elif dones_mean == 'terminated':
    terminated = dones
  else:
    terminated = np.zeros(rows, bool)
  ends = repair_ends(dones, repair, source, field)
  rewards = data.get('rews')
  if rewards is not None:
    rewards = np.asarray(rewards)
    if rewards.ndim == 2 and rewards.shape[1] == 1:
      rewards = rewards[:, 0]
  rows = TransitionRows(data['obs'], data['next_obs'], data['acts'], rewards,
                        data.get('discounts'), extras)
  return episodes_from_rows(rows, ends, terminated, metadata=metadata,
                            source=source, field=field)


def from_il_dict(data: Dict[str, Any], *, dones_mean: str = 'terminated',
                 repair: Optional[str] = None,
                 last_step: transitions.LastStepLike = 'invalid'
                 ) -> List[episodes_lib.Episode]:
  """RLDS Episodes from an il-representations dict (see module docstring).

  Args:
    data: ``obs``, ``next_obs`` (nests of ``[N, ...]``), ``acts``, ``dones``
      (``[N]``); optionally ``rews``, ``truncated`` (``[N]`` bool: the done
      is a time limit), ``discounts`` and other ``[N, ...]`` step fields.
    dones_mean: without ``truncated``, whether a done is a termination
      (default) or a truncation.
    repair: rows after the last done: None raises, ``'truncate'`` ends them
      as a truncated episode, ``'drop'`` drops them.
    last_step: ``'invalid'`` (default, RLDS): each episode ends with its
      final observation as a step with zero action, reward and discount;
      ``'valid'``: every row is a real step and the final observation is
      dropped (what the writer with ``last_step='valid'`` wrote).

  Returns:
    A list of Episodes (no episode metadata: the dict has no place for it).

  Raises:
    ConversionError: naming the episode (where one) and the field.

  Example:
    >>> from_il_dict({'obs': np.zeros(2), 'next_obs': np.zeros(2),
    ...               'acts': np.zeros(2), 'dones': np.array([1, 0])})
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: <il dict>: episode 1, field 'dones': is not set on the last row (1): rows 1..1 do not end an episode; pass repair='truncate' to end them as a truncated episode or repair='drop' to drop them
  """
  source = '<il dict>'
  policy = transitions.last_step_policy(last_step, 'from_il_dict')
  for key in REQUIRED_KEYS:
    if key not in data:
      raise ConversionError(
          'is missing; an il-representations dict needs ' +
          ', '.join(REQUIRED_KEYS), source=source, field=key)
  return list(transitions.read_with_policy(
      _rows_of(data, source, dones_mean, repair), policy, source))


def to_il_dict(episodes: episodes_lib.EpisodesLike, *,
               one_step: str = 'error',
               last_step: transitions.LastStepLike = 'invalid'
               ) -> Dict[str, Any]:
  """An il-representations dict from RLDS Episodes (or an RLDS dataset).

  Writes ``obs``, ``next_obs``, ``acts``, ``dones``, ``truncated`` (True on
  the last row of a truncated episode), ``rews`` if the episodes have a
  reward, ``discounts`` if a discount differs from the derived one, and the
  other step fields. `from_il_dict` gives the episodes back exactly apart
  from episode metadata and the last step's values of non-observation
  fields (invalid in RLDS).

  Args:
    episodes: Episodes or an RLDS dataset.
    one_step: a one-step episode has no row: ``'error'`` or ``'skip'``.
    last_step: ``'invalid'`` (default, RLDS): the last step's action,
      reward, discount and other non-observation fields have no row and are
      left out, with one `rlds_lite.dense.LastStepValuesWarning` naming the
      fields of non-zero ones; ``'valid'``: they are real (e.g. a success
      reward) and kept: the last step becomes a row too, its next
      observation repeating the last one (the one after the last action is
      unknown); reading with ``last_step='valid'`` gives the episodes back
      exactly.

  Example:
    >>> e = {'steps': {'observation': np.arange(3.), 'action': np.zeros(3),
    ...                'reward': np.array([1., 1., 0.]),
    ...                **episodes_lib.rlds_flags(3, False)}}
    >>> d = to_il_dict([e])
    >>> d['next_obs'].tolist(), d['dones'].tolist(), d['truncated'].tolist()
    ([1.0, 2.0], [False, True], [False, True])
  """
  rows = rows_from_episodes(episodes, one_step=one_step,
                            what='an il-representations dict',
                            last_step=last_step, where='to_il_dict')
  if rows is None:
    raise ValueError('to_il_dict: no episodes with rows; the shapes of the '
                     'arrays cannot be inferred.')
  out = dict(rows['extras'])
  out.update(obs=rows['observations'], next_obs=rows['next_observations'],
             acts=rows['actions'], dones=rows['ends'],
             truncated=rows['truncated'])
  if rows['rewards'] is not None:
    out['rews'] = rows['rewards']
  if rows['discounts'] is not None:
    out['discounts'] = rows['discounts']
  return out


# ----------------------------------------------------------------------------
# Webdataset shards.


def _unpickle(data: bytes, allow_pickle: bool, where: Dict[str, Any]) -> Any:
  """A member's value; without ``allow_pickle`` bounded (see `pickles`)."""
  try:
    if allow_pickle:
      return pickle.loads(data)
    return pickles.loads(data)
  except pickles.RefusedPickle as error:
    raise ConversionError(str(error), **where) from None
  except Exception as error:  # pylint: disable=broad-except
    raise ConversionError(f'cannot be unpickled: {error!r}',
                          **where) from error


def shard_paths(paths_or_dir: Union[str, os.PathLike, Iterable[Any]]
                ) -> List[str]:
  """The shard files: a directory's ``*.tar`` sorted, a path, or a list.

  Example:
    >>> shard_paths(['b.tar', 'a.tar'])
    ['b.tar', 'a.tar']
  """
  if isinstance(paths_or_dir, (str, os.PathLike)):
    path = os.fspath(paths_or_dir)
    if os.path.isdir(path):
      found = sorted(glob.glob(os.path.join(path, '*.tar')))
      if not found:
        raise FileNotFoundError(f'{path}: no *.tar shards.')
      return found
    return [path]
  return [os.fspath(p) for p in paths_or_dir]


def read_shard_metadata(path: Union[str, os.PathLike], *,
                        allow_pickle: bool = False) -> Any:
  """The unpickled ``_metadata.meta.pickle`` of a shard (None if absent).

  Example:
    >>> import tempfile
    >>> e = {'steps': {'observation': np.zeros(2), 'action': np.zeros(2),
    ...                **episodes_lib.rlds_flags(2, True)}}
    >>> [p] = to_webdataset([e], tempfile.mkdtemp(), metadata={'task': 'x'})
    >>> read_shard_metadata(p)
    {'task': 'x'}
  """
  path = os.fspath(path)
  with tarfile.open(path, 'r') as tar:
    for member in tar:
      if os.path.basename(member.name) == METADATA_MEMBER:
        return _unpickle(tar.extractfile(member).read(), allow_pickle,
                         {'source': f'{path}:{member.name}'})
  return None


def _read_frames(path: str, allow_pickle: bool, episode: int
                 ) -> Iterator[Dict[str, Any]]:
  """The frames of one shard in member order, as dicts of unpickled values."""
  frame: Dict[str, Any] = {}
  key = None
  for name, payload in _tar_members(path):
    base = os.path.basename(name)
    if base == METADATA_MEMBER:
      continue
    prefix, _, suffix = base.partition('.')
    if not suffix.endswith('.pickle'):
      raise ConversionError(
          'is not a .pickle member; only pickled frames are supported',
          source=f'{path}:{name}', episode=episode)
    field = suffix[:-len('.pickle')]
    if prefix != key and frame:
      yield frame
      episode += bool(np.asarray(frame.get('dones', False)).any())
      frame = {}
    key = prefix
    where = {'source': f'{path}:{name}', 'episode': episode, 'field': field}
    frame['__key__'] = prefix
    frame[field] = _unpickle(payload, allow_pickle, where)
  if frame:
    yield frame


def _ustar_index(file: Any) -> Optional[List[Any]]:
  """(name, offset, size) of the regular files of a plain ustar archive.

  A fast path for the common case (several times faster than ``tarfile``); None
  for anything else (pax or GNU extensions, bad checksums, links), which
  ``tarfile`` then reads.
  """
  index = []
  offset = 0
  while True:
    file.seek(offset)
    header = file.read(512)
    if len(header) < 512:
      return None
    if header == bytes(512):
      return index
    if header[257:265] != b'ustar\x0000' or header[124] & 0x80:
      return None
    try:
      size = int(header[124:136].rstrip(b'\0 ') or b'0', 8)
      checksum = int(header[148:156].rstrip(b'\0 ') or b'0', 8)
    except ValueError:
      return None
    if checksum != sum(header[:148]) + 256 + sum(header[156:]):
      return None
    kind = header[156:157]
    if kind not in (b'0', b'\0', b'5'):
      return None
    name = header[:100].split(b'\0', 1)[0].decode('utf-8')
    prefix = header[345:500].split(b'\0', 1)[0].decode('utf-8')
    if prefix:
      name = f'{prefix}/{name}'
    if kind != b'5':
      index.append((name, offset + 512, size))
    offset += 512 + -(-size // 512) * 512


def _tar_truncation(file: Any) -> Optional[str]:
  """How a tar archive is cut short, or None if its blocks are all there.

  Walks the header blocks of any tar format (each names the size of the
  data after it) to the end-of-archive (zero) block. ``tarfile`` reads a
  truncated archive without a word, as if its last members did not exist.
  """
  file.seek(0, 2)
  size = file.tell()
  offset = 0
  last = None
  while True:
    file.seek(offset)
    header = file.read(512)
    if not header or len(header) < 512:
      after = f'after member {last!r}' if last else 'before its first member'
      return (f'is truncated: it ends {after} ({size} bytes) without the '
              'end-of-archive block')
    if header == bytes(512):
      return None
    field = header[124:136]
    try:
      length = (int.from_bytes(field[1:], 'big') if field[0] & 0x80 else
                int(field.rstrip(b'\0 ') or b'0', 8))
    except ValueError:
      return None  # Not a tar header: tarfile says what is wrong.
    last = header[:100].split(b'\0', 1)[0].decode('utf-8', 'replace')
    data_end = offset + 512 + length
    if data_end > size:
      return (f'is truncated: it ends inside member {last!r} ({size} bytes; '
              f'the member needs {data_end})')
    offset += 512 + -(-length // 512) * 512


def _tar_members(path: str) -> Iterator[Any]:
  """(name, bytes) of the regular files of a tar archive, in order."""
  with open(path, 'rb') as file:
    truncation = _tar_truncation(file)
    if truncation is not None:
      raise ConversionError(truncation, source=path)
    index = _ustar_index(file)
    if index is not None:
      for name, offset, size in index:
        file.seek(offset)
        yield name, file.read(size)
      return
  try:
    with tarfile.open(path, 'r') as tar:
      for member in tar:
        if member.isfile():
          yield member.name, tar.extractfile(member).read()
  except tarfile.TarError as error:
    raise ConversionError(f'is not a readable tar file: {error}',
                          source=path) from error


def _stack(values: List[Any], name: str, keys: List[str], source: str,
           episodes: np.ndarray) -> Any:
  """Per-frame values (nests) stacked to ``[N, ...]`` arrays."""
  first = values[0]
  if isinstance(first, dict):
    out = {}
    for sub in first:
      column = []
      for i, value in enumerate(values):
        if not isinstance(value, dict) or sub not in value:
          raise ConversionError(f'has no {sub!r} in frame {keys[i]}; frame '
                                f'{keys[0]} has', source=source,
                                episode=int(episodes[i]), field=name)
        column.append(value[sub])
      out[sub] = _stack(column, f'{name}/{sub}', keys, source, episodes)
    return out
  if all(isinstance(v, (bytes, str)) for v in values):
    column = np.empty(len(values), object)  # Not 'S': that drops NULs.
    column[:] = values
    return column
  arrays = [np.asarray(v) for v in values]
  shape = arrays[0].shape
  for i, array in enumerate(arrays):
    if array.shape != shape:
      raise ConversionError(
          f'has shape {array.shape} in frame {keys[i]}; frame {keys[0]} has '
          f'{shape}', source=source, episode=int(episodes[i]), field=name)
  return np.stack(arrays)


def from_webdataset(paths_or_dir: Union[str, os.PathLike, Iterable[Any]], *,
                    allow_pickle: bool = False,
                    dones_mean: str = 'terminated',
                    repair: Optional[str] = None,
                    last_step: transitions.LastStepLike = 'invalid'
                    ) -> List[episodes_lib.Episode]:
  """RLDS Episodes from il-representations webdataset tar shards.

  Frames are the groups of consecutive members sharing a prefix
  (``frame_007.obs.pickle``, ``frame_007.acts.pickle``...), read in member
  order, shard after shard (a directory's ``*.tar`` in sorted order); an
  episode may span shards. Each frame needs ``obs``, ``next_obs``, ``acts``
  and ``dones``; ``rews`` becomes the reward; in ``infos``,
  ``TimeLimit.truncated`` marks a truncated end, ``discount`` a stored
  discount, ``episode_metadata`` (first frame) the episode's metadata, and
  keys present in every frame become step fields (the others are dropped).
  Other members (e.g. ``frame``) become step fields.

  Pickles are code: by default only NumPy arrays and builtin values are
  unpickled and anything else raises a ConversionError naming the shard and
  member; ``allow_pickle=True`` unpickles anything (trusted files only).

  Args:
    paths_or_dir: a directory of ``*.tar`` shards, a shard path, or a list.
    allow_pickle: unpickle arbitrary objects (executes code from the file).
    dones_mean, repair, last_step: as in `from_il_dict`.

  Example:
    >>> import tempfile
    >>> e = {'steps': {'observation': np.zeros(3), 'action': np.array([1, 1, 0]),
    ...                **episodes_lib.rlds_flags(3, False)}}
    >>> out = tempfile.mkdtemp()
    >>> [os.path.basename(p) for p in to_webdataset([e], out)]
    ['shard_000000.tar']
    >>> [x['steps']['is_terminal'].tolist() for x in from_webdataset(out)]
    [[False, False, False]]
  """
  policy = transitions.last_step_policy(last_step, 'from_webdataset')
  paths = shard_paths(paths_or_dir)
  frames: List[Dict[str, Any]] = []
  episode = 0
  for path in paths:
    for frame in _read_frames(path, allow_pickle, episode):
      frame['__shard__'] = path
      for field in REQUIRED_KEYS:
        if field not in frame:
          raise ConversionError(
              f'is missing in frame {frame["__key__"]}; every frame needs '
              + ', '.join(REQUIRED_KEYS), source=path, episode=episode,
              field=field)
      frame['dones'] = input_checks.flags(
          frame['dones'], source=f'{path}:{frame["__key__"]}.dones.pickle',
          episode=episode, field='dones')
      frames.append(frame)
      episode += bool(frame['dones'].any())
  source = paths[0] if len(paths) == 1 else os.path.dirname(paths[0]) or '.'
  if not frames:
    return []
  keys = [f['__key__'] for f in frames]
  dones = np.array([bool(f['dones'].any()) for f in frames])
  episodes = np.concatenate([[0], np.cumsum(dones)[:-1]])
  infos = [f.get('infos') or {} for f in frames]
  for i, info in enumerate(infos):
    if not isinstance(info, dict):
      raise ConversionError(f'is a {type(info).__name__} in frame {keys[i]}; '
                            'expected a dict', source=frames[i]['__shard__'],
                            episode=int(episodes[i]), field='infos')
  data = {'dones': dones}
  fields = [k for k in frames[0] if not k.startswith('__') and k != 'infos'
            and k != 'dones']
  for field in fields:
    for i, frame in enumerate(frames):
      if field not in frame:
        raise ConversionError(f'is missing in frame {keys[i]}; frame '
                              f'{keys[0]} has it', source=frame['__shard__'],
                              episode=int(episodes[i]), field=field)
    data[field] = _stack([f[field] for f in frames], field, keys, source,
                         episodes)
  data['truncated'] = np.array([bool(input_checks.flags(
      i.get(TRUNCATED_INFO, False), source=frames[row]['__shard__'],
      episode=int(episodes[row]), field=f'infos/{TRUNCATED_INFO}').any())
                                for row, i in enumerate(infos)]) & dones
  if not data['truncated'].any():
    del data['truncated']
  if all(DISCOUNT_INFO in i for i in infos):
    data['discounts'] = _stack([i[DISCOUNT_INFO] for i in infos], 'infos/'
                               + DISCOUNT_INFO, keys, source, episodes)
  special = (TRUNCATED_INFO, DISCOUNT_INFO, EPISODE_METADATA_INFO)
  common = [k for k in infos[0] if k not in special and
            all(k in i for i in infos)]
  for key in common:
    if key in data or key in _NOT_STEP_KEYS:
      continue
    data[key] = _stack([i[key] for i in infos], f'infos/{key}', keys, source,
                       episodes)
  starts = np.concatenate([[True], dones[:-1]])
  metadata = [dict(infos[i].get(EPISODE_METADATA_INFO) or {})
              for i in np.flatnonzero(starts)]
  return list(transitions.read_with_policy(_rows_of(
      data, frames[-1]['__shard__'] if not dones[-1] else source, dones_mean,
      repair, metadata=metadata), policy, source))


def _ustar_header(name: str, size: int) -> bytes:
  """The 512-byte ustar header of a regular file (mode 0644, mtime 0)."""
  encoded = name.encode('utf-8')
  if len(encoded) > 100:
    raise ValueError(f'tar member name longer than 100 bytes: {name!r}')
  header = bytearray(512)
  header[:len(encoded)] = encoded
  header[100:108] = b'0000644\0'
  header[108:116] = b'0000000\0'
  header[116:124] = b'0000000\0'
  header[124:136] = b'%011o\0' % size
  header[136:148] = b'00000000000\0'
  header[148:156] = b' ' * 8
  header[156:157] = b'0'
  header[257:265] = b'ustar\x0000'
  header[148:156] = b'%06o\0 ' % sum(header)
  return bytes(header)


def _add_member(file: Any, name: str, value: Any) -> None:
  payload = pickle.dumps(value, protocol=4)
  file.write(_ustar_header(name, len(payload)))
  file.write(payload)
  file.write(bytes(-len(payload) % 512))


def _write_shard(path: str, frames: List[Dict[str, Any]], metadata: Any
                 ) -> None:
  """Writes one ustar shard (in the hidden staging directory)."""
  with open(path, 'xb') as file:  # Mode 0666 less the umask.
    _add_member(file, METADATA_MEMBER, metadata)
    for index, frame in enumerate(frames):
      for field, value in frame.items():
        _add_member(file, f'frame_{index:03d}.{field}.pickle', value)
    file.write(bytes(1024))  # end-of-archive marker


def _check_shard_dir(out_dir: str) -> None:
  """Raises unless ``out_dir`` is absent or an empty directory."""
  if not os.path.lexists(out_dir):
    return
  if not os.path.isdir(out_dir):
    raise FileExistsError(f'{out_dir} exists and is not a directory.')
  if glob.glob(os.path.join(out_dir, '*.tar')):
    raise FileExistsError(f'{out_dir} already holds *.tar shards.')
  if os.listdir(out_dir):
    raise FileExistsError(
        f'{out_dir} holds other files; to_webdataset writes a new or empty '
        'directory (its shards appear together, in one rename).')


def _frame_at(nest: Any, row: int) -> Any:
  if isinstance(nest, dict):
    return {k: _frame_at(v, row) for k, v in nest.items()}
  return nest[row]


def to_webdataset(episodes: episodes_lib.EpisodesLike,
                  out_dir: Union[str, os.PathLike], *,
                  frames_per_shard: int = 1000, metadata: Any = None,
                  one_step: str = 'error',
                  last_step: transitions.LastStepLike = 'invalid'
                  ) -> List[str]:
  """Writes RLDS Episodes as il-representations webdataset shards.

  Each shard ``shard_NNNNNN.tar`` starts with ``_metadata.meta.pickle``
  (``metadata``, default ``{}``) and holds whole episodes, one frame per
  transition row (see `from_webdataset`); a new shard starts once a shard
  has ``frames_per_shard`` frames. ``infos`` carries
  ``TimeLimit.truncated`` on the last frame of a truncated episode,
  ``episode_metadata`` on an episode's first frame, ``discount`` when
  stored, and the other step fields. The shards are written into a hidden
  directory beside ``out_dir`` that is renamed to ``out_dir`` once all are
  on disk (`rlds_lite.atomic_output`): they appear together, and a failure
  or a kill leaves no shard (a dead writer's hidden directory is removed by
  the next writer). Writers of one ``out_dir`` run one at a time (a lock
  file ``.<out_dir name>.lock`` beside it); the second then finds the
  shards and fails. `from_webdataset` gives the episodes back
  exactly (apart from the last step's non-observation values).

  Args:
    episodes: Episodes or an RLDS dataset.
    out_dir: must not exist yet, or be an empty directory (not a mount
      point); a FileExistsError otherwise.
    frames_per_shard: frames after which a new shard starts.
    metadata: the value of every shard's ``_metadata.meta.pickle``.
    one_step: a one-step episode has no frame: ``'error'`` or ``'skip'``.
    last_step: as in `to_il_dict`.

  Returns:
    The shard paths, in order.

  Example:
    >>> import tempfile, tarfile
    >>> e = {'steps': {'observation': np.zeros(2), 'action': np.zeros(2),
    ...                'reward': np.zeros(2), **episodes_lib.rlds_flags(2, True)}}
    >>> [path] = to_webdataset([e], tempfile.mkdtemp())
    >>> tarfile.open(path).getnames()[:3]
    ['_metadata.meta.pickle', 'frame_000.obs.pickle', 'frame_000.next_obs.pickle']
  """
  if frames_per_shard < 1:
    raise ValueError(f'frames_per_shard={frames_per_shard}; must be >= 1.')
  out_dir = os.fspath(out_dir)
  _check_shard_dir(out_dir)  # Before reading; again under the lock.
  rows = rows_from_episodes(episodes, one_step=one_step,
                            what='a webdataset shard', last_step=last_step,
                            where='to_webdataset')
  if rows is None:
    raise ValueError('to_webdataset: no episodes with rows to write.')
  metadata = {} if metadata is None else metadata
  ends = rows['ends']
  starts = np.concatenate([[True], ends[:-1]])
  episode_of = np.cumsum(starts) - 1
  columns = {'obs': rows['observations'], 'next_obs': rows['next_observations'],
             'acts': rows['actions']}
  if rows['rewards'] is not None:
    columns['rews'] = rows['rewards']
  names: List[str] = []
  with atomic_output.AtomicOutput(out_dir, directory=True,
                                  check=_check_shard_dir) as output:

    def write(frames: List[Dict[str, Any]]) -> None:
      names.append(f'shard_{len(names):06d}.tar')
      _write_shard(os.path.join(output.path, names[-1]), frames, metadata)

    frames: List[Dict[str, Any]] = []
    for row in range(len(ends)):
      frame = {k: _frame_at(v, row) for k, v in columns.items()}
      frame['dones'] = bool(ends[row])
      info = {k: _frame_at(v, row) for k, v in rows['extras'].items()}
      if rows['truncated'][row]:
        info[TRUNCATED_INFO] = True
      if rows['discounts'] is not None:
        info[DISCOUNT_INFO] = rows['discounts'][row]
      if starts[row] and rows['metadata'][episode_of[row]]:
        info[EPISODE_METADATA_INFO] = rows['metadata'][episode_of[row]]
      frame['infos'] = info
      frames.append(frame)
      if ends[row] and len(frames) >= frames_per_shard:
        write(frames)
        frames = []
    if frames:
      write(frames)
    output.publish()
  return [os.path.join(out_dir, name) for name in names]
