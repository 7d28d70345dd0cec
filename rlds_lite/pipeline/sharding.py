"""Per-host sharding of episodes and split slicing, deterministic and seeded.

Host ``index`` of ``count`` reads ``shard(..., index, count)``: every
episode in exactly one shard, computed alike on every host
(docs/distributed.md).

Example:
  >>> import tensorflow as tf
  >>> episodes = tf.data.Dataset.range(10)
  >>> [[int(x) for x in shard(episodes, i, 3)] for i in range(3)]
  [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
"""

import os
from typing import Any, List, Optional, Union

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import op_context
from rlds_lite import source as source_lib
from rlds_lite.pipeline import inputs

PathLike = Union[str, os.PathLike]


@op_context.named('shard')
def check_shard(index: Any, count: Any) -> None:
  """Raises a ValueError unless ``0 <= index < count`` (ints, count > 0).

  Example:
    >>> check_shard(4, 4)
    Traceback (most recent call last):
    ...
    ValueError: shard: index 4 is out of range for count 4 (need 0 <= index < 4).
  """
  count = inputs.check_positive_int(count, 'count')
  if isinstance(index, bool) or not hasattr(index, '__index__'):
    raise TypeError(f'index must be an int, got {type(index).__name__}.')
  index = int(index.__index__())
  if not 0 <= index < count:
    raise ValueError(f'index {index} is out of range for count {count} '
                     f'(need 0 <= index < {count}).')


@op_context.named('split_slices')
def split_slices(split: str,
                 num_slices: int,
                 *,
                 num_episodes: Optional[int] = None,
                 drop_remainder: bool = False) -> List[Any]:
  """``num_slices`` disjoint TFDS splits that together make ``split``.

  With ``num_episodes`` (the split's size; ``split`` a plain split name),
  exact episode ranges as strings such as ``'train[0:4]'``: the first
  ``num_episodes % num_slices`` slices hold one more episode (or, with
  ``drop_remainder``, every slice holds ``num_episodes // num_slices`` and
  the rest is left out). Without it, ``tfds.even_splits`` objects (any
  split, slicing included), which TFDS resolves exactly when it reads; both
  forms go to ``rlds_lite.load`` or ``tfds.load`` as ``split``.

  Args:
    split: a split name (``'train'``), sliced splits allowed without
      ``num_episodes``.
    num_slices: how many slices (positive).
    num_episodes: the number of episodes in ``split`` (non-negative).
    drop_remainder: make all slices the same size.

  Returns:
    The slices, in order.

  Example:
    >>> split_slices('train', 3, num_episodes=10)
    ['train[0:4]', 'train[4:7]', 'train[7:10]']
    >>> len(split_slices('train[:50%]', 4))
    4
  """
  num_slices = inputs.check_positive_int(num_slices, 'num_slices')
  if not isinstance(split, str) or not split:
    raise TypeError(f'split must be a split name, got {split!r}.')
  if num_episodes is None:
    return list(tfds.even_splits(split, num_slices,
                                 drop_remainder=drop_remainder))
  num_episodes = inputs.check_non_negative_int(num_episodes, 'num_episodes')
  if '[' in split or '+' in split:
    raise ValueError(f'with num_episodes, split must be a plain split '
                     f'name (no slicing or "+"), got {split!r}.')
  base, extra = divmod(num_episodes, num_slices)
  slices, start = [], 0
  for i in range(num_slices):
    stop = start + base + (0 if drop_remainder or i >= extra else 1)
    slices.append(f'{split}[{start}:{stop}]')
    start = stop
  return slices


def shard_owners(num_episodes: int, count: int, seed: int) -> np.ndarray:
  """Host of each episode under ``seed``: ``owners[perm[j]] = j % count``.

  The permutation is NumPy's ``default_rng(seed).permutation``, so every
  host (same NumPy) computes the same owners.

  Example:
    >>> shard_owners(6, 2, seed=0).tolist()
    [0, 1, 1, 0, 1, 0]
  """
  order = np.random.default_rng(seed).permutation(num_episodes)
  owners = np.empty(num_episodes, np.int32)
  owners[order] = np.arange(num_episodes, dtype=np.int32) % count
  return owners


def _seeded_shard(episodes: tf.data.Dataset, index: int, count: int,
                  seed: int) -> tf.data.Dataset:
  """The episodes whose owner under ``seed`` is ``index``."""
  num_episodes = int(episodes.cardinality())
  if num_episodes < 0:
    raise ValueError(
        'shard: a seeded shard needs a dataset of known, finite cardinality '
        f'(this one has {num_episodes}: unknown -2 or infinite -1); use '
        'seed=None, or dataset.apply(tf.data.experimental.assert_cardinality(n)).')
  owners = tf.constant(shard_owners(num_episodes, count, seed))
  mine = episodes.enumerate().filter(
      lambda i, _: tf.equal(tf.gather(owners, i), index))
  return mine.map(lambda i, episode: episode)


def shard(dataset_or_name: Union[tf.data.Dataset, PathLike],
          index: int,
          count: int,
          *,
          split: Optional[str] = None,
          seed: Optional[int] = None,
          data_dir: Optional[PathLike] = None,
          dense: bool = True,
          shuffle_files: bool = False,
          read_config: Optional[tfds.ReadConfig] = None) -> tf.data.Dataset:
  """Shard ``index`` of ``count`` of a dataset's episodes (see module doc).

  Args:
    dataset_or_name: a ``tf.data.Dataset`` (of episodes, or anything), or
      a TFDS name or dataset directory read with ``rlds_lite.load``.
    index: this host's shard, ``0 <= index < count``.
    count: the number of shards (hosts).
    split: the split to read (names only).
    seed: deal episodes to shards by a seeded permutation (same on every
      host); None: contiguous slices (names) or round robin (datasets).
    data_dir: where TFDS looks for named datasets.
    dense: read episodes dense (names only; see ``rlds_lite.load``).
    shuffle_files: shuffle file order (names only). Safe without ``seed``
      (each host shuffles its own slice); with ``seed`` every host must
      read the same order, so ``read_config.shuffle_seed`` must be set.
    read_config: a ``tfds.ReadConfig`` (names only).

  Returns:
    This host's episodes.

  Example:
    >>> import tensorflow as tf
    >>> ds = tf.data.Dataset.range(6)
    >>> [[int(x) for x in shard(ds, i, 2, seed=0)] for i in (0, 1)]
    [[0, 3, 5], [1, 2, 4]]
  """
  check_shard(index, count)
  index, count = int(index), int(count)
  if isinstance(dataset_or_name, tf.data.Dataset):
    if seed is None:
      return dataset_or_name.shard(count, index)
    return _seeded_shard(dataset_or_name, index, count, seed)
  if not isinstance(dataset_or_name, (str, os.PathLike, source_lib.Source)):
    raise TypeError('shard: dataset_or_name must be a tf.data.Dataset, a TFDS '
                    f'name or a directory, got {type(dataset_or_name).__name__}.')
  source = source_lib.as_source(dataset_or_name, split, data_dir=data_dir)
  if seed is None:
    part = source.with_split(split_slices(source.split, count)[index])
    return part.episodes(dense=dense, shuffle_files=shuffle_files,
                         read_config=read_config)
  if shuffle_files and (read_config is None or read_config.shuffle_seed is None):
    raise ValueError(
        'shard: a seeded shard with shuffle_files=True needs '
        'read_config=tfds.ReadConfig(shuffle_seed=...) so that every host '
        'reads the episodes in the same order.')
  episodes = source.episodes(dense=dense, shuffle_files=shuffle_files,
                             read_config=read_config)
  return _seeded_shard(episodes, index, count, seed)
