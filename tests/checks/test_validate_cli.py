"""``rlds-lite validate``: exit 0 on a good dataset, 1 listing problems."""

import json

import pytest

import checks_testing
from rlds_lite import cli


@pytest.fixture(scope='module')
def datasets(tmp_path_factory):
  data_dir = str(tmp_path_factory.mktemp('data'))
  good = checks_testing.write_catch(data_dir, checks_testing.catch_episodes(2),
                                    'good_catch')
  episodes = checks_testing.catch_episodes(3)
  episodes[1]['is_last'][-1] = False  # A broken is_last (OXE#11).
  episodes[2]['is_last'][-1] = False
  bad = checks_testing.write_catch(data_dir, episodes, 'bad_catch')
  return good, bad


def test_validate_lists_problems_and_exits_1(datasets, capsys):
  # In-process; tests/test_cli.py runs every command as a subprocess.
  _, bad = datasets
  assert cli.main(['validate', bad, '--no-progress']) == 1
  out, err = capsys.readouterr()
  assert err == ''
  lines = out.splitlines()
  assert lines[0] == f'{bad} [train]: 2 problems in 3 episodes (30 steps)'
  assert [line.split()[:4] for line in lines[3:]] == [
      ['1', '9', 'is_last', 'is_last_missing'],
      ['2', '9', 'is_last', 'is_last_missing']]


def test_missing_path_is_one_line_without_traceback(capsys):
  assert cli.main(['validate', '/no/such/rlds_dataset']) == 2
  assert capsys.readouterr() == (
      '', "rlds-lite validate: dataset directory '/no/such/rlds_dataset' does "
      'not exist.\n')


def test_validate_good_dataset_exits_0(datasets, capsys):
  good, _ = datasets
  assert cli.main(['validate', good, '--last-step-invalid']) == 0
  assert capsys.readouterr().out == (
      f'{good} [train]: OK in 2 episodes (20 steps)\n')


def test_validate_json(datasets, capsys):
  _, bad = datasets
  assert cli.main(['validate', bad, '--json', '--max-problems', '1']) == 1
  data = json.loads(capsys.readouterr().out)
  assert (data['ok'], data['complete'], data['episodes']) == (False, False, 2)
  assert data['problems'] == [{
      'episode': 1, 'step': 9, 'field': 'is_last', 'kind': 'is_last_missing',
      'message': 'the final step (index 9) must have is_last=True.'}]


@pytest.mark.parametrize('args, message', [
    (['{empty}'], "rlds-lite validate: '{empty}' is not a TFDS dataset "
     'directory: no dataset_info.json'),
    (['no_such_registered_rlds'], "rlds-lite validate: no TFDS dataset named "
     "'no_such_registered_rlds'"),
    (['{good}', '--max-problems', '0'],
     'rlds-lite validate: --max-problems must be at least 1.'),
], ids=['not-a-dataset', 'unknown-name', 'bad-max-problems'])
def test_bad_input_exits_2(datasets, tmp_path, capsys, args, message):
  fill = {'empty': str(tmp_path), 'good': datasets[0]}
  assert cli.main(['validate', *[a.format(**fill) for a in args]]) == 2
  err = capsys.readouterr().err
  assert err.count('\n') == 1
  assert err.startswith(message.format(**fill))


@pytest.fixture(name='success_reward')
def _success_reward(tmp_path):
  episodes = checks_testing.catch_episodes(2)
  for episode in episodes:
    episode['reward'][-1] = 1.0   # A success reward on the last step.
  return checks_testing.write_catch(str(tmp_path), episodes, 'success')


def test_last_step_values_are_a_notice_and_exit_0(success_reward, capsys):
  # Before: 'OK in 2 episodes', while stats and converters dropped them.
  assert cli.main(['validate', success_reward, '--no-progress']) == 0
  out, err = capsys.readouterr()
  assert err == ''
  assert out.splitlines() == [
      f'{success_reward} [train]: OK in 2 episodes (20 steps); 1 notice',
      "notice: field 'reward': non-zero on the last step of 2 of 2 episodes; "
      'RLDS says it is invalid, so stats, transitions and converters leave it '
      "out by default: if it is real (e.g. a success reward), use "
      "last_step='valid' (--last-step valid)."]
  assert cli.main(['validate', success_reward, '--json']) == 0
  assert json.loads(capsys.readouterr().out)['notices'][0]['episodes'] == 2


def test_last_step_valid_has_no_notice_and_invalid_fails(success_reward,
                                                         capsys):
  assert cli.main(['validate', success_reward, '--last-step', 'valid']) == 0
  assert capsys.readouterr().out == (
      f'{success_reward} [train]: OK in 2 episodes (20 steps)\n')
  assert cli.main(['validate', success_reward, '--last-step-invalid']) == 1
  assert 'last_step_value' in capsys.readouterr().out
