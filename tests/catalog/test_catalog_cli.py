"""``rlds-lite episodes``, ``filter`` and ``merge``, as a user runs them.

Two runs are subprocesses (started together); the other cases run in-process
(``cli.main``, the same code) to keep the suite fast.
"""

import json
import os
import subprocess
import sys

import pytest

import rlds_lite
from rlds_lite import cli
import catalog_testing


@pytest.fixture(name='robot', scope='module')
def _robot(tmp_path_factory):
  root = tmp_path_factory.mktemp('catalog_cli')
  data = catalog_testing.episodes()
  path = catalog_testing.write(str(root / 'data'), data=data)
  return {'path': path, 'data': data, 'root': root}


def _main(capsys, *args):
  code = cli.main([*args, '--no-progress'])
  out, err = capsys.readouterr()
  return code, out, err


def test_subprocess_runs(robot, tmp_path):
  (tmp_path / 'taken').mkdir()
  commands = {
      'episodes': ['episodes', robot['path'], '--json', '--where',
                   "language_instruction contains 'drawer'"],
      'taken': ['filter', robot['path'], '--where', 'success', '--out',
                str(tmp_path / 'taken')],
  }
  env = {**os.environ, 'TF_CPP_MIN_LOG_LEVEL': '3'}
  procs = {name: subprocess.Popen(
      [sys.executable, '-m', 'rlds_lite.cli', *args, '--no-progress'],
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
           for name, args in commands.items()}
  results = {name: (proc.communicate(timeout=600), proc.returncode)
             for name, proc in procs.items()}
  (out, err), code = results['episodes']
  assert code == 0, err[-2000:]
  rows = json.loads(out)
  reference = catalog_testing.reference(robot['data'])
  expected = [i for i, lang in enumerate(reference['language_instruction'])
              if any('drawer' in text for text in lang)]
  assert [row['index'] for row in rows] == expected
  for row in rows:
    for key in ('length', 'return', 'language_instruction'):
      assert row[key] == reference[key][row['index']], key
  (out, err), code = results['taken']
  assert code == 2 and out == ''
  assert err.splitlines()[-1] == (
      f"rlds-lite filter: '{tmp_path / 'taken'}' already exists; choose a new "
      'output directory (nothing was written).')
  assert os.listdir(tmp_path / 'taken') == []


def test_episodes_table(robot, capsys):
  code, out, err = _main(capsys, 'episodes', robot['path'], '--where',
                         'length > 2', '--sort', 'return', '--descending',
                         '--limit', '3', '--columns',
                         'index,length,return,language_instruction,success')
  reference = catalog_testing.reference(robot['data'])
  left_out = sum(1 for r in reference['last_reward'] if r)
  assert code == 0 and err == (
      'rlds-lite episodes: warning: left out non-zero last-step values of '
      f'reward ({left_out} of 12 episodes): RLDS says a last step\'s reward is '
      'invalid, so return leaves it out (last_reward keeps it); pass '
      "last_step='valid' (command line: --last-step valid) to keep them.\n")
  chosen = sorted((i for i in reference['index'] if reference['length'][i] > 2),
                  key=lambda i: -reference['return'][i])
  lines = out.splitlines()
  assert lines[0].split() == ['index', 'length', 'return',
                              'language_instruction',
                              'episode_metadata/success']
  assert [int(line.split()[0]) for line in lines[1:4]] == chosen[:3]
  assert lines[4] == f'3 of {len(reference["index"])} episodes'


def test_episodes_last_step_valid_counts_the_last_reward(robot, capsys):
  code, out, err = _main(capsys, 'episodes', robot['path'], '--json',
                         '--last-step', 'valid', '--columns', 'return')
  assert code == 0 and err == ''
  reference = catalog_testing.reference(robot['data'])
  assert [row['return'] for row in json.loads(out)] == [
      r + (last or 0.0) for r, last in zip(reference['return'],
                                           reference['last_reward'])]


def test_filter_last_step_valid_selects_by_the_full_return(robot, capsys,
                                                           tmp_path):
  reference = catalog_testing.reference(robot['data'])
  full = [r + (last or 0.0) for r, last in zip(reference['return'],
                                               reference['last_reward'])]
  code, out, err = _main(capsys, 'filter', robot['path'], '--where',
                         'return >= 6', '--last-step', 'valid', '--out',
                         str(tmp_path / 'out'), '--json')
  assert code == 0 and err == ''
  path = json.loads(out)['path']
  assert [int(e['episode_metadata']['episode_id'])
          for e in rlds_lite.load(path)] == [
              i for i, r in enumerate(full) if r >= 6]
  code, _, err = _main(capsys, 'filter', robot['path'], '--where',
                       'return >= 6', '--out', str(tmp_path / 'out2'))
  assert code == 0 and err.startswith(
      'rlds-lite filter: warning: left out non-zero last-step values of '
      'reward (')


def test_episodes_json_lists_every_episode(robot, capsys):
  code, out, _ = _main(capsys, 'episodes', robot['path'], '--json')
  assert code == 0
  rows = json.loads(out)
  assert [row['index'] for row in rows] == list(range(12))
  assert rows[5]['language_instruction'] == ['pick up the red block',
                                             'close the drawer']
  assert rows[3]['last_reward'] is None  # No steps: JSON null, not NaN.


@pytest.mark.parametrize('args, message', [
    (['--where', 'lenght > 2'], "EXPR 'lenght > 2': no column 'lenght' "
     '(columns: index, episode_id, length, return, last_reward, terminated, '
     'truncated, language_instruction, episode_metadata/file_path, '
     'episode_metadata/scene, episode_metadata/success, shard, record).'),
    (['--where', 'length >'], "EXPR 'length >': unexpected end of the "
     'expression;'),
    (['--sort', 'speed'], "--sort speed: no column 'speed' (columns: index,"),
    (['--columns', ' , '], "--columns ' , ' names no column; give one or "
     'more, e.g. --columns length,return, or leave it out for all.'),
    (['--split', 'test'], "dataset '{path}' has no split 'test' (its splits: "
     "['train'])."),
    (['--limit', '-1'], '--limit must be at least 0.'),
], ids=['unknown-column', 'syntax-error', 'unknown-sort-key',
        'empty-columns', 'unknown-split', 'negative-limit'])
def test_episodes_bad_input_is_one_line_and_exit_2(robot, capsys, args,
                                                   message):
  code, out, err = _main(capsys, 'episodes', robot['path'], *args)
  assert code == 2 and out == ''
  assert err.count('\n') == 1
  assert err.startswith('rlds-lite episodes: ' +
                        message.format(path=robot['path']))


def test_filter_writes_the_matches_with_a_validation_split(robot, capsys,
                                                           tmp_path):
  out_dir = tmp_path / 'out'
  code, out, err = _main(capsys, 'filter', robot['path'], '--where',
                         'length > 0', '--out', str(out_dir),
                         '--val-fraction', '0.2', '--seed', '4')
  assert code == 0, err
  path = out_dir / 'robot' / '1.0.0'
  assert out == (f'wrote 11 of 12 episodes to {path} (train: 9, '
                 'validation: 2)\n')
  assert len(rlds_lite.load(str(path), 'validation')) == 2


def test_merge_json(robot, capsys, tmp_path):
  code, out, err = _main(capsys, 'merge', robot['path'], robot['path'],
                         '--out', str(tmp_path / 'out'), '--name', 'twice',
                         '--json')
  assert code == 0, err
  assert json.loads(out) == {
      'path': str(tmp_path / 'out' / 'twice' / '1.0.0'),
      'splits': {'train': 24}, 'source_episodes': 24}


@pytest.mark.parametrize('command, message', [
    (lambda r: ['filter', r['path'], '--where', 'lenght > 2'],
     "rlds-lite filter: EXPR 'lenght > 2': no column 'lenght' (columns: "),
    (lambda r: ['filter', r['path'], '--where', 'length > 99'],
     "rlds-lite filter: no episode matches 'length > 99'; nothing was "
     'written.'),
    (lambda r: ['filter', r['path'], '--val-fraction', '0.01'],
     "rlds-lite filter: --val-fraction 0.01 of 12 episodes leaves the "
     "'validation' split empty."),
    (lambda r: ['merge', r['path'], r['path'], '--val-fraction', '1.5'],
     'rlds-lite merge: --val-fraction must be between 0 and 1 (exclusive), '
     'got 1.5.'),
    (lambda r: ['merge', r['path'], r['other']],
     'rlds-lite merge: the datasets have different features: '
     'steps/observation/image is Image(shape=(4, 4, 3), dtype=uint8) in '),
    (lambda r: ['merge', r['path'], r['root'] / 'nowhere'],
     "rlds-lite merge: dataset directory '{root}/nowhere' does not exist."),
], ids=['unknown-column', 'empty-result', 'empty-validation',
        'val-fraction-out-of-range', 'different-features', 'missing-dataset'])
def test_bad_input_is_one_line_exit_2_and_nothing_written(robot, capsys,
                                                          tmp_path, command,
                                                          message):
  if 'other' not in robot:
    robot['other'] = catalog_testing.write(
        str(robot['root'] / 'other'), image=6,
        data=catalog_testing.episodes(2, image=6))
  out_dir = tmp_path / 'out'
  args = [str(a) for a in command(robot)]
  code, out, err = _main(capsys, *args, '--out', str(out_dir))
  assert code == 2 and out == ''
  assert err.count('\n') == 1
  assert err.startswith(message.format(root=robot['root']))
  assert not out_dir.exists()


@pytest.fixture(name='six', scope='module')
def _six(tmp_path_factory):
  """6 episodes, 2 per shard (3 shards)."""
  return catalog_testing.write(str(tmp_path_factory.mktemp('six')),
                               data=catalog_testing.episodes(num_episodes=6),
                               per_file=2)


@pytest.mark.parametrize('command', [
    ['episodes', '{damaged}', '--no-cache'],
    ['filter', '{damaged}', '--where', 'length > 0', '--out', '{tmp}/out'],
    ['filter', '{damaged}', '--out', '{tmp}/out'],
    ['merge', '{six}', '{damaged}', '--out', '{tmp}/out'],
], ids=['episodes', 'filter-where', 'filter-all', 'merge'])
@pytest.mark.parametrize('case', sorted(catalog_testing.DAMAGE))
def test_a_damaged_shard_is_one_line_naming_it(six, capsys, tmp_path, case,
                                               command):
  # The catalog gave TF's own text ("{{function_node
  # __wrapped__IteratorGetNext...}} truncated record at 1538"), naming no
  # file or episode; edited shardLengths gave "could not broadcast ...".
  damaged, shard = catalog_testing.damaged(six, str(tmp_path / 'd'), case)
  args = [a.format(damaged=damaged, six=six, tmp=tmp_path) for a in command]
  code, out, err = _main(capsys, *args)
  assert (code, out) == (2, '')
  assert err == (f'rlds-lite {command[0]}: '
                 f'{catalog_testing.DAMAGE[case].format(shard=shard)}\n')
  assert not (tmp_path / 'out').exists()


@pytest.mark.parametrize('command, out, message', [
    (['filter', '{path}'], '{path}/inner',
     'rlds-lite filter: {path}/inner is inside the source {path}; writing '
     'there would change the source dataset. Choose an output outside it.'),
    (['filter', '{path}', '--where', 'length > 2'], '{path}/a/b',
     'rlds-lite filter: {path}/a/b is inside the source {path}; writing '
     'there would change the source dataset. Choose an output outside it.'),
    (['merge', '{path}', '{path}'], '{path}/merged',
     'rlds-lite merge: {path}/merged is inside the source {path}; writing '
     'there would change the source dataset. Choose an output outside it.'),
], ids=['filter-inside', 'filter-deep-inside-with-expr', 'merge-inside'])
def test_an_output_inside_a_source_is_refused(robot, capsys, command, out,
                                              message):
  fill = lambda s: s.format(path=robot['path'])
  before = sorted(os.listdir(robot['path']))
  code, printed, err = _main(capsys, *map(fill, command), '--out', fill(out))
  assert (code, printed, err) == (2, '', fill(message) + '\n')
  assert sorted(os.listdir(robot['path'])) == before
