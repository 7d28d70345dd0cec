"""Cache statistics next to the dataset they describe.

A result is ``<dataset_dir>/rlds_lite_stats/<key>.json``, ``key`` hashing the
dataset's files, the split, the options of the pass and the transform's key
(published whole, one writer at a time; the key and the read-only fallback:
docs/stats.md).

Example:
  >>> import tempfile
  >>> d = tempfile.mkdtemp()
  >>> key = cache_key(d, {'split': 'train'})
  >>> len(key), read(d, key) is None
  (16, True)
"""

import hashlib
import inspect
import json
import os
from typing import Any, Callable, Dict, List, Optional

import tensorflow as tf

from rlds_lite import atomic_output
from rlds_lite.stats import types
from rlds_lite.tfds import leftovers

CACHE_SUBDIR = 'rlds_lite_stats'
"""The cache folder inside a dataset directory."""


def fallback_dir() -> str:
  """Where caches go when the dataset directory is read-only."""
  return os.environ.get('RLDS_LITE_CACHE_DIR') or os.path.join(
      os.path.expanduser('~'), '.cache', 'rlds_lite', 'stats')


def _stat_entry(dataset_dir: str, name: str) -> Optional[List[Any]]:
  """``[name, size, mtime_ns]`` of a file, or None if it is gone."""
  try:
    stat = tf.io.gfile.stat(os.path.join(dataset_dir, name))
  except tf.errors.NotFoundError:
    return None
  return [name, int(stat.length), int(stat.mtime_nsec)]


def _dataset_file_names(dataset_dir: str) -> List[str]:
  """The files that make the published dataset: its metadata and shards.

  Only what ``dataset_info.json`` references counts: a writer's hidden
  temporary files, a replaced shard generation kept for readers in flight
  (`rlds_lite.tfds.publish`) and caches do not. A directory whose
  ``dataset_info.json`` cannot be read falls back to its visible files.
  """
  try:
    proto = leftovers.read_info_proto(dataset_dir)
  except (ValueError, tf.errors.OpError):
    proto = None
  if proto is not None:
    return sorted({leftovers.INFO_FILE, leftovers.FEATURES_FILE} |
                  leftovers.referenced_files(dataset_dir, proto))
  return sorted(
      name.rstrip('/') for name in tf.io.gfile.listdir(dataset_dir)
      if not name.startswith('.') and name.rstrip('/') != CACHE_SUBDIR and
      not tf.io.gfile.isdir(os.path.join(dataset_dir, name.rstrip('/'))))


def _files(dataset_dir: str) -> List[List[Any]]:
  """Name, size and mtime (ns) of each file of the published dataset.

  Rewriting or appending changes the key (a new ``dataset_info.json``, new
  shards); files that a concurrent writer renames meanwhile are skipped.
  """
  entries = (_stat_entry(dataset_dir, name)
             for name in _dataset_file_names(dataset_dir))
  return [entry for entry in entries if entry is not None]


def transform_key(transform: Optional[Callable[..., Any]]) -> Optional[str]:
  """A key of a transform from its qualified name and source; None if unknown.

  Example:
    >>> transform_key(None)
    'none'
    >>> transform_key(transform_key) == transform_key(transform_key)
    True
  """
  if transform is None:
    return 'none'
  try:
    source = inspect.getsource(transform)
  except (OSError, TypeError):
    return None
  name = getattr(transform, '__qualname__', type(transform).__qualname__)
  return hashlib.sha256(f'{name}\n{source}'.encode()).hexdigest()[:16]


def cache_key(dataset_dir: str, options: Dict[str, Any]) -> str:
  """The hash of the dataset's identity and the pass's ``options``."""
  identity = {'dir': os.path.realpath(dataset_dir), 'files': _files(dataset_dir),
              'options': options, 'format_version': types.FORMAT_VERSION}
  text = json.dumps(identity, sort_keys=True, default=str)
  return hashlib.sha256(text.encode()).hexdigest()[:16]


def _candidates(dataset_dir: str, key: str) -> List[str]:
  digest = hashlib.sha256(os.path.realpath(dataset_dir).encode()).hexdigest()
  return [os.path.join(dataset_dir, CACHE_SUBDIR, f'{key}.json'),
          os.path.join(fallback_dir(), f'{digest[:16]}-{key}.json')]


def read(dataset_dir: str, key: str) -> Optional[types.DatasetStats]:
  """The cached statistics, or None (missing or unreadable cache)."""
  for path in _candidates(dataset_dir, key):
    if os.path.exists(path):
      try:
        with open(path) as f:
          return types.DatasetStats.from_json(f.read())
      except (OSError, ValueError, KeyError):
        continue
  return None


def _write_atomically(path: str, text: str) -> None:
  """Publishes ``text`` at ``path`` with `rlds_lite.atomic_output`."""
  with atomic_output.AtomicOutput(path, replace=True) as output:
    with open(output.path, 'x') as f:
      f.write(text)
    output.publish()


def write(dataset_dir: str, key: str, stats: types.DatasetStats) -> str:
  """Writes the cache (dataset dir first, else the fallback); its path.

  Example:
    >>> import tempfile
    >>> from rlds_lite.stats.types import DatasetStats, FieldStats
    >>> s = DatasetStats(0, 0, 0, 0, FieldStats.empty('length'), None, {})
    >>> d = tempfile.mkdtemp()
    >>> write(d, 'k', s).endswith('rlds_lite_stats/k.json'), read(d, 'k') == s
    (True, True)
  """
  text = stats.to_json()
  errors = []
  for path in _candidates(dataset_dir, key):
    try:
      _write_atomically(path, text)
      return path
    except OSError as e:
      errors.append(f'{path}: {e}')
  raise OSError('stats cache: could not write ' + '; '.join(errors))
