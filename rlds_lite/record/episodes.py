"""One Gymnasium episode being recorded, and the RLDS episode (T = N + 1 steps) it becomes.

Step ``t < N`` holds ``o_t`` and the action, reward taken and received from it; the last step
holds the final observation ``o_N`` with a zero (invalid) action, reward and discount, as
`rlds_lite.convert.transitions.steps_from_transitions` lays Minari's episodes out.
"""

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf

from rlds_lite import metadata as rlds_metadata
from rlds_lite import rlds_types
from rlds_lite.convert import transitions
from rlds_lite.record import spaces

__all__ = ['EpisodeBuffer', 'InfoFields', 'episode_spec', 'INFOS', 'SEED',
           'OPTIONS', 'ENV_INDEX', 'NO_SEED']

INFOS = 'infos'
"""The step field holding the recorded ``info`` dicts (Minari's name)."""
SEED, OPTIONS, ENV_INDEX = 'seed', 'options', 'env_index'
"""Episode metadata: the reset seed and options (JSON), the vector sub-env's index."""
NO_SEED = -1
"""The ``seed`` of an episode reset without one (its env's generator went on)."""
InfosLike = Union[bool, Sequence[str]]


def _info_leaves(info: Mapping[str, Any], prefix: Tuple[str, ...] = ()
                 ) -> Dict[Tuple[str, ...], Any]:
  out = {}
  for key, value in info.items():
    if isinstance(value, Mapping):
      out.update(_info_leaves(value, prefix + (str(key),)))
    else:
      out[prefix + (str(key),)] = value
  return out


def _as_array(value: Any) -> np.ndarray:
  if isinstance(value, (str, bytes)):
    return np.array(value.encode() if isinstance(value, str) else value,
                    dtype=object)
  return np.asarray(value)


class InfoFields:
  """Which ``info`` entries are recorded (fixed by the first info seen), and their columns.

  Args:
    keys: True (every entry of the first info), or the top-level keys to keep.

  Example:
    >>> fields = InfoFields(['x'])
    >>> rows = [fields.row({'x': 1.0, 'y': 'skipped'}, 'the reset info'),
    ...         fields.row({'x': 2.0}, 'step 1')]
    >>> fields.columns(rows)
    {'x': array([1., 2.])}
    >>> fields.row({'z': 0}, 'step 2')
    Traceback (most recent call last):
    ...
    ValueError: record: step 2: info has no 'x' (it has ['z']); record_infos keeps the entries every info has.
  """

  def __init__(self, keys: InfosLike):
    self._keys = None if keys is True else [str(k) for k in keys]
    self._paths: Optional[List[Tuple[str, ...]]] = None
    self._arrays: List[np.ndarray] = []

  def _selected(self, info: Mapping[str, Any], where: str) -> Dict[Any, Any]:
    if self._keys is None:
      return _info_leaves(info)
    missing = [k for k in self._keys if k not in info]
    if missing:
      raise ValueError(
          f'record: {where}: info has no {missing[0]!r} (it has '
          f'{sorted(info)}); record_infos keeps the entries every info has.')
    return _info_leaves({k: info[k] for k in self._keys})

  def row(self, info: Mapping[str, Any], where: str) -> List[np.ndarray]:
    """One info's recorded leaves, checked against the first info's."""
    if not isinstance(info, Mapping):
      raise TypeError(f'record: {where}: info is a {type(info).__name__}, '
                      'not a dict.')
    leaves = self._selected(info, where)
    if self._paths is None:
      self._paths = sorted(leaves)
      self._arrays = [_as_array(leaves[p]) for p in self._paths]
    first = ['/'.join(p) for p in self._paths]
    if sorted(leaves) != self._paths:
      raise ValueError(
          f"record: {where}: info has {sorted('/'.join(p) for p in leaves)} "
          f'but the first info had {first}; record_infos keeps the entries '
          'every info has (pass record_infos=[...] to choose them).')
    row = []
    for path, model in zip(self._paths, self._arrays):
      value = _as_array(leaves[path])
      if value.shape != model.shape or (value.dtype.kind == 'O') != (
          model.dtype.kind == 'O'):
        raise ValueError(
            f"record: {where}: info entry {'/'.join(path)!r} is "
            f'{value.dtype}{list(value.shape)}, but {model.dtype}'
            f'{list(model.shape)} in the first info.')
      row.append(value)
    return row

  def columns(self, rows: Sequence[Sequence[np.ndarray]]) -> Dict[str, Any]:
    """The nested ``[T, ...]`` columns of an episode's rows (the first info's dtypes)."""
    out: Dict[str, Any] = {}
    for index, (path, model) in enumerate(zip(self._paths or (),
                                              self._arrays)):
      column = np.stack([np.asarray(r[index], model.dtype) for r in rows])
      node = out
      for key in path[:-1]:
        node = node.setdefault(key, {})
      node[path[-1]] = column
    return out

  def spec(self) -> Dict[str, Any]:
    """The specs of the recorded entries (after the first info)."""
    return tf.nest.map_structure(
        lambda c: tf.TensorSpec(c.shape[1:], tf.string if c.dtype.kind == 'O'
                                else tf.as_dtype(c.dtype)),
        self.columns([self._arrays]))


def options_json(options: Optional[Mapping[str, Any]]) -> bytes:
  """The reset ``options`` as JSON (``b''`` for None), NumPy values as lists.

  Example:
    >>> options_json({'low': np.float32(0.5)}), options_json(None)
    (b'{"low": 0.5}', b'')
  """
  if options is None:
    return b''
  def default(value):
    if isinstance(value, (np.generic, np.ndarray)):
      return value.tolist()
    raise TypeError(f'record: reset options value {value!r} is not JSON; '
                    'episode metadata keeps the options as JSON.')
  return json.dumps(options, sort_keys=True, default=default).encode()


def episode_spec(observations: spaces.SpaceFields,
                 actions: spaces.SpaceFields, infos: Optional[InfoFields],
                 vector: bool) -> Dict[str, Any]:
  """``{'steps': step specs, **metadata specs}`` of the recorded episodes.

  Example:
    >>> from gymnasium import spaces as s
    >>> spec = episode_spec(spaces.SpaceFields(s.Discrete(2), 'o'),
    ...                     spaces.SpaceFields(s.Discrete(2), 'a'), None, False)
    >>> sorted(spec), sorted(spec['steps'])
    (['episode_id', 'options', 'seed', 'steps'], ['action', 'discount', 'observation', 'reward'])
  """
  steps = {
      rlds_types.OBSERVATION: observations.spec,
      rlds_types.ACTION: actions.spec,
      rlds_types.REWARD: tf.TensorSpec([], tf.float64),
      rlds_types.DISCOUNT: tf.TensorSpec([], tf.float32),
  }
  info_spec = infos.spec() if infos is not None else {}
  if info_spec:
    steps[INFOS] = info_spec
  spec = {rlds_types.STEPS: steps,
          rlds_metadata.EPISODE_ID: tf.TensorSpec([], tf.int64),
          SEED: tf.TensorSpec([], tf.int64),
          OPTIONS: tf.TensorSpec([], tf.string)}
  if vector:
    spec[ENV_INDEX] = tf.TensorSpec([], tf.int64)
  return spec


def _checked_column(fields: spaces.SpaceFields,
                    rows: Sequence[Sequence[Any]], label: str) -> Any:
  """A space's nested ``[T, ...]`` columns; a value the space cannot hold is named."""
  columns = []
  for index, dtype in enumerate(fields.dtypes):
    name = '/'.join((label,) + fields.paths[index])
    raw = [row[index] for row in rows]
    shape = (len(rows),) + fields.shapes[index]
    if not raw:  # A one-step episode has no action.
      columns.append(np.empty(shape, dtype) if dtype.kind == 'O'
                     else np.zeros(shape, dtype))
      continue
    if dtype.kind == 'O':
      columns.append(spaces.text_column(raw))
      continue
    try:
      natural = np.asarray(raw)
    except ValueError as e:
      raise ValueError(f'record: {name}: values of different shapes ({e}).'
                       ) from None
    if natural.size and not np.can_cast(natural.dtype, dtype, 'same_kind'):
      raise TypeError(f'record: {name} is {natural.dtype}, which the space '
                      f'({dtype}) cannot hold without changing its kind.')
    if natural.shape != shape:
      raise ValueError(f'record: {name} has shape {list(natural.shape[1:])}; '
                       f'its space has {list(shape[1:])}.')
    columns.append(natural.astype(dtype, copy=False))
  return fields.unflatten(columns)


class EpisodeBuffer:
  """One episode being recorded, from its reset to its end.

  Args:
    observations, actions: the `SpaceFields` of the (single) env's spaces.
    infos: the `InfoFields` recorded, or None.
    observation, info: what the reset returned.
    seed, options: the reset's (``seed`` None: `NO_SEED`).

  Example:
    >>> from gymnasium import spaces as s
    >>> fields = spaces.SpaceFields(s.Discrete(5), 'space')
    >>> buffer = EpisodeBuffer(fields, fields, None, 0, {}, seed=7)
    >>> buffer.add(1, 1, 0.5, {})
    >>> episode = buffer.finish(terminated=True, episode_id=0)
    >>> episode['steps']['action'].tolist(), episode['steps']['is_terminal'].tolist()
    ([1, 0], [False, True])
  """

  def __init__(self, observations: spaces.SpaceFields,
               actions: spaces.SpaceFields, infos: Optional[InfoFields],
               observation: Any, info: Mapping[str, Any], *,
               seed: Optional[int] = None,
               options: Optional[Mapping[str, Any]] = None,
               env_index: Optional[int] = None):
    self._fields = (observations, actions)
    self._infos = infos
    self._observations = [observations.flatten(observation)]
    self._actions: List[List[Any]] = []
    self._rewards: List[float] = []
    self._info_rows = ([] if infos is None else
                       [infos.row(info, 'the reset info')])
    self._metadata = {SEED: np.int64(NO_SEED if seed is None else seed),
                      OPTIONS: options_json(options)}
    if env_index is not None:
      self._metadata[ENV_INDEX] = np.int64(env_index)

  def __len__(self) -> int:
    """The transitions (actions taken) so far."""
    return len(self._rewards)

  def add(self, action: Any, observation: Any, reward: Any,
          info: Mapping[str, Any]) -> None:
    """One ``step(action)``: the action, the observation and reward it led to, its info."""
    self._actions.append(self._fields[1].flatten(action))
    self._observations.append(self._fields[0].flatten(observation))
    self._rewards.append(reward)
    if self._infos is not None:
      self._info_rows.append(self._infos.row(
          info, f'step {len(self._rewards)}'))

  def _reward_column(self) -> np.ndarray:
    try:
      rewards = np.asarray(self._rewards, np.float64).reshape(len(self))
    except (TypeError, ValueError):
      shapes = sorted({np.shape(r) for r in self._rewards})
      raise ValueError(f'record: rewards must be numbers (one per step); got '
                       f'values of shapes {shapes}.') from None
    return rewards

  def finish(self, terminated: bool, episode_id: int) -> Dict[str, Any]:
    """The RLDS episode: ``T = len + 1`` steps, ``is_terminal`` iff ``terminated``."""
    observations, actions = self._fields
    extras = {}
    if self._infos is not None:
      columns = self._infos.columns(self._info_rows)
      if columns:
        extras[INFOS] = columns
    steps = transitions.steps_from_transitions(
        _checked_column(observations, self._observations, 'observation'),
        _checked_column(actions, self._actions, 'action'),
        self._reward_column(),
        bool(terminated) and len(self) > 0, extras=extras)
    return {rlds_types.STEPS: steps,
            rlds_metadata.EPISODE_ID: np.int64(episode_id), **self._metadata}
