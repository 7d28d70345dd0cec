"""One split of an RLDS dataset, opened once (`open`, `Source`): the value every reader takes."""

import contextlib
import os
from typing import (Any, Callable, Collection, Dict, List, Optional,
                    Sequence, Union)

import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import atomic_output
from rlds_lite import dataset_files
from rlds_lite import decoding
from rlds_lite import diagnosis
from rlds_lite import nest_paths
from rlds_lite import op_context
from rlds_lite import rlds_types
from rlds_lite.tfds import features as features_lib

__all__ = ['RandomAccessEpisodes', 'Source', 'as_source', 'count_steps',
           'default_split', 'open', 'open_builder']

PathLike = Union[str, os.PathLike]

_INFO_FILE = 'dataset_info.json'
_PATH_PREFIXES = ('/', './', '../', '~', '.\\', '..\\')
_CHUNK_LAYOUT = 'rlds_lite_chunks'
"""The metadata key of a chunk dataset (``random_access.layout.LAYOUT_NAME``)."""
_MAX_KEYS_NAMED = 8
_COUNT_BATCH = 256


# ------------------------------------------------------------ finding a builder


def _looks_like_path(name_or_dir: PathLike) -> bool:
  """Whether ``name_or_dir`` names a directory (not a TFDS name, which may hold ``/``)."""
  if isinstance(name_or_dir, os.PathLike):
    return True
  return (name_or_dir.startswith(_PATH_PREFIXES) or '://' in name_or_dir or
          tf.io.gfile.exists(name_or_dir))


def _is_unpublished(name: str) -> bool:
  """Whether a directory name is a writer's staging or TFDS's incomplete one."""
  return name.startswith('.') or name.startswith('incomplete.')


def _dataset_dirs(root: str, depth: int = 2) -> List[str]:
  """Directories at most ``depth`` levels below ``root`` holding dataset info."""
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


def _builder_from_dir(path: PathLike) -> tfds.core.DatasetBuilder:
  """The TFDS builder of a prepared dataset directory (or its only version)."""
  path = os.path.expanduser(os.fspath(path))
  if not tf.io.gfile.exists(path):
    raise FileNotFoundError(f'dataset directory {path!r} does not '
                            f'exist{atomic_output.missing_hint(path)}.')
  if not tf.io.gfile.isdir(path):
    raise ValueError(f'{path!r} is a file, not a dataset directory.')
  candidates = _dataset_dirs(path)
  if not candidates:
    raise ValueError(
        f'{path!r} is not a TFDS dataset directory: no {_INFO_FILE} in '
        'it or in its config/version subdirectories.')
  if len(candidates) > 1:
    raise ValueError(
        f'{path!r} holds several datasets (versions/configs): '
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
  """The prepared directory of ``name`` TFDS's lookup skipped (no ``features.json``), or None."""
  version = name.split(':', 1)[1] if ':' in name else None
  found = [d for d in _prepared_dirs(name, data_dir)
           if not tf.io.gfile.exists(
               os.path.join(d, dataset_files.FEATURES_FILE))
           and tfds.core.Version.is_valid(os.path.basename(d))
           and version in (None, os.path.basename(d))]
  if len({os.path.dirname(d) for d in found}) != 1:
    return None
  return max(found, key=lambda d: tfds.core.Version(os.path.basename(d)))


def _builder_from_name(name: str, data_dir: Optional[PathLike]
                       ) -> tfds.core.DatasetBuilder:
  """The TFDS builder registered (or prepared in ``data_dir``) under ``name``."""
  try:
    return tfds.builder(name, data_dir=data_dir)
  except tfds.core.registered.DatasetNotFoundError as e:
    prepared = _without_features_json(name, data_dir)
    if prepared is not None:
      return dataset_files.open_builder(prepared)
    where = f' in data_dir {os.fspath(data_dir)!r}' if data_dir else ''
    raise ValueError(
        f'no TFDS dataset named {name!r} is registered or prepared'
        f'{where}. Pass a registered TFDS name, or the path of a prepared '
        'dataset directory.') from e
  except Exception as error:  # pylint: disable=broad-except
    # TFDS read a damaged dataset_info.json / features.json: name the file.
    for path in _prepared_dirs(name, data_dir):
      problem = dataset_files.metadata_problem(path)
      if problem is not None:
        raise problem from None
    raise ValueError(
        f'TFDS cannot open the dataset {name!r}: '
        f'{type(error).__name__}: {" ".join(str(error).split())[:300]}'
    ) from None


def _chunk_source(builder: tfds.core.DatasetBuilder) -> Optional[str]:
  """The source path of a chunk dataset (``rlds_lite.random_access``), else None."""
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


def _not_rlds_error(builder: tfds.core.DatasetBuilder, name: str
                    ) -> ValueError:
  """The one-line ValueError of a dataset without RLDS ``steps``."""
  source = _chunk_source(builder)
  if source is not None:
    return ValueError(
        f'{name} is a chunk dataset (rlds_lite.random_access, converted '
        f'from {source}); pass its source, or read it with '
        'rlds_lite.random_access.')
  return ValueError(
      f'dataset {name!r} is not an RLDS dataset: it has no '
      f"{rlds_types.STEPS!r} feature of type tfds.features.Dataset (its "
      f'top-level features: {_features_text(builder.info.features)}).')


def steps_feature(builder: tfds.core.DatasetBuilder, name: str
                  ) -> tfds.features.Dataset:
  """The ``steps`` feature of an RLDS dataset; a ValueError if there is none."""
  features = builder.info.features
  steps = None
  if isinstance(features, tfds.features.FeaturesDict) and (
      rlds_types.STEPS in features.keys()):
    steps = features[rlds_types.STEPS]
  if not isinstance(steps, tfds.features.Dataset):
    raise _not_rlds_error(builder, name)
  return steps


def check_split(builder: tfds.core.DatasetBuilder, split: Any,
                label: str) -> None:
  """A ValueError naming the splits if ``split`` names an unknown one.

  Only string splits are checked (``'train[:10%]+test'``); other forms
  (``tfds.core.ReadInstruction``) are left to TFDS.

  Example:
    >>> from rlds_lite import synthetic
    >>> builder = tfds.builder_from_directory(synthetic.dataset(2))
    >>> check_split(builder, 'test', 'toy')
    Traceback (most recent call last):
    ...
    ValueError: dataset 'toy' has no split 'test' (its splits: ['train']).
  """
  dataset_files.check_has_splits(builder)
  available = sorted(builder.info.splits.keys())
  if not isinstance(split, str):
    return
  for part in split.split('+'):
    name = part.split('[')[0].strip()
    if name not in available:
      raise ValueError(f'dataset {label!r} has no split {name!r} '
                       f'(its splits: {available}).')


def default_split(builder: tfds.core.DatasetBuilder) -> str:
  """``'train'`` if the dataset has it, else its first split by name.

  Example:
    >>> default_split(type('B', (), {'info': type('I', (), {
    ...     'splits': {'test': 1, 'valid': 2}})()})())
    'test'
  """
  splits = sorted(builder.info.splits.keys())
  if not splits:
    dataset_files.check_has_splits(builder)
  return 'train' if 'train' in splits else splits[0]


def open_builder(name_or_dir: PathLike,
                 data_dir: Optional[PathLike] = None,
                 *,
                 op: Optional[str] = None) -> tfds.core.DatasetBuilder:
  """The TFDS builder of an RLDS dataset directory or registered name.

  Args:
    name_or_dir: a prepared dataset directory (or the directory of its only
      version) or a registered TFDS name.
    data_dir: where TFDS looks for prepared datasets (names only).
    op: deprecated (errors name the public function they escape).

  Example:
    >>> open_builder('/no/such/dir')
    Traceback (most recent call last):
    ...
    FileNotFoundError: load: dataset directory '/no/such/dir' does not exist.
  """
  with op_context.deprecated_op(op, 'open_builder', 'load'):
    return _open_builder(name_or_dir, data_dir)


def _open_builder(name_or_dir: PathLike, data_dir: Optional[PathLike]
                  ) -> tfds.core.DatasetBuilder:
  """`open_builder`, its errors unprefixed."""
  if not isinstance(name_or_dir, (str, os.PathLike)):
    raise TypeError(
        'name_or_dir must be a TFDS name or a directory path, got '
        f'{type(name_or_dir).__name__}.')
  if _looks_like_path(name_or_dir):
    builder = _builder_from_dir(name_or_dir)
  else:
    builder = _builder_from_name(name_or_dir, data_dir)
  label = os.fspath(name_or_dir)
  steps_feature(builder, label)
  unreadable = features_lib.unreadable_step_field(builder.info.features)
  if unreadable:  # TFDS's parser would kill the process (SIGFPE).
    raise ValueError(
        f'dataset {label!r}: step field {unreadable[0]!r} has shape '
        f'{unreadable[1]} stored as plain values, which TFDS cannot parse '
        '(it divides by the zero size and kills the process); it is not '
        'read.')
  return builder


# ------------------------------------------------------------------ the value


class RandomAccessEpisodes:
  """The episodes of an array_record split, read in order with ``tfds.data_source``."""

  def __init__(self, builder: tfds.core.DatasetBuilder, split: str,
               indices: Optional[Sequence[int]] = None):
    self.builder = builder
    self.split = split
    self._source = builder.as_data_source(
        split, decoders={rlds_types.STEPS: tfds.decode.SkipDecoding()})
    self._indices = (range(len(self._source)) if indices is None
                     else indices)

  def __len__(self) -> int:
    return len(self._indices)

  def __iter__(self):
    for index in self._indices:
      try:
        episode = self._source[index]
      except Exception:  # pylint: disable=broad-except
        self._raise_damage()
        raise
      if episode is None or any(  # What TFDS returns from a truncated file.
          leaf is None for _, leaf in nest_paths.flatten_with_paths(episode)):
        self._raise_damage()
        raise ValueError(f'episode {index} of split {self.split!r} of '
                         f'{os.fspath(self.builder.data_dir)!r} cannot be '
                         'read (tfds.data_source returned None).')
      yield episode

  def _raise_damage(self) -> None:
    for problem in dataset_files.find_damage(self.builder, self.split,
                                             records=True):
      raise problem from None


_STEP_COUNTS: Dict[Any, int] = {}
"""``(directory, split, info mtime) -> steps``: counted once per process."""


def _counted_steps(builder: tfds.core.DatasetBuilder, split: str) -> int:
  """`count_steps`, cached until the dataset is written again."""
  info = os.path.join(os.fspath(builder.data_dir), _INFO_FILE)
  key = (os.fspath(builder.data_dir), split,
         tf.io.gfile.stat(info).mtime_nsec)
  if key not in _STEP_COUNTS:
    _STEP_COUNTS[key] = count_steps(builder, split)
  return _STEP_COUNTS[key]


def count_steps(builder: tfds.core.DatasetBuilder, split: str,
                on_episodes: Optional[Callable[[int], Any]] = None) -> int:
  """Steps in a split, read without decoding (one length per episode).

  Args:
    builder: the dataset's builder (tfrecord or array_record).
    split: the split.
    on_episodes: called with the number of episodes counted so far, in
      batches (a progress bar's ``update``).

  Example:
    >>> from rlds_lite import synthetic
    >>> builder = tfds.builder_from_directory(synthetic.dataset(2, seed=1))
    >>> count_steps(builder, 'train')
    54
  """
  report = on_episodes or (lambda n: None)
  dataset_files.check_open(builder, split)
  if dataset_files.file_format(builder) == 'array_record':
    total = 0
    for episode in RandomAccessEpisodes(builder, split):
      total += len(tf.nest.flatten(episode[rlds_types.STEPS])[0])
      report(1)
    return total
  episodes = decoding.as_dataset(
      builder, split=split,
      decoders={rlds_types.STEPS: tfds.decode.SkipDecoding()})
  label = str(builder.data_dir)

  def length(episode):
    steps = decoding.check_step_lengths(episode[rlds_types.STEPS], label)
    return tf.shape(tf.nest.flatten(steps)[0], out_type=tf.int64)[0]

  total = 0
  with diagnosis.named_read_errors(builder, split):
    for lengths in episodes.map(length).batch(
        _COUNT_BATCH).as_numpy_iterator():
      total += int(lengths.sum())
      report(len(lengths))
  return total


class Source:
  """One split of a prepared TFDS RLDS dataset, opened once.

  Attributes:
    builder: the TFDS builder.
    label: the path or name it was opened by (errors name it).
    split: the split (TFDS slicing allowed).

  Example:
    >>> from rlds_lite import synthetic
    >>> source = open(synthetic.dataset(2, seed=0))
    >>> source  # doctest: +ELLIPSIS
    Source('...', split='train', 2 episodes, tfrecord)
    >>> sorted(source.step_spec)[:2]
    ['action', 'discount']
  """

  def __init__(self, builder: tfds.core.DatasetBuilder, label: str,
               split: Any = 'train'):
    self.builder = builder
    self.label = label
    self.split = split

  def __repr__(self) -> str:
    return (f'Source({self.label!r}, split={self.split!r}, '
            f'{self.num_episodes} episodes, {self.file_format})')

  @op_context.named('open')
  def with_split(self, split: Any) -> 'Source':
    """The same dataset, another split (checked; the builder is shared)."""
    check_split(self.builder, split, self.label)
    return Source(self.builder, self.label, split)

  def every_split(self) -> 'Source':
    """The same dataset, all its splits joined (``'train+val'``), in name order.

    Example:
      >>> from rlds_lite import synthetic
      >>> open(synthetic.dataset(2, seed=0)).every_split().split
      'train'
    """
    return self.with_split('+'.join(sorted(self.builder.info.splits)))

  @property
  def data_dir(self) -> str:
    """The prepared dataset's directory."""
    return os.fspath(self.builder.data_dir)

  @property
  def features(self) -> tfds.features.FeaturesDict:
    """The dataset's TFDS features."""
    return self.builder.info.features

  @property
  def steps_feature(self) -> tfds.features.Dataset:
    """The ``steps`` feature."""
    return self.features[rlds_types.STEPS]

  @property
  def step_spec(self) -> Dict[str, tf.TensorSpec]:
    """The decoded spec of one step."""
    return self.steps_feature.feature.get_tensor_spec()

  @property
  def image_specs(self) -> Dict[str, decoding.ImageSpec]:
    """Path -> ``ImageSpec`` of every image step field of static shape."""
    return decoding.image_specs(self.steps_feature.feature)

  @property
  def file_format(self) -> str:
    """``'tfrecord'``, ``'array_record'`` or ``'parquet'``."""
    return dataset_files.file_format(self.builder)

  @property
  def files(self) -> List[dataset_files.Shard]:
    """The split's shard files (a plain split name)."""
    return dataset_files.split_shards(self.builder, self.split)

  @property
  def num_episodes(self) -> int:
    """Episodes in the split, from the metadata."""
    return self.builder.info.splits[self.split].num_examples

  @property
  def num_steps(self) -> int:
    """Steps in the split: one pass without decoding, cached per process.

    Example:
      >>> from rlds_lite import synthetic
      >>> source = open(synthetic.dataset(3, seed=0))
      >>> source.num_episodes, source.num_steps, source.file_format
      (3, 97, 'tfrecord')
    """
    return _counted_steps(self.builder, str(self.split))

  @op_context.named('load')
  def episodes(self, *, dense: bool = False,
               fields: Optional[Sequence[str]] = None,
               encoded_images: bool = False,
               shuffle_files: bool = False,
               read_config: Optional[tfds.ReadConfig] = None
               ) -> tf.data.Dataset:
    """The split's episodes, as ``rlds_lite.load`` reads them.

    Args:
      dense: steps as dicts of ``[T, ...]`` tensors (else nested datasets).
      fields: with ``dense``: keep (and decode) only these step fields.
      encoded_images: with ``dense``: leave image fields encoded (`image_specs`).
      shuffle_files: shuffle the order of the files.
      read_config: a ``tfds.ReadConfig``.

    Example:
      >>> from rlds_lite import synthetic
      >>> source = open(synthetic.dataset(2, seed=0))
      >>> steps = next(iter(source.episodes(dense=True)))['steps']
      >>> steps['reward'].shape
      TensorShape([5])
    """
    self.check_fields(fields, dense)
    if encoded_images and not dense:
      raise ValueError('encoded_images needs dense=True (nested steps '
                       'are decoded step by step by TFDS).')
    self.check_readable()
    if not dense:
      return decoding.as_dataset(self.builder, split=self.split,
                                 shuffle_files=shuffle_files,
                                 read_config=read_config)
    return decoding.dense_episodes(
        self.builder, self.split, fields=fields, encoded_images=encoded_images,
        shuffle_files=shuffle_files, read_config=read_config,
        label=self.label)

  @op_context.named('load')
  def check_fields(self, fields: Optional[Sequence[str]], dense: bool) -> None:
    """A ValueError (not dense) or KeyError (an unknown path) for ``fields``."""
    if fields is None:
      return
    if not dense:
      raise ValueError('step_fields needs dense=True (nested steps are '
                       'decoded step by step by TFDS).')
    try:
      decoding.select_step_fields(self.steps_feature, fields)
    except KeyError as e:
      raise KeyError(f'load: {e.args[0]}') from None

  def random_access_episodes(self, indices: Optional[Sequence[int]] = None
                             ) -> RandomAccessEpisodes:
    """The episodes of an array_record split, as Python episodes."""
    dataset_files.check_open(self.builder, self.split)
    return RandomAccessEpisodes(self.builder, self.split, indices)

  def read_errors(self, known: Collection[str] = ()
                  ) -> contextlib.AbstractContextManager:
    """A block whose TF read errors name the file, episode, field and step.

    Example:
      >>> from rlds_lite import synthetic
      >>> source = open(synthetic.dataset(2, seed=0))
      >>> with source.read_errors():
      ...   n = sum(1 for _ in source.episodes(dense=True))
      >>> n
      2
    """
    return diagnosis.named_read_errors(self.builder, self.split, known)

  @op_context.named('load')
  def check_readable(self, tfrecord: bool = True) -> None:
    """What ``load`` checks before reading: prepared, files present, tfrecord."""
    if not tf.io.gfile.exists(os.path.join(self.data_dir, _INFO_FILE)):
      raise ValueError(
          f'dataset {self.label!r} is registered but not prepared in '
          f'{self.data_dir!r}; prepare it first '
          '(builder.download_and_prepare()) or pass the right data_dir.')
    dataset_files.check_open(self.builder, self.split)
    if tfrecord and self.file_format == 'array_record':
      raise ValueError(
          f'dataset {self.label!r} is stored as array_record, which '
          'TFDS reads only by random access: read it with '
          'tfds.data_source(name, data_dir=...) or '
          'tfds.builder_from_directory(path).as_data_source(); rlds_lite.load '
          'reads tfrecord datasets.')


def open(name_or_dir: PathLike, split: Any = None, *,  # pylint: disable=redefined-builtin
         data_dir: Optional[PathLike] = None, op: Optional[str] = None
         ) -> Source:
  """Opens one split of an RLDS dataset: a prepared directory or a TFDS name.

  Args:
    name_or_dir: a dataset directory (holding ``dataset_info.json``, or a
      parent with one version below it) or a TFDS name (``'name/config:1.0.0'``).
    split: the split (TFDS slicing allowed); None: ``'train'``, or the first.
    data_dir: where TFDS looks for prepared datasets (names only).
    op: deprecated (errors name the public function they escape).

  Example:
    >>> open('/no/such/dir')
    Traceback (most recent call last):
    ...
    FileNotFoundError: load: dataset directory '/no/such/dir' does not exist.
  """
  with op_context.deprecated_op(op, 'open', 'load'):
    builder = _open_builder(name_or_dir, data_dir)
    label = os.fspath(name_or_dir)
    split = default_split(builder) if split is None else split
    check_split(builder, split, label)
  return Source(builder, label, split)


def as_source(value: Any, split: Any = None, *,
              data_dir: Optional[PathLike] = None,
              op: Optional[str] = None) -> Source:
  """A `Source` as given, or opened from a path or name (the readers' boundary).

  Args:
    value: a `Source`, a dataset directory or a TFDS name.
    split: the split; None: the `Source`'s own, or `open`'s default.
    data_dir: where TFDS looks for prepared datasets (names only).
    op: deprecated (errors name the public function they escape).

  Example:
    >>> from rlds_lite import synthetic
    >>> source = open(synthetic.dataset(2, seed=0))
    >>> as_source(source) is source, as_source(source, 'train[:1]').num_episodes
    (True, 1)
  """
  named = op_context.deprecated_op(op, 'as_source', 'load')
  if isinstance(value, Source):
    if split is None or split == value.split:
      return value
    return value.with_split(split)
  with named:
    return open(value, split, data_dir=data_dir)

