"""The image fields of an RLDS dataset, and its episodes with frames still encoded."""

import os
from typing import Any, Dict, Optional, Tuple, Union

import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import diagnosis
from rlds_lite import op_context
from rlds_lite import source as source_lib
from rlds_lite.decoding import image_specs
from rlds_lite.images import decode

BadFrame = diagnosis.BadFrame

__all__ = ['BadFrame', 'first_bad_frame', 'image_specs', 'load_encoded']

PathLike = Union[str, os.PathLike]


def load_encoded(name_or_dir: Any,
                 split: Optional[str] = None,
                 *,
                 data_dir: Optional[PathLike] = None,
                 shuffle_files: bool = False,
                 read_config: Optional[tfds.ReadConfig] = None,
                 op: Optional[str] = None
                 ) -> Tuple[tf.data.Dataset, Dict[str, decode.ImageSpec]]:
  """Dense episodes of a TFDS RLDS dataset, image step fields still encoded.

    Args:
      name_or_dir: a `rlds_lite.Source`, a TFDS name or a dataset directory.
      split: the split (default: the Source's, or ``'train'``).
      data_dir: where TFDS finds prepared datasets (names only).
      shuffle_files: shuffle the order of the files; read_config: a ``tfds.ReadConfig``.
      op: deprecated (errors name the public function they escape).

    Returns:
      ``(episodes, specs)``; each image field is a ``[T]`` string tensor.

    Example:
      >>> import tempfile
      >>> from rlds_lite import synthetic
      >>> path = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=2,
      ...                                 length=3, cameras={'image': (32, 32)})
      >>> episodes, specs = load_encoded(path)
      >>> specs
      {'observation/image': ImageSpec(shape=(32, 32, 3), encoding='jpeg', dtype=tf.uint8)}
      >>> next(iter(episodes))['steps']['observation']['image'].shape
      TensorShape([3])
  """
  with op_context.deprecated_op(op, 'load_encoded', 'load'):
    source = source_lib.as_source(name_or_dir, split, data_dir=data_dir)
    episodes = source.episodes(dense=True, encoded_images=True,
                               shuffle_files=shuffle_files,
                               read_config=read_config)
  return episodes, source.image_specs


def first_bad_frame(name_or_dir: Any, split: str, episode: int, *,
                    data_dir: Optional[PathLike] = None
                    ) -> Optional[diagnosis.BadFrame]:
  """The first frame of episode ``episode`` of ``split`` that does not decode.

    Returns the `BadFrame` (field, step, first bytes), or None if every frame
    decodes; ``split`` is a split name, not a slice.

    Example:
      >>> import tempfile
      >>> from rlds_lite import synthetic
      >>> path = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=2,
      ...                                 length=3)
      >>> print(first_bad_frame(path, 'train', 1))
      None
  """
  source = source_lib.as_source(name_or_dir, split, data_dir=data_dir)
  return diagnosis.first_bad_frame(source.builder, split, episode)
