"""What a killed writer leaves behind, and how the next writer removes it.

What is left and what is removed: ``docs/guarantees.md``, "Leftovers of dead writers".
"""

import json
import os
import re
from typing import Dict, List, Optional, Set

import tensorflow as tf
import tensorflow_datasets as tfds
from google.protobuf import json_format
from tensorflow_datasets.core.proto import dataset_info_pb2

from rlds_lite import nesting
from rlds_lite.tfds import publish
from rlds_lite.tfds import shards

__all__ = ['current_generation', 'next_generation', 'read_info_proto',
           'referenced_files', 'remove_leftovers', 'remove_staging']

INFO_FILE = 'dataset_info.json'
FEATURES_FILE = 'features.json'
_DEFAULT_TEMPLATE = '{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_INDEX}-of-{NUM_SHARDS}'
# Hidden files of writers inside a dataset directory: temporary shards (and
# those of rlds_lite before the lock), temporary metadata files.
_TEMP_FILE_RE = re.compile(
    r'^(\.shard-\d+-[0-9a-f]+-\d+|\.incomplete-[0-9a-f]{32}-\d{5}|'
    r'\.(dataset_info|features)\.json\.tmp-\d+-[0-9a-f]+)$')
_OLD_INFO_STAGING_RE = re.compile(r'^\.info-[0-9a-f]{32}$')


def read_info_proto(dataset_dir: str) -> Optional[dataset_info_pb2.DatasetInfo]:
  """The ``dataset_info.json`` of a directory as a proto, or None if absent.

  Example:
    >>> import tempfile
    >>> read_info_proto(tempfile.mkdtemp()) is None
    True
  """
  path = os.path.join(dataset_dir, INFO_FILE)
  if not tf.io.gfile.exists(path):
    return None
  with tf.io.gfile.GFile(path, 'r') as f:
    return json_format.Parse(f.read(), dataset_info_pb2.DatasetInfo(),
                             ignore_unknown_fields=True)


def referenced_files(dataset_dir: str,
                     proto: dataset_info_pb2.DatasetInfo) -> Set[str]:
  """The shard file names (not paths) a ``dataset_info.json`` references.

  Example:
    >>> from rlds_lite import synthetic
    >>> path = synthetic.dataset(3, seed=0)
    >>> referenced_files(path, read_info_proto(path))
    {'toy-train.tfrecord-00000'}
  """
  names = set()
  for split in proto.splits:
    template = tfds.core.ShardedFileTemplate(
        data_dir=dataset_dir,
        template=split.filepath_template or _DEFAULT_TEMPLATE,
        dataset_name=proto.name, split=split.name,
        filetype_suffix=proto.file_format or 'tfrecord')
    for path in template.sharded_filepaths(len(split.shard_lengths)):
      names.add(os.path.basename(os.fspath(path)))
  return names


def current_generation(proto: Optional[dataset_info_pb2.DatasetInfo]) -> int:
  """The shard generation a ``dataset_info.json`` references (0: none).

  Example (an overwrite publishes the next generation; the replaced one
  stays on disk for the readers still reading it):
    >>> import os, tempfile
    >>> from rlds_lite import synthetic
    >>> from rlds_lite.tfds import write_dataset
    >>> data_dir = tempfile.mkdtemp()
    >>> path = write_dataset(synthetic.episodes(3, seed=0), data_dir, 'toy')
    >>> current_generation(read_info_proto(path)), current_generation(None)
    (1, 0)
    >>> _ = write_dataset(synthetic.episodes(2, seed=1), data_dir, 'toy',
    ...                   if_exists='overwrite')
    >>> current_generation(read_info_proto(path)), sorted(os.listdir(path))
    (2, ['dataset_info.json', 'features.json', 'toy-train-g0002.tfrecord-00000', 'toy-train.tfrecord-00000'])
  """
  if proto is None:
    return 0
  return max((shards.template_generation(split.filepath_template or
                                         _DEFAULT_TEMPLATE)
              for split in proto.splits), default=1)


def _shard_generations(dataset_dir: str, dataset_name: str
                       ) -> Dict[str, int]:
  """``{file name: generation}`` of the dataset's shard files on disk."""
  if not tf.io.gfile.isdir(dataset_dir):
    return {}
  pattern = shards.shard_file_pattern(dataset_name)
  found = {}
  for name in tf.io.gfile.listdir(dataset_dir):
    match = pattern.match(name.rstrip('/'))
    if match:
      found[match.group(0)] = int(match.group('generation') or 1)
  return found


def next_generation(dataset_dir: str, dataset_name: str,
                    proto: Optional[dataset_info_pb2.DatasetInfo]) -> int:
  """A generation above the published one and above any shard file on disk.

  Example:
    >>> import tempfile
    >>> next_generation(tempfile.mkdtemp(), 'toy', None)
    1
  """
  on_disk = _shard_generations(dataset_dir, dataset_name).values()
  return max([current_generation(proto), *on_disk]) + 1


def _remove(path: str, removed: List[str]) -> None:
  if tf.io.gfile.isdir(path):
    tf.io.gfile.rmtree(path)
  elif tf.io.gfile.exists(path):
    tf.io.gfile.remove(path)
  removed.append(path)


def remove_staging(dataset_dir: str) -> List[str]:
  """Removes the staging directories of a dataset's dead writers (hold the lock).

    Example:
      >>> import os, tempfile
      >>> name_dir = tempfile.mkdtemp()
      >>> for name in ('.1.0.0.incomplete-7-abc', '.2.0.0.incomplete-7-abc', 'notes'):
      ...   os.mkdir(os.path.join(name_dir, name))
      >>> [os.path.basename(p) for p in remove_staging(os.path.join(name_dir, '1.0.0'))]
      ['.1.0.0.incomplete-7-abc']
  """
  dataset_dir = os.path.normpath(dataset_dir)
  parent, base = os.path.split(dataset_dir)
  removed: List[str] = []
  if not tf.io.gfile.isdir(parent):
    return removed
  staging = re.compile(rf'^\.{re.escape(base)}'
                       rf'({re.escape(publish.STAGING_MARK)}|\.replaced-)')
  for name in sorted(tf.io.gfile.listdir(parent)):
    name = name.rstrip('/')
    match = staging.match(name)
    if not match:
      continue
    path = os.path.join(parent, name)
    if (match.group(1) == '.replaced-' and
        not tf.io.gfile.exists(os.path.join(dataset_dir, INFO_FILE)) and
        tf.io.gfile.exists(os.path.join(path, INFO_FILE))):
      if tf.io.gfile.exists(dataset_dir):
        tf.io.gfile.rmtree(dataset_dir)  # Not a dataset (no info): staging.
      publish.rename(path, dataset_dir)
      publish.fsync_dir(parent)
      removed.append(path)
      continue
    _remove(path, removed)
  return removed


def _repair_features_json(dataset_dir: str,
                          proto: dataset_info_pb2.DatasetInfo) -> bool:
  """Rewrites ``features.json`` if it differs from the info's features."""
  if not proto.HasField('features'):
    return False
  expected = json_format.MessageToDict(proto.features)
  path = os.path.join(dataset_dir, FEATURES_FILE)
  try:
    with tf.io.gfile.GFile(path, 'r') as f:
      if nesting.loads(f.read()) == expected:
        return False
  except (tf.errors.NotFoundError, ValueError):
    pass
  data = json.dumps(expected, indent=4, sort_keys=True).encode()
  publish.replace(publish.write_temp(path, data), path)
  return True


def remove_leftovers(dataset_dir: str, dataset_name: str,
                     proto: Optional[dataset_info_pb2.DatasetInfo]
                     ) -> List[str]:
  """Removes dead writers' files and unreferenced shards of a dataset (hold the lock).

    Args:
      dataset_dir: the dataset directory.
      dataset_name: the dataset name (shard files are ``<name>-<split>...``).
      proto: its published info (None: nothing published there).

    Example:
      >>> import os
      >>> from rlds_lite import synthetic
      >>> path = synthetic.dataset(3, seed=0)
      >>> for name in ('.shard-123-abc-00000', 'toy-train.tfrecord-00007', 'notes.txt'):
      ...   open(os.path.join(path, name), 'wb').close()
      >>> [os.path.basename(p) for p in remove_leftovers(path, 'toy', read_info_proto(path))]
      ['.shard-123-abc-00000', 'toy-train.tfrecord-00007']
  """
  removed: List[str] = []
  if not tf.io.gfile.isdir(dataset_dir):
    return removed
  for name in tf.io.gfile.listdir(dataset_dir):
    name = name.rstrip('/')
    if _TEMP_FILE_RE.match(name) or _OLD_INFO_STAGING_RE.match(name):
      _remove(os.path.join(dataset_dir, name), removed)
  generations = _shard_generations(dataset_dir, dataset_name)
  keep = referenced_files(dataset_dir, proto) if proto is not None else set()
  current = current_generation(proto)
  older = [g for g in generations.values() if g < current]
  kept_generation = max(older, default=None)
  for name, generation in sorted(generations.items()):
    if name not in keep and generation != kept_generation:
      _remove(os.path.join(dataset_dir, name), removed)
  if proto is not None:
    _repair_features_json(dataset_dir, proto)
  if removed:
    publish.fsync_dir(dataset_dir)
  return removed
