"""`Catalog`: columns, rows, select, sort, records, text and the .npz form."""

import io
import json

import numpy as np
import pytest

from rlds_lite.catalog import Catalog
from rlds_lite.catalog import ExpressionError


def _catalog():
  language = np.empty(4, dtype=object)
  language[:] = [('pick',), ('open', 'close'), (), ('pick',)]
  return Catalog({
      'index': np.arange(4),
      'length': np.array([3, 10, 0, 10]),
      'return': np.array([1.5, np.nan, 0.0, 2.0]),
      'terminated': np.array([True, False, False, True]),
      'language_instruction': language,
      'episode_metadata/success': np.array([True, False, True, False]),
      'episode_metadata/file_path': np.array(['a.h5', 'b.h5', 'é.h5', 'd.h5']),
      'other/success': np.array([1, 2, 3, 4]),
  }, {'dataset': '/data/x', 'split': 'train'})


def test_columns_are_named_by_path_or_unique_last_part():
  catalog = _catalog()
  assert catalog.resolve('file_path') == 'episode_metadata/file_path'
  assert catalog['length'].tolist() == [3, 10, 0, 10]
  assert 'file_path' in catalog and 'missing' not in catalog
  with pytest.raises(KeyError, match="column 'success' is ambiguous: "
                     'episode_metadata/success, other/success.'):
    catalog.column('success')
  with pytest.raises(KeyError, match=r"no column 'lenght' \(columns: index, "):
    catalog.column('lenght')


def test_columns_of_different_lengths_are_an_error():
  with pytest.raises(ValueError, match='columns differ in length'):
    Catalog({'a': [1, 2], 'b': [1]})


def test_rows_and_records_are_json_ready():
  catalog = _catalog()
  assert catalog.row(1) == {
      'index': 1, 'length': 10, 'return': None, 'terminated': False,
      'language_instruction': ['open', 'close'],
      'episode_metadata/success': False,
      'episode_metadata/file_path': 'b.h5', 'other/success': 2}
  records = catalog.to_records()
  assert records[1] == catalog.row(1)
  assert [type(r['length']) for r in records] == [int] * 4
  assert json.loads(catalog.to_json()) == records
  assert list(catalog) == records


@pytest.mark.parametrize('where, expected', [
    ('length == 10 and terminated', [3]),
    ("language_instruction == 'pick'", [0, 3]),
    ("file_path contains 'é'", [2]),
    ('episode_metadata/success', [0, 2]),
    (lambda row: row['length'] > 2 and not row['terminated'], [1]),
    (np.array([False, True, True, False]), [1, 2]),
], ids=['expr', 'several-strings', 'unicode', 'full-path', 'function', 'mask'])
def test_select(where, expected):
  selected = _catalog().select(where)
  assert selected['index'].tolist() == expected
  assert selected.info == {'dataset': '/data/x', 'split': 'train'}


def test_select_errors_name_the_expression_and_columns():
  with pytest.raises(ExpressionError, match=r"EXPR 'succes': no column "
                     r"'succes' \(columns: index, length"):
    _catalog().select('succes')
  with pytest.raises(ExpressionError, match="EXPR 'success': column 'success' "
                     'is ambiguous'):
    _catalog().select('success')
  with pytest.raises(ValueError, match='a mask must be 4 booleans'):
    _catalog().select([True])


@pytest.mark.parametrize('key, descending, expected', [
    ('length', False, [2, 0, 1, 3]),  # Stable: 1 before 3.
    ('length', True, [1, 3, 0, 2]),  # Stable too.
    ('return', False, [2, 0, 3, 1]),  # NaN last.
    ('return', True, [3, 0, 2, 1]),  # NaN last either way.
    ('file_path', True, [2, 3, 1, 0]),
    ('language_instruction', False, [2, 1, 0, 3]),
    ('terminated', False, [1, 2, 0, 3]),
], ids=['numbers', 'numbers-descending', 'nan-last', 'nan-last-descending',
        'strings', 'several-strings', 'booleans'])
def test_sort(key, descending, expected):
  assert _catalog().sort(key, descending)['index'].tolist() == expected


def test_sort_by_unknown_column():
  with pytest.raises(KeyError, match="Catalog.sort: no column 'x'"):
    _catalog().sort('x')


def test_save_and_read_keep_every_column_exactly():
  catalog = _catalog()
  buffer = io.BytesIO()
  catalog.save(buffer)
  buffer.seek(0)
  with np.load(buffer, allow_pickle=False) as data:  # No pickle inside.
    assert all(data[key].dtype != object for key in data.files)
  buffer.seek(0)
  again = Catalog.read(buffer)
  assert again.columns == catalog.columns
  assert again.info == catalog.info
  for name in catalog.columns:
    assert again[name].dtype == catalog[name].dtype, name
  assert json.dumps(again.to_records()) == json.dumps(catalog.to_records())


def test_an_empty_catalog_saves_and_reads():
  empty = _catalog().select('length > 100')
  buffer = io.BytesIO()
  empty.save(buffer)
  buffer.seek(0)
  again = Catalog.read(buffer)
  assert len(again) == 0 and again.columns == empty.columns
  assert again.to_records() == []


def test_table_and_repr():
  catalog = _catalog().take([0, 1])
  lines = catalog.table(['index', 'return', 'language_instruction',
                         'file_path']).splitlines()
  assert lines == [
      'index  return  language_instruction  episode_metadata/file_path',
      '    0     1.5  pick                  a.h5',
      '    1     nan  open | close          b.h5',
  ]
  assert _catalog().table(['index'], max_rows=1).splitlines() == [
      'index', '    0', '... 3 more rows']
  assert repr(catalog).startswith(
      "Catalog(2 episodes of '/data/x' split 'train'; columns: index, length,")
