"""Convert an RLDS dataset to the chunk layout, for random access (``rlds-lite chunk PATH``).

Example:
  >>> from rlds_lite import synthetic
  >>> source = synthetic.dataset(num_episodes=3, seed=0)
  >>> chunks = convert(source, chunk_steps=16, progress=False)
  >>> chunks.endswith('toy_chunks/1.0.0')
  True
  >>> builder = tfds.builder_from_directory(chunks)
  >>> builder.info.splits['train'].num_examples   # 5, 46, 46 steps
  7
"""

import hashlib
import io
import json
import os
from typing import (Any, Dict, Iterator, NamedTuple, Optional, Sequence,
                    Tuple, Union)

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import source as source_lib
from rlds_lite import atomic_output
from rlds_lite import dataset_files
from rlds_lite import diagnosis
from rlds_lite import decoding
from rlds_lite import nesting
from rlds_lite import overwriting
from rlds_lite import progress as progress_lib
from rlds_lite import rlds_types
from rlds_lite.catalog import records as records_lib
from rlds_lite.random_access import layout as layout_lib
from rlds_lite.tfds import features as features_lib
from rlds_lite.tfds import shards

__all__ = ['convert', 'default_output', 'episodes_file', 'auto_chunk_steps',
           'DEFAULT_CHUNK_STEPS', 'CHUNK_BYTES']

PathLike = Union[str, os.PathLike]
DEFAULT_CHUNK_STEPS = 16
"""The most steps per chunk record by default (vectors): a window of up to 17
steps reads at most 2 records."""
CHUNK_BYTES = 64 << 10
"""Default record size: ``chunk_steps`` is cut so a record holds about this."""
_METADATA_FILE = 'metadata.json'  # TFDS's file of `DatasetInfo.metadata`.


def default_output(source: str) -> str:
  """``<data_dir>/<name>_chunks/<version>`` beside ``<data_dir>/<name>/<version>``.

  Example:
    >>> default_output('/data/robot/1.0.0')
    '/data/robot_chunks/1.0.0'
  """
  source = os.path.normpath(source)
  version = os.path.basename(source)
  name_dir = os.path.dirname(source)
  return os.path.join(os.path.dirname(name_dir),
                      os.path.basename(name_dir) + '_chunks', version)


def is_chunk_dataset(dataset_dir: str) -> bool:
  """Whether ``dataset_dir`` holds a chunk dataset (its metadata says so).

  Example:
    >>> from rlds_lite import synthetic
    >>> source = synthetic.dataset(3, 4, 6, seed=0)
    >>> is_chunk_dataset(source), is_chunk_dataset(convert(source, progress=False))
    (False, True)
  """
  path = os.path.join(dataset_dir, _METADATA_FILE)
  try:
    with tf.io.gfile.GFile(path) as f:
      return layout_lib.LAYOUT_NAME in nesting.load(f)
  except (tf.errors.OpError, OSError, ValueError, TypeError):
    return False


def episodes_file(dataset_dir: str, split: str) -> str:
  """The per-split episode table of a chunk dataset.

  Example:
    >>> episodes_file('/data/robot_chunks/1.0.0', 'train')
    '/data/robot_chunks/1.0.0/episodes-train.npz'
  """
  return os.path.join(dataset_dir, f'episodes-{split}.npz')


def table_digest(table: Dict[str, np.ndarray]) -> str:
  """The SHA-256 (32 hex digits) of an episode table's lengths, ends and ids.

  Example:
    >>> table_digest({'length': np.int64([3, 5]), 'terminated': [True, False]})
    '1c2c443bad55dea0d57be6f08e24b49e'
  """
  digest = hashlib.sha256()
  for key, dtype in (('length', '<i8'), ('terminated', bool),
                     ('episode_id', '<i8')):
    if key in table:
      values = np.ascontiguousarray(np.asarray(table[key]).astype(dtype))
      digest.update(f'{key}:{len(values)}:'.encode() + values.tobytes())
  return digest.hexdigest()[:32]


def _leaf_values(steps: Dict[str, Any], path: str) -> Any:
  for part in path.split('/'):
    steps = steps[part]
  return steps


def _decoder(step_feature: Any, layout: layout_lib.ChunkLayout):
  """Skip-decoded dense steps -> flat ``{path: [T, ...]}``, images encoded."""
  features = {leaf.path: _leaf_values(step_feature, leaf.path)
              for leaf in layout.leaves}

  def decode(episode: Dict[str, Any]) -> Dict[str, Any]:
    steps = episode[rlds_types.STEPS]
    flat = {}
    for leaf in layout.leaves:
      value = _leaf_values(steps, leaf.path)
      if leaf.kind == 'fixed':
        want = tf.as_dtype(leaf.dtype)
        if value.dtype != want or value.shape[1:] != leaf.shape[1:]:
          value = decoding.decode_batch_example(features[leaf.path], value)
      flat[leaf.path] = value
    out = {'steps': flat}
    if 'episode_id' in episode and not isinstance(episode['episode_id'], dict):
      out['episode_id'] = episode['episode_id']
    return out

  return decode


def _episodes(builder: tfds.core.DatasetBuilder, split: str,
              layout: layout_lib.ChunkLayout) -> Iterator[Dict[str, Any]]:
  features = builder.info.features
  step_feature = features[rlds_types.STEPS].feature
  decode = _decoder(step_feature, layout)

  @tf.autograph.experimental.do_not_convert
  def parse(record: tf.Tensor) -> Dict[str, Any]:
    episode = features.deserialize_example(
        record, decoders={rlds_types.STEPS: tfds.decode.SkipDecoding()})
    return decode(episode)

  # The split's records in split order (tfrecord or array_record shards,
  # from dataset_info.json), as the episode catalog reads them.
  records = records_lib.read_records(records_lib.split_files(builder, split))
  episodes = records.map(parse, num_parallel_calls=tf.data.AUTOTUNE,
                         deterministic=True).prefetch(4)
  return episodes.as_numpy_iterator()


def auto_chunk_steps(layout: layout_lib.ChunkLayout) -> int:
  """Steps per record for about `CHUNK_BYTES` a record (1 to 16), estimated from the features.

  Example:
    >>> import tensorflow_datasets as tfds
    >>> steps = tfds.features.FeaturesDict({'image': tfds.features.Image(
    ...     shape=(256, 256, 3), encoding_format='jpeg')})
    >>> auto_chunk_steps(layout_lib.ChunkLayout.from_step_features(steps, 1))
    2
  """
  step_bytes = 0
  for leaf in layout.leaves:
    per_step = int(np.prod(leaf.shape[1:], dtype=np.int64))
    if leaf.kind == 'fixed':
      step_bytes += per_step * np.dtype(leaf.dtype).itemsize
    elif leaf.kind == 'image':
      step_bytes += per_step // (8 if leaf.encoding == 'jpeg' else 2)
    else:
      step_bytes += 32
  return int(min(DEFAULT_CHUNK_STEPS, max(1, CHUNK_BYTES // max(step_bytes,
                                                                  1))))


def _chunks(steps: Dict[str, np.ndarray], length: int, chunk_steps: int
            ) -> Iterator[Tuple[int, int, Dict[str, np.ndarray]]]:
  """``(offset, num_steps, values)`` of an episode's chunks, edge-padded."""
  for offset in range(0, length, chunk_steps):
    num = min(chunk_steps, length - offset)
    rows = np.minimum(np.arange(offset, offset + chunk_steps), length - 1)
    yield offset, num, {path: value[rows] for path, value in steps.items()}


def _terminated(steps: Dict[str, np.ndarray], length: int) -> bool:
  flags = steps.get(rlds_types.IS_TERMINAL)
  return bool(length and flags is not None and flags[length - 1])


def _digest_steps(digest: Any, layout: layout_lib.ChunkLayout,
                  steps: Dict[str, Any]) -> None:
  """Adds an episode's step values to the split's ``digest`` (whatever ``chunk_steps``)."""
  for leaf in layout.leaves:
    values = steps[leaf.path]
    digest.update(f'{leaf.path}:{len(values)}'.encode())
    if leaf.kind == 'fixed':
      digest.update(np.ascontiguousarray(
          np.asarray(values).astype(leaf.dtype, copy=False)).tobytes())
    else:
      for value in values:
        value = bytes(value)
        digest.update(len(value).to_bytes(8, 'little') + value)


def _fingerprint(layout: layout_lib.ChunkLayout,
                 tables: Dict[str, Dict[str, np.ndarray]]) -> str:
  digest = hashlib.sha256(json.dumps(layout.to_json(), sort_keys=True).encode())
  for split in sorted(tables):
    digest.update(split.encode())
    digest.update(np.ascontiguousarray(tables[split]['length']).tobytes())
  return digest.hexdigest()[:16]


def convert(source: PathLike,
            out: Optional[PathLike] = None,
            *,
            splits: Optional[Sequence[str]] = None,
            chunk_steps: Optional[int] = None,
            data_dir: Optional[PathLike] = None,
            overwrite: bool = False,
            max_bytes_per_file: int = 256 << 20,
            progress: Optional[bool] = None) -> str:
  """Writes the chunk dataset of an RLDS dataset, atomically; returns its directory.

  Args:
    source: an RLDS TFDS dataset directory or name (tfrecord or array_record shards).
    out: the chunk dataset's directory (default `default_output`).
    splits: the splits to convert (default: all).
    chunk_steps: steps per record (``C``): larger reads more bytes per sample, smaller more
      records. None: `auto_chunk_steps`.
    overwrite: replace an existing dataset at ``out`` once the new one is complete.
    max_bytes_per_file: start a new shard file after this many bytes.
    progress: the progress bar (None: on a terminal only).

  Example:
    >>> from rlds_lite import synthetic
    >>> from rlds_lite import random_access as ra
    >>> path = synthetic.dataset(3, 4, 6, seed=0)
    >>> chunks = ra.convert(path, progress=False)
    >>> chunks.endswith('toy_chunks/1.0.0')
    True
  """
  if chunk_steps is not None and (
      isinstance(chunk_steps, bool) or not isinstance(chunk_steps, int) or
      chunk_steps < 1):
    raise ValueError(f'convert: chunk_steps must be a positive int, got '
                     f'{chunk_steps!r}.')
  opened = source_lib.as_source(source, None, data_dir=data_dir)
  builder, label = opened.builder, opened.label
  problem = features_lib.slash_key_problem(builder.info.features)
  if problem:  # Chunks are stored and read back by path.
    raise ValueError(f'convert: dataset {label!r}: {problem}.')
  source_dir = os.fspath(builder.data_dir)
  out = os.path.abspath(os.path.expanduser(os.fspath(out))) if out else (
      default_output(source_dir))

  def check(target: str) -> None:
    overwriting.check_replaceable(target, kind='chunk dataset',
                                  marker=_METADATA_FILE, writer='convert',
                                  sources=[source_dir],
                                  is_kind=is_chunk_dataset)
    if tf.io.gfile.exists(target) and not overwrite:
      raise FileExistsError(f'convert: {target!r} already exists; pass '
                            'overwrite=True to replace it.')

  check(out)  # Before reading; again under the lock.
  splits = _checked_splits(builder, label, splits)
  layout = _layout(builder, label, chunk_steps)
  output = atomic_output.AtomicOutput(out, directory=True, check=check,
                                      replace=overwrite,
                                      label=f'convert: {out!r}')
  with output:
    written = {split: _write_split(builder, split, layout, output.path, out,
                                   max_bytes_per_file, progress)
               for split in splits}
    _write_info(builder, layout, written, output.path)
    output.publish()
  return out


class _Written(NamedTuple):
  """What `_write_split` wrote of a split: its table, digest and shards."""
  table: Dict[str, np.ndarray]
  sha256: str
  info: Optional[tfds.core.SplitInfo]


def _checked_splits(builder: tfds.core.DatasetBuilder, label: str,
                    splits: Optional[Sequence[str]]) -> list:
  all_splits = list(builder.info.splits.keys())
  splits = list(splits) if splits else all_splits
  for split in splits:
    if split not in all_splits:
      raise ValueError(f'convert: dataset {label!r} has no split {split!r} '
                       f'(its splits: {sorted(all_splits)}).')
  return splits


def _layout(builder: tfds.core.DatasetBuilder, label: str,
            chunk_steps: Optional[int]) -> layout_lib.ChunkLayout:
  step_feature = builder.info.features[rlds_types.STEPS].feature
  try:
    if chunk_steps is None:
      chunk_steps = auto_chunk_steps(
          layout_lib.ChunkLayout.from_step_features(step_feature, 1))
    return layout_lib.ChunkLayout.from_step_features(step_feature,
                                                     chunk_steps)
  except ValueError as e:
    raise ValueError(f'convert: dataset {label}: {e}') from None


def _chunks_name(builder: tfds.core.DatasetBuilder) -> str:
  return builder.info.name + '_chunks'


def _template(data_dir: str, name: str,
              split: str) -> tfds.core.ShardedFileTemplate:
  return tfds.core.ShardedFileTemplate(
      data_dir=data_dir, template=shards.SHARD_TEMPLATE, dataset_name=name,
      split=split, filetype_suffix='tfrecord')


def _write_split(builder: tfds.core.DatasetBuilder, split: str,
                 layout: layout_lib.ChunkLayout, work: str, out: str,
                 max_bytes_per_file: int, progress: Optional[bool]
                 ) -> _Written:
  """Writes the chunk shards and the episode table of ``split`` into ``work``."""
  name = _chunks_name(builder)
  writer = shards.ShardWriter(_template(work, name, split), 'tfrecord',
                              max_examples_per_shard=1 << 40,
                              max_bytes_per_shard=max_bytes_per_file)
  lengths, terminated, ids = [], [], []
  data = hashlib.sha256()
  try:
    dataset_files.check_open(builder, split)
    with progress_lib.bar(progress,
                          total=builder.info.splits[split].num_examples,
                          unit=' episodes', desc=f'chunk {split}') as bar, \
        diagnosis.named_read_errors(builder, split):
      for index, episode in enumerate(_episodes(builder, split, layout)):
        steps = episode['steps']
        length = len(steps[layout.leaves[0].path])
        for offset, num, values in _chunks(steps, length, layout.chunk_steps):
          writer.write(layout.encode(index, offset, num, values))
        _digest_steps(data, layout, steps)
        lengths.append(length)
        terminated.append(_terminated(steps, length))
        if 'episode_id' in episode:
          ids.append(int(episode['episode_id']))
        bar.update(1)
    dataset_files.check_all_read(builder, split, len(lengths),
                                 'nothing was converted.')
    shard_lengths, num_bytes = writer.finalize()
  except BaseException:
    writer.abort()
    raise
  table = {'length': np.asarray(lengths, np.int64),
           'terminated': np.asarray(terminated, bool)}
  if ids and len(ids) == len(lengths):
    table['episode_id'] = np.asarray(ids, np.int64)
  buffer = io.BytesIO()
  np.savez(buffer, **table)
  with tf.io.gfile.GFile(episodes_file(work, split), 'wb') as f:
    f.write(buffer.getvalue())
  info = tfds.core.SplitInfo(
      name=split, shard_lengths=shard_lengths, num_bytes=num_bytes,
      filename_template=_template(out, name, split)) if shard_lengths else None
  return _Written(table, data.hexdigest()[:32], info)


def _write_info(builder: tfds.core.DatasetBuilder,
                layout: layout_lib.ChunkLayout, written: Dict[str, _Written],
                work: str) -> None:
  """Writes the chunk dataset's `dataset_info.json` (its metadata inside)."""
  tables = {split: w.table for split, w in written.items()}
  metadata = {
      layout_lib.LAYOUT_NAME: layout_lib.LAYOUT_VERSION,
      'layout': layout.to_json(),
      'fingerprint': _fingerprint(layout, tables),
      'source': {'path': os.fspath(builder.data_dir),
                 'name': builder.info.name,
                 'version': str(builder.info.version),
                 'file_format': getattr(builder.info.file_format, 'value',
                                        'tfrecord')},
      'splits': {split: {'episodes': len(w.table['length']),
                         'steps': int(w.table['length'].sum()),
                         'sha256': w.sha256,
                         'table_sha256': table_digest(w.table)}
                 for split, w in written.items()},
  }
  info = tfds.core.DatasetInfo(
      builder=tfds.core.DatasetIdentity(
          name=_chunks_name(builder),
          version=tfds.core.Version(str(builder.info.version)),
          data_dir=work, module_name=''),
      description=(f'{builder.info.name} in chunks of {layout.chunk_steps} '
                   'steps for random access (rlds_lite.random_access).'),
      features=layout.features, disable_shuffling=True,
      metadata=tfds.core.MetadataDict(metadata))
  info.set_file_format(tfds.core.FileFormat.TFRECORD)
  info.set_splits(tfds.core.SplitDict(
      [w.info for w in written.values() if w.info is not None]))
  info.write_to_directory(work)
