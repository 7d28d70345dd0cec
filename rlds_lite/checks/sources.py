"""Open what a check is pointed at: a dataset path or name, a dataset, a list.

`open_source` accepts a prepared TFDS dataset directory or a registered name
(read with ``rlds_lite.load(..., dense=True)``), a ``tf.data.Dataset`` of
episodes (nested or dense steps), or a Python iterable of episodes whose
steps are dicts of ``[T, ...]`` arrays (``{'steps': {...}}`` or the steps
dict itself, as ``rlds_lite.synthetic.episode_arrays`` gives).

Example:
  >>> from rlds_lite import synthetic
  >>> source = open_source(synthetic.episode_arrays(num_episodes=2))
  >>> source.kind, source.total, source.label
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
class Source:
  """Episodes to check, and where they came from.

  Attributes:
    label: the path or name, or ``'<dataset>'`` / ``'<episodes>'``.
    episodes: a ``tf.data.Dataset`` of episodes, or a Python iterable.
    kind: ``'dense'``, ``'nested'`` (``tf.data`` steps) or ``'python'``.
    total: the number of episodes if known (for progress bars).
    builder: the TFDS builder for a path or name, else None.
    split: the split read, for a path or name.
    numbers: the split index of each episode read, when the episodes read
      are not episodes ``0, 1, 2...`` (those around damaged files); None
      when they are.
  """
  label: str
  episodes: Any
  kind: str
  total: Optional[int] = None
  builder: Optional[tfds.core.DatasetBuilder] = None
  split: Optional[str] = None
  numbers: Optional[Sequence[int]] = None

  def number(self, position: int) -> int:
    """The split index of the episode read at ``position``."""
    return position if self.numbers is None else self.numbers[position]


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
                random_access: bool = False) -> Source:
  """Opens a dataset path/name, a ``tf.data.Dataset`` or Python episodes.

  Args:
    source: see the module docstring.
    split: the split of a path or name (default: ``'train'`` if present,
      else the first split); ignored for datasets and Python episodes.
    data_dir: where TFDS looks for prepared datasets (names only).
    random_access: read an array_record dataset as Python episodes (see
      `RandomAccessEpisodes`); otherwise it is an error, as in
      ``rlds_lite.load``.

  Returns:
    The `Source`; a path or name is read with dense steps.

  Raises:
    FileNotFoundError, ValueError: for a missing path, an unknown name, a
      dataset that is not RLDS or an unknown split.
    TypeError: for anything else.

  Example:
    >>> open_source(3)
    Traceback (most recent call last):
    ...
    TypeError: expected a dataset path or name, a tf.data.Dataset or a list of episodes; got int.
  """
  if isinstance(source, (str, os.PathLike, source_lib.Source)):
    opened = source_lib.as_source(source, split, data_dir=data_dir)
    builder, label, split = opened.builder, opened.label, opened.split
    if random_access and opened.file_format == 'array_record':
      return Source(label, opened.random_access_episodes(), PYTHON,
                    split_size(builder, split), builder, split)
    episodes = opened.episodes(dense=True)
    return Source(label, episodes, DENSE, split_size(builder, split), builder,
                  split)
  if isinstance(source, tf.data.Dataset):
    cardinality = int(source.cardinality())
    return Source('<dataset>', source, _dataset_kind(source),
                  cardinality if cardinality >= 0 else None)
  if isinstance(source, Iterable) and not isinstance(source, (bytes, Mapping)):
    total = len(source) if hasattr(source, '__len__') else None
    return Source('<episodes>', source, PYTHON, total)
  raise TypeError('expected a dataset path or name, a tf.data.Dataset or a '
                  f'list of episodes; got {type(source).__name__}.')
