"""`read_episodes`: the episodes of an EnvLogger recording, checked, as arrays.
"""

import os
import types
from typing import Any, Dict, Iterator, List, Sequence, Tuple

import dm_env
import numpy as np
import tensorflow as tf

from rlds_lite import metadata as rlds_metadata
from rlds_lite import rlds_types
from rlds_lite.envlogger.compat import CorruptRecordingError
from rlds_lite.envlogger.compat import import_envlogger
from rlds_lite.envlogger.compat import PathLike
from rlds_lite.envlogger import folders
from rlds_lite.envlogger.files import open_native
from rlds_lite.envlogger.files import open_shard
from rlds_lite.envlogger.files import recording_folders
from rlds_lite.envlogger.files import SHARD_FILES
from rlds_lite.envlogger.recording import RECORDER_KEY

def reset_zeros(spec: Any, field: str, where: str) -> Any:
  """The zero value of ``spec``: what a reset timestep without ``field`` holds.

  Example:
    >>> from dm_env import specs
    >>> reset_zeros(specs.Array((2,), np.int32), 'action', 'Episode 0')
    array([0, 0], dtype=int32)
  """
  if spec is None:
    raise CorruptRecordingError(
        f'{where}: the recording stores no {field} spec, so the missing '
        f'{field} of its reset timestep cannot be filled.')
  return tf.nest.map_structure(
      lambda s: np.zeros(s.shape, np.dtype(s.dtype))[()], spec)


def stack_timesteps(values: Sequence[Any], field: str, where: str) -> Any:
  """Per-timestep (nested) values of ``field`` stacked into ``[T, ...]`` arrays.

  Example:
    >>> stack_timesteps([{'x': 1.0}, {'x': 2.0}], 'observation', 'Episode 0')
    {'x': array([1., 2.])}
    >>> stack_timesteps([[1, 2], [3]], 'action', 'Episode 0')
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: Episode 0: the action of its timesteps differ in structure or shape: ...
  """
  try:
    return tf.nest.map_structure(lambda *xs: np.stack(xs), *values)
  except (ValueError, TypeError) as e:
    raise ValueError(
        f'{where}: the {field} of its timesteps differ in structure or '
        f'shape: {e}') from e


def _stack_filled(values: Sequence[Any], step_types: np.ndarray, spec: Any,
                  field: str, where: str) -> Any:
  """Stacks values, with zeros for the `None` of FIRST (reset) timesteps."""
  template = next((v for v in values if v is not None), None)
  zeros = (reset_zeros(spec, field, where) if template is None else
           tf.nest.map_structure(np.zeros_like, template))
  filled = []
  for j, (value, step_type) in enumerate(zip(values, step_types)):
    if value is None:
      if step_type != dm_env.StepType.FIRST:
        raise ValueError(
            f'{where}: timestep {j} ({dm_env.StepType(step_type).name}) has '
            f'no {field}; only a reset (FIRST) timestep may lack it.')
      value = zeros
    filled.append(value)
  return stack_timesteps(filled, field, where)


def as_metadata_dict(value: Any) -> Dict[str, Any]:
  """EnvLogger custom data as a dict: None -> {}, a non-dict -> custom_data."""
  if value is None:
    return {}
  if isinstance(value, dict):
    return value
  return {'custom_data': value}


def stack_step_metadata(custom: Sequence[Any], where: str) -> Dict[str, Any]:
  """Per-timestep step metadata (EnvLogger custom data) as ``{key: [T, ...]}``.

  Example:
    >>> stack_step_metadata([{'t': 0}, {'t': 1}], 'Episode 0')
    {'t': array([0, 1])}
    >>> stack_step_metadata([None, None], 'Episode 0')
    {}
  """
  if all(c is None for c in custom):
    return {}
  dicts = [as_metadata_dict(c) for c in custom]
  keys = set(dicts[0])
  for j, d in enumerate(dicts):
    if set(d) != keys:
      raise ValueError(
          f'{where}: step metadata keys differ between timestep 0 '
          f'{sorted(keys)} and timestep {j} {sorted(d)}.')
  return {key: stack_timesteps([d[key] for d in dicts],
                               f'step metadata {key!r}', where)
          for key in sorted(keys)}


def _episode_dict(steps: Sequence[Any], step_types: np.ndarray,
                  episode_metadata: Any, reader: Any,
                  where: str) -> Dict[str, Any]:
  """One episode's EnvLogger timesteps as a dict of `[T, ...]` arrays."""
  return {
      rlds_types.OBSERVATION: stack_timesteps(
          [s.timestep.observation for s in steps], 'observation', where),
      rlds_types.ACTION: _stack_filled(
          [s.action for s in steps], step_types, reader.action_spec(),
          'action', where),
      rlds_types.REWARD: _stack_filled(
          [s.timestep.reward for s in steps], step_types, reader.reward_spec(),
          'reward', where),
      rlds_types.DISCOUNT: _stack_filled(
          [s.timestep.discount for s in steps], step_types,
          reader.discount_spec(), 'discount', where),
      'step_type': step_types,
      'step_metadata': stack_step_metadata(
          [s.custom_data for s in steps], where),
      'episode_metadata': as_metadata_dict(episode_metadata),
  }


def _read_steps(episode: Sequence[Any], length: int, shard: str,
                index: int) -> List[Any]:
  steps = []
  for j in range(length):
    try:
      steps.append(episode[j])
    except Exception as e:  # pylint: disable=broad-except
      # The native reader returns None for unreadable records, which
      # EnvLogger then fails to parse (TypeError); decoding can also fail.
      raise CorruptRecordingError(
          f'Cannot read timestep {j} of episode {index} from '
          f'{os.path.join(shard, SHARD_FILES[0])} (or its '
          f'{SHARD_FILES[1]}): the file is truncated or corrupt ({e!r}).'
      ) from e
  return steps


def _check_boundaries(step_types: np.ndarray, index: str, i: int) -> None:
  """Raises unless only the first timestep of the episode is FIRST."""
  firsts = np.flatnonzero(step_types == dm_env.StepType.FIRST)
  if firsts.tolist() != [0]:
    raise CorruptRecordingError(
        f'EnvLogger file {index} is corrupt: episode {i} has FIRST '
        f'timesteps at {firsts.tolist()} instead of only at 0.')


def _check_marked_metadata(metadata: Any, shard: str, i: int) -> None:
  """Raises if a `record` episode lost its metadata (always has an id)."""
  if not (isinstance(metadata, dict) and rlds_metadata.EPISODE_ID in metadata):
    raise CorruptRecordingError(
        f'EnvLogger file {os.path.join(shard, SHARD_FILES[2])} is corrupt: '
        f'episode {i} has no {rlds_metadata.EPISODE_ID!r}, which '
        'rlds_lite.envlogger.record stores for every episode.')


def recording_episodes(data_dir: str
                       ) -> List[Tuple[str, folders.Bounds]]:
  """``(writer folder, episode bounds)`` of a recording, oldest folder first.

  Checks every file and plans every folder (see
  `rlds_lite.envlogger.folders.folder_episodes`) before anything is read, so
  structural damage is raised, and what a killed writer left is warned
  about, at once.
  """
  planned = []
  for shard, extents in recording_folders(data_dir).items():
    with open_native(data_dir, shard) as native:
      planned.append((shard, folders.folder_episodes(native, shard, extents)))
  return planned


def _iterate_episodes(envlogger: types.ModuleType, data_dir: str,
                      planned: Sequence[Tuple[str, folders.Bounds]]
                      ) -> Iterator[Dict[str, Any]]:
  for shard, bounds in planned:
    if not bounds:
      continue
    with open_shard(envlogger, data_dir, shard) as reader:
      marked = RECORDER_KEY in (reader.metadata() or {})
      episodes = reader.episodes
      episode_metadata = reader.episode_metadata()
      for i, (_, length) in enumerate(bounds):
        steps = _read_steps(episodes[i], length, shard, i)
        try:
          metadata = episode_metadata[i]
        except Exception as e:  # pylint: disable=broad-except
          raise CorruptRecordingError(
              f'Cannot read the metadata of episode {i} from '
              f'{os.path.join(shard, SHARD_FILES[2])}: {e!r}') from e
        if marked:
          _check_marked_metadata(metadata, shard, i)
        step_types = np.array([int(s.timestep.step_type) for s in steps],
                              np.uint8)
        _check_boundaries(step_types, os.path.join(shard, SHARD_FILES[3]), i)
        yield _episode_dict(steps, step_types, metadata, reader,
                            f'Episode {i} of {shard}')


def read_episodes(data_dir: PathLike) -> Iterator[Dict[str, Any]]:
  """Reads an EnvLogger recording as episodes of NumPy arrays, in recording order.

  Each episode is in EnvLogger's alignment (row `t`: the t-th timestep and the
  action that led to it): `observation`, `action`, `reward`, `discount`
  (nests of `[T, ...]`; zeros on the reset row), `step_type` (uint8 `[T]`),
  `step_metadata` and `episode_metadata`. A killed writer's recording is read
  as docs/guarantees.md ("Recordings") says.

  Args:
    data_dir: An EnvLogger (riegeli) recording directory.

  Returns:
    An iterator of episode dicts (the files are checked first).

  Example:
    >>> import tempfile
    >>> from rlds_lite import envs
    >>> from rlds_lite.envlogger import record
    >>> tmp = tempfile.TemporaryDirectory()
    >>> env = envs.make('catch', seed=0, rows=3)
    >>> _ = record(env, env.expert_policy, tmp.name, 1, progress=False)
    >>> episode = next(read_episodes(tmp.name))
    >>> episode['step_type'].tolist(), episode['action'].tolist()
    ([0, 1, 2], [0, 2, 2])
    >>> episode['reward'].tolist(), episode['discount'].tolist()
    ([0.0, 0.0, 1.0], [0.0, 1.0, 0.0])
    >>> tmp.cleanup()
  """
  data_dir = os.fspath(data_dir)
  envlogger = import_envlogger()
  return _iterate_episodes(envlogger, data_dir, recording_episodes(data_dir))
