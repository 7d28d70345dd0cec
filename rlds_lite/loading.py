"""Load an RLDS dataset stored in the TFDS format, nested or dense.

``load`` opens a registered TFDS dataset by name, or a prepared dataset
directory (the one holding ``dataset_info.json``), and returns its episodes.
With ``dense=True`` each episode's ``steps`` is a dict of ``[T, ...]``
tensors instead of a nested ``tf.data.Dataset``: TFDS parses the whole
episode at once (``decoders={'steps': tfds.decode.SkipDecoding()}``) and
encoded step features (PNG/JPEG images, ``encoding='zlib'``/``'bytes'``
tensors, ...) are then decoded per episode with the steps feature's own batch
decoder, so dense values equal the nested ones exactly.

Example:
  >>> import tempfile
  >>> load(tempfile.mkdtemp() + '/missing')  # doctest: +ELLIPSIS
  Traceback (most recent call last):
  ...
  FileNotFoundError: load: dataset directory '.../missing' does not exist.
"""

import contextlib
import logging
import os
from typing import (Any, Callable, Collection, Iterator, List, Optional,
                    Sequence, Tuple, Union)

import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import atomic_output
from rlds_lite import dataset_files
from rlds_lite import nest_paths
from rlds_lite import rlds_types
from rlds_lite.tfds import features as features_lib

CorruptDatasetError = dataset_files.CorruptDatasetError

PathLike = Union[str, os.PathLike]

_INFO_FILE = 'dataset_info.json'
_PATH_PREFIXES = ('/', './', '../', '~', '.\\', '..\\')


def _looks_like_path(name_or_dir: PathLike) -> bool:
  """Whether ``name_or_dir`` names a directory rather than a TFDS dataset.

  TFDS names may contain ``/`` (``'name/config:1.0.0'``), so only path
  objects, existing paths, absolute/relative/home paths and URLs count.
  """
  if isinstance(name_or_dir, os.PathLike):
    return True
  return (name_or_dir.startswith(_PATH_PREFIXES) or '://' in name_or_dir or
          tf.io.gfile.exists(name_or_dir))


def _is_unpublished(name: str) -> bool:
  """Whether a directory name is a writer's staging or hidden directory.

  Hidden names (rlds_lite's ``.1.0.0.incomplete-*`` staging) and TFDS's
  ``incomplete.*`` directories hold datasets that were never published.
  """
  return name.startswith('.') or name.startswith('incomplete.')


def _dataset_dirs(root: str, depth: int = 2) -> List[str]:
  """Directories at most ``depth`` levels below ``root`` holding dataset info.

  Staging directories of writers are skipped (`_is_unpublished`).
  """
  found = []
  if tf.io.gfile.exists(os.path.join(root, _INFO_FILE)):
    return [root]
  if depth == 0:
    return found
  for child in sorted(tf.io.gfile.listdir(root)):
    child = child.rstrip('/')
    path = os.path.join(root, child)
    if not _is_unpublished(child) and tf.io.gfile.isdir(path):
      found.extend(_dataset_dirs(path, depth - 1))
  return found


def _builder_from_dir(path: PathLike, op: str) -> tfds.core.DatasetBuilder:
  """The TFDS builder of a prepared dataset directory (or its only version)."""
  path = os.path.expanduser(os.fspath(path))
  if not tf.io.gfile.exists(path):
    raise FileNotFoundError(f'{op}: dataset directory {path!r} does not '
                            f'exist{atomic_output.missing_hint(path)}.')
  if not tf.io.gfile.isdir(path):
    raise ValueError(f'{op}: {path!r} is a file, not a dataset directory.')
  candidates = _dataset_dirs(path)
  if not candidates:
    raise ValueError(
        f'{op}: {path!r} is not a TFDS dataset directory: no {_INFO_FILE} in '
        'it or in its config/version subdirectories.')
  if len(candidates) > 1:
    raise ValueError(
        f'{op}: {path!r} holds several datasets (versions/configs): '
        f'{candidates}; pass one of these directories.')
  return dataset_files.open_builder(candidates[0])


def _prepared_dirs(name: str, data_dir: Optional[PathLike]) -> List[str]:
  """Prepared directories a TFDS name may refer to (for error messages)."""
  base = os.fspath(data_dir) if data_dir else os.environ.get(
      'TFDS_DATA_DIR', os.path.expanduser('~/tensorflow_datasets'))
  path = os.path.join(base, name.split(':')[0])
  try:
    return _dataset_dirs(path) if tf.io.gfile.isdir(path) else []
  except tf.errors.OpError:
    return []


def _without_features_json(name: str, data_dir: Optional[PathLike]
                           ) -> Optional[str]:
  """The prepared directory of ``name`` that TFDS's lookup skipped, if any.

  TFDS finds a prepared dataset by name only if its ``features.json``
  exists, even when ``dataset_info.json`` holds the features (and TFDS then
  never reads ``features.json``). This finds such a directory: the highest
  version (or the one ``name`` asks for) of a dataset without configs, or
  of the config ``name`` asks for; None if there is none, or several
  configs to choose from.
  """
  version = name.split(':', 1)[1] if ':' in name else None
  found = [d for d in _prepared_dirs(name, data_dir)
           if not tf.io.gfile.exists(
               os.path.join(d, dataset_files.FEATURES_FILE))
           and tfds.core.Version.is_valid(os.path.basename(d))
           and version in (None, os.path.basename(d))]
  if len({os.path.dirname(d) for d in found}) != 1:
    return None
  return max(found, key=lambda d: tfds.core.Version(os.path.basename(d)))


def _builder_from_name(name: str, data_dir: Optional[PathLike],
                       op: str) -> tfds.core.DatasetBuilder:
  """The TFDS builder registered (or prepared in ``data_dir``) under ``name``.

  A prepared dataset whose ``features.json`` is missing, which TFDS's
  lookup by name does not find, is opened from its directory: its features
  are in ``dataset_info.json`` (else the error names ``features.json``).
  """
  try:
    return tfds.builder(name, data_dir=data_dir)
  except tfds.core.registered.DatasetNotFoundError as e:
    prepared = _without_features_json(name, data_dir)
    if prepared is not None:
      return dataset_files.open_builder(prepared)
    where = f' in data_dir {os.fspath(data_dir)!r}' if data_dir else ''
    raise ValueError(
        f'{op}: no TFDS dataset named {name!r} is registered or prepared'
        f'{where}. Pass a registered TFDS name, or the path of a prepared '
        'dataset directory.') from e
  except Exception as error:  # pylint: disable=broad-except
    # TFDS read a damaged dataset_info.json / features.json: name the file.
    for path in _prepared_dirs(name, data_dir):
      problem = dataset_files.metadata_problem(path)
      if problem is not None:
        raise problem from None
    raise ValueError(
        f'{op}: TFDS cannot open the dataset {name!r}: '
        f'{type(error).__name__}: {" ".join(str(error).split())[:300]}'
    ) from None


_CHUNK_LAYOUT = 'rlds_lite_chunks'
"""The metadata key of a chunk dataset (``random_access.layout.LAYOUT_NAME``)."""
_MAX_KEYS_NAMED = 8


def _chunk_source(builder: tfds.core.DatasetBuilder) -> Optional[str]:
  """The source path of a chunk dataset (``rlds_lite.random_access``), else None.

  A chunk dataset's ``metadata.json`` holds the layout key; its source is
  ``'?'`` if the metadata does not name it.
  """
  try:
    metadata = builder.info.metadata
    if not metadata or _CHUNK_LAYOUT not in metadata:
      return None
    source = metadata.get('source')
  except Exception:  # pylint: disable=broad-except
    return None  # Unreadable metadata: not a chunk dataset we can name.
  path = source.get('path') if isinstance(source, dict) else None
  return str(path) if path else '?'


def _features_text(features: Any) -> str:
  """The top-level feature keys, with the kind of each (a few, then ``...``).

  Example:
    >>> _features_text(tfds.features.FeaturesDict({
    ...     'steps': {'x': tf.float32}, 'offset': tf.int64}))
    'offset (Tensor), steps (FeaturesDict)'
  """
  if not isinstance(features, tfds.features.FeaturesDict):
    return f'a {type(features).__name__}, not a FeaturesDict'
  keys = sorted(features.keys())
  named = [f'{key} ({type(features[key]).__name__})'
           for key in keys[:_MAX_KEYS_NAMED]]
  more = len(keys) - len(named)
  return ', '.join(named) + (f' and {more} more' if more > 0 else '')


def _not_rlds_error(builder: tfds.core.DatasetBuilder, name: str,
                    op: str = 'load') -> ValueError:
  """The ValueError of a dataset without RLDS ``steps``: short, one line.

  A chunk dataset (``rlds_lite.random_access.convert``'s output) is named as
  one, with its source; other datasets name their top-level features.
  """
  source = _chunk_source(builder)
  if source is not None:
    return ValueError(
        f'{op}: {name} is a chunk dataset (rlds_lite.random_access, converted '
        f'from {source}); pass its source, or read it with '
        'rlds_lite.random_access.')
  return ValueError(
      f'{op}: dataset {name!r} is not an RLDS dataset: it has no '
      f"{rlds_types.STEPS!r} feature of type tfds.features.Dataset (its "
      f'top-level features: {_features_text(builder.info.features)}).')


def _steps_feature(builder: tfds.core.DatasetBuilder, name: str,
                   op: str = 'load') -> tfds.features.Dataset:
  """The ``steps`` feature of an RLDS dataset; a ValueError if there is none."""
  features = builder.info.features
  steps = None
  if isinstance(features, tfds.features.FeaturesDict) and (
      rlds_types.STEPS in features.keys()):
    steps = features[rlds_types.STEPS]
  if not isinstance(steps, tfds.features.Dataset):
    raise _not_rlds_error(builder, name, op)
  return steps


def _check_split(builder: tfds.core.DatasetBuilder, split: Any,
                 label: str, op: str = 'load') -> None:
  """Raises a ValueError naming the splits if ``split`` names an unknown one.

  Only string splits are checked (``'train'``, ``'train[:10%]+test'``);
  other forms (``tfds.core.ReadInstruction``) are left to TFDS.
  """
  dataset_files.check_has_splits(builder)
  available = sorted(builder.info.splits.keys())
  if not isinstance(split, str):
    return
  for part in split.split('+'):
    name = part.split('[')[0].strip()
    if name not in available:
      raise ValueError(f'{op}: dataset {label!r} has no split {name!r} '
                       f'(its splits: {available}).')


def rlds_builder(name_or_dir: PathLike,
                 data_dir: Optional[PathLike] = None,
                 *,
                 op: str = 'load') -> Tuple[tfds.core.DatasetBuilder, str]:
  """The TFDS builder of an RLDS dataset, found as `load` finds it, and its label.

  Args:
    name_or_dir: a prepared dataset directory (or the directory of its only
      version) or a registered TFDS name.
    data_dir: where TFDS looks for prepared datasets (names only).
    op: the function named at the start of error messages (an entry point
      that reads datasets names itself: ``robot_samples_dataset: ...``).

  Returns:
    ``(builder, label)``; the label names the dataset in error messages.

  Raises:
    FileNotFoundError, ValueError: for a missing directory, an unknown name
      or a dataset that is not RLDS (no ``steps`` feature).

  Example:
    >>> rlds_builder('/no/such/dir')
    Traceback (most recent call last):
    ...
    FileNotFoundError: load: dataset directory '/no/such/dir' does not exist.
  """
  if not isinstance(name_or_dir, (str, os.PathLike)):
    raise TypeError(
        f'{op}: name_or_dir must be a TFDS name or a directory path, got '
        f'{type(name_or_dir).__name__}.')
  if _looks_like_path(name_or_dir):
    builder = _builder_from_dir(name_or_dir, op)
  else:
    builder = _builder_from_name(name_or_dir, data_dir, op)
  label = os.fspath(name_or_dir)
  _steps_feature(builder, label, op)
  unreadable = features_lib.unreadable_step_field(builder.info.features)
  if unreadable:  # TFDS's parser would kill the process (SIGFPE).
    raise ValueError(
        f'{op}: dataset {label!r}: step field {unreadable[0]!r} has shape '
        f'{unreadable[1]} stored as plain values, which TFDS cannot parse '
        '(it divides by the zero size and kills the process); it is not '
        'read.')
  return builder, label


def check_split(builder: tfds.core.DatasetBuilder, split: Any,
                label: str, *, op: str = 'load') -> None:
  """A ValueError naming the splits if ``split`` names an unknown one.

  Example:
    >>> import rlds_lite
    >>> path = rlds_lite.synthetic.dataset(2)
    >>> check_split(rlds_builder(path)[0], 'test', 'toy')
    Traceback (most recent call last):
    ...
    ValueError: load: dataset 'toy' has no split 'test' (its splits: ['train']).
  """
  _check_split(builder, split, label, op)


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

  Each step field is stored as its own list, so a damaged record or
  declared features whose shape was edited (``(3,)`` to ``()``) would
  otherwise parse into fields of different lengths (15 observation values
  for 5 steps): this raises ``tf.errors.InvalidArgumentError`` instead,
  naming the field and the dataset ``label``.

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


def _dense_episodes(builder: tfds.core.DatasetBuilder, split: Any,
                    steps_feature: tfds.features.Dataset, shuffle_files: bool,
                    read_config: Optional[tfds.ReadConfig],
                    label: str = '',
                    step_fields: Optional[Sequence[str]] = None
                    ) -> tf.data.Dataset:
  """Episodes whose steps are parsed (and decoded) as whole ``[T, ...]`` tensors."""
  episodes = as_dataset(
      builder, split=split, shuffle_files=shuffle_files,
      read_config=read_config,
      decoders={rlds_types.STEPS: tfds.decode.SkipDecoding()})
  return decode_dense_steps(episodes, steps_feature,
                            label or os.fspath(builder.data_dir), step_fields)


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
  """The paths of the step fields ``step_fields`` names, in ``tf.nest`` order.

  A path selects the field or everything below it (``'observation'``).

  Raises:
    KeyError: for a path that names no step field (the fields are listed).

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
  """``feature.decode_batch_example(value)``, without TFDS's own warning.

  TFDS's ``decode_batch_example`` reads its deprecated ``dtype`` attribute
  itself, and absl then warns the user (``FeatureConnector.dtype is
  deprecated``) about code that is not theirs; that warning is dropped
  while it runs (in graph code: while it is traced).

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


def decode_dense_steps(episodes: tf.data.Dataset,
                       steps_feature: tfds.features.Dataset,
                       label: str = '',
                       step_fields: Optional[Sequence[str]] = None
                       ) -> tf.data.Dataset:
  """Decodes skip-decoded ``[T, ...]`` steps (images, encoded tensors).

  Every step field is first checked to have one entry per step
  (`check_step_lengths`).

  Args:
    episodes: episodes parsed with ``decoders={'steps': SkipDecoding()}``.
    steps_feature: the dataset's ``steps`` feature.
    label: names the dataset in errors.
    step_fields: keep only these step fields (`select_step_fields`), and
      decode only them: the others (their images) are dropped undecoded.
      None keeps and decodes every field.

  Returns:
    The episodes with checked, decoded dense steps.
  """
  step_feature = steps_feature.feature
  encoded_spec = episodes.element_spec[rlds_types.STEPS]
  if step_fields is not None:
    kept = {path: _leaf_feature(step_feature, path)
            for path in select_step_fields(steps_feature, step_fields)}
    leaf_decoding = {
        path: _needs_decoding(nest_paths.get_path(encoded_spec, path),
                              leaf.get_tensor_spec())
        for path, leaf in kept.items()}
  needs_decoding = _needs_decoding(encoded_spec, step_feature.get_tensor_spec())

  @tf.autograph.experimental.do_not_convert
  def decode(episode):
    steps = check_step_lengths(episode[rlds_types.STEPS], label)
    if step_fields is not None:
      flat = {}
      for path, leaf in kept.items():
        value = nest_paths.get_path(steps, path)
        flat[path] = (decode_batch_example(leaf, value)
                      if leaf_decoding[path] else value)
      steps = nest_paths.nest_from_paths(flat)
    elif needs_decoding:
      steps = decode_batch_example(step_feature, steps)
    return {**episode, rlds_types.STEPS: steps}

  return episodes.map(decode, num_parallel_calls=tf.data.AUTOTUNE,
                      deterministic=True)


def as_dataset(builder: tfds.core.DatasetBuilder, **kwargs) -> tf.data.Dataset:
  """``builder.as_dataset(**kwargs)``; features TFDS cannot parse name their file.

  Features edited into a spec TFDS cannot parse (two unknown dimensions of
  an unencoded tensor) raise a `CorruptDatasetError` naming the file TFDS
  took them from (``dataset_info.json``, or ``features.json`` when the
  former holds no features), instead of TFDS's ``NotImplementedError``.

  Example:
    >>> from rlds_lite import synthetic
    >>> path = synthetic.dataset(2, seed=0)
    >>> int(as_dataset(rlds_builder(path)[0], split='train').cardinality())
    2
  """
  try:
    return builder.as_dataset(**kwargs)
  except NotImplementedError as error:  # TFDS: "Specification error for ..."
    raise dataset_files.CorruptDatasetError(
        dataset_files.features_file(os.fspath(builder.data_dir)),
        'TFDS cannot read the dataset with the features declared here: '
        f'{" ".join(str(error).split())[:240]}') from None


def _array_record_error(label: str) -> ValueError:
  return ValueError(
      f'load: dataset {label!r} is stored as array_record, which TFDS reads '
      'only by random access: read it with tfds.data_source(name, data_dir=...) '
      'or tfds.builder_from_directory(path).as_data_source(); rlds_lite.load '
      'reads tfrecord datasets.')


def episode_reader(builder: tfds.core.DatasetBuilder
                   ) -> Callable[[Any], tf.data.Dataset]:
  """``split -> dense episodes`` of a builder, as ``load(dense=True)`` reads them.

  Example:
    >>> from rlds_lite import synthetic
    >>> path = synthetic.dataset(3, seed=0)
    >>> read = episode_reader(rlds_builder(path)[0])
    >>> int(read('train[1:]').cardinality())
    2
  """
  steps_feature = _steps_feature(builder, os.fspath(builder.data_dir))
  return lambda split: _dense_episodes(
      builder, split, steps_feature, False,
      tfds.ReadConfig(try_autocache=False))


@contextlib.contextmanager
def named_read_errors(builder: tfds.core.DatasetBuilder, split: Any,
                      known: Collection[str] = ()) -> Iterator[None]:
  """Turns a TF error while reading ``split`` into one naming the damaged file.

  TF's readers raise ``DataLossError: corrupted record at 417`` (or a parse
  error) without naming the file; inside this block such a
  ``tf.errors.OpError`` is diagnosed (``rlds_lite.dataset_files.diagnose``:
  the split's files are checked, then its episodes decoded again) and
  re-raised as a `CorruptDatasetError` naming the file, episode and field
  (for a camera frame that does not decode, which TFDS's error does not
  name, also its step: ``rlds_lite.images.first_bad_frame``). An error the
  files do not explain (out of memory, a failing user
  function) is re-raised unchanged.

  ``known``: files already known to be damaged (a reader that reads around
  them, as ``rlds_lite.validate`` does): the diagnosis names another.

  Args:
    builder: the dataset's builder.
    split: the split being read.

  Example:
    >>> from rlds_lite import synthetic
    >>> path = synthetic.dataset(3, seed=0)
    >>> builder, _ = rlds_builder(path)
    >>> episodes = load(path, dense=True)
    >>> shard = os.path.join(path, 'toy-train.tfrecord-00000')
    >>> data = bytearray(open(shard, 'rb').read())
    >>> data[-10] ^= 0xFF  # One flipped bit in the last episode's record.
    >>> _ = open(shard, 'wb').write(bytes(data))
    >>> with named_read_errors(builder, 'train'):  # doctest: +ELLIPSIS
    ...   for episode in episodes:
    ...     pass
    Traceback (most recent call last):
    ...
    rlds_lite.dataset_files.CorruptDatasetError: .../toy-train.tfrecord-00000: episode 2 of split 'train': record 2 is corrupted (corrupted record at ...); the file holds episodes 0-2.
  """
  try:
    yield
  except tf.errors.OpError as error:
    problem = dataset_files.diagnose(builder, split, error,
                                     read=episode_reader(builder),
                                     known=known)
    if problem is None:
      raise
    raise _with_bad_frame(builder, split, problem) from None


def _with_bad_frame(builder: tfds.core.DatasetBuilder, split: Any,
                    problem: dataset_files.CorruptDatasetError
                    ) -> dataset_files.CorruptDatasetError:
  """``problem`` as the camera frame that does not decode, if that is it.

  TFDS's decode error names neither field nor step (``Unknown image file
  format``); the episode's frames are decoded one by one to find them
  (`frame_error`). ``problem`` unchanged if it names a field already, the
  split is sliced, or no frame fails alone.
  """
  if (problem.kind != dataset_files.UNDECODABLE or problem.field is not None
      or problem.episode is None or not isinstance(split, str)
      or '[' in split):
    return problem
  return frame_error(builder, split, problem.episode, problem.cause) or problem


def frame_error(builder: tfds.core.DatasetBuilder, split: str, episode: int,
                cause: Optional[str] = None
                ) -> Optional[dataset_files.CorruptDatasetError]:
  """The error naming the first camera frame of an episode that does not decode.

  The frames are decoded one by one (``rlds_lite.images.first_bad_frame``);
  the error names the shard holding the episode, the episode, field and
  step, and the frame's first bytes (kind ``'undecodable'``).

  Args:
    builder: the dataset's builder.
    split: a plain split name (``episode`` counts from its start).
    episode: the episode's index in ``split``.
    cause: TF's message for the failed decode, quoted in the error.

  Returns:
    The error, or None if every frame decodes alone (or they cannot be read).

  Example:
    >>> from rlds_lite import synthetic
    >>> import tempfile
    >>> path = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=2,
    ...                                 length=3)
    >>> print(frame_error(rlds_builder(path)[0], 'train', 1))
    None
  """
  from rlds_lite.images import fields  # pylint: disable=g-import-not-at-top
  try:
    bad = fields.first_bad_frame(builder.data_dir, split, episode)
  except (tf.errors.OpError, ValueError, OSError):
    return None
  shard = dataset_files.shard_of(builder, split, episode)
  if bad is None or shard is None:
    return None
  declared = os.path.basename(
      dataset_files.features_file(os.fspath(builder.data_dir)))
  why = f' ({cause.rstrip(".")})' if cause else ''
  return dataset_files.CorruptDatasetError(
      shard.path, f'step {bad.step} does not decode as the image its feature '
      f'declares in {declared}{why}; its bytes begin {bad.head!r}.',
      episode=episode, split=split, field=bad.field,
      kind=dataset_files.UNDECODABLE, step=bad.step, cause=cause)


def episode_error(builder: tfds.core.DatasetBuilder, split: str,
                  episode: int, error: BaseException
                  ) -> Optional[dataset_files.CorruptDatasetError]:
  """What kept one episode of a plain split from reading, named; or None.

  For a reader of that one episode (``rlds-lite video --episode N``):
  `named_read_errors` would look at the whole split and could name another
  episode. Checked in turn: the framing (and, after lost data, the record
  checksums) of the shard holding it; a camera frame that does not decode
  (`frame_error`); the episode decoded again with the declared features.

  Args:
    builder: the dataset's builder.
    split: a plain split name.
    episode: the episode's index in ``split``.
    error: the ``tf.errors.OpError`` its read raised.

  Returns:
    A `CorruptDatasetError` naming the file and episode, or None if the
    episode reads back whole (the error came from elsewhere).
  """
  one = f'{split}[{episode}:{episode + 1}]'
  data_loss = isinstance(error, (tf.errors.DataLossError,
                                 tf.errors.UnknownError))
  problems = dataset_files.find_damage(builder, one, records=data_loss)
  if problems:
    return problems[0]
  cause = dataset_files.short_message(error)
  problem = frame_error(builder, split, episode, cause)
  shard = dataset_files.shard_of(builder, split, episode)
  if problem is not None or shard is None:
    return problem
  try:
    for _ in episode_reader(builder)(one):
      pass
  except tf.errors.OpError as again:
    return dataset_files.undecodable_error(shard, episode, again)
  return None


def load(name_or_dir: PathLike,
         split: str = 'train',
         *,
         data_dir: Optional[PathLike] = None,
         dense: bool = False,
         shuffle_files: bool = False,
         read_config: Optional[tfds.ReadConfig] = None,
         episodes: Any = None,
         last_step: str = 'invalid',
         step_fields: Optional[Sequence[str]] = None) -> tf.data.Dataset:
  """The episodes of an RLDS dataset stored in the TFDS format.

  Args:
    name_or_dir: a TFDS dataset name (``'name'``, ``'name/config'``,
      ``'name:1.0.0'``), found among registered datasets or prepared in
      ``data_dir``; or a dataset directory: a ``pathlib.Path``, an existing
      path, a path starting with ``/``, ``./``, ``../`` or ``~``, or a URL.
      The directory is the prepared one holding ``dataset_info.json``, or a
      parent with exactly one such config/version directory below it.
    split: the split to read; TFDS slicing (``'train[:10%]'``) works.
    data_dir: where TFDS looks for prepared datasets (names only).
    dense: if True, each episode's ``steps`` is a dict of ``[T, ...]``
      tensors (the values nested steps would have, decoded), read much faster
      than nested steps; if False, ``steps`` is a ``tf.data.Dataset`` of steps
      as in RLDS. Episode metadata is kept either way.
    shuffle_files: shuffle the order of the dataset's files.
    read_config: a ``tfds.ReadConfig`` (seeds, interleaving, ...).
    episodes: read only these episodes of ``split`` (a plain split name),
      without reading or decoding the others: a list of indices (read in
      that order), an EXPR over the episode catalog
      (``'length > 20 and terminated'``), a function of a catalog row, or a
      ``rlds_lite.catalog.Catalog`` (see `rlds_lite.catalog.selection`).
      Not with ``shuffle_files`` or ``read_config``.
    last_step: with ``episodes`` an EXPR or a function: what the catalog's
      ``return`` sums: ``'invalid'`` (default, RLDS) every step but the
      last, warning once (`rlds_lite.LastStepValuesWarning`) if an EXPR
      naming ``return`` (or a function) leaves non-zero last rewards out;
      ``'valid'`` every step. The episodes read are the same either way.
    step_fields: with ``dense=True``: keep only these step fields (paths;
      ``'observation'`` selects everything below it), and decode only them:
      the others, their images, are dropped undecoded. Default: all.

  Returns:
    A ``tf.data.Dataset`` of episodes.

  Raises:
    FileNotFoundError: if the dataset directory does not exist.
    ValueError: if no dataset has that name, the directory holds no (or
      several) prepared datasets, the dataset is not RLDS (no ``steps``
      Dataset feature), a split name is unknown or the dataset is stored as
      array_record (read it with ``tfds.data_source``).
    CorruptDatasetError: (a ValueError) naming the file, if
      ``dataset_info.json`` is damaged, or ``features.json`` when TFDS
      takes the features from it (a ``dataset_info.json`` without features:
      datasets not written by rlds_lite), or a shard file
      of the split is missing, empty or truncated (checked when the dataset
      is opened, from one directory listing; see
      ``rlds_lite.dataset_files.check_open``). Damage inside a shard (a
      flipped byte) shows only when it is read: TF then raises its own
      ``tf.errors.DataLossError`` without the file name. ``rlds-lite
      validate``, and this library's readers (``validate``, ``inspect``,
      ``stats``, ``convert``), name the file and episode instead (see
      `named_read_errors`).

  Example:
    >>> load('no_such_rlds_dataset')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: load: no TFDS dataset named 'no_such_rlds_dataset' ...
  """
  builder, label = rlds_builder(name_or_dir, data_dir)
  steps_feature = _steps_feature(builder, label)
  if step_fields is not None:
    if not dense:
      raise ValueError('load: step_fields needs dense=True (nested steps are '
                       'decoded step by step by TFDS).')
    try:
      select_step_fields(steps_feature, step_fields)
    except KeyError as e:
      raise KeyError(f'load: {e.args[0]}') from None
  if not tf.io.gfile.exists(os.path.join(os.fspath(builder.data_dir), _INFO_FILE)):
    raise ValueError(
        f'load: dataset {label!r} is registered but not prepared in '
        f'{os.fspath(builder.data_dir)!r}; prepare it first '
        '(builder.download_and_prepare()) or pass the right data_dir.')
  _check_split(builder, split, label)
  dataset_files.check_open(builder, split)
  if episodes is not None:
    if shuffle_files or read_config is not None:
      raise ValueError('load: episodes= reads the chosen episodes in their '
                       'order; it does not take shuffle_files or read_config '
                       '(shuffle the result instead).')
    from rlds_lite.catalog import selection  # pylint: disable=g-import-not-at-top
    return selection.load_episodes(builder, split, episodes, dense=dense,
                                   last_step=last_step,
                                   step_fields=step_fields)
  if last_step != 'invalid':
    from rlds_lite.dense import last_step as last_step_lib  # pylint: disable=g-import-not-at-top
    last_step_lib.as_last_step(last_step, 'load')
    raise ValueError("load: last_step says what an episodes= EXPR's return "
                     'sums; it needs episodes= (the episodes read are '
                     'complete either way).')
  if dataset_files.file_format(builder) == 'array_record':
    raise _array_record_error(label)
  if dense:
    return _dense_episodes(builder, split, steps_feature, shuffle_files,
                           read_config, label, step_fields)
  return as_dataset(builder, split=split, shuffle_files=shuffle_files,
                     read_config=read_config)
