"""Decoding stored TFDS examples into steps: nested, dense ``[T, ...]``, or images left encoded."""

import contextlib
import logging
import os
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence
import warnings

import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import dataset_files
from rlds_lite import nest_paths
from rlds_lite import rlds_types

__all__ = ['ImageSpec', 'as_dataset', 'check_step_lengths',
           'decode_batch_example', 'decode_steps', 'dense_episodes', 'dense_steps_spec',
           'image_specs', 'select_step_fields']

_graph_fn = tf.autograph.experimental.do_not_convert


class ImageSpec(NamedTuple):
  """How the frames of an image field are stored: ``shape`` (h, w, c), ``encoding``, ``dtype``.

  Example:
    >>> spec = ImageSpec((64, 48, 3))  # JPEG frames of uint8 by default.
    >>> spec.encoding, spec.dtype.name, spec.frame_bytes
    ('jpeg', 'uint8', 9216)
    >>> ImageSpec((64, 48, 1), 'png', tf.uint16).frame_bytes
    6144
  """
  shape: Any
  encoding: Optional[str] = 'jpeg'
  dtype: tf.DType = tf.uint8

  @property
  def frame_bytes(self) -> int:
    """Bytes of one decoded frame."""
    h, w, c = self.shape
    return h * w * c * self.dtype.size


def image_specs(step_features: Any, prefix: str = '') -> Dict[str, ImageSpec]:
  """Path -> ``ImageSpec`` of every image feature of static shape in a step ``FeaturesDict``.

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
      specs[prefix.rstrip('/')] = ImageSpec(
          shape=shape, encoding=step_features.encoding_format or 'png',
          dtype=tf.as_dtype(step_features.np_dtype))
  return specs


def _needs_decoding(encoded: Any, decoded: Any) -> bool:
  """Whether skip-decoded step tensors differ in dtype/shape from decoded ones."""
  flat_encoded = tf.nest.flatten(encoded)
  flat_decoded = tf.nest.flatten(decoded)
  if len(flat_encoded) != len(flat_decoded):
    return True
  for enc, dec in zip(flat_encoded, flat_decoded):
    if enc.dtype != dec.dtype:
      return True
    if enc.shape[1:].as_list() != list(dec.shape):
      return True
  return False


def check_step_lengths(steps: Any, label: str) -> Any:
  """Dense ``steps`` after asserting (in-graph) one entry per step in every field.

  Example:
    >>> steps = {'is_first': tf.constant([True, False]),
    ...          'obs': tf.zeros([6])}
    >>> try:
    ...   check_step_lengths(steps, 'toy')
    ... except tf.errors.InvalidArgumentError as e:
    ...   print(e.message.split(':')[0])
    step field 'obs' does not have one entry per step (as is_first has)
  """
  flat = nest_paths.flatten_with_paths(steps)
  if len(flat) < 2:
    return steps
  values = dict(flat)
  reference_path = next(
      (f for f in (rlds_types.IS_FIRST, rlds_types.IS_LAST) if f in values),
      flat[0][0])
  length = tf.shape(values[reference_path], out_type=tf.int64)[0]
  checks = []
  for path, value in flat:
    if path == reference_path or value.shape.rank == 0:
      continue
    checks.append(tf.debugging.assert_equal(
        tf.shape(value, out_type=tf.int64)[0], length,
        message=(f'step field {path!r} does not have one entry per step (as '
                 f'{reference_path} has): the data of dataset {label!r} does '
                 'not fit its declared features')))
  with tf.control_dependencies(checks):
    return tf.nest.map_structure(tf.identity, steps)


def dense_steps_spec(step_spec: Any) -> Any:
  """Specs of one step -> the ``[T, ...]`` specs of dense steps (rank + 1).

  Example:
    >>> dense_steps_spec({'x': tf.TensorSpec([4], tf.float32)})
    {'x': TensorSpec(shape=(None, 4), dtype=tf.float32, name=None)}
  """
  return tf.nest.map_structure(
      lambda s: tf.TensorSpec([None] + s.shape.as_list(), s.dtype), step_spec)


def select_step_fields(steps_feature: tfds.features.Dataset,
                       step_fields: Sequence[str]) -> List[str]:
  """The paths of the step fields ``step_fields`` names (and all below them), in ``tf.nest`` order.

  Example:
    >>> import numpy as np
    >>> steps = tfds.features.Dataset({'action': np.float32, 'observation': {
    ...     'image': tfds.features.Image(shape=(4, 4, 3)),
    ...     'state': np.float32}})
    >>> select_step_fields(steps, ['observation', 'action'])
    ['action', 'observation/image', 'observation/state']
  """
  if isinstance(step_fields, str):
    raise TypeError('step_fields must be a list of step field paths, got the '
                    f'string {step_fields!r}.')
  paths = [p for p, _ in nest_paths.flatten_with_paths(
      steps_feature.feature.get_tensor_spec())]
  chosen = set()
  for field in step_fields:
    chosen.update(nest_paths.paths_under(paths, field))
  return [p for p in paths if p in chosen]


def _leaf_feature(feature: Any, path: str) -> Any:
  for key in path.split('/'):
    feature = feature[key]
  return feature


class _TfdsDtypeWarnings(logging.Filter):
  """Drops TFDS's warning about its own use of ``FeatureConnector.dtype``."""

  def filter(self, record: logging.LogRecord) -> bool:
    return '.dtype` is deprecated' not in str(record.msg)


def decode_batch_example(feature: tfds.features.FeatureConnector,
                         value: Any) -> Any:
  """``feature.decode_batch_example(value)``, without TFDS's warning about itself.

  Example:
    >>> feature = tfds.features.Image(shape=(2, 2, 1), encoding_format='png')
    >>> png = tf.io.encode_png(tf.zeros([2, 2, 1], tf.uint8))
    >>> decode_batch_example(feature, tf.stack([png, png])).shape
    TensorShape([2, 2, 2, 1])
  """
  absl_logger = logging.getLogger('absl')
  quiet = _TfdsDtypeWarnings()
  absl_logger.addFilter(quiet)
  try:
    return feature.decode_batch_example(value)
  finally:
    absl_logger.removeFilter(quiet)


class _OrderingGuardFilter(logging.Filter):
  """Drops TFDS's warning that an ordered dataset is read out of order."""

  def filter(self, record: logging.LogRecord) -> bool:
    return 'is an ordered dataset' not in record.getMessage()


@contextlib.contextmanager
def _quiet_ordering_guard(read_config: Optional[tfds.ReadConfig]
                          ) -> Iterator[None]:
  """With the ordering guard off, TFDS's and tf.data's warnings about it dropped."""
  if read_config is None or read_config.enable_ordering_guard:
    yield
    return
  absl_logger = logging.getLogger('absl')
  quiet = _OrderingGuardFilter()
  absl_logger.addFilter(quiet)
  try:
    with warnings.catch_warnings():
      warnings.filterwarnings('ignore', message='The `deterministic` argument')
      yield
  finally:
    absl_logger.removeFilter(quiet)


def as_dataset(builder: tfds.core.DatasetBuilder, **kwargs) -> tf.data.Dataset:
  """``builder.as_dataset(**kwargs)``; features TFDS cannot parse name their file.

  Example:
    >>> from rlds_lite import synthetic
    >>> builder = tfds.builder_from_directory(synthetic.dataset(2, seed=0))
    >>> int(as_dataset(builder, split='train').cardinality())
    2
  """
  try:
    with _quiet_ordering_guard(kwargs.get('read_config')):
      return builder.as_dataset(**kwargs)
  except NotImplementedError as error:  # TFDS: "Specification error for ..."
    raise dataset_files.CorruptDatasetError(
        dataset_files.features_file(os.fspath(builder.data_dir)),
        'TFDS cannot read the dataset with the features declared here: '
        f'{" ".join(str(error).split())[:240]}') from None


def _leaf_decoders(steps_feature: tfds.features.Dataset, encoded_spec: Any,
                   fields: Optional[Sequence[str]],
                   keep_encoded: Sequence[str]) -> Dict[str, Any]:
  """Path -> the leaf feature that decodes it (None: kept as stored)."""
  step_feature = steps_feature.feature
  if fields is None:
    paths = [p for p, _ in nest_paths.flatten_with_paths(
        step_feature.get_tensor_spec())]
  else:
    paths = select_step_fields(steps_feature, fields)
  decoders = {}
  for path in paths:
    leaf = _leaf_feature(step_feature, path)
    stored = nest_paths.get_path(encoded_spec, path)
    needed = path not in keep_encoded and _needs_decoding(
        stored, leaf.get_tensor_spec())
    decoders[path] = leaf if needed else None
  return decoders


def decode_steps(episodes: tf.data.Dataset,
                 steps_feature: tfds.features.Dataset, *,
                 fields: Optional[Sequence[str]] = None,
                 encoded_images: bool = False,
                 label: str = '') -> tf.data.Dataset:
  """Decodes skip-decoded ``[T, ...]`` steps (images, encoded tensors) per episode.

  Args:
    episodes: episodes parsed with ``decoders={'steps': SkipDecoding()}``.
    fields: keep (and decode) only these step fields; None: all.
    encoded_images: leave image fields (`image_specs`) as ``[T]`` strings.
    label: names the dataset in errors.

  Example:
    >>> from rlds_lite import synthetic
    >>> builder = tfds.builder_from_directory(synthetic.dataset(2, seed=0))
    >>> parsed = builder.as_dataset(split='train', decoders={
    ...     'steps': tfds.decode.SkipDecoding()})
    >>> ds = decode_steps(parsed, builder.info.features['steps'],
    ...                   fields=['reward'])
    >>> list(ds.element_spec['steps'])
    ['reward']
  """
  step_feature = steps_feature.feature
  encoded_spec = episodes.element_spec[rlds_types.STEPS]
  keep = image_specs(step_feature) if encoded_images else {}
  if fields is None and not keep:  # The whole step feature decodes at once.
    decoders = None
    whole = _needs_decoding(encoded_spec, step_feature.get_tensor_spec())
  else:
    decoders = _leaf_decoders(steps_feature, encoded_spec, fields, keep)

  @_graph_fn
  def decode(episode):
    steps = check_step_lengths(episode[rlds_types.STEPS], label)
    if decoders is not None:
      steps = nest_paths.nest_from_paths({
          path: (nest_paths.get_path(steps, path) if leaf is None else
                 decode_batch_example(leaf, nest_paths.get_path(steps, path)))
          for path, leaf in decoders.items()})
    elif whole:
      steps = decode_batch_example(step_feature, steps)
    return {**episode, rlds_types.STEPS: steps}

  return episodes.map(decode, num_parallel_calls=tf.data.AUTOTUNE,
                      deterministic=True)


def dense_episodes(builder: tfds.core.DatasetBuilder, split: Any, *,
                   fields: Optional[Sequence[str]] = None,
                   encoded_images: bool = False,
                   shuffle_files: bool = False,
                   read_config: Optional[tfds.ReadConfig] = None,
                   label: str = '') -> tf.data.Dataset:
  """The episodes of a split, steps as dicts of ``[T, ...]`` tensors (`decode_steps`).

  Example:
    >>> from rlds_lite import synthetic
    >>> builder = tfds.builder_from_directory(synthetic.dataset(2, seed=0))
    >>> int(dense_episodes(builder, 'train').cardinality())
    2
  """
  episodes = as_dataset(
      builder, split=split, shuffle_files=shuffle_files,
      read_config=read_config,
      decoders={rlds_types.STEPS: tfds.decode.SkipDecoding()})
  return decode_steps(episodes, builder.info.features[rlds_types.STEPS],
                      fields=fields, encoded_images=encoded_images,
                      label=label or os.fspath(builder.data_dir))
