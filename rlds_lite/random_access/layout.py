"""The chunk layout: records of ``C`` consecutive steps of one episode (docs/random_access.md).

Example:
  >>> import numpy as np, tensorflow_datasets as tfds
  >>> steps = tfds.features.FeaturesDict({
  ...     'observation': tfds.features.Tensor(shape=(2,), dtype=np.float32),
  ...     'is_last': np.bool_})
  >>> layout = ChunkLayout.from_step_features(steps, chunk_steps=4)
  >>> [(leaf.path, leaf.kind, leaf.shape) for leaf in layout.leaves]
  [('is_last', 'fixed', (4,)), ('observation', 'fixed', (4, 2))]
  >>> record = layout.encode(3, 0, 2, {'observation': np.ones([4, 2], np.float32),
  ...                                   'is_last': np.array([0, 1, 1, 1], bool)})
  >>> parsed = layout.features.deserialize_example_np(record)
  >>> int(parsed['episode']), parsed['steps']['observation'].shape
  (3, (4, 2))
"""

import dataclasses
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import nest_paths
from rlds_lite.tfds import example_fields
from rlds_lite.tfds import example_wire

__all__ = ['ChunkLayout', 'Leaf', 'LAYOUT_NAME', 'LAYOUT_VERSION',
           'HEADER_FIELDS']

LAYOUT_NAME = 'rlds_lite_chunks'
"""The ``metadata.json`` key that marks a chunk dataset."""
LAYOUT_VERSION = 1
HEADER_FIELDS = ('episode', 'offset', 'num_steps')
"""The int64 scalars of every chunk record."""
KINDS = ('fixed', 'image', 'string')


@dataclasses.dataclass(frozen=True)
class Leaf:
  """One step leaf of the chunk layout.

  Attributes:
    path: the step field's path (``'observation/image'``).
    kind: ``'fixed'`` (raw ``[C, ...]`` bytes), ``'image'`` or ``'string'``.
    dtype: NumPy dtype name of the decoded values.
    shape: the leaf's shape in a chunk, ``(C, ...)``.
    encoding: the image encoding (``'jpeg'``/``'png'``), else ``''``.

  Example:
    >>> leaf = Leaf('observation/image', 'image', 'uint8', (4, 64, 64, 3), 'jpeg')
    >>> leaf.key, Leaf.from_json(leaf.to_json()) == leaf
    ('steps/observation/image', True)
    >>> Leaf('action', 'fixed', 'float32', (4, 2)).nbytes  # 4 steps x 2 x 4 bytes.
    32
  """
  path: str
  kind: str
  dtype: str
  shape: Tuple[int, ...]
  encoding: str = ''

  @property
  def key(self) -> str:
    """The feature key of this leaf in a chunk record."""
    return 'steps/' + self.path

  @property
  def nbytes(self) -> int:
    """Bytes of a ``fixed`` leaf's payload in one record."""
    return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

  def to_json(self) -> Dict[str, Any]:
    return {'path': self.path, 'kind': self.kind, 'dtype': self.dtype,
            'shape': list(self.shape), 'encoding': self.encoding}

  @classmethod
  def from_json(cls, value: Mapping[str, Any]) -> 'Leaf':
    return cls(value['path'], value['kind'], value['dtype'],
               tuple(value['shape']), value.get('encoding', ''))


def _step_leaves(feature: Any, prefix: str = '') -> List[Tuple[str, Any]]:
  if isinstance(feature, tfds.features.FeaturesDict):
    found = []
    for key in sorted(feature.keys()):
      found.extend(_step_leaves(feature[key], f'{prefix}{key}/'))
    return found
  return [(prefix.rstrip('/'), feature)]


def _leaf_of(path: str, feature: Any, chunk_steps: int) -> Leaf:
  if type(feature) is tfds.features.Image:  # pylint: disable=unidiomatic-typecheck
    shape = tuple(feature.shape)
    if None in shape:
      raise ValueError(f'step field {path!r} is an image of unknown shape '
                       f'{shape}; the chunk layout needs a fixed frame shape.')
    return Leaf(path, 'image', np.dtype(feature.np_dtype).name,
                (chunk_steps,) + shape, feature.encoding_format or 'png')
  shape = tuple(getattr(feature, 'shape', ()) or ())
  dtype = tf.as_dtype(feature.np_dtype)
  if dtype == tf.string:
    if shape:
      raise ValueError(f'step field {path!r} holds strings of shape {shape}; '
                       'the chunk layout stores scalar strings only.')
    return Leaf(path, 'string', 'object', (chunk_steps,))
  if None in shape or not (dtype.is_integer or dtype.is_floating or
                           dtype.is_bool):
    raise ValueError(f'step field {path!r} ({type(feature).__name__}, '
                     f'{dtype.name} {shape}) cannot be chunked: the chunk '
                     'layout takes fixed-shape numbers and booleans, images '
                     'and scalar strings.')
  return Leaf(path, 'fixed', np.dtype(dtype.as_numpy_dtype).name,
              (chunk_steps,) + shape)


class ChunkLayout:
  """How chunk records of ``chunk_steps`` steps of ``leaves`` are written and read.

  Example:
    >>> import numpy as np
    >>> layout = ChunkLayout([Leaf('is_last', 'fixed', 'bool', (4,)),
    ...                       Leaf('action', 'fixed', 'float32', (4, 2))], 4)
    >>> [leaf.path for leaf in layout.leaves], layout.fixed
    (['action', 'is_last'], True)
    >>> record = layout.encode(7, 4, 3, {'action': np.zeros([4, 2]),
    ...                                  'is_last': [0, 0, 1, 1]})
    >>> start, size = layout.payloads(record)['steps/is_last']
    >>> np.frombuffer(record[start:start + size], bool).tolist()
    [False, False, True, True]
  """

  def __init__(self, leaves: Sequence[Leaf], chunk_steps: int):
    self.leaves = tuple(sorted(leaves, key=lambda leaf: leaf.path))
    self.chunk_steps = int(chunk_steps)

  @classmethod
  def from_step_features(cls, step_features: Any,
                         chunk_steps: int) -> 'ChunkLayout':
    """The layout of a source dataset's step features."""
    return cls([_leaf_of(path, feature, chunk_steps)
                for path, feature in _step_leaves(step_features)],
               chunk_steps)

  def to_json(self) -> Dict[str, Any]:
    return {'chunk_steps': self.chunk_steps,
            'leaves': [leaf.to_json() for leaf in self.leaves]}

  @classmethod
  def from_json(cls, value: Mapping[str, Any]) -> 'ChunkLayout':
    return cls([Leaf.from_json(v) for v in value['leaves']],
               value['chunk_steps'])

  @property
  def fixed(self) -> bool:
    """Whether every leaf is ``fixed`` (records all alike but payloads)."""
    return all(leaf.kind == 'fixed' for leaf in self.leaves)

  @property
  def features(self) -> tfds.features.FeaturesDict:
    """The TFDS features of a chunk record."""
    scalar = lambda: tfds.features.Tensor(shape=(), dtype=np.int64,  # pylint: disable=g-long-lambda
                                          encoding=tfds.features.Encoding.BYTES)
    steps = {}
    for leaf in self.leaves:
      if leaf.kind == 'fixed':
        steps[leaf.path] = tfds.features.Tensor(
            shape=leaf.shape, dtype=np.dtype(leaf.dtype),
            encoding=tfds.features.Encoding.BYTES)
      elif leaf.kind == 'image':
        steps[leaf.path] = tfds.features.Sequence(
            tfds.features.Image(shape=leaf.shape[1:],
                                dtype=np.dtype(leaf.dtype),
                                encoding_format=leaf.encoding),
            length=self.chunk_steps)
      else:
        steps[leaf.path] = tfds.features.Tensor(shape=leaf.shape,
                                                dtype=np.str_)
    return tfds.features.FeaturesDict(
        {**{name: scalar() for name in HEADER_FIELDS},
         'steps': nest_paths.nest_from_paths(steps)})

  def encode(self, episode: int, offset: int, num_steps: int,
             steps: Mapping[str, np.ndarray]) -> bytes:
    """One chunk record: ``steps`` maps each leaf path to its ``C`` values (arrays or bytes)."""
    features = {
        'episode': example_wire.fixed_size_bytes_feature(
            np.array([episode], '<i8')),
        'offset': example_wire.fixed_size_bytes_feature(
            np.array([offset], '<i8')),
        'num_steps': example_wire.fixed_size_bytes_feature(
            np.array([num_steps], '<i8')),
    }
    for leaf in self.leaves:
      value = steps[leaf.path]
      if leaf.kind == 'fixed':
        array = np.asarray(value).astype(leaf.dtype, copy=False)
        if array.shape != leaf.shape:
          raise ValueError(f'chunk field {leaf.path!r} has shape '
                           f'{array.shape}, expected {leaf.shape}.')
        features[leaf.key] = example_wire.bytes_feature(
            [np.ascontiguousarray(array).tobytes()])
      else:
        items = [bytes(v) for v in value]
        if len(items) != self.chunk_steps:
          raise ValueError(f'chunk field {leaf.path!r} has {len(items)} '
                           f'values, expected {self.chunk_steps}.')
        features[leaf.key] = example_wire.bytes_feature(items)
    return example_wire.example(features)

  def payloads(self, record: bytes) -> Dict[str, Tuple[int, int]]:
    """``key -> (start, size)`` of each single-value payload in ``record``.

    Alike in every record of a ``fixed`` layout, so a block's payloads are column slices.
    """
    return _single_payloads(record)

  def parse_spec(self) -> Dict[str, Any]:
    """``tf.io.parse_example`` features of the record (raw, undecoded)."""
    spec = {name: tf.io.FixedLenFeature([], tf.string)
            for name in HEADER_FIELDS}
    for leaf in self.leaves:
      if leaf.kind == 'fixed':
        spec[leaf.key] = tf.io.FixedLenFeature([], tf.string)
      else:
        spec[leaf.key] = tf.io.FixedLenFeature([self.chunk_steps], tf.string)
    return spec


def _single_payloads(record: bytes) -> Dict[str, Tuple[int, int]]:
  out = {}
  for key, start, end in example_fields.features(record, 0, len(record)):
    kinds = list(example_fields.fields(record, start, end))
    if len(kinds) != 1 or kinds[0][0] != 1:
      continue  # Not a bytes_list.
    values = list(example_fields.fields(record, kinds[0][1], kinds[0][2]))
    if len(values) == 1:
      out[key] = (values[0][1], values[0][2] - values[0][1])
  return out
