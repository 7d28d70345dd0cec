"""Cache episode catalogs next to the dataset they describe (docs/episodes.md, "Cache")."""

import hashlib
import os
import re
from typing import List, Optional

from absl import logging

from rlds_lite import atomic_output
from rlds_lite.catalog import table
from rlds_lite.stats import cache as stats_cache

__all__ = ['CACHE_SUBDIR', 'FORMAT_VERSION', 'catalog_key', 'read', 'write']

CACHE_SUBDIR = 'rlds_lite_catalog'
"""The catalog folder inside a dataset directory."""

FORMAT_VERSION = 2
"""Bumped when the columns or their meaning change (old catalogs are rebuilt)."""


def fallback_dir() -> str:
  """Where catalogs go when the dataset directory is read-only.

  Example:
    >>> os.environ['RLDS_LITE_CACHE_DIR'] = '/tmp/cache'
    >>> fallback_dir()
    '/tmp/cache/catalog'
    >>> del os.environ['RLDS_LITE_CACHE_DIR']
  """
  root = os.environ.get('RLDS_LITE_CACHE_DIR') or os.path.join(
      os.path.expanduser('~'), '.cache', 'rlds_lite')
  return os.path.join(root, 'catalog')


def catalog_key(dataset_dir: str, split: str,
                last_step: str = 'invalid') -> str:
  """The key of a split's catalog: changes when the dataset's files change.

    Example:
      >>> import tempfile
      >>> d = tempfile.mkdtemp()
      >>> before = catalog_key(d, 'train')
      >>> with open(os.path.join(d, 'new-shard'), 'w') as f:
      ...   _ = f.write('x')
      >>> catalog_key(d, 'train') != before, len(before)
      (True, 16)
  """
  return stats_cache.cache_key(dataset_dir, {'catalog': FORMAT_VERSION,
                                             'split': split,
                                             'last_step': last_step})


def _candidates(dataset_dir: str, split: str, key: str,
                last_step: str) -> List[str]:
  digest = hashlib.sha256(os.path.realpath(dataset_dir).encode()).hexdigest()
  name = f'{split}-{last_step}-{key}.npz'
  return [os.path.join(dataset_dir, CACHE_SUBDIR, name),
          os.path.join(fallback_dir(), f'{digest[:16]}-{name}')]


def read(dataset_dir: str, split: str, key: str,
         last_step: str = 'invalid') -> Optional[table.Catalog]:
  """The cached catalog, or None (missing or unreadable).

  Example:
    >>> import tempfile
    >>> read(tempfile.mkdtemp(), 'train', '0123456789abcdef') is None
    True
  """
  for path in _candidates(dataset_dir, split, key, last_step):
    if os.path.exists(path):
      try:
        return table.Catalog.read(path)
      except (OSError, ValueError, KeyError) as e:
        logging.warning('catalog: ignoring unreadable cache %s: %s', path, e)
  return None


def _prune(path: str, split: str) -> None:
  """Removes older catalogs of the same split and last_step beside ``path``.

  Catalogs of that split written before ``last_step`` was part of the name
  (``<split>-<key>.npz``) go too.
  """
  directory, name = os.path.split(path)
  same_split = re.compile(re.escape(name[:name.rindex('-') + 1]) +
                          r'[0-9a-f]{16}\.npz')
  older = re.compile(re.escape(split) + r'-[0-9a-f]{16}\.npz')
  for other in os.listdir(directory):
    if other != name and (same_split.fullmatch(other) or
                          older.fullmatch(other)):
      try:
        os.remove(os.path.join(directory, other))
      except OSError:
        pass


def _write_atomically(path: str, catalog: table.Catalog) -> None:
  """Publishes ``catalog`` at ``path`` with `rlds_lite.atomic_output`."""
  with atomic_output.AtomicOutput(path, replace=True) as output:
    with open(output.path, 'xb') as f:
      catalog.save(f)
    output.publish()


def write(dataset_dir: str, split: str, key: str,
          catalog: table.Catalog, last_step: str = 'invalid') -> str:
  """Writes the catalog (dataset dir first, else the fallback); returns its path.

    Example:
      >>> import tempfile
      >>> d = tempfile.mkdtemp()
      >>> path = write(d, 'test', 'k' * 16, table.Catalog({'index': [0]}))
      >>> os.path.basename(path), len(read(d, 'test', 'k' * 16))
      ('test-invalid-kkkkkkkkkkkkkkkk.npz', 1)
  """
  errors = []
  for path in _candidates(dataset_dir, split, key, last_step):
    try:
      _write_atomically(path, catalog)
    except OSError as e:
      errors.append(f'{path}: {e}')
      continue
    if os.path.dirname(path).endswith(CACHE_SUBDIR):
      _prune(path, split)
    return path
  raise OSError('catalog cache: could not write ' + '; '.join(errors))
