"""The browser recorder's ENV: a built-in name, a Gymnasium id, or ``module:factory``, as a dm_env.

A Gymnasium env is adapted to dm_env (``terminated``: a LAST step with discount 0;
``truncated``: a LAST step with discount 1) so that EnvLogger can record it; its
``render()`` (``render_mode='rgb_array'``) gives the frames.
"""

import dataclasses
import importlib
from typing import Any, Callable, Optional, Union

import dm_env
from dm_env import specs as dm_specs
import gymnasium
from gymnasium import spaces as gym_spaces
import numpy as np

from rlds_lite import envs

__all__ = ['PlayedEnv', 'resolve', 'GymAsDmEnv']


@dataclasses.dataclass
class PlayedEnv:
  """An env ready to play: its label, the dm_env, its ``render`` and built-in key map name."""
  label: str
  env: dm_env.Environment
  render: Optional[Callable[[], Any]] = None
  builtin: Optional[str] = None


def _spec(space: Any, name: str) -> Any:
  if isinstance(space, gym_spaces.Discrete):
    return dm_specs.BoundedArray((), np.int64, int(space.start),
                                 int(space.start + space.n - 1), name=name)
  if isinstance(space, gym_spaces.Box):
    return dm_specs.BoundedArray(space.shape, space.dtype, space.low,
                                 space.high, name=name)
  raise ValueError(f'record: the Gymnasium {name} space {space} is not a Box '
                   'or Discrete; wrap the env (e.g. FlattenObservation) or '
                   'record it with rlds_lite.record.record.')


class GymAsDmEnv(dm_env.Environment):
  """A Gymnasium env as a dm_env (Box/Discrete spaces).

  Example:
    >>> env = GymAsDmEnv(gymnasium.make('CartPole-v1'))
    >>> env.reset().observation.shape, env.action_spec().maximum
    ((4,), array(1))
  """

  def __init__(self, env: Any):
    self.gym_env = env
    self._obs_spec = _spec(env.observation_space, 'observation')
    self._action_spec = _spec(env.action_space, 'action')
    self._dtype = self._obs_spec.dtype

  def _observation(self, value: Any) -> np.ndarray:
    return np.asarray(value, self._dtype)

  def reset(self) -> dm_env.TimeStep:
    observation, _ = self.gym_env.reset()
    return dm_env.restart(self._observation(observation))

  def step(self, action) -> dm_env.TimeStep:
    value = np.asarray(action)
    if isinstance(self.gym_env.action_space, gym_spaces.Discrete):
      value = int(value)
    observation, reward, terminated, truncated, _ = self.gym_env.step(value)
    observation = self._observation(observation)
    reward = np.float64(reward)
    if terminated:
      return dm_env.termination(reward, observation)
    if truncated:
      return dm_env.truncation(reward, observation)
    return dm_env.transition(reward, observation)

  def observation_spec(self):
    return self._obs_spec

  def action_spec(self):
    return self._action_spec

  def reward_spec(self):
    return dm_specs.Array((), np.float64, name='reward')

  def discount_spec(self):
    return dm_specs.BoundedArray((), np.float64, 0.0, 1.0, name='discount')


def _played(label: str, env: Any, builtin: Optional[str] = None) -> PlayedEnv:
  if isinstance(env, dm_env.Environment):
    return PlayedEnv(label, env, getattr(env, 'render', None), builtin)
  if isinstance(env, gymnasium.Env):
    render = env.render if env.render_mode == 'rgb_array' else None
    return PlayedEnv(label, GymAsDmEnv(env), render, builtin)
  raise TypeError(f'record: {label} made a {type(env).__name__}, not a dm_env '
                  'or Gymnasium environment.')


def resolve(env: Union[str, Callable[[], Any]], seed: Optional[int] = None
            ) -> PlayedEnv:
  """The `PlayedEnv` of ENV (a name, a Gymnasium id, ``module:factory``) or a factory.

  Example:
    >>> resolve('catch').builtin, resolve('CartPole-v1').render is not None
    ('catch', True)
    >>> resolve('no_such_env')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: record: unknown ENV 'no_such_env': not a built-in (catch, ...), a Gymnasium id or module:factory.
  """
  if callable(env):
    return _played(getattr(env, '__name__', 'env'), env())
  if not isinstance(env, str) or not env:
    raise TypeError(f'record: ENV must be a name or a factory, got {env!r}.')
  if env in envs.names():
    return _played(env, envs.make(env, seed=seed), env)
  if ':' in env:
    module_name, _, attribute = env.partition(':')
    try:
      factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as e:
      raise ValueError(f'record: cannot load ENV {env!r}: {e}.') from None
    return _played(env, factory())
  if env in gymnasium.registry:
    return _played(env, gymnasium.make(env, render_mode='rgb_array'))
  raise ValueError(f'record: unknown ENV {env!r}: not a built-in '
                   f'({", ".join(envs.names())}), a Gymnasium id or '
                   'module:factory.')
