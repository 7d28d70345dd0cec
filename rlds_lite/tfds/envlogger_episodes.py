"""EnvLogger recordings as RLDS episodes (columnar NumPy), with exact RLDS alignment.

The alignment and its edge episodes: ``docs/recording.md``.
"""

import os
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import dm_env
import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import envlogger as envlogger_compat
from rlds_lite.envlogger import files as envlogger_files
from rlds_lite import nest_paths
from rlds_lite import rlds_types
from rlds_lite.tfds import encoding
from rlds_lite.tfds import envlogger_decode
from rlds_lite.tfds import features as features_lib

__all__ = ['ENV_SPEC_FIELDS', 'find_recordings', 'features_from_recordings',
           'read_rlds_episodes', 'recording_specs', 'rlds_episode',
           'same_specs']

PathLike = Union[str, os.PathLike]
ENV_SPEC_FIELDS = (rlds_types.OBSERVATION, rlds_types.ACTION,
                   rlds_types.REWARD, rlds_types.DISCOUNT)
"""The fields whose dm_env specs a recording stores."""
_SPEC_NAMES = {
    rlds_types.OBSERVATION: 'observation_spec',
    rlds_types.ACTION: 'action_spec',
    rlds_types.REWARD: 'reward_spec',
    rlds_types.DISCOUNT: 'discount_spec',
}
_EPISODE_KEY_BITS = 32


def find_recordings(envlogger_dirs: Union[PathLike, Sequence[PathLike]]
                    ) -> List[str]:
  """The EnvLogger recordings (directories with ``metadata.riegeli``) under the given paths.

    Each path is a recording or a directory of them (any depth, sorted;
    hidden directories skipped).

    Example:
      >>> import tempfile
      >>> find_recordings(tempfile.mkdtemp())  # doctest: +ELLIPSIS
      Traceback (most recent call last):
      ...
      FileNotFoundError: ... is empty: no EnvLogger recording ...
  """
  if isinstance(envlogger_dirs, (str, os.PathLike)):
    envlogger_dirs = [envlogger_dirs]
  paths = [os.path.abspath(os.path.expanduser(os.fspath(p)))
           for p in envlogger_dirs]
  if not paths:
    raise ValueError('envlogger_dir: no EnvLogger directory given.')
  recordings = []
  for path in paths:
    found = []
    for root, dirs, files in os.walk(path):
      dirs[:] = [d for d in dirs if not d.startswith('.')]
      if envlogger_compat.METADATA_FILE in files:
        found.append(root)
    found.sort()
    if not found:
      # Raises the precise error (missing, empty, no metadata file, ...).
      envlogger_compat.validate_recording(path)
      raise FileNotFoundError(f'No EnvLogger recording under {path}.')
    recordings.extend(found)
  return recordings


def recording_specs(recording: PathLike) -> Dict[str, Any]:
  """The dm_env specs a recording stores: ``observation``, ``action``, ``reward``, ``discount``.

    Example:
      >>> from rlds_lite import synthetic
      >>> recording = synthetic.catch_recording(num_episodes=2)
      >>> specs = recording_specs(recording)
      >>> specs['observation'].shape, specs['action'].num_values
      ((10, 5), 3)
  """
  recording = os.fspath(recording)
  envlogger_compat.validate_recording(recording)
  envlogger = envlogger_compat.import_envlogger()
  try:
    # The metadata only: a writer folder's damage is reported when read.
    with envlogger_files.open_shard(envlogger, recording, None) as reader:
      return {field: getattr(reader, name)()
              for field, name in _SPEC_NAMES.items()}
  except envlogger_compat.CorruptRecordingError:
    raise
  except Exception as e:  # pylint: disable=broad-except
    raise envlogger_compat.CorruptRecordingError(
        f'Cannot read the environment specs of {recording} (from '
        f'{envlogger_compat.METADATA_FILE}): {e}') from e


def _spec_leaves(spec: Any) -> List[Tuple[str, Any]]:
  return nest_paths.flatten_with_paths(spec)


def same_specs(recordings: Sequence[str]) -> Dict[str, Any]:
  """The specs shared by all ``recordings`` (structure, shapes, dtypes); else a ValueError.

    Example:
      >>> from rlds_lite import synthetic
      >>> recording = synthetic.catch_recording(num_episodes=1)
      >>> same_specs([recording, recording])['observation'].shape
      (10, 5)
  """
  first = recording_specs(recordings[0])
  for other_path in recordings[1:]:
    other = recording_specs(other_path)
    for field in ENV_SPEC_FIELDS:
      a, b = _spec_leaves(first[field]), _spec_leaves(other[field])
      if [p for p, _ in a] != [p for p, _ in b]:
        raise ValueError(
            f'EnvLogger recordings have different {field} specs: '
            f'{recordings[0]} has fields {[p for p, _ in a]} and '
            f'{other_path} has {[p for p, _ in b]}; convert them separately.')
      for (path, sa), (_, sb) in zip(a, b):
        if (tuple(sa.shape) != tuple(sb.shape) or
            np.dtype(sa.dtype) != np.dtype(sb.dtype)):
          name = f'{field}/{path}' if path else field
          raise ValueError(
              f'EnvLogger recordings have different specs for {name!r}: '
              f'{recordings[0]} has shape {tuple(sa.shape)} dtype '
              f'{np.dtype(sa.dtype)}, {other_path} has shape '
              f'{tuple(sb.shape)} dtype {np.dtype(sb.dtype)}; convert them '
              'separately.')
  return first


def _conform(values: Any, spec: Any, field: str, where: str) -> Any:
  """``[T, ...]`` values cast to the spec's dtype, checked against its shape."""
  if spec is None:
    return values
  try:
    tf.nest.assert_same_structure(values, spec)
  except (ValueError, TypeError) as e:
    raise ValueError(f'{where}: the recorded {field} does not have the '
                     f'structure of its spec {spec!r}: {e}') from e

  def conform_leaf(path: str, array: np.ndarray, leaf_spec: Any) -> np.ndarray:
    name = f'{field}/{path}' if path else field
    array = np.asarray(array)
    shape = tuple(leaf_spec.shape)
    if array.shape[1:] != shape:
      raise ValueError(f'{where}: {name!r} has shape {array.shape[1:]} but its '
                       f'spec has {shape}.')
    dtype = np.dtype(leaf_spec.dtype)
    if array.dtype == dtype:
      return array
    if array.dtype == object:
      raise ValueError(f'{where}: {name!r} holds non-numeric values; its spec '
                       f'has dtype {dtype}.')
    if array.dtype.kind in 'iub' or dtype.kind in 'iub':
      cast = encoding.exact_cast(array, dtype)
      if cast is None:
        raise ValueError(f'{where}: {name!r} has values of dtype {array.dtype} '
                         f'that do not fit its spec dtype {dtype}.')
      return cast
    return array.astype(dtype)  # Floats take the precision the env declares.

  paths = [p for p, _ in _spec_leaves(spec)]
  flat = tf.nest.flatten(values)
  flat_specs = tf.nest.flatten(spec)
  return tf.nest.pack_sequence_as(
      spec, [conform_leaf(p, a, s) for p, a, s in zip(paths, flat, flat_specs)])


def _aligned_steps(logged: Mapping[str, Any], specs: Mapping[str, Any],
                   lengths: np.ndarray, where: str) -> Dict[str, Any]:
  """RLDS step columns of consecutive episodes of ``lengths`` timesteps.

  ``logged`` holds the episodes' EnvLogger fields concatenated along time;
  so does the result (see the module docstring for the alignment).
  """
  step_types = np.asarray(logged['step_type'])
  stops = np.cumsum(lengths)
  starts = stops - lengths
  is_first = np.zeros(len(step_types), bool)
  is_first[starts] = True
  is_last = np.zeros(len(step_types), bool)
  is_last[stops - 1] = True

  def shift(values):
    """Rows 1.. then zeros, and zero on each last step: RLDS alignment."""
    def shift_leaf(a):
      out = np.concatenate([a[1:], np.zeros_like(a[:1])])
      out[is_last] = 0
      return out
    return tf.nest.map_structure(shift_leaf, values)

  discount = _conform(logged[rlds_types.DISCOUNT], specs.get('discount'),
                      rlds_types.DISCOUNT, where)
  zero_discount = np.ones(len(step_types), bool)
  for leaf in tf.nest.flatten(discount):
    leaf = np.asarray(leaf)
    zero_discount &= (leaf == 0).reshape(len(leaf), -1).all(axis=1)
  steps = {
      rlds_types.OBSERVATION: _conform(logged[rlds_types.OBSERVATION],
                                       specs.get('observation'),
                                       rlds_types.OBSERVATION, where),
      rlds_types.ACTION: shift(_conform(logged[rlds_types.ACTION],
                                        specs.get('action'),
                                        rlds_types.ACTION, where)),
      rlds_types.REWARD: shift(_conform(logged[rlds_types.REWARD],
                                        specs.get('reward'),
                                        rlds_types.REWARD, where)),
      rlds_types.DISCOUNT: shift(discount),
      rlds_types.IS_FIRST: is_first,
      rlds_types.IS_LAST: is_last,
      rlds_types.IS_TERMINAL: is_last & zero_discount & (
          step_types == int(dm_env.StepType.LAST)),
  }
  _merge(steps, logged.get('step_metadata') or {}, 'step metadata', where, ())
  return steps


def _merge(target: Dict[str, Any], extra: Mapping[str, Any], kind: str,
           where: str, reserved: Sequence[str]) -> None:
  for key, value in extra.items():
    if key in reserved or key in target:
      raise ValueError(f'{where}: {kind} field {key!r} collides with an RLDS '
                       'field of the same name.')
    target[key] = value


def rlds_episode(logged: Mapping[str, Any],
                 specs: Mapping[str, Any],
                 where: str = 'episode') -> Dict[str, Any]:
  """One EnvLogger-aligned episode as a columnar RLDS episode.

    Args:
      logged: an episode as ``rlds_lite.envlogger.read_episodes`` yields it.
      specs: the recording's dm_env specs; values are cast to their dtypes.
      where: names the episode in error messages.

    Example (a reset-only episode becomes one step):
      >>> import numpy as np
      >>> from dm_env import specs
      >>> logged = {'observation': np.array([7]), 'action': np.array([0]),
      ...           'reward': np.array([0.]), 'discount': np.array([0.]),
      ...           'step_type': np.array([0], np.uint8)}
      >>> env_specs = {'observation': specs.Array((), np.int8),
      ...              'action': specs.DiscreteArray(2),
      ...              'reward': specs.Array((), np.float32),
      ...              'discount': specs.Array((), np.float32)}
      >>> steps = rlds_episode(logged, env_specs)['steps']
      >>> steps['observation'], steps['is_first'], steps['is_last'], steps['is_terminal']
      (array([7], dtype=int8), array([ True]), array([ True]), array([False]))
  """
  length = len(np.asarray(logged['step_type']))
  if not length:
    raise ValueError(f'{where}: the episode has no timestep.')
  steps = _aligned_steps(logged, specs, np.array([length]), where)
  episode = {rlds_types.STEPS: steps}
  _merge(episode, logged.get('episode_metadata') or {}, 'episode metadata',
         where, ())
  return episode


def episode_key(recording_index: int, episode_index: int) -> int:
  """A unique, ordered integer key of an episode among several recordings.

  Example:
    >>> episode_key(1, 2) > episode_key(0, 99)
    True
  """
  return (recording_index << _EPISODE_KEY_BITS) + episode_index


def _rlds_chunk(chunk: envlogger_decode.LoggedChunk, specs: Mapping[str, Any]
                ) -> Iterator[Tuple[int, Dict[str, Any]]]:
  """`rlds_episode` of every episode of a chunk, converted all at once.

  Raises on any problem; the caller then converts episode by episode, so
  that the error names the episode.
  """
  where = f'{chunk.wheres[0]} (and the {len(chunk.indices) - 1} after it)'
  steps = _aligned_steps(chunk.logged, specs, chunk.lengths, where)
  stops = np.cumsum(chunk.lengths)
  starts = stops - chunk.lengths
  leaves = tf.nest.flatten(steps)
  episodes = []
  for k, (a, b) in enumerate(zip(starts, stops)):
    episode = {rlds_types.STEPS: tf.nest.pack_sequence_as(
        steps, [leaf[a:b] for leaf in leaves])}
    _merge(episode, chunk.logged['episode_metadata'][k], 'episode metadata',
           chunk.wheres[k], ())
    episodes.append((chunk.indices[k], episode))
  return iter(episodes)


def read_rlds_episodes(recording: PathLike,
                       specs: Mapping[str, Any] = None,
                       recording_index: int = 0,
                       chunk_steps: Optional[int] = None
                       ) -> Iterator[Tuple[int, Dict[str, Any]]]:
  """``(key, episode)`` pairs of a recording, episodes in RLDS alignment.

    Args:
      recording: an EnvLogger recording directory.
      specs: its specs (read from it when None).
      recording_index: its position among those converted together (keys).
      chunk_steps: timesteps decoded together (default 4096; 1: per episode).

    Example:
      >>> from rlds_lite import synthetic
      >>> recording = synthetic.catch_recording(num_episodes=2)
      >>> key, episode = next(read_rlds_episodes(recording, recording_index=1))
      >>> key == episode_key(1, 0), episode['episode_id']
      (True, np.int64(0))
      >>> episode['steps']['action'].tolist(), episode['steps']['is_terminal'][-1]
      ([2, 2, 1, 1, 1, 1, 1, 1, 1, 0], np.True_)
  """
  recording = os.fspath(recording)
  if specs is None:
    specs = recording_specs(recording)
  for chunk in envlogger_decode.read_logged_chunks(recording, specs,
                                                  chunk_steps):
    try:
      converted = _rlds_chunk(chunk, specs)
    except Exception:  # pylint: disable=broad-except
      # Episode by episode, so that the error names the episode.
      converted = ((i, rlds_episode(logged, specs, where)) for (i, logged), where
                   in zip(envlogger_decode.split_chunk(chunk), chunk.wheres))
    for i, episode in converted:
      yield episode_key(recording_index, i), episode


def features_from_recordings(recordings: Sequence[str],
                             *,
                             use_images: bool = True,
                             image_encoding: str = 'png',
                             tensor_encoding: str = 'none'
                             ) -> tfds.features.FeaturesDict:
  """RLDS features of recordings: from their specs and first episode's metadata.

    Example:
      >>> from rlds_lite import synthetic
      >>> recording = synthetic.catch_recording(num_episodes=2)
      >>> features = features_from_recordings([recording])
      >>> features['steps']['observation'], features['steps']['reward']
      (Tensor(shape=(10, 5), dtype=float32), Tensor(shape=(), dtype=float64))
  """
  specs = same_specs(recordings)
  first = None
  for recording in recordings:
    first = next(read_rlds_episodes(recording, specs, chunk_steps=1),
                 (None, None))[1]
    if first is not None:
      break
  if first is None:
    raise ValueError(f'The EnvLogger recordings {list(recordings)} hold no '
                     'episode.')
  steps = first[rlds_types.STEPS]
  step_metadata = {
      k: tf.nest.map_structure(lambda a: a[0], v)
      for k, v in steps.items()
      if k not in rlds_types.CORE_STEP_FIELDS
  }
  episode_metadata = {k: v for k, v in first.items() if k != rlds_types.STEPS}
  return features_lib.features_from_env_specs(
      specs['observation'], specs['action'], specs['reward'],
      specs['discount'], step_metadata=step_metadata,
      episode_metadata=episode_metadata, use_images=use_images,
      image_encoding=image_encoding, tensor_encoding=tensor_encoding)
