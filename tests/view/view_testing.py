"""A small RLDS dataset with two cameras and language, for the viewer's tests.

The episodes are those of ``rlds_lite.synthetic`` (a point reaching a goal),
rendered by two cameras: ``front`` (the arena from above: the goal in green,
the point in red, its trail in grey) and ``wrist`` (a close-up that follows
the point). Each episode gets a language instruction (the same on
every step, as in Open X-Embodiment datasets) and an ``episode_id``.
"""

from typing import Any, Dict, Iterator, List

import numpy as np
import tensorflow_datasets as tfds

from rlds_lite import synthetic
from rlds_lite.tfds import episode_writer

INSTRUCTIONS = ('reach the green goal', 'move to the target',
                'go to the goal slowly')
ARENA = 2.2  # Half the width of the area the front camera sees.
WRIST = 0.6  # Half the width of the area the wrist camera sees.


def _disc(image: np.ndarray, grid_x: np.ndarray, grid_y: np.ndarray,
          center: np.ndarray, radius: float, color: List[int]) -> None:
  inside = np.square(grid_x - center[0]) + np.square(grid_y - center[1])
  image[inside <= radius * radius] = color


def _render(state: np.ndarray, trail: np.ndarray, size: int, half_width: float,
            center: np.ndarray) -> np.ndarray:
  """One RGB frame of the arena, ``half_width`` around ``center``."""
  axis = np.linspace(-half_width, half_width, size)
  grid_x, grid_y = np.meshgrid(axis + center[0], -axis + center[1])
  image = np.full((size, size, 3), 240, np.uint8)
  outside = (np.abs(grid_x) > 2) | (np.abs(grid_y) > 2)
  image[outside] = [70, 74, 84]
  checker = ((np.floor(grid_x * 2) + np.floor(grid_y * 2)) % 2 == 0) & ~outside
  image[checker] = [224, 226, 232]
  scale = half_width / ARENA
  for point in trail:
    _disc(image, grid_x, grid_y, point, 0.035 * scale, [120, 130, 150])
  _disc(image, grid_x, grid_y, state[2:], 0.16 * scale, [40, 170, 80])
  _disc(image, grid_x, grid_y, state[:2], 0.1 * scale, [220, 50, 40])
  return image


def camera_episodes(num_episodes: int = 12, max_length: int = 30,
                    size: int = 64, seed: int = 0) -> Iterator[Dict[str, Any]]:
  """Episodes (columnar ``steps``) with ``front`` and ``wrist`` cameras."""
  episodes = synthetic.episode_arrays(num_episodes, min_length=2,
                                      max_length=max_length, seed=seed)
  for index, arrays in enumerate(episodes):
    states = arrays['observation']
    front = np.stack([_render(s, states[:t], size, ARENA, np.zeros(2))
                      for t, s in enumerate(states)])
    wrist = np.stack([_render(s, states[:t], size, WRIST, s[:2])
                      for t, s in enumerate(states)])
    length = len(states)
    instruction = INSTRUCTIONS[index % len(INSTRUCTIONS)]
    steps = {k: v for k, v in arrays.items() if k != 'observation'}
    steps['observation'] = {'front': front, 'wrist': wrist, 'state': states}
    steps['language_instruction'] = np.array([instruction] * length,
                                             dtype=object)
    yield {'steps': steps, 'episode_id': np.int64(100 + index)}


def features(size: int) -> Dict[str, Any]:
  image = tfds.features.Image(shape=(size, size, 3), encoding_format='png')
  return {
      'steps': {
          'observation': {
              'front': image,
              'wrist': image,
              'state': tfds.features.Tensor(shape=(4,), dtype=np.float32),
          },
          'action': tfds.features.Tensor(shape=(2,), dtype=np.float32),
          'reward': tfds.features.Scalar(dtype=np.float32),
          'discount': tfds.features.Scalar(dtype=np.float32),
          'language_instruction': tfds.features.Text(),
      },
      'episode_id': tfds.features.Scalar(dtype=np.int64),
  }


def write_camera_dataset(data_dir: str, num_episodes: int = 12,
                         max_length: int = 30, size: int = 64,
                         seed: int = 0, name: str = 'cameras',
                         max_episodes_per_file: int = 1000) -> str:
  """Writes `camera_episodes` as a TFDS dataset; returns its directory."""
  with episode_writer.EpisodeWriter(
      data_dir, name, features(size),
      max_episodes_per_file=max_episodes_per_file) as writer:
    for episode in camera_episodes(num_episodes, max_length, size, seed):
      writer.add_episode(episode)
  return writer.path




def expected_rows(episodes) -> list:
  """Length, return, ending and instruction of each episode (NumPy reference)."""
  rows = []
  for episode in episodes:
    steps = episode['steps']
    reward = np.asarray(steps['reward'], np.float64)
    valid = ~np.asarray(steps['is_last'], bool)
    rows.append({'length': len(reward), 'return': float(reward[valid].sum()),
                 'terminated': bool(steps['is_terminal'][-1]),
                 'instructions': sorted(set(steps['language_instruction'])),
                 'episode_id': int(episode['episode_id'])})
  return rows
