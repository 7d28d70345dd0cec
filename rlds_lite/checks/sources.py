"""Open what a check is pointed at: a dataset path or name, a dataset, a list.

Example:
  >>> from rlds_lite import synthetic
  >>> checked = open_source(synthetic.episode_arrays(num_episodes=2))
  >>> checked.kind, checked.total, checked.label
  ('python', 2, '<episodes>')
"""

import dataclasses
import os
import warnings
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import source as source_lib
from rlds_lite import rlds_types

PathLike = Union[str, os.PathLike]

DENSE = 'dense'
NESTED = 'nested'
PYTHON = 'python'


@dataclasses.dataclass
class Episodes:
  """Episodes to check, and the split they were read from (if any).

  Attributes:
    episodes: a ``tf.data.Dataset`` of episodes, or a Python iterable.
    kind: ``'dense'``, ``'nested'`` (``tf.data`` steps) or ``'python'``.
    total: the number of episodes if known (for progress bars).
    opened: the `rlds_lite.source.Source` of a path or name, else None.
    numbers: the split index of each episode read when they are not ``0, 1, 2...`` (around
      damaged files), else None.

  Example:
    >>> Episodes([{'steps': {}}], PYTHON, 1).label
    '<episodes>'
  """
  episodes: Any
  kind: str
  total: Optional[int] = None
  opened: Optional[source_lib.Source] = None
  numbers: Optional[Sequence[int]] = None

  @property
  def label(self) -> str:
    """The path or name, or ``'<dataset>'`` / ``'<episodes>'``."""
    if self.opened is not None:
      return self.opened.label
    return '<episodes>' if self.kind == PYTHON else '<dataset>'

  @property
  def builder(self) -> Optional[tfds.core.DatasetBuilder]:
    """The TFDS builder of a path or name, else None."""
    return None if self.opened is None else self.opened.builder

  @property
  def split(self) -> Optional[str]:
    """The split read, for a path or name."""
    return None if self.opened is None else self.opened.split

  def number(self, position: int) -> int:
    """The split index of the episode read at ``position``."""
    return position if self.numbers is None else self.numbers[position]


def _source_of_before(label: str, episodes: Any, kind: str,
                      total: Optional[int] = None,
                      builder: Optional[tfds.core.DatasetBuilder] = None,
                      split: Optional[str] = None,
                      numbers: Optional[Sequence[int]] = None) -> Episodes:
  """``checks.sources.Source(label, episodes, kind, ...)``, as before."""
  opened = None if builder is None else source_lib.Source(builder, label,
                                                          split)
  return Episodes(episodes, kind, total, opened, numbers)


def __getattr__(name: str) -> Any:
  if name == 'Source':  # Its builder, label and split are a source's.
    warnings.warn('rlds_lite.checks.sources.Source is now '
                  'checks.sources.Episodes (its builder, label and split: '
                  'rlds_lite.source.Source, as .opened); the old name will go '
                  'in a later release.', DeprecationWarning, stacklevel=2)
    return _source_of_before
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


default_split = source_lib.default_split


def open_builder(name_or_dir: PathLike, data_dir: Optional[PathLike] = None):
  """Deprecated: ``rlds_lite.open(name_or_dir)`` (its ``builder`` and ``label``)."""
  warnings.warn('rlds_lite.checks.sources.open_builder is now '
                'rlds_lite.open(...).builder; the old name will go in a later '
                'release.', DeprecationWarning, stacklevel=2)
  source = source_lib.open(name_or_dir, data_dir=data_dir)
  return source.builder, source.label


def split_size(builder: tfds.core.DatasetBuilder, split: str) -> Optional[int]:
  """The number of episodes of a plain split name, else None."""
  info = builder.info.splits
  return info[split].num_examples if split in info.keys() else None


def _as_arrays(structure: Any) -> Any:
  """Dicts and tuples kept, every other leaf (lists too) as a NumPy array."""
  if isinstance(structure, Mapping):
    return {k: _as_arrays(v) for k, v in structure.items()}
  if isinstance(structure, tuple):
    return tuple(_as_arrays(v) for v in structure)
  if isinstance(structure, tf.Tensor):
    return structure.numpy()
  return np.asarray(structure)


def python_steps(episode: Any) -> Any:
  """The steps of a Python episode as a nest of NumPy ``[T, ...]`` arrays.

  Example:
    >>> python_steps({'steps': {'is_last': [False, True]}})
    {'is_last': array([False,  True])}
  """
  if not isinstance(episode, Mapping):
    raise TypeError('episodes must be dicts (with a steps dict, or the steps '
                    f'dict itself); got {type(episode).__name__}.')
  steps = episode.get(rlds_types.STEPS, episode)
  if not isinstance(steps, Mapping):
    raise TypeError(f'episode {rlds_types.STEPS!r} must be a dict of [T, ...] '
                    f'arrays here; got {type(steps).__name__}.')
  return _as_arrays(steps)


def _dataset_kind(episodes: tf.data.Dataset) -> str:
  spec = episodes.element_spec
  if not isinstance(spec, Mapping) or rlds_types.STEPS not in spec:
    raise ValueError(
        f'not an RLDS dataset: elements must be episode dicts with a '
        f'{rlds_types.STEPS!r} entry; got element spec {spec!r}.')
  if isinstance(spec[rlds_types.STEPS], tf.data.DatasetSpec):
    return NESTED
  return DENSE


RandomAccessEpisodes = source_lib.RandomAccessEpisodes


def open_source(source: Any, split: Optional[str] = None,
                data_dir: Optional[PathLike] = None,
                random_access: bool = False) -> Episodes:
  """The `Episodes` of a `Source`, dataset path/name, ``tf.data.Dataset`` or list of episodes.

  Args:
    split: the split of a path or name (default: ``'train'`` if present, else the first).
    random_access: read an array_record dataset as Python episodes (else an error, as in
      ``rlds_lite.load``).

  Example:
    >>> open_source(3)
    Traceback (most recent call last):
    ...
    TypeError: expected a dataset path or name, a tf.data.Dataset or a list of episodes; got int.
  """
  if isinstance(source, (str, os.PathLike, source_lib.Source)):
    opened = source_lib.as_source(source, split, data_dir=data_dir)
    total = split_size(opened.builder, opened.split)
    if random_access and opened.file_format == 'array_record':
      return Episodes(opened.random_access_episodes(), PYTHON, total, opened)
    return Episodes(opened.episodes(dense=True), DENSE, total, opened)
  if isinstance(source, tf.data.Dataset):
    cardinality = int(source.cardinality())
    return Episodes(source, _dataset_kind(source),
                    cardinality if cardinality >= 0 else None)
  if isinstance(source, Iterable) and not isinstance(source, (bytes, Mapping)):
    total = len(source) if hasattr(source, '__len__') else None
    return Episodes(source, PYTHON, total)
  raise TypeError('expected a dataset path or name, a tf.data.Dataset or a '
                  f'list of episodes; got {type(source).__name__}.')
