"""``rlds-lite stats``, run as a user runs it (subprocesses, started together).

``--json --plot`` and a missing path run as subprocesses (started together);
the table and the other bad-input cases run in-process (``cli.main``, the same
code) to keep the suite fast.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow_datasets as tfds

from rlds_lite import cli
from rlds_lite import synthetic
from rlds_lite.tfds import write_dataset
import stats_testing
import tfds_fixtures

PREFIX = 'rlds-lite stats: '


@pytest.fixture(name='runs', scope='module')
def _runs(tmp_path_factory):
  root = tmp_path_factory.mktemp('stats_cli')
  path = write_dataset(synthetic.episodes(num_episodes=10, seed=2),
                       str(root / 'data'), 'points')
  not_rlds = tfds_fixtures.write_dataset(
      str(root / 'other'), 'flat', tfds.features.FeaturesDict({'x': np.float32}),
      {'train': [{'x': np.float32(1.0)}]})
  nonfinite = write_dataset(stats_testing.to_dataset(
      stats_testing.nonfinite_episodes()), str(root / 'nonfinite'), 'nan_inf')
  plot = str(root / 'out' / 'stats.png')
  nonfinite_plot = str(root / 'out' / 'nonfinite.png')
  commands = {
      'json': [path, '--json', '--keys', 'action,reward', '--no-cache',
               '--plot', plot],
      'missing': [str(root / 'nowhere')],
      'nonfinite': [nonfinite, '--json', '--no-cache', '--plot',
                    nonfinite_plot],
  }
  env = {**os.environ, 'TF_CPP_MIN_LOG_LEVEL': '3'}
  procs = {name: subprocess.Popen(
      [sys.executable, '-m', 'rlds_lite.cli', 'stats', *args],
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
           for name, args in commands.items()}
  results = {}
  for name, proc in procs.items():
    out, err = proc.communicate(timeout=600)
    results[name] = (proc.returncode, out, err)
  return {'results': results, 'plot': plot, 'path': path,
          'not_rlds': not_rlds, 'root': root, 'nonfinite': nonfinite,
          'nonfinite_plot': nonfinite_plot}


def test_table(runs, capsys):
  assert cli.main(['stats', runs['path'], '--no-progress']) == 0
  out, err = capsys.readouterr()
  assert err == ''
  lines = out.splitlines()
  arrays = synthetic.episode_arrays(num_episodes=10, seed=2)
  steps = sum(len(e['reward']) for e in arrays)
  terminated = sum(bool(e['is_terminal'][-1]) for e in arrays)
  assert lines[0] == (f'10 episodes, {steps} steps: {terminated} terminated, '
                      f'{10 - terminated} truncated')
  assert lines[1].split() == ['field', 'count', 'mean', 'std', 'min', 'p01',
                              'p50', 'p99', 'max']
  rows = {line.split()[0]: line.split() for line in lines[3:]
          if not line.startswith(('episode', 'plot:'))}
  assert sorted(rows) == ['action[0]', 'action[1]', 'discount',
                          'observation[0]', 'observation[1]', 'observation[2]',
                          'observation[3]', 'reward']
  actions = np.concatenate([e['action'][:-1] for e in arrays])
  assert int(rows['action[0]'][1]) == len(actions)
  assert float(rows['action[0]'][4]) == pytest.approx(
      float(actions[:, 0].min()), rel=1e-3)


def test_json_and_plot(runs):
  code, out, err = runs['results']['json']
  assert code == 0, err[-2000:]
  assert err.splitlines()[-1] == f'plot: {runs["plot"]}'  # Not in the JSON.
  with open(runs['plot'], 'rb') as f:
    assert f.read(8) == b'\x89PNG\r\n\x1a\n'
  summary = json.loads(out)
  assert summary['num_episodes'] == 10
  assert sorted(summary['fields']) == ['action', 'reward']
  arrays = synthetic.episode_arrays(num_episodes=10, seed=2)
  rewards = np.concatenate([e['reward'][:-1] for e in arrays]).astype(float)
  reward = summary['fields']['reward']
  assert reward['count'] == len(rewards)
  assert reward['mean'] == pytest.approx(rewards.mean(), rel=1e-6)
  assert reward['std'] == pytest.approx(rewards.std(), rel=1e-6)
  assert reward['min'] == float(rewards.min())
  assert len(summary['fields']['action']['p99']) == 2


def test_missing_path_exits_non_zero_with_one_line(runs):
  code, out, err = runs['results']['missing']
  assert code == 2
  assert out == ''
  ours = [line for line in err.splitlines() if line.startswith(PREFIX)]
  assert ours == [
      f"{PREFIX}dataset directory '{runs['root']}/nowhere' does not exist."]
  assert err.rstrip('\n').endswith(ours[0])
  assert 'Traceback' not in err


@pytest.mark.parametrize('args, message', [
    (lambda r: [r['not_rlds']], "dataset '{not_rlds}' is not an RLDS "
     "dataset: it has no 'steps' feature"),
    (lambda r: [r['path'], '--keys', 'observation/velocity'],
     "no step field 'observation/velocity' (step fields: action, discount, "
     'is_first, is_last, is_terminal, observation, reward).'),
    (lambda r: [r['path'], '--split', 'test'],
     "dataset '{path}' has no split 'test' (its splits: ['train'])."),
    (lambda r: [r['path'], '--keys', ''],
     "--keys '' names no field; give one or more, e.g. --keys "
     'action,observation/pos, or leave it out for all.'),
    (lambda r: [r['path'], '--keep-last-step', '--last-step', 'invalid'],
     '--keep-last-step and --last-step invalid contradict each other; pass '
     'one of them.'),
], ids=['not-rlds', 'unknown-key', 'unknown-split', 'empty-keys',
        'contradicting-last-step-flags'])
def test_bad_input_exits_non_zero_with_one_line(runs, capsys, args, message):
  assert cli.main(['stats', *args(runs), '--no-progress']) == 2
  out, err = capsys.readouterr()
  assert out == ''
  assert err.count('\n') == 1 and err.startswith(PREFIX)
  assert err[len(PREFIX):].startswith(
      message.format(not_rlds=runs['not_rlds'], path=runs['path']))


def test_unwritable_plot_path_exits_non_zero_with_one_line(runs, capsys,
                                                           tmp_path):
  blocker = tmp_path / 'a_file'
  blocker.write_text('')
  plot = str(blocker / 'stats.png')
  assert cli.main(['stats', runs['path'], '--no-progress', '--keys', 'reward',
                   '--plot', plot]) == 2
  out, err = capsys.readouterr()
  assert out == ''  # Nothing printed before the failure.
  assert err == (f'{PREFIX}--plot: {plot}: its directory {blocker} is not a '
                 'directory\n')


def test_split_defaults_to_the_first_split_without_train(tmp_path, capsys):
  path = write_dataset(synthetic.episodes(num_episodes=3, seed=4),
                       str(tmp_path), 'eval_only', split='eval')
  assert cli.main(['stats', path, '--no-progress', '--no-cache', '--json']) == 0
  summary = json.loads(capsys.readouterr().out)
  assert summary['num_episodes'] == 3


@pytest.fixture(name='success_reward_path')
def _success_reward_path(tmp_path):
  """Episodes whose success reward sits on the last step (Open X style)."""
  from rlds_lite.tfds import EpisodeWriter  # pylint: disable=g-import-not-at-top
  episode = {'steps': {'observation': np.zeros((3, 2), np.float32),
                       'reward': np.array([0, 0, 1], np.float32),
                       'language_instruction': ['pick'] * 3,
                       'is_last': [False, False, True],
                       'is_terminal': [False, False, True]}}
  with EpisodeWriter(tmp_path, 'success', episode) as writer:
    writer.add_episode(episode)
    writer.add_episode(episode)
  return writer.path


@pytest.mark.parametrize('options', [[], ['--no-cache']], ids=['cached',
                                                               'not-cached'])
def test_dropped_last_step_values_are_one_warning_line(success_reward_path,
                                                       capsys, options):
  for _ in range(2):   # The second run is a cache hit: the same warning.
    assert cli.main(['stats', success_reward_path, '--no-progress',
                     *options]) == 0
    out, err = capsys.readouterr()
    assert err == (
        f'{PREFIX}warning: left out non-zero last-step values of reward (2 of '
        "2 episodes): RLDS says a last step's action, reward and discount are "
        "invalid; pass last_step='valid' (command line: --last-step valid) to "
        'keep them.\n')
    assert 'episode return      2' in out   # 'count' column: 2 episodes.
    assert [l for l in out.splitlines() if l.startswith('language')][0].split(
    )[:3] == ['language_instruction', '6', '1']


@pytest.mark.parametrize('flag', [['--last-step', 'valid'],
                                  ['--keep-last-step']])
def test_last_step_valid_counts_them_quietly(success_reward_path, capsys,
                                             flag):
  assert cli.main(['stats', success_reward_path, '--no-progress', '--json',
                   *flag]) == 0
  out, err = capsys.readouterr()
  assert err == ''
  summary = json.loads(out)
  assert summary['episode_return']['mean'] == 1.0
  assert summary['last_step_values'] == {'reward': 2}
  assert summary['source']['last_step'] == 'valid'


NONFINITE_WARNING = (
    f'{PREFIX}warning: non-finite values in episode_return (1 NaN), action '
    '(1 NaN), observation (1 NaN, 2 inf), reward (1 NaN): left out of mean, '
    'std, min, max and quantiles, which are of the finite values (counted in '
    'nan_count and inf_count).')


def _strict_json(text):
  def refuse(constant):
    raise ValueError(f'not strict JSON: {constant}')
  return json.loads(text, parse_constant=refuse)


def test_nonfinite_values_json_is_strict_and_the_plot_is_drawn(runs):
  code, out, err = runs['results']['nonfinite']
  assert code == 0, err[-2000:]
  assert err.splitlines() == [NONFINITE_WARNING,
                              f'plot: {runs["nonfinite_plot"]}'], err[-3000:]
  with open(runs['nonfinite_plot'], 'rb') as f:
    assert f.read(8) == b'\x89PNG\r\n\x1a\n'
  summary = _strict_json(out)
  observation = summary['fields']['observation']
  assert (observation['count'], observation['nan_count'],
          observation['inf_count']) == (7, [1, 0, 0, 0], [0, 2, 0, 0])
  values = np.concatenate([e['observation'] for e in
                           stats_testing.nonfinite_episodes()])
  finite = values[np.isfinite(values[:, 1]), 1]
  assert observation['mean'][1] == pytest.approx(finite.mean(), rel=1e-12)
  assert observation['max'][1] == finite.max()
  assert summary['episode_return']['nan_count'] == 1
  assert summary['episode_return']['mean'] is not None  # The other episode.


def test_nonfinite_values_table_counts_them(runs, capsys):
  assert cli.main(['stats', runs['nonfinite'], '--no-progress',
                   '--no-cache']) == 0
  out, err = capsys.readouterr()
  assert err == NONFINITE_WARNING + '\n'
  lines = out.splitlines()
  assert lines[1].split() == ['field', 'count', 'nan', 'inf', 'mean', 'std',
                              'min', 'p01', 'p50', 'p99', 'max']
  rows = {line.split()[0]: line.split() for line in lines[3:] if line}
  assert rows['observation[0]'][1:4] == ['7', '1', '0']
  assert rows['observation[1]'][1:4] == ['7', '0', '2']
  assert rows['reward'][1:4] == ['5', '1', '0']
  assert 'nan, inf: values left out of mean, std, min, p01-p99 and max' in out
