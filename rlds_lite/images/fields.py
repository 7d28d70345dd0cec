"""Image fields of an RLDS dataset, and its episodes with frames still encoded.

``load_encoded`` reads a TFDS RLDS dataset as dense episodes (like
``rlds_lite.load(..., dense=True)``) but leaves every ``tfds.features.Image``
step field encoded: a ``[T]`` string tensor of JPEG/PNG files, ~10x smaller
than the decoded frames, to be decoded where the pipeline chooses
(``rlds_lite.images.decode``). ``image_specs`` says how each is stored.

Example:
  >>> import numpy as np, tensorflow_datasets as tfds
  >>> steps = tfds.features.FeaturesDict({
  ...     'observation': {'image': tfds.features.Image(
  ...         shape=(64, 64, 3), encoding_format='jpeg'),
  ...         'state': tfds.features.Tensor(shape=(2,), dtype=np.float32)}})
  >>> image_specs(steps)
  {'observation/image': ImageSpec(shape=(64, 64, 3), encoding='jpeg', dtype=tf.uint8)}
"""

import os
from typing import Any, Dict, NamedTuple, Optional, Tuple, Union

import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import loading
from rlds_lite import nest_paths
from rlds_lite import rlds_types
from rlds_lite.images import decode

__all__ = ['BadFrame', 'first_bad_frame', 'image_specs', 'load_encoded']

PathLike = Union[str, os.PathLike]


def image_specs(step_features: Any, prefix: str = '') -> Dict[str, decode.ImageSpec]:
  """Path -> ``ImageSpec`` of every image feature of static shape in ``step_features``.

  Args:
    step_features: a step ``FeaturesDict`` (``features['steps'].feature``).
    prefix: a path prefix (for recursion).

  Returns:
    ``{'observation/image': ImageSpec(...), ...}`` in the features' order.
    Images of unknown height or width are left out (they have no fixed
    decoded shape to batch).

  Example:
    >>> import numpy as np
    >>> step = tfds.features.FeaturesDict({'observation': {
    ...     'image': tfds.features.Image(shape=(64, 64, 3),
    ...                                  encoding_format='jpeg'),
    ...     'state': tfds.features.Tensor(shape=(8,), dtype=np.float32)}})
    >>> image_specs(step)
    {'observation/image': ImageSpec(shape=(64, 64, 3), encoding='jpeg', dtype=tf.uint8)}
  """
  specs = {}
  if isinstance(step_features, tfds.features.FeaturesDict):
    for key in step_features.keys():
      specs.update(image_specs(step_features[key], f'{prefix}{key}/'))
    return specs
  if type(step_features) is tfds.features.Image:  # pylint: disable=unidiomatic-typecheck
    shape = tuple(step_features.shape)
    if None not in shape:
      specs[prefix.rstrip('/')] = decode.ImageSpec(
          shape=shape, encoding=step_features.encoding_format or 'png',
          dtype=tf.as_dtype(step_features.np_dtype))
  return specs


def _decode_others(feature: Any, value: Any, specs: Dict[str, Any],
                   prefix: str) -> Any:
  """``value`` decoded with ``feature``'s batch decoder, images left encoded."""
  if prefix.rstrip('/') in specs:
    return value
  if isinstance(feature, tfds.features.FeaturesDict):
    return {k: _decode_others(feature[k], value[k], specs, f'{prefix}{k}/')
            for k in feature.keys()}
  encoded_spec = tf.TensorSpec.from_tensor(value)
  decoded_spec = feature.get_tensor_spec()
  if (encoded_spec.dtype == decoded_spec.dtype and
      encoded_spec.shape[1:].as_list() == decoded_spec.shape.as_list()):
    return value
  return loading.decode_batch_example(feature, value)


def load_encoded(name_or_dir: PathLike,
                 split: str = 'train',
                 *,
                 data_dir: Optional[PathLike] = None,
                 shuffle_files: bool = False,
                 read_config: Optional[tfds.ReadConfig] = None,
                 op: str = 'load'
                 ) -> Tuple[tf.data.Dataset, Dict[str, decode.ImageSpec]]:
  """Dense episodes of a TFDS RLDS dataset, image step fields still encoded.

  Args:
    name_or_dir: a TFDS name or dataset directory (as ``rlds_lite.load``).
    split: the split (TFDS slicing allowed).
    data_dir: where TFDS finds prepared datasets (names only).
    shuffle_files: shuffle the order of the dataset's files.
    read_config: a ``tfds.ReadConfig``.
    op: the function its errors name first (``load: ...``).

  Returns:
    ``(episodes, specs)``: episodes whose ``steps`` are dicts of ``[T, ...]``
    tensors, where each image field of ``specs`` (``image_specs`` of the
    step features) is a ``[T]`` string tensor of encoded frames.

  Raises:
    FileNotFoundError, ValueError: as ``rlds_lite.load``.

  Example:
    >>> import tempfile
    >>> from rlds_lite import synthetic
    >>> path = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=2,
    ...                                 length=3, cameras={'image': (32, 32)})
    >>> episodes, specs = load_encoded(path)
    >>> list(specs)
    ['observation/image']
    >>> next(iter(episodes))['steps']['observation']['image'].shape
    TensorShape([3])
  """
  builder, label = loading.rlds_builder(name_or_dir, data_dir, op=op)
  loading.check_split(builder, split, label, op=op)
  step_feature = builder.info.features[rlds_types.STEPS].feature
  specs = image_specs(step_feature)
  episodes = builder.as_dataset(
      split=split, shuffle_files=shuffle_files, read_config=read_config,
      decoders={rlds_types.STEPS: tfds.decode.SkipDecoding()})

  @tf.autograph.experimental.do_not_convert
  def decode_others(episode: Dict[str, Any]) -> Dict[str, Any]:
    steps = _decode_others(step_feature, episode[rlds_types.STEPS], specs, '')
    return {**episode, rlds_types.STEPS: steps}

  return episodes.map(decode_others, num_parallel_calls=tf.data.AUTOTUNE,
                      deterministic=True), specs


class BadFrame(NamedTuple):
  """A frame that does not decode: its field, step and first bytes."""
  field: str
  step: int
  head: bytes


def first_bad_frame(name_or_dir: PathLike, split: str, episode: int, *,
                    data_dir: Optional[PathLike] = None) -> Optional[BadFrame]:
  """The first frame of episode ``episode`` of ``split`` that does not decode.

  Each image field's frames are decoded one by one, fields in
  ``image_specs`` order, so the error names the field and step that TFDS's
  own decode error leaves out (``rlds_lite.loading.named_read_errors``
  adds them to the readers' errors, ``rlds_lite.validate``'s among them).
  None if every frame decodes.

  Args:
    name_or_dir: a TFDS name or dataset directory (as ``rlds_lite.load``).
    split: a split name (not a slice: ``episode`` counts from its start).
    episode: the episode's index in ``split``.
    data_dir: where TFDS finds prepared datasets (names only).

  Raises:
    ValueError: if the split has no episode ``episode``.

  Example:
    >>> import tempfile
    >>> from rlds_lite import synthetic
    >>> path = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=2,
    ...                                 length=3)
    >>> print(first_bad_frame(path, 'train', 1))
    None
  """
  builder, label = loading.rlds_builder(name_or_dir, data_dir)
  loading.check_split(builder, split, label)
  count = builder.info.splits[split].num_examples
  if not 0 <= episode < count:
    raise ValueError(f'first_bad_frame: split {split!r} has no episode '
                     f'{episode} (it has {count}).')
  episodes, specs = load_encoded(name_or_dir, f'{split}[{episode}:'
                                 f'{episode + 1}]', data_dir=data_dir)
  steps = next(iter(episodes))[rlds_types.STEPS]
  for path, spec in specs.items():
    for step, frame in enumerate(nest_paths.get_path(steps, path).numpy()):
      try:
        decode.decode_frames(tf.constant([frame]), spec)
      except tf.errors.OpError:
        return BadFrame(path, step, frame[:8])
  return None
