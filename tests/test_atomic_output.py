"""`rlds_lite.atomic_output`: what recovery may touch, symlinks, mounts."""

import os

import pytest

from rlds_lite import atomic_output

TOKEN = f'{os.getpid()}-{"ab" * 16}'


def test_recover_touches_only_its_targets_leftovers(tmp_path):
  """A writer of ``run`` never removes what belongs to ``run.tmp-2`` (its
  old dataset set aside, its lock) or a user's ``.run.tmp-notes``."""
  neighbour = [f'.run.tmp-2.replaced-{TOKEN}', '.run.tmp-2.lock',
               f'.run.tmp-2.incomplete-{TOKEN}', '.run.tmp-notes',
               '.run.replaced-notes', '.run.incomplete-1-abc']
  for name in neighbour:
    (tmp_path / name).mkdir()
  own = [f'.run.incomplete-{TOKEN}', '.run.tmp-k3_x9abc']
  for name in own:
    (tmp_path / name).mkdir()
  handled = atomic_output.recover(tmp_path / 'run')
  assert sorted(os.path.basename(p) for p in handled) == sorted(own)
  assert sorted(os.listdir(tmp_path)) == sorted(neighbour)


def test_overwrite_through_a_symlink_replaces_where_it_points(tmp_path):
  real = tmp_path / 'real'
  real.mkdir()
  (real / 'old.txt').write_text('old')
  link = tmp_path / 'link'
  link.symlink_to(real)
  with atomic_output.AtomicOutput(link, directory=True) as output:
    (open(os.path.join(output.path, 'new.txt'), 'w')).close()
    output.publish()
  assert os.path.islink(link) and os.listdir(link) == ['new.txt']
  assert sorted(os.listdir(tmp_path)) == ['link', 'real']


def test_a_mount_point_is_refused_before_anything_is_written(monkeypatch,
                                                             tmp_path):
  target = str(tmp_path / 'disk')
  os.mkdir(target)
  real_ismount = os.path.ismount
  monkeypatch.setattr(atomic_output.os.path, 'ismount',
                      lambda path: path == target or real_ismount(path))
  with pytest.raises(ValueError) as raised:
    with atomic_output.AtomicOutput(target, directory=True):
      pass
  assert str(raised.value) == (
      f'{target} is a mount point, which a rename cannot replace: write to a '
      f'directory inside it (e.g. {target}/out).')
  assert os.listdir(tmp_path) == ['disk']


def test_a_file_output_onto_a_directory_is_refused_first(tmp_path):
  (tmp_path / 'out.h5').mkdir()
  with pytest.raises(IsADirectoryError) as raised:
    with atomic_output.AtomicOutput(tmp_path / 'out.h5'):
      pass
  assert str(raised.value) == (
      f'{tmp_path}/out.h5 is a directory; give a file path')
  assert os.listdir(tmp_path) == ['out.h5']
