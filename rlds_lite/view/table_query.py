"""Filter, sort and page a split's episode catalog (what the viewer's table shows).

Example:
  >>> import numpy as np
  >>> from rlds_lite.catalog import Catalog
  >>> tasks = np.array([('pick',), ('place', 'wipe'), ('pick',)], dtype=object)
  >>> catalog = Catalog({'index': [0, 1, 2], 'length': [3, 5, 4],
  ...                    'return': [1.0, -2.0, 0.5],
  ...                    'terminated': [True, False, True],
  ...                    'truncated': [False, True, False],
  ...                    'language_instruction': tasks},
  ...                   {'language': ['language_instruction']})
  >>> page = query(catalog, Query(sort='return', descending=True,
  ...                             status='terminated'))
  >>> page['matched'], [row['index'] for row in page['rows']]
  (2, [0, 2])
  >>> page['rows'][1]['instructions'], page['columns']
  (['pick'], ['index', 'length', 'return', 'status', 'instruction'])
"""

import dataclasses
import math
from typing import Any, Dict, List, Optional, Union

import numpy as np

from rlds_lite import option_objects
from rlds_lite.catalog import build
from rlds_lite.catalog import table as table_lib

STATUSES = ('terminated', 'truncated')
BUILT_IN_COLUMNS = ('index', 'length', 'return', 'last_reward', 'status',
                    'instruction')
MAX_LIMIT = 1000
_NOT_METADATA = frozenset(('index', 'length', 'return', 'last_reward',
                           'terminated', 'truncated', 'shard', 'record'))


def _language_columns(catalog: table_lib.Catalog) -> List[str]:
  step = [c for c in catalog.info.get('language', []) if c in catalog.columns]
  episode = [c for c in metadata_columns(catalog)
             if catalog.column(c).dtype.kind == 'U' and
             build.is_language_name(c)]
  return step + episode


def metadata_columns(catalog: table_lib.Catalog) -> List[str]:
  """``episode_id`` and the scalar episode fields, in catalog order.

  Example:
    >>> metadata_columns(table_lib.Catalog(
    ...     {'index': [0], 'episode_id': [7], 'length': [2], 'scene': [1],
    ...      'shard': ['a'], 'record': [0]}))
    ['episode_id', 'scene']
  """
  language = set(catalog.info.get('language', []))
  return [c for c in catalog.columns
          if c not in _NOT_METADATA and c not in language]


def instructions(catalog: table_lib.Catalog) -> List[List[str]]:
  """Each episode's distinct non-empty instructions (see the module doc).

  Example:
    >>> tasks = np.array([('a', ''), ()], dtype=object)
    >>> instructions(table_lib.Catalog({'task': tasks,
    ...                                 'episode_metadata/prompt': ['a', 'b']},
    ...                                {'language': ['task']}))
    [['a'], ['b']]
  """
  columns = [catalog.column(c) for c in _language_columns(catalog)]
  rows = []
  for i in range(len(catalog)):
    texts = []
    for column in columns:
      value = column[i]
      texts.extend(value if isinstance(value, tuple) else [str(value)])
    rows.append(list(dict.fromkeys(t for t in texts if t)))
  return rows


def _per_episode(catalog: table_lib.Catalog, name: str) -> Optional[np.ndarray]:
  """A float column summed over its elements (vector rewards); None if absent."""
  if name not in catalog.columns:
    return None
  values = np.asarray(catalog.column(name), np.float64)
  return values.reshape(len(values), -1).sum(axis=1)


def _status(catalog: table_lib.Catalog) -> np.ndarray:
  status = np.full(len(catalog), None, object)
  if 'terminated' in catalog.columns:
    status[catalog.column('terminated')] = 'terminated'
    status[catalog.column('truncated')] = 'truncated'
  return status


def _json_number(value: float) -> Optional[float]:
  return float(value) if math.isfinite(value) else None


def _cell(value: Any) -> Any:
  if isinstance(value, np.generic):
    value = value.item()
  if isinstance(value, float) and not math.isfinite(value):
    return None
  return value


class TableView:
  """A catalog's columns as the table shows them, derived once (one per split)."""

  def __init__(self, catalog: table_lib.Catalog):
    n = len(catalog)
    self.catalog = catalog
    self.index = np.asarray(catalog.column('index'), np.int64)
    self.length = np.asarray(catalog.column('length'), np.int64)
    self.returns = _per_episode(catalog, 'return')
    self.last_reward = _per_episode(catalog, 'last_reward')
    self.status = _status(catalog)
    self.ending = ({name: np.asarray(catalog.column(name), bool)
                    for name in ('terminated', 'truncated')}
                   if 'terminated' in catalog.columns else None)
    self.instructions = instructions(catalog)
    self.metadata = metadata_columns(catalog)
    self.left_out = build.left_out_last_rewards(catalog)
    self.columns = (['index', 'length', 'return'] +
                    (['last_reward'] if self.left_out else []) +
                    ['status', 'instruction'] + self.metadata)
    self.size = n

  def sort_values(self, column: str) -> np.ndarray:
    """The values ``column`` sorts by (object array; None = missing)."""
    if column == 'index':
      return self.index
    if column == 'length':
      return self.length
    if column in ('return', 'last_reward'):
      values = self.returns if column == 'return' else self.last_reward
      if values is None:
        return np.full(self.size, None, object)
      return np.asarray([_json_number(v) for v in values], object)
    if column == 'status':
      return self.status
    if column == 'instruction':
      return np.asarray([' | '.join(t) if t else None
                         for t in self.instructions], object)
    if column in self.metadata:
      return np.asarray([_cell(v) for v in self.catalog.column(column)],
                        object)
    raise KeyError(f'unknown column {column!r}; columns: {self.columns}.')

  def row(self, i: int) -> Dict[str, Any]:
    ending = self.ending
    return {
        'index': int(self.index[i]), 'length': int(self.length[i]),
        'return': (None if self.returns is None
                   else _json_number(self.returns[i])),
        'last_reward': (None if self.last_reward is None
                        else _json_number(self.last_reward[i])),
        'terminated': None if ending is None else bool(ending['terminated'][i]),
        'truncated': None if ending is None else bool(ending['truncated'][i]),
        'instructions': self.instructions[i],
        'metadata': {c: _cell(self.catalog.column(c)[i])
                     for c in self.metadata}}


def _order(values: np.ndarray, rows: np.ndarray, descending: bool) -> np.ndarray:
  """``rows`` sorted by ``values[rows]``, ties by row, missing last, text case-insensitively."""
  picked = values[rows]
  missing = np.asarray([v is None for v in picked], bool)
  present = picked[~missing]
  rank = np.zeros(len(rows), np.int64)
  if len(present):
    kinds = {type(v) for v in present}
    if kinds == {str}:
      keys = np.asarray([v.lower() for v in present])
    else:
      keys = present.astype(str) if len(kinds) > 1 else present
    rank[~missing] = np.unique(keys, return_inverse=True)[1].reshape(-1)
  if descending:
    rank = -rank
  return rows[np.lexsort((rows, rank, missing))]


@dataclasses.dataclass(frozen=True)
class Query:
  """One table request: the filters, the sort and the page (the columns: docs/view.md).

  Attributes:
    sort: ``'index'``, ``'length'``, ``'return'``, ``'last_reward'``, ``'status'``,
      ``'instruction'`` or a metadata column (ties by index; missing values last).
    min_length, max_length, min_return, max_return: inclusive ranges kept.
    status: ``'terminated'`` or ``'truncated'`` (None: both).
    instruction: text an instruction contains (case-insensitive).
    where: an EXPR over the catalog's columns (docs/episodes.md).
    offset, limit: the page (``limit`` at most `MAX_LIMIT`).

  Example:
    >>> Query(status='truncated', limit=10)
    Query(status='truncated', limit=10)
  """
  sort: str = 'index'
  descending: bool = False
  min_length: Optional[int] = None
  max_length: Optional[int] = None
  min_return: Optional[float] = None
  max_return: Optional[float] = None
  status: Optional[str] = None
  instruction: Optional[str] = None
  where: Optional[str] = None
  offset: int = 0
  limit: int = 100

  def __post_init__(self):
    if self.status not in (None,) + STATUSES:
      raise ValueError(f'status must be one of {list(STATUSES)}, got '
                       f'{self.status!r}.')
    if self.offset < 0 or self.limit < 0:
      raise ValueError(f'offset and limit must be >= 0, got {self.offset}, '
                       f'{self.limit}.')

  def __repr__(self) -> str:
    return option_objects.short_repr(self)


_QUERY_FIELDS = frozenset(f.name for f in dataclasses.fields(Query))


def _request(request: Optional[Query], legacy: Dict[str, Any]) -> Query:
  """The `Query` of a call, from the flat keywords of before it too."""
  option_objects.check_keywords('query', legacy, _QUERY_FIELDS)
  return option_objects.knobs_object(Query, request, legacy, 'query',
                                       'query(table, Query(...))')


def _matching(view: TableView, request: Query) -> np.ndarray:
  """Which rows every filter of ``request`` keeps."""
  keep = np.ones(view.size, bool)
  if request.min_length is not None:
    keep &= view.length >= request.min_length
  if request.max_length is not None:
    keep &= view.length <= request.max_length
  low, high = request.min_return, request.max_return
  if low is not None or high is not None:
    returns = (view.returns if view.returns is not None
               else np.full(view.size, np.nan))
    with np.errstate(invalid='ignore'):
      if low is not None:
        keep &= returns >= low
      if high is not None:
        keep &= returns <= high
  if request.status is not None:
    keep &= view.status == request.status
  if request.instruction:
    needle = request.instruction.lower()
    keep &= np.asarray([any(needle in t.lower() for t in texts)
                        for texts in view.instructions], bool)
  if request.where:
    keep &= view.catalog.mask(request.where)
  return keep


def query(table: Union[table_lib.Catalog, TableView],
          request: Optional[Query] = None, **legacy: Any) -> Dict[str, Any]:
  """One page of the catalog's (or `TableView`'s) rows matching ``request``, sorted.

  ``**legacy`` takes the keywords of before `Query` (warns once). Returns ``{'total',
  'matched', 'offset', 'limit', 'columns', 'last_step', 'left_out_last_rewards', 'rows'}``.

  Example:
    >>> from rlds_lite.catalog import Catalog
    >>> catalog = Catalog({'index': [0, 1], 'length': [3, 5]})
    >>> [r['index'] for r in query(catalog, Query(min_length=4))['rows']]
    [1]
  """
  request = _request(request, legacy)
  view = table if isinstance(table, TableView) else TableView(table)
  limit = min(request.limit, MAX_LIMIT)
  rows = _order(view.sort_values(request.sort),
                np.flatnonzero(_matching(view, request)), request.descending)
  offset = request.offset
  return {'total': view.size, 'matched': int(len(rows)),
          'offset': offset, 'limit': limit, 'columns': view.columns,
          'last_step': view.catalog.info.get('last_step', 'invalid'),
          'left_out_last_rewards': view.left_out,
          'rows': [view.row(i) for i in rows[offset:offset + limit]]}
