"""``rlds-lite validate``: exit 0 on a good dataset, 1 listing problems."""

import json
import os

import numpy as np
import pytest

import checks_testing
import rlds_lite
from rlds_lite import cli
from rlds_lite import tfds as rlds_tfds


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
    (['{good}', '--last-step-invalid', '--last-step', 'valid'],
     'rlds-lite validate: --last-step-invalid and --last-step valid '
     'contradict each other (invalid final-step values, or real ones?); pass '
     'one of them.'),
], ids=['not-a-dataset', 'unknown-name', 'bad-max-problems',
        'contradicting-last-step-flags'])
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


def _five_in_three_shards(data_dir, broken_is_last=None):
  """5 Catch episodes of 10 steps in shards of 2, 2 and 1 episodes."""
  episodes = checks_testing.catch_episodes(5)
  if broken_is_last is not None:
    episodes[broken_is_last]['is_last'][-1] = False
  features = {'steps': {
      'observation': {'image': episodes[0]['observation']['image'][0]},
      'action': np.int64(0), 'reward': np.float32(0), 'is_terminal': True}}
  with rlds_tfds.EpisodeWriter(data_dir, 'catch', features,
                               max_episodes_per_file=2) as writer:
    for episode in episodes:
      writer.add_episode({'steps': episode})
  return writer.path


def _truncate(path, shard):
  name = os.path.join(path, f'catch-train.tfrecord-{shard:05d}')
  os.truncate(name, os.path.getsize(name) - 100)


def _raise_shard_length(path, shard, length):
  info_path = os.path.join(path, 'dataset_info.json')
  with open(info_path) as f:
    info = json.load(f)
  info['splits'][0]['shardLengths'][shard] = str(length)
  with open(info_path, 'w') as f:
    json.dump(info, f)


def _remove(path, *shards):
  for shard in shards:
    os.remove(os.path.join(path, f'catch-train.tfrecord-{shard:05d}'))


_FILE = ['-', '-', '-', 'corrupt_file']


def _flip(path, shard, offset=100):
  name = os.path.join(path, f'catch-train.tfrecord-{shard:05d}')
  with open(name, 'r+b') as f:
    f.seek(offset)
    byte = f.read(1)[0]
    f.seek(offset)
    f.write(bytes([byte ^ 0xFF]))


@pytest.mark.parametrize('damage, broken, headline, rows', [
    (lambda p: _truncate(p, 2), None,
     '1 problem in 4 episodes (40 steps); 1 episode not read (a damaged file)',
     [['4', '-', '-', 'corrupt_file']]),
    (lambda p: _truncate(p, 1), None,
     '1 problem in 4 episodes (40 steps); 1 episode not read (a damaged file)',
     [['3', '-', '-', 'corrupt_file']]),
    (lambda p: _raise_shard_length(p, 2, 3), None,
     '1 problem in 5 episodes (50 steps); 2 episodes not read '
     '(a damaged file)', [['5', '-', '-', 'corrupt_file']]),
    (lambda p: _remove(p, 0), None,
     '1 problem in 3 episodes (30 steps); 2 episodes not read '
     '(a damaged file)', [_FILE]),
    (lambda p: _truncate(p, 2), 1,
     '2 problems in 4 episodes (40 steps); 1 episode not read (a damaged file)',
     [['4', '-', '-', 'corrupt_file'], ['1', '9', 'is_last',
                                        'is_last_missing']]),
    (lambda p: _remove(p, 1), 4,
     '2 problems in 3 episodes (30 steps); 2 episodes not read '
     '(a damaged file)', [_FILE, ['4', '9', 'is_last', 'is_last_missing']]),
    (lambda p: _remove(p, 0, 1, 2), None,
     '3 problems in 0 episodes (0 steps); 5 episodes not read '
     '(3 damaged files)', [_FILE] * 3),
    # A checksum found while reading, after a shard known to be missing: it
    # was taken for the missing one and went unreported.
    (lambda p: (_remove(p, 0), _flip(p, 2)), None,
     '2 problems in 2 episodes (20 steps); stopped early (2 damaged files)',
     [_FILE, ['4', '-', '-', 'corrupt_file']]),
    (lambda p: None, None, 'OK in 5 episodes (50 steps)', []),
], ids=['last-shard-truncated', 'middle-shard-truncated',
        'shard-lengths-raised', 'first-shard-missing',
        'a-problem-before-a-truncated-shard',
        'a-problem-after-a-missing-shard', 'every-shard-missing',
        'a-flipped-byte-after-a-missing-shard', 'whole'])
def test_episodes_around_damaged_shards_are_checked_and_counted(
    tmp_path, capsys, damage, broken, headline, rows):
  # A damaged shard stopped the pass where it was read, or before it started
  # ("1 problem in 0 episodes (0 steps)" for a missing first shard), though
  # the episodes of the other shards are whole. Problems after the gap name
  # their own episode (4, not the 3rd episode read).
  path = _five_in_three_shards(str(tmp_path), broken)
  damage(path)
  code = cli.main(['validate', path, '--no-progress'])
  lines = capsys.readouterr().out.splitlines()
  assert lines[0] == f'{path} [train]: {headline}'
  assert code == (0 if headline.startswith('OK') else 1)
  # Files first (found before the pass), then steps.
  assert [line.split()[:4] for line in lines[3:]] == rows


def test_json_counts_the_episodes_damaged_files_keep_from_the_pass(
    tmp_path, capsys):
  path = _five_in_three_shards(str(tmp_path))
  _remove(path, 1)
  assert cli.main(['validate', path, '--json', '--no-progress']) == 1
  report = json.loads(capsys.readouterr().out)
  assert (report['complete'], report['episodes'], report['unread']) == (
      False, 3, 2)


@pytest.mark.parametrize('episodes, headline', [
    (1, 'OK in 1 episode (10 steps)'),
    (2, 'OK in 2 episodes (20 steps)'),
], ids=['one', 'two'])
def test_the_headline_counts_in_the_singular_and_plural(tmp_path, capsys,
                                                        episodes, headline):
  # It said "in 1 episodes".
  path = checks_testing.write_catch(
      str(tmp_path), checks_testing.catch_episodes(episodes))
  assert cli.main(['validate', path]) == 0
  assert capsys.readouterr().out == f'{path} [train]: {headline}\n'


def test_max_problems_and_repairs_are_told_apart_from_damage(tmp_path):
  # With a damaged file among the problems, the headline blamed it when
  # max_problems stopped the pass, and said "repaired: is_last" though
  # nothing was repaired (report.repaired was None).
  path = _five_in_three_shards(str(tmp_path), broken_is_last=4)
  _remove(path, 1)
  report = rlds_lite.validate(path, max_problems=2)
  assert report.headline() == (
      f'{path} [train]: 2 problems in 3 episodes (30 steps); stopped early '
      '(max_problems reached)')
  report = rlds_lite.validate(path, repair='is_last')
  assert report.repaired is None
  assert report.headline() == (
      f'{path} [train]: 2 problems in 3 episodes (30 steps); 2 episodes not '
      'read (a damaged file); not repaired (a damaged file)')


def test_a_slice_is_read_around_damage_and_numbered_from_its_start(tmp_path):
  # A slice with damage checked nothing ("1 problem in 0 episodes").
  path = _five_in_three_shards(str(tmp_path), broken_is_last=4)
  _remove(path, 1)  # Episodes 2-3.
  report = rlds_lite.validate(path, split='train[1:]')
  assert report.headline() == (
      f'{path} [train[1:]]: 2 problems in 2 episodes (20 steps); 2 episodes '
      'not read (a damaged file)')
  # Episode 4 of the split is the slice's episode 3, as in a whole slice.
  assert [(p.episode, p.kind) for p in report.problems] == [
      (None, 'corrupt_file'), (3, 'is_last_missing')]
