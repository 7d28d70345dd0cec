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


@pytest.mark.parametrize('name, inside', [
    ('ns/walk-v0', True), ('toy', True), ('a.b/c', True),
    ('../x', False), ('a/../../x', False), ('a/..', False), ('..', False),
    ('.', False), ('', False), ('a//b', False), ('a/', False),
    ('/abs', False), ('..\\x', False), (None, False),
], ids=['namespaced', 'plain', 'dotted', 'up', 'up-later', 'up-to-target',
        'parent', 'target', 'empty', 'empty-part', 'trailing-slash',
        'absolute', 'backslash-up', 'not-a-string'])
def test_path_inside(name, inside):
  call = lambda: overwriting.path_inside('/data', name, what='name',
                                         writer='w')
  if inside:
    assert call() == os.path.join('/data', name)
    return
  with pytest.raises(ValueError) as raised:
    call()
  assert str(raised.value) == (
      f"w: name={name!r} leads outside /data; a name must stay inside its "
      "target (a relative path without empty, '.' or '..' parts).")


def _episode_writer(root, name):
  from rlds_lite.tfds import episode_writer  # pylint: disable=g-import-not-at-top
  return episode_writer.EpisodeWriter(root, name, {})


def _to_lerobot(root, name):
  del root  # $HF_LEROBOT_HOME.
  from rlds_lite.convert import lerobot  # pylint: disable=g-import-not-at-top
  return lerobot.to_lerobot([], repo_id=name, fps=10)


def _to_minari(root, name):
  from rlds_lite.convert import minari  # pylint: disable=g-import-not-at-top
  return minari.to_minari([], root, name)


_LEADS_OUTSIDE = ("leads outside {root}; a name must stay inside its target "
                  "(a relative path without empty, '.' or '..' parts).")


@pytest.mark.parametrize('write, name, message', [
    (_episode_writer, '../x', 'name must be a snake_case TFDS dataset name '
     "(lowercase letters, digits, underscores; starting with a letter), got "
     "'../x'."),
    (_to_lerobot, '../..', "to_lerobot: repo_id='../..' " + _LEADS_OUTSIDE),
    (_to_lerobot, 'user/..', "to_lerobot: repo_id='user/..' " +
     _LEADS_OUTSIDE),
    (_to_minari, 'ns/../../walk-v0', "to_minari: dataset_id="
     "'ns/../../walk-v0' is not a Minari id: (namespace/)name-v<version> of "
     "letters, digits, '-' and '_', a namespace of 2 characters or more "
     "(Minari's rule), e.g. 'ns/walk-v0'."),
], ids=['episode-writer', 'lerobot-repo-id-up', 'lerobot-repo-id-to-home',
        'minari-dataset-id'])
def test_writers_keep_names_inside_their_target(tmp_path, monkeypatch, write,
                                                name, message):
  root = tmp_path / 'root'
  root.mkdir()
  monkeypatch.setenv('HF_LEROBOT_HOME', str(root))
  with pytest.raises(ValueError) as raised:
    write(root, name)
  assert str(raised.value) == message.format(root=root)
  assert os.listdir(tmp_path) == ['root'] and not os.listdir(root)
