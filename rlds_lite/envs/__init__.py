"""Built-in dm_env environments for demos and tests: Catch, CatchPixels and Reach.

Example:
  >>> from rlds_lite import envs
  >>> env = envs.make('catch', seed=0)
  >>> timestep = env.reset()
  >>> while not timestep.last():
  ...   timestep = env.step(env.expert_policy(timestep))
  >>> timestep.reward.item()
  1.0
"""

from rlds_lite.envs.catch import Catch
from rlds_lite.envs.catch import CatchPixels
from rlds_lite.envs.policies import random_policy
from rlds_lite.envs.policies import RandomPolicy
from rlds_lite.envs.reach import Reach
from rlds_lite.envs.registry import make
from rlds_lite.envs.registry import names

__all__ = ['Catch', 'CatchPixels', 'RandomPolicy', 'Reach', 'make', 'names',
           'random_policy']
