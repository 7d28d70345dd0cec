"""Camera frames: batched decoding at the size needed, image fields, augmentation.

``decode_frames`` / ``decode_images`` decode, ``image_specs`` /
``load_encoded`` / ``first_bad_frame`` read a dataset's image fields, and
``augment_images`` / ``augment_batches`` augment whole batches; see
``docs/images.md``.

Example:
  >>> import numpy as np, tensorflow as tf
  >>> from rlds_lite import images
  >>> jpeg = tf.io.encode_jpeg(np.zeros([16, 16, 3], np.uint8))
  >>> images.decode_frames(tf.stack([jpeg]), images.ImageSpec((16, 16, 3)),
  ...                      size=(8, 8)).shape
  TensorShape([1, 8, 8, 3])
"""

from typing import Any

from rlds_lite import lazy_names
from rlds_lite.images.augment import apply_params
from rlds_lite.images.augment import augment_batches
from rlds_lite.images.augment import augment_images
from rlds_lite.images.augment import AugmentParams
from rlds_lite.images.augment import draw_params
from rlds_lite.images.decode import dct_ratio
from rlds_lite.images.decode import decode_frames
from rlds_lite.images.decode import decode_images
from rlds_lite.images.decode import ImageSpec
from rlds_lite.images.decode import output_shape
from rlds_lite.images.decode import RESIZE_METHODS

_NAMES = {name: 'fields' for name in (
    'BadFrame', 'first_bad_frame', 'image_specs', 'load_encoded')}
"""Names of ``images.fields``, imported on first use: that module opens
datasets (``rlds_lite.source``), which sits above ``images.decode``."""

__all__ = [
    'apply_params',
    'augment_batches',
    'augment_images',
    'AugmentParams',
    'BadFrame',
    'dct_ratio',
    'decode_frames',
    'decode_images',
    'draw_params',
    'first_bad_frame',
    'image_specs',
    'ImageSpec',
    'load_encoded',
    'output_shape',
    'RESIZE_METHODS',
]


def __getattr__(name: str) -> Any:
  """The names of ``images.fields`` (and any submodule), imported on first use."""
  return lazy_names.attribute(__name__, _NAMES, name)
