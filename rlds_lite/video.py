"""Watch an episode: write an image field of its steps as a GIF or MP4."""

import math
import os
from typing import Any, List, Mapping, Optional, Sequence, Union

import numpy as np
import tensorflow as tf

from rlds_lite import gif
from rlds_lite import nest_paths
from rlds_lite import rlds_types

PathLike = Union[str, os.PathLike]
_BATCH = 256
_GAP = 2  # Pixels of grey between cameras side by side.
FORMATS = ('.gif', '.mp4')
MIN_HEIGHT = 128
"""`auto_scale` enlarges frames lower than this (pixels)."""


def _lookup(structure: Any, key: str) -> Any:
  """The leaf at ``key`` ('observation/image'), or None if there is none."""
  try:
    return nest_paths.get_path(structure, key)
  except KeyError:
    return None


def _is_image_like(shape: List[Any], dtype: tf.DType) -> bool:
  if not (dtype.is_integer or dtype.is_floating or dtype == tf.bool):
    return False
  return len(shape) == 2 or (len(shape) == 3 and shape[-1] in (1, 3, 4))


def image_fields(step_spec: Any) -> List[str]:
  """Paths of step fields that look like images (per-step rank 2 or 3).

  Example:
    >>> image_fields({'obs': tf.TensorSpec([8, 8, 3], tf.uint8),
    ...               'reward': tf.TensorSpec([], tf.float32)})
    ['obs']
  """
  return [path for path, leaf in nest_paths.flatten_with_paths(step_spec)
          if isinstance(leaf, tf.TensorSpec) and leaf.shape.rank is not None
          and _is_image_like(leaf.shape.as_list(), leaf.dtype)]


def _steps_spec(episode: Any) -> Any:
  """The per-step spec of an episode's steps (a Dataset or dense arrays)."""
  steps = episode
  if isinstance(episode, Mapping) and rlds_types.STEPS in episode:
    steps = episode[rlds_types.STEPS]
  if isinstance(steps, tf.data.Dataset):
    return steps.element_spec
  return tf.nest.map_structure(
      lambda v: tf.TensorSpec(np.shape(v)[1:], tf.as_dtype(np.asarray(
          v).dtype)), steps)


def camera_fields(episode: Any) -> List[str]:
  """The image fields shown by default: uint8 images, else any `image_fields`; KeyError if none.

  Example:
    >>> camera_fields({'steps': {
    ...     'observation': {'wrist': np.zeros((2, 4, 4, 3), np.uint8),
    ...                     'image': np.zeros((2, 8, 8, 3), np.uint8),
    ...                     'state': np.zeros((2, 3, 3), np.float32)}}})
    ['observation/image', 'observation/wrist']
  """
  spec = _steps_spec(episode)
  fields = image_fields(spec)
  if not fields:
    raise KeyError('the steps have no image field; all fields: '
                   f'{[p for p, _ in nest_paths.flatten_with_paths(spec)]}.')
  cameras = [path for path in fields
             if _lookup(spec, path).dtype == tf.uint8]
  return cameras or fields


def _unknown_key(key: str, step_spec: Any) -> KeyError:
  fields = [p for p, _ in nest_paths.flatten_with_paths(step_spec)]
  return KeyError(f'no step field {key!r}; image-like fields: '
                  f'{image_fields(step_spec)}, all fields: {fields}.')


def _step_values(episode: Any, key: str) -> np.ndarray:
  """The ``[T, ...]`` values of field ``key`` of an episode, as NumPy."""
  steps = episode
  if isinstance(episode, Mapping) and rlds_types.STEPS in episode:
    steps = episode[rlds_types.STEPS]
  if isinstance(steps, tf.data.Dataset):
    spec = steps.element_spec
    if not isinstance(_lookup(spec, key), tf.TensorSpec):
      raise _unknown_key(key, spec)
    chunks = list(steps.map(lambda step: _lookup(step, key)).batch(
        _BATCH).as_numpy_iterator())
    if not chunks:
      return np.zeros((0,) + tuple(_lookup(spec, key).shape), np.uint8)
    return np.concatenate(chunks)
  if not isinstance(steps, Mapping):
    raise TypeError('episode must be a dict with steps (a tf.data.Dataset or '
                    f'a dict of [T, ...] arrays); got {type(steps).__name__}.')
  values = _lookup(steps, key)
  if values is None or isinstance(values, Mapping):
    spec = tf.nest.map_structure(
        lambda v: tf.TensorSpec(np.shape(v)[1:], tf.as_dtype(np.asarray(
            v).dtype)), steps)
    raise _unknown_key(key, spec)
  return values.numpy() if isinstance(values, tf.Tensor) else np.asarray(values)


def to_rgb_frames(values: np.ndarray, key: str = 'frames') -> np.ndarray:
  """``[T, H, W, 3]`` uint8 frames from grayscale/RGB/RGBA images.

  Example:
    >>> to_rgb_frames(np.array([[[0.0, 1.0]]]))[0, 0].tolist()
    [[0, 0, 0], [255, 255, 255]]
  """
  values = np.asarray(values)
  if values.ndim == 3:
    values = values[..., None]
  if values.ndim != 4 or values.shape[-1] not in (1, 3, 4):
    raise ValueError(
        f'field {key!r} is not an image: per-step shape '
        f'{list(values.shape[1:])}; need [H, W], [H, W, 1], [H, W, 3] or '
        '[H, W, 4].')
  if values.shape[0] == 0:
    raise ValueError(f'field {key!r}: the episode has no steps.')
  if values.dtype == np.bool_:
    values = values.astype(np.uint8) * 255
  elif np.issubdtype(values.dtype, np.floating):
    if not np.all(np.isfinite(values)) or values.min() < 0 or values.max() > 1:
      raise ValueError(f'field {key!r}: float images must hold values in '
                       f'[0, 1]; got [{values.min()}, {values.max()}].')
    values = np.rint(values * 255).astype(np.uint8)
  elif np.issubdtype(values.dtype, np.integer):
    if values.dtype != np.uint8 and (values.min() < 0 or values.max() > 255):
      raise ValueError(f'field {key!r}: integer images must hold values in '
                       f'[0, 255]; got [{values.min()}, {values.max()}].')
    values = values.astype(np.uint8)
  else:
    raise ValueError(f'field {key!r}: dtype {values.dtype} is not an image.')
  if values.shape[-1] == 1:
    values = np.repeat(values, 3, axis=-1)
  return np.ascontiguousarray(values[..., :3])


def episode_frames(episode: Any, key: str) -> np.ndarray:
  """The frames of image field ``key`` of an episode (or its steps), ``[T, H, W, 3]`` uint8.

  Example:
    >>> episode_frames({'obs': np.zeros((2, 4, 4), np.uint8)}, 'obs').shape
    (2, 4, 4, 3)
  """
  return to_rgb_frames(_step_values(episode, key), key)


def upscale(frames: np.ndarray, scale: int) -> np.ndarray:
  """``[T, H, W, C]`` frames enlarged ``scale`` times (nearest neighbour).

  Example:
    >>> upscale(np.arange(2, dtype=np.uint8).reshape(1, 1, 2, 1), 2)[0, ..., 0]
    array([[0, 0, 1, 1],
           [0, 0, 1, 1]], dtype=uint8)
  """
  if isinstance(scale, bool) or int(scale) != scale or scale < 1:
    raise ValueError(f'scale must be a whole number >= 1, got {scale!r}.')
  scale = int(scale)
  if scale == 1:
    return frames
  return np.repeat(np.repeat(frames, scale, axis=1), scale, axis=2)


def auto_scale(height: int, min_height: int = MIN_HEIGHT) -> int:
  """The smallest whole factor that makes ``height`` at least ``min_height``.

  Example:
    >>> auto_scale(16), auto_scale(84), auto_scale(128), auto_scale(480)
    (8, 2, 1, 1)
  """
  return max(1, math.ceil(min_height / max(height, 1)))


def side_by_side(cameras: Sequence[np.ndarray]) -> np.ndarray:
  """Frames of several cameras as one ``[T, H, W, 3]``: enlarged to the tallest, grey-separated.

  Example:
    >>> a, b = np.zeros((2, 4, 4, 3), np.uint8), np.zeros((2, 2, 3, 3), np.uint8)
    >>> side_by_side([a, b]).shape
    (2, 4, 12, 3)
  """
  if len(cameras) == 1:
    return cameras[0]
  lengths = {len(frames) for frames in cameras}
  if len(lengths) > 1:
    raise ValueError(f'cameras have different frame counts: {sorted(lengths)}')
  height = max(frames.shape[1] for frames in cameras)
  parts = []
  for index, frames in enumerate(cameras):
    frames = upscale(frames, max(1, height // frames.shape[1]))
    pad = height - frames.shape[1]
    if index:
      parts.append(np.full((len(frames), height, _GAP, 3), 128, np.uint8))
    parts.append(np.pad(frames, ((0, 0), (0, pad), (0, 0), (0, 0))))
  return np.concatenate(parts, axis=2)


def video_frames(episode: Any, keys: Union[str, Sequence[str]],
                 scale: Optional[int] = 1) -> np.ndarray:
  """The frames `episode_to_video` writes, enlarged ``scale`` times (``None``: `auto_scale`).

  Example:
    >>> steps = {'a': np.zeros((3, 16, 12, 3), np.uint8),
    ...          'b': np.zeros((3, 8, 8), np.uint8)}
    >>> video_frames(steps, ['a', 'b'], scale=None).shape
    (3, 128, 240, 3)
  """
  keys = [keys] if isinstance(keys, str) else list(keys)
  if not keys:
    raise ValueError('no image field to show.')
  frames = side_by_side([episode_frames(episode, key) for key in keys])
  return upscale(frames, auto_scale(frames.shape[1]) if scale is None
                 else scale)


def _even(frames: np.ndarray) -> np.ndarray:
  """Frames padded (edge pixels repeated) to even sizes, as H.264 needs."""
  _, height, width, _ = frames.shape
  return np.pad(frames, ((0, 0), (0, height % 2), (0, width % 2), (0, 0)),
                mode='edge')


def _write_mp4(frames: np.ndarray, path: str, fps: float) -> None:
  try:
    import imageio.v2 as imageio  # pylint: disable=g-import-not-at-top
    import imageio_ffmpeg  # pylint: disable=g-import-not-at-top,unused-import
  except ImportError:
    raise ImportError(
        'episode_to_video: writing MP4 needs the imageio and imageio-ffmpeg '
        'packages (pip install imageio imageio-ffmpeg); or write a .gif, '
        'which needs nothing.') from None
  imageio.mimwrite(path, list(_even(frames)), fps=fps, macro_block_size=1)


def episode_to_video(episode: Any, key: Union[str, Sequence[str]],
                     path: PathLike, fps: float = 10,
                     scale: Optional[int] = 1) -> str:
  """Writes image field(s) ``key`` of an episode to ``path`` (``.gif`` or ``.mp4``); ``path``.

  A list of keys is shown side by side; ``scale`` None is `auto_scale`.

  Example:
    >>> episode_to_video({'obs': np.zeros((1, 2, 2))}, 'obs', 'clip.avi')
    Traceback (most recent call last):
    ...
    ValueError: episode_to_video: unknown video format '.avi' (use .gif or ...
  """
  path = os.fspath(path)
  extension = os.path.splitext(path)[1].lower()
  if extension not in FORMATS:
    raise ValueError(f'episode_to_video: unknown video format {extension!r} '
                     '(use .gif or .mp4).')
  if fps <= 0:
    raise ValueError(f'episode_to_video: fps must be positive, got {fps}.')
  frames = video_frames(episode, key, scale)
  if extension == '.gif':
    gif.write_gif(frames, path, fps=fps)
  else:
    _write_mp4(frames, path, fps)
  return path
