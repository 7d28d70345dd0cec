"""check_replaceable: what an overwrite may replace, as named cases."""

import os

import pytest

from rlds_lite import overwriting


def _make(root, case):
  """(out, sources) of each named case, made under ``root``."""
  source = root / 'data' / 'robot' / '1.0.0'
  source.mkdir(parents=True)
  (source / 'dataset_info.json').write_text('{}')
  out = root / 'out'
  if case == 'empty_dir':
    out.mkdir()
  elif case == 'same_kind':
    out.mkdir()
    (out / 'marker.json').write_text('{}')
  elif case == 'a_file':
    out.write_text('notes')
  elif case == 'other_data':
    out.mkdir()
    (out / 'notes.txt').write_text('notes')
  elif case == 'data_dir_of_the_source':
    out = root / 'data'
  elif case == 'name_dir_of_the_source':
    out = root / 'data' / 'robot'
  elif case == 'the_source':
    out = source
  elif case == 'link_to_the_data_dir':
    out = root / 'link'
    os.symlink(root / 'data', out)
  return out, [source]


CASES = {
    'absent': None,
    'empty_dir': None,
    'same_kind': None,
    'a_file': (FileExistsError, 'is a file, not a chunk dataset'),
    'other_data': (FileExistsError, r'is not a chunk dataset \(it has no '
                   r'marker.json\); overwrite replaces only a chunk dataset'),
    'data_dir_of_the_source': (ValueError, 'holds the source'),
    'name_dir_of_the_source': (ValueError, 'holds the source'),
    'the_source': (ValueError, 'holds the source'),
    'link_to_the_data_dir': (ValueError, 'holds the source'),
}


@pytest.mark.parametrize('case', list(CASES))
def test_what_an_overwrite_may_replace(tmp_path, case):
  out, sources = _make(tmp_path, case)
  check = lambda: overwriting.check_replaceable(
      out, kind='chunk dataset', marker='marker.json', writer='convert',
      sources=sources)
  if CASES[case] is None:
    check()
    return
  error, match = CASES[case]
  with pytest.raises(error, match='^convert: .*' + match):
    check()


def test_is_kind_overrides_the_marker(tmp_path):
  (tmp_path / 'marker.json').write_text('{}')
  with pytest.raises(FileExistsError, match='is not a chunk dataset'):
    overwriting.check_replaceable(tmp_path, kind='chunk dataset',
                                  marker='marker.json', writer='convert',
                                  is_kind=lambda path: False)
