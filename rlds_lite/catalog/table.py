"""`Catalog`: a small table with one row per episode, as NumPy columns."""

import io
import json
import math
import os
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from rlds_lite import nesting
from rlds_lite.catalog import expression as expression_lib

__all__ = ['Catalog']

Where = Union[str, expression_lib.Expression, Callable[[Dict[str, Any]], Any],
              np.ndarray, Sequence[bool]]

_NPZ_FORMAT = 1
_MAX_CELL = 40


def _python_value(value: Any) -> Any:
  """A JSON-ready Python value of a cell (NaN/inf -> None, tuples -> lists)."""
  if isinstance(value, tuple):
    return [_python_value(v) for v in value]
  if isinstance(value, np.ndarray):
    return [_python_value(v) for v in value.tolist()]
  if isinstance(value, np.generic):
    value = value.item()
  if isinstance(value, float) and not math.isfinite(value):
    return None
  if isinstance(value, list):
    return [_python_value(v) for v in value]
  return value


def _as_column(name: str, values: Any) -> np.ndarray:
  if isinstance(values, np.ndarray) and values.dtype == object:
    return values
  array = np.asarray(values)
  if array.dtype == object:  # Tuples of strings: keep them as objects.
    column = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
      column[i] = tuple(value)
    return column
  if array.ndim == 0:
    raise ValueError(f'Catalog: column {name!r} is a scalar, not a column.')
  return array


def _cell_text(value: Any) -> str:
  if isinstance(value, tuple):
    text = ' | '.join(value)
  elif isinstance(value, (float, np.floating)):
    text = f'{value:.4g}'
  elif isinstance(value, np.ndarray):
    text = '[' + ', '.join(_cell_text(v) for v in value) + ']'
  else:
    text = str(value)
  text = text.replace('\n', ' ')
  return text if len(text) <= _MAX_CELL else text[:_MAX_CELL - 3] + '...'


class Catalog:
  """One row per episode; columns are 1-D NumPy arrays of equal length.

  A column is named by its full path (``episode_metadata/success``) or a unique last part.

  Args:
    columns: column name -> values (several strings per row as tuples).
    info: what the catalog describes (dataset, split, ...); JSON-ready.

  Example:
    >>> catalog = Catalog({'index': np.arange(3), 'length': np.array([12, 40, 25]),
    ...                    'episode_metadata/success': np.array([True, False, True])})
    >>> catalog
    Catalog(3 episodes; columns: index, length, episode_metadata/success)
    >>> catalog.select('success and length > 20')['index'].tolist()
    [2]
  """

  def __init__(self, columns: Mapping[str, Any],
               info: Optional[Mapping[str, Any]] = None):
    self._columns = {name: _as_column(name, values)
                     for name, values in columns.items()}
    lengths = {name: len(values) for name, values in self._columns.items()}
    if len(set(lengths.values())) > 1:
      raise ValueError(f'Catalog: columns differ in length: {lengths}.')
    self._size = next(iter(lengths.values())) if lengths else 0
    self._info = dict(info or {})

  # Columns.
  @property
  def columns(self) -> Tuple[str, ...]:
    """The column names, in order.

    Example:
      >>> Catalog({'index': [0], 'length': [3]}).columns
      ('index', 'length')
    """
    return tuple(self._columns)

  @property
  def info(self) -> Dict[str, Any]:
    """What the catalog describes (dataset, split, column sources, ...).

    Example:
      >>> Catalog({'index': [0]}, {'split': 'train'}).info
      {'split': 'train'}
    """
    return dict(self._info)

  def resolve(self, name: str) -> str:
    """The full name of column ``name`` (exact, or a unique last part); else a KeyError.

    Example:
      >>> Catalog({'episode_metadata/success': [True]}).resolve('success')
      'episode_metadata/success'
    """
    if name in self._columns:
      return name
    matches = [c for c in self._columns if c.endswith('/' + name)]
    if len(matches) == 1:
      return matches[0]
    if matches:
      raise KeyError(f'column {name!r} is ambiguous: {", ".join(matches)}.')
    raise KeyError(f'no column {name!r} (columns: {", ".join(self._columns)}).')

  def column(self, name: str) -> np.ndarray:
    """The column ``name`` (see `resolve`).

    Example:
      >>> Catalog({'episode_metadata/scene': [2, 5]}).column('scene').tolist()
      [2, 5]
    """
    return self._columns[self.resolve(name)]

  def __getitem__(self, name: str) -> np.ndarray:
    return self.column(name)

  def __contains__(self, name: str) -> bool:
    try:
      self.resolve(name)
    except KeyError:
      return False
    return True

  def __len__(self) -> int:
    return self._size

  @property
  def indices(self) -> np.ndarray:
    """The ``index`` column: each episode's position in its split.

    Example:
      >>> Catalog({'index': [4, 9], 'length': [1, 2]}).indices.tolist()
      [4, 9]
    """
    return self.column('index')

  # Rows.
  def row(self, position: int) -> Dict[str, Any]:
    """Row ``position`` (not the episode index) as a dict of Python values.

    Example:
      >>> Catalog({'index': [4, 9], 'return': [1.5, float('nan')]}).row(1)
      {'index': 9, 'return': None}
    """
    if not -self._size <= position < self._size:
      raise IndexError(f'Catalog: row {position} of {self._size}.')
    return {name: _python_value(values[position])
            for name, values in self._columns.items()}

  def __iter__(self) -> Iterator[Dict[str, Any]]:
    for position in range(self._size):
      yield self.row(position)

  def to_records(self) -> List[Dict[str, Any]]:
    """The rows as JSON-ready dicts (tuples become lists, NaN becomes None).

    Example:
      >>> tasks = np.empty(1, dtype=object)
      >>> tasks[0] = ('pick', 'place')
      >>> Catalog({'index': [0], 'task': tasks}).to_records()
      [{'index': 0, 'task': ['pick', 'place']}]
    """
    names = list(self._columns)
    lists = [[_python_value(v) for v in self._columns[name].tolist()]
             if self._columns[name].dtype != object else
             [list(v) for v in self._columns[name]] for name in names]
    return [dict(zip(names, values)) for values in zip(*lists)]

  def to_json(self, **kwargs: Any) -> str:
    """`to_records` as JSON text (``json.dumps`` keyword arguments apply).

    Example:
      >>> Catalog({'index': [0], 'ok': [True]}).to_json()
      '[{"index": 0, "ok": true}]'
    """
    return json.dumps(self.to_records(), **kwargs)

  # Selection.
  def take(self, positions: Union[Sequence[int], np.ndarray]) -> 'Catalog':
    """The rows at ``positions`` (row positions, in that order).

    Example:
      >>> Catalog({'index': [4, 9, 7]}).take([2, 0])['index'].tolist()
      [7, 4]
    """
    positions = np.asarray(positions, dtype=np.int64)
    return Catalog({name: values[positions]
                    for name, values in self._columns.items()}, self._info)

  def mask(self, where: Where) -> np.ndarray:
    """The boolean mask of the rows matching ``where`` (see `select`).

    Example:
      >>> Catalog({'length': [3, 30]}).mask('length > 10').tolist()
      [False, True]
    """
    if isinstance(where, (str, expression_lib.Expression)):
      parsed = expression_lib.parse(where)
      columns = {}
      for name in expression_lib.column_names(parsed):
        try:
          columns[name] = self.column(name)
        except KeyError as e:
          raise expression_lib.ExpressionError(
              f'EXPR {parsed.text!r}: {e.args[0]}') from None
      if not columns:  # Constant expressions still need the row count.
        columns = {'index': np.zeros(self._size)}
      return expression_lib.evaluate(parsed, columns)
    if callable(where):
      return np.fromiter((bool(where(row)) for row in self), bool,
                         count=self._size)
    mask = np.asarray(where)
    if mask.dtype != bool or mask.shape != (self._size,):
      raise ValueError(f'Catalog.select: a mask must be {self._size} booleans, '
                       f'got {mask.dtype} {list(mask.shape)}.')
    return mask

  def select(self, where: Where) -> 'Catalog':
    """The rows matching ``where`` (an EXPR, a function of a row, or a mask), in order.

    Example:
      >>> c = Catalog({'index': [0, 1, 2], 'task': ['pick', 'place', 'pick']})
      >>> c.select("task == 'pick'")['index'].tolist()
      [0, 2]
      >>> c.select(lambda row: row['index'] > 0)['index'].tolist()
      [1, 2]
    """
    return self.take(np.flatnonzero(self.mask(where)))

  def sort(self, key: str, descending: bool = False) -> 'Catalog':
    """The rows sorted by column ``key`` (stable; NaN last either way).

    Example:
      >>> c = Catalog({'index': [0, 1, 2], 'return': [1.0, float('nan'), 3.0]})
      >>> c.sort('return', descending=True)['index'].tolist()
      [2, 0, 1]
    """
    try:
      values = self.column(key)
    except KeyError as e:
      raise KeyError(f'Catalog.sort: {e.args[0]}') from None
    if values.ndim != 1:
      raise ValueError(f'Catalog.sort: column {key!r} holds vectors; sort by a '
                       'column of scalars.')
    if values.dtype == object:
      order = sorted(range(self._size), key=lambda i: values[i],
                     reverse=descending)
      return self.take(order)
    missing = (np.isnan(values) if values.dtype.kind == 'f'
               else np.zeros(self._size, bool))
    present = np.flatnonzero(~missing)
    kept = values[present]
    if descending:  # Stable: equal values keep their order.
      order = present[::-1][np.argsort(kept[::-1], kind='stable')][::-1]
    else:
      order = present[np.argsort(kept, kind='stable')]
    return self.take(np.concatenate([order, np.flatnonzero(missing)]))

  def head(self, n: int = 10) -> 'Catalog':
    """The first ``n`` rows.

    Example:
      >>> len(Catalog({'index': range(50)}).head(10))
      10
    """
    return self.take(np.arange(min(n, self._size)))

  # Text.
  def table(self, columns: Optional[Sequence[str]] = None,
            max_rows: Optional[int] = None) -> str:
    """The rows as an aligned text table (long cells cut at 40 characters).

    Example:
      >>> print(Catalog({'index': [0, 1], 'length': [3, 12]}).table())
      index  length
          0       3
          1      12
    """
    names = [self.resolve(c) for c in columns] if columns else list(
        self._columns)
    shown = self._size if max_rows is None else min(max_rows, self._size)
    cells = [[_cell_text(self._columns[name][i]) for name in names]
             for i in range(shown)]
    widths = [max([len(name)] + [len(row[j]) for row in cells])
              for j, name in enumerate(names)]
    right = [self._columns[name].dtype.kind in 'iuf' for name in names]

    def line(values):
      parts = [v.rjust(w) if r else v.ljust(w)
               for v, w, r in zip(values, widths, right)]
      return '  '.join(parts).rstrip()

    lines = [line(names)] + [line(row) for row in cells]
    if shown < self._size:
      lines.append(f'... {self._size - shown} more rows')
    return '\n'.join(lines)

  def __repr__(self) -> str:
    where = self._info.get('dataset')
    split = self._info.get('split')
    source = f' of {where!r} split {split!r}' if where else ''
    return (f'Catalog({self._size} episodes{source}; columns: '
            f'{", ".join(self._columns)})')

  # Storage (no pickle).
  def save(self, file: Union[str, os.PathLike, io.IOBase]) -> None:
    """Writes the catalog as pickle-free ``.npz``; `read` restores the columns exactly.

    Example:
      >>> import os, tempfile
      >>> path = os.path.join(tempfile.mkdtemp(), 'catalog.npz')
      >>> Catalog({'index': [0, 1]}).save(path)
      >>> Catalog.read(path)['index'].tolist()
      [0, 1]
    """
    arrays: Dict[str, np.ndarray] = {}
    layout = []
    for i, (name, values) in enumerate(self._columns.items()):
      key = f'c{i}'
      if values.dtype == object:
        counts = np.array([len(v) for v in values], np.int64)
        flat = [s for v in values for s in v]
        arrays[f'{key}_rows'] = np.concatenate([[0], np.cumsum(counts)])
        _put_strings(arrays, key, flat)
        layout.append([name, 'strings'])
      elif values.dtype.kind in 'US':
        _put_strings(arrays, key, values.tolist())
        layout.append([name, 'string'])
      else:
        arrays[key] = values
        layout.append([name, 'array'])
    header = {'format': _NPZ_FORMAT, 'columns': layout, 'size': self._size,
              'info': self._info}
    arrays['header'] = np.frombuffer(json.dumps(header).encode(), np.uint8)
    np.savez_compressed(file, **arrays)

  @classmethod
  def read(cls, file: Union[str, os.PathLike, io.IOBase]) -> 'Catalog':
    """Reads a catalog written by `save` (no pickle).

    Example:
      >>> import io
      >>> buffer = io.BytesIO()
      >>> Catalog({'task': np.array([('a', 'b'), ('c',)], dtype=object),
      ...          'name': ['x', 'é']}).save(buffer)
      >>> _ = buffer.seek(0)
      >>> Catalog.read(buffer).to_records()
      [{'task': ['a', 'b'], 'name': 'x'}, {'task': ['c'], 'name': 'é'}]
    """
    with np.load(file, allow_pickle=False) as data:
      header = nesting.loads(bytes(data['header']).decode())
      if header.get('format') != _NPZ_FORMAT:
        raise ValueError(f'Catalog.read: unknown format {header.get("format")}.')
      columns = {}
      for i, (name, kind) in enumerate(header['columns']):
        key = f'c{i}'
        if kind == 'array':
          columns[name] = data[key]
        elif kind == 'string':
          columns[name] = np.array(_get_strings(data, key), dtype=str) if (
              header['size']) else np.array([], dtype=str)
        else:
          strings = _get_strings(data, key)
          rows = data[f'{key}_rows']
          column = np.empty(len(rows) - 1, dtype=object)
          for j in range(len(rows) - 1):
            column[j] = tuple(strings[rows[j]:rows[j + 1]])
          columns[name] = column
    return cls(columns, header.get('info'))


def _put_strings(arrays: Dict[str, np.ndarray], key: str,
                 strings: Sequence[str]) -> None:
  encoded = [s.encode('utf-8', 'surrogatepass') for s in strings]
  arrays[f'{key}_bytes'] = np.frombuffer(b''.join(encoded), np.uint8)
  arrays[f'{key}_ends'] = np.cumsum([len(b) for b in encoded], dtype=np.int64)


def _get_strings(data: Any, key: str) -> List[str]:
  raw = data[f'{key}_bytes'].tobytes()
  ends = data[f'{key}_ends'].tolist()
  starts = [0] + ends[:-1]
  return [raw[a:b].decode('utf-8', 'surrogatepass')
          for a, b in zip(starts, ends)]
