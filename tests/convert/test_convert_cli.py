"""``rlds-lite convert`` and `rlds_lite.convert.files`: every format on disk."""

import contextlib
import errno
import json
import os
import resource
import signal
import subprocess
import sys

import h5py
import numpy as np
import pytest
import tensorflow as tf

import convert_testing
import rlds_lite
from rlds_lite import cli
from rlds_lite.convert import files

# Every format keeps terminated vs truncated and the step values; episodes
# need two steps or more (transition formats have no row for a one-step one).
CHAIN = [('rlds', 'source'), ('minari', 'minari'), ('d4rl', 'd4rl.h5'),
         ('ted', 'ted.h5'), ('alf', 'alf.npz'), ('il', 'il.npz'),
         ('webdataset', 'shards'), ('rlds', 'back')]


@pytest.fixture(name='episodes')
def _episodes():
  return [e for e in convert_testing.NAMED_EPISODES['mixed-ends']
          if len(e['steps']['is_last']) > 1] + convert_testing.NAMED_EPISODES[
              'terminal']


def _steps_only(episodes):
  return [{'steps': e['steps']} for e in episodes]


def test_every_format_in_a_chain_gives_the_episodes_back(tmp_path, episodes,
                                                         capsys):
  source = files.write_episodes('rlds', episodes, tmp_path / 'source')
  current = source
  for (src_format, _), (dst_format, dst_name) in zip(CHAIN, CHAIN[1:]):
    target = str(tmp_path / dst_name)
    args = ['convert', '--from', src_format, '--to', dst_format, current,
            target, '--no-progress']
    if dst_format == 'minari':
      args += ['--dataset-id', 'test/chain-v0']
    assert cli.main(args) == 0, (src_format, dst_format)
    out = capsys.readouterr().out
    assert out.startswith('converted 4 episodes (18 steps): '), out
    current = (os.path.join(target, 'test', 'chain-v0')
               if dst_format == 'minari' else target)
  back = list(files.read_episodes('rlds', current))
  steps = [{'steps': {k: v for k, v in e['steps'].items()
                      if k in episodes[0]['steps']}} for e in back]
  convert_testing.assert_episodes_equal(steps, _steps_only(episodes),
                                        metadata=False)
  assert [bool(e['steps']['is_terminal'][-1]) for e in back] == [
      True, False, True, True]


@pytest.fixture(name='sources', scope='module')
def _sources(tmp_path_factory):
  """Sources bad command lines read: ``{name: path}``."""
  root = tmp_path_factory.mktemp('sources')
  two_steps_or_more = [e for e in convert_testing.NAMED_EPISODES['mixed-ends']
                       if len(e['steps']['is_last']) > 1]
  return {
      'source': files.write_episodes('rlds', two_steps_or_more,
                                     root / 'source'),
      'mixed': files.write_episodes(
          'rlds', convert_testing.NAMED_EPISODES['mixed-ends'],
          root / 'mixed'),
      'd4rl': files.write_episodes('d4rl', two_steps_or_more,
                                   root / 'd4rl.h5'),
      'minari': files.write_episodes('minari', two_steps_or_more,
                                     root / 'minari' / 'ab' / 'walk-v0'),
      'minari_root': str(root / 'minari'),
      'root': str(root),
  }


def _listing(root):
  return sorted(os.path.relpath(os.path.join(d, f), root)
                for d, _, names in os.walk(root) for f in names)


_OUTSIDE = ('--name {name} leads outside {{tmp}}; a name must stay inside its '
            "target (a relative path without empty, '.' or '..' parts).")


@pytest.mark.parametrize('args, message', [
    (['--from', 'ted', '--to', 'alf', '{tmp}/missing.h5', '{tmp}/x.npz'],
     '{tmp}/missing.h5: no such file or directory'),
    (['--from', 'rlds', '--to', 'ted', '{source}', '{tmp}/x.h5',
      '--dataset-id', 'a/b-v0'],
     'ted does not take --dataset-id a/b-v0 when written'),
    (['--from', 'rlds', '--to', 'minari', '{source}', '{tmp}/m'],
     'writing minari needs a dataset id, e.g. --dataset-id demo/point-v0'),
    (['--from', 'rlds', '--to', 'ted', '{source}', '{d4rl}'],
     '{d4rl} exists; choose a new target'),
    (['--from', 'ted', '--to', 'alf', '{source}', '{tmp}/x.npz',
      '--allow-pickle'],
     'ted does not take --allow-pickle when read'),
    (['--from', 'rlds', '--to', 'rlds', '{source}', '{tmp}/x',
      '--skip-one-step'],
     'rlds does not take --skip-one-step when written'),
    (['--from', 'rlds', '--to', 'd4rl', '{mixed}', '{tmp}/x.h5'],
     "<episodes>: episode 1, field 'is_last': has one step (only a final "
     'observation), so no D4RL row; pass --skip-one-step to leave such '
     'episodes out'),
    (['--from', 'rlds', '--to', 'webdataset', '{mixed}', '{tmp}/shards'],
     "<episodes>: episode 1, field 'is_last': has one step (only a final "
     'observation), so no row in a webdataset shard; pass --skip-one-step '
     'to leave such episodes out'),
    (['--from', 'd4rl', '--to', 'rlds', '{d4rl}', '{tmp}/x', '--repair',
      'truncate'],
     "from_d4rl: --repair truncate is unknown; choose from "
     "['drop_unfinished', 'truncate_unfinished']."),
    (['--from', 'rlds', '--to', 'lerobot', '{source}', '{tmp}/lr', '--fps',
      '10', '--task-key', 'nope'],
     "to_lerobot: --task-key nope is not a step field; the step fields are "
     "['action', 'discount', 'observation', 'reward']"),
    (['--from', 'rlds', '--to', 'lerobot', '{source}', '{tmp}/lr', '--fps',
      '10', '--task-key', 'language_instruction'],
     "to_lerobot: --task-key language_instruction is not a step field; the "
     "step fields are ['action', 'discount', 'observation', 'reward']"),
    (['--from', 'rlds', '--to', 'minari', '{source}', '{tmp}/m',
      '--dataset-id', 'a/b-v0'],
     "to_minari: --dataset-id a/b-v0 is not a Minari id: "
     "(namespace/)name-v<version> of letters, digits, '-' and '_', a "
     "namespace of 2 characters or more (Minari's rule), e.g. 'ns/walk-v0'."),
    (['--from', 'rlds', '--to', 'rlds', '{source}',
      '{root}/x', '--name', 'mixed'],
     '{mixed} exists; choose a new target'),
    (['--from', 'rlds', '--to', 'minari', '{source}', '{minari_root}',
      '--dataset-id', 'ab/walk-v0'],
     '{minari} exists; choose a new target'),
    (['--from', 'rlds', '--to', 'rlds', '{source}', '{d4rl}'],
     '{d4rl} exists (a file); choose a new target'),
    (['--from', 'minari', '--to', 'rlds', '{d4rl}', '{tmp}/x'],
     '{d4rl}: looks like a D4RL file (observations, actions, rewards and '
     'terminals rows at the top), not a Minari dataset; read it with '
     '--from d4rl'),
    (['--from', 'd4rl', '--to', 'rlds', '{minari}', '{tmp}/x'],
     '{minari}: is a Minari dataset directory, not a D4RL file; read it with '
     '--from minari'),
    (['--from', 'rlds', '--to', 'rlds', '{source}', '{tmp}/x', '--name',
      '../x'], _OUTSIDE.format(name='../x')),
    (['--from', 'rlds', '--to', 'rlds', '{source}', '{tmp}/x', '--name',
      'a/../../x'], _OUTSIDE.format(name='a/../../x')),
    (['--from', 'rlds', '--to', 'rlds', '{source}', '{tmp}/x', '--name',
      '{root}/x'], _OUTSIDE.format(name='{root}/x')),
    (['--from', 'rlds', '--to', 'rlds', '{source}', '{tmp}/x', '--name', '.'],
     _OUTSIDE.format(name='.')),
], ids=['missing-source', 'option-of-another-format', 'no-dataset-id',
        'existing-target', 'read-option-of-another-format',
        'skip-one-step-not-taken', 'one-step-episodes', 'one-step-shards',
        'repair-of-another-format', 'unknown-task-key',
        'explicit-default-task-key-absent',
        'one-letter-minari-namespace', 'existing-rlds-dataset',
        'existing-minari-dataset', 'rlds-target-is-a-file',
        'd4rl-read-as-minari',
        'minari-read-as-d4rl', 'name-leads-up', 'name-leads-up-later',
        'name-is-absolute', 'name-is-the-target-directory'])
def test_bad_input_is_one_line_and_exit_2(tmp_path, sources, capsys, args,
                                          message):
  before = _listing(sources['root'])
  fill = lambda s: s.format(tmp=tmp_path, **sources)
  assert cli.main(['convert', *map(fill, args), '--no-progress']) == 2
  out, err = capsys.readouterr()
  assert out == ''
  assert err == f'rlds-lite convert: {fill(message)}\n'
  assert not os.listdir(tmp_path)  # Nothing was written,
  assert _listing(sources['root']) == before  # nor beside the sources.


@pytest.mark.parametrize('to_format', sorted(files.FORMATS))
@pytest.mark.parametrize('where', ['inside', 'deep-inside', 'the-source',
                                   'holding-it'])
def test_a_target_in_the_source_is_refused(tmp_path, capsys, to_format,
                                           where):
  source = files.write_episodes(
      'rlds', convert_testing.NAMED_EPISODES['terminal'], tmp_path / 'data')
  target = {'inside': os.path.join(source, 'out'),
            'deep-inside': os.path.join(source, 'a', 'b'),
            'the-source': source,
            'holding-it': os.path.dirname(source)}[where]
  extra = {'minari': ['--dataset-id', 'ab/walk-v0'],
           'lerobot': ['--fps', '10']}.get(to_format, [])
  before = _listing(tmp_path)
  status = cli.main(['convert', '--from', 'rlds', '--to', to_format, source,
                     target, '--no-progress', *extra])
  err = capsys.readouterr().err
  if to_format == 'minari':  # TARGET is the Minari root: ab/walk-v0 in it.
    if where == 'holding-it':  # Beside the source, which stays as it was.
      assert status == 0, err
      assert [p for p in _listing(tmp_path) if p not in before] == [
          'data/ab/namespace_metadata.json',
          'data/ab/walk-v0/data/main_data.hdf5',
          'data/ab/walk-v0/data/metadata.json']
      return
    target, where = os.path.join(target, 'ab', 'walk-v0'), 'inside'
  assert status == 2
  assert err.count('\n') == 1
  assert _listing(tmp_path) == before
  if where == 'holding-it':  # convert only creates: holding it is no harm,
    assert err.endswith(' exists; choose a new target\n')  # but it exists.
    return
  what = {'inside': 'is inside the source', 'deep-inside':
          'is inside the source', 'the-source': 'is the source'}[where]
  assert err.startswith(f'rlds-lite convert: {target} {what} {source}; ')


def test_bad_file_names_episode_and_field(tmp_path, capsys):
  path = tmp_path / 'il.npz'
  np.savez(path, obs=np.zeros((3, 2)), next_obs=np.zeros((3, 2)),
           acts=np.zeros((3, 1)), dones=np.array([False, True, False]))
  assert cli.main(['convert', '--from', 'il', '--to', 'alf', str(path),
                   str(tmp_path / 'alf.npz'), '--no-progress']) == 2
  err = capsys.readouterr().err
  assert err.startswith('rlds-lite convert: ') and err.count('\n') == 1
  assert "episode 1, field 'dones'" in err
  assert cli.main(['convert', '--from', 'il', '--to', 'alf', str(path),
                   str(tmp_path / 'alf.npz'), '--repair', 'truncate',
                   '--no-progress']) == 0
  assert 'converted 2 episodes' in capsys.readouterr().out


@pytest.mark.parametrize('from_format, name, message', [
    ('ted', 'bad.h5', 'is not a readable HDF5 file: Unable to synchronously '
     'open file (file signature not found)'),
    ('d4rl', 'bad.hdf5', 'is not a readable HDF5 file: Unable to '
     'synchronously open file (file signature not found)'),
    ('minari', 'bad-v0/data/main_data.hdf5', 'is not a readable HDF5 file: '
     'Unable to synchronously open file (file signature not found)'),
    ('minari', 'json-v0/data/metadata.json', 'is not valid JSON: Expecting '
     'value: line 1 column 1 (char 0)'),
    ('alf', 'bad.npz', 'is not a .npz file (a zip archive of .npy arrays, '
     'as numpy.savez writes)'),
], ids=['ted', 'd4rl', 'minari', 'minari-metadata', 'npz'])
def test_unreadable_file_is_one_line_naming_it(tmp_path, capsys, from_format,
                                               name, message):
  path = tmp_path / name
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_bytes(b'xx')
  if name.endswith('.json'):
    (path.parent / 'main_data.hdf5').write_bytes(b'xx')
  source = path.parent.parent if from_format == 'minari' else path
  assert cli.main(['convert', '--from', from_format, '--to', 'rlds',
                   str(source), str(tmp_path / 'out'), '--no-progress']) == 2
  assert capsys.readouterr().err == f'rlds-lite convert: {path}: {message}\n'


def test_convert_runs_as_a_command(tmp_path):
  episodes = rlds_lite.synthetic.episodes(num_episodes=4, seed=0)
  source = files.write_episodes('ted', episodes, tmp_path / 'b.h5')
  result = subprocess.run(
      [sys.executable, '-m', 'rlds_lite.cli', 'convert', '--from', 'ted',
       '--to', 'rlds', source, str(tmp_path / 'converted')],
      capture_output=True, text=True, timeout=600, check=False)
  lengths = [len(e['reward'])
             for e in rlds_lite.synthetic.episode_arrays(4, seed=0)]
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout == (
      f'converted 4 episodes ({sum(lengths)} steps): ted {source} '
      f'-> rlds {tmp_path / "converted"}\n')
  loaded = list(rlds_lite.load(str(tmp_path / 'converted'), dense=True))
  assert [int(e['steps']['reward'].shape[0]) for e in loaded] == lengths


def test_skipped_one_step_episodes_are_not_counted_as_converted(tmp_path,
                                                                capsys):
  mixed = convert_testing.NAMED_EPISODES['mixed-ends']
  one_step = sum(len(e['steps']['is_last']) == 1 for e in mixed)
  kept = [e for e in mixed if len(e['steps']['is_last']) > 1]
  assert one_step and kept
  source = files.write_episodes('rlds', mixed, tmp_path / 'source')
  steps = sum(len(e['steps']['is_last']) for e in kept)
  assert cli.main(['convert', '--from', 'rlds', '--to', 'd4rl', source,
                   str(tmp_path / 'd4rl.h5'), '--skip-one-step',
                   '--no-progress']) == 0
  assert capsys.readouterr().out == (
      f'converted {len(kept)} episodes ({steps} steps): rlds {source} -> d4rl '
      f"{tmp_path / 'd4rl.h5'}; left out {one_step} one-step episodes\n")
  assert len(list(files.read_episodes('d4rl', tmp_path / 'd4rl.h5'))) == len(
      kept)
  counted = files.convert(source, tmp_path / 'alf.npz', from_format='rlds',
                          to_format='alf', one_step='skip')
  assert counted == files.Counted(len(kept), steps, one_step,
                                  str(tmp_path / 'alf.npz'))


def test_the_summary_names_what_was_written(tmp_path, capsys):
  """--name writes beside TARGET: the line says where (not TARGET)."""
  source = files.write_episodes('rlds', convert_testing.NAMED_EPISODES[
      'terminal'], tmp_path / 'source')
  assert cli.main(['convert', '--from', 'rlds', '--to', 'rlds', source,
                   str(tmp_path / 'out'), '--name', 'copy', '--no-progress',
                   '--json']) == 0
  summary = json.loads(capsys.readouterr().out)
  assert (summary['target'], summary['written']) == (
      str(tmp_path / 'out'), str(tmp_path / 'copy'))
  assert len(list(rlds_lite.load(summary['written']))) == 1


@pytest.mark.parametrize('fmt, damage, message, flag', [
    ('d4rl', lambda f: f.__delitem__('next_observations'),
     "field 'next_observations': is missing, so each episode's final "
     "observation is unknown; pass --final-observation repeat (repeat the "
     "last row's observation) or --final-observation zeros",
     ['--final-observation', 'repeat']),
    ('ted', lambda f: f['next/observation'].__setitem__(0, 9.0),
     "episode 0, field 'next/observation': differs on row 0 from observation "
     'on row 1 of the same episode (pass --no-check-continuity for '
     'multi-step data)', ['--no-check-continuity']),
], ids=['d4rl-final-observation', 'ted-continuity'])
def test_a_flag_a_message_names_is_taken(tmp_path, capsys, fmt, damage,
                                         message, flag):
  episodes = convert_testing.NAMED_EPISODES['terminal']
  path = files.write_episodes(fmt, episodes, tmp_path / 'in.h5')
  with h5py.File(path, 'a') as file:
    damage(file)
  args = ['convert', '--from', fmt, '--to', 'alf', path,
          str(tmp_path / 'out.npz'), '--no-progress']
  assert cli.main(args) == 2
  assert capsys.readouterr().err == f'rlds-lite convert: {path}: {message}\n'
  assert cli.main(args + flag) == 0
  assert capsys.readouterr().out.startswith('converted 1 episodes (6 steps)')


def test_a_path_holding_argument_spellings_is_named_as_it_is(tmp_path, capsys):
  # split=train and name='x' start no word here: no --split, no --name.
  source = tmp_path / 'split=train' / "run-name='x'" / 'raw.h5'
  assert cli.main(['convert', '--from', 'd4rl', '--to', 'alf', str(source),
                   str(tmp_path / 'out.npz'), '--no-progress']) == 2
  assert capsys.readouterr().err == (
      f'rlds-lite convert: {source}: no such file or directory\n')


def test_the_python_api_names_its_own_arguments(sources, tmp_path):
  with pytest.raises(rlds_lite.convert.ConversionError,
                     match="pass one_step='skip' to leave such episodes out$"):
    files.convert(sources['mixed'], tmp_path / 'x.h5', from_format='rlds',
                  to_format='d4rl')
  with pytest.raises(ValueError, match=r"^ted does not take "
                     r"dataset_id='a/b-v0' when written$"):
    files.convert(sources['source'], tmp_path / 'x.h5', from_format='rlds',
                  to_format='ted', dataset_id='a/b-v0')
  with pytest.raises(ValueError, match=r'not a Minari dataset; read it with '
                     r'from_d4rl\(\)$'):
    files.convert(sources['d4rl'], tmp_path / 'x', from_format='minari',
                  to_format='rlds')
  inside = os.path.join(sources['source'], 'out.h5')
  with pytest.raises(ValueError, match=f'^convert: {inside} is inside the '
                     f"source {sources['source']}; "):
    files.convert(sources['source'], inside, from_format='rlds',
                  to_format='ted')
  assert not os.listdir(tmp_path)


def test_a_target_beside_a_source_file_is_written(tmp_path, capsys):
  # `convert ~/data/hopper/raw.npz --to rlds ~/data/hopper`: the target holds
  # the source file; convert only creates, so that is fine (it was refused,
  # "overwriting it would delete the source", though nothing is overwritten).
  source = tmp_path / 'hopper' / 'raw.npz'
  source.parent.mkdir()
  files.write_episodes('alf', convert_testing.NAMED_EPISODES['terminal'],
                       source)
  assert cli.main(['convert', '--from', 'alf', '--to', 'rlds', str(source),
                   str(source.parent), '--no-progress']) == 0, (
                       capsys.readouterr().err)
  listing = [n for n in os.listdir(source.parent) if not n.startswith('.')]
  assert sorted(listing) == ['1.0.0', 'raw.npz']  # (and the writer's lock)


_TARGETS = {'rlds': 'x', 'minari': 'm', 'd4rl': 'x.h5', 'il': 'x.npz',
            'webdataset': 'shards', 'ted': 'x.h5', 'alf': 'x.npz',
            'lerobot': 'lr'}
"""A target name for each format."""


def _convert_args(sources, to_format, target):
  args = ['convert', '--from', 'rlds', '--to', to_format, sources['source'],
          target, '--no-progress']
  if to_format == 'minari':
    args += ['--dataset-id', 'ab/t-v0']
  if to_format == 'lerobot':
    args += ['--fps', '10', '--no-video']
  return args


def _written_path(to_format, target):
  """What the message names: the dataset directory rlds and minari make."""
  return os.path.join(target, 'ab', 't-v0') if to_format == 'minari' else (
      target)


@pytest.mark.parametrize('to_format,where', [
    (to_format, where) for where in ('inside-a-file', 'read-only')
    for to_format in sorted(files.FORMATS)] + [
        # A file as the target of the others: "exists; choose a new target".
        ('minari', 'a-file-as-minari-root')])
def test_a_target_that_cannot_be_made_is_one_line_and_exit_2(
    tmp_path, sources, capsys, monkeypatch, to_format, where):
  file = tmp_path / 'notes.txt'
  file.write_text('keep')
  if where == 'a-file-as-minari-root':
    target = str(file)
    problem = f'its directory {file} is not a directory'
  elif where == 'inside-a-file':
    target = str(file / _TARGETS[to_format])
    problem = f'its directory {file} is not a directory'
  else:  # A read-only file system (root may write anywhere else).
    target = str(tmp_path / 'ro' / _TARGETS[to_format])
    os.mkdir(tmp_path / 'ro')
    real_statvfs = os.statvfs
    monkeypatch.setattr(os, 'access', lambda path, mode: False)
    monkeypatch.setattr(os, 'statvfs', lambda path: os.statvfs_result(
        real_statvfs(path)[:8] + (os.ST_RDONLY,) + real_statvfs(path)[9:]))
    problem = f'its directory {tmp_path / "ro"} is on a read-only file system'
  assert cli.main(_convert_args(sources, to_format, target)) == 2
  out, err = capsys.readouterr()
  assert (out, err) == ('', f'rlds-lite convert: '
                        f'{_written_path(to_format, target)}: {problem}\n')
  monkeypatch.undo()
  assert _listing(tmp_path) == ['notes.txt']
  assert file.read_text() == 'keep'


@contextlib.contextmanager
def _files_limited_to(size):
  """Writes past ``size`` bytes of a file fail (EFBIG) as on a full disk,
  in C (TensorFlow, HDF5, Arrow) as in Python; no root, no mount needed."""
  soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
  handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
  resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
  try:
    yield
  finally:
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    signal.signal(signal.SIGXFSZ, handler)


@pytest.mark.parametrize('to_format', sorted(files.FORMATS))
def test_a_write_that_fails_is_one_line_and_exit_2(tmp_path, sources, capsys,
                                                   to_format):
  target = str(tmp_path / _TARGETS[to_format])
  with _files_limited_to(256):
    status = cli.main(_convert_args(sources, to_format, target))
  out, err = capsys.readouterr()
  assert (status, out, err) == (2, '', f'rlds-lite convert: {target}: file '
                                'too large\n')


@pytest.mark.parametrize('to_format', ['il', 'rlds'])
def test_a_full_disk_is_one_line_naming_the_target(tmp_path, sources, capsys,
                                                   monkeypatch, to_format):
  def full(*args, **kwargs):
    del args, kwargs
    if to_format == 'rlds':
      raise tf.errors.ResourceExhaustedError(
          None, None, f'{target}/.1.0.0.incomplete-1/.shard-1-00000; No '
          'space left on device')
    dirname, name = os.path.split(target)   # atomic_output's staging name.
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC),
                  f'{dirname}/.{name}.incomplete-1-{"ab" * 16}')

  target = str(tmp_path / _TARGETS[to_format])
  if to_format == 'rlds':
    monkeypatch.setattr(tf.io.TFRecordWriter, 'write', full)
  else:
    monkeypatch.setattr(np, 'savez', full)
  assert cli.main(_convert_args(sources, to_format, target)) == 2
  assert capsys.readouterr() == ('', f'rlds-lite convert: {target}: no space '
                                 'left on device (the disk is full)\n')


def test_minari_on_a_failing_disk_exits_cleanly(tmp_path, sources):
  """HDF5 once crashed at exit (SIGSEGV, thousands of lines) after a failed
  write (rlds_lite.convert.hdf5_output); a process of its own shows it."""
  target = str(tmp_path / 'm')

  def limit():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

  run = subprocess.run(
      [sys.executable, '-m', 'rlds_lite.cli',
       *_convert_args(sources, 'minari', target)],
      capture_output=True, text=True, preexec_fn=limit, check=False,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3'))
  lines = [line for line in run.stderr.splitlines()
           if not line.startswith(('I0000', 'WARNING: All log'))]
  assert (run.returncode, lines) == (
      2, [f'rlds-lite convert: {target}: file too large']), run.stderr[-3000:]
