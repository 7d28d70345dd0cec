"""Minari datasets (HDF5) to RLDS Episodes and back, read and written with h5py.

No ``minari`` package needed; the layout and how it maps to RLDS steps:
docs/convert_minari_d4rl.md.
"""

import io
import json
import os
import re
from typing import (Any, Dict, Iterable, Iterator, List, Optional, Sequence,
                    Tuple, Union)

import numpy as np

from rlds_lite import nest_paths
from rlds_lite import atomic_output
from rlds_lite import nesting
from rlds_lite import overwriting
from rlds_lite import rlds_types
from rlds_lite.convert import episodes as episodes_lib
from rlds_lite.convert import hdf5_formats
from rlds_lite.convert import hdf5_output
from rlds_lite.convert import minari_layout as layout
from rlds_lite.convert import input_checks
from rlds_lite.convert import strings
from rlds_lite.convert import transitions

ConversionError = episodes_lib.ConversionError
is_dataset_id = layout.is_dataset_id
locate = layout.locate

MAIN_FILE = layout.MAIN_FILE
METADATA_FILE = 'metadata.json'
MINARI_VERSION = '0.5.4'
"""The Minari dataset version written (``minari_version`` in the metadata)."""

REQUIRED_KEYS = ('observations', 'actions', 'rewards', 'terminations',
                 'truncations')
REPAIRS = frozenset(
    {'drop_last_transition', 'repeat_last_observation', 'mark_truncated'})
"""``repair=`` options of `from_minari` (see its docstring)."""

_TUPLE_KEY = re.compile(r'^_index_(\d+)$')
_STEP_KEYS = ('observations', 'actions', 'rewards', 'discounts')
_NO_METADATA_ATTRS = frozenset({'total_steps'})


def _repairs(repair: Union[None, str, Iterable[str]]) -> frozenset:
  chosen = frozenset([repair] if isinstance(repair, str) else repair or ())
  unknown = chosen - REPAIRS
  if unknown:
    raise ValueError(f'from_minari: repair={sorted(unknown)[0]!r} is '
                     f'unknown; choose from {sorted(REPAIRS)}.')
  return chosen


def read_metadata(path: Union[str, os.PathLike]) -> Dict[str, Any]:
  """Global metadata: ``metadata.json`` beside the file, else root attributes.

  Spaces stay serialised JSON strings, as Minari stores them.

  Example:
    >>> import tempfile, numpy as np
    >>> from rlds_lite.convert import episodes as episodes_lib
    >>> e = {'steps': {'observation': np.zeros((2, 1)), 'action': np.zeros(2),
    ...                'reward': np.zeros(2), **episodes_lib.rlds_flags(2, False)}}
    >>> meta = read_metadata(to_minari([e], tempfile.mkdtemp(), 'm-v0'))
    >>> meta['total_episodes'], meta['total_steps'], meta['dataset_id']
    (1, 1, 'm-v0')
  """
  file_path = locate(path)
  json_path = os.path.join(os.path.dirname(file_path), METADATA_FILE)
  if os.path.isfile(json_path):
    with open(json_path) as f:
      try:
        return nesting.load(f)
      except nesting.TooDeepError as error:
        raise ConversionError(str(error), source=json_path) from None
      except ValueError as error:
        raise ConversionError(f'is not valid JSON: {error}',
                              source=json_path) from None
  with episodes_lib.open_hdf5(file_path) as f:
    return {k: (v.item() if isinstance(v, np.generic) else v)
            for k, v in f.attrs.items()}


def _image_shapes(space: Any, prefix: str) -> Dict[str, Tuple[int, ...]]:
  """Paths of image Box subspaces (Minari may JPEG-encode them) -> shapes."""
  if isinstance(space, str):
    space = nesting.loads(space)
  if not isinstance(space, dict):
    return {}
  kind = space.get('type')
  if kind == 'Dict':
    out = {}
    for key, sub in space['subspaces'].items():
      out.update(_image_shapes(sub, f'{prefix}/{key}'))
    return out
  if kind == 'Tuple':
    out = {}
    for i, sub in enumerate(space['subspaces']):
      out.update(_image_shapes(sub, f'{prefix}/_index_{i}'))
    return out
  shape = tuple(space.get('shape') or ())
  if (kind == 'Box' and space.get('dtype') == 'uint8' and len(shape) in (2, 3)
      and shape[0] >= 32 and shape[1] >= 32
      and np.all(np.asarray(space['low']) == 0)
      and np.all(np.asarray(space['high']) == 255)):
    return {prefix: shape}
  return {}


def _decode_jpeg(frames: np.ndarray) -> np.ndarray:
  from PIL import Image  # pylint: disable=g-import-not-at-top
  return np.stack([np.asarray(Image.open(io.BytesIO(np.asarray(f).tobytes())),
                              np.uint8) for f in frames])


def _read_array(dataset: Any, path: str,
                images: Dict[str, Tuple[int, ...]]) -> np.ndarray:
  """A dataset (low-level ``DatasetID``) as an array, JPEG frames decoded."""
  import h5py  # pylint: disable=g-import-not-at-top
  dtype = dataset.dtype
  if dtype.kind in 'biufc' and h5py.check_vlen_dtype(dtype) is None:
    value = np.empty(dataset.shape, dtype)
    if value.size:
      dataset.read(h5py.h5s.ALL, h5py.h5s.ALL, value)
  else:  # strings, variable-length (JPEG) bytes: the high-level reader.
    value = h5py.Dataset(dataset)[()]
  shape = images.get(path)
  if shape is not None and value.shape[1:] != shape:
    value = _decode_jpeg(value)
  return value


def _read_node(node: Any, path: str, images: Dict[str, Tuple[int, ...]]) -> Any:
  """A dataset as an array, a group as a dict (``_index_<k>`` keys kept).

  Uses h5py's low-level API: opening and reading small datasets through the
  high-level one costs more than the read itself.
  """
  import h5py  # pylint: disable=g-import-not-at-top
  if isinstance(node, h5py.h5d.DatasetID):
    return _read_array(node, path, images)
  out = {}
  for name in node:
    key = name.decode()
    out[key] = _read_node(h5py.h5o.open(node, name), f'{path}/{key}', images)
  return out


def _column(group: Any, names: Sequence[bytes], key: str, source: str,
            index: int) -> np.ndarray:
  """A per-transition flag or reward column as ``[N]`` (``[N, 1]`` accepted)."""
  import h5py  # pylint: disable=g-import-not-at-top
  if key.encode() not in names:
    raise ConversionError(f"is missing from group '/episode_{index}'",
                          source=source, episode=index, field=key)
  value = _read_node(h5py.h5o.open(group, key.encode()), key, {})
  if not isinstance(value, np.ndarray):
    raise ConversionError('is a group; expected a dataset', source=source,
                          episode=index, field=key)
  if value.ndim == 2 and value.shape[1] == 1:
    value = value[:, 0]
  if value.ndim != 1:
    raise ConversionError(f'has shape {value.shape}; expected [N] or [N, 1]',
                          source=source, episode=index, field=key)
  return value


def _check_lengths(nest: Any, name: str, allowed: Sequence[int], what: str,
                   source: str, index: int) -> List[int]:
  """The lengths of a nest's leaves, each checked to be one of ``allowed``."""
  lengths = []
  for path, leaf in nest_paths.flatten_with_paths(nest, name):
    length = np.shape(leaf)[0] if np.ndim(leaf) else None
    if length not in allowed:
      raise ConversionError(f'has {length} entries; {what}', source=source,
                            episode=index, field=path)
    lengths.append(length)
  return lengths


def _end(terminations: np.ndarray, truncations: np.ndarray,
         repairs: frozenset, source: str, index: int) -> bool:
  """Whether the episode terminated, from its per-transition end flags."""
  count = len(terminations)
  if not count:
    return False
  for name, flags in (('terminations', terminations),
                      ('truncations', truncations)):
    early = np.flatnonzero(np.asarray(flags[:-1], bool))
    if len(early):
      raise ConversionError(
          f'is set on transition {early[0]}, before the last one '
          f'({count - 1})', source=source, episode=index, field=name)
  terminated = bool(terminations[-1])
  if not terminated and not truncations[-1] and 'mark_truncated' not in repairs:
    raise ConversionError(
        f'neither terminations nor truncations is set on the last transition '
        f'({count - 1}), so the episode has no recorded end; pass '
        "repair='mark_truncated' to read it as truncated",
        source=source, episode=index, field='terminations')
  return terminated


def _read_episode(group: Any, index: int, source: str,
                  images: Dict[str, Tuple[int, ...]],
                  repairs: frozenset) -> episodes_lib.Episode:
  """One ``episode_<index>`` group (low-level ``GroupID``) as an Episode."""
  import h5py  # pylint: disable=g-import-not-at-top
  names = list(group)
  rewards = _column(group, names, 'rewards', source, index)
  terminations, truncations = (
      input_checks.flags(_column(group, names, key, source, index),
                         source=source, episode=index, field=key)
      for key in ('terminations', 'truncations'))
  count = len(rewards)
  if h5py.h5a.exists(group, b'total_steps'):
    stated = h5py.Group(group).attrs['total_steps']
    input_checks.count(stated, count, source=source, episode=index,
                       field='total_steps',
                       what='transitions (rewards)')
  for key in ('observations', 'actions'):
    if key.encode() not in names:
      raise ConversionError(f"is missing from group '/episode_{index}'",
                            source=source, episode=index, field=key)
  actions = _read_node(h5py.h5o.open(group, b'actions'), 'actions', images)
  observations = _read_node(h5py.h5o.open(group, b'observations'),
                            'observations', images)
  for name, column in (('actions', actions), ('terminations', terminations),
                       ('truncations', truncations)):
    _check_lengths(column, name, (count,),
                   f'rewards has N = {count} (one per transition)', source,
                   index)
  observations = _checked_observations(observations, count, repairs, source,
                                      index)
  terminated = _end(terminations, truncations, repairs, source, index)
  dropped = False
  if _length(observations) == count:  # Minari#199, repaired.
    if 'drop_last_transition' in repairs:
      count -= 1
      dropped = True
      actions = _slice(actions, count)
      rewards = rewards[:count]
      terminated = False  # o_N is unknown: the episode ends at o_{N-1}.
    else:
      observations = _slice(observations, count + 1, repeat_last=True)
  extras, stored_discounts = _read_extras(group, names, count, dropped,
                                          images, source, index)
  steps = transitions.steps_from_transitions(
      observations, actions, rewards, terminated, discounts=stored_discounts,
      extras=extras)
  steps = strings.canonical(steps)
  metadata = strings.canonical(nest_paths.nest_from_paths(_read_attrs(group)))
  return {rlds_types.STEPS: steps, **metadata}


def _length(nest: Any) -> int:
  return len(nest_paths.flatten_with_paths(nest)[0][1])


def _checked_observations(observations: Any, count: int, repairs: frozenset,
                          source: str, index: int) -> Any:
  """Observations with N + 1 entries (N if a Minari#199 repair is chosen)."""
  missing_final = 'drop_last_transition' in repairs or (
      'repeat_last_observation' in repairs)
  lengths = _check_lengths(
      observations, 'observations',
      (count + 1, count) if missing_final and count else (count + 1,),
      f'Minari needs N + 1 = {count + 1} (the reset observation and one per '
      f'transition; N = {count} rewards); pass '
      "repair='drop_last_transition' or repair='repeat_last_observation' "
      'if the final observation is missing (Minari#199)', source, index)
  if not lengths:
    raise ConversionError('has no datasets', source=source, episode=index,
                          field='observations')
  if len(set(lengths)) > 1:
    raise ConversionError(
        f'leaves have {sorted(set(lengths))} entries; all need {count + 1}',
        source=source, episode=index, field='observations')
  return observations


def _read_extras(group: Any, names: Sequence[bytes], count: int,
                 dropped: bool, images: Dict[str, Tuple[int, ...]],
                 source: str, index: int) -> Tuple[Dict[str, Any], Any]:
  """Step fields beyond Minari's required ones, and stored ``discounts``."""
  import h5py  # pylint: disable=g-import-not-at-top
  extras = {}
  stored_discounts = None
  for name in names:
    key = name.decode()
    if key in REQUIRED_KEYS:
      continue
    value = _read_node(h5py.h5o.open(group, name), key, images)
    lengths = _check_lengths(
        value, key, (count + 1, count) + ((count + 2,) if dropped else ()),
        f'a step field needs N + 1 = {count + 1} (or N = {count}) entries',
        source, index)
    if key == 'discounts' and lengths == [count]:
      stored_discounts = value
    else:
      extras[key] = _fit(value, count + 1)
  return extras, stored_discounts


def _slice(nest: Any, length: int, repeat_last: bool = False) -> Any:
  def cut(leaf):
    if repeat_last:
      return np.concatenate([leaf, leaf[-1:]])[:length]
    return leaf[:length]
  return _map(cut, nest)


def _fit(nest: Any, length: int) -> Any:
  """Leaves of ``length - 1`` entries padded with a zero step, longer cut."""
  def fit(leaf):
    if len(leaf) == length - 1:
      return transitions.append_zero_step(leaf)
    return leaf[:length]
  return _map(fit, nest)


def _map(fn, nest: Any) -> Any:
  if isinstance(nest, dict):
    return {k: _map(fn, v) for k, v in nest.items()}
  return fn(nest)


def _read_attrs(group: Any) -> Dict[str, Any]:
  """Episode attributes (low-level reads for numbers, h5py's for the rest)."""
  import h5py  # pylint: disable=g-import-not-at-top
  out = {}
  for position in range(h5py.h5a.get_num_attrs(group)):
    attr = h5py.h5a.open(group, index=position)
    name = attr.name.decode()
    if name in _NO_METADATA_ATTRS:
      continue
    dtype = attr.dtype
    if dtype.kind in 'biuf' and h5py.check_vlen_dtype(dtype) is None:
      value = np.empty(attr.shape, dtype)
      attr.read(value)
      out[name] = value[()]
    else:
      out[name] = h5py.Group(group).attrs[name]
  return out


def _episode_numbers(file: Any) -> List[int]:
  numbers = []
  for key in file.keys():
    if key.startswith('episode_') and key[len('episode_'):].isdigit():
      numbers.append(int(key[len('episode_'):]))
  return sorted(numbers)


def _check_episode_count(metadata: Dict[str, Any], indices: List[int],
                         source: str) -> None:
  """Raises unless the file holds ``episode_0 .. episode_<n-1>``, ``n`` the
  metadata's ``total_episodes`` (when it has one)."""
  stated = metadata.get('total_episodes')
  if stated is None:
    return
  stated = input_checks.number(stated, source=source, field='total_episodes',
                               integer=True)
  missing = sorted(set(range(stated)) - set(indices))
  if missing:
    raise ConversionError(
        f"has no group 'episode_{missing[0]}', though the metadata's "
        f'total_episodes = {stated} counts it', source=source,
        episode=missing[0], field='total_episodes')
  input_checks.count(stated, len(indices), source=source,
                     field='total_episodes', what='episode groups')


def from_minari(path: Union[str, os.PathLike], *,
                episodes: Optional[Iterable[int]] = None,
                repair: Union[None, str, Iterable[str]] = None,
                last_step: transitions.LastStepLike = 'invalid'
                ) -> Iterator[episodes_lib.Episode]:
  """RLDS Episodes from a Minari dataset (root dir, ``data`` dir or file).

  Args:
    path: the dataset root (``.../<dataset_id>``), its ``data`` directory or
      its ``main_data.hdf5``.
    episodes: Minari episode indices to read, in that order (default: all).
    repair: None (errors on bad input) or one or more of
      ``'drop_last_transition'``, ``'repeat_last_observation'``,
      ``'mark_truncated'`` (docs/convert_minari_d4rl.md).
    last_step: ``'invalid'`` (default, RLDS) or ``'valid'`` (every row a
      real step, as `to_minari` with ``'valid'`` wrote).

  Example:
    >>> import tempfile, numpy as np
    >>> from rlds_lite.convert import episodes as episodes_lib
    >>> e = {'steps': {'observation': {'x': np.zeros((2, 1))},
    ...                'action': np.zeros(2), 'reward': np.zeros(2),
    ...                **episodes_lib.rlds_flags(2, False)}, 'seed': 3}
    >>> out = next(from_minari(to_minari([e], tempfile.mkdtemp(), 'x-v0')))
    >>> sorted(out), int(out['seed']), out['steps']['observation']['x'].shape
    (['id', 'seed', 'steps'], 3, (2, 1))
  """
  import h5py  # pylint: disable=g-import-not-at-top
  repairs = _repairs(repair)
  policy = transitions.last_step_policy(last_step, 'from_minari')
  file_path = locate(path)
  metadata = read_metadata(file_path)
  images = {}
  if metadata.get('jpeg_encoding', True):
    images.update(_image_shapes(metadata.get('observation_space'),
                                'observations'))
    images.update(_image_shapes(metadata.get('action_space'), 'actions'))
  with episodes_lib.open_hdf5(file_path) as file:
    hdf5_formats.check_format(file.keys(), 'minari', file_path)
    indices = _episode_numbers(file) if episodes is None else episodes
    if episodes is None:
      _check_episode_count(metadata, indices, file_path)
    transitions_read = 0
    for index in indices:
      name = f'episode_{int(index)}'
      try:
        group = h5py.h5g.open(file.id, name.encode())
      except (KeyError, ValueError):
        raise ConversionError(f'no group {name!r} in the file',
                              source=file_path, episode=int(index)) from None
      episode = _read_episode(group, int(index), file_path, images, repairs)
      transitions_read += h5py.h5d.open(group, b'rewards').shape[0]
      if policy is transitions.last_step_lib.LastStep.VALID:
        episode = transitions.without_final_step(episode, source=file_path,
                                                 index=int(index))
      yield episode
    if episodes is None and metadata.get('total_steps') is not None:
      input_checks.count(metadata['total_steps'], transitions_read,
                         source=file_path, field='total_steps',
                         what='transitions (rewards of all episodes)')


def minari_to_tfds(path: Union[str, os.PathLike],
                   data_dir: Union[str, os.PathLike], name: str, *,
                   episodes: Optional[Iterable[int]] = None,
                   repair: Union[None, str, Iterable[str]] = None,
                   last_step: transitions.LastStepLike = 'invalid',
                   **write_kwargs: Any) -> str:
  """Writes a Minari dataset as an RLDS TFDS dataset; returns its directory.

  Arguments as `from_minari` and `rlds_lite.convert.write_tfds`.

  Example:
    >>> import tempfile, numpy as np, rlds_lite
    >>> from rlds_lite.convert import episodes as episodes_lib
    >>> e = {'steps': {'observation': np.zeros((3, 2), np.float32),
    ...                'action': np.zeros(3, np.int64),
    ...                'reward': np.zeros(3, np.float32),
    ...                **episodes_lib.rlds_flags(3, True)}}
    >>> src = to_minari([e], tempfile.mkdtemp(), 'y-v0')
    >>> out = minari_to_tfds(src, tempfile.mkdtemp(), 'y')
    >>> [ep['steps']['is_terminal'].numpy().tolist()
    ...  for ep in rlds_lite.load(out, dense=True)]
    [[False, False, True]]
  """
  return episodes_lib.write_tfds(
      from_minari(path, episodes=episodes, repair=repair,
                  last_step=last_step), data_dir, name, **write_kwargs)


def infer_space(value: Any) -> Dict[str, Any]:
  """A serialised gymnasium space (as a dict) for a nest of ``[T, ...]`` arrays.

  Example:
    >>> infer_space({'_index_0': np.zeros((5, 2), np.int8)})['type']
    'Tuple'
    >>> infer_space(np.zeros((5,), np.float32))
    {'type': 'Box', 'dtype': 'float32', 'shape': [], 'low': -inf, 'high': inf}
  """
  if isinstance(value, (tuple, list)):
    value = {f'_index_{i}': v for i, v in enumerate(value)}
  if isinstance(value, dict):
    keys = list(value)
    if keys and sorted(keys) == [f'_index_{i}' for i in range(len(keys))]:
      return {'type': 'Tuple',
              'subspaces': [infer_space(value[f'_index_{i}'])
                            for i in range(len(keys))]}
    return {'type': 'Dict',
            'subspaces': {k: infer_space(value[k]) for k in sorted(keys)}}
  array = np.asarray(value)
  shape = array.shape[1:]
  if strings.is_strings(array) and not shape:
    return strings.text_space(array)
  if array.dtype == np.bool_:
    low, high = False, True
  elif array.dtype.kind in 'iu':
    info = np.iinfo(array.dtype)
    low, high = int(info.min), int(info.max)
  elif array.dtype.kind == 'f':
    low, high = -np.inf, np.inf
  else:
    raise ValueError(f'infer_space: no Minari space for dtype {array.dtype}; '
                     'pass observation_space/action_space explicitly.')
  return {'type': 'Box', 'dtype': str(array.dtype), 'shape': list(shape),
          'low': np.full(shape, low, array.dtype).tolist(),
          'high': np.full(shape, high, array.dtype).tolist()}


def _serialise_space(space: Any, steps_value: Any) -> str:
  """A space argument (None, JSON str, dict or gymnasium Space) as JSON."""
  if space is None:
    space = infer_space(steps_value)
  if isinstance(space, str):
    return space
  if isinstance(space, dict):
    return json.dumps(space)
  from minari import serialization  # pylint: disable=g-import-not-at-top
  return serialization.serialize_space(space)


def _write_node(group: Any, key: str, value: Any, field: str,
                source: str, index: int) -> None:
  """Writes ``value`` (a nest) as ``group/key``; ``field`` names it in errors."""
  if isinstance(value, (tuple, list)):
    value = {f'_index_{i}': v for i, v in enumerate(value)}
  if isinstance(value, dict):
    sub = group.create_group(key)
    for k, v in value.items():
      _write_node(sub, str(k), v, f'{field}/{k}', source, index)
    return
  strings.create_hdf5_dataset(group, key, value, field, source, index)


def _flatten_attrs(metadata: Dict[str, Any],
                   prefix: str = '') -> Dict[str, Any]:
  out = {}
  for key, value in metadata.items():
    name = f'{prefix}/{key}' if prefix else str(key)
    if isinstance(value, dict):
      out.update(_flatten_attrs(value, name))
    else:
      out[name] = value
  return out


def _write_episode(file: Any, index: int, episode: episodes_lib.Episode,
                   source: str) -> int:
  """Writes ``episode_<index>``; returns its number of transitions."""
  steps = episode[rlds_types.STEPS]
  for field in (rlds_types.OBSERVATION, rlds_types.ACTION, rlds_types.REWARD):
    if field not in steps:
      raise ConversionError('is missing; Minari needs it', source=source,
                            episode=index, field=field)
  view = transitions.transitions_from_steps(steps)
  count = len(view['rewards'])
  if not count and view['terminated']:
    raise ConversionError(
        'is True on the only step: a one-step episode has no transition, '
        'and Minari records termination on a transition', source=source,
        episode=index, field=rlds_types.IS_TERMINAL)
  group = file.create_group(f'episode_{index}')
  attrs = _flatten_attrs({k: v for k, v in episode.items()
                          if k != rlds_types.STEPS})
  attrs.update({'id': np.int64(index), 'total_steps': np.int64(count)})
  group.attrs.update(attrs)
  _write_node(group, 'observations', view['observations'],
              rlds_types.OBSERVATION, source, index)
  _write_node(group, 'actions', view['actions'], rlds_types.ACTION, source,
              index)
  group.create_dataset('rewards', data=view['rewards'])
  ends = np.zeros(count, bool)
  terminations, truncations = ends.copy(), ends.copy()
  if count:
    terminations[-1] = view['terminated']
    truncations[-1] = not view['terminated']
  group.create_dataset('terminations', data=terminations)
  group.create_dataset('truncations', data=truncations)
  if view['discounts'] is not None:
    group.create_dataset('discounts', data=view['discounts'])
  for key, value in view['extras'].items():
    if key in REQUIRED_KEYS or key == 'discounts':
      raise ConversionError(f'clashes with Minari\'s own {key!r}',
                            source=source, episode=index, field=key)
    _write_node(group, key, value, key, source, index)
  return count


def to_minari(episodes: episodes_lib.EpisodesLike,
              out_dir: Union[str, os.PathLike], dataset_id: str, *,
              observation_space: Any = None, action_space: Any = None,
              metadata: Optional[Dict[str, Any]] = None,
              if_exists: str = 'error',
              last_step: transitions.LastStepLike = 'invalid') -> str:
  """Writes Episodes as the Minari dataset ``out_dir/<dataset_id>``, atomically.

  What ``minari.load_dataset`` (0.5.4) loads, with ``MINARI_DATASETS_PATH =
  out_dir``; the layout is in docs/convert_minari_d4rl.md.

  Args:
    episodes: Episodes or an RLDS dataset with ``observation``, ``action``
      and ``reward``.
    out_dir: the Minari root (``MINARI_DATASETS_PATH``).
    dataset_id: ``(namespace/)name-v<version>``, as Minari parses it.
    observation_space, action_space: gymnasium spaces or their serialised
      JSON; inferred from the first episode by default (`infer_space`).
    metadata: more global metadata for ``metadata.json``.
    if_exists: ``'error'`` or ``'overwrite'`` (only a Minari dataset, or an
      empty directory, is replaced).
    last_step: ``'invalid'`` (default, RLDS): the last step's action,
      reward and discount are left out, warning once if any is non-zero;
      ``'valid'``: they are real and kept (docs/convert.md).

  Returns:
    The dataset directory ``out_dir/<dataset_id>``.

  Example:
    >>> import tempfile, numpy as np, os
    >>> from rlds_lite.convert import episodes as episodes_lib
    >>> e = {'steps': {'observation': np.zeros((2, 1)), 'action': np.zeros(2),
    ...                'reward': np.zeros(2),
    ...                **episodes_lib.rlds_flags(2, True)}}
    >>> path = to_minari([e], tempfile.mkdtemp(), 'ns/toy-v1')
    >>> path.endswith(os.path.join('ns', 'toy-v1'))
    True
    >>> sorted(os.listdir(os.path.join(path, 'data')))
    ['main_data.hdf5', 'metadata.json']
  """
  match = layout.DATASET_ID.fullmatch(dataset_id)
  if not match:
    raise ValueError(
        f'to_minari: dataset_id={dataset_id!r} is not a Minari id: '
        "(namespace/)name-v<version> of letters, digits, '-' and '_', a "
        "namespace of 2 characters or more (Minari's rule), e.g. "
        "'ns/walk-v0'.")
  if if_exists not in ('error', 'overwrite'):
    raise ValueError(f"to_minari: if_exists={if_exists!r}; 'error' or "
                     "'overwrite'.")
  policy = transitions.last_step_policy(last_step, 'to_minari')
  dropped = transitions.LastStepValues('to_minari', extras=False)
  root = overwriting.path_inside(out_dir, dataset_id, what='dataset_id',
                                 writer='to_minari')

  def check(target: str) -> None:
    overwriting.check_replaceable(target, kind='Minari dataset',
                                  marker=os.path.join('data', MAIN_FILE),
                                  writer='to_minari')
    if os.path.exists(target) and if_exists == 'error':
      raise FileExistsError(f'to_minari: {target} exists; pass '
                            "if_exists='overwrite' to replace it.")

  check(root)  # Before reading; again under the lock.
  output = atomic_output.AtomicOutput(root, directory=True, check=check,
                                      replace=if_exists == 'overwrite',
                                      label=f'to_minari: {root}')
  with output:
    source = '<episodes>'
    data = os.path.join(output.path, 'data')
    os.mkdir(data)
    spaces = {}
    total_steps = total_episodes = 0
    # Not h5py.File: a full disk would crash the process (hdf5_output).
    with hdf5_output.HDF5Output(
        os.path.join(data, MAIN_FILE),
        label=os.path.join(root, 'data', MAIN_FILE)) as hdf5:
      file = hdf5.file
      for index, episode in enumerate(transitions.prepared_for_writing(
          episodes_lib.checked_episodes(episodes, source=source,
                                        numbers=(rlds_types.REWARD,)), policy,
          dropped)):
        hdf5.check()
        if not spaces:
          steps = episode[rlds_types.STEPS]
          spaces = {
              'observation_space': _serialise_space(
                  observation_space, steps.get(rlds_types.OBSERVATION)),
              'action_space': _serialise_space(
                  action_space, steps.get(rlds_types.ACTION))}
        total_steps += _write_episode(file, index, episode, source)
        total_episodes += 1
      if not spaces:
        if observation_space is None or action_space is None:
          raise ValueError('to_minari: no episodes, so observation_space and '
                           'action_space must be given.')
        spaces = {
            'observation_space': _serialise_space(observation_space, None),
            'action_space': _serialise_space(action_space, None)}
      global_metadata = {
          'dataset_id': dataset_id, 'total_episodes': total_episodes,
          'total_steps': total_steps, 'minari_version': MINARI_VERSION,
          **spaces}
      file.attrs.update(global_metadata)
    size = os.path.getsize(os.path.join(data, MAIN_FILE))
    with open(os.path.join(data, METADATA_FILE), 'w') as f:
      json.dump({'data_format': 'hdf5', 'jpeg_encoding': False,
                 'dataset_size': round(size / 1e6, 1), **(metadata or {}),
                 **global_metadata}, f, default=_json_default)
    if match.group('namespace'):
      _write_namespace_files(os.fspath(out_dir), match.group('namespace'))
    output.publish()
  dropped.warn()
  return root

def to_minari_root(episodes: episodes_lib.EpisodesLike,
                   path: Union[str, os.PathLike], *,
                   dataset_id: Optional[str] = None,
                   last_step: transitions.LastStepLike = 'invalid') -> str:
  """`to_minari` into a Minari root, or as a dataset's own directory
  (`minari_layout.dataset_root`: the id may come from ``path``); the
  dataset must be new. Returns its directory (``rlds-lite convert``).
  """
  root, dataset_id = layout.dataset_root(path, dataset_id)
  target = os.path.join(root, dataset_id)
  if os.path.exists(target):  # The root may hold other datasets; not this.
    raise FileExistsError(f'{target} exists; choose a new target')
  return to_minari(episodes, root, dataset_id, last_step=last_step)


def _json_default(value: Any) -> Any:
  """JSON for what Minari's metadata holds beyond JSON: sets, NumPy values."""
  if isinstance(value, (set, frozenset)):
    return sorted(value)
  if isinstance(value, (np.generic, np.ndarray)):
    return value.tolist()
  raise TypeError(f'to_minari: metadata value {value!r} is not JSON')


def _write_namespace_files(out_dir: str, namespace: str) -> None:
  """``namespace_metadata.json`` files Minari lists namespaces by."""
  parts = namespace.split('/')
  for depth in range(1, len(parts) + 1):
    path = os.path.join(out_dir, *parts[:depth], 'namespace_metadata.json')
    if not os.path.exists(path):
      with open(path, 'w') as f:
        json.dump({}, f)
