"""Robot-camera datasets for the image benchmarks, written by TFDS's serializer (smooth or noisy frames).

``smooth``: ``rlds_lite.synthetic.camera_frames`` (a rendered table scene,
~25 KB per 256x256 + 128x128 step at JPEG q95). ``noisy``: the same scene
with a static per-episode texture and per-frame sensor noise, mostly in
luma as a camera's, for a real camera's entropy (~76 KB per such step).

Example:
  >>> import numpy as np
  >>> noisy_frames(np.random.default_rng(0), 2, (8, 6)).shape
  (2, 8, 6, 3)
"""

from typing import Any, Dict, Iterator, Mapping, Optional, Tuple

import numpy as np

FRAMES = ('noisy', 'smooth')
"""The kinds of camera frames (``--frames``)."""
TEXTURE_SIGMA = 20.0
"""The static texture of a scene (luma), std in levels of 255."""
NOISE_SIGMA = 28.0
"""Per-frame sensor noise (luma; chroma gets half of it), std in levels."""


def noisy_frames(rng: np.random.Generator, length: int,
                 size: Tuple[int, int]) -> np.ndarray:
  """``[length, h, w, 3]`` uint8 frames: the smooth scene, textured, noisy."""
  from rlds_lite import synthetic  # pylint: disable=g-import-not-at-top
  frames = synthetic.camera_frames(rng, length, size).astype(np.float32)
  height, width = size
  frames += rng.normal(0, TEXTURE_SIGMA, (height, width, 1)).astype(np.float32)
  frames += rng.normal(0, NOISE_SIGMA, frames.shape[:-1] + (1,)).astype(
      np.float32)
  frames += rng.normal(0, NOISE_SIGMA / 2, frames.shape).astype(np.float32)
  return np.clip(np.round(frames), 0, 255).astype(np.uint8)


def frames_fn(kind: str):
  """The frame generator of ``kind`` (one of ``FRAMES``)."""
  from rlds_lite import synthetic  # pylint: disable=g-import-not-at-top
  if kind not in FRAMES:
    raise ValueError(f'frames {kind!r}: expected one of {FRAMES}')
  return noisy_frames if kind == 'noisy' else synthetic.camera_frames


def episodes(num_episodes: int, steps: int,
             cameras: Mapping[str, Tuple[int, int]], frames: str, *,
             state_dim: Optional[int] = 8, action_dim: int = 7,
             language: bool = True, seed: int = 0
             ) -> Iterator[Dict[str, Any]]:
  """Camera episodes (columnar steps) as ``synthetic.camera_episodes``, of
  ``frames`` kind; ``state_dim`` None: no state (else ``state[0]`` is the episode's index), ``language``: an instruction."""
  from rlds_lite import synthetic  # pylint: disable=g-import-not-at-top
  make = frames_fn(frames)
  rng = np.random.default_rng(seed)
  for i in range(num_episodes):
    index = np.arange(steps)
    terminal = i % 2 == 0
    observation = {name: make(rng, steps, size)
                   for name, size in cameras.items()}
    if state_dim:
      observation['state'] = rng.standard_normal(
          (steps, state_dim)).astype(np.float32)
      observation['state'][:, 0] = i   # The episode, countable in any batch.
    step = {
        'observation': observation,
        'action': rng.uniform(-1, 1, (steps, action_dim)).astype(np.float32),
        'reward': ((index == steps - 1) & terminal).astype(np.float32),
        'discount': np.where((index == steps - 1) & terminal, 0.0,
                             1.0).astype(np.float32),
        'is_first': index == 0, 'is_last': index == steps - 1,
        'is_terminal': (index == steps - 1) & terminal}
    if language:
      text = synthetic.INSTRUCTIONS[i % len(synthetic.INSTRUCTIONS)].encode()
      step['language_instruction'] = np.array([text] * steps, dtype=object)
    yield {'steps': step, 'episode_id': np.int64(i)}


def features(cameras: Mapping[str, Tuple[int, int]], *,
             state_dim: Optional[int] = 8, action_dim: int = 7,
             language: bool = True) -> Any:
  """The TFDS features of ``episodes`` (JPEG cameras, TFDS's quality 95)."""
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  import tfds_fixtures  # pylint: disable=g-import-not-at-top
  observation = {
      name: tfds.features.Image(shape=(h, w, 3), encoding_format='jpeg')
      for name, (h, w) in cameras.items()}
  if state_dim:
    observation['state'] = tfds.features.Tensor(shape=(state_dim,),
                                                dtype=np.float32)
  step = {'observation': observation,
          'action': tfds.features.Tensor(shape=(action_dim,), dtype=np.float32),
          'reward': np.float32, 'discount': np.float32}
  if language:
    step['language_instruction'] = tfds.features.Text()
  return tfds_fixtures.rlds_features(step, {'episode_id': np.int64})


def build(data_dir: str, name: str, num_episodes: int, steps: int,
          cameras: Mapping[str, Tuple[int, int]], frames: str = 'smooth',
          **kwargs: Any) -> str:
  """Writes the dataset (once, to ``data_dir/name/1.0.0``); its directory.

  ``kwargs``: ``state_dim``, ``action_dim``, ``language``, ``seed`` of
  ``episodes`` (``seed`` not in ``features``).
  """
  import tfds_fixtures  # pylint: disable=g-import-not-at-top
  feature_kwargs = {k: v for k, v in kwargs.items() if k != 'seed'}
  frames_fn(frames)   # Checks the kind before anything is written.

  def make():
    return (features(cameras, **feature_kwargs),
            {'train': episodes(num_episodes, steps, cameras, frames,
                               **kwargs)})

  return tfds_fixtures.build_if_missing(data_dir, name, make)


def dir_bytes(path: str) -> int:
  """Bytes of the files under ``path``."""
  import os  # pylint: disable=g-import-not-at-top
  return sum(os.path.getsize(os.path.join(root, f))
             for root, _, files in os.walk(path) for f in files)
