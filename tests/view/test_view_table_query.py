"""rlds_lite.view.table_query: named cases of filters, sorting and paging.

The table is an episode catalog (`rlds_lite.catalog.Catalog`) with the
columns `rlds_lite.catalog.episodes` gives.
"""

import warnings

import numpy as np
import pytest

from rlds_lite.catalog import Catalog
from rlds_lite.view import table_query
from rlds_lite.view.table_query import Query
from rlds_lite import option_objects

# index:        0       1        2       3        4       5
LENGTHS = [5, 2, 9, 5, 1, 7]
RETURNS = [1.0, np.nan, -3.0, 1.0, 0.0, 2.5]
TERMINATED = [True, False, False, True, False, True]
INSTRUCTIONS = [['Pick the cup'], [], ['place it'], ['pick'], ['Pick', 'place'],
                ['wipe']]
LAST_REWARDS = [0.0, np.nan, 1.0, 0.0, 0.0, 0.0]
IDS = [10, 11, 12, 13, 14, 15]
OPERATORS = ['b', 'a', '', 'a', 'c', 'b']


def _strings(rows):
  column = np.empty(len(rows), dtype=object)
  column[:] = [tuple(r) for r in rows]
  return column


def _catalog(last_step='invalid', **columns):
  n = len(LENGTHS)
  base = {'index': np.arange(n), 'episode_id': np.array(IDS),
          'length': np.array(LENGTHS), 'return': np.array(RETURNS),
          'last_reward': np.array(LAST_REWARDS),
          'terminated': np.array(TERMINATED),
          'truncated': ~np.array(TERMINATED),
          'language_instruction': _strings(INSTRUCTIONS),
          'episode_metadata/operator': np.array(OPERATORS),
          'shard': np.array(['s-00000'] * n), 'record': np.arange(n)}
  base.update(columns)
  return Catalog({k: v for k, v in base.items() if v is not None},
                 {'language': ['language_instruction'],
                  'last_step': last_step})


@pytest.fixture(name='table')
def _table():
  return _catalog()


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
    'metadata column (text, case-insensitive)': (
        {'sort': 'episode_metadata/operator'}, [2, 1, 3, 0, 5, 4]),
    'last reward, NaN last': ({'sort': 'last_reward', 'descending': True},
                              [2, 0, 3, 4, 5, 1]),
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
    'EXPR over the catalog': ({'where': 'length >= 5 and episode_id != 13'},
                              [0, 2, 5]),
    'EXPR with the other filters': ({'where': 'not terminated',
                                     'instruction': 'place'}, [2, 4]),
}


@pytest.mark.parametrize('kwargs, expected', CASES.values(), ids=CASES.keys())
def test_query_cases(table, kwargs, expected):
  page = table_query.query(table, Query(**kwargs))
  assert [row['index'] for row in page['rows']] == expected
  assert page['total'] == 6


def test_matched_counts_all_pages(table):
  page = table_query.query(table, Query(status='truncated', limit=1))
  assert page['matched'] == 3 and len(page['rows']) == 1


def test_row_values(table):
  rows = table_query.query(table)['rows']
  assert rows[1] == {'index': 1, 'length': 2, 'return': None,
                     'last_reward': None,
                     'terminated': False, 'truncated': True,
                     'instructions': [],
                     'metadata': {'episode_id': 11,
                                  'episode_metadata/operator': 'a'}}
  assert rows[0]['return'] == 1.0 and rows[0]['terminated'] is True
  assert rows[2]['last_reward'] == 1.0


def test_columns_list_last_reward_only_when_return_leaves_some_out(table):
  page = table_query.query(table)
  assert page['columns'] == [
      'index', 'length', 'return', 'last_reward', 'status', 'instruction',
      'episode_id', 'episode_metadata/operator']
  assert (page['last_step'], page['left_out_last_rewards']) == ('invalid', 1)
  valid = table_query.query(_catalog('valid'))
  assert 'last_reward' not in valid['columns']
  assert (valid['last_step'], valid['left_out_last_rewards']) == ('valid', 0)
  zeros = table_query.query(_catalog(last_reward=np.zeros(6)))
  assert 'last_reward' not in zeros['columns']
  assert zeros['left_out_last_rewards'] == 0


def test_no_reward_or_is_terminal_columns():
  table = _catalog(**{'return': None, 'last_reward': None,
                      'terminated': None, 'truncated': None})
  assert [r['index'] for r in table_query.query(
      table, Query(sort='return', descending=True))['rows']] == list(range(6))
  assert table_query.query(table, Query(min_return=0))['matched'] == 0
  # Without is_terminal the ending is unknown: no status matches.
  assert table_query.query(table, Query(status='truncated'))['matched'] == 0
  row = table_query.query(table)['rows'][0]
  assert (row['return'], row['terminated'], row['truncated']) == (
      None, None, None)


def test_an_episode_without_steps_is_neither_terminated_nor_truncated():
  table = _catalog(terminated=np.array([True, False, False, True, False,
                                        True]),
                   truncated=np.array([False, True, False, False, True,
                                       False]))
  assert [r['index'] for r in table_query.query(
      table, Query(status='truncated'))['rows']] == [1, 4]
  row = table_query.query(table)['rows'][2]
  assert (row['terminated'], row['truncated']) == (False, False)
  assert [r['index'] for r in table_query.query(
      table, Query(sort='status'))['rows']] == [0, 3, 5, 1, 4, 2]


def test_vector_rewards_are_summed_over_their_elements():
  table = _catalog(**{'return': np.array([[1.0, 2.0]] * 6),
                      'last_reward': np.array([[0.0, 0.0]] * 5 +
                                              [[1.0, -1.0]])})
  row = table_query.query(table)['rows'][5]
  assert (row['return'], row['last_reward']) == (3.0, 0.0)
  # Its elements are not zero: left out all the same.
  assert table_query.query(table)['left_out_last_rewards'] == 1


def test_episode_level_language_and_empty_instructions():
  table = _catalog(**{'episode_metadata/language_instruction': np.array(
      ['', 'stack', '', 'pick', '', ''])})
  rows = table_query.query(table)['rows']
  assert [r['instructions'] for r in rows[:4]] == [
      ['Pick the cup'], ['stack'], ['place it'], ['pick']]
  assert [r['index'] for r in table_query.query(
      table, Query(instruction='STACK'))['rows']] == [1]
  # Still a metadata column too.
  assert rows[1]['metadata']['episode_metadata/language_instruction'] == (
      'stack')


def test_a_table_view_answers_like_its_catalog(table):
  view = table_query.TableView(table)
  for kwargs, _ in CASES.values():
    assert table_query.query(view, Query(**kwargs)) == (
        table_query.query(table, Query(**kwargs)))


def test_limit_is_capped(table):
  assert table_query.query(table, Query(limit=10**6))['limit'] == (
      table_query.MAX_LIMIT)


@pytest.mark.parametrize('kwargs, error, message', [
    ({'sort': 'colour'}, KeyError, "unknown column 'colour'"),
    ({'where': 'length >'}, ValueError, "EXPR 'length >': unexpected end"),
    ({'where': 'colour > 2'}, ValueError, "EXPR 'colour > 2': no column "
     "'colour'"),
    ({'status': 'done'}, ValueError, "status must be one of"),
    ({'offset': -1}, ValueError, 'must be >= 0'),
])
def test_bad_queries(table, kwargs, error, message):
  with pytest.raises(error, match=message):
    table_query.query(table, Query(**kwargs))


def test_the_old_keywords_still_work_and_warn_once(table, monkeypatch):
  monkeypatch.setattr(option_objects, '_WARNED', set())
  with pytest.warns(DeprecationWarning,
                    match=r'now query\(table, Query\(\.\.\.\)\)'):
    old = table_query.query(table, status='truncated', sort='length')
  assert old == table_query.query(table, Query(status='truncated',
                                               sort='length'))
  with warnings.catch_warnings():
    warnings.simplefilter('error')
    table_query.query(table, limit=2)  # Once only.
  with pytest.raises(TypeError, match=r"query: pass \['limit'\] in query\(table, Query\(\.\.\.\)\), not beside it\."):
    table_query.query(table, Query(), limit=2)
  with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
    table_query.query(table, colour=2)


def test_query_repr_names_what_differs_from_the_defaults():
  assert repr(Query()) == 'Query()'
  assert repr(Query(sort='return', descending=True)) == (
      "Query(sort='return', descending=True)")
