"""Batched decoding of encoded camera frames, at the output size the user needs."""

import re
from typing import Any, Dict, Optional, Sequence, Tuple

import tensorflow as tf

from rlds_lite import op_context
from rlds_lite.decoding import ImageSpec

__all__ = ['DCT_RATIOS', 'ImageSpec', 'RESIZE_METHODS', 'dct_ratio',
           'decode_frames', 'decode_images', 'output_shape']

DCT_RATIOS = (8, 4, 2)
"""The downscaling ratios ``tf.io.decode_jpeg(ratio=...)`` supports."""
ENCODINGS = ('jpeg', 'png', None)
"""Frame encodings: JPEG, PNG, or None for raw (already decoded) frames."""

Size = Optional[Tuple[int, int]]


def check_size(size: Any, name: str = 'size') -> Size:
  """``(height, width)`` of positive ints, or None; else a ValueError.

    Example:
      >>> check_size([64, 48])
      (64, 48)
  """
  if size is None:
    return None
  if (isinstance(size, (str, bytes)) or not hasattr(size, '__len__') or
      len(size) != 2 or any(isinstance(s, bool) or not hasattr(s, '__index__')
                            or int(s) < 1 for s in size)):
    raise ValueError(f'{name} must be None or (height, width) of '
                     f'positive ints, got {size!r}.')
  return int(size[0]), int(size[1])


RESIZE_METHODS = ('bilinear', 'nearest', 'bicubic', 'area', 'lanczos3',
                  'lanczos5', 'gaussian', 'mitchellcubic')
"""The ``tf.image.resize`` methods (``tf.image.ResizeMethod``'s values)."""


def check_method(method: Any) -> str:
  """``method`` if it is one of `RESIZE_METHODS`; else a ValueError."""
  if method not in RESIZE_METHODS:
    raise ValueError(f'resize_method must be one of {RESIZE_METHODS}, '
                     f'got {method!r}.')
  return method


def dct_ratio(source: Sequence[int], target: Sequence[int]) -> int:
  """The JPEG DCT scaling ratio (1, 2, 4, 8) to decode ``source`` for ``target``.

    The largest ratio whose scaled size (``ceil(source / r)``) is still at
    least ``target``.

    Example:
      >>> dct_ratio((256, 256), (128, 128)), dct_ratio((256, 256), (224, 224))
      (2, 1)
  """
  for ratio in DCT_RATIOS:
    if all(-(-s // ratio) >= t for s, t in zip(source[:2], target[:2])):
      return ratio
  return 1


def output_shape(spec: ImageSpec, size: Size = None) -> Tuple[int, int, int]:
  """The shape of a frame of ``spec`` decoded at ``size`` (None: stored size).

  Example:
    >>> output_shape(ImageSpec((256, 256, 3)), (128, 96))
    (128, 96, 3)
  """
  if size is None:
    return tuple(spec.shape)
  return (size[0], size[1], spec.shape[2])


def _resized(image: tf.Tensor, size: Tuple[int, int], method: str,
             dtype: tf.DType) -> tf.Tensor:
  """``image`` resized (antialiased), rounded back to ``dtype``."""
  resized = tf.image.resize(image, size, method=method, antialias=True)
  limit = dtype.max
  return tf.cast(tf.clip_by_value(tf.round(resized), 0, limit), dtype)


def _size_check(spec: ImageSpec, field: Optional[str], image: tf.Tensor,
                scaled: Tuple[int, int], ratio: int) -> tf.Operation:
  """An assertion that a decoded frame is as large as ``spec`` says.

    A constant message, one comparison per frame: ~1.5% CPU per sample
    (benchmarks/RESULTS.md).
  """
  height, width, _ = spec.shape
  shape = tf.shape(image)
  fine = tf.reduce_all(tf.equal(shape[:2], scaled))
  what = f'image field {field}' if field else 'decode_frames'
  at = (f' (decoded at 1/{ratio} scale: {scaled[0]}x{scaled[1]})'
        if ratio > 1 else '')
  # No quotes: TF escapes them in an assertion's message.
  text = (f'{what}: its ImageSpec says frames of {height}x{width} (height x '
          f'width){at}; give it the shape of the stored frames (image_size= '
          'resizes them). This frame decodes'
          f'{" at that scale" if at else ""} to (height, width, channels):')
  return tf.debugging.Assert(fine, [text, shape], name='frame_size')


def _decode_one(spec: ImageSpec, size: Size, method: str,
                field: Optional[str]):
  """A function decoding one encoded frame of ``spec`` to ``size``."""
  height, width, channels = spec.shape
  out = output_shape(spec, size)

  def decode(encoded: tf.Tensor) -> tf.Tensor:
    ratio = 1
    if spec.encoding == 'jpeg':
      ratio = dct_ratio((height, width), out) if size else 1
      image = tf.io.decode_jpeg(encoded, channels=channels, ratio=ratio)
      scaled = (-(-height // ratio), -(-width // ratio))
    elif spec.encoding == 'png':
      image = tf.io.decode_png(encoded, channels=channels, dtype=spec.dtype)
      scaled = (height, width)
    else:
      image = tf.io.decode_image(encoded, channels=channels, dtype=spec.dtype,
                                 expand_animations=False)
      scaled = (height, width)
    with tf.control_dependencies([
        _size_check(spec, field, image, scaled, ratio)]):
      image = tf.identity(image)
    # The static shape only (no op): a runtime tf.ensure_shape could run
    # before the assertion (Grappler reorders it in a tf.function) and fail
    # with TF's message instead of ours.
    image.set_shape(scaled + (channels,))
    if scaled != out[:2]:
      image = _resized(image, out[:2], method, spec.dtype)
    return image

  return decode


@op_context.named('decode_frames')
def decode_frames(encoded: tf.Tensor, spec: ImageSpec, size: Size = None, *,
                  method: str = 'bilinear',
                  field: Optional[str] = None) -> tf.Tensor:
  """Decodes ``[N]`` encoded frames (or resizes raw ``[N, h, w, c]`` ones).

    Args:
      encoded: ``[N]`` string tensor of encoded frames of ``spec`` (raw frames
        for ``spec.encoding`` None).
      spec: how the frames are stored.
      size: output ``(height, width)``, or None for the stored size.
      method: the ``tf.image.resize`` method (antialiased).
      field: the field path, used as the ops' name scope (errors name it).

    Returns:
      ``[N, *output_shape(spec, size)]`` frames of ``spec.dtype``.

    Example:
      >>> import numpy as np
      >>> png = tf.io.encode_png(np.full([4, 4, 1], 7, np.uint8))
      >>> decode_frames(tf.stack([png, png]), ImageSpec((4, 4, 1), 'png'),
      ...               size=(2, 2))[:, :, :, 0].numpy().tolist()
      [[[7, 7], [7, 7]], [[7, 7], [7, 7]]]
  """
  size = check_size(size)
  if spec.encoding not in ENCODINGS:
    raise ValueError(f'encoding must be one of {ENCODINGS}, got '
                     f'{spec.encoding!r}.')
  out = output_shape(spec, size)
  if spec.encoding is None:
    frames = tf.convert_to_tensor(encoded)
    check_raw_frames(frames.shape, spec, field)
    if tuple(out) == tuple(frames.shape[1:]):
      return frames
    return _resized(frames, out[:2], method, spec.dtype)
  encoded = tf.convert_to_tensor(encoded, tf.string)
  with tf.name_scope(_scope_name(field or 'decode_frames')):
    return tf.map_fn(_decode_one(spec, size, method, field), encoded,
                     fn_output_signature=tf.TensorSpec(out, spec.dtype),
                     parallel_iterations=1)


def check_raw_frames(shape: tf.TensorShape, spec: ImageSpec,
                     field: Optional[str]) -> None:
  """A ValueError if raw frames' static shape ``[N, h, w, c]`` is not ``spec.shape``.

    Example:
      >>> check_raw_frames(tf.TensorShape([5, 16, 16, 3]),
      ...                  ImageSpec((32, 32, 3), None), 'observation/image')
      Traceback (most recent call last):
      ...
      ValueError: image field 'observation/image': its ImageSpec says frames of shape (32, 32, 3) but they are (16, 16, 3).
  """
  frame = shape[1:] if shape.rank is not None else None
  if frame is None or not frame.is_fully_defined():
    return
  if tuple(frame.as_list()) != tuple(spec.shape):
    what = f'image field {field!r}' if field else 'raw frames'
    raise ValueError(
        f'{what}: its ImageSpec says frames of shape '
        f'{tuple(spec.shape)} but they are {tuple(frame.as_list())}.')


def _scope_name(field: str) -> str:
  """``field`` as a TF name scope: characters TF refuses become ``_``.

  Example:
    >>> _scope_name('observation/wrist image'), _scope_name('_cam/')
    ('observation/wrist_image', 'cam')
  """
  name = re.sub(r'[^A-Za-z0-9_./-]', '_', field)
  name = re.sub(r'^[^A-Za-z0-9.]+', '', name).rstrip('/')
  return name or 'frames'


def _decode_leaf(leaf: tf.Tensor, spec: ImageSpec, size: Size, method: str,
                 dedupe: bool, field: str) -> tf.Tensor:
  """A string tensor of any shape ``[...]`` decoded to ``[..., h, w, c]``."""
  if spec.encoding is None:
    flat = tf.reshape(leaf, tf.concat([[-1], tf.shape(leaf)[-3:]], 0))
    lead = tf.shape(leaf)[:-3]
  else:
    flat = tf.reshape(leaf, [-1])
    lead = tf.shape(leaf)
  if dedupe and spec.encoding is not None:
    unique, positions = tf.unique(flat)
    frames = tf.gather(
        decode_frames(unique, spec, size, method=method, field=field),
        positions)
  else:
    frames = decode_frames(flat, spec, size, method=method, field=field)
  out = output_shape(spec, size)
  frames = tf.reshape(frames, tf.concat([lead, out], 0))
  rank = leaf.shape.rank - (3 if spec.encoding is None else 0)
  return tf.ensure_shape(frames, leaf.shape[:rank].concatenate(out))


@op_context.named('decode_images')
def decode_images(values: Dict[str, Any], specs: Dict[str, ImageSpec],
                  size: Any = None, *, method: str = 'bilinear',
                  dedupe: bool = False) -> Dict[str, Any]:
  """``values`` with the image fields ``specs`` names decoded.

    Args:
      values: a nested dict; the leaf at each path of ``specs`` (``'a/b'``)
        is a string tensor of any shape, or raw frames.
      specs: image field path -> ``ImageSpec``.
      size: output ``(height, width)``, a dict path -> size, or None.
      method: the resize method.
      dedupe: decode identical encoded frames of a leaf once.

    Example:
      >>> import numpy as np
      >>> jpeg = tf.io.encode_jpeg(np.zeros([8, 8, 3], np.uint8))
      >>> batch = {'observation': {'image': tf.stack([[jpeg, jpeg]] * 3)}}
      >>> out = decode_images(batch, {'observation/image': ImageSpec((8, 8, 3))},
      ...                     dedupe=True)
      >>> out['observation']['image'].shape
      TensorShape([3, 2, 8, 8, 3])
  """
  out = _copy_dicts(values)
  for path, spec in specs.items():
    field_size = size.get(path) if isinstance(size, dict) else size
    field_size = check_size(field_size)
    parent, key = _parent(out, path)
    parent[key] = _decode_leaf(parent[key], spec, field_size, method, dedupe,
                               path)
  return out


def _copy_dicts(values: Any) -> Any:
  if isinstance(values, dict):
    return {k: _copy_dicts(v) for k, v in values.items()}
  return values


def _parent(values: Dict[str, Any], path: str) -> Tuple[Dict[str, Any], str]:
  """The dict holding ``path``'s leaf, and its key; a KeyError naming it."""
  *parents, key = path.split('/')
  node = values
  for name in parents:
    if not isinstance(node, dict) or name not in node:
      raise KeyError(f'decode_images: no image field {path!r}.')
    node = node[name]
  if not isinstance(node, dict) or key not in node:
    raise KeyError(f'decode_images: no image field {path!r}.')
  return node, key
