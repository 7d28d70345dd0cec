"""`record`: an agent acting in a dm_env environment, recorded with EnvLogger.

What a crash loses, and how append and overwrite keep the old recording, is
in ``docs/guarantees.md`` ("Recordings").
"""

import collections.abc
import dataclasses
import os
import types
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import dm_env
from dm_env import specs as dm_specs
import numpy as np
import tensorflow as tf
import tqdm

from rlds_lite import option_objects
from rlds_lite import metadata as rlds_metadata
from rlds_lite.envlogger.compat import import_envlogger
from rlds_lite.envlogger.compat import PathLike
from rlds_lite.envlogger import files
from rlds_lite.envlogger import folders
from rlds_lite.envlogger import staging

RECORDER_KEY = 'rlds_lite_recorder'
"""Dataset-metadata key marking recordings made by `record`.

Such recordings store an `episode_id` for every episode, so `read_episodes`
reports an episode without one as a corrupt `episode_metadata.riegeli`.
"""
COMPRESSIONS = {
    'zstd': 'transpose,zstd:3,chunk_size:1M',
    'brotli': 'transpose,brotli:6,chunk_size:1M',
    'snappy': 'transpose,snappy,chunk_size:1M',
    'none': 'transpose,uncompressed,chunk_size:1M',
}
"""`RecordingOptions`' ``compression`` choices: their riegeli writer options.

``'brotli'`` is EnvLogger's own default; ``'zstd'`` decodes 10-25% faster in
files 1.05-1.7x as large. Every EnvLogger reader reads all of them. Other
option strings are refused: EnvLogger aborts the process on an invalid one.
"""
IF_EXISTS = ('error', 'append', 'overwrite')

Policy = Callable[[dm_env.TimeStep], Any]
MetadataFn = Callable[[dm_env.TimeStep, Any, dm_env.Environment],
                      Optional[Mapping[str, Any]]]


@dataclasses.dataclass(frozen=True)
class RecordingOptions:
  """How `record` writes its files.

  Attributes:
    compression: a key of `COMPRESSIONS` (``'zstd'``, ``'brotli'`` as
      EnvLogger by default, ``'snappy'`` or ``'none'``).
    flush_every_episodes: flush at every n-th reset (1: every episode is on
      disk once the next one starts; a crash may lose up to n - 1 more).

  Example:
    >>> RecordingOptions(compression='brotli')
    RecordingOptions(compression='brotli', flush_every_episodes=1)
  """
  compression: str = 'zstd'
  flush_every_episodes: int = 1

  def __post_init__(self):
    if (not isinstance(self.compression, str) or
        self.compression not in COMPRESSIONS):
      raise ValueError(f'`compression` must be one of {sorted(COMPRESSIONS)}, '
                       f'got {self.compression!r}.')
    every = self.flush_every_episodes
    if (isinstance(every, bool) or not isinstance(every, (int, np.integer)) or
        every < 1):
      raise ValueError('`flush_every_episodes` must be a positive int, got '
                       f'{every!r}.')


@dataclasses.dataclass(frozen=True)
class RecordingSummary:
  """What `record` wrote.

  Attributes:
    data_dir: Absolute path of the recording.
    num_episodes: Episodes recorded by this call.
    num_steps: EnvLogger timesteps recorded by this call, the reset timestep
      of each episode included (an episode of n actions has n + 1).
    episode_ids: The `episode_id` given to each episode (stored in its
      metadata unless `episode_metadata_fn` returns its own).
    episode_lengths: Timesteps per episode (reset timestep included).
    returns: Undiscounted sum of rewards per episode (all reward leaves).
  """
  data_dir: str
  num_episodes: int
  num_steps: int
  episode_ids: Tuple[int, ...]
  episode_lengths: Tuple[int, ...]
  returns: Tuple[float, ...]

  @property
  def mean_return(self) -> float:
    """Mean of `returns`."""
    return float(np.mean(self.returns))


class _KeepOpen(dm_env.Environment):
  """Delegates to `env` but ignores `close()`: EnvLogger closes what it wraps."""

  def __init__(self, env: dm_env.Environment):
    self._env = env

  def reset(self) -> dm_env.TimeStep:
    return self._env.reset()

  def step(self, action) -> dm_env.TimeStep:
    return self._env.step(action)

  def observation_spec(self):
    return self._env.observation_spec()

  def action_spec(self):
    return self._env.action_spec()

  def reward_spec(self):
    return self._env.reward_spec()

  def discount_spec(self):
    return self._env.discount_spec()

  def close(self) -> None:
    pass


def _as_spec_dtype(value: Any, spec: Any, path: str) -> Any:
  """`value` as an array of `spec`'s dtype; 0-d arrays become NumPy scalars."""
  try:
    array = np.asarray(value)
  except ValueError as e:
    raise ValueError(
        f'The policy returned {path}={value!r}, which is not an array, for '
        f'the action spec {spec!r}: {e}') from e
  dtype = np.dtype(spec.dtype)
  if array.dtype != dtype:
    if not np.can_cast(array.dtype, dtype, casting='same_kind'):
      raise TypeError(
          f'The policy returned {path} of dtype {array.dtype} for the action '
          f'spec {spec!r}; expected {dtype} (or a value castable to it within '
          'its kind).')
    array = array.astype(dtype)
  if array.shape != tuple(spec.shape):
    raise ValueError(
        f'The policy returned {path} of shape {array.shape} for the action '
        f'spec {spec!r}; expected shape {tuple(spec.shape)}.')
  return array[()] if array.ndim == 0 else array


def conform_action(action: Any, spec: Any, path: str = 'action') -> Any:
  """`action` shaped like the (nested) `spec`, leaves in the spec's dtypes.

  Example:
    >>> conform_action(2, dm_specs.DiscreteArray(3))
    np.int32(2)
  """
  if isinstance(spec, dm_specs.Array):
    return _as_spec_dtype(action, spec, path)
  if isinstance(spec, collections.abc.Mapping):
    if (not isinstance(action, collections.abc.Mapping) or
        set(action) != set(spec)):
      raise ValueError(
          f'The policy returned {path}={action!r}; env.action_spec() expects '
          f'a dict with keys {sorted(spec)}.')
    return {k: conform_action(action[k], spec[k], f'{path}[{k!r}]')
            for k in spec}
  if isinstance(spec, (tuple, list)):
    if (not isinstance(action, (tuple, list)) or len(action) != len(spec)):
      raise ValueError(
          f'The policy returned {path}={action!r}; env.action_spec() expects '
          f'a sequence of {len(spec)} values.')
    values = [conform_action(a, s, f'{path}[{i}]')
              for i, (a, s) in enumerate(zip(action, spec))]
    if hasattr(spec, '_fields'):  # A namedtuple.
      return type(spec)(*values)
    return type(spec)(values)
  raise TypeError(f'env.action_spec() holds {spec!r}, not a dm_env spec.')


def _checked_metadata(fn_name: str, value: Any, check_values: bool,
                      codec: Any) -> Dict[str, Any]:
  """Validates what a metadata callback returned; `None` means no metadata."""
  if value is None:
    return {}
  if not isinstance(value, collections.abc.Mapping):
    raise TypeError(
        f'`{fn_name}` must return a dict of str keys (or None), got '
        f'{type(value).__name__}: {value!r}.')
  for key, item in value.items():
    if not isinstance(key, str):
      raise TypeError(f'`{fn_name}` returned a non-str key {key!r}.')
    if check_values:
      try:
        codec.encode(item)
      except (TypeError, ValueError, AttributeError) as e:
        raise TypeError(
            f'`{fn_name}` returned {key!r}={item!r}, which EnvLogger cannot '
            f'store: {e}') from e
  return dict(value)


class _FlushAtResets:
  """EnvLogger flush scheduler: flushes when every `every`-th reset is logged.

  EnvLogger writes an episode's index entry and metadata only when it
  flushes after the next episode started (or when it closes), so flushing as
  a reset is logged makes every episode before it durable. EnvLogger's
  default flushes at random (probability 1/5000 per timestep): a crash then
  loses thousands of timesteps, and two identical recordings could differ
  byte for byte.
  """

  def __init__(self, every: int):
    self._every = every
    self._resets = 0

  def __call__(self, data: Any) -> bool:
    if not data.timestep.first():
      return False
    self._resets += 1
    return (self._resets - 1) % self._every == 0


class _Callbacks:
  """EnvLogger's `episode_fn` / `step_fn` around the user's callbacks."""

  def __init__(self, env: dm_env.Environment,
               episode_metadata_fn: Optional[MetadataFn],
               step_metadata_fn: Optional[MetadataFn], codec: Any):
    self._env = env
    self._fns = {'episode_metadata_fn': episode_metadata_fn,
                 'step_metadata_fn': step_metadata_fn}
    self._codec = codec
    self._checked = set()
    self._step_keys = None
    self._episode_id = 0
    self._episode = {}

  @property
  def has_step_fn(self) -> bool:
    return self._fns['step_metadata_fn'] is not None

  def start_episode(self, episode_id: int) -> None:
    self._episode_id = episode_id
    self._episode = {}

  def _call(self, name: str, timestep: dm_env.TimeStep,
            action: Any) -> Dict[str, Any]:
    fn = self._fns[name]
    value = None if fn is None else fn(timestep, action, self._env)
    result = _checked_metadata(name, value, name not in self._checked,
                               self._codec)
    if result:
      self._checked.add(name)
    return result

  def episode_fn(self, timestep: dm_env.TimeStep, action: Any,
                 unused_env: Any) -> Dict[str, Any]:
    self._episode.update(self._call('episode_metadata_fn', timestep, action))
    return {rlds_metadata.EPISODE_ID: np.int64(self._episode_id),
            **self._episode}

  def step_fn(self, timestep: dm_env.TimeStep, action: Any,
              unused_env: Any) -> Optional[Dict[str, Any]]:
    result = self._call('step_metadata_fn', timestep, action)
    keys = sorted(result)
    if self._step_keys is None:
      self._step_keys = keys
    elif keys != self._step_keys:
      raise ValueError(
          f'`step_metadata_fn` returned keys {keys} for a '
          f'{timestep.step_type.name} timestep of episode {self._episode_id} '
          f'but {self._step_keys} before: it must return the same keys for '
          'every timestep, the reset one included.')
    return result or None


def episode_return(rewards: Sequence[Any]) -> float:
  """Sum of all reward leaves (a None reward, off the dm_env contract, is 0).

  Example:
    >>> episode_return([None, 1.0, {'a': 0.5, 'b': 0.25}])
    1.75
  """
  return float(sum(np.sum(leaf) for reward in rewards if reward is not None
                   for leaf in tf.nest.flatten(reward)))


def _specs_equal(a: Any, b: Any) -> bool:
  try:
    return bool(a == b)
  except (ValueError, TypeError):
    return False


def _values_equal(a: Any, b: Any) -> bool:
  try:
    tf.nest.assert_same_structure(a, b)
    return all(bool(np.array_equal(x, y))
               for x, y in zip(tf.nest.flatten(a), tf.nest.flatten(b)))
  except (ValueError, TypeError):
    return False


def _inspect_existing(envlogger: types.ModuleType, data_dir: str,
                      env: dm_env.Environment,
                      metadata: Optional[Mapping[str, Any]]
                      ) -> Tuple[int, bool]:
  """Episode count and `record` marker of the recording at `data_dir`.

  Counts the episodes every reader reads (see `rlds_lite.envlogger.folders`:
  a writer killed before it finished leaves its unfinished episode unread).

  Raises:
    ValueError: `env`'s specs, or values of `metadata`, differ from the
      recorded ones (EnvLogger keeps the recording's `metadata.riegeli`).
  """
  count = 0
  for shard, extents in files.recording_folders(
      data_dir, require_folders=False).items():
    with files.open_native(data_dir, shard) as native:
      count += len(folders.folder_episodes(native, shard, extents))
  with files.open_shard(envlogger, data_dir, None) as reader:
    stored = reader.metadata() or {}
    recorded = {
        'observation_spec': reader.observation_spec(),
        'action_spec': reader.action_spec(),
        'reward_spec': reader.reward_spec(),
        'discount_spec': reader.discount_spec(),
    }
  for name, spec in recorded.items():
    current = getattr(env, name)()
    if not _specs_equal(spec, current):
      raise ValueError(
          f'Cannot append to {data_dir}: the recorded {name} {spec!r} differs '
          f'from env.{name}() {current!r}. Record into another directory.')
  for key, value in (metadata or {}).items():
    if key not in stored or not _values_equal(stored[key], value):
      raise ValueError(
          f'Cannot append to {data_dir} with metadata {key!r}={value!r}: the '
          f'recording stores {stored.get(key, "no such key")!r}, and EnvLogger '
          f'never rewrites its {files.METADATA_FILE}. Pass the stored '
          'metadata (or none) when appending.')
  return count, RECORDER_KEY in stored


def _prepare_data_dir(envlogger: types.ModuleType, data_dir: str,
                      env: dm_env.Environment, if_exists: str,
                      metadata: Optional[Mapping[str, Any]]
                      ) -> Tuple[int, bool, str]:
  """Checks `data_dir` (created, locked by the caller) and where to record.

  Returns:
    The first new episode id, whether to mark the recording as made by
    `record` (not when appending to a recording made otherwise), and the
    directory EnvLogger writes to: `data_dir`, or its staging folder when
    overwriting a recording.
  """
  if not files.has_recording(data_dir):
    return 0, True, data_dir
  if if_exists == 'overwrite':
    target = staging.staging_dir(data_dir)
    os.makedirs(target)
    return 0, True, target
  if if_exists == 'append':
    return (*_inspect_existing(envlogger, data_dir, env, metadata), data_dir)
  raise FileExistsError(
      f'`data_dir` {data_dir} already holds an EnvLogger recording. Pass '
      "if_exists='overwrite' to replace it, if_exists='append' to add "
      'episodes to it, or choose another directory.')


def _make_data_dir(data_dir: str) -> None:
  if os.path.exists(data_dir) and not os.path.isdir(data_dir):
    raise NotADirectoryError(
        f'`data_dir` {data_dir} is a file, not a directory.')
  os.makedirs(data_dir, exist_ok=True)
  if not os.access(data_dir, os.W_OK):
    raise PermissionError(f'`data_dir` {data_dir} is not writable.')


def seed_run(env: dm_env.Environment, policy: Policy, seed: int) -> None:
  """Calls ``env.seed(seed)`` (required) and ``policy.seed(seed + 1)`` (if it has one).

  Example:
    >>> from rlds_lite import envs
    >>> env = envs.make('catch', seed=0)
    >>> seed_run(env, env.expert_policy, 3)
  """
  if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
    raise TypeError(f'`seed` must be an int or None, got {seed!r}.')
  if seed < 0:
    raise ValueError(f'`seed` must be >= 0, got {seed}.')
  env_seed = getattr(env, 'seed', None)
  if not callable(env_seed):
    raise TypeError(
        f'`seed` was given but the environment {type(env).__name__} has no '
        'seed(int) method; seed it yourself and pass seed=None.')
  env_seed(int(seed))
  policy_seed = getattr(policy, 'seed', None)
  if callable(policy_seed):
    policy_seed(int(seed) + 1)


def check_run_args(env: Any, policy: Any, num_episodes: Any) -> None:
  """A `dm_env.Environment`, a callable policy and a positive episode count, else one clear error.

  Example:
    >>> from rlds_lite import envs
    >>> check_run_args(envs.make('catch'), print, 0)
    Traceback (most recent call last):
    ...
    ValueError: `num_episodes` must be a positive int, got 0.
  """
  if not isinstance(env, dm_env.Environment):
    raise TypeError(
        f'`env` must be a dm_env.Environment, got {type(env).__name__}.')
  if not callable(policy):
    raise TypeError(
        f'`policy` must be callable as policy(timestep) -> action, got '
        f'{policy!r}.')
  if (isinstance(num_episodes, bool) or
      not isinstance(num_episodes, (int, np.integer)) or num_episodes < 1):
    raise ValueError(
        f'`num_episodes` must be a positive int, got {num_episodes!r}.')


def _check_record_args(env: Any, policy: Any, num_episodes: Any,
                       callbacks: Mapping[str, Any], metadata: Any,
                       if_exists: str) -> None:
  check_run_args(env, policy, num_episodes)
  for name, fn in callbacks.items():
    if fn is not None and not callable(fn):
      raise TypeError(f'`{name}` must be callable or None, got {fn!r}.')
  if metadata is not None and not isinstance(metadata, collections.abc.Mapping):
    raise TypeError(f'`metadata` must be a dict or None, got {metadata!r}.')
  for key in ('environment_specs', RECORDER_KEY):
    if metadata and key in metadata:
      raise ValueError(
          f'`metadata` key {key!r} is reserved (EnvLogger stores the '
          'environment specs and rlds_lite its marker there).')
  if if_exists not in IF_EXISTS:
    raise ValueError(f'`if_exists` must be one of {list(IF_EXISTS)}, got '
                     f'{if_exists!r}.')


def _old_keywords(if_exists: str, options: Optional[RecordingOptions],
                  legacy: Dict[str, Any]) -> Tuple[str, RecordingOptions]:
  """``if_exists`` and the options, from the keywords of before too.

  ``overwrite=``, ``append=``, ``compression=`` and ``flush_every_episodes=``
  still work, warning once each (``DeprecationWarning``).
  """
  unknown = sorted(set(legacy) - {'overwrite', 'append', 'compression',
                                  'flush_every_episodes'})
  if unknown:
    raise TypeError(f'record() got an unexpected keyword argument '
                    f'{unknown[0]!r}')
  for key in sorted(legacy):
    new = (f"if_exists='{key}'" if key in ('overwrite', 'append') else
           f'options=RecordingOptions({key}=...)')
    option_objects.warn_once(
        ('record', key), f'record: {key}= is now {new}; the old keyword will '
        'go in a later release.')
  overwrite, append = legacy.pop('overwrite', False), legacy.pop('append', False)
  if overwrite and append:
    raise ValueError('Pass at most one of `overwrite` and `append`.')
  if (overwrite or append) and if_exists != 'error':
    raise TypeError('record: pass if_exists= only, not overwrite=/append=.')
  if overwrite or append:
    if_exists = 'overwrite' if overwrite else 'append'
  if legacy and options is not None:
    raise TypeError(f'record: pass {sorted(legacy)} in '
                    'options=RecordingOptions(...), not beside it.')
  return if_exists, options or RecordingOptions(**legacy)


def record(env: dm_env.Environment,
           policy: Policy,
           data_dir: PathLike,
           num_episodes: int,
           *,
           seed: Optional[int] = None,
           if_exists: str = 'error',
           metadata: Optional[Mapping[str, Any]] = None,
           episode_metadata_fn: Optional[MetadataFn] = None,
           step_metadata_fn: Optional[MetadataFn] = None,
           options: Optional[RecordingOptions] = None,
           progress: bool = True,
           **legacy: Any) -> RecordingSummary:
  """Runs `policy` in `env` for `num_episodes` episodes, recording with EnvLogger.

  Each episode is a `reset()` followed by `step(policy(timestep))` until a
  LAST timestep; actions are cast to the action spec's dtype. Every episode's
  metadata holds `episode_id` (from 0, continuing when appending) merged with
  `episode_metadata_fn`'s dict. `data_dir` is created if missing; `env` is
  not closed. Files are flushed as episodes start (same seed, same bytes).

  Args:
    env: A `dm_env.Environment` whose episodes end (LAST) by themselves.
    policy: `policy(timestep) -> action`, called on every non-LAST timestep.
    data_dir: Directory of the recording; created if missing.
    num_episodes: Number of episodes to record (>= 1).
    seed: If given, calls `env.seed(seed)` (required) and `policy.seed(seed
      + 1)` (if the policy has one), so the recording is reproducible.
    if_exists: For a recording already in `data_dir`: ``'error'``,
      ``'append'`` (a new writer folder; the specs must match, `metadata` if
      given must hold the stored values) or ``'overwrite'`` (EnvLogger's
      files replaced once the new recording is complete).
    metadata: Optional dataset-level dict stored in `metadata.riegeli`.
    episode_metadata_fn: Optional `fn(timestep, action, env) -> dict | None`
      called after the reset and every step; its dicts are merged (later
      values win) into the episode's metadata.
    step_metadata_fn: Optional `fn(timestep, action, env) -> dict | None`
      for every timestep, the reset one included; stored with it (RLDS step
      metadata), the same keys every time.
    options: A `RecordingOptions` (compression, flush interval).
    progress: Shows a tqdm progress bar over episodes.

  Returns:
    A `RecordingSummary`.

  Example:
    >>> import tempfile
    >>> from rlds_lite import envs
    >>> env = envs.make('reach', seed=0)
    >>> tmp = tempfile.TemporaryDirectory()
    >>> summary = record(
    ...     env, envs.random_policy(env.action_spec()), tmp.name, 3, seed=7,
    ...     episode_metadata_fn=lambda ts, action, env: {'policy': 'random'},
    ...     progress=False)
    >>> summary.episode_ids, summary.episode_lengths
    ((0, 1, 2), (51, 51, 51))
    >>> record(env, envs.random_policy(env.action_spec()), tmp.name, 1,
    ...        if_exists='append', progress=False).episode_ids
    (3,)
    >>> tmp.cleanup()
  """
  if_exists, options = _old_keywords(if_exists, options, legacy)
  _check_record_args(
      env, policy, num_episodes,
      {'episode_metadata_fn': episode_metadata_fn,
       'step_metadata_fn': step_metadata_fn}, metadata, if_exists)
  envlogger = import_envlogger()
  data_dir = os.path.abspath(os.fspath(data_dir))
  _make_data_dir(data_dir)
  with staging.recorder_lock(data_dir):
    staging.clean_up(data_dir)  # What an interrupted overwrite left.
    first_id, marked, target = _prepare_data_dir(
        envlogger, data_dir, env, if_exists, metadata)
    if seed is not None:
      seed_run(env, policy, seed)
    dataset_metadata = dict(metadata or {})
    if marked:
      dataset_metadata[RECORDER_KEY] = 'rlds_lite.envlogger.record'
    logger_args = dict(
        data_directory=target, metadata=dataset_metadata,
        flush_scheduler=_FlushAtResets(int(options.flush_every_episodes)),
        writer_options=COMPRESSIONS[options.compression])
    try:
      ids, lengths, returns = _record_episodes(
          envlogger.EnvLogger, env, policy,
          range(first_id, first_id + int(num_episodes)),
          _Callbacks(env, episode_metadata_fn, step_metadata_fn,
                     _codec_module()), logger_args, progress)
    except BaseException:
      if target != data_dir:
        staging.clean_up(data_dir)  # Not complete: the old one stays.
      raise
    if target != data_dir:
      staging.mark_complete(data_dir)
      staging.clean_up(data_dir)  # Swaps the new recording in.
  return RecordingSummary(
      data_dir=data_dir, num_episodes=len(ids), num_steps=sum(lengths),
      episode_ids=tuple(ids), episode_lengths=tuple(lengths),
      returns=tuple(returns))


def _codec_module() -> types.ModuleType:
  from envlogger.converters import codec  # pylint: disable=g-import-not-at-top
  return codec


def _record_episodes(env_logger: Callable[..., Any], env: dm_env.Environment,
                     policy: Policy, episode_ids: Sequence[int],
                     callbacks: _Callbacks, logger_args: Dict[str, Any],
                     progress: bool
                     ) -> Tuple[List[int], List[int], List[float]]:
  """Records the episodes with ``env_logger(env, **logger_args)``.

  Returns:
    The episode ids, lengths (timesteps) and returns.
  """
  action_spec = env.action_spec()
  ids, lengths, returns = [], [], []
  total_return = 0.0
  with env_logger(
      _KeepOpen(env), episode_fn=callbacks.episode_fn,
      step_fn=callbacks.step_fn if callbacks.has_step_fn else None,
      **logger_args) as logged, tqdm.tqdm(
          total=len(episode_ids), unit='episode', disable=not progress,
          desc='Recording') as bar:
    for episode_id in episode_ids:
      callbacks.start_episode(episode_id)
      timestep = logged.reset()
      rewards = []
      while not timestep.last():
        timestep = logged.step(conform_action(policy(timestep), action_spec))
        rewards.append(timestep.reward)
      ids.append(episode_id)
      lengths.append(len(rewards) + 1)
      returns.append(episode_return(rewards))
      total_return += returns[-1]
      # Drawn with the count, at most every tqdm mininterval: not a redraw
      # (and a mean over all returns) per episode.
      bar.set_postfix(mean_return=f'{total_return / len(returns):.3g}',
                      refresh=False)
      bar.update(1)
  return ids, lengths, returns
