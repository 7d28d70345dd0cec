"""The publish protocol of rlds_lite's TFDS writers: `PUBLISH_STEPS`, durable renames.

The steps and what a crash at each leaves: ``docs/guarantees.md``, "Atomic
publish" and "Durability".
"""

import os
import signal
import uuid
from typing import List, Sequence, Union

import tensorflow as tf
import tensorflow_datasets as tfds
from google.protobuf import json_format
from tensorflow_datasets.core.proto import dataset_info_pb2

__all__ = ['FAULT_KILL_ENV', 'PUBLISH_STEPS', 'embed_features', 'fsync_dir',
           'fsync_file', 'fsync_tree', 'missing_dirs', 'read_builder',
           'rename', 'replace', 'staging_dir', 'step', 'write_temp']

PathLike = Union[str, os.PathLike]

PUBLISH_STEPS = ('locked', 'shards_synced', 'shards_named', 'info_written',
                 'published', 'synced', 'features_json', 'cleaned')
"""The steps of publishing, in order (see the module docstring)."""

FAULT_KILL_ENV = 'RLDS_LITE_FAULT_KILL_AT'
"""Test hook: a writer SIGKILLs itself at the step this variable names."""

STAGING_MARK = '.incomplete-'
"""A new dataset is staged in ``.<version>.incomplete-<pid>-<token>``."""

TEMP_MARK = '.tmp-'
"""A metadata file is written as ``.<name>.tmp-<pid>-<token>`` first."""


def step(name: str, steps: Sequence[str] = PUBLISH_STEPS) -> None:
  """Marks a publish step; SIGKILLs the process if `FAULT_KILL_ENV` names it.

  ``steps`` are the protocol's step names (`rlds_lite.atomic_output` has
  its own).

  Example:
    >>> step('published')  # Nothing happens unless the variable is set.
  """
  if name not in steps:
    raise ValueError(f'unknown publish step {name!r}; one of {tuple(steps)}.')
  if os.environ.get(FAULT_KILL_ENV) == name:
    os.kill(os.getpid(), signal.SIGKILL)


def _local(path: PathLike) -> bool:
  return '://' not in os.fspath(path)


def fsync_file(path: PathLike) -> None:
  """Flushes a closed file's data to disk (local paths; others: no-op).

  Example:
    >>> import tempfile
    >>> fsync_file(tempfile.mkstemp()[1])
  """
  if not _local(path):
    return
  fd = os.open(os.fspath(path), os.O_RDONLY | os.O_CLOEXEC)
  try:
    os.fsync(fd)
  finally:
    os.close(fd)


def fsync_dir(path: PathLike) -> None:
  """Flushes a directory's entries (names created, renamed or removed).

  Example:
    >>> import tempfile
    >>> fsync_dir(tempfile.mkdtemp())
  """
  if not _local(path):
    return
  fd = os.open(os.fspath(path), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
  try:
    os.fsync(fd)
  finally:
    os.close(fd)


def rename(source: PathLike, target: PathLike) -> None:
  """Atomically renames ``source`` to ``target``, replacing a file there.

  A directory may replace an empty directory (POSIX ``rename``).

  Example:
    >>> import os, tempfile
    >>> root = tempfile.mkdtemp()
    >>> staging, final = os.path.join(root, '.staging'), os.path.join(root, 'final')
    >>> os.makedirs(os.path.join(staging, 'shards')); os.mkdir(final)
    >>> rename(staging, final)  # Replaces the empty directory.
    >>> os.listdir(root), os.listdir(final)
    (['final'], ['shards'])
  """
  source, target = os.fspath(source), os.fspath(target)
  if _local(source):
    os.replace(source, target)
  else:
    tf.io.gfile.rename(source, target, overwrite=True)


def write_temp(path: PathLike, data: bytes) -> str:
  """Writes ``data`` to a flushed temporary file beside ``path``; its path.

  The temporary file is hidden: ``.<name>.tmp-<pid>-<token>``.

  Example:
    >>> import os, tempfile
    >>> temp = write_temp(os.path.join(tempfile.mkdtemp(), 'info.json'), b'{}')
    >>> os.path.basename(temp)  # doctest: +ELLIPSIS
    '.info.json.tmp-...-...'
    >>> open(temp, 'rb').read()
    b'{}'
  """
  path = os.fspath(path)
  temp = os.path.join(os.path.dirname(path),
                      f'.{os.path.basename(path)}{TEMP_MARK}{os.getpid()}-'
                      f'{uuid.uuid4().hex}')
  if _local(temp):
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                 0o644)
    try:
      view = memoryview(data)
      while view:
        view = view[os.write(fd, view):]
      os.fsync(fd)
    finally:
      os.close(fd)
  else:
    with tf.io.gfile.GFile(temp, 'wb') as f:
      f.write(data)
  return temp


def replace(temp: PathLike, path: PathLike) -> None:
  """Renames a `write_temp` file over ``path`` and flushes the directory.

  Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), 'info.json')
    >>> with open(path, 'w') as f:
    ...   _ = f.write('old')
    >>> replace(write_temp(path, b'new'), path)
    >>> open(path).read(), os.listdir(os.path.dirname(path))
    ('new', ['info.json'])
  """
  rename(temp, path)
  fsync_dir(os.path.dirname(os.fspath(path)))


def staging_dir(dataset_dir: PathLike) -> str:
  """A new hidden staging directory name beside ``dataset_dir``.

  Example:
    >>> staging_dir('/data/toy/1.0.0')  # doctest: +ELLIPSIS
    '/data/toy/.1.0.0.incomplete-...-...'
  """
  dataset_dir = os.path.normpath(os.fspath(dataset_dir))
  return os.path.join(
      os.path.dirname(dataset_dir),
      f'.{os.path.basename(dataset_dir)}{STAGING_MARK}{os.getpid()}-'
      f'{uuid.uuid4().hex}')


def _info_bytes(dataset_dir: str) -> bytes:
  try:
    with tf.io.gfile.GFile(os.path.join(dataset_dir, 'dataset_info.json'),
                           'rb') as f:
      return f.read()
  except tf.errors.NotFoundError:
    return b''


def read_builder(dataset_dir: PathLike,
                 attempts: int = 10) -> tfds.core.DatasetBuilder:
  """``tfds.builder_from_directory`` of one published version (rebuilt if it changed meanwhile).

    Example:
      >>> import rlds_lite
      >>> path = rlds_lite.synthetic.dataset(2)
      >>> read_builder(path).info.splits['train'].num_examples
      2
  """
  dataset_dir = os.fspath(dataset_dir)
  for _ in range(attempts - 1):
    before = _info_bytes(dataset_dir)
    builder = tfds.builder_from_directory(dataset_dir)
    if _info_bytes(dataset_dir) == before:
      return builder
  return tfds.builder_from_directory(dataset_dir)


def missing_dirs(path: PathLike) -> List[str]:
  """``path`` and its ancestors that do not exist yet (deepest first).

  After creating them, `fsync_dir` of each one's parent makes them durable.

  Example:
    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> [p[len(root):] for p in missing_dirs(root + '/a/b')]
    ['/a/b', '/a']
  """
  path = os.fspath(path)
  missing = []
  while path and not tf.io.gfile.exists(path):
    missing.append(path)
    parent = os.path.dirname(path)
    if parent == path:
      break
    path = parent
  return missing


def fsync_tree(directory: PathLike) -> None:
  """Flushes every file and directory below ``directory``, then itself.

  Example (remote file systems, ``gs://...``, are left to their client):
    >>> import os, tempfile
    >>> root = tempfile.mkdtemp()
    >>> os.makedirs(os.path.join(root, 'a', 'b'))
    >>> open(os.path.join(root, 'a', 'b', 'shard'), 'wb').close()
    >>> fsync_tree(root), fsync_tree('gs://bucket/toy/1.0.0')
    (None, None)
  """
  directory = os.fspath(directory)
  if not _local(directory):
    return
  for root, dirs, files in os.walk(directory, topdown=False):
    for name in files:
      fsync_file(os.path.join(root, name))
    for name in dirs:
      fsync_dir(os.path.join(root, name))
  fsync_dir(directory)


def embed_features(dataset_dir: PathLike) -> bool:
  """Puts the features into ``dataset_info.json`` if it lacks them (atomically); whether it did.

    Example:
      >>> import json, os, rlds_lite
      >>> path = rlds_lite.synthetic.dataset(2, seed=0)
      >>> info_file = os.path.join(path, 'dataset_info.json')
      >>> info = json.load(open(info_file))
      >>> del info['features']
      >>> json.dump(info, open(info_file, 'w'))
      >>> embed_features(path), embed_features(path)
      (True, False)
  """
  dataset_dir = os.fspath(dataset_dir)
  path = os.path.join(dataset_dir, 'dataset_info.json')
  with tf.io.gfile.GFile(path, 'r') as f:
    proto = json_format.Parse(f.read(), dataset_info_pb2.DatasetInfo(),
                              ignore_unknown_fields=True)
  if proto.HasField('features'):
    return False
  features = tfds.features.FeatureConnector.from_config(dataset_dir)
  proto.features.CopyFrom(features.to_proto())
  data = json_format.MessageToJson(proto, sort_keys=True).encode()
  replace(write_temp(path, data), path)
  return True
