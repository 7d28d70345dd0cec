"""`RLDSBuilder`: a TFDS dataset builder configured (by an `RLDSConfig`), not programmed.

``tfds build``, ``download_and_prepare`` and ``tfds.load`` work as for any TFDS
dataset; see ``docs/recording.md`` (and ``docs/guarantees.md`` for the lock).
"""

import dataclasses
import functools
import itertools
import os
import re
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping,
                    Optional, Sequence, Tuple, Union)

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import progress as progress_lib
from rlds_lite import rlds_types
from rlds_lite.tfds import encoding
from rlds_lite.tfds import envlogger_episodes
from rlds_lite.tfds import features as features_lib
from rlds_lite.tfds import locking
from rlds_lite.tfds import publish
from rlds_lite.tfds import shards

__all__ = ['RLDSBuilder', 'RLDSConfig']

Episode = Mapping[str, Any]
PathLike = Union[str, os.PathLike]
EnvLoggerDirs = Union[None, PathLike, Sequence[PathLike],
                      Mapping[str, Union[PathLike, Sequence[PathLike]]]]


@dataclasses.dataclass(eq=False)
class RLDSConfig(tfds.core.BuilderConfig):
  """What an `RLDSBuilder` builds.

    Attributes:
      name, description, homepage, citation: the dataset's card.
      features: the full dataset features (see
        `rlds_lite.tfds.features.episode_features`); or ``step_features``
        (flags added) and ``episode_features``; or none: inferred from the
        recordings.
      envlogger_dirs: EnvLogger recordings: a path, paths, or ``{split: ...}``.
      episodes_fn: alternatively, ``episodes_fn(split)`` yields columnar
        episodes (module-level, picklable, for Beam).
      splits: the splits (for ``episodes_fn``, or one split for all recordings).
      beam: build with Apache Beam through TFDS.
      use_images, image_encoding, jpeg_quality, tensor_encoding: how features
        are inferred and images written.
      max_episodes_per_file: episodes per shard file at most (without Beam).

    Example:
      >>> import numpy as np
      >>> config = RLDSConfig(step_features={'action': np.int64},
      ...                     envlogger_dirs={'train': '/data/catch'})
      >>> config.name, config.splits, config.beam, config.max_episodes_per_file
      ('default', ('train',), False, 1000)
  """
  name: str = 'default'
  homepage: str = ''
  citation: str = ''
  features: Any = None
  step_features: Optional[Mapping[str, Any]] = None
  episode_features: Optional[Mapping[str, Any]] = None
  envlogger_dirs: EnvLoggerDirs = None
  episodes_fn: Optional[Callable[[str], Iterable[Episode]]] = None
  splits: Sequence[str] = ('train',)
  beam: bool = False
  use_images: bool = True
  image_encoding: str = 'png'
  jpeg_quality: Optional[int] = None
  tensor_encoding: str = 'none'
  max_episodes_per_file: int = 1000


_GROUP_STEPS = 4096
_GROUP_BYTES = 64 << 20
"""Episodes serialized together (`EpisodeEncoder.serialize_many`): up to
about this many steps and bytes of step arrays."""


def _step_arrays(episode: Any) -> List[np.ndarray]:
  """The ``[T, ...]`` arrays of a columnar episode's steps, or ``[]``.

  ``[]`` for any other form (step lists, odd keys, ...): such an episode is
  a group of its own, and `EpisodeEncoder.serialize` names its problems.
  """
  steps = (episode.get(rlds_types.STEPS) if isinstance(episode, Mapping)
           else None)
  if not isinstance(steps, Mapping):
    return []
  try:
    leaves = tf.nest.flatten(steps)
  except (TypeError, ValueError):  # E.g. keys that do not sort.
    return []
  arrays = [x for x in leaves if isinstance(x, np.ndarray)]
  return arrays if arrays and all(x.ndim for x in arrays) else []


def _groups(episodes: Iterable[Tuple[int, str, Episode]],
            max_steps: int = _GROUP_STEPS, max_bytes: int = _GROUP_BYTES
            ) -> Iterator[List[Tuple[int, str, Episode]]]:
  """Consecutive ``(key, where, episode)`` s, about ``max_steps`` steps and
  ``max_bytes`` bytes of step arrays a group; episodes not in columns (step
  lists, ...) are groups of one.

  Example:
    >>> steps = lambda n: {'steps': {'x': np.zeros(n, np.float32)}}
    >>> items = [(k, '', steps(n)) for k, n in enumerate([3, 3, 3, 1])]
    >>> [[k for k, _, _ in g] for g in _groups(items, max_steps=5)]
    [[0, 1], [2, 3]]
  """
  group, steps, size = [], 0, 0
  for item in episodes:
    arrays = _step_arrays(item[2])
    if not arrays:
      if group:
        yield group
        group, steps, size = [], 0, 0
      yield [item]
      continue
    group.append(item)
    steps += len(arrays[0])
    size += sum(x.nbytes for x in arrays)
    if steps >= max_steps or size >= max_bytes:
      yield group
      group, steps, size = [], 0, 0
  if group:
    yield group


def _remove_tfds_incomplete_dirs(dataset_dir: str) -> None:
  """Removes TFDS's ``incomplete.XXXXXX_<version>`` dirs of a dead build.

  Called holding the dataset's lock: every build of an `RLDSBuilder` holds
  it while its incomplete directory exists.
  """
  parent, version = os.path.split(os.path.normpath(dataset_dir))
  if not tf.io.gfile.isdir(parent):
    return
  pattern = re.compile(rf'^incomplete\.[A-Z0-9]{{6}}_{re.escape(version)}$')
  for name in tf.io.gfile.listdir(parent):
    if pattern.match(name.rstrip('/')):
      tf.io.gfile.rmtree(os.path.join(parent, name.rstrip('/')))


def _fast_formats() -> Tuple[tfds.core.FileFormat, ...]:
  return (tfds.core.FileFormat.TFRECORD, tfds.core.FileFormat.ARRAY_RECORD)


class RLDSBuilder(tfds.core.GeneratorBasedBuilder, skip_registration=True):
  """Base class of RLDS dataset builders defined by an `RLDSConfig`.

    Set ``RLDS_CONFIG`` (or ``BUILDER_CONFIGS``) and ``VERSION``; override
    `envlogger_paths` or `generate_episodes` to compute the sources in code.

    Example (features inferred from an EnvLogger recording):
      >>> import tempfile
      >>> from rlds_lite import synthetic
      >>> recording = synthetic.catch_recording(num_episodes=2)
      >>> class CatchExpert(RLDSBuilder, skip_registration=True):
      ...   RLDS_CONFIG = RLDSConfig(envlogger_dirs=recording)
      >>> builder = CatchExpert(data_dir=tempfile.mkdtemp())
      >>> builder.info.features['steps']['observation']
      Tensor(shape=(10, 5), dtype=float32)
      >>> builder.download_and_prepare()  # doctest: +ELLIPSIS
      Downloading and preparing dataset ... Subsequent calls will reuse this data.
      >>> [int(e['episode_id']) for e in builder.as_dataset(split='train')]
      [0, 1]
  """

  VERSION = tfds.core.Version('1.0.0')
  RLDS_CONFIG: Optional[RLDSConfig] = None

  @property
  def rlds_config(self) -> RLDSConfig:
    """The `RLDSConfig` in use (the builder config, or ``RLDS_CONFIG``)."""
    config = self.builder_config
    if isinstance(config, RLDSConfig):
      return config
    if isinstance(self.RLDS_CONFIG, RLDSConfig):
      return self.RLDS_CONFIG
    raise ValueError(
        f'{type(self).__name__}: set RLDS_CONFIG = RLDSConfig(...) (or '
        'BUILDER_CONFIGS of RLDSConfig) on the builder class.')

  # --------------------------------------------------------------------------
  # Sources.

  def envlogger_paths(self) -> Dict[str, List[str]]:
    """``{split: recording directories}`` from ``envlogger_dirs`` (may be {})."""
    config = self.rlds_config
    dirs = config.envlogger_dirs
    if dirs is None:
      return {}
    if isinstance(dirs, Mapping):
      items = dict(dirs)
    else:
      if len(config.splits) != 1:
        raise ValueError(
            f'{type(self).__name__}: envlogger_dirs must be a dict '
            f'{{split: paths}} when there are several splits {config.splits}.')
      items = {config.splits[0]: dirs}
    return {split: envlogger_episodes.find_recordings(paths)
            for split, paths in items.items()}

  def generate_episodes(self, split: str) -> Iterable[Episode]:
    """The episodes of ``split`` from ``episodes_fn`` (override to compute)."""
    config = self.rlds_config
    if config.episodes_fn is None:
      raise ValueError(
          f'{type(self).__name__}: RLDSConfig needs envlogger_dirs or '
          'episodes_fn (or override generate_episodes).')
    return config.episodes_fn(split)

  @functools.cached_property
  def _recordings(self) -> Dict[str, List[str]]:
    return self.envlogger_paths()

  @functools.cached_property
  def _specs(self) -> Dict[str, Any]:
    every = [r for paths in self._recordings.values() for r in paths]
    return envlogger_episodes.same_specs(every)

  def _split_names(self) -> List[str]:
    if self._recordings:
      return list(self._recordings)
    return list(self.rlds_config.splits)

  def _sourced_episodes(self, split: str
                        ) -> Iterator[Tuple[int, str, Episode]]:
    """``(key, description, episode)`` of a split, in order."""
    if self._recordings:
      for r, recording in enumerate(self._recordings[split]):
        for key, episode in envlogger_episodes.read_rlds_episodes(
            recording, self._specs, r):
          where = f'episode {key - envlogger_episodes.episode_key(r, 0)} of ' \
                  f'EnvLogger recording {recording}'
          yield key, where, episode
    else:
      for i, episode in enumerate(self.generate_episodes(split)):
        yield i, f'episode {i} of split {split!r}', episode

  def _keyed_episodes(self, split: str) -> Iterator[Tuple[int, Episode]]:
    """``(key, episode)`` pairs of a split, in order."""
    for key, _, episode in self._sourced_episodes(split):
      yield key, episode

  # --------------------------------------------------------------------------
  # TFDS hooks.

  def _features(self) -> tfds.features.FeaturesDict:
    config = self.rlds_config
    options = dict(use_images=config.use_images,
                   image_encoding=config.image_encoding,
                   tensor_encoding=config.tensor_encoding)
    if config.features is not None:
      return features_lib.episode_features(config.features, **options)
    if config.step_features is not None:
      return features_lib.episode_features(
          {rlds_types.STEPS: config.step_features,
           **(config.episode_features or {})}, **options)
    prepared = self._prepared_features()
    if prepared is not None:
      return prepared
    if self._recordings:
      every = [r for paths in self._recordings.values() for r in paths]
      return envlogger_episodes.features_from_recordings(every, **options)
    raise ValueError(
        f'{type(self).__name__}: RLDSConfig needs features, step_features or '
        'envlogger_dirs to infer them from.')

  def _prepared_features(self) -> Optional[tfds.features.FeaturesDict]:
    """The features of an already prepared dataset (no recording needed)."""
    try:
      path = os.fspath(self.data_path)
    except (AttributeError, TypeError):
      return None
    if not os.path.exists(os.path.join(path, 'features.json')):
      return None
    return tfds.features.FeatureConnector.from_config(path)

  def _info(self) -> tfds.core.DatasetInfo:
    config = self.rlds_config
    return tfds.core.DatasetInfo(
        builder=self,
        description=config.description or (self.__doc__ or '').strip(),
        features=self._features(),
        homepage=config.homepage or None,
        citation=config.citation or None,
        disable_shuffling=True)

  def _split_generators(self, dl_manager: tfds.download.DownloadManager):
    del dl_manager
    return {split: self._generate_examples(split=split)
            for split in self._split_names()}

  def _generate_examples(self, split: str):
    """TFDS's generator (or Beam PTransform) of ``(key, episode)`` pairs."""
    encoder = encoding.EpisodeEncoder(self.info.features,
                                      self.rlds_config.jpeg_quality)
    if self.rlds_config.beam:
      from rlds_lite.tfds import beam as beam_lib  # pylint: disable=g-import-not-at-top
      features_json = self.info.features.to_json()
      if self._recordings:
        return beam_lib.envlogger_examples(self._recordings[split],
                                           self._specs, features_json,
                                           self.rlds_config.jpeg_quality)
      return beam_lib.generated_examples(self.rlds_config.episodes_fn, split,
                                         features_json,
                                         self.rlds_config.jpeg_quality)
    return ((key, encoder.conform(episode))
            for key, episode in self._keyed_episodes(split))

  def download_and_prepare(self, *args: Any,
                           lock_timeout: Optional[float] = None,
                           **kwargs: Any) -> None:
    """TFDS's ``download_and_prepare``, holding the dataset's lock.

        ``lock_timeout``: seconds to wait for another writer (None: as long as
        it takes; 0: fail at once); other arguments are TFDS's.
    """
    path = os.fspath(self.data_path)
    if not locking.is_local(path):  # No lock, no fsync: features embedded.
      self._prepare_with_features_inside(path, args, kwargs)
      return
    created = publish.missing_dirs(path)
    label = f'dataset {self.name!r} version {self.version} at {path!r}'
    with locking.DatasetLock(path, timeout=lock_timeout, label=label):
      _remove_tfds_incomplete_dirs(path)
      if self._prepare_with_features_inside(path, args, kwargs):
        publish.fsync_tree(path)
        for directory in created:
          publish.fsync_dir(os.path.dirname(directory))

  def _prepare_with_features_inside(self, path: str, args: Sequence[Any],
                                    kwargs: Mapping[str, Any]) -> bool:
    """TFDS's ``download_and_prepare``; the features put in its info file.

    Returns:
      Whether a new dataset was prepared (an existing one is left as it is).
    """
    info_path = os.path.join(path, 'dataset_info.json')
    fresh = not tf.io.gfile.exists(info_path)
    super().download_and_prepare(*args, **kwargs)
    if not (fresh and tf.io.gfile.exists(info_path)):
      return False
    publish.embed_features(path)
    return True

  def _download_and_prepare(self, dl_manager, download_config) -> None:
    """Writes the splits with rlds_lite's column-wise writer (Beam: TFDS's)."""
    if (self.rlds_config.beam or
        self.info.file_format not in _fast_formats()):
      return super()._download_and_prepare(dl_manager, download_config)
    limit = download_config.max_examples_per_split
    if limit == 0:
      return
    encoder = encoding.EpisodeEncoder(self.info.features,
                                      self.rlds_config.jpeg_quality)
    split_infos = []
    for split in self._split_names():
      split_infos.append(self._write_split(split, encoder, limit))
    self.info.set_splits(tfds.core.SplitDict(split_infos))

  def _serialized(self, encoder: encoding.EpisodeEncoder,
                  group: List[Tuple[int, str, Episode]]) -> List[bytes]:
    """The records of ``(key, where, episode)`` s; errors name the episode."""
    try:
      return encoder.serialize_many([episode for _, _, episode in group])
    except ValueError:
      pass  # Episode by episode below, for an error naming the episode.
    records = []
    for _, where, episode in group:
      try:
        records.append(encoder.serialize(episode))
      except encoding.RecordTooLargeError as e:
        raise encoding.RecordTooLargeError(f'{self.name}: {where}: {e}',
                                           e.nbytes, e.limit) from None
      except ValueError as e:
        raise ValueError(f'{self.name}: {where}: {e}') from e
    return records

  def _write_split(self, split: str, encoder: encoding.EpisodeEncoder,
                   limit: Optional[int]) -> tfds.core.SplitInfo:
    template = tfds.core.ShardedFileTemplate(
        data_dir=self.data_path, template=shards.SHARD_TEMPLATE,
        dataset_name=self.name, split=split,
        filetype_suffix=self.info.file_format.file_suffix)
    writer = shards.ShardWriter(
        template, self.info.file_format,
        max_examples_per_shard=self.rlds_config.max_episodes_per_file)
    try:
      episodes = itertools.islice(self._sourced_episodes(split),
                                  None if limit is None else max(limit, 0))
      # Recorded episodes are grouped (their image columns are views of one
      # decoded chunk). Generated ones are serialized as they come: a
      # generator may refill its arrays for the next episode once it yields.
      groups = (_groups(episodes) if self._recordings else
                ([item] for item in episodes))
      # On a terminal only; left on screen with its final count (it was
      # transient, and a split written within tqdm's mininterval of the
      # first draw showed "0 episodes" until it vanished, or stayed in logs).
      progress = progress_lib.bar(desc=f'Writing {self.name} {split}',
                                  unit=' episodes', mininterval=1.0)
      with progress:
        for group in groups:
          for record in self._serialized(encoder, group):
            writer.write(record)
          progress.update(len(group))
      lengths, num_bytes = writer.finalize()
    except BaseException:
      writer.abort()
      raise
    if not lengths:
      raise ValueError(f'{self.name}: split {split!r} has no episodes.')
    return tfds.core.SplitInfo(name=split, shard_lengths=lengths,
                               num_bytes=num_bytes, filename_template=template)

