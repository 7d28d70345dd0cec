"""rlds_lite.view.table_query: named cases of filters, sorting and paging."""

import numpy as np
import pytest

from rlds_lite.view import episode_table
from rlds_lite.view import table_query

# index:        0       1        2       3        4       5
LENGTHS = [5, 2, 9, 5, 1, 7]
RETURNS = [1.0, np.nan, -3.0, 1.0, 0.0, 2.5]
TERMINATED = [True, False, False, True, False, True]
INSTRUCTIONS = [['Pick the cup'], [], ['place it'], ['pick'], ['Pick', 'place'],
                ['wipe']]
IDS = [10, 11, 12, 13, 14, 15]


@pytest.fixture(name='table')
def _table():
  return episode_table.EpisodeTable(
      'train', np.array(LENGTHS), np.array(RETURNS), np.array(TERMINATED),
      INSTRUCTIONS, {'episode_id': IDS, 'operator': ['b', 'a', None, 'a',
                                                     'c', 'b']})


CASES = {
    'default: index order': ({}, [0, 1, 2, 3, 4, 5]),
    'length ascending, ties by index': ({'sort': 'length'}, [4, 1, 0, 3, 5, 2]),
    'length descending, ties by index': (
        {'sort': 'length', 'descending': True}, [2, 5, 0, 3, 1, 4]),
    'return ascending, NaN last': ({'sort': 'return'}, [2, 4, 0, 3, 5, 1]),
    'return descending, NaN still last': (
        {'sort': 'return', 'descending': True}, [5, 0, 3, 4, 2, 1]),
    'status (terminated first)': ({'sort': 'status'}, [0, 3, 5, 1, 2, 4]),
    'instruction text, case-insensitive, none last': (
        {'sort': 'instruction'}, [3, 0, 4, 2, 5, 1]),
    'metadata column, None last': ({'sort': 'operator'}, [1, 3, 0, 5, 4, 2]),
    'min length': ({'min_length': 5}, [0, 2, 3, 5]),
    'length range': ({'min_length': 2, 'max_length': 5}, [0, 1, 3]),
    'return range drops NaN': ({'min_return': 0.0, 'max_return': 1.0},
                               [0, 3, 4]),
    'max return only': ({'max_return': 0.0}, [2, 4]),
    'terminated': ({'status': 'terminated'}, [0, 3, 5]),
    'truncated': ({'status': 'truncated'}, [1, 2, 4]),
    'instruction, case-insensitive substring': ({'instruction': 'PICK'},
                                                [0, 3, 4]),
    'instruction matches any of several': ({'instruction': 'plac'}, [2, 4]),
    'filters combine': ({'instruction': 'pick', 'status': 'terminated',
                         'sort': 'length', 'descending': True}, [0, 3]),
    'nothing matches': ({'min_length': 100}, []),
    'page': ({'sort': 'length', 'offset': 2, 'limit': 3}, [0, 3, 5]),
    'page past the end': ({'offset': 10}, []),
}


@pytest.mark.parametrize('kwargs, expected', CASES.values(), ids=CASES.keys())
def test_query_cases(table, kwargs, expected):
  page = table_query.query(table, **kwargs)
  assert [row['index'] for row in page['rows']] == expected
  assert page['total'] == 6


def test_matched_counts_all_pages(table):
  page = table_query.query(table, status='truncated', limit=1)
  assert page['matched'] == 3 and len(page['rows']) == 1


def test_row_values(table):
  rows = table_query.query(table)['rows']
  assert rows[1] == {'index': 1, 'length': 2, 'return': None,
                     'terminated': False, 'truncated': True,
                     'instructions': [],
                     'metadata': {'episode_id': 11, 'operator': 'a'}}
  assert rows[0]['return'] == 1.0 and rows[0]['terminated'] is True


def test_columns_list_metadata(table):
  assert table_query.query(table)['columns'] == [
      'index', 'length', 'return', 'status', 'instruction', 'episode_id',
      'operator']


def test_no_returns_column():
  table = episode_table.EpisodeTable('train', np.array([3, 1]), None,
                                     np.array([False, True]), [[], []], {})
  assert [r['index'] for r in table_query.query(
      table, sort='return', descending=True)['rows']] == [0, 1]
  assert table_query.query(table, min_return=0)['matched'] == 0


def test_limit_is_capped(table):
  assert table_query.query(table, limit=10**6)['limit'] == table_query.MAX_LIMIT


@pytest.mark.parametrize('kwargs, error, message', [
    ({'sort': 'colour'}, KeyError, "unknown column 'colour'"),
    ({'status': 'done'}, ValueError, "status must be one of"),
    ({'offset': -1}, ValueError, 'must be >= 0'),
])
def test_bad_queries(table, kwargs, error, message):
  with pytest.raises(error, match=message):
    table_query.query(table, **kwargs)
