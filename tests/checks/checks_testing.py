"""Datasets for the validation, video and CLI tests of rlds_lite.checks."""

import os
import subprocess
import sys
from typing import Dict, List

import numpy as np

from rlds_lite import tfds as rlds_tfds
from rlds_lite.envs import registry

IMAGE_KEY = 'observation/image'
HEIGHT, WIDTH = 16, 12


def flags(length: int, terminal: bool = True) -> Dict[str, np.ndarray]:
  index = np.arange(length)
  return {'is_first': index == 0, 'is_last': index == length - 1,
          'is_terminal': (index == length - 1) & terminal}


def steps(length: int, terminal: bool = True, obs_dim: int = 2,
          seed: int = 0) -> Dict[str, np.ndarray]:
  """A valid episode's columnar steps; last-step action/reward/discount are 0."""
  rng = np.random.default_rng(seed)
  reward = rng.normal(size=length).astype(np.float32)
  discount = np.ones(length, np.float32)
  action = rng.integers(0, 3, size=length)
  reward[-1:] = 0
  discount[-1:] = 0
  action[-1:] = 0
  return {'observation': rng.normal(size=(length, obs_dim)).astype(np.float32),
          'action': action,
          'reward': reward, 'discount': discount, **flags(length, terminal)}


def catch_episodes(num_episodes: int,
                   seed: int = 0) -> List[Dict[str, np.ndarray]]:
  """Expert Catch episodes with uint8 [HEIGHT, WIDTH, 3] image observations."""
  env = registry.make('catch_pixels', seed=seed, height=HEIGHT, width=WIDTH)
  episodes = []
  for _ in range(num_episodes):
    timestep = env.reset()
    images, actions, rewards = [timestep.observation], [], []
    while not timestep.last():
      action = env.expert_policy(timestep)
      timestep = env.step(action)
      actions.append(action)
      rewards.append(timestep.reward)
      images.append(timestep.observation)
    length = len(images)
    episodes.append({
        'observation': {'image': np.stack(images)},
        'action': np.asarray(actions + [0], np.int64),
        'reward': np.asarray(rewards + [0.0], np.float32),
        **flags(length)})
  return episodes


def write_catch(data_dir: str, episodes: List[Dict[str, np.ndarray]],
                name: str = 'catch_images') -> str:
  """Writes ``episodes`` (flags kept as given) as a TFDS dataset; its path."""
  features = {'steps': {
      'observation': {'image': episodes[0]['observation']['image'][0]},
      'action': np.int64(0), 'reward': np.float32(0), 'is_terminal': True}}
  with rlds_tfds.EpisodeWriter(data_dir, name, features) as writer:
    for episode in episodes:
      writer.add_episode({'steps': episode})
  return writer.path


def run_cli(*args: str) -> subprocess.CompletedProcess:
  """``python -m rlds_lite.cli ARGS`` as a user runs it."""
  env = {**os.environ, 'TF_CPP_MIN_LOG_LEVEL': '2'}
  return subprocess.run([sys.executable, '-m', 'rlds_lite.cli', *args],
                        capture_output=True, text=True, timeout=600,
                        check=False, env=env)


def own_stderr_lines(stderr: str) -> List[str]:
  """stderr lines that are not TensorFlow's native start-up logs."""
  return [line for line in stderr.splitlines()
          if line.strip() and not line.startswith(('I0000', 'W0000', 'E0000'))
          and not line.startswith('WARNING: All log messages before absl')
          and 'rebuild TensorFlow with the appropriate compiler' not in line]
