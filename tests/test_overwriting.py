"""check_replaceable, check_apart_from_sources: what a writer may write over."""

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
  elif case == 'inside_the_source':
    out = source / 'out'
  elif case == 'deep_inside_through_a_link':
    os.symlink(root / 'data', root / 'link')
    out = root / 'link' / 'robot' / '1.0.0' / 'a' / 'b'
  elif case == 'beside_the_source':
    out = root / 'data' / 'robot' / '1.0.0-copy'
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
    'the_source': (ValueError, 'is the source .*; writing there would '
                   'destroy it'),
    'link_to_the_data_dir': (ValueError, 'holds the source'),
    'inside_the_source': (ValueError, 'is inside the source .*; writing '
                          'there would change the source dataset'),
    'deep_inside_through_a_link': (ValueError, 'is inside the source'),
    'beside_the_source': None,
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


@pytest.mark.parametrize('case', [c for c, e in CASES.items()
                                  if e is None or e[0] is ValueError])
def test_what_a_writer_may_write_into(tmp_path, case):
  """check_apart_from_sources: the source cases of check_replaceable, but a
  writer that only creates may write into a directory holding the source
  (``convert ~/data/hopper/raw.h5 --to rlds ~/data/hopper``)."""
  out, sources = _make(tmp_path, case)
  check = lambda: overwriting.check_apart_from_sources(
      out, sources, kind='dataset', writer='convert')
  if CASES[case] is None or 'holds the source' in CASES[case][1]:
    check()
    return
  with pytest.raises(ValueError, match=f'^convert: {out} {CASES[case][1]}'):
    check()
