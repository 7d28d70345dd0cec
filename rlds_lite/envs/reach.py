"""Reach: a seeded continuous-control point mass that must reach a goal.

Example:
  >>> from rlds_lite.envs import reach
  >>> env = reach.Reach(seed=0)
  >>> timestep = env.reset()
  >>> timestep.observation.shape, timestep.observation.dtype
  ((6,), dtype('float32'))
  >>> steps = 0
  >>> while not timestep.last():
  ...   timestep = env.step(env.expert_policy(timestep))
  ...   steps += 1
  >>> timestep.discount.item(), steps < env.time_limit
  (0.0, True)
"""

from typing import Optional

import dm_env
from dm_env import specs
import numpy as np

__all__ = ['Reach']

_ARENA = 1.0
_START_RANGE = 0.8


class Reach(dm_env.Environment):
  """Point mass pushed by a 2-D force; terminates at the goal, truncates at a time limit.

  Observation `state` is `[x, y, vx, vy, goal_x, goal_y]`; the reward is minus the
  distance to the goal; forces outside `[-1, 1]` are clipped.

  Args:
    time_limit: Steps after which an episode is truncated (>= 1).
    goal_radius: Distance to the goal that ends the episode (> 0).
    damping: Fraction of the velocity lost each step, in `[0, 1]`.
    force_scale: Velocity change per unit of force (> 0).
    seed: Seed of the start and goal positions; `None` for a random seed.

  Example:
    >>> env = Reach(time_limit=2, seed=0)
    >>> _ = env.reset()
    >>> [env.step(np.zeros(2, np.float32)).step_type.name for _ in range(2)]
    ['MID', 'LAST']
    >>> env.step(np.zeros(2, np.float32)).step_type.name
    'FIRST'
  """

  def __init__(self, time_limit: int = 50, goal_radius: float = 0.05,
               damping: float = 0.2, force_scale: float = 0.05,
               seed: Optional[int] = None):
    """Creates the environment (see the class for the arguments)."""
    if isinstance(time_limit, bool) or not isinstance(time_limit,
                                                      (int, np.integer)):
      raise TypeError(f'`time_limit` must be an int, got {time_limit!r}.')
    if time_limit < 1:
      raise ValueError(f'`time_limit` must be >= 1, got {time_limit}.')
    if not goal_radius > 0:
      raise ValueError(f'`goal_radius` must be > 0, got {goal_radius}.')
    if not 0 <= damping <= 1:
      raise ValueError(f'`damping` must be in [0, 1], got {damping}.')
    if not force_scale > 0:
      raise ValueError(f'`force_scale` must be > 0, got {force_scale}.')
    self._time_limit = int(time_limit)
    self._goal_radius = float(goal_radius)
    self._damping = float(damping)
    self._force_scale = float(force_scale)
    self._rng = np.random.default_rng(seed)
    self._position = np.zeros(2)
    self._velocity = np.zeros(2)
    self._goal = np.zeros(2)
    self._t = 0
    self._reset_next_step = True

  @property
  def time_limit(self) -> int:
    """Steps after which an episode is truncated."""
    return self._time_limit

  def seed(self, seed: Optional[int]) -> None:
    """Re-seeds the environment (`None`: random); the next `reset()` starts afresh.

    Example:
      >>> env = Reach(seed=5)
      >>> first = env.reset().observation
      >>> env.seed(5)
      >>> bool((env.reset().observation == first).all())
      True
    """
    self._rng = np.random.default_rng(seed)
    self._reset_next_step = True

  def reset(self) -> dm_env.TimeStep:
    """Starts an episode at rest, with start and goal at least 0.3 apart."""
    self._position = self._rng.uniform(-_START_RANGE, _START_RANGE, 2)
    self._goal = self._rng.uniform(-_START_RANGE, _START_RANGE, 2)
    while np.linalg.norm(self._goal - self._position) < 0.3:
      self._goal = self._rng.uniform(-_START_RANGE, _START_RANGE, 2)
    self._velocity = np.zeros(2)
    self._t = 0
    self._reset_next_step = False
    return dm_env.restart(self._observation())

  def step(self, action) -> dm_env.TimeStep:
    """Applies the force `action` (shape `[2]`, finite) for one step."""
    if self._reset_next_step:
      return self.reset()
    force = np.clip(self._parse_action(action), -1.0, 1.0)
    self._velocity = ((1.0 - self._damping) * self._velocity +
                      self._force_scale * force)
    position = self._position + self._velocity
    hit_wall = np.abs(position) > _ARENA
    self._velocity[hit_wall] = 0.0
    self._position = np.clip(position, -_ARENA, _ARENA)
    self._t += 1
    distance = float(np.linalg.norm(self._goal - self._position))
    reward = np.float64(-distance)
    observation = self._observation()
    if distance < self._goal_radius:
      self._reset_next_step = True
      return dm_env.TimeStep(dm_env.StepType.LAST, reward, np.float64(0.0),
                             observation)
    if self._t >= self._time_limit:
      self._reset_next_step = True
      return dm_env.truncation(reward, observation, np.float64(1.0))
    return dm_env.transition(reward, observation, np.float64(1.0))

  def _parse_action(self, action) -> np.ndarray:
    try:
      force = np.asarray(action, dtype=np.float64)
    except (TypeError, ValueError) as e:
      raise ValueError(
          f'Reach `action` must be a float array of shape [2]; got {action!r}.'
      ) from e
    if force.shape != (2,):
      raise ValueError(
          f'Reach `action` must have shape [2], got shape {force.shape}.')
    if not np.all(np.isfinite(force)):
      raise ValueError(f'Reach `action` must be finite, got {force.tolist()}.')
    return force

  def _observation(self) -> np.ndarray:
    return np.concatenate(
        [self._position, self._velocity, self._goal]).astype(np.float32)

  def observation_spec(self) -> specs.Array:
    """float32 `[6]` state named `state`."""
    return specs.Array((6,), np.float32, name='state')

  def action_spec(self) -> specs.BoundedArray:
    """float32 `[2]` force in `[-1, 1]` named `force`."""
    return specs.BoundedArray((2,), np.float32, minimum=-1.0, maximum=1.0,
                              name='force')

  def expert_policy(self, timestep: dm_env.TimeStep) -> np.ndarray:
    """Scripted expert: a PD controller toward the goal, from the observation.

    Example:
      >>> env = Reach(seed=0)
      >>> force = env.expert_policy(env.reset())
      >>> force.shape, force.dtype, bool(np.all(np.abs(force) <= 1))
      ((2,), dtype('float32'), True)
    """
    state = np.asarray(timestep.observation, np.float64)
    position, velocity, goal = state[0:2], state[2:4], state[4:6]
    force = 4.0 * (goal - position) - 8.0 * velocity
    return np.clip(force, -1.0, 1.0).astype(np.float32)
