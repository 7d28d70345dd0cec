"""Filter, sort and page an episode table (what the viewer's table shows).

`query` keeps the rows matching every filter given (length and return
ranges, terminated or truncated, a case-insensitive substring of the
language instructions), sorts them by a column (ties by episode index;
text case-insensitively; missing values, such as no return or no
instruction, last either way) and returns one page of JSON-ready rows.

Example:
  >>> import numpy as np
  >>> from rlds_lite.view.episode_table import EpisodeTable
  >>> table = EpisodeTable('train', np.array([3, 5, 4]),
  ...                      np.array([1.0, -2.0, 0.5]),
  ...                      np.array([True, False, True]),
  ...                      [['pick'], ['place'], ['pick']], {})
  >>> page = query(table, sort='return', descending=True, status='terminated')
  >>> page['matched'], [row['index'] for row in page['rows']]
  (2, [0, 2])
"""

import math
from typing import Any, Dict, Optional

import numpy as np

from rlds_lite.view import episode_table as table_lib

STATUSES = ('terminated', 'truncated')
BUILT_IN_COLUMNS = ('index', 'length', 'return', 'status', 'instruction')
MAX_LIMIT = 1000


def _sort_values(table: table_lib.EpisodeTable, column: str) -> np.ndarray:
  """The values ``column`` sorts by (object array; None = missing)."""
  n = table.num_episodes
  if column == 'index':
    return np.arange(n)
  if column == 'length':
    return table.length
  if column == 'return':
    if table.episode_return is None:
      return np.full(n, None, object)
    return np.asarray([None if math.isnan(r) else r
                       for r in table.episode_return], object)
  if column == 'status':
    return np.where(table.terminated, 'terminated', 'truncated')
  if column == 'instruction':
    return np.asarray([' | '.join(t) if t else None
                       for t in table.instructions], object)
  if column in table.metadata:
    return np.asarray(table.metadata[column], object)
  raise KeyError(f'unknown column {column!r}; columns: '
                 f'{list(BUILT_IN_COLUMNS) + sorted(table.metadata)}.')


def _order(values: np.ndarray, rows: np.ndarray, descending: bool) -> np.ndarray:
  """``rows`` sorted by ``values[rows]``, ties by row, missing values last.

  Text sorts case-insensitively; a column mixing types sorts as text.
  """
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


def _row(table: table_lib.EpisodeTable, i: int) -> Dict[str, Any]:
  episode_return = None
  if table.episode_return is not None and math.isfinite(
      table.episode_return[i]):
    episode_return = float(table.episode_return[i])
  return {'index': int(i), 'length': int(table.length[i]),
          'return': episode_return,
          'terminated': bool(table.terminated[i]),
          'truncated': not bool(table.terminated[i]),
          'instructions': table.instructions[i],
          'metadata': {k: v[i] for k, v in table.metadata.items()}}


def query(table: table_lib.EpisodeTable, *, sort: str = 'index',
          descending: bool = False, min_length: Optional[int] = None,
          max_length: Optional[int] = None, min_return: Optional[float] = None,
          max_return: Optional[float] = None, status: Optional[str] = None,
          instruction: Optional[str] = None, offset: int = 0,
          limit: int = 100) -> Dict[str, Any]:
  """One page of the table's rows matching the filters, sorted.

  Args:
    table: an `EpisodeTable`.
    sort: ``'index'``, ``'length'``, ``'return'``, ``'status'``,
      ``'instruction'`` or a metadata column.
    descending: sort in descending order.
    min_length, max_length: keep lengths in this range (inclusive).
    min_return, max_return: keep returns in this range (inclusive); an
      episode without a return never matches a return filter.
    status: ``'terminated'`` or ``'truncated'`` (None: both).
    instruction: keep episodes with an instruction containing this text
      (case-insensitive).
    offset, limit: the page (``limit`` at most 1000).

  Returns:
    ``{'total', 'matched', 'offset', 'limit', 'columns', 'rows'}``.

  Raises:
    KeyError: for an unknown sort column.
    ValueError: for an unknown status or a negative offset/limit.
  """
  if status not in (None,) + STATUSES:
    raise ValueError(f'status must be one of {list(STATUSES)}, got {status!r}.')
  if offset < 0 or limit < 0:
    raise ValueError(f'offset and limit must be >= 0, got {offset}, {limit}.')
  limit = min(limit, MAX_LIMIT)
  keep = np.ones(table.num_episodes, bool)
  if min_length is not None:
    keep &= table.length >= min_length
  if max_length is not None:
    keep &= table.length <= max_length
  if min_return is not None or max_return is not None:
    returns = (table.episode_return if table.episode_return is not None
               else np.full(table.num_episodes, np.nan))
    with np.errstate(invalid='ignore'):
      if min_return is not None:
        keep &= returns >= min_return
      if max_return is not None:
        keep &= returns <= max_return
  if status is not None:
    keep &= table.terminated if status == 'terminated' else table.truncated
  if instruction:
    needle = instruction.lower()
    keep &= np.asarray([any(needle in t.lower() for t in texts)
                        for texts in table.instructions], bool)
  rows = _order(_sort_values(table, sort), np.flatnonzero(keep), descending)
  return {'total': table.num_episodes, 'matched': int(len(rows)),
          'offset': offset, 'limit': limit,
          'columns': list(BUILT_IN_COLUMNS) + sorted(table.metadata),
          'rows': [_row(table, i) for i in rows[offset:offset + limit]]}
