"""Seeded, vectorised augmentation of whole image batches (crops and color jitter)."""

import math
from typing import Any, Dict, NamedTuple, Optional, Sequence, Tuple

import tensorflow as tf

from rlds_lite import nest_paths

__all__ = ['AugmentParams', 'augment_batches', 'augment_images',
           'apply_params', 'draw_params']


class AugmentParams(NamedTuple):
  """Per-sample parameters (leading axis ``B``) of ``augment_images``.

    Attributes:
      boxes: ``[B, 4]`` crop boxes ``(y1, x1, y2, x2)`` in ``[0, 1]``.
      brightness, contrast, saturation, hue: ``[B]`` deltas or factors.

    Example:
      >>> params = draw_params(2, seed=0, brightness=0.1)
      >>> params._fields
      ('boxes', 'brightness', 'contrast', 'saturation', 'hue')
      >>> params.boxes.numpy().tolist(), params.contrast.numpy().tolist()
      ([[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0]], [1.0, 1.0])
  """
  boxes: tf.Tensor
  brightness: tf.Tensor
  contrast: tf.Tensor
  saturation: tf.Tensor
  hue: tf.Tensor


def _seed(seed: Any) -> tf.Tensor:
  if isinstance(seed, int) and not isinstance(seed, bool):
    return tf.constant([seed, 0], tf.int64)
  if seed is None or isinstance(seed, (bool, str, bytes, float)):
    raise TypeError('augment_images: seed must be an int or a shape-[2] int '
                    f'tensor, got {seed!r}.')
  return tf.cast(tf.convert_to_tensor(seed), tf.int64)


def _check_range(value: Tuple[float, float], name: str) -> Tuple[float, float]:
  low, high = (float(v) for v in value)
  if not 0 < low <= high:
    raise ValueError(f'augment_images: {name} must be (low, high) with 0 < low '
                     f'<= high, got {value!r}.')
  return low, high


def _check_amount(value: float, name: str, upper: Optional[float]) -> float:
  value = float(value)
  if value < 0 or (upper is not None and value > upper):
    bound = f'in [0, {upper}]' if upper is not None else '>= 0'
    raise ValueError(f'augment_images: {name} must be {bound}, got {value}.')
  return value


def draw_params(batch_size: Any, seed: Any, *,
                crop_scale: Optional[Tuple[float, float]] = None,
                crop_ratio: Tuple[float, float] = (3 / 4, 4 / 3),
                brightness: float = 0.0, contrast: float = 0.0,
                saturation: float = 0.0, hue: float = 0.0) -> AugmentParams:
  """The random parameters of a batch of ``batch_size`` samples (see ``augment_images``).

    Crops keep ``U(crop_scale)`` of the area at aspect ratio
    ``exp(U(log crop_ratio))``; jitters are uniform in ``±`` their option.

    Example:
      >>> params = draw_params(3, seed=1, crop_scale=(0.25, 0.25),
      ...                      crop_ratio=(1.0, 1.0))
      >>> (params.boxes[:, 2:] - params.boxes[:, :2]).numpy().round(3).tolist()
      [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]]
  """
  seeds = tf.unstack(tf.random.experimental.stateless_split(_seed(seed), 8))
  uniform = lambda i, low, high: tf.random.stateless_uniform(  # pylint: disable=g-long-lambda
      [batch_size], seeds[i], low, high)
  if crop_scale is None:
    boxes = tf.tile(tf.constant([[0.0, 0.0, 1.0, 1.0]]), [batch_size, 1])
  else:
    low, high = _check_range(crop_scale, 'crop_scale')
    if high > 1:
      raise ValueError(f'augment_images: crop_scale must be within (0, 1], '
                       f'got {crop_scale!r}.')
    ratio_low, ratio_high = _check_range(crop_ratio, 'crop_ratio')
    area = uniform(0, low, high) if low < high else tf.fill([batch_size], low)
    log_ratio = uniform(1, math.log(ratio_low), math.log(ratio_high))
    ratio = tf.exp(log_ratio)
    width = tf.minimum(tf.sqrt(area * ratio), 1.0)
    height = tf.minimum(tf.sqrt(area / ratio), 1.0)
    top = uniform(2, 0.0, 1.0) * (1.0 - height)
    left = uniform(3, 0.0, 1.0) * (1.0 - width)
    boxes = tf.stack([top, left, top + height, left + width], axis=1)
  brightness = _check_amount(brightness, 'brightness', None)
  contrast = _check_amount(contrast, 'contrast', 1.0)
  saturation = _check_amount(saturation, 'saturation', 1.0)
  hue = _check_amount(hue, 'hue', 0.5)
  return AugmentParams(
      boxes=boxes,
      brightness=uniform(4, -brightness, brightness) if brightness else
      tf.zeros([batch_size]),
      contrast=uniform(5, 1 - contrast, 1 + contrast) if contrast else
      tf.ones([batch_size]),
      saturation=uniform(6, 1 - saturation, 1 + saturation) if saturation
      else tf.ones([batch_size]),
      hue=uniform(7, -hue, hue) if hue else tf.zeros([batch_size]))


def _per_frame(values: tf.Tensor, frames_per_sample: tf.Tensor) -> tf.Tensor:
  """``[B]`` values repeated for every frame, shaped ``[B * k, 1, 1, 1]``."""
  return tf.reshape(tf.repeat(values, frames_per_sample, axis=0),
                    [-1, 1, 1, 1])


def apply_params(images: tf.Tensor, params: AugmentParams,
                 size: Optional[Tuple[int, int]] = None) -> tf.Tensor:
  """``images`` ``[B, ..., h, w, c]`` augmented with ``params``, resized to ``size``.

    Example:
      >>> import numpy as np
      >>> params = AugmentParams(
      ...     boxes=tf.constant([[0.0, 0.0, 1.0, 1.0]] * 2),
      ...     brightness=tf.constant([0.2, 0.0]), contrast=tf.ones([2]),
      ...     saturation=tf.ones([2]), hue=tf.zeros([2]))
      >>> out = apply_params(np.full([2, 4, 4, 3], 100, np.uint8), params,
      ...                    size=(2, 2))
      >>> out.shape, out[:, 0, 0, 0].numpy().tolist()  # +0.2 * 255 on sample 0.
      (TensorShape([2, 2, 2, 3]), [151, 100])
  """
  images = tf.convert_to_tensor(images)
  dtype = images.dtype
  shape = tf.shape(images)
  rank = images.shape.rank
  height, width, channels = (images.shape[-3], images.shape[-2],
                             images.shape[-1])
  size = size or (height, width)
  flat = tf.reshape(images, tf.concat([[-1], shape[-3:]], 0))
  per_sample = tf.reduce_prod(shape[1:rank - 3])
  x = tf.image.convert_image_dtype(flat, tf.float32)
  boxes = tf.repeat(params.boxes, per_sample, axis=0)
  whole = tf.reduce_all(tf.equal(params.boxes, [[0.0, 0.0, 1.0, 1.0]]))
  if (height, width) == tuple(size):
    x = tf.cond(whole, lambda: x, lambda: tf.image.crop_and_resize(
        x, boxes, tf.range(tf.shape(x)[0]), size))
  else:
    x = tf.image.crop_and_resize(x, boxes, tf.range(tf.shape(x)[0]), size)
  x = x + _per_frame(params.brightness, per_sample)
  mean = tf.reduce_mean(x, axis=[1, 2], keepdims=True)
  x = (x - mean) * _per_frame(params.contrast, per_sample) + mean
  if channels == 3:
    hsv = tf.image.rgb_to_hsv(tf.clip_by_value(x, 0.0, 1.0))
    hue = tf.math.floormod(hsv[..., 0:1] + _per_frame(params.hue, per_sample),
                           1.0)
    saturation = tf.clip_by_value(
        hsv[..., 1:2] * _per_frame(params.saturation, per_sample), 0.0, 1.0)
    x = tf.image.hsv_to_rgb(tf.concat([hue, saturation, hsv[..., 2:]], -1))
  x = tf.clip_by_value(x, 0.0, 1.0)
  out = tf.image.convert_image_dtype(x, dtype, saturate=True)
  out_shape = tf.concat([shape[:-3], list(size), shape[-1:]], 0)
  out = tf.reshape(out, out_shape)
  static = images.shape[:-3].concatenate(list(size) + [channels])
  return tf.ensure_shape(out, static)


def augment_images(images: tf.Tensor, seed: Any, *,
                   size: Optional[Tuple[int, int]] = None,
                   crop_scale: Optional[Tuple[float, float]] = None,
                   crop_ratio: Tuple[float, float] = (3 / 4, 4 / 3),
                   brightness: float = 0.0, contrast: float = 0.0,
                   saturation: float = 0.0, hue: float = 0.0) -> tf.Tensor:
  """A batch of frames ``[B, ..., h, w, c]``, randomly cropped and jittered.

    Args:
      images: uint8 frames (or float in ``[0, 1]``).
      seed: an int or a shape-``[2]`` int tensor.
      size: output ``(height, width)`` (default: the input size).
      crop_scale: ``(low, high)`` area fraction of a random resized crop
        (None: no crop); crop_ratio: its aspect ratio range.
      brightness, contrast, saturation, hue: maximal jitters.

    Returns:
      The augmented frames, same dtype.

    Example:
      >>> import numpy as np
      >>> frames = np.random.default_rng(0).integers(0, 255, (2, 6, 6, 3), np.uint8)
      >>> bool(tf.reduce_all(augment_images(frames, seed=3) == frames))
      True
  """
  images = tf.convert_to_tensor(images)
  if images.shape.rank is not None and images.shape.rank < 4:
    raise ValueError('augment_images: images must be a batch [B, ..., h, w, '
                     f'c] (rank >= 4), got shape {images.shape}; for one '
                     'frame pass frame[tf.newaxis].')
  params = draw_params(tf.shape(images)[0], seed, crop_scale=crop_scale,
                       crop_ratio=crop_ratio, brightness=brightness,
                       contrast=contrast, saturation=saturation, hue=hue)
  return apply_params(images, params, size)


def _camera(path: str) -> str:
  return path.rsplit('/', 1)[-1]


def augment_batches(batches: tf.data.Dataset,
                    keys: Optional[Sequence[str]] = None,
                    *,
                    seed: Optional[int] = None,
                    num_parallel_calls: Optional[int] = tf.data.AUTOTUNE,
                    **options: Any) -> tf.data.Dataset:
  """``batches`` with their image fields augmented (``augment_images``), a seed per batch.

    Args:
      batches: a dataset of (nested) dicts of batched tensors.
      keys: paths of the image fields (default: every uint8 image-like field).
      seed: the seed (None: random).
      num_parallel_calls: parallelism of the ``map``.
      **options: ``augment_images``' options.

    Example:
      >>> import numpy as np
      >>> batch = {'observation': {'image': np.zeros([2, 4, 4, 3], np.uint8)},
      ...          'action': np.zeros([2, 1], np.float32)}
      >>> ds = augment_batches(tf.data.Dataset.from_tensors(batch).repeat(2),
      ...                      seed=0, brightness=0.5)
      >>> [b['observation']['image'].shape.as_list() for b in ds]
      [[2, 4, 4, 3], [2, 4, 4, 3]]
  """
  spec = batches.element_spec
  flat = dict(nest_paths.flatten_with_paths(spec))
  if keys is None:
    keys = [path for path, leaf in flat.items()
            if leaf.dtype == tf.uint8 and leaf.shape.rank is not None and
            leaf.shape.rank >= 4 and leaf.shape[-1] in (1, 3, 4)]
    if not keys:
      raise ValueError(
          'augment_batches: the batches have no uint8 field of rank >= 4 '
          'with 1, 3 or 4 channels (image batches) to augment; name the '
          f'image fields with keys= (float frames in [0, 1] are augmented '
          f'too). Fields: {sorted(flat)}.')
  keys = list(keys)
  for key in keys:
    if key not in flat:
      raise ValueError(f'augment_batches: no field {key!r} in the batches '
                       f'(fields: {sorted(flat)}).')
  cameras = sorted({_camera(k) for k in keys})
  draw_params(1, 0, **{k: v for k, v in options.items() if k != 'size'})

  @tf.autograph.experimental.do_not_convert
  def augment(batch: Dict[str, Any], batch_seed: tf.Tensor) -> Dict[str, Any]:
    seeds = tf.unstack(tf.random.experimental.stateless_split(
        batch_seed, len(cameras)))
    out = _copy_dicts(batch)
    for key in keys:
      camera_seed = seeds[cameras.index(_camera(key))]
      parent, name = _parent(out, key)
      parent[name] = augment_images(parent[name], camera_seed, **options)
    return out

  seeds = tf.data.Dataset.random(seed=seed,
                                 rerandomize_each_iteration=True).batch(2)
  return tf.data.Dataset.zip(batches, seeds).map(
      augment, num_parallel_calls=num_parallel_calls, deterministic=True)


def _copy_dicts(tree: Any) -> Any:
  if isinstance(tree, dict):
    return {k: _copy_dicts(v) for k, v in tree.items()}
  return tree


def _parent(tree: Dict[str, Any], path: str) -> Tuple[Dict[str, Any], str]:
  *parents, name = path.split('/')
  for key in parents:
    tree = tree[key]
  return tree, name
