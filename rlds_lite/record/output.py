"""Where a recording goes: ``out_dir/1.0.0``, checked first, written by an `EpisodeWriter`.

``out_dir`` is the dataset's directory (its name is the dataset name); `rlds_lite.load(out_dir)`
reads it. Episodes are staged and published atomically when the recording closes.
"""

import os
import re
from typing import Any, Callable, Dict, Optional

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite.tfds import episode_writer
from rlds_lite.tfds import features as features_lib

__all__ = ['DatasetOutput', 'VERSION', 'check_out_dir', 'leaf_feature']

VERSION = '1.0.0'
"""The dataset version a recording writes."""
_VERSION_DIR = re.compile(r'^\d+\.\d+\.\d+$')
_FOREIGN = (('data/main_data.hdf5', 'a Minari dataset'),
            ('metadata.riegeli', 'an EnvLogger recording'),
            ('dataset_info.json', 'a TFDS dataset version'),
            ('meta/info.json', 'a LeRobot dataset'))


def _held_dataset(path: str) -> Optional[str]:
  for marker, kind in _FOREIGN:
    if os.path.exists(os.path.join(path, marker)):
      return f'{kind} ({marker})'
  return None


def check_out_dir(out_dir: str, if_exists: str) -> str:
  """The absolute ``out_dir`` after checks; one-line errors for what it must not hold.

  Example:
    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> _ = open(os.path.join(out, 'notes.txt'), 'w')
    >>> check_out_dir(out, 'error')
    Traceback (most recent call last):
    ...
    FileExistsError: record: ... holds files that are not this dataset's versions (notes.txt); choose a new or empty directory.
  """
  out = os.path.abspath(os.path.expanduser(os.fspath(out_dir)))
  if if_exists not in ('error', 'append', 'overwrite'):
    raise ValueError(f"record: if_exists={if_exists!r}; choose 'error', "
                     "'append' or 'overwrite'.")
  if os.path.isfile(out):
    raise FileExistsError(f'record: {out} is a file; choose a new directory.')
  if not os.path.isdir(out):
    episode_writer.check_name(os.path.basename(out))
    return out
  held = _held_dataset(out)
  if held:
    raise FileExistsError(
        f'record: {out} holds another dataset, {held}; choose a new or '
        'empty directory (the dataset directory itself, named like the '
        'dataset).')
  others = sorted(n for n in os.listdir(out)
                  if not n.startswith('.') and not _VERSION_DIR.match(n))
  if others:
    raise FileExistsError(
        f"record: {out} holds files that are not this dataset's versions "
        f"({', '.join(others[:3])}); choose a new or empty directory.")
  episode_writer.check_name(os.path.basename(out))
  version = os.path.join(out, VERSION)
  if os.path.isfile(os.path.join(version, 'dataset_info.json')):
    if if_exists == 'error':
      raise FileExistsError(
          f"record: {out} already holds a dataset ({VERSION}); pass "
          "if_exists='append' (same spaces) or 'overwrite', or choose a new "
          'directory.')
  elif os.path.isdir(version) and os.listdir(version):
    raise FileExistsError(
        f'record: {version} exists and is not a TFDS dataset; choose a new '
        'directory.')
  return out


def leaf_feature(spec: tf.TensorSpec,
                 options: episode_writer.FileOptions) -> Any:
  """The TFDS feature of one recorded field: its exact shape (``(1,)`` stays ``(1,)``).

  A uint8 ``(h, w, 1|3|4)`` field is an ``Image`` (``options.image_encoding``, PNG by
  default: lossless); float64 and zero-size tensors are stored as bytes (exact).

  Example:
    >>> leaf_feature(tf.TensorSpec([1], tf.float32), episode_writer.FileOptions())
    Tensor(shape=(1,), dtype=float32)
    >>> leaf_feature(tf.TensorSpec([8, 8, 3], tf.uint8), episode_writer.FileOptions())
    Image(shape=(8, 8, 3), dtype=uint8)
  """
  shape = tuple(spec.shape)
  if spec.dtype == tf.string:
    return tfds.features.Tensor(shape=shape, dtype=np.object_)
  if (options.use_images and spec.dtype == tf.uint8 and len(shape) == 3 and
      shape[-1] in (1, 3, 4)):
    return tfds.features.Image(shape=shape, dtype=np.uint8,
                               encoding_format=options.image_encoding)
  encoding = options.tensor_encoding
  if shape and (spec.dtype == tf.float64 or 0 in shape):
    encoding = 'bytes' if encoding == 'none' else encoding
  if not shape:
    return (tfds.features.Tensor(shape=(), dtype=np.float64, encoding='bytes')
            if spec.dtype == tf.float64 else spec.dtype)
  return tfds.features.Tensor(shape=shape, dtype=spec.dtype.as_numpy_dtype,
                              encoding=encoding)


def _features(spec: Any, options: episode_writer.FileOptions) -> Any:
  if isinstance(spec, dict):
    return {k: _features(v, options) for k, v in spec.items()}
  return leaf_feature(spec, options) if isinstance(spec, tf.TensorSpec) else spec


class DatasetOutput:
  """The dataset a recording writes: opened at its first episode, published at `close`.

  Args:
    out_dir: the dataset directory (checked at once by `check_out_dir`).
    if_exists: ``'error'``, ``'append'`` or ``'overwrite'`` (as `EpisodeWriter`).
    options, card: `EpisodeWriter`'s `FileOptions` and `DatasetCard`.

  Example:
    >>> import os, tempfile, numpy as np, rlds_lite
    >>> from rlds_lite.convert import rlds_flags
    >>> output = DatasetOutput(os.path.join(tempfile.mkdtemp(), 'toy'))
    >>> spec = lambda: {'steps': {'reward': np.float64}}
    >>> output.add({'steps': {'reward': np.ones(2), **rlds_flags(2, True)}}, spec)
    >>> [len(e['steps']['reward']) for e in rlds_lite.load(output.close(), dense=True)]
    [2]
  """

  def __init__(self, out_dir: Any, if_exists: str = 'error',
               options: Optional[episode_writer.FileOptions] = None,
               card: Optional[episode_writer.DatasetCard] = None):
    self.out_dir = check_out_dir(out_dir, if_exists)
    self._if_exists = if_exists
    self._options = options or episode_writer.FileOptions()
    self._card = card
    self._writer: Optional[episode_writer.EpisodeWriter] = None
    self.num_episodes = 0

  @property
  def path(self) -> str:
    """The dataset version directory (``out_dir/1.0.0``)."""
    return os.path.join(self.out_dir, VERSION)

  def _open(self, spec: Dict[str, Any]) -> None:
    features = features_lib.episode_features(_features(spec, self._options))
    try:
      self._writer = episode_writer.EpisodeWriter(
          os.path.dirname(self.out_dir), os.path.basename(self.out_dir),
          features, options=self._options, version=VERSION,
          if_exists=self._if_exists, card=self._card)
    except ValueError as error:
      if 'features differ' not in str(error):
        raise
      raise ValueError(
          f'record: cannot append to {self.path}: its features differ from '
          "this environment's spaces and infos; choose a new directory or "
          "if_exists='overwrite'.") from None

  def add(self, episode: Dict[str, Any],
          spec: Callable[[], Dict[str, Any]]) -> None:
    """Adds one finished episode; ``spec()`` gives the features at the first."""
    if self._writer is None:
      self._open(spec())
    self._writer.add_episode(episode)
    self.num_episodes += 1

  def close(self) -> str:
    """Publishes the episodes added (atomically); the version directory."""
    if self._writer is None:
      raise ValueError(f'record: no episode finished, so {self.path} was not '
                       'written.')
    return self._writer.close()

  def abort(self) -> None:
    """Discards this session's episodes; the dataset stays as it was."""
    if self._writer is not None:
      self._writer.abort()
