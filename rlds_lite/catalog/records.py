"""Where each episode of a split lives (from ``dataset_info.json``), and reading their records."""

import dataclasses
import os
from typing import Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import tfrecord_frames

__all__ = ['SplitFiles', 'split_files', 'record_offsets', 'checked_indices',
           'read_records', 'iterate_records']

_READ_BUFFER = 1 << 20
_ARRAY_RECORD_CHUNK = 64


@dataclasses.dataclass(frozen=True)
class SplitFiles:
  """The shard files of a split, in order: ``paths``, ``lengths``, ``file_format``, ``label``.

  Example:
    >>> files = SplitFiles(('/d/toy-train-0', '/d/toy-train-1'), (2, 3),
    ...                    'tfrecord', label='toy train')
    >>> files.num_episodes, files.starts.tolist()
    (5, [0, 2])
    >>> [a.tolist() for a in files.locate([1, 2])]  # (shard, record) of each.
    [[0, 1], [1, 0]]
  """
  paths: Tuple[str, ...]
  lengths: Tuple[int, ...]
  file_format: str
  label: str = ''

  @property
  def num_episodes(self) -> int:
    """The number of episodes of the split.

    Example:
      >>> SplitFiles(('/d/a', '/d/b'), (2, 3), 'tfrecord').num_episodes
      5
    """
    return int(sum(self.lengths))

  @property
  def shard_names(self) -> Tuple[str, ...]:
    """The shard file names (no directory).

    Example:
      >>> SplitFiles(('/d/a', '/d/b'), (2, 3), 'tfrecord').shard_names
      ('a', 'b')
    """
    return tuple(os.path.basename(p) for p in self.paths)

  @property
  def starts(self) -> np.ndarray:
    """The split index of each shard's first episode.

    Example:
      >>> SplitFiles(('/d/a', '/d/b'), (2, 3), 'tfrecord').starts.tolist()
      [0, 2]
    """
    return np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)

  def locate(self, indices: Union[Sequence[int], np.ndarray]
             ) -> Tuple[np.ndarray, np.ndarray]:
    """``(shard, record)`` positions of split indices (both int64 arrays).

    Example:
      >>> files = SplitFiles(('a', 'b'), (2, 3), 'tfrecord')
      >>> [a.tolist() for a in files.locate([0, 2, 4])]
      [[0, 1, 1], [0, 0, 2]]
    """
    indices = np.asarray(indices, dtype=np.int64)
    shards = np.searchsorted(np.cumsum(self.lengths), indices, side='right')
    return shards.astype(np.int64), indices - self.starts[shards]


def split_files(builder: tfds.core.DatasetBuilder, split: str) -> SplitFiles:
  """The shard files of ``split`` (a plain split name), from the dataset info.

  Example:
    >>> import tempfile
    >>> import rlds_lite
    >>> from rlds_lite.tfds import EpisodeWriter, FileOptions
    >>> with EpisodeWriter(tempfile.mkdtemp(), 'toy', {'steps': {'x': np.int32}},
    ...                    options=FileOptions(max_episodes_per_file=2)) as writer:
    ...   writer.add_episodes({'steps': {'x': [i], 'is_terminal': [True]}}
    ...                       for i in range(3))
    >>> files = split_files(rlds_lite.open(writer.path).builder, 'train')
    >>> files.shard_names, files.lengths
    (('toy-train.tfrecord-00000', 'toy-train.tfrecord-00001'), (2, 1))
  """
  splits = builder.info.splits
  if not isinstance(split, str) or split not in splits:
    raise ValueError(f'dataset {os.fspath(builder.data_dir)!r} has no split '
                     f'{split!r} (its splits: {sorted(splits.keys())}); pass '
                     'a plain split name (no slicing).')
  file_format = builder.info.file_format
  value = getattr(file_format, 'value', file_format) or 'tfrecord'
  if value not in ('tfrecord', 'array_record'):
    raise ValueError(f'dataset {os.fspath(builder.data_dir)!r} is stored as '
                     f'{value}; episodes are read from tfrecord or '
                     'array_record shards only.')
  paths, lengths = [], []
  for instruction in splits[split].file_instructions:
    if instruction.skip or instruction.take != instruction.examples_in_shard:
      raise ValueError(f'split {split!r} reads part of a shard '
                       f'({instruction}); pass a plain split name.')
    if instruction.examples_in_shard:
      paths.append(os.fspath(instruction.filename))
      lengths.append(int(instruction.examples_in_shard))
  label = f'{os.fspath(builder.data_dir)!r} split {split!r}'
  return SplitFiles(tuple(paths), tuple(lengths), value, label)


def record_offsets(path: str, expected: Optional[int] = None) -> np.ndarray:
  """The byte offsets of every record of a TFRecord file, then its end (headers only).

  Another count than ``expected``, or a cut-off record, is a ValueError naming the file.

  Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), 'x.tfrecord')
    >>> with tf.io.TFRecordWriter(path) as writer:
    ...   for record in [b'a', b'bbb', b'']:
    ...     writer.write(record)
    >>> record_offsets(path).tolist()
    [0, 17, 36, 52]
  """
  size = tf.io.gfile.stat(path).length
  with tf.io.gfile.GFile(path, 'rb') as f:
    try:
      offsets = [offset for offset, _ in tfrecord_frames.frames(f, size)]
    except tfrecord_frames.FramingError as e:
      if e.length is None:
        raise ValueError(f'{path}: the file ends inside the header of record '
                         f'{e.record} (byte {e.offset}); it is truncated or '
                         'corrupt.') from None
      raise ValueError(f'{path}: record {e.record} (byte {e.offset}) claims '
                       f'{e.length} bytes, past the end of the file ({size} '
                       'bytes); it is truncated or corrupt.') from None
  if expected is not None and len(offsets) != expected:
    raise ValueError(f'{path}: holds {len(offsets)} records, the dataset info '
                     f'says {expected}.')
  return np.asarray(offsets + [size], dtype=np.int64)


def _runs(shards: np.ndarray, records: np.ndarray
          ) -> List[Tuple[int, int, int]]:
  """``(shard, first record, count)`` of runs of consecutive records."""
  if not len(shards):
    return []
  breaks = np.flatnonzero((np.diff(shards) != 0) | (np.diff(records) != 1)) + 1
  starts = np.concatenate([[0], breaks])
  ends = np.concatenate([breaks, [len(shards)]])
  return [(int(shards[a]), int(records[a]), int(b - a))
          for a, b in zip(starts, ends)]


def checked_indices(files: SplitFiles, indices: Sequence[int]) -> np.ndarray:
  """``indices`` as an int64 array; an error for non-ints or out of range.

  Example:
    >>> checked_indices(SplitFiles(('a',), (3,), 'tfrecord', 'toy'), [2, 0])
    array([2, 0])
  """
  array = np.asarray(indices)
  if array.ndim != 1 or not (array.dtype.kind in 'iu' or len(array) == 0):
    raise TypeError('episodes must be a list of episode indices (ints), got '
                    f'{array.dtype} {list(array.shape)}.')
  array = array.astype(np.int64)
  outside = (array < 0) | (array >= files.num_episodes)
  if outside.any():
    raise IndexError(f'episode index {array[outside][0]} is out of range: '
                     f'{files.label} has {files.num_episodes} episodes.')
  return array


def _tfrecord_runs(files: SplitFiles, indices: np.ndarray) -> tf.data.Dataset:
  shards, records = files.locate(indices)
  runs = _runs(shards, records)
  offsets = {shard: record_offsets(files.paths[shard], files.lengths[shard])
             for shard in sorted({run[0] for run in runs})}
  paths = np.array([files.paths[shard] for shard, _, _ in runs], dtype=object)
  starts = np.array([offsets[shard][first] for shard, first, _ in runs],
                    dtype=np.int64)
  ends = np.array([offsets[shard][first + count]
                   for shard, first, count in runs], dtype=np.int64)
  counts = np.array([count for _, _, count in runs], dtype=np.int64)
  # A buffer larger than the run would read bytes past it (1 MB for every
  # scattered episode: 4x slower for 1,000 random episodes of 30 KB).
  buffers = np.minimum(ends - starts, _READ_BUFFER)

  @tf.autograph.experimental.do_not_convert
  def read_run(path, offset, count, buffer_size):
    variant = tf.raw_ops.TFRecordDatasetV2(
        filenames=path, compression_type='', buffer_size=buffer_size,
        byte_offsets=offset)
    records = tf.data.experimental.from_variant(
        variant, tf.TensorSpec([], tf.string))
    return records.take(count)

  runs_dataset = tf.data.Dataset.from_tensor_slices(
      (paths.astype(str) if len(paths) else np.zeros([0], str), starts, counts,
       buffers))
  return runs_dataset.flat_map(read_run)


def _array_records(files: SplitFiles, indices: Optional[np.ndarray]
                   ) -> Iterator[bytes]:
  from array_record.python import array_record_module  # pylint: disable=g-import-not-at-top
  if indices is None:
    indices = np.arange(files.num_episodes, dtype=np.int64)
  shards, records = files.locate(indices)
  readers = {}
  try:
    for shard, first, count in _runs(shards, records):
      if shard not in readers:
        readers[shard] = array_record_module.ArrayRecordReader(
            files.paths[shard])
      for start in range(first, first + count, _ARRAY_RECORD_CHUNK):
        end = min(start + _ARRAY_RECORD_CHUNK, first + count)
        yield from readers[shard].read(start, end)
  finally:
    for reader in readers.values():
      reader.close()


def read_records(files: SplitFiles,
                 indices: Optional[Sequence[int]] = None) -> tf.data.Dataset:
  """The serialized episodes of a split (`split_files`) at ``indices`` (None: all), as a dataset.

  Example:
    >>> import rlds_lite
    >>> path = rlds_lite.synthetic.dataset(3, seed=0)
    >>> files = split_files(rlds_lite.open(path).builder, 'train')
    >>> every = [r.numpy() for r in read_records(files)]
    >>> [r.numpy() for r in read_records(files, [2, 0])] == [every[2], every[0]]
    True
  """
  if indices is not None:
    indices = checked_indices(files, indices)
  if files.file_format == 'array_record':
    return tf.data.Dataset.from_generator(
        lambda: _array_records(files, indices),
        output_signature=tf.TensorSpec([], tf.string))
  if indices is None:
    return tf.data.TFRecordDataset(list(files.paths),
                                   buffer_size=_READ_BUFFER)
  return _tfrecord_runs(files, indices)


def iterate_records(files: SplitFiles,
                    indices: Optional[Sequence[int]] = None) -> Iterator[bytes]:
  """`read_records` as a Python iterator of ``bytes``.

  Example:
    >>> import tempfile
    >>> import rlds_lite
    >>> from rlds_lite.tfds import EpisodeWriter, FileOptions
    >>> with EpisodeWriter(tempfile.mkdtemp(), 'toy', {'steps': {'x': np.int32}},
    ...                    options=FileOptions(file_format='array_record')) as writer:
    ...   writer.add_episodes({'steps': {'x': [i], 'is_terminal': [True]}}
    ...                       for i in range(3))
    >>> files = split_files(rlds_lite.open(writer.path).builder, 'train')
    >>> [type(r).__name__ for r in iterate_records(files, [1, 1])]
    ['bytes', 'bytes']
  """
  if files.file_format == 'array_record':
    if indices is not None:
      indices = checked_indices(files, indices)
    return _array_records(files, indices)
  return read_records(files, indices).as_numpy_iterator()
