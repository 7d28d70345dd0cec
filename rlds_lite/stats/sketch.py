"""A mergeable, bounded-memory quantile sketch, vectorised over dimensions.

`QuantileSketch` summarises a stream of ``[n, *shape]`` rows, every element
of ``shape`` with its own quantiles, all updated at once with NumPy (a
compactor sketch of the KLL family). Its deterministic rank-error bound,
``rank_error``, and how non-finite values are held: docs/stats.md.

Example:
  >>> import numpy as np
  >>> sketch = QuantileSketch(k=64)
  >>> sketch.update(np.arange(1000.0))
  >>> sketch.count, sketch.rank_error <= 1000 * sketch.levels / 128
  (1000, True)
  >>> abs(float(sketch.quantile(0.5)) - 500) <= sketch.rank_error + 1
  True
"""

import base64
from typing import Any, Dict, Sequence, Tuple, Union

import numpy as np

DEFAULT_K = 256
"""Default capacity: worst-case rank error ``levels / 512`` of the count."""


_EXACT_IN_FLOAT32 = ('float32', 'float16', 'bfloat16', 'bool', 'int8', 'uint8',
                     'int16', 'uint16')


def holding_dtype(dtype: str) -> type:
  """float32 if every value of ``dtype`` is exact in float32, else float64.

  Example:
    >>> holding_dtype('float32').__name__, holding_dtype('int32').__name__
    ('float32', 'float64')
  """
  return np.float32 if dtype in _EXACT_IN_FLOAT32 else np.float64


def _offset(seed: int, compaction: int) -> int:
  """The pseudo-random start (0 or 1) of the ``compaction``-th compaction."""
  return int(np.random.default_rng([seed, compaction]).integers(2))


def _encode(array: np.ndarray) -> str:
  return base64.b64encode(
      np.ascontiguousarray(array, '<f8').tobytes()).decode('ascii')


def _decode(text: str, dim: int) -> np.ndarray:
  return np.frombuffer(base64.b64decode(text), '<f8').reshape(dim, -1).copy()


class QuantileSketch:
  """Approximate quantiles of every element of ``[n, *shape]`` rows.

  Args:
    shape: the shape of one row (``()`` for scalars).
    k: capacity per level; larger is more accurate and uses more memory.
    seed: seed of the compaction offsets (results are deterministic).
    dtype: how values are held: float64, or float32 (half the memory and
      faster) when every value is exact in float32 (float32/16 data, small
      integers, bools).

  Example:
    >>> s = QuantileSketch(shape=(2,), k=8)
    >>> s.update([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]])
    >>> s.quantile([0.0, 0.5, 1.0]).tolist()
    [[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]]
  """

  def __init__(self, shape: Sequence[int] = (), k: int = DEFAULT_K,
               seed: int = 0, dtype: Any = np.float64):
    if k < 2:
      raise ValueError(f'QuantileSketch: k must be at least 2, got {k}.')
    self.shape = tuple(int(d) for d in shape)
    self.dim = int(np.prod(self.shape, dtype=np.int64))
    self.k = int(k)
    self.seed = int(seed)
    self.dtype = np.dtype(dtype)
    if self.dtype not in (np.float32, np.float64):
      raise ValueError(
          f'QuantileSketch: dtype must be float32 or float64, got {dtype}.')
    self.count = 0
    self.nonfinite = np.zeros(self.dim, np.int64)  # Per dimension.
    self.rank_error = 0
    self.compactions = 0
    self._levels = []  # Level h: [dim, n_h] (each dimension contiguous).

  @property
  def levels(self) -> int:
    """The number of levels (values at level ``h`` weigh ``2**h``)."""
    return len(self._levels)

  @property
  def size(self) -> int:
    """How many values (per dimension) the sketch holds."""
    return sum(level.shape[1] for level in self._levels)

  def update(self, values: Any) -> None:
    """Adds ``[n, *shape]`` rows (non-finite values: see the module doc)."""
    rows = np.asarray(values, self.dtype)
    if rows.shape[1:] != self.shape:
      raise ValueError(
          f'QuantileSketch.update: rows of shape {rows.shape[1:]}, the sketch '
          f'has shape {self.shape}.')
    columns = rows.reshape(-1, self.dim).T
    if not columns.shape[1]:
      return
    finite = np.isfinite(columns)
    if not finite.all():
      columns = np.where(finite, columns, np.nan).astype(self.dtype)
      self.nonfinite += (~finite).sum(axis=1)
    self._add(0, columns)
    self.count += columns.shape[1]
    self._compress()

  def merge(self, other: 'QuantileSketch') -> 'QuantileSketch':
    """Adds the values summarised by ``other`` (in place); returns self."""
    if (other.shape, other.k) != (self.shape, self.k):
      raise ValueError(
          'QuantileSketch.merge: sketches differ in shape or k: '
          f'{(self.shape, self.k)} vs {(other.shape, other.k)}.')
    for h, level in enumerate(other._levels):  # pylint: disable=protected-access
      self._add(h, level)
    self.count += other.count
    self.nonfinite = self.nonfinite + other.nonfinite
    self.rank_error += other.rank_error
    self.compactions += other.compactions
    self._compress()
    return self

  def copy(self) -> 'QuantileSketch':
    twin = QuantileSketch(self.shape, self.k, self.seed, self.dtype)
    return twin.merge(self)

  def _add(self, h: int, columns: np.ndarray) -> None:
    while len(self._levels) <= h:
      self._levels.append(np.zeros((self.dim, 0), self.dtype))
    if columns.shape[1]:
      self._levels[h] = np.concatenate(
          [self._levels[h], columns.astype(self.dtype, copy=False)], axis=1)

  def _compress(self) -> None:
    h = 0
    while h < len(self._levels):
      level = self._levels[h]
      if level.shape[1] >= 2 * self.k:
        level = np.sort(level, axis=1, kind="stable" if h else "quicksort")
        even = level.shape[1] - level.shape[1] % 2
        start = _offset(self.seed, self.compactions)
        self.compactions += 1
        self.rank_error += 2**h
        picked = level[:, start:even:2]
        if start:  # NaN sort last: a lone finite value is at index 0.
          lone = np.isfinite(level[:, 0]) & np.isnan(level[:, 1])
          if lone.any():  # Keep it (offset 0 there; the same bound).
            picked = np.where(lone[:, None], level[:, 0:even:2], picked)
        self._levels[h] = level[:, even:].copy()  # Not a view of it all.
        self._add(h + 1, picked)
      h += 1

  def samples(self) -> Tuple[np.ndarray, np.ndarray]:
    """The held values ``[m, dim]`` and their weights ``[m]``.

    Non-finite values are held as NaN (see the module doc).
    """
    if not self._levels:
      return np.zeros((0, self.dim)), np.zeros((0,))
    values = np.concatenate(self._levels, axis=1).T.astype(np.float64)
    weights = np.concatenate([np.full(level.shape[1], 2.0**h)
                              for h, level in enumerate(self._levels)])
    return values, weights

  def quantile(self, q: Union[float, Sequence[float]]) -> np.ndarray:
    """Quantiles ``[len(q), *shape]`` (or ``shape`` for a scalar ``q``).

    The smallest held value whose estimated rank reaches ``q * n`` (the
    ``inverted_cdf`` definition), ``n`` the dimension's finite count; NaN
    where a dimension has no finite value (or the sketch is empty).
    """
    qs = np.atleast_1d(np.asarray(q, np.float64))
    if np.any((qs < 0) | (qs > 1)):
      raise ValueError(f'QuantileSketch.quantile: q must be in [0, 1], got {q}.')
    finite_count = self.count - self.nonfinite  # [dim]
    if not finite_count.any():
      out = np.full((len(qs), self.dim), np.nan)
    else:
      values, weights = self.samples()
      order = np.argsort(values, axis=0, kind='stable')  # NaN last.
      ranks = np.cumsum(weights[order], axis=0)  # [m, dim]
      sorted_values = np.take_along_axis(values, order, axis=0)
      targets = qs[:, None] * finite_count[None, :]  # [q, dim]
      index = (ranks[None, :, :] < targets[:, None, :]).sum(axis=1)
      held = (~np.isnan(values)).sum(axis=0)  # Finite values held, [dim].
      index = np.minimum(index, np.maximum(held - 1, 0))
      out = np.take_along_axis(sorted_values, index, axis=0)
      out[:, held == 0] = np.nan
    out = out.reshape((len(qs),) + self.shape)
    return out if np.ndim(q) else out[0]

  def to_dict(self) -> Dict[str, Any]:
    """A JSON-serialisable dict (values as base64 little-endian float64)."""
    return {'shape': list(self.shape), 'k': self.k, 'seed': self.seed,
            'dtype': self.dtype.name,
            'count': self.count, 'nonfinite': self.nonfinite.tolist(),
            'rank_error': self.rank_error,
            'compactions': self.compactions,
            'levels': [_encode(level) for level in self._levels]}

  @classmethod
  def from_dict(cls, data: Dict[str, Any]) -> 'QuantileSketch':
    """The sketch of ``to_dict``.

    Example:
      >>> s = QuantileSketch(k=4); s.update(np.arange(20.0))
      >>> t = QuantileSketch.from_dict(s.to_dict())
      >>> bool(t.quantile(0.5) == s.quantile(0.5)), t.rank_error == s.rank_error
      (True, True)
    """
    sketch = cls(data['shape'], data['k'], data['seed'],
                 data.get('dtype', 'float64'))
    sketch.count = int(data['count'])
    sketch.nonfinite = np.asarray(
        data.get('nonfinite', [0] * sketch.dim), np.int64).reshape(sketch.dim)
    sketch.rank_error = int(data['rank_error'])
    sketch.compactions = int(data['compactions'])
    sketch._levels = [_decode(t, sketch.dim).astype(sketch.dtype)
                      for t in data['levels']]  # pylint: disable=protected-access
    return sketch

  def __repr__(self) -> str:
    return (f'QuantileSketch(shape={self.shape}, k={self.k}, '
            f'count={self.count}, levels={self.levels}, '
            f'rank_error={self.rank_error}'
            + (f', nonfinite={int(self.nonfinite.sum())}'
               if self.nonfinite.any() else '') + ')')
