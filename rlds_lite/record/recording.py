"""`record`: a policy acting in a Gymnasium env (or vector env), written as an RLDS dataset."""

import dataclasses
from typing import Any, Callable, Dict, Optional, Tuple

import gymnasium
import numpy as np

from rlds_lite.record import collector
from rlds_lite.record import episodes as episodes_lib
from rlds_lite.record import vector as vector_lib
from rlds_lite.tfds import episode_writer

__all__ = ['RecordSummary', 'record']

Policy = Callable[[Any], Any]


@dataclasses.dataclass(frozen=True)
class RecordSummary:
  """What `record` wrote.

  Attributes:
    path: the dataset version directory (``out_dir/1.0.0``).
    seed: the base seed (drawn when none was given): episode ``k`` reset with ``seed + k``.
    episode_lengths: RLDS steps per episode, in the order written (actions + 1).
    returns: the sum of each episode's rewards.
  """
  path: str
  seed: int
  episode_lengths: Tuple[int, ...]
  returns: Tuple[float, ...]

  @property
  def num_episodes(self) -> int:
    """Episodes written."""
    return len(self.episode_lengths)


def _check_count(num_episodes: Any) -> int:
  if (isinstance(num_episodes, bool) or
      not isinstance(num_episodes, (int, np.integer)) or num_episodes < 1):
    raise ValueError('record: num_episodes must be a positive int, got '
                     f'{num_episodes!r}.')
  return int(num_episodes)


def _record_single(env: gymnasium.Env, policy: Policy,
                   recorder: collector.Recorder, num_episodes: int, seed: int,
                   options: Optional[Dict[str, Any]]) -> None:
  for k in range(num_episodes):
    observation, info = env.reset(seed=seed + k, options=options)
    episode_id, buffer = recorder.start(observation, info, seed=seed + k,
                                        options=options)
    while True:
      action = policy(observation)
      observation, reward, terminated, truncated, info = env.step(action)
      buffer.add(action, observation, reward, info)
      if terminated or truncated:
        recorder.finish(buffer, episode_id, bool(terminated))
        break


def record(env: Any, policy: Optional[Policy], out_dir: Any, *,
           num_episodes: int, seed: Optional[int] = None,
           record_infos: episodes_lib.InfosLike = False,
           reset_options: Optional[Dict[str, Any]] = None,
           if_exists: str = 'error', publish_every: Optional[int] = 100,
           options: Optional[episode_writer.FileOptions] = None,
           card: Optional[episode_writer.DatasetCard] = None
           ) -> RecordSummary:
  """Records ``num_episodes`` episodes of ``policy`` in ``env`` into the RLDS dataset ``out_dir``.

  Args:
    env: a ``gymnasium.Env`` or a ``gymnasium.vector.VectorEnv`` (any autoreset mode).
    policy: observation -> action (a vector env: batched); None: the action space's samples.
    out_dir: the dataset directory, named like the dataset (``rlds_lite.load(out_dir)``).
    num_episodes: episodes to record (a vector env: the first to start).
    seed: episode ``k`` resets with ``seed + k`` (a vector env: see
      `rlds_lite.record.vector.record_vector`); None: a drawn one (in the summary).
    record_infos: False, True (every ``info`` entry) or the keys: step field ``infos``.
    reset_options: ``options`` of every reset (kept as JSON in episode metadata).
    if_exists, publish_every, options, card: see `DataCollector`.

  Returns:
    A `RecordSummary`; the env is left open.

  Example:
    >>> import os, tempfile, gymnasium, rlds_lite
    >>> out = os.path.join(tempfile.mkdtemp(), 'cartpole')
    >>> env = gymnasium.make('CartPole-v1')
    >>> summary = record(env, lambda obs: int(obs[2] > 0), out, num_episodes=2,
    ...                  seed=0)
    >>> [(int(e['seed']), len(e['steps']['reward']))
    ...  for e in rlds_lite.load(out, dense=True)] == [
    ...      (0, summary.episode_lengths[0]), (1, summary.episode_lengths[1])]
    True
  """
  num_episodes = _check_count(num_episodes)
  is_vector = isinstance(env, gymnasium.vector.VectorEnv)
  if not is_vector and not isinstance(env, gymnasium.Env):
    raise TypeError(
        f'record: env is a {type(env).__name__}, not a gymnasium.Env or '
        'gymnasium.vector.VectorEnv (record a dm_env with '
        'rlds_lite.envlogger.record).')
  if seed is None:
    seed = collector.random_seed() >> 1  # Room for seed + k in 63 bits.
  spaces = ((env.single_observation_space, env.single_action_space)
            if is_vector else (env.observation_space, env.action_space))
  recorder = collector.Recorder(
      *spaces, out_dir, record_infos=record_infos, if_exists=if_exists,
      options=options, card=card, publish_every=publish_every,
      vector=is_vector)
  if policy is None:
    env.action_space.seed(seed)
    policy = lambda unused_observation: env.action_space.sample()
  try:
    if is_vector:
      vector_lib.record_vector(env, policy, recorder, num_episodes, seed,
                               reset_options)
    else:
      _record_single(env, policy, recorder, num_episodes, seed, reset_options)
    path = recorder.close()
  except BaseException:
    recorder.abort()
    raise
  return RecordSummary(path, seed, tuple(recorder.lengths),
                       tuple(recorder.returns))
