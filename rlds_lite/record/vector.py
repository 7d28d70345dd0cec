"""A Gymnasium vector env recorded episode by episode, in each of its autoreset modes.

``NEXT_STEP`` (Gymnasium's default): the step after an end resets that sub-env (its action
is ignored, nothing is recorded for it). ``SAME_STEP``: the final observation and info come in
``info['final_obs']`` / ``info['final_info']``. ``DISABLED``: finished sub-envs are reset here
(``options['reset_mask']``), each with its own seed.
"""

from typing import Any, Callable, Dict, List, Optional

import numpy as np
import gymnasium
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import iterate

from rlds_lite.record import collector

__all__ = ['autoreset_mode', 'env_info', 'record_vector']

_FINAL = ('final_obs', 'final_info', '_final_obs', '_final_info')


def autoreset_mode(env: gymnasium.vector.VectorEnv) -> AutoresetMode:
  """The env's autoreset mode (``metadata['autoreset_mode']``; NEXT_STEP if unset).

  Example:
    >>> env = gymnasium.make_vec('CartPole-v1', 2, vectorization_mode='sync')
    >>> autoreset_mode(env)
    <AutoresetMode.NEXT_STEP: 'NextStep'>
  """
  mode = (env.metadata or {}).get('autoreset_mode', AutoresetMode.NEXT_STEP)
  return AutoresetMode(mode) if isinstance(mode, str) else mode


def env_info(infos: Dict[str, Any], index: int) -> Dict[str, Any]:
  """Sub-env ``index``'s info from a vector env's (entries its ``_key`` mask leaves out dropped).

  Example:
    >>> env_info({'x': np.array([1, 2]), '_x': np.array([False, True])}, 1)
    {'x': np.int64(2)}
  """
  out = {}
  for key, value in infos.items():
    if key.startswith('_') or key in _FINAL:
      continue
    mask = infos.get(f'_{key}')
    if mask is not None and not mask[index]:
      continue
    out[key] = (env_info(value, index) if isinstance(value, dict)
                else value[index])
  return out


class _Slots:
  """Each sub-env's open episode (or None), and how many episodes may still start."""

  def __init__(self, recorder: collector.Recorder, num_envs: int,
               num_episodes: int):
    self.recorder = recorder
    self.open: List[Optional[Any]] = [None] * num_envs
    self.to_start = num_episodes

  def start(self, index: int, observation: Any, info: Dict[str, Any],
            seed: Optional[int], options: Any) -> None:
    if self.to_start > 0:
      self.to_start -= 1
      self.open[index] = self.recorder.start(
          observation, info, seed=seed, options=options, env_index=index)

  def add(self, index: int, action: Any, observation: Any, reward: Any,
          info: Dict[str, Any]) -> None:
    if self.open[index] is not None:
      self.open[index][1].add(action, observation, reward, info)

  def end(self, index: int, terminated: bool) -> None:
    if self.open[index] is not None:
      episode_id, buffer = self.open[index]
      self.open[index] = None
      self.recorder.finish(buffer, episode_id, terminated)

  @property
  def busy(self) -> bool:
    return any(o is not None for o in self.open)


def _step_next(slots: _Slots, env: Any, actions: Any, returned: Any,
               resetting: np.ndarray) -> np.ndarray:
  """NEXT_STEP: sub-envs flagged ``resetting`` were just reset by this step."""
  observations, rewards, terminated, truncated, infos = returned
  done = np.logical_or(terminated, truncated)
  for i, (action, observation) in enumerate(zip(
      iterate(env.action_space, actions),
      iterate(env.observation_space, observations))):
    if resetting[i]:
      slots.start(i, observation, env_info(infos, i), None, None)
      continue
    slots.add(i, action, observation, rewards[i], env_info(infos, i))
    if done[i]:
      slots.end(i, bool(terminated[i]))
  return done


def _step_same(slots: _Slots, env: Any, actions: Any, returned: Any) -> None:
  """SAME_STEP: an ended sub-env's final step is in ``final_obs``/``final_info``."""
  observations, rewards, terminated, truncated, infos = returned
  for i, (action, observation) in enumerate(zip(
      iterate(env.action_space, actions),
      iterate(env.observation_space, observations))):
    if not (terminated[i] or truncated[i]):
      slots.add(i, action, observation, rewards[i], env_info(infos, i))
      continue
    final_info = env_info(infos.get('final_info', {}), i)
    slots.add(i, action, infos['final_obs'][i], rewards[i], final_info)
    slots.end(i, bool(terminated[i]))
    slots.start(i, observation, env_info(infos, i), None, None)


def _per_env_seeds(env: Any) -> bool:
  """Whether ``env.reset(seed=[...])`` seeds each sub-env (Gymnasium's Sync/Async envs)."""
  return isinstance(getattr(env, 'unwrapped', env),
                    (gymnasium.vector.SyncVectorEnv,
                     gymnasium.vector.AsyncVectorEnv))


def _reset_disabled(slots: _Slots, env: Any, done: np.ndarray,
                    seeds: Callable[[], int], options: Any) -> Any:
  """DISABLED: resets the ended sub-envs, each with the next seed; the observations."""
  mask = np.asarray(done, bool)
  chosen = [seeds() if m and _per_env_seeds(env) else None for m in mask]
  observations, infos = env.reset(
      seed=chosen if _per_env_seeds(env) else None,
      options={**(options or {}), 'reset_mask': mask})
  for i, observation in enumerate(iterate(env.observation_space,
                                          observations)):
    if mask[i]:
      slots.start(i, observation, env_info(infos, i), chosen[i], options)
  return observations


def record_vector(env: gymnasium.vector.VectorEnv, policy: Callable[[Any], Any],
                  recorder: collector.Recorder, num_episodes: int,
                  seed: int, options: Optional[Dict[str, Any]] = None) -> None:
  """Steps ``env`` until ``num_episodes`` episodes are written.

  The first ``num_episodes`` episodes to *start* are recorded (each sub-env's first ones,
  not the shortest), and the env steps until all of them end. ``env.reset(seed=seed)``
  seeds sub-env ``i`` of a Sync/Async env with ``seed + i`` (a batched env such as
  CartPole's own takes one seed: its episodes say ``seed``); later resets get
  ``seed + num_envs + k`` in DISABLED mode (Sync/Async envs), else no seed (``seed`` -1).
  """
  mode = autoreset_mode(env)
  num_envs = env.num_envs
  slots = _Slots(recorder, num_envs, num_episodes)
  counter = iter(range(seed + num_envs, 2 ** 63))
  # Sync/Async envs seed sub-env i with seed + i; a batched env, all with seed.
  seeds = [seed + i if _per_env_seeds(env) else seed for i in range(num_envs)]
  observations, infos = env.reset(seed=seed, options=options)
  for i, observation in enumerate(iterate(env.observation_space,
                                          observations)):
    slots.start(i, observation, env_info(infos, i), seeds[i], options)
  resetting = np.zeros(num_envs, bool)
  while slots.busy:
    actions = policy(observations)
    returned = env.step(actions)
    observations = returned[0]
    if mode == AutoresetMode.NEXT_STEP:
      resetting = _step_next(slots, env, actions, returned, resetting)
    elif mode == AutoresetMode.SAME_STEP:
      _step_same(slots, env, actions, returned)
    else:
      done = _step_next(slots, env, actions, returned,
                        np.zeros(num_envs, bool))
      if done.any() and slots.busy:
        observations = _reset_disabled(slots, env, done,
                                       lambda: next(counter), options)
