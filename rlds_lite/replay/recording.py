"""`record`: a dm_env agent's episodes added to a buffer in exactly `build_from_envlogger`'s RLDS alignment."""

import dataclasses
from typing import Any, Dict, List, Optional, Tuple

import dm_env
import numpy as np
import tensorflow as tf

from rlds_lite import rlds_names
from rlds_lite.envlogger import recording as envlogger_recording
from rlds_lite.tfds import envlogger_episodes

__all__ = ['record', 'RecordedEpisodes']


@dataclasses.dataclass(frozen=True)
class RecordedEpisodes:
  """What `record` added.

  Attributes:
    episode_lengths: RLDS steps per episode (timesteps, the reset one included).
    returns: undiscounted sum of rewards per episode (all reward leaves).
  """
  episode_lengths: Tuple[int, ...]
  returns: Tuple[float, ...]


def _env_specs(env: dm_env.Environment) -> Dict[str, Any]:
  return {'observation': env.observation_spec(), 'action': env.action_spec(),
          'reward': env.reward_spec(), 'discount': env.discount_spec()}


def _zeros(spec: Any) -> Any:
  return tf.nest.map_structure(lambda s: np.zeros(s.shape, s.dtype), spec)


def _run_episode(env: dm_env.Environment, policy: Any, specs: Dict[str, Any]
                 ) -> Tuple[Dict[str, Any], List[Any]]:
  """One episode's timesteps as EnvLogger logs them (``[T, ...]`` fields), and its rewards."""
  timestep = env.reset()
  timesteps, actions = [timestep], [_zeros(specs['action'])]  # The reset has no action.
  while not timestep.last():
    action = envlogger_recording.conform_action(policy(timestep), specs['action'])
    timestep = env.step(action)
    timesteps.append(timestep)
    actions.append(action)

  def stacked(values):
    return tf.nest.map_structure(lambda *leaves: np.stack(leaves), *values)

  rewards = [ts.reward for ts in timesteps[1:]]
  logged = {
      'observation': stacked([ts.observation for ts in timesteps]),
      'action': stacked(actions),
      'reward': stacked([_zeros(specs['reward'])] + rewards),
      'discount': stacked([_zeros(specs['discount'])] +
                          [ts.discount for ts in timesteps[1:]]),
      'step_type': np.array([int(ts.step_type) for ts in timesteps], np.uint8),
  }
  return logged, rewards


def record(env: dm_env.Environment, policy: Any, buffer: Any, num_episodes: int, *,
           seed: Optional[int] = None) -> RecordedEpisodes:
  """Runs ``policy`` in ``env`` for ``num_episodes`` episodes, adding each whole to ``buffer``.

  The steps are exactly those `rlds_lite.tfds.build_from_envlogger` writes
  for an EnvLogger recording of the same run (the same alignment code): step
  ``t`` holds ``o_t`` and the action ``a_t`` taken there with the reward and
  discount it brought; the last step holds the final observation with zero
  action, reward and discount, and ``is_terminal`` if the last discount is 0.

  Args:
    env: a `dm_env.Environment` whose episodes end (LAST) by themselves.
    policy: ``policy(timestep) -> action`` (cast to the action spec).
    buffer: a `ReplayBuffer` or an `Actor` (anything with ``add_episode``).
    num_episodes: episodes to run (>= 1).
    seed: if given, ``env.seed(seed)`` and ``policy.seed(seed + 1)`` first, as
      `rlds_lite.envlogger.record` does.

  Returns:
    A `RecordedEpisodes`.

  Example:
    >>> from rlds_lite import envs, replay
    >>> env = envs.make('catch', seed=0)
    >>> buffer = replay.ReplayBuffer(replay.MemoryStorage(100))
    >>> record(env, env.expert_policy, buffer, 2, seed=0)
    RecordedEpisodes(episode_lengths=(10, 10), returns=(1.0, 1.0))
    >>> buffer.storage.columns['reward'][:10].tolist()
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]
  """
  envlogger_recording.check_run_args(env, policy, num_episodes)
  if not callable(getattr(buffer, 'add_episode', None)):
    raise TypeError('record: buffer must be a ReplayBuffer or an Actor (with '
                    f'add_episode), got {type(buffer).__name__}.')
  if seed is not None:
    envlogger_recording.seed_run(env, policy, seed)
  specs = _env_specs(env)
  lengths, returns = [], []
  for i in range(int(num_episodes)):
    logged, rewards = _run_episode(env, policy, specs)
    steps = envlogger_episodes.rlds_episode(logged, specs, f'record: episode {i}')[
        rlds_names.STEPS]
    buffer.add_episode({rlds_names.STEPS: steps})
    lengths.append(len(logged['step_type']))
    returns.append(envlogger_recording.episode_return(rewards))
  return RecordedEpisodes(tuple(lengths), tuple(returns))

