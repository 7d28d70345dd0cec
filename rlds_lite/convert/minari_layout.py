"""Where a Minari dataset's files are (`locate`), and what a dataset id looks like; no HDF5 here."""

import os
import re
from typing import List, Optional, Tuple, Union

MAIN_FILE = 'main_data.hdf5'

DATASET_ID = re.compile(
    r'^(?:(?P<namespace>[-_\w][-_\w/]*[-_\w]+)/)?(?P<name>[-_\w]+?)-v\d+$')
"""Minari 0.5.4's ``DATASET_ID_RE`` (``minari.dataset.minari_dataset``) with
the version required (``parse_dataset_id`` fails without one): a namespace
has 2 characters or more, so Minari refuses ``'a/b-v0'`` (tested against
Minari's own parser)."""


def is_dataset_id(text: str) -> bool:
  """Whether ``text`` is a Minari dataset id, ``(namespace/)name-v<N>``.

  Example:
    >>> is_dataset_id('D4RL/door/human-v2'), is_dataset_id('door')
    (True, False)
  """
  return bool(DATASET_ID.fullmatch(text))


def _datasets_under(root: str) -> List[str]:
  """Ids (relative paths) of the Minari datasets under a Minari root."""
  found = []
  for directory, subdirs, _ in os.walk(root):
    if os.path.isfile(os.path.join(directory, 'data', MAIN_FILE)):
      found.append(os.path.relpath(directory, root).replace(os.sep, '/'))
      subdirs.clear()
    subdirs[:] = sorted(d for d in subdirs if not d.startswith('.'))
  return found


def locate(path: Union[str, os.PathLike]) -> str:
  """The ``main_data.hdf5`` of a Minari dataset (root, data dir or file), or
  of the one dataset under a Minari root (``MINARI_DATASETS_PATH``, what
  `rlds_lite.convert.minari.to_minari` writes into).

  Example:
    >>> locate('/nonexistent')
    Traceback (most recent call last):
    ...
    FileNotFoundError: /nonexistent: no main_data.hdf5 there, in data/ or as the file itself
  """
  path = os.fspath(path)
  for candidate in (path, os.path.join(path, MAIN_FILE),
                    os.path.join(path, 'data', MAIN_FILE)):
    if os.path.isfile(candidate):
      return candidate
  found = _datasets_under(path) if os.path.isdir(path) else []
  if len(found) == 1:
    return os.path.join(path, *found[0].split('/'), 'data', MAIN_FILE)
  if found:
    raise ValueError(f'{path}: a Minari root with {len(found)} datasets '
                     f'({", ".join(found)}); give one dataset\'s directory')
  raise FileNotFoundError(
      f'{path}: no {MAIN_FILE} there, in data/ or as the file itself')


def dataset_root(path: Union[str, os.PathLike],
                 dataset_id: Optional[str]) -> Tuple[str, str]:
  """``(root, dataset_id)`` of a Minari target: a root, or a dataset's
  directory (what ``--from minari`` reads) ending in the id or named like one.

  Example:
    >>> dataset_root('out', 'demo/point-v0')
    ('out', 'demo/point-v0')
    >>> dataset_root('out/demo/point-v0', 'demo/point-v0')
    ('out', 'demo/point-v0')
    >>> dataset_root('out/point-v0', None)
    ('out', 'point-v0')
  """
  path = os.path.normpath(os.fspath(path))
  if not dataset_id:
    name = os.path.basename(path)
    if not is_dataset_id(name):
      raise ValueError('writing minari needs a dataset id, e.g. '
                       "dataset_id='demo/point-v0'")
    dataset_id = name
  parts, components = dataset_id.split('/'), path.split(os.sep)
  if components[-len(parts):] == parts:  # The dataset's own directory.
    path = os.sep.join(components[:-len(parts)]) or (
        os.sep if path.startswith(os.sep) else os.curdir)
  return path, dataset_id
