"""`rlds_lite.atomic_output`: what recovery may touch, symlinks, mounts."""

import errno
import os
import shutil

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
  with atomic_output.AtomicOutput(link, directory=True,
                                  replace=True) as output:
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


def _names(path):
  return sorted(os.listdir(path))


@pytest.mark.parametrize('directory', [True, False])
def test_a_creating_writer_never_replaces_what_appeared_meanwhile(tmp_path,
                                                                  directory):
  """A process without the lock fills the target while we write: what it
  wrote stays, our output is discarded, nothing of ours is left."""
  target = tmp_path / 'out'
  with pytest.raises(FileExistsError) as raised:
    with atomic_output.AtomicOutput(target, directory=directory) as output:
      if directory:
        open(os.path.join(output.path, 'ours'), 'w').close()
        target.mkdir()
        (target / 'theirs').write_text('theirs')
      else:
        with open(output.path, 'w') as f:
          f.write('ours')
        target.write_text('theirs')
      output.publish()
  assert str(raised.value) == (
      f'{target} appeared while this output was written (a process not '
      'holding its lock created it): it is left as it is, and this output '
      'was discarded')
  assert _names(tmp_path) == ['out']
  assert (target / 'theirs' if directory else target).read_text() == 'theirs'


def test_a_creating_writer_replaces_an_empty_directory(tmp_path):
  target = tmp_path / 'out'
  target.mkdir()
  with atomic_output.AtomicOutput(target, directory=True) as output:
    open(os.path.join(output.path, 'ours'), 'w').close()
    output.publish()
  assert _names(tmp_path) == ['out'] and _names(target) == ['ours']


def test_the_check_runs_again_before_the_switch(tmp_path):
  target = tmp_path / 'out'
  target.mkdir()
  (target / 'old').write_text('old')
  calls = []

  def check(path):
    calls.append(path)
    if (target / 'not_a_dataset').exists():
      raise ValueError('not a dataset of that kind')

  with pytest.raises(ValueError, match='not a dataset of that kind'):
    with atomic_output.AtomicOutput(target, directory=True, check=check,
                                    replace=True) as output:
      (target / 'not_a_dataset').write_text('theirs')
      output.publish()
  assert calls == [str(target)] * 2
  assert _names(tmp_path) == ['out']
  assert _names(target) == ['not_a_dataset', 'old']


def test_a_file_is_linked_in_so_a_late_file_is_never_replaced(tmp_path,
                                                               monkeypatch):
  """The last microseconds after the check: the link refuses a taken name."""
  target = tmp_path / 'out.npz'
  real_link = os.link

  def link_after_someone(source, destination):
    target.write_text('theirs')
    real_link(source, destination)

  monkeypatch.setattr(atomic_output.os, 'link', link_after_someone)
  with pytest.raises(FileExistsError, match='appeared while this output'):
    with atomic_output.AtomicOutput(target) as output:
      with open(output.path, 'w') as f:
        f.write('ours')
      output.publish()
  assert _names(tmp_path) == ['out.npz'] and target.read_text() == 'theirs'


def test_without_hard_links_a_file_is_renamed_in(tmp_path, monkeypatch):
  def no_links(source, destination):
    raise OSError(errno.EPERM, 'Operation not permitted', source)

  monkeypatch.setattr(atomic_output.os, 'link', no_links)
  target = tmp_path / 'out.npz'
  with atomic_output.AtomicOutput(target) as output:
    with open(output.path, 'w') as f:
      f.write('ours')
    output.publish()
  assert _names(tmp_path) == ['out.npz'] and target.read_text() == 'ours'


@pytest.mark.parametrize('error', [KeyboardInterrupt, OSError])
def test_an_error_between_the_renames_puts_the_old_directory_back(
    tmp_path, monkeypatch, error):
  """Not a kill: the writer itself restores the old one before unlocking."""
  target = tmp_path / 'out'
  target.mkdir()
  (target / 'old').write_text('old')
  real_rename = atomic_output.publish.rename

  def rename(source, destination):
    if os.path.basename(source).startswith('.out.incomplete-'):
      raise error('interrupted')
    real_rename(source, destination)

  monkeypatch.setattr(atomic_output.publish, 'rename', rename)
  with pytest.raises(error):
    with atomic_output.AtomicOutput(target, directory=True,
                                    replace=True) as output:
      open(os.path.join(output.path, 'new'), 'w').close()
      output.publish()
  assert _names(tmp_path) == ['out'] and _names(target) == ['old']


def test_an_old_directory_half_deleted_is_never_put_back(tmp_path,
                                                         monkeypatch):
  """The set-aside directory is deleted under a staging name: a writer that
  dies while deleting it leaves what recovery removes, not restores."""
  target = tmp_path / 'out'
  target.mkdir()
  (target / 'old').write_text('old')

  def dies_while_deleting(path):
    raise SystemExit(f'killed while deleting {os.path.basename(path)}')

  monkeypatch.setattr(atomic_output, '_remove', dies_while_deleting)
  with pytest.raises(SystemExit, match=r'deleting \.out\.incomplete-'):
    with atomic_output.AtomicOutput(target, directory=True,
                                    replace=True) as output:
      open(os.path.join(output.path, 'new'), 'w').close()
      output.publish()
  monkeypatch.undo()
  leftover, = [n for n in _names(tmp_path) if n != 'out']
  assert leftover.startswith('.out.incomplete-')
  shutil.rmtree(target)   # The user deletes the new one.
  assert atomic_output.missing_hint(target) == ''
  assert atomic_output.recover(target) == [str(tmp_path / leftover)]
  assert _names(tmp_path) == []


def test_relative_targets_are_recovered_and_hinted(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  aside = f'.ds.replaced-{TOKEN}'
  os.makedirs(os.path.join(aside, 'data'))
  for target in ('ds', './ds'):
    assert atomic_output.missing_hint(target) == (
        f'; its writer died while replacing it: the old one is whole at '
        f'{tmp_path}/{aside} (the next writer of {tmp_path}/ds puts it back; '
        'or rename it yourself)')
  assert atomic_output.recover('ds') == [str(tmp_path / aside)]
  assert _names(tmp_path) == ['ds'] and _names(tmp_path / 'ds') == ['data']
