"""Write serialized examples of one split into TFDS shard files, hidden until finalized.

Shards are named by index (`SHARD_TEMPLATE`) so more can be appended; an
overwrite writes a new generation (`generation_template`).
"""

import os
import re
import uuid
from typing import List, Optional, Tuple, Union

import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite.tfds import encoding
from rlds_lite.tfds import publish

__all__ = ['SHARD_TEMPLATE', 'ShardWriter', 'file_format_of',
           'generation_template', 'shard_file_pattern', 'template_generation']

SHARD_TEMPLATE = '{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_INDEX}'
"""Shard file names with an index but no shard count (appendable)."""

TEMP_PREFIX = '.shard-'
"""Shards being written are named ``.shard-<pid>-<token>-<n>`` (hidden)."""

_GENERATION_RE = re.compile(r'-g(\d+)\.\{FILEFORMAT\}')


def generation_template(generation: int) -> str:
  """The shard file template of a generation (1: `SHARD_TEMPLATE`).

  Example:
    >>> generation_template(1) == SHARD_TEMPLATE
    True
    >>> generation_template(2)
    '{DATASET}-{SPLIT}-g0002.{FILEFORMAT}-{SHARD_INDEX}'
  """
  if generation < 1:
    raise ValueError(f'generation must be >= 1, got {generation}.')
  if generation == 1:
    return SHARD_TEMPLATE
  return f'{{DATASET}}-{{SPLIT}}-g{generation:04d}.{{FILEFORMAT}}-{{SHARD_INDEX}}'


def template_generation(template: str) -> int:
  """The generation of a split's shard file template (others: 1).

  Example:
    >>> template_generation(generation_template(12)), template_generation(
    ...     '{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_INDEX}-of-{NUM_SHARDS}')
    (12, 1)
  """
  match = _GENERATION_RE.search(template)
  return int(match.group(1)) if match else 1


def shard_file_pattern(dataset_name: str) -> 're.Pattern[str]':
  """Matches the shard file names of a dataset (any split and generation).

  Groups: ``split``, ``generation`` (None for the first) and ``index``.

  Example:
    >>> pattern = shard_file_pattern('toy')
    >>> pattern.match('toy-train-g0003.tfrecord-00001').group('generation')
    '0003'
    >>> bool(pattern.match('toy-train.tfrecord-00000-of-00002'))
    True
    >>> bool(pattern.match('features.json'))
    False
  """
  return re.compile(
      rf'^{re.escape(dataset_name)}-(?P<split>\w+?)(?:-g(?P<generation>\d+))?'
      r'\.(?P<suffix>\w+)-(?P<index>\d{5,})(?:-of-\d{5,})?$')

_SUPPORTED_FORMATS = ('tfrecord', 'array_record')


def file_format_of(file_format: Union[str, tfds.core.FileFormat]
                   ) -> tfds.core.FileFormat:
  """The ``tfds.core.FileFormat`` named ``file_format`` (tfrecord/array_record); else a ValueError.

    Example:
      >>> file_format_of('array_record').value
      'array_record'
  """
  value = getattr(file_format, 'value', file_format)
  if value not in _SUPPORTED_FORMATS:
    raise ValueError(f'file_format must be one of {list(_SUPPORTED_FORMATS)}, '
                     f'got {file_format!r}.')
  return tfds.core.FileFormat(value)


class _RecordFile:
  """A push-based record file writer of one format."""

  def __init__(self, path: str, file_format: tfds.core.FileFormat):
    self._array_record = file_format == tfds.core.FileFormat.ARRAY_RECORD
    if self._array_record:
      from array_record.python import array_record_module  # pylint: disable=g-import-not-at-top
      self._writer = array_record_module.ArrayRecordWriter(path,
                                                           'group_size:1')
    else:
      self._writer = tf.io.TFRecordWriter(path)

  def write(self, record: bytes) -> None:
    if self._array_record and not isinstance(record, bytes):
      record = bytes(record)
    self._writer.write(record)

  def close(self) -> None:
    self._writer.close()


class ShardWriter:
  """Writes the records of one split to shards named by ``template``.

    Args:
      template: names the final shard files (its ``data_dir`` is where they go).
      file_format: ``'tfrecord'`` or ``'array_record'``.
      max_examples_per_shard, max_bytes_per_shard: when to start a new shard.
      first_shard: the index of the first shard (to append after existing ones).

    Example:
      >>> import os, tempfile
      >>> import tensorflow_datasets as tfds
      >>> directory = tempfile.mkdtemp()
      >>> template = tfds.core.ShardedFileTemplate(
      ...     data_dir=directory, template=SHARD_TEMPLATE, dataset_name='toy',
      ...     split='train', filetype_suffix='tfrecord')
      >>> writer = ShardWriter(template, 'tfrecord', max_examples_per_shard=2)
      >>> for record in [b'a', b'bb', b'ccc']:
      ...   writer.write(record)
      >>> writer.finalize()
      ([2, 1], 6)
      >>> sorted(os.listdir(directory))
      ['toy-train.tfrecord-00000', 'toy-train.tfrecord-00001']
  """

  def __init__(self,
               template: tfds.core.ShardedFileTemplate,
               file_format: Union[str, tfds.core.FileFormat],
               *,
               max_examples_per_shard: int = 1000,
               max_bytes_per_shard: int = 256 << 20,
               first_shard: int = 0):
    if max_examples_per_shard < 1 or max_bytes_per_shard < 1:
      raise ValueError('max_examples_per_shard and max_bytes_per_shard must be '
                       'positive.')
    self._template = template
    self._format = file_format_of(file_format)
    self._max_examples = max_examples_per_shard
    self._max_bytes = max_bytes_per_shard
    self._first_shard = first_shard
    self._token = f'{os.getpid()}-{uuid.uuid4().hex}'
    self._temp_paths: List[str] = []
    self._lengths: List[int] = []
    self._shard_bytes = 0
    self._num_bytes = 0
    self._file: Optional[_RecordFile] = None
    self._synced = False
    self._closed = False

  @property
  def num_examples(self) -> int:
    return sum(self._lengths)

  def _open_next_shard(self) -> None:
    if self._file is not None:
      self._file.close()
    directory = os.fspath(self._template.data_dir)
    path = os.path.join(
        directory, f'{TEMP_PREFIX}{self._token}-{len(self._temp_paths):05d}')
    tf.io.gfile.makedirs(directory)
    self._file = _RecordFile(path, self._format)
    self._temp_paths.append(path)
    self._lengths.append(0)
    self._shard_bytes = 0

  def write(self, record: bytes) -> None:
    """Appends one serialized example.

    Raises:
      encoding.RecordTooLargeError: (a ValueError) for a record larger than
        `encoding.MAX_RECORD_BYTES` (readers could not parse it); nothing
        is written then.
    """
    if self._closed or self._synced:
      raise ValueError('ShardWriter: write() after sync()/finalize()/abort().')
    if len(record) > encoding.MAX_RECORD_BYTES:
      encoding.check_record_size(len(record))
    if (self._file is None or self._lengths[-1] >= self._max_examples or
        self._shard_bytes >= self._max_bytes):
      self._open_next_shard()
    self._file.write(record)
    self._lengths[-1] += 1
    self._shard_bytes += len(record)
    self._num_bytes += len(record)

  def final_paths(self) -> List[str]:
    """The final paths of the shards written so far."""
    total = self._first_shard + len(self._temp_paths)
    return [
        os.fspath(self._template.sharded_filepath(
            shard_index=self._first_shard + i, num_shards=total))
        for i in range(len(self._temp_paths))
    ]

  def temp_paths(self) -> List[str]:
    """The temporary paths of the shards written so far."""
    return list(self._temp_paths)

  def sync(self) -> Tuple[List[int], int]:
    """Closes the last shard and flushes every shard to disk (``fsync``).

    Returns:
      ``(shard_lengths, num_bytes)`` of the shards written.
    """
    if self._closed:
      raise ValueError('ShardWriter: sync() after finalize()/abort().')
    if self._file is not None:
      self._file.close()
      self._file = None
    if not self._synced:
      for path in self._temp_paths:
        publish.fsync_file(path)
      self._synced = True
    return list(self._lengths), self._num_bytes

  def finalize(self) -> Tuple[List[int], int]:
    """`sync`, then gives the shards their final names (the directory synced).

    Final names of an earlier, unpublished attempt are replaced.

    Returns:
      ``(shard_lengths, num_bytes)`` of the shards written.
    """
    result = self.sync()
    for temp, final in zip(self._temp_paths, self.final_paths()):
      publish.rename(temp, final)
    if self._temp_paths:
      publish.fsync_dir(os.fspath(self._template.data_dir))
    self._closed = True
    return result

  def abort(self) -> None:
    """Closes and deletes the shards not yet finalized."""
    if self._file is not None:
      self._file.close()
      self._file = None
    if not self._closed:
      for path in self._temp_paths:
        if tf.io.gfile.exists(path):
          tf.io.gfile.remove(path)
    self._closed = True
