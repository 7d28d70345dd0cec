"""Octo's frame transforms: decode and resize, augmentation with dlimp's op names and order, image dropout.

Example:
  >>> import tensorflow as tf
  >>> image = tf.fill([4, 4, 3], tf.constant(100, tf.uint8))
  >>> out = augment_image(image, seed=tf.constant([1, 2]),
  ...                     augment_order=['random_brightness'],
  ...                     random_brightness=[0.0])
  >>> int(out.numpy().max())
  100
"""

import logging
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

import tensorflow as tf

from rlds_lite import op_context

__all__ = ['apply_frame_transforms', 'augment_image', 'AUGMENT_OPS',
           'decode_and_resize', 'augment', 'image_dropout', 'resize_image',
           'names_with', 'sizes_for']

_LOG = logging.getLogger('rlds_lite')
_AUTOTUNE = tf.data.AUTOTUNE
Size = Tuple[int, int]
Sizes = Union[Size, Mapping[str, Size]]


def resize_image(image: tf.Tensor, size: Size) -> tf.Tensor:
  """dlimp's resize: Lanczos3 with antialiasing, rounded back to uint8."""
  out = tf.image.resize(image, size, method='lanczos3', antialias=True)
  return tf.cast(tf.clip_by_value(tf.round(out), 0, 255), tf.uint8)


def resize_depth_image(depth: tf.Tensor, size: Size) -> tf.Tensor:
  """dlimp's depth resize: bilinear with antialiasing, float32."""
  if depth.shape.rank < 3:
    return tf.image.resize(depth[..., None], size, method='bilinear',
                           antialias=True)[..., 0]
  return tf.image.resize(depth, size, method='bilinear', antialias=True)


def random_resized_crop(image: tf.Tensor, scale: Any, ratio: Any,
                        seed: tf.Tensor) -> tf.Tensor:
  """dlimp's crop: one seed draws scale, ratio and offsets; resized back to the image's size."""
  single = image.shape.rank == 3
  batch = image[tf.newaxis] if single else image
  n = tf.shape(batch)[0]
  height, width = tf.shape(batch)[1], tf.shape(batch)[2]
  scales = tf.random.stateless_uniform((n,), seed, scale[0], scale[1])
  ratios = tf.exp(tf.random.stateless_uniform(
      (n,), seed, tf.math.log(float(ratio[0])), tf.math.log(float(ratio[1]))))
  heights = tf.clip_by_value(tf.sqrt(scales / ratios), 0, 1)
  widths = tf.clip_by_value(tf.sqrt(scales * ratios), 0, 1)
  top = tf.random.stateless_uniform((n,), seed, 0, 1 - heights)
  left = tf.random.stateless_uniform((n,), seed, 0, 1 - widths)
  boxes = tf.stack([top, left, top + heights, left + widths], axis=1)
  out = tf.image.crop_and_resize(batch, boxes, tf.range(n), (height, width))
  return out[0] if single else out


def _rot90(image: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
  k = tf.random.stateless_uniform((), seed, 0, 4, dtype=tf.int32)
  return tf.image.rot90(image, k=k)


AUGMENT_OPS: Dict[str, Callable] = {
    'random_resized_crop': random_resized_crop,
    'random_brightness': tf.image.stateless_random_brightness,
    'random_contrast': tf.image.stateless_random_contrast,
    'random_saturation': tf.image.stateless_random_saturation,
    'random_hue': tf.image.stateless_random_hue,
    'random_flip_left_right': tf.image.stateless_random_flip_left_right,
    'random_flip_up_down': tf.image.stateless_random_flip_up_down,
    'random_rot90': _rot90,
}
"""dlimp's augmentation ops by the names Octo's configs use."""


def check_augment_kwargs(kwargs: Mapping[str, Any], camera: str = '') -> None:
  """A ValueError for a missing ``augment_order`` or an op name dlimp does not have."""
  where = f' (for image_{camera})' if camera else ''
  if 'augment_order' not in kwargs:
    raise ValueError(f"image_augment_kwargs{where} must contain an "
                     "'augment_order' key.")
  unknown = [op for op in kwargs['augment_order'] if op not in AUGMENT_OPS]
  if unknown:
    raise ValueError(f'image_augment_kwargs{where}: unknown augmentation(s) '
                     f'{unknown}; known: {sorted(AUGMENT_OPS)}.')


def augment_image(image: tf.Tensor, seed: Optional[tf.Tensor] = None,
                  **augment_kwargs: Any) -> tf.Tensor:
  """dlimp's ``augment_image``: the ops of ``augment_order`` in order, in float [0, 1], clipped after each."""
  check_augment_kwargs(augment_kwargs)
  dtype = image.dtype
  image = tf.image.convert_image_dtype(image, tf.float32)
  if seed is None:
    seed = tf.random.uniform([2], 0, 2**31 - 1, dtype=tf.int32)
  for op in augment_kwargs['augment_order']:
    args = augment_kwargs.get(op, ())
    if hasattr(args, 'items'):
      image = AUGMENT_OPS[op](image, seed=seed, **args)
    else:
      image = AUGMENT_OPS[op](image, *args, seed=seed)
    image = tf.clip_by_value(image, 0, 1)
  return tf.image.convert_image_dtype(image, dtype, saturate=True)


def names_with(obs: Mapping[str, Any], prefix: str) -> list:
  """The camera names of ``obs``' keys starting with ``prefix`` (``'image_'``, ``'depth_'``), sorted."""
  return sorted(k[len(prefix):] for k in obs if k.startswith(prefix))


def sizes_for(sizes: Sizes, names: list) -> Dict[str, Size]:
  """``{name: (h, w)}`` of a single size or a per-camera mapping."""
  if isinstance(sizes, tuple) or (isinstance(sizes, list) and len(sizes) == 2
                                  and all(isinstance(s, int) for s in sizes)):
    return {name: tuple(sizes) for name in names}
  return {k: tuple(v) for k, v in dict(sizes).items()}


def _decoded(image: tf.Tensor, size: Optional[Size], depth: bool) -> tf.Tensor:
  if image.dtype != tf.string:
    return image
  fill = (size or (1, 1)) if depth else (*(size or (1, 1)), 3)
  def padding():
    return tf.zeros(fill, tf.float32 if depth else tf.uint8)
  def decode():
    if depth:
      return tf.io.decode_image(image, expand_animations=False,
                                dtype=tf.float32)[..., 0]
    return tf.io.decode_image(image, expand_animations=False, dtype=tf.uint8)
  shape = [None, None] if depth else [None, None, 3]
  out = tf.cond(tf.strings.length(image) == 0, padding, decode)
  out.set_shape(shape)
  return out


def decode_and_resize(obs: Dict[str, Any], resize_size: Sizes,
                      depth_resize_size: Sizes) -> Dict[str, Any]:
  """Octo's ``decode_and_resize`` of one frame's observation: '' is a zero image at the size."""
  obs = dict(obs)
  for prefix, sizes, depth in (('image_', resize_size, False),
                               ('depth_', depth_resize_size, True)):
    names = names_with(obs, prefix)
    sizes = sizes_for(sizes, names)
    for name in names:
      key = prefix + name
      if name not in sizes:
        _LOG.warning('No resize size for %s: padding images are 1x1.', key)
      if obs[key].dtype not in (tf.string, tf.float32 if depth else tf.uint8):
        raise ValueError(f'Unsupported image dtype: found {key} with dtype '
                         f'{obs[key].dtype.name}')
      image = _decoded(obs[key], sizes.get(name), depth)
      if name in sizes:
        image = (resize_depth_image if depth else resize_image)(image,
                                                                 sizes[name])
      obs[key] = image
  return obs


def augment(obs: Dict[str, Any], seed: tf.Tensor,
            augment_kwargs: Mapping[str, Any]) -> Dict[str, Any]:
  """Octo's ``augment``: every camera (seed + its index), padding images left alone."""
  names = names_with(obs, 'image_')
  per_camera = (dict.fromkeys(names, augment_kwargs)
                if 'augment_order' in augment_kwargs else augment_kwargs)
  obs = dict(obs)
  for i, name in enumerate(names):
    if name not in per_camera:
      continue
    key = 'image_' + name
    image = obs[key]
    obs[key] = tf.cond(obs['pad_mask_dict'][key],
                       lambda: augment_image(image, seed=seed + i,
                                             **per_camera[name]),
                       lambda: image)
  return obs


def image_dropout(obs: Dict[str, Any], seed: tf.Tensor, dropout_prob: float,
                  always_keep_key: Optional[str] = None) -> Dict[str, Any]:
  """Octo's ``image_dropout``: each camera dropped (zeros, pad mask False) with ``dropout_prob``; one real one kept."""
  keys = ['image_' + n for n in names_with(obs, 'image_')]
  if not keys:
    return obs
  present = tf.stack([obs['pad_mask_dict'][k] for k in keys])
  shuffle_seed, seed = tf.unstack(tf.random.split(seed))
  if always_keep_key:
    if always_keep_key not in keys:
      raise ValueError(f'image_dropout_keep_key {always_keep_key!r} is not '
                       f'an image key; the images are {keys}.')
    kept = tf.constant(keys.index(always_keep_key), tf.int64)
  else:
    kept = tf.cond(
        tf.reduce_any(present),
        lambda: tf.random.experimental.stateless_shuffle(
            tf.where(present)[:, 0], seed=shuffle_seed)[0],
        lambda: tf.constant(0, tf.int64))
  draws = tf.random.stateless_uniform([len(keys)], seed=seed)
  present &= (tf.range(len(keys), dtype=tf.int64) == kept) | (draws > dropout_prob)
  obs = dict(obs)
  masks = dict(obs['pad_mask_dict'])
  for i, key in enumerate(keys):
    masks[key] = present[i]
    image = obs[key]
    obs[key] = tf.cond(present[i], lambda: image, lambda: tf.zeros_like(image))
  obs['pad_mask_dict'] = masks
  return obs


def _on_frame(fn: Callable[[Dict[str, Any]], Dict[str, Any]],
              frame: Dict[str, Any]) -> Dict[str, Any]:
  """``fn`` on the task and on each element of the observation window (Octo's ``apply_obs_transform``)."""
  frame = dict(frame)
  frame['task'] = fn(frame['task'])
  obs = frame['observation']
  window = obs['timestep'].shape[0]
  if window is None:
    raise ValueError('apply_frame_transforms needs chunked observations '
                     '(apply_trajectory_transforms first).')
  each = [fn(tf.nest.map_structure(lambda x, i=i: x[i], obs))
          for i in range(window)]
  frame['observation'] = tf.nest.map_structure(lambda *xs: tf.stack(xs), *each)
  return frame


def frame_transform(train: bool, image_augment_kwargs: Mapping[str, Any],
                    resize_size: Sizes, depth_resize_size: Sizes,
                    image_dropout_prob: float,
                    image_dropout_keep_key: Optional[str]) -> Callable:
  """Octo's frame function: decode and resize, then (train) dropout and augmentation with one seed."""
  def transform(frame: Dict[str, Any]) -> Dict[str, Any]:
    frame = _on_frame(lambda obs: decode_and_resize(
        obs, resize_size, depth_resize_size), frame)
    if not train:
      return frame
    seed = tf.random.uniform([2], maxval=tf.int32.max, dtype=tf.int32)
    frame = _on_frame(lambda obs: image_dropout(
        obs, seed, image_dropout_prob, image_dropout_keep_key), frame)
    return _on_frame(lambda obs: augment(obs, seed, image_augment_kwargs),
                     frame)
  return transform


def _is_trajectory(spec: Dict[str, Any]) -> bool:
  return spec['dataset_name'].shape.rank == 1


@op_context.named('apply_frame_transforms')
def apply_frame_transforms(
    dataset: tf.data.Dataset, *, train: bool,
    image_augment_kwargs: Mapping[str, Any] = {},  # pylint: disable=dangerous-default-value
    resize_size: Sizes = {},  # pylint: disable=dangerous-default-value
    depth_resize_size: Sizes = {},  # pylint: disable=dangerous-default-value
    image_dropout_prob: float = 0.0,
    image_dropout_keep_key: Optional[str] = None,
    num_parallel_calls: int = _AUTOTUNE) -> tf.data.Dataset:
  """Octo's frame transforms of chunked trajectories or of frames (one per element).

  Args:
    dataset: trajectories of `apply_trajectory_transforms`, or its frames.
    train: augment and drop images out (else decode and resize only).
    image_augment_kwargs: dlimp's kwargs (``augment_order``, ...), or per
      camera name.
    resize_size, depth_resize_size: ``(h, w)`` or per camera name.
    image_dropout_prob: each camera's dropout probability (train).
    image_dropout_keep_key: a camera never dropped.
    num_parallel_calls: parallelism.

  Example:
    >>> import tempfile
    >>> from rlds_lite import octo, synthetic
    >>> path = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=2,
    ...                                 length=3, cameras={'image': (8, 8)})
    >>> ds, _ = octo.make_dataset_from_rlds(path, None, train=True,
    ...     image_obs_keys={'primary': 'image', 'wrist': None})
    >>> ds = octo.apply_trajectory_transforms(ds, train=True, window_size=2)
    >>> ds = apply_frame_transforms(ds, train=False, resize_size=(4, 4))
    >>> obs = next(iter(ds))['observation']
    >>> obs['image_primary'].shape.as_list(), int(obs['image_wrist'].numpy().max())
    ([3, 2, 4, 4, 3], 0)
  """
  if train:
    kwargs = image_augment_kwargs
    for camera, one in ({'': kwargs}.items() if 'augment_order' in kwargs
                        else dict(kwargs).items()):
      check_augment_kwargs(one, camera)
  fn = frame_transform(train, image_augment_kwargs, resize_size,
                       depth_resize_size, image_dropout_prob,
                       image_dropout_keep_key)
  if not _is_trajectory(dataset.element_spec):
    return dataset.map(fn, num_parallel_calls)
  def per_trajectory(traj):
    frames = tf.data.Dataset.from_tensor_slices(traj).map(fn,
                                                          num_parallel_calls)
    return frames.batch(tf.cast(tf.shape(traj['action'])[0], tf.int64))
  return dataset.flat_map(per_trajectory)
