"""A TFDS dataset directory as a convert format (``rlds``): read and written."""

import os
from typing import Iterator, Optional, Union

from rlds_lite import overwriting
from rlds_lite import source as source_lib
from rlds_lite.convert import episodes as episodes_lib

VERSION = '1.0.0'
"""The version an ``rlds`` target is written as."""


def from_rlds(path: Union[str, os.PathLike], split: str = 'train'
              ) -> Iterator[episodes_lib.Episode]:
  """Episodes of a TFDS dataset; a damaged file is named (CorruptDatasetError).

  Opening errors are raised here; damage found while reading, by the
  returned iterator.
  """
  source = source_lib.as_source(path, split)
  episodes = source.episodes(dense=True)

  def read():
    with source.read_errors():
      yield from episodes_lib.numpy_episodes(episodes)

  return read()


def dataset_dir(path: Union[str, os.PathLike], name: Optional[str]) -> str:
  """The dataset directory an ``rlds`` target writes versions into.

  Example:
    >>> dataset_dir('/data/toy', None), dataset_dir('/data/toy', 'other')
    ('/data/toy', '/data/other')
  """
  path = os.path.abspath(os.fspath(path))
  if name is None:
    return path
  return overwriting.path_inside(os.path.dirname(path), name, what='name',
                                 writer='convert')


def to_rlds(episodes: episodes_lib.EpisodesLike,
            path: Union[str, os.PathLike], name: Optional[str] = None,
            split: str = 'train') -> str:
  """Writes a new dataset (`dataset_dir`) version; returns its directory.

  Example:
    >>> import os, tempfile, rlds_lite
    >>> episodes = rlds_lite.synthetic.episodes(num_episodes=2, seed=0)
    >>> path = to_rlds(episodes, os.path.join(tempfile.mkdtemp(), 'toy'))
    >>> os.path.basename(path), len(list(from_rlds(path)))
    ('1.0.0', 2)
  """
  if os.path.isfile(path):  # Before the name: 'x.txt' is not a bad name.
    raise FileExistsError(f'{path} exists (a file); choose a new target')
  target = dataset_dir(path, name)
  version = os.path.join(target, VERSION)
  if os.path.isfile(target):
    raise FileExistsError(f'{target} exists (a file); choose a new target')
  if os.path.isfile(os.path.join(version, 'dataset_info.json')):
    # Checked before reading (write_tfds would find it at the first episode).
    raise FileExistsError(f'{version} exists; choose a new target')
  return episodes_lib.write_tfds(
      episodes, os.path.dirname(target), os.path.basename(target),
      split=split, version=VERSION)
