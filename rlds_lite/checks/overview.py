"""`describe`: what an RLDS dataset on disk holds (features, splits, counts)."""

import dataclasses
import json
from typing import Any, Dict, List, Optional

import numpy as np
import tensorflow as tf  # pylint: disable=unused-import (the doctests use it)
import tensorflow_datasets as tfds

from rlds_lite import source as source_lib
from rlds_lite import dataset_files
from rlds_lite import progress as progress_lib
from rlds_lite import rlds_types
from rlds_lite.checks import problems as problems_lib
from rlds_lite.checks import sources

_COUNT_BATCH = 256


@dataclasses.dataclass(frozen=True)
class FeatureRow:
  """One leaf feature: its path, NumPy dtype, shape and TFDS kind."""
  path: str
  dtype: str
  shape: str
  kind: str


@dataclasses.dataclass(frozen=True)
class SplitRow:
  """One split: episodes, steps (None if not counted), bytes, shard files."""
  name: str
  episodes: int
  steps: Optional[int]
  num_bytes: int
  shards: int


def _kind(feature: tfds.features.FeatureConnector) -> str:
  """``'Image (png)'``, ``'Tensor (zlib)'``, ``'Text'``, ..."""
  name = type(feature).__name__
  try:
    content = feature.to_json_content()
  except (NotImplementedError, AttributeError):
    content = None
  encoding = (getattr(content, 'encoding_format', None) or
              getattr(content, 'encoding', None))
  if isinstance(feature, tfds.features.Image):
    encoding = feature.encoding_format or 'png'  # TFDS's default.
  encoding = None if encoding in (None, '', 'none') else encoding
  return f'{name} ({encoding})' if encoding else name


def _shape_text(shape: Any) -> str:
  dims = ['None' if d is None else str(d) for d in shape]
  return '(' + ', '.join(dims) + (',)' if len(dims) == 1 else ')')


def feature_rows(feature: tfds.features.FeatureConnector,
                 prefix: str = '') -> List[FeatureRow]:
  """The leaf features below ``feature`` (dicts and sequences walked into).

  Example:
    >>> rows = feature_rows(tfds.features.FeaturesDict(
    ...     {'image': tfds.features.Image(shape=(4, 4, 3)), 'x': tf.float32}))
    >>> [(r.path, r.kind, r.shape) for r in rows]
    [('image', 'Image (png)', '(4, 4, 3)'), ('x', 'Tensor', '()')]
  """
  if isinstance(feature, tfds.features.FeaturesDict):
    rows = []
    for key in sorted(feature.keys()):
      rows.extend(feature_rows(feature[key],
                               f'{prefix}/{key}' if prefix else key))
    return rows
  if isinstance(feature, (tfds.features.Dataset, tfds.features.Sequence)):
    return feature_rows(feature.feature, prefix)
  return [FeatureRow(prefix, _dtype_text(feature), _shape_text(feature.shape),
                     _kind(feature))]


def _dtype_text(feature: tfds.features.FeatureConnector) -> str:
  """``'string'`` for text and string tensors, else the NumPy dtype's name.

  Example:
    >>> _dtype_text(tfds.features.Text()), _dtype_text(tfds.features.Scalar(tf.int32))
    ('string', 'int32')
  """
  if np.dtype(feature.np_dtype) == object:
    return 'string'
  return str(feature.np_dtype)


@dataclasses.dataclass
class DatasetOverview:
  """What `describe` found: metadata, step/episode features and splits."""
  name: str
  version: str
  path: str
  file_format: str
  step_features: List[FeatureRow]
  episode_features: List[FeatureRow]
  splits: List[SplitRow]

  @property
  def num_episodes(self) -> int:
    return sum(s.episodes for s in self.splits)

  @property
  def num_steps(self) -> Optional[int]:
    counts = [s.steps for s in self.splits]
    return None if None in counts else sum(counts)

  def to_dict(self) -> Dict[str, Any]:
    """A JSON-ready dict."""
    out = dataclasses.asdict(self)
    out['episodes'] = self.num_episodes
    out['steps'] = self.num_steps
    return out

  def to_json(self, indent: Optional[int] = 2) -> str:
    return json.dumps(self.to_dict(), indent=indent)

  def table(self) -> str:
    """A readable summary: header, features, splits."""
    # pylint: disable=protected-access
    text = problems_lib._text_table
    lines = [f'{self.name} {self.version} ({self.file_format}) at {self.path}',
             '', 'step features:',
             text(('field', 'dtype', 'shape', 'feature'),
                  [dataclasses.astuple(f) for f in self.step_features])]
    if self.episode_features:
      lines += ['', 'episode features:',
                text(('field', 'dtype', 'shape', 'feature'),
                     [dataclasses.astuple(f) for f in self.episode_features])]
    rows = [(s.name, s.episodes, s.steps, _bytes_text(s.num_bytes), s.shards)
            for s in self.splits]
    rows.append(('total', self.num_episodes, self.num_steps,
                 _bytes_text(sum(s.num_bytes for s in self.splits)),
                 sum(s.shards for s in self.splits)))
    lines += ['', 'splits:',
              text(('split', 'episodes', 'steps', 'size', 'files'), rows)]
    return '\n'.join(lines)

  def __str__(self) -> str:
    return self.table()


def _bytes_text(num_bytes: int) -> str:
  size = float(num_bytes)
  for unit in ('B', 'KiB', 'MiB', 'GiB'):
    if size < 1024 or unit == 'GiB':
      return f'{size:.0f} {unit}' if unit == 'B' else f'{size:.1f} {unit}'
    size /= 1024
  return f'{size:.1f} TiB'


def count_steps(builder: tfds.core.DatasetBuilder, split: str,
                progress: Optional[bool] = False) -> int:
  """Steps in a split, read without decoding (`rlds_lite.source.count_steps`), with a bar.

  Example:
    >>> from rlds_lite import synthetic
    >>> path = synthetic.dataset(2, seed=1)
    >>> count_steps(tfds.builder_from_directory(path), 'train')
    54
  """
  with progress_lib.bar(progress, total=sources.split_size(builder, split),
                        desc=f'count steps [{split}]',
                        unit=' episodes') as bar:
    return source_lib.count_steps(builder, split, bar.update)


def describe(name_or_dir: sources.PathLike, *, split: Optional[str] = None,
             data_dir: Optional[sources.PathLike] = None,
             steps: bool = True,
             progress: Optional[bool] = False) -> DatasetOverview:
  """Features, splits, episode and step counts of an RLDS TFDS dataset (a `DatasetOverview`).

  Args:
    split: describe only this split (default: all).
    steps: count steps (one pass over the data, without decoding).
    progress: show a progress bar while counting (None: on a terminal only).

  Example:
    >>> from rlds_lite import synthetic
    >>> overview = describe(synthetic.dataset(num_episodes=3, seed=0))
    >>> overview.splits
    [SplitRow(name='train', episodes=3, steps=97, num_bytes=..., shards=1)]
    >>> [(f.path, f.dtype, f.shape) for f in overview.step_features][:2]
    [('action', 'float32', '(2,)'), ('discount', 'float32', '()')]
  """
  opened = source_lib.as_source(name_or_dir, split, data_dir=data_dir)
  builder, label = opened.builder, opened.label
  dataset_files.check_has_splits(builder)
  info = builder.info
  names = sorted(info.splits.keys())
  if split is not None:
    if split not in names:
      raise ValueError(f'dataset {label!r} has no split {split!r} (its '
                       f'splits: {names}).')
    names = [split]
  splits = []
  for name in names:
    split_info = info.splits[name]
    splits.append(SplitRow(
        name, int(split_info.num_examples),
        count_steps(builder, name, progress) if steps else None,
        int(split_info.num_bytes), int(split_info.num_shards)))
  features = info.features
  episode_rows = [r for key in sorted(features.keys())
                  if key != rlds_types.STEPS
                  for r in feature_rows(features[key], key)]
  file_format = info.file_format
  return DatasetOverview(
      name=info.name, version=str(info.version), path=str(builder.data_dir),
      file_format=getattr(file_format, 'value', str(file_format)),
      step_features=feature_rows(features[rlds_types.STEPS]),
      episode_features=episode_rows, splits=splits)
