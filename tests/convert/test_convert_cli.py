"""``rlds-lite convert`` and `rlds_lite.convert.files`: every format on disk."""

import os
import subprocess
import sys

import numpy as np
import pytest

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


@pytest.mark.parametrize('args, message', [
    (['--from', 'ted', '--to', 'alf', '{tmp}/missing.h5', '{tmp}/x.npz'],
     '{tmp}/missing.h5: no such file or directory'),
    (['--from', 'rlds', '--to', 'ted', '{source}', '{tmp}/x.h5',
      '--dataset-id', 'a/b-v0'],
     "ted does not take the option 'dataset_id' when written"),
    (['--from', 'rlds', '--to', 'minari', '{source}', '{tmp}/m'],
     'writing minari needs a dataset id (--dataset-id, e.g. demo/point-v0)'),
    (['--from', 'rlds', '--to', 'ted', '{source}', '{source}'],
     '{source} exists; choose a new target'),
    (['--from', 'ted', '--to', 'alf', '{source}', '{tmp}/x.npz',
      '--allow-pickle'],
     "ted does not take the option 'allow_pickle' when read"),
], ids=['missing-source', 'option-of-another-format', 'no-dataset-id',
        'existing-target', 'read-option-of-another-format'])
def test_bad_input_is_one_line_and_exit_2(tmp_path, episodes, capsys, args,
                                          message):
  source = files.write_episodes('rlds', episodes, tmp_path / 'source')
  fill = lambda s: s.format(tmp=tmp_path, source=source)
  assert cli.main(['convert', *map(fill, args), '--no-progress']) == 2
  out, err = capsys.readouterr()
  assert out == ''
  assert err == f'rlds-lite convert: {fill(message)}\n'


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
  assert counted == files.Counted(len(kept), steps, one_step)
