"""What the viewer's dataset page says about a dataset, from ``dataset_info.json`` alone.

Example:
  >>> import rlds_lite
  >>> from rlds_lite import synthetic
  >>> path = synthetic.dataset(3, seed=0)
  >>> info = dataset_info(rlds_lite.open(path).builder, path)
  >>> info['name'], info['splits']
  ('toy', [{'name': 'train', 'episodes': 3, 'shards': 1, 'bytes': ...}])
  >>> [f['path'] for f in info['features'] if f['level'] == 'step'][:3]
  ['action', 'discount', 'is_first']
  >>> info['cameras']
  []
"""

import os
from typing import Any, Dict, List

import numpy as np
import tensorflow_datasets as tfds

from rlds_lite import rlds_types
from rlds_lite.view import fields


def _leaves(features: Any, prefix: str, level: str) -> List[Dict[str, Any]]:
  """One entry per leaf feature, with its path, type, shape and dtype."""
  if isinstance(features, tfds.features.Dataset):
    return _leaves(features.feature, '', 'step')  # Paths within a step.
  if isinstance(features, tfds.features.FeaturesDict):
    rows = []
    for name in sorted(features.keys()):
      rows += _leaves(features[name], f'{prefix}/{name}' if prefix else name,
                      level)
    return rows
  entry = {'path': prefix, 'level': level, 'type': type(features).__name__,
           'shape': [None if d is None else int(d) for d in features.shape],
           'dtype': np.dtype(features.np_dtype).name}
  if isinstance(features, tfds.features.Text):
    entry['dtype'] = 'string'
  encoding = getattr(features, 'encoding_format', None)
  if encoding:
    entry['encoding'] = encoding
  return [entry]


def _splits(builder: tfds.core.DatasetBuilder) -> List[Dict[str, Any]]:
  return [{'name': name, 'episodes': int(split.num_examples),
           'shards': int(split.num_shards), 'bytes': int(split.num_bytes)}
          for name, split in sorted(builder.info.splits.items())]


def dataset_info(builder: tfds.core.DatasetBuilder,
                 label: str) -> Dict[str, Any]:
  """Name, version, description, splits, features (leaf by leaf, sorted) and cameras, JSON-ready."""
  info = builder.info
  leaves = _leaves(info.features, '', 'episode')
  return {
      'label': label, 'path': os.fspath(builder.data_dir),
      'name': builder.name, 'version': str(info.version),
      'description': info.description or '', 'homepage': info.homepage or '',
      'file_format': info.file_format.value if info.file_format else None,
      'splits': _splits(builder),
      'features': ([f for f in leaves if f['level'] == 'step'] +
                   [f for f in leaves if f['level'] == 'episode']),
      'cameras': fields.camera_fields(
          info.features[rlds_types.STEPS].feature.get_tensor_spec()),
  }
