"""Write RLDS episodes as a TFDS dataset, published atomically (docs/guarantees.md).

Example:
  >>> import tempfile
  >>> import numpy as np
  >>> features = {'steps': {'observation': np.float32, 'reward': np.float32}}
  >>> with EpisodeWriter(tempfile.mkdtemp(), 'toy', features) as writer:
  ...   writer.add_episode({'steps': {'observation': [0.0, 1.0],
  ...                                 'reward': [1.0, 0.0],
  ...                                 'is_terminal': [False, True]}})
  >>> import rlds_lite
  >>> episode = next(iter(rlds_lite.load(writer.path)))
  >>> [s['observation'].numpy().tolist() for s in episode['steps']]
  [0.0, 1.0]
"""

import dataclasses
import json
import os
import re
import warnings
from typing import (Any, Dict, Iterable, List, Mapping, Optional, Sequence,
                    Tuple, Union)

import tensorflow as tf
import tensorflow_datasets as tfds
from google.protobuf import json_format

from rlds_lite import option_objects
from rlds_lite import overwriting
from rlds_lite import rlds_types
from rlds_lite.dense import conversion
from rlds_lite.tfds import encoding
from rlds_lite.tfds import features as features_lib
from rlds_lite.tfds import leftovers
from rlds_lite.tfds import locking
from rlds_lite.tfds import publish
from rlds_lite.tfds import shards

__all__ = ['DatasetCard', 'EpisodeWriter', 'FileOptions', 'write_dataset']

PathLike = Union[str, os.PathLike]
_IF_EXISTS = ('error', 'append', 'overwrite')
DatasetConfig = tfds.rlds.rlds_base.DatasetConfig
_NAME_RE = re.compile(r'^[a-z][a-z0-9_]*$')
_INFO_FILE = leftovers.INFO_FILE
_FEATURES_FILE = leftovers.FEATURES_FILE
_METADATA_FILE = 'metadata.json'  # TFDS's info.metadata.
_UPSTREAM_KEYWORDS = ('max_episodes_per_file', 'split_name', 'overwrite')


@dataclasses.dataclass(frozen=True, repr=False)
class FileOptions:
  """How a writer stores episodes: file format, shard sizes, encodings.

  Attributes:
    file_format: ``'tfrecord'`` (read with ``tf.data``) or ``'array_record'`` (random access).
    max_episodes_per_file, max_bytes_per_file: when a new shard file starts.
    use_images, image_encoding: detect images when features are inferred from specs, and
      encode them so (``'png'``, ``'jpeg'``).
    jpeg_quality: the quality (0-100) of JPEG images written; None: 95.
    tensor_encoding: of tensors inferred from specs (``'none'``, ``'bytes'``, ``'zlib'``).

  Example:
    >>> FileOptions(file_format='array_record', image_encoding='jpeg')
    FileOptions(file_format='array_record', image_encoding='jpeg')
  """
  file_format: str = 'tfrecord'
  max_episodes_per_file: int = 1000
  max_bytes_per_file: int = 256 << 20
  use_images: bool = True
  image_encoding: str = 'png'
  jpeg_quality: Optional[int] = None
  tensor_encoding: str = 'none'

  def __post_init__(self):
    if (isinstance(self.max_episodes_per_file, bool) or
        not isinstance(self.max_episodes_per_file, int) or
        self.max_episodes_per_file < 1):
      raise ValueError('max_episodes_per_file must be a positive int, got '
                       f'{self.max_episodes_per_file!r}.')

  def __repr__(self) -> str:
    return option_objects.short_repr(self)

  def feature_options(self) -> Dict[str, Any]:
    """The keywords of `rlds_lite.tfds.features.episode_features`."""
    return dict(use_images=self.use_images, image_encoding=self.image_encoding,
                tensor_encoding=self.tensor_encoding)


@dataclasses.dataclass(frozen=True, repr=False)
class DatasetCard:
  """What describes a dataset: ``description``, ``homepage``, ``citation`` and ``metadata``.

  ``metadata`` (JSON-ready) is written to ``metadata.json`` of a new dataset.

  Example:
    >>> DatasetCard(description='Catch, expert', metadata={'robot': 'none'})
    DatasetCard(description='Catch, expert', metadata={'robot': 'none'})
  """
  description: str = ''
  homepage: str = ''
  citation: str = ''
  metadata: Optional[Mapping[str, Any]] = None

  def __repr__(self) -> str:
    return option_objects.short_repr(self)


_FILE_FIELDS = tuple(f.name for f in dataclasses.fields(FileOptions))
_CARD_FIELDS = tuple(f.name for f in dataclasses.fields(DatasetCard))


def options_and_card(op: str, options: Optional[FileOptions],
                     card: Optional[DatasetCard], legacy: Mapping[str, Any],
                     allowed: Sequence[str] = _FILE_FIELDS + _CARD_FIELDS
                     ) -> Tuple[FileOptions, DatasetCard]:
  """The `FileOptions` and `DatasetCard` of a call, old flat keywords folded in (warning once).

  Example:
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...   warnings.simplefilter('ignore')
    ...   options_and_card('write', None, None, {'file_format': 'array_record'})
    (FileOptions(file_format='array_record'), DatasetCard())
  """
  unknown = sorted(set(legacy) - set(allowed))
  if unknown:
    raise TypeError(f'{op}() got an unexpected keyword argument '
                    f'{unknown[0]!r}')
  file_args = {k: v for k, v in legacy.items() if k in _FILE_FIELDS}
  card_args = {k: v for k, v in legacy.items() if k in _CARD_FIELDS}
  for given, args, kind, cls in ((options, file_args, 'options', FileOptions),
                                 (card, card_args, 'card', DatasetCard)):
    new = cls.__name__
    if given is not None and args:
      raise TypeError(f'{op}: pass {sorted(args)} in {kind}={new}(...), not '
                      'beside it.')
    if given is not None and not isinstance(given, cls):
      raise TypeError(f'{op}: {kind} must be a {new}(...), got '
                      f'{type(given).__name__}.')
    for key in sorted(args):
      option_objects.warn_once(
          (op, key), f'{op}: {key}= is now {kind}={new}({key}=...); the old '
          'keyword will go in a later release.')
  return (options or FileOptions(**file_args), card or DatasetCard(**card_args))


def check_name(name: str) -> None:
  if not isinstance(name, str) or not _NAME_RE.match(name):
    raise ValueError(
        f'name must be a snake_case TFDS dataset name (lowercase letters, '
        f'digits, underscores; starting with a letter), got {name!r}.')


def dataset_path(data_dir: PathLike, name: str, version: str) -> str:
  """``data_dir/name/version``: where TFDS looks for a prepared dataset.

  Example:
    >>> dataset_path('/data', 'toy', '1.0.0')
    '/data/toy/1.0.0'
  """
  name_dir = overwriting.path_inside(os.path.expanduser(os.fspath(data_dir)),
                                    name, what='name', writer='EpisodeWriter')
  return overwriting.path_inside(name_dir, version, what='version',
                                 writer='EpisodeWriter')


def _existing_info(path: str) -> Optional[tfds.core.DatasetInfo]:
  if not tf.io.gfile.exists(os.path.join(path, _INFO_FILE)):
    return None
  return tfds.builder_from_directory(path).info


def info_files(info: tfds.core.DatasetInfo) -> Dict[str, bytes]:
  """``{file name: contents}`` of a dataset's metadata (features inside ``dataset_info.json``).

  Example:
    >>> from rlds_lite.tfds.features import rlds_features
    >>> import numpy as np
    >>> info = tfds.core.DatasetInfo(
    ...     builder=tfds.core.DatasetIdentity(
    ...         name='toy', version=tfds.core.Version('1.0.0'), data_dir='/d',
    ...         module_name=''),
    ...     features=rlds_features({'reward': np.float32}))
    >>> files = info_files(info)
    >>> sorted(files), b'"features"' in files['dataset_info.json']
    (['dataset_info.json', 'features.json'], True)
  """
  proto = tfds.core.dataset_info.update_info_proto_with_features(
      info.as_proto, info.features)
  features = json_format.MessageToDict(proto.features)
  return {
      _INFO_FILE: json_format.MessageToJson(proto, sort_keys=True).encode(),
      _FEATURES_FILE: json.dumps(features, indent=4, sort_keys=True).encode(),
  }


def _from_upstream_form(config: DatasetConfig, positional: Sequence[Any],
                        version: Optional[str], upstream: Dict[str, Any]):
  """Arguments of ``EpisodeWriter`` from upstream's signature."""
  third, fourth, fifth = positional
  max_episodes_per_file = upstream.get('max_episodes_per_file', 1000)
  split_name = upstream.get('split_name')
  if third is not None:
    max_episodes_per_file = third
  if fourth != ('train',):
    split_name = fourth
  if fifth is not None:
    version = fifth
  if_exists = 'append' if upstream.get('overwrite') is False else 'overwrite'
  return (config.name, config, (split_name or 'train',), version or '0.0.1',
          if_exists, max_episodes_per_file)


def _check_not_foreign(path: str) -> None:
  """Raises if ``path`` holds something that is not a TFDS dataset (empty or none is fine)."""
  if not tf.io.gfile.exists(path):
    return
  if tf.io.gfile.exists(os.path.join(path, _INFO_FILE)):
    return
  if tf.io.gfile.isdir(path) and not tf.io.gfile.listdir(path):
    return
  raise FileExistsError(
      f'EpisodeWriter: {path!r} exists and is not a TFDS dataset (no '
      f'{_INFO_FILE}); it is left untouched. Choose another directory.')


def _features_json(features: tfds.features.FeatureConnector) -> Any:
  return features.to_json()


class EpisodeWriter:
  """Writes RLDS episodes into ``data_dir/name/version``, holding the dataset's lock.

  A context manager: ``close()`` publishes on success, ``abort()`` discards on an exception.
  Upstream's form ``EpisodeWriter(data_directory, ds_config, ...)`` works too.

  Args:
    features_or_spec: a ``FeaturesDict``, a ``DatasetConfig``, a dict of features/specs, or
      an example episode (`rlds_lite.tfds.features.episode_features`); None when appending.
    splits: the names of the splits episodes may be added to.
    options: a `FileOptions`.
    if_exists: ``'error'`` (default), ``'append'`` (same features) or ``'overwrite'``.
    lock_timeout: seconds to wait for another writer (None: as long as it takes; 0: none).
    card: a `DatasetCard` (its metadata is written with a new dataset only).

  Example:
    >>> import tempfile
    >>> import numpy as np
    >>> data_dir = tempfile.mkdtemp()
    >>> features = {'steps': {'reward': np.float32}}
    >>> first = EpisodeWriter(data_dir, 'shared', features,
    ...                       options=FileOptions(max_episodes_per_file=10))
    >>> second = EpisodeWriter(data_dir, 'shared', features, lock_timeout=0)
    Traceback (most recent call last):
    ...
    rlds_lite.tfds.locking.DatasetLockedError: dataset 'shared' version 1.0.0 at '...' is already being written in this process (pid ...); close() or abort() the other writer first (one writer per dataset at a time).
    >>> first.abort()
  """

  def __init__(self,
               data_dir: PathLike,
               name: Union[str, DatasetConfig],
               features_or_spec: Any = None,
               splits: Sequence[str] = ('train',),
               options: Optional[FileOptions] = None,
               *,
               version: Optional[str] = None,
               if_exists: str = 'error',
               lock_timeout: Optional[float] = None,
               card: Optional[DatasetCard] = None,
               **legacy: Any):
    path = None
    if isinstance(name, DatasetConfig):
      upstream = {k: legacy.pop(k) for k in _UPSTREAM_KEYWORDS if k in legacy}
      (name, features_or_spec, splits, version, if_exists,
       max_episodes) = _from_upstream_form(
           name, (features_or_spec, splits, options), version, upstream)
      options, card = options_and_card('EpisodeWriter', None, card, legacy)
      options = dataclasses.replace(options, file_format='tfrecord',
                                    max_episodes_per_file=max_episodes)
      path = os.path.abspath(os.path.expanduser(os.fspath(data_dir)))
    else:
      if 'split_name' in legacy or 'overwrite' in legacy:
        raise ValueError('split_name= and overwrite= are for the upstream form '
                         'EpisodeWriter(data_directory, ds_config, ...); use '
                         'splits= and if_exists=.')
      if isinstance(options, str):  # The old fifth positional file_format.
        legacy = {**legacy, 'file_format': options}
        options = None
      options, card = options_and_card('EpisodeWriter', options, card, legacy)
      check_name(name)
      version = version or '1.0.0'
    self._check_args(if_exists, splits)
    tfds.core.Version(version)  # Validates the version string.
    self._name = name
    self._version = version
    self._splits = tuple(splits)
    self._format = shards.file_format_of(options.file_format)
    self._if_exists = if_exists
    self._path = os.path.normpath(path or dataset_path(data_dir, name,
                                                        version))
    self._options = options
    self._card = card
    self._metadata = (dict(card.metadata) if card.metadata is not None
                      else None)
    self._writers: Dict[str, shards.ShardWriter] = {}
    self._num_added = 0
    self._state = 'open'
    self._published = False
    self._temp_files: List[str] = []

    # Directories this writer creates (their parents are synced at publish).
    self._created_dirs = publish.missing_dirs(os.path.dirname(self._path))
    self._lock = locking.DatasetLock(
        self._path, timeout=lock_timeout,
        label=f'dataset {name!r} version {version} at {self._path!r}')
    self._lock.acquire()
    try:
      self._open(features_or_spec, **options.feature_options())
    except BaseException:
      self._state = 'failed'
      self._lock.release()
      raise
    publish.step('locked')

  @staticmethod
  def _check_args(if_exists: str, splits: Sequence[str]) -> None:
    if if_exists not in _IF_EXISTS:
      raise ValueError(f'if_exists must be one of {list(_IF_EXISTS)}, got '
                       f'{if_exists!r}.')
    if isinstance(splits, str) or not splits:
      raise ValueError(f'splits must be a non-empty sequence of split names, '
                       f'got {splits!r}.')
    for split in splits:
      if not isinstance(split, str) or not re.match(r'^\w+$', split):
        raise ValueError(f'Bad split name {split!r}: use letters, digits and '
                         'underscores.')

  def _open(self, features_or_spec: Any, **feature_options: Any) -> None:
    """Under the lock: removes leftovers, reads the dataset, plans the write."""
    leftovers.remove_staging(self._path)
    _check_not_foreign(self._path)
    proto = leftovers.read_info_proto(self._path)
    if proto is not None:
      leftovers.remove_leftovers(self._path, proto.name or self._name, proto)
    existing = _existing_info(self._path)
    if existing is not None and self._if_exists == 'error':
      raise FileExistsError(
          f'EpisodeWriter: dataset {self._name!r} version {self._version} '
          f"already exists at {self._path!r}; pass if_exists='append' to add "
          "episodes to it, if_exists='overwrite' to replace it, or another "
          'name/version.')
    self._appending = existing is not None and self._if_exists == 'append'
    if self._appending and self._metadata is not None:
      raise ValueError('EpisodeWriter: DatasetCard.metadata is written with '
                       'a new dataset, not when appending.')
    self._existing = existing if self._appending else None
    if features_or_spec is None:
      if not self._appending:
        raise ValueError('EpisodeWriter: features_or_spec is required unless '
                         'appending to an existing dataset.')
      features = existing.features
    else:
      features = features_lib.episode_features(features_or_spec,
                                               **feature_options)
    problem = features_lib.slash_key_problem(features)
    if problem:
      raise ValueError(f'EpisodeWriter: {problem}.')
    unreadable = features_lib.unreadable_step_field(features)
    if unreadable:
      raise ValueError(
          f'EpisodeWriter: step field {unreadable[0]!r} has shape '
          f'{unreadable[1]} stored as plain values, which TFDS cannot read '
          'back (its parser divides by the zero size and kills the '
          "process); declare it tfds.features.Tensor(..., encoding='bytes') "
          '(a string field: leave it out).')
    if self._appending:
      self._check_appendable(existing, features)
    self._encoder = encoding.EpisodeEncoder(features,
                                           self._options.jpeg_quality)
    if existing is None:   # A new dataset: staged, renamed into place.
      self._write_dir = publish.staging_dir(self._path)
      self._generation = 1
    else:   # New shards beside the published ones, unreferenced until close.
      self._write_dir = self._path
      self._generation = (leftovers.current_generation(proto)
                          if self._appending else
                          leftovers.next_generation(self._path, self._name,
                                                    proto))

  @property
  def path(self) -> str:
    """The dataset directory (``data_dir/name/version``)."""
    return self._path

  @property
  def features(self) -> tfds.features.FeaturesDict:
    """The dataset features."""
    return self._encoder.features

  @property
  def num_episodes(self) -> int:
    """The number of episodes added in this session."""
    return self._num_added

  def __repr__(self) -> str:
    mode = ('new' if self._write_dir != self._path else
            'append' if self._appending else 'overwrite')
    return (f'EpisodeWriter({self._path!r}, {mode}, '
            f'{self._num_added} episodes added, {self._state})')

  def _check_appendable(self, existing: tfds.core.DatasetInfo,
                        features: tfds.features.FeaturesDict) -> None:
    if _features_json(existing.features) != _features_json(features):
      old = existing.features[rlds_types.STEPS].feature
      new = features[rlds_types.STEPS].feature
      raise ValueError(
          f'EpisodeWriter: cannot append to {self._path!r}: its features differ '
          f'from the given ones.\nExisting steps: {old!r}\nGiven steps: '
          f'{new!r}\nExisting: {existing.features!r}\nGiven: {features!r}')
    if existing.file_format != self._format:
      raise ValueError(
          f'EpisodeWriter: cannot append to {self._path!r}: it is stored as '
          f'{existing.file_format.value}, not {self._format.value}.')
    for split in self._splits:
      info = existing.splits.get(split) if split in existing.splits else None
      if info is None or not info.num_shards:
        continue
      template = info.filename_template.template
      if template != shards.generation_template(
          shards.template_generation(template)):
        raise ValueError(
            f'EpisodeWriter: cannot append to split {split!r} of '
            f'{self._path!r}: its shard files are named {template!r} (with a '
            f'shard count), not {shards.SHARD_TEMPLATE!r}. Rewrite it with '
            "write_dataset(..., if_exists='overwrite') or write to a new "
            'split/dataset.')

  def _split_template(self, split: str) -> str:
    """The shard file template of a split in this session."""
    if self._existing is not None and split in self._existing.splits:
      return self._existing.splits[split].filename_template.template
    return shards.generation_template(self._generation)

  def _writer(self, split: str) -> shards.ShardWriter:
    if split not in self._writers:
      first = 0
      if self._existing is not None and split in self._existing.splits:
        first = self._existing.splits[split].num_shards
      template = tfds.core.ShardedFileTemplate(
          data_dir=self._write_dir,
          template=self._split_template(split),
          dataset_name=self._name,
          split=split,
          filetype_suffix=self._format.file_suffix)
      self._writers[split] = shards.ShardWriter(
          template, self._format,
          max_examples_per_shard=self._options.max_episodes_per_file,
          max_bytes_per_shard=self._options.max_bytes_per_file,
          first_shard=first)
    return self._writers[split]

  def _resolve_split(self, split: Optional[str]) -> str:
    if split is None:
      if len(self._splits) != 1:
        raise ValueError(f'add_episode: pass split=, one of {self._splits}.')
      return self._splits[0]
    if split not in self._splits:
      raise ValueError(f'add_episode: unknown split {split!r}; this writer '
                       f'writes {list(self._splits)}.')
    return split

  def add_episode(self, episode: Mapping[str, Any],
                  split: Optional[str] = None) -> None:
    """Adds one episode ``{'steps': steps, **metadata}`` to ``split`` (omissible with one split).

    ``steps`` is a dict of ``[T, ...]`` columns (fastest), a ``tf.data.Dataset`` or a list of
    step dicts.

    Example:
      >>> import tempfile
      >>> with EpisodeWriter(tempfile.mkdtemp(), 'toy',
      ...                    {'steps': {'x': tf.int32}}) as writer:
      ...   writer.add_episode({'steps': {'x': [1, 2],
      ...                                 'is_terminal': [False, True]}})
      >>> writer.num_episodes
      1
    """
    self._add(episode, split, f'episode {self._num_added}')

  def _add(self, episode: Mapping[str, Any], split: Optional[str],
           label: str) -> None:
    if self._state != 'open':
      raise ValueError(f'EpisodeWriter: add_episode() after {self._state}.')
    split = self._resolve_split(split)
    try:
      record = self._encoder.serialize(episode, allow_bytearray=True)
    except encoding.RecordTooLargeError as e:
      raise encoding.RecordTooLargeError(f'{label}: {e}', e.nbytes,
                                         e.limit) from None
    except ValueError as e:
      raise ValueError(f'{label}: {e}') from e
    self._writer(split).write(record)
    self._num_added += 1

  def add_serialized_episode(self, record: bytes,
                             split: Optional[str] = None) -> None:
    """Adds one serialized ``tf.train.Example`` episode of the same features, unchecked.

    For copying episodes between datasets (filter, merge, split) without re-encoding them.
    """
    if self._state != 'open':
      raise ValueError(f'EpisodeWriter: add_serialized_episode() after '
                       f'{self._state}.')
    self._writer(self._resolve_split(split)).write(bytes(record))
    self._num_added += 1

  def add_episodes(self, episodes: Iterable[Mapping[str, Any]],
                   split: Optional[str] = None) -> None:
    """Adds every episode of ``episodes`` (see `add_episode`); errors name its index."""
    for index, episode in enumerate(episodes):
      self._add(episode, split, f'episode {index}')

  def _info(self, split_infos: Sequence[tfds.core.SplitInfo]
            ) -> tfds.core.DatasetInfo:
    identity = tfds.core.DatasetIdentity(
        name=self._name,
        version=tfds.core.Version(self._version),
        data_dir=self._write_dir,
        module_name='')
    base = self._existing
    info = tfds.core.DatasetInfo(
        builder=identity,
        description=self._card.description or (base.description if base else ''),
        features=self.features,
        homepage=self._card.homepage or (base.homepage if base else ''),
        citation=self._card.citation or (base.citation if base else ''),
        disable_shuffling=True,
        metadata=(tfds.core.MetadataDict(self._metadata)
                  if self._metadata is not None else None))
    info.set_file_format(self._format)
    info.set_splits(tfds.core.SplitDict(list(split_infos)))
    return info

  def _split_infos(self, written: Mapping[str, Any]
                   ) -> Sequence[tfds.core.SplitInfo]:
    """The splits after this session; ``written``: ``{split: (lengths, bytes)}``."""
    infos = {}
    if self._existing is not None:
      for split in self._existing.splits.values():
        infos[split.name] = split
    for split in self._splits:
      lengths, num_bytes = written.get(split, ([], 0))
      old = infos.get(split)
      if old is not None:
        lengths = list(old.shard_lengths) + lengths
        num_bytes += old.num_bytes
      elif not lengths:
        continue  # TFDS cannot describe a split without shards.
      infos[split] = tfds.core.SplitInfo(
          name=split,
          shard_lengths=lengths,
          num_bytes=num_bytes,
          filename_template=tfds.core.ShardedFileTemplate(
              data_dir=self._path, template=self._split_template(split),
              dataset_name=self._name, split=split,
              filetype_suffix=self._format.file_suffix))
    return list(infos.values())

  def close(self) -> str:
    """Finishes the shards and publishes the dataset atomically, then unlocks; its path."""
    if self._state == 'closed':
      return self._path
    if self._state != 'open':
      raise ValueError(f'EpisodeWriter: close() after {self._state}.')
    try:
      if self._write_dir != self._path and not self._num_added:
        raise ValueError(f'EpisodeWriter: no episode was added; dataset '
                         f'{self._name!r} was not created.')
      self._publish()
    except BaseException as e:
      if not self._published:
        self.abort()
        raise
      self._state = 'closed'
      self._lock.release()
      if isinstance(e, OSError):
        raise OSError(e.errno, f'EpisodeWriter: dataset {self._path!r} was '
                      f'published, but a step after publishing failed: {e}'
                      ) from e
      raise
    self._state = 'closed'
    self._lock.release()
    return self._path

  def _publish(self) -> None:
    written = {split: writer.sync() for split, writer in self._writers.items()}
    publish.step('shards_synced')
    for writer in self._writers.values():
      writer.finalize()
    publish.step('shards_named')
    info = self._info(self._split_infos(written))
    files = info_files(info)
    if self._metadata is not None:  # A new dataset only (checked at open).
      files[_METADATA_FILE] = json.dumps(self._metadata, sort_keys=True).encode()
    if self._write_dir != self._path:
      self._publish_new(info, files)
    else:
      self._publish_existing(files)

  def _publish_new(self, info: tfds.core.DatasetInfo,
                   files: Mapping[str, bytes]) -> None:
    """Staging directory complete and synced, then renamed into place."""
    tf.io.gfile.makedirs(self._write_dir)
    for name, data in files.items():
      publish.rename(publish.write_temp(os.path.join(self._write_dir, name),
                                        data),
                     os.path.join(self._write_dir, name))
    info.features.save_metadata(self._write_dir)  # Label files, if any.
    for name in tf.io.gfile.listdir(self._write_dir):
      publish.fsync_file(os.path.join(self._write_dir, name))
    publish.fsync_dir(self._write_dir)
    publish.step('info_written')
    if tf.io.gfile.exists(self._path):
      if tf.io.gfile.listdir(self._path):
        raise FileExistsError(
            f'EpisodeWriter: {self._path!r} was filled by something that does '
            'not take the dataset lock while this session was writing; this '
            'session was discarded.')
      # An empty directory (upstream form): rename() replaces it atomically.
    publish.rename(self._write_dir, self._path)
    self._published = True
    publish.step('published')
    publish.fsync_dir(os.path.dirname(self._path))
    for created in self._created_dirs:
      publish.fsync_dir(os.path.dirname(created))
    publish.step('synced')
    publish.step('features_json')
    publish.step('cleaned')

  def _publish_existing(self, files: Mapping[str, bytes]) -> None:
    """New shards are named; dataset_info.json is replaced in one rename."""
    temps = {}
    for name, data in files.items():
      temps[name] = publish.write_temp(os.path.join(self._path, name), data)
      self._temp_files.append(temps[name])
    publish.step('info_written')
    publish.rename(temps[_INFO_FILE], os.path.join(self._path, _INFO_FILE))
    self._published = True
    publish.step('published')
    publish.fsync_dir(self._path)
    publish.step('synced')
    publish.replace(temps[_FEATURES_FILE],
                    os.path.join(self._path, _FEATURES_FILE))
    publish.step('features_json')
    proto = leftovers.read_info_proto(self._path)
    leftovers.remove_leftovers(self._path, self._name, proto)
    publish.step('cleaned')

  def abort(self) -> None:
    """Discards everything written in this session (the dataset is untouched); unlocks."""
    if self._state in ('closed', 'aborted'):
      return
    try:
      for writer in self._writers.values():
        writer.abort()
      if self._write_dir == self._path:
        # Shards named but not published: no reader references them.
        for writer in self._writers.values():
          for path in writer.final_paths():
            if tf.io.gfile.exists(path):
              tf.io.gfile.remove(path)
        for path in self._temp_files:
          if tf.io.gfile.exists(path):
            tf.io.gfile.remove(path)
      elif tf.io.gfile.exists(self._write_dir):
        tf.io.gfile.rmtree(self._write_dir)
    finally:
      self._state = 'aborted'
      self._lock.release()

  def __enter__(self) -> 'EpisodeWriter':
    return self

  def __exit__(self, exc_type, exc_value, traceback) -> None:
    if self._state != 'open':
      return  # Already closed or aborted inside the block.
    if exc_type is None:
      self.close()
    else:
      self.abort()

  def __del__(self):
    lock = getattr(self, '_lock', None)
    if lock is not None and getattr(self, '_state', None) == 'open':
      try:
        self.abort()  # Never left open: the lock and files are released.
      except Exception:  # pylint: disable=broad-except
        pass


def _per_step_spec(spec: Any, dense: bool) -> Any:
  if not dense:
    return spec
  return tf.nest.map_structure(lambda s: tf.TensorSpec(s.shape[1:], s.dtype),
                               spec)


def write_dataset(episodes: tf.data.Dataset,
                  data_dir: PathLike,
                  name: str,
                  *,
                  features: Any = None,
                  split: str = 'train',
                  version: str = '1.0.0',
                  if_exists: str = 'error',
                  lock_timeout: Optional[float] = None,
                  options: Optional[FileOptions] = None,
                  card: Optional[DatasetCard] = None,
                  **legacy: Any) -> str:
  """Writes an episodes ``tf.data.Dataset`` (nested or dense steps) as a TFDS dataset; its dir.

  Args:
    features: see `EpisodeWriter`; None: inferred from ``episodes.element_spec``.
    if_exists, lock_timeout, options, card: see `EpisodeWriter`.

  Example:
    >>> import tempfile
    >>> steps = tf.data.Dataset.from_tensor_slices(
    ...     {'reward': [1.0, 2.0], 'is_first': [True, False],
    ...      'is_last': [False, True], 'is_terminal': [False, True]})
    >>> episodes = tf.data.Dataset.from_tensors({'steps': steps})
    >>> episodes = episodes.map(lambda e: {'steps': e['steps'].map(
    ...     lambda s: {**s, 'reward': 2 * s['reward']})})
    >>> path = write_dataset(episodes, tempfile.mkdtemp(), 'doubled',
    ...                      card=DatasetCard(description='doubled rewards'))
    >>> import rlds_lite
    >>> episode = next(iter(rlds_lite.load(path, dense=True)))
    >>> episode['steps']['reward'].numpy().tolist()
    [2.0, 4.0]
  """
  options, card = options_and_card(
      'write_dataset', options, card, legacy,
      allowed=('file_format', 'use_images', 'image_encoding', 'jpeg_quality',
               'description'))
  if not isinstance(episodes, tf.data.Dataset) or not isinstance(
      episodes.element_spec, Mapping) or (
          rlds_types.STEPS not in episodes.element_spec):
    raise TypeError('write_dataset: episodes must be a tf.data.Dataset of '
                    f'episode dicts with a {rlds_types.STEPS!r} entry.')
  spec = episodes.element_spec
  steps_spec = spec[rlds_types.STEPS]
  nested = isinstance(steps_spec, tf.data.DatasetSpec)
  if features is None:
    step_spec = (steps_spec.element_spec if nested
                 else _per_step_spec(steps_spec, dense=True))
    features = {**spec, rlds_types.STEPS: step_spec}
  if nested:
    episodes = conversion.to_dense(episodes)
  with EpisodeWriter(data_dir, name, features, splits=(split,),
                     options=options, version=version, if_exists=if_exists,
                     lock_timeout=lock_timeout, card=card) as writer:
    for episode in episodes.as_numpy_iterator():
      writer.add_episode(episode, split)
  return writer.path
