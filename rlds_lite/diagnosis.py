"""Read errors named: TF's read error becomes one naming file, episode, field and step."""

import contextlib
import os
from typing import Any, Callable, Collection, Iterator, NamedTuple, Optional

import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import dataset_files
from rlds_lite import decoding
from rlds_lite import nest_paths
from rlds_lite import rlds_types
from rlds_lite.images import decode

__all__ = ['BadFrame', 'episode_error', 'episode_reader', 'first_bad_frame',
           'frame_error', 'named_read_errors']


def episode_reader(builder: tfds.core.DatasetBuilder
                   ) -> Callable[[Any], tf.data.Dataset]:
  """``split -> dense episodes`` of a builder, as ``load(dense=True)`` reads them.

  Example:
    >>> from rlds_lite import synthetic
    >>> read = episode_reader(tfds.builder_from_directory(
    ...     synthetic.dataset(3, seed=0)))
    >>> int(read('train[1:]').cardinality())
    2
  """
  return lambda split: decoding.dense_episodes(
      builder, split, read_config=tfds.ReadConfig(try_autocache=False))


@contextlib.contextmanager
def named_read_errors(builder: tfds.core.DatasetBuilder, split: Any,
                      known: Collection[str] = ()) -> Iterator[None]:
  """Inside this block a TF read error of ``split`` becomes a `CorruptDatasetError` naming it.

  An error the files do not explain is re-raised unchanged; ``known`` are files already known
  to be damaged.

  Example:
    >>> from rlds_lite import synthetic
    >>> path = synthetic.dataset(3, seed=0)
    >>> builder = tfds.builder_from_directory(path)
    >>> shard = os.path.join(path, 'toy-train.tfrecord-00000')
    >>> data = bytearray(open(shard, 'rb').read())
    >>> data[-10] ^= 0xFF  # One flipped bit in the last episode's record.
    >>> _ = open(shard, 'wb').write(bytes(data))
    >>> with named_read_errors(builder, 'train'):  # doctest: +ELLIPSIS
    ...   for episode in decoding.dense_episodes(builder, 'train'):
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
  """``problem`` as the camera frame that does not decode, if that is it."""
  if (problem.kind != dataset_files.UNDECODABLE or problem.field is not None
      or problem.episode is None or not isinstance(split, str)
      or '[' in split):
    return problem
  return frame_error(builder, split, problem.episode, problem.cause) or problem


class BadFrame(NamedTuple):
  """A frame that does not decode: its field, step and first bytes."""
  field: str
  step: int
  head: bytes


def first_bad_frame(builder: tfds.core.DatasetBuilder, split: str,
                    episode: int) -> Optional[BadFrame]:
  """The first frame of episode ``episode`` of ``split`` that does not decode alone, or None.

  Example:
    >>> import tempfile
    >>> from rlds_lite import synthetic
    >>> path = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=2,
    ...                                 length=3)
    >>> print(first_bad_frame(tfds.builder_from_directory(path), 'train', 1))
    None
  """
  count = builder.info.splits[split].num_examples
  if not 0 <= episode < count:
    raise ValueError(f'first_bad_frame: split {split!r} has no episode '
                     f'{episode} (it has {count}).')
  one = f'{split}[{episode}:{episode + 1}]'
  episodes = decoding.dense_episodes(builder, one, encoded_images=True)
  steps = next(iter(episodes))[rlds_types.STEPS]
  specs = decoding.image_specs(builder.info.features[rlds_types.STEPS].feature)
  for path, spec in specs.items():
    for step, frame in enumerate(nest_paths.get_path(steps, path).numpy()):
      try:
        decode.decode_frames(tf.constant([frame]), spec)
      except tf.errors.OpError:
        return BadFrame(path, step, frame[:8])
  return None


def frame_error(builder: tfds.core.DatasetBuilder, split: str, episode: int,
                cause: Optional[str] = None
                ) -> Optional[dataset_files.CorruptDatasetError]:
  """The error naming the first frame of ``episode`` that does not decode (quoting ``cause``).

  Example:
    >>> import tempfile
    >>> from rlds_lite import synthetic
    >>> path = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=2,
    ...                                 length=3)
    >>> print(frame_error(tfds.builder_from_directory(path), 'train', 1))
    None
  """
  try:
    bad = first_bad_frame(builder, split, episode)
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
  """What kept ``episode`` of a plain split from reading (its read raised ``error``), or None.

  Example:
    >>> from rlds_lite import synthetic
    >>> builder = tfds.builder_from_directory(synthetic.dataset(2, seed=0))
    >>> print(episode_error(builder, 'train', 0, tf.errors.UnknownError(
    ...     None, None, 'elsewhere')))
    None
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
