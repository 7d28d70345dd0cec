"""The frames of the LeRobot fixtures (tests/convert/fixtures/lerobot/).

`tests/convert/fixtures/make_lerobot_fixtures.py` feeds these frames to
lerobot's own writer (``LeRobotDataset.create`` / ``add_frame`` /
``save_episode``); the tests compare what `rlds_lite.convert.lerobot` reads
back with the same frames. NumPy only: importable without lerobot.
"""

from typing import Any, Dict, List, Tuple

import numpy as np

FPS = 10

FIXTURES: Dict[str, Dict[str, Any]] = {
    # lerobot 0.4.4, one video camera, one data/video/episodes file.
    'v30_video': {'episodes': [(5, 'pick'), (7, 'place'), (4, 'pick')],
                  'cameras': {'observation.images.front': 'video'},
                  'extras': False},
    # lerobot 0.4.4, a video and an image camera, 2-D/int32/string/float64
    # features, files rolled after every episode and chunks of two files.
    'v30_multifile': {'episodes': [(3, 'pick'), (2, 'place'), (4, 'pick'),
                                   (2, 'stack')],
                      'cameras': {'observation.images.front': 'video',
                                  'observation.images.wrist': 'image'},
                      'extras': True},
    # lerobot 0.3.3 (LeRobotDataset v2.1): one file per episode.
    'v21_video': {'episodes': [(5, 'pick'), (7, 'place'), (4, 'pick')],
                  'cameras': {'observation.images.front': 'video'},
                  'extras': False},
}

CAMERA_SHAPES = {'observation.images.front': (24, 32, 3),
                 'observation.images.wrist': (16, 16, 3)}


def features(name: str) -> Dict[str, Dict[str, Any]]:
  """The LeRobot features of fixture ``name`` (as given to lerobot)."""
  spec = FIXTURES[name]
  out = {
      'observation.state': {'dtype': 'float32', 'shape': (3,),
                            'names': ['x', 'y', 'z']},
      'action': {'dtype': 'float64' if spec['extras'] else 'float32',
                 'shape': (2,), 'names': None},
  }
  for key, kind in spec['cameras'].items():
    out[key] = {'dtype': kind, 'shape': CAMERA_SHAPES[key],
                'names': ['height', 'width', 'channels']}
  out['next.reward'] = {'dtype': 'float32', 'shape': (1,), 'names': None}
  if spec['extras']:
    out['next.success'] = {'dtype': 'bool', 'shape': (1,), 'names': None}
    out['observation.grid'] = {'dtype': 'float32', 'shape': (2, 3),
                               'names': None}
    out['observation.flag'] = {'dtype': 'int32', 'shape': (1,),
                               'names': None}
    out['note'] = {'dtype': 'string', 'shape': (1,), 'names': None}
  else:
    out['next.done'] = {'dtype': 'bool', 'shape': (1,), 'names': None}
  return out


def image(key: str, episode: int, frame: int) -> np.ndarray:
  """A smooth frame (video codecs keep it within a few levels)."""
  height, width, _ = CAMERA_SHAPES[key]
  out = np.zeros((height, width, 3), np.uint8)
  out[..., 0] = 20 * frame + 10
  out[..., 1] = (np.arange(width) * (200 // width))[None, :]
  out[..., 2] = 60 + 40 * episode
  return out


def episode_frames(name: str, episode: int) -> Tuple[List[Dict[str, Any]], str]:
  """The frames (lerobot ``add_frame`` dicts without the task) and the task."""
  spec = FIXTURES[name]
  length, task = spec['episodes'][episode]
  rng = np.random.default_rng(100 * episode + len(name))
  frames = []
  for i in range(length):
    frame = {
        'observation.state': rng.normal(size=3).astype(np.float32),
        'action': rng.normal(size=2).astype(
            np.float64 if spec['extras'] else np.float32),
        'next.reward': np.array([0.5 * i], np.float32),
    }
    for key in spec['cameras']:
      frame[key] = image(key, episode, i)
    if spec['extras']:
      frame['next.success'] = np.array([i == length - 1 and episode % 2 == 0])
      frame['observation.grid'] = np.full((2, 3), i + episode, np.float32)
      frame['observation.flag'] = np.array([i * 3 - episode], np.int32)
      frame['note'] = f'e{episode}f{i}'
    else:
      frame['next.done'] = np.array([i == length - 1])
    frames.append(frame)
  return frames, task
