"""Small, deterministic RLDS datasets made in memory, for demos, docs and tests."""

import os
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

import numpy as np
import tensorflow as tf

from rlds_lite import metadata
from rlds_lite import rlds_types
from rlds_lite.tfds import episode_writer
from rlds_lite.tfds import features as features_lib
from rlds_lite import envlogger
from rlds_lite import envs

GOAL_RADIUS = 0.1
"""Distance to the goal at which an episode terminates."""


def _one_episode(rng: np.random.Generator, min_length: int,
                 max_length: int) -> Dict[str, np.ndarray]:
  position = rng.uniform(-1, 1, size=2)
  goal = rng.uniform(-1, 1, size=2)
  skill = rng.uniform(0.0, 0.3)  # How much the policy heads for the goal.
  observations, actions, rewards = [], [], []
  terminal = False
  horizon = int(rng.integers(min_length, max_length + 1))
  for _ in range(horizon - 1):
    observations.append(np.concatenate([position, goal]))
    toward_goal = goal - position
    action = skill * toward_goal + (1 - skill) * rng.normal(0, 0.3, size=2)
    action = np.clip(action, -0.5, 0.5)
    position = position + action
    distance = np.linalg.norm(goal - position)
    actions.append(action)
    rewards.append(-distance)
    if distance < GOAL_RADIUS:
      terminal = True
      break
  observations.append(np.concatenate([position, goal]))
  actions.append(np.zeros(2))  # Invalid on the last step (RLDS).
  rewards.append(0.0)
  length = len(observations)
  discount = np.ones(length, np.float32)
  if terminal and length >= 2:
    discount[-2] = 0.0  # The transition into the terminal state.
  discount[-1] = 0.0  # Invalid on the last step; zero by convention.
  index = np.arange(length)
  return {
      rlds_types.OBSERVATION: np.asarray(observations, np.float32),
      rlds_types.ACTION: np.asarray(actions, np.float32),
      rlds_types.REWARD: np.asarray(rewards, np.float32),
      rlds_types.DISCOUNT: discount,
      rlds_types.IS_FIRST: index == 0,
      rlds_types.IS_LAST: index == length - 1,
      rlds_types.IS_TERMINAL: (index == length - 1) & terminal,
  }


def episode_arrays(num_episodes: int = 20,
                   min_length: int = 2,
                   max_length: int = 50,
                   seed: int = 0) -> List[Dict[str, np.ndarray]]:
  """The episodes as a list of dicts of NumPy ``[T, ...]`` arrays.

  Args:
    min_length, max_length: episode lengths in steps (>= 1); episodes that do not reach the
      goal first are truncated at a length drawn between them.
    seed: NumPy seed.

  Example:
    >>> eps = episode_arrays(num_episodes=2, min_length=1, max_length=1)
    >>> [len(e['reward']) for e in eps]
    [1, 1]
  """
  if not 1 <= min_length <= max_length:
    raise ValueError(
        f'need 1 <= min_length <= max_length, got {min_length}, {max_length}.')
  rng = np.random.default_rng(seed)
  return [_one_episode(rng, min_length, max_length) for _ in range(num_episodes)]


def episodes(num_episodes: int = 20,
             min_length: int = 2,
             max_length: int = 50,
             seed: int = 0,
             dense: bool = False) -> tf.data.Dataset:
  """The episodes as an RLDS ``tf.data.Dataset`` (nested, or dense steps), with ``episode_id``.

  Example:
    >>> ds = episodes(num_episodes=2, seed=1, dense=True)
    >>> [e['steps']['reward'].shape.rank for e in ds]
    [1, 1]
  """
  arrays = episode_arrays(num_episodes, min_length, max_length, seed)
  lengths = [len(e[rlds_types.REWARD]) for e in arrays]
  flat = {k: np.concatenate([e[k] for e in arrays]) if arrays else
          np.zeros((0,), np.float32) for k in (arrays[0] if arrays else {})}
  starts = np.cumsum([0] + lengths[:-1]).astype(np.int64)
  index = tf.data.Dataset.from_tensor_slices(
      (starts, np.asarray(lengths, np.int64), np.arange(num_episodes)))
  flat_tensors = {k: tf.constant(v) for k, v in flat.items()}

  def make_episode(start, length, episode_id):
    steps = {k: v[start:start + length] for k, v in flat_tensors.items()}
    if not dense:
      steps = tf.data.Dataset.from_tensor_slices(steps)
    return {rlds_types.STEPS: steps, metadata.EPISODE_ID: episode_id}

  return index.map(make_episode)


CAMERAS = {'image_primary': (256, 256), 'image_wrist': (128, 128)}
"""The cameras of ``camera_episodes`` by default (Octo's names and sizes)."""
INSTRUCTIONS = ('pick up the red block', 'open the drawer', 'push the cup left',
                'put the sponge in the bowl', 'close the drawer')
"""The language instructions of ``camera_episodes`` (one per episode)."""


def dataset(num_episodes: int = 20,
            min_length: int = 2,
            max_length: int = 50,
            seed: int = 0,
            *,
            data_dir: Optional[Union[str, os.PathLike]] = None,
            name: str = 'toy') -> str:
  """Writes ``episodes(...)`` as a TFDS dataset in ``data_dir`` (None: a temporary one); its dir.

  Example:
    >>> import rlds_lite
    >>> path = dataset(3, seed=0)
    >>> [int(e['episode_id']) for e in rlds_lite.load(path)]
    [0, 1, 2]
  """
  import tempfile  # pylint: disable=g-import-not-at-top
  return episode_writer.write_dataset(
      episodes(num_episodes, min_length, max_length, seed),
      os.fspath(data_dir) if data_dir else tempfile.mkdtemp(), name)


def camera_frames(rng: np.random.Generator, length: int,
                  size: Tuple[int, int]) -> np.ndarray:
  """``[length, h, w, 3]`` uint8 frames of one camera: a rendered table scene.

  Example:
    >>> camera_frames(np.random.default_rng(0), 2, (8, 6)).shape
    (2, 8, 6, 3)
  """
  height, width = size
  y, x = np.mgrid[0:height, 0:width].astype(np.float32)
  y, x = y / height, x / width
  base = rng.uniform(60, 200, 3)
  texture = np.sin(x * 40 + y * 7) * 6 + np.sin(y * 55) * 4
  table = np.stack([base[c] + 40 * x - 30 * y + texture for c in range(3)],
                   axis=-1)
  for _ in range(4):
    cx, cy = rng.uniform(0.15, 0.85, 2)
    radius = rng.uniform(0.05, 0.12)
    table[(x - cx) ** 2 + (y - cy) ** 2 < radius ** 2] = rng.uniform(0, 255, 3)
  phase = rng.uniform(0, 2 * np.pi)
  frames = np.empty((length, height, width, 3), np.uint8)
  for t in range(length):
    image = table.copy()
    gx = 0.5 + 0.35 * np.sin(t / 15.0 + phase)
    gy = 0.5 + 0.3 * np.cos(t / 11.0 + phase)
    image[(np.abs(x - gx) < 0.06) & (y < gy)] = (90, 90, 95)
    image += rng.normal(0, 3, image.shape)
    frames[t] = np.clip(image, 0, 255)
  return frames


def camera_episodes(num_episodes: int = 8,
                    length: int = 30,
                    cameras: Optional[Mapping[str, Tuple[int, int]]] = None,
                    state_dim: int = 8,
                    action_dim: int = 7,
                    seed: int = 0) -> Iterator[Dict[str, Any]]:
  """Robot-camera episodes as NumPy dicts (columnar steps), one at a time; odd ones truncated.

  ``cameras`` maps a camera name to ``(height, width)`` (default ``CAMERAS``).

  Example:
    >>> episode = next(camera_episodes(1, 3, cameras={'image': (8, 8)}))
    >>> episode['steps']['observation']['image'].shape
    (3, 8, 8, 3)
    >>> episode['steps']['language_instruction'][0].decode()
    'pick up the red block'
  """
  cameras = dict(CAMERAS if cameras is None else cameras)
  rng = np.random.default_rng(seed)
  for i in range(num_episodes):
    index = np.arange(length)
    terminal = i % 2 == 0
    discount = np.ones(length, np.float32)
    if terminal:
      discount[-1] = 0.0
    observation = {name: camera_frames(rng, length, size)
                   for name, size in cameras.items()}
    observation['state'] = rng.standard_normal(
        (length, state_dim)).astype(np.float32)
    yield {
        rlds_types.STEPS: {
            rlds_types.OBSERVATION: observation,
            rlds_types.ACTION: rng.uniform(
                -1, 1, (length, action_dim)).astype(np.float32),
            rlds_types.REWARD: (index == length - 1).astype(np.float32) *
                               terminal,
            rlds_types.DISCOUNT: discount,
            'language_instruction': np.array(
                [INSTRUCTIONS[i % len(INSTRUCTIONS)].encode()] * length,
                dtype=object),
            rlds_types.IS_FIRST: index == 0,
            rlds_types.IS_LAST: index == length - 1,
            rlds_types.IS_TERMINAL: (index == length - 1) & terminal,
        },
        metadata.EPISODE_ID: np.int64(i),
    }


def camera_features(cameras: Optional[Mapping[str, Tuple[int, int]]] = None,
                    state_dim: int = 8, action_dim: int = 7,
                    image_encoding: str = 'jpeg') -> Any:
  """The TFDS features of ``camera_episodes`` (JPEG cameras by default).

  Example:
    >>> features = camera_features({'image': (8, 8)})
    >>> features['steps'].feature['observation']['image'].encoding_format
    'jpeg'
  """
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  cameras = dict(CAMERAS if cameras is None else cameras)
  observation = {
      name: tfds.features.Image(shape=(h, w, 3), encoding_format=image_encoding)
      for name, (h, w) in cameras.items()}
  observation['state'] = tfds.features.Tensor(shape=(state_dim,),
                                              dtype=np.float32)
  return features_lib.rlds_features(
      {rlds_types.OBSERVATION: tfds.features.FeaturesDict(observation),
       rlds_types.ACTION: tfds.features.Tensor(shape=(action_dim,),
                                               dtype=np.float32),
       rlds_types.REWARD: np.float32,
       rlds_types.DISCOUNT: np.float32,
       'language_instruction': tfds.features.Text()},
      {metadata.EPISODE_ID: np.int64})


def camera_dataset(data_dir: Union[str, os.PathLike],
                   name: str = 'cameras',
                   num_episodes: int = 8,
                   length: int = 30,
                   cameras: Optional[Mapping[str, Tuple[int, int]]] = None,
                   *,
                   image_encoding: str = 'jpeg',
                   jpeg_quality: Optional[int] = None,
                   seed: int = 0) -> str:
  """Writes ``camera_episodes`` as a TFDS dataset in ``data_dir``; returns its dir.

  Args:
    num_episodes, length, cameras, seed: see ``camera_episodes``.
    image_encoding: ``'jpeg'`` or ``'png'``.
    jpeg_quality: JPEG quality (None: TFDS's 95).

  Example:
    >>> import tempfile, rlds_lite
    >>> path = camera_dataset(tempfile.mkdtemp(), num_episodes=2, length=3,
    ...                       cameras={'image': (16, 16)})
    >>> episode = next(iter(rlds_lite.load(path, dense=True)))
    >>> episode['steps']['observation']['image'].shape
    TensorShape([3, 16, 16, 3])
  """
  cameras = dict(CAMERAS if cameras is None else cameras)
  features = camera_features(cameras, image_encoding=image_encoding)
  options = episode_writer.FileOptions(jpeg_quality=jpeg_quality)
  with episode_writer.EpisodeWriter(data_dir, name, features,
                                    options=options) as writer:
    for episode in camera_episodes(num_episodes, length, cameras, seed=seed):
      writer.add_episode(episode)
  return writer.path


def catch_recording(directory: Optional[Union[str, os.PathLike]] = None,
                    num_episodes: int = 2, seed: int = 0) -> str:
  """Records Catch played by its expert with EnvLogger in ``directory`` (None: a temp dir); the dir.

  Example:
    >>> from rlds_lite.tfds.envlogger_episodes import read_rlds_episodes
    >>> recording = catch_recording(num_episodes=2)
    >>> [len(e['steps']['reward']) for _, e in read_rlds_episodes(recording)]
    [10, 10]
  """
  import tempfile  # pylint: disable=g-import-not-at-top
  directory = os.fspath(directory) if directory else tempfile.mkdtemp()
  env = envs.make('catch', seed=seed)
  envlogger.record(env, env.expert_policy, directory, num_episodes, seed=seed,
                   progress=False)
  return directory
