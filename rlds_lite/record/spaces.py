"""Gymnasium spaces as RLDS fields: their TFDS specs, and values flattened to leaf arrays.

``Box``, ``Discrete``, ``MultiDiscrete``, ``MultiBinary`` and ``Text`` are leaves; ``Dict``
nests by key and ``Tuple`` by ``_index_<k>`` keys (as `rlds_lite.convert.minari` reads
Minari's Tuple groups). Other spaces raise an `UnsupportedSpaceError`.
"""

from typing import Any, Dict, List, Sequence, Tuple

import numpy as np
import tensorflow as tf

import gymnasium
from gymnasium import spaces as gym_spaces

__all__ = ['SpaceFields', 'UnsupportedSpaceError', 'text_column', 'tuple_key']

_LEAVES = (gym_spaces.Box, gym_spaces.Discrete, gym_spaces.MultiDiscrete,
           gym_spaces.MultiBinary, gym_spaces.Text)


class UnsupportedSpaceError(TypeError):
  """A Gymnasium space with no fixed-shape TFDS feature (``Graph``, ``Sequence``, ...)."""


def tuple_key(index: int) -> str:
  """The dict key of a ``Tuple`` space's ``index``-th subspace.

  Example:
    >>> tuple_key(1)
    '_index_1'
  """
  return f'_index_{index}'


Leaf = Tuple[Tuple[str, ...], Tuple[Any, ...], Any]


def _leaves(space: Any, path: str) -> List[Leaf]:
  """``(key path, index path into a value, leaf space)`` of every leaf."""
  if isinstance(space, gym_spaces.Dict):
    return [((key,) + keys, (key,) + index, leaf)
            for key, subspace in space.spaces.items()
            for keys, index, leaf in _leaves(subspace, f'{path}/{key}')]
  if isinstance(space, gym_spaces.Tuple):
    return [((tuple_key(i),) + keys, (i,) + index, leaf)
            for i, subspace in enumerate(space.spaces)
            for keys, index, leaf in _leaves(subspace,
                                             f'{path}/{tuple_key(i)}')]
  if isinstance(space, _LEAVES):
    return [((), (), space)]
  kind = type(space).__name__
  raise UnsupportedSpaceError(
      f'record: {path} is a {kind} space, which has no fixed-shape TFDS '
      'feature; supported: Box, Discrete, MultiDiscrete, MultiBinary, Text, '
      'and Dict/Tuple of them (wrap the env to change the space, e.g. '
      'gymnasium.wrappers.FlattenObservation).')


def _leaf_spec(space: Any) -> tf.TensorSpec:
  if isinstance(space, gym_spaces.Text):
    return tf.TensorSpec([], tf.string)
  return tf.TensorSpec(tuple(space.shape), tf.as_dtype(space.dtype))


def text_column(values: Sequence[Any]) -> np.ndarray:
  """A ``Text`` space's values as an object array of UTF-8 bytes.

  Example:
    >>> text_column(['ab', b'c']).tolist()
    [b'ab', b'c']
  """
  return np.array([v.encode() if isinstance(v, str) else bytes(v)
                   for v in values], dtype=object)


class SpaceFields:
  """The leaves of a Gymnasium space: their specs, and values flattened to them and back.

  Args:
    space: a Gymnasium space (see the module docstring for the kinds).
    path: its name in errors (``'observation_space'``).

  Example:
    >>> from gymnasium import spaces
    >>> fields = SpaceFields(spaces.Dict({'a': spaces.Discrete(3),
    ...     'b': spaces.Tuple([spaces.MultiBinary(2)])}), 'observation_space')
    >>> fields.spec
    {'a': TensorSpec(shape=(), dtype=tf.int64, name=None), 'b': {'_index_0': TensorSpec(shape=(2,), dtype=tf.int8, name=None)}}
    >>> leaves = fields.flatten({'a': 2, 'b': (np.array([1, 0], np.int8),)})
    >>> columns = fields.stack([leaves, leaves])
    >>> fields.unflatten(columns)['b']['_index_0'].tolist()
    [[1, 0], [1, 0]]
  """

  def __init__(self, space: Any, path: str):
    if not isinstance(space, gymnasium.Space):
      raise UnsupportedSpaceError(
          f'record: {path} is a {type(space).__name__}, not a Gymnasium space.')
    self.space = space
    self.path = path
    leaves = _leaves(space, path)
    self.paths = [keys for keys, _, _ in leaves]
    self._indices = [index for _, index, _ in leaves]
    self.dtypes = [np.dtype(object) if isinstance(s, gym_spaces.Text)
                   else np.dtype(s.dtype) for _, _, s in leaves]
    self.shapes = [tuple(_leaf_spec(s).shape) for _, _, s in leaves]
    self.spec = self._nest([_leaf_spec(s) for _, _, s in leaves])

  def _nest(self, leaves: Sequence[Any]) -> Any:
    if self.paths == [()]:
      return leaves[0]
    out: Dict[str, Any] = {}
    for path, leaf in zip(self.paths, leaves):
      node = out
      for key in path[:-1]:
        node = node.setdefault(key, {})
      node[path[-1]] = leaf
    return out

  def flatten(self, value: Any) -> List[Any]:
    """The leaf values of one value of the space (Tuple values as tuples, Dict as dicts)."""
    out = []
    for index in self._indices:
      node = value
      for key in index:
        node = node[key]
      out.append(node)
    return out

  def stack(self, rows: Sequence[Sequence[Any]]) -> List[np.ndarray]:
    """``[T, ...]`` columns from ``T`` flattened values, in the leaves' dtypes."""
    columns = []
    for index, dtype in enumerate(self.dtypes):
      column = [row[index] for row in rows]
      if dtype.kind == 'O':
        columns.append(text_column(column))
      else:
        columns.append(np.asarray(column, dtype=dtype))
    return columns

  def unflatten(self, columns: Sequence[Any]) -> Any:
    """The nest (dicts) of the space's shape from its leaf columns."""
    return self._nest(columns)
