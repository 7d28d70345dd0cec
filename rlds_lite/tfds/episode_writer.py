"""Write RLDS episodes as a TFDS dataset, published atomically.

`EpisodeWriter` writes episodes (columnar dicts of ``[T, ...]`` arrays, or
RLDS episodes whose ``steps`` is a ``tf.data.Dataset``) into the TFDS layout
``data_dir/name/version/``, readable with ``tfds.builder_from_directory``,
``tfds.load(name, data_dir=data_dir)`` and ``rlds_lite.load``.
`write_dataset` writes any episodes ``tf.data.Dataset`` back out ("transform
and save").

What it promises (``docs/guarantees.md`` lists each promise with its test):

- A reader sees the dataset as it was before the writer, or as it is after
  ``close()``: never half of it, never a mix. A new dataset is written in a
  hidden staging directory and renamed into place; an append or overwrite
  writes new shards under names the published ``dataset_info.json`` does not
  reference, then replaces ``dataset_info.json`` (which holds the features
  too) in one atomic rename (`rlds_lite.tfds.publish`). An overwrite writes
  a new generation of shards and keeps the replaced one until the next
  overwrite, so a reader's pass started before it can finish.
- Writers of one dataset are serialised by an OS lock held from reading the
  dataset's state to publishing (`rlds_lite.tfds.locking`): a second writer
  waits up to ``lock_timeout`` seconds, then fails naming the holder.
- Everything published is on disk first (``fsync`` of shards, metadata and
  directories).
- A crash (exception, kill, power cut) before ``close()`` returns loses the
  episodes of this session, and nothing else; after it returns, nothing.
  The next writer removes what the dead one left (`rlds_lite.tfds.leftovers`).
- An episode too large for a ``tf.train.Example`` (over 2 GiB serialized) is
  refused before anything is written, with an error naming it.

Unlike upstream ``rlds.tfds.EpisodeWriter``: the output directory is created,
several splits can be written at once, an existing dataset is an error
unless ``if_exists='append'`` or ``'overwrite'`` is asked for, episodes are
encoded column-wise (much faster than TFDS's per-step encoding) and
``(1,)`` values are squeezed into scalar features.

Example:
  >>> import tempfile
  >>> import numpy as np
  >>> data_dir = tempfile.mkdtemp()
  >>> features = {'steps': {'observation': np.float32, 'reward': np.float32}}
  >>> with EpisodeWriter(data_dir, 'toy', features) as writer:
  ...   writer.add_episode({'steps': {'observation': [0.0, 1.0],
  ...                                 'reward': [1.0, 0.0],
  ...                                 'is_terminal': [False, True]}})
  >>> import rlds_lite
  >>> episode = next(iter(rlds_lite.load(writer.path)))
  >>> [s['observation'].numpy().tolist() for s in episode['steps']]
  [0.0, 1.0]
"""

import json
import os
import re
from typing import (Any, Dict, Iterable, List, Mapping, Optional, Sequence,
                    Union)

import tensorflow as tf
import tensorflow_datasets as tfds
from google.protobuf import json_format

from rlds_lite import overwriting
from rlds_lite import rlds_types
from rlds_lite.dense import conversion
from rlds_lite.tfds import encoding
from rlds_lite.tfds import features as features_lib
from rlds_lite.tfds import leftovers
from rlds_lite.tfds import locking
from rlds_lite.tfds import publish
from rlds_lite.tfds import shards

__all__ = ['EpisodeWriter', 'write_dataset']

PathLike = Union[str, os.PathLike]
_IF_EXISTS = ('error', 'append', 'overwrite')
DatasetConfig = tfds.rlds.rlds_base.DatasetConfig
_NAME_RE = re.compile(r'^[a-z][a-z0-9_]*$')
_INFO_FILE = leftovers.INFO_FILE
_FEATURES_FILE = leftovers.FEATURES_FILE
_METADATA_FILE = 'metadata.json'  # TFDS's info.metadata.


def check_name(name: str) -> None:
  if not isinstance(name, str) or not _NAME_RE.match(name):
    raise ValueError(
        f'name must be a snake_case TFDS dataset name (lowercase letters, '
        f'digits, underscores; starting with a letter), got {name!r}.')


def dataset_path(data_dir: PathLike, name: str, version: str) -> str:
  """``data_dir/name/version``: where TFDS looks for a prepared dataset.

  Args:
    data_dir: the TFDS data directory.
    name: the dataset name.
    version: the dataset version.

  Returns:
    The dataset directory.

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
  """``{file name: contents}`` of a dataset's metadata, features inside.

  ``dataset_info.json`` holds the features (its ``features`` field), so a
  reader needs no other file (``tfds.builder_from_directory`` takes them
  from there); ``features.json`` is written too, for tools that read it.

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


def _from_upstream_form(config: DatasetConfig, third: Any, fourth: Any,
                        fifth: Any, version: Optional[str],
                        max_episodes_per_file: int, split_name: Optional[str],
                        overwrite: Optional[bool]):
  """Arguments of ``EpisodeWriter`` from upstream's signature.

  Upstream: ``EpisodeWriter(data_directory, ds_config,
  max_episodes_per_file=1000, split_name='train', version='0.0.1',
  overwrite=True)``; its 3rd-5th positional arguments arrive in
  ``features_or_spec``, ``splits`` and ``file_format``.
  """
  if third is not None:
    max_episodes_per_file = third
  if fourth != ('train',):
    split_name = fourth
  if fifth != 'tfrecord':
    version = fifth
  if_exists = 'append' if overwrite is False else 'overwrite'
  return (config.name, config, (split_name or 'train',), version or '0.0.1',
          if_exists, max_episodes_per_file)


def _check_not_foreign(path: str) -> None:
  """Raises if ``path`` holds something that is not a TFDS dataset.

  An empty directory (or none) is fine: it becomes the dataset.
  """
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
  """Writes RLDS episodes into a TFDS dataset directory.

  Use it as a context manager (``close()`` publishes on success, ``abort()``
  discards on an exception), or call ``close()`` / ``abort()`` yourself.

  The writer holds the dataset's lock (`rlds_lite.tfds.locking`) from its
  construction to ``close()``/``abort()``: other writers of the same dataset
  (in any process) wait meanwhile. ``close()`` publishes atomically (see
  the module docstring and ``docs/guarantees.md``).

  What a crash loses: if the process dies or the writer fails before
  ``close()`` has returned (before its atomic switch), the episodes added in
  this session are lost and the dataset is exactly as it was before (or
  still absent); if it dies after the switch, nothing is lost. Nothing that
  was published before is ever lost, and readers never see a part of a
  session. Keep sessions short (``close()`` often) to lose less.

  Upstream's form ``EpisodeWriter(data_directory, ds_config,
  max_episodes_per_file=1000, split_name='train', version='0.0.1',
  overwrite=True)`` (a ``DatasetConfig`` as second argument) also works: the
  dataset is then ``data_directory`` itself (created if missing, or an empty
  directory), ``overwrite=False`` appends, and the writer publishes
  atomically at ``close()`` as well.

  Args:
    data_dir: the TFDS data directory; the dataset goes to
      ``data_dir/name/version`` (directories are created).
    name: the dataset name (snake_case).
    features_or_spec: the dataset features: a ``FeaturesDict``, a
      ``tfds.rlds.rlds_base.DatasetConfig``, a dict of features/specs, or an
      example episode (step lists or columns with a flag column; its
      features are inferred by `rlds_lite.tfds.features_from_episode`); see
      `rlds_lite.tfds.features.episode_features`. May be None when
      appending: the existing dataset's features are used.
    splits: the names of the splits episodes may be added to.
    file_format: ``'tfrecord'`` (readable with ``tf.data``) or
      ``'array_record'`` (random access with ``tfds.data_source``).
    version: the dataset version (default ``'1.0.0'``).
    if_exists: what to do if the dataset already exists: ``'error'``
      (default: a FileExistsError, nothing touched), ``'append'`` (add the
      episodes to it; the features must be the same) or ``'overwrite'``
      (replace it at ``close()``).
    lock_timeout: seconds to wait for another writer of the same dataset
      (None, the default: as long as it takes; 0: fail at once).
    max_episodes_per_file: episodes per shard file at most.
    max_bytes_per_file: start a new shard file after this many bytes.
    description: the dataset description.
    homepage: the dataset homepage.
    citation: the dataset citation.
    use_images: detect images when inferring features from specs.
    image_encoding: the encoding of detected images (``'png'`` or
      ``'jpeg'``).
    jpeg_quality: the quality (0-100) of the JPEG images written (features
      ``tfds.features.Image(encoding_format='jpeg')``, given or detected
      with ``image_encoding='jpeg'``); None: TFDS's 95.
    tensor_encoding: the encoding of tensors inferred from specs (see
      `rlds_lite.tfds.features.episode_features`).
    split_name: upstream form only: the split.
    overwrite: upstream form only: False appends to an existing dataset.
    metadata: JSON-ready dataset metadata, written to ``metadata.json``
      (``tfds.builder_from_directory(path).info.metadata``) of a new
      dataset; not when appending.

  Raises:
    FileExistsError: if the dataset exists and ``if_exists='error'``, or the
      target directory holds something else than a TFDS dataset.
    rlds_lite.tfds.locking.DatasetLockedError: (a TimeoutError) if another
      writer still holds the dataset after ``lock_timeout`` seconds (the
      message names its pid and host), or another writer of this process
      holds it.
    ValueError: for a bad name, split, file format, ``if_exists``, or
      features that differ from those of the dataset appended to.

  Example:
    >>> import tempfile
    >>> import numpy as np
    >>> data_dir = tempfile.mkdtemp()
    >>> features = {'steps': {'reward': np.float32}}
    >>> first = EpisodeWriter(data_dir, 'shared', features)
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
               file_format: str = 'tfrecord',
               *,
               version: Optional[str] = None,
               if_exists: str = 'error',
               lock_timeout: Optional[float] = None,
               max_episodes_per_file: int = 1000,
               max_bytes_per_file: int = 256 << 20,
               description: str = '',
               homepage: str = '',
               citation: str = '',
               use_images: bool = True,
               image_encoding: str = 'png',
               jpeg_quality: Optional[int] = None,
               tensor_encoding: str = 'none',
               split_name: Optional[str] = None,
               overwrite: Optional[bool] = None,
               metadata: Optional[Mapping[str, Any]] = None):
    path = None
    if isinstance(name, DatasetConfig):
      (name, features_or_spec, splits, version, if_exists,
       max_episodes_per_file) = _from_upstream_form(
           name, features_or_spec, splits, file_format, version,
           max_episodes_per_file, split_name, overwrite)
      file_format = 'tfrecord'
      path = os.path.abspath(os.path.expanduser(os.fspath(data_dir)))
    else:
      if split_name is not None or overwrite is not None:
        raise ValueError('split_name= and overwrite= are for the upstream form '
                         'EpisodeWriter(data_directory, ds_config, ...); use '
                         'splits= and if_exists=.')
      check_name(name)
      version = version or '1.0.0'
    if not isinstance(max_episodes_per_file, int) or max_episodes_per_file < 1:
      raise ValueError('max_episodes_per_file must be a positive int, got '
                       f'{max_episodes_per_file!r}.')
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
    tfds.core.Version(version)  # Validates the version string.
    self._name = name
    self._version = version
    self._splits = tuple(splits)
    self._format = shards.file_format_of(file_format)
    self._if_exists = if_exists
    self._path = os.path.normpath(path or dataset_path(data_dir, name,
                                                        version))
    self._max_episodes = max_episodes_per_file
    self._max_bytes = max_bytes_per_file
    self._description = description
    self._homepage = homepage
    self._citation = citation
    self._jpeg_quality = jpeg_quality
    self._metadata = dict(metadata) if metadata is not None else None
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
      self._open(features_or_spec, use_images=use_images,
                 image_encoding=image_encoding,
                 tensor_encoding=tensor_encoding)
    except BaseException:
      self._state = 'failed'
      self._lock.release()
      raise
    publish.step('locked')

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
      raise ValueError('EpisodeWriter: metadata= is written with a new '
                       'dataset, not when appending.')
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
    self._encoder = encoding.EpisodeEncoder(features, self._jpeg_quality)
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
          max_examples_per_shard=self._max_episodes,
          max_bytes_per_shard=self._max_bytes,
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
    """Adds one episode to a split.

    Args:
      episode: ``{'steps': steps, **metadata}`` where ``steps`` is a dict of
        ``[T, ...]`` columns (fastest), a ``tf.data.Dataset`` of steps or a
        list of step dicts. ``is_first``/``is_last`` are derived from the
        step positions when missing.
      split: the split (may be omitted when the writer has one split).

    Raises:
      ValueError: if the writer is closed, or the episode does not match the
        features, or its record would exceed the 2 GiB a
        ``tf.train.Example`` can hold (`encoding.RecordTooLargeError`); the
        message names the episode (its index among the episodes added to
        this writer) and the field; nothing is written then.
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
    """Adds one episode already serialized for these features.

    For copying episodes between datasets with the same features (filter,
    merge, split) without decoding and re-encoding them: the bytes are
    written as they are, and are not checked against the features.

    Args:
      record: a serialized ``tf.train.Example`` of an episode, as read from
        a dataset with the same features.
      split: the split (may be omitted when the writer has one split).

    Raises:
      ValueError: if the writer is closed.
    """
    if self._state != 'open':
      raise ValueError(f'EpisodeWriter: add_serialized_episode() after '
                       f'{self._state}.')
    self._writer(self._resolve_split(split)).write(bytes(record))
    self._num_added += 1

  def add_episodes(self, episodes: Iterable[Mapping[str, Any]],
                   split: Optional[str] = None) -> None:
    """Adds every episode of ``episodes`` (see `add_episode`).

    Raises:
      ValueError: as `add_episode`, naming the episode by its index in
        ``episodes`` (``'episode 3: steps/reward: ...'``).
    """
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
        description=self._description or (base.description if base else ''),
        features=self.features,
        homepage=self._homepage or (base.homepage if base else ''),
        citation=self._citation or (base.citation if base else ''),
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
    """Finishes the shards and publishes the dataset atomically.

    The steps are `rlds_lite.tfds.publish.PUBLISH_STEPS`; everything is on
    disk before the one atomic rename that publishes it. The lock is
    released at the end, whatever happens.

    Returns:
      The dataset directory.

    Raises:
      FileExistsError: if the dataset directory was filled meanwhile by
        something that does not take the lock (and ``if_exists='error'``);
        this session's data is discarded.
      ValueError: if no episode was written to a new dataset.
      OSError: if the disk fails; before the switch the session is
        discarded (the dataset is as it was), after it the dataset is
        published and the error says so.
    """
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
    """Discards everything written in this session (the dataset is untouched).

    Releases the dataset's lock.
    """
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
                  file_format: str = 'tfrecord',
                  if_exists: str = 'error',
                  lock_timeout: Optional[float] = None,
                  use_images: bool = True,
                  image_encoding: str = 'png',
                  jpeg_quality: Optional[int] = None,
                  description: str = '') -> str:
  """Writes an episodes ``tf.data.Dataset`` as a TFDS dataset (transform, save).

  Episodes may have nested ``steps`` (a ``tf.data.Dataset`` per episode) or
  dense ones (a dict of ``[T, ...]`` tensors, as from ``rlds_lite.dense``);
  each episode is made dense inside tf.data and written column-wise.

  Args:
    episodes: the episodes.
    data_dir: the TFDS data directory.
    name: the dataset name.
    features: the features (see `EpisodeWriter`); inferred from
      ``episodes.element_spec`` when None (images detected, float64 exact).
    split: the split to write.
    version: the dataset version.
    file_format: ``'tfrecord'`` or ``'array_record'``.
    if_exists: ``'error'``, ``'append'`` or ``'overwrite'`` (see `EpisodeWriter`).
    lock_timeout: seconds to wait for another writer of the dataset (see
      `EpisodeWriter`).
    use_images: detect images when inferring features.
    image_encoding: the encoding of detected images (``'png'``, ``'jpeg'``).
    jpeg_quality: the quality of JPEG images (0-100; None: TFDS's 95).
    description: the dataset description.

  Returns:
    The dataset directory.

  Raises:
    TypeError: if ``episodes`` is not a dataset of episode dicts.
    ValueError: naming the episode (its index in ``episodes``) and field,
      for an episode that does not match the features or is too large;
      nothing is published then.

  Example:
    >>> import tempfile
    >>> steps = tf.data.Dataset.from_tensor_slices(
    ...     {'reward': [1.0, 2.0], 'is_first': [True, False],
    ...      'is_last': [False, True], 'is_terminal': [False, True]})
    >>> episodes = tf.data.Dataset.from_tensors({'steps': steps})
    >>> episodes = episodes.map(lambda e: {'steps': e['steps'].map(
    ...     lambda s: {**s, 'reward': 2 * s['reward']})})
    >>> path = write_dataset(episodes, tempfile.mkdtemp(), 'doubled')
    >>> import rlds_lite
    >>> episode = next(iter(rlds_lite.load(path, dense=True)))
    >>> episode['steps']['reward'].numpy().tolist()
    [2.0, 4.0]
  """
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
                     file_format=file_format, version=version,
                     if_exists=if_exists, lock_timeout=lock_timeout,
                     use_images=use_images,
                     image_encoding=image_encoding,
                     jpeg_quality=jpeg_quality,
                     description=description) as writer:
    for episode in episodes.as_numpy_iterator():
      writer.add_episode(episode, split)
  return writer.path
