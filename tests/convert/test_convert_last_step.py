"""Last-step values through every converter: never dropped silently.

RLDS says a last step's action, reward and discount are invalid, and the
transition formats have no place for them: by default (``last_step=
'invalid'``) a writer leaves them out and warns once, naming the fields and
the number of episodes. Data whose last step holds real values (a success
reward on the final step, as much Open X-Embodiment data has) is written
with ``last_step='valid'``: every step becomes a transition, and reading
with ``'valid'`` gives the episodes back exactly. Named cases, per format.
"""

import os
import warnings

import numpy as np
import pytest

import convert_testing
from rlds_lite import cli
from rlds_lite.convert import ConversionError
from rlds_lite.convert import episodes as episodes_lib
from rlds_lite.convert import files
from rlds_lite.convert import transitions
from rlds_lite.dense import LastStepValuesWarning

FORMATS = {'minari': 'minari/test/last-v0', 'd4rl': 'd4rl.h5', 'il': 'il.npz',
           'webdataset': 'shards', 'ted': 'ted.h5', 'alf': 'alf.npz'}


def _episode(length, terminated, seed, last_reward=0.0, last_action=0.0):
  """RLDS-style steps (zero last values) with the last values given."""
  episode = convert_testing.make_episode(length, terminated, seed=seed)
  steps = episode['steps']
  steps['reward'][-1] = last_reward
  steps['action'][-1] = last_action
  return {'steps': steps}


def _valid_episode(length, terminated, seed):
  """A step per real (o, a, r): discount 0 only after a terminal last step."""
  rng = np.random.default_rng(seed)
  discount = np.ones(length, np.float32)
  discount[-1] = 0.0 if terminated else 1.0
  return {'steps': {
      'observation': rng.normal(size=(length, 3)).astype(np.float32),
      'action': rng.normal(size=(length, 2)).astype(np.float32),
      'reward': (np.arange(length) == length - 1).astype(np.float32),
      'discount': discount,
      **episodes_lib.rlds_flags(length, terminated)}}


def _write(fmt, episodes, tmp_path, **options):
  return files.write_episodes(fmt, episodes,
                              os.path.join(tmp_path, FORMATS[fmt]), **options)


DROPPED = {
    # name: (episodes, expected counts in the warning, as 'field (n of N')
    'terminal_success_reward': (
        lambda: [_episode(4, True, 0, last_reward=1.0), _episode(3, False, 1)],
        ['reward (1 of 2 episodes)']),
    'truncated_last_reward': (
        lambda: [_episode(3, False, 2, last_reward=-1.0)],
        ['reward (1 of 1 episodes)']),
    'actions_on_last_steps': (
        lambda: [_episode(3, True, 3, last_action=0.5),
                 _episode(2, False, 4, last_action=1.0)],
        ['action (2 of 2 episodes)']),
}


@pytest.mark.parametrize('fmt', FORMATS)
@pytest.mark.parametrize('make, expected', DROPPED.values(),
                         ids=DROPPED.keys())
def test_dropped_values_warn_once_naming_field_and_episodes(tmp_path, fmt,
                                                            make, expected):
  # Before: dropped silently (a D4RL export of all-zero success rewards).
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    path = _write(fmt, make(), tmp_path)
  mine = [w for w in caught if issubclass(w.category, LastStepValuesWarning)]
  assert len(mine) == 1
  message = str(mine[0].message)
  for text in expected:
    assert text in message
  assert "last_step='valid' (command line: --last-step valid)" in message
  back = list(files.read_episodes(fmt, path))
  assert [float(e['steps']['reward'][-1]) for e in back] == [0.0] * len(back)


@pytest.mark.parametrize('fmt', FORMATS)
def test_zero_last_values_do_not_warn(tmp_path, fmt):
  episodes = [_episode(4, True, 5), _episode(2, False, 6)]
  with warnings.catch_warnings():
    warnings.simplefilter('error', LastStepValuesWarning)
    path = _write(fmt, episodes, tmp_path)
  convert_testing.assert_episodes_equal(
      [{'steps': {k: v for k, v in e['steps'].items()
                  if k in episodes[0]['steps']}}
       for e in files.read_episodes(fmt, path)],
      episodes, metadata=False)


VALID = {
    'terminal_and_truncated': [_valid_episode(4, True, 7),
                               _valid_episode(3, False, 8)],
    'one_step_episodes': [_valid_episode(1, True, 9),
                          _valid_episode(1, False, 10)],
}


@pytest.mark.parametrize('fmt', FORMATS)
@pytest.mark.parametrize('episodes', VALID.values(), ids=VALID.keys())
def test_valid_last_steps_round_trip_exactly(tmp_path, fmt, episodes):
  with warnings.catch_warnings():
    warnings.simplefilter('error', LastStepValuesWarning)
    path = _write(fmt, episodes, tmp_path, last_step='valid')
  back = list(files.read_episodes(fmt, path, last_step='valid'))
  convert_testing.assert_episodes_equal(back, episodes, metadata=False)


def test_valid_writes_every_step_as_a_row():
  from rlds_lite.convert import d4rl  # pylint: disable=g-import-not-at-top
  episode = _valid_episode(3, True, 11)
  rows = d4rl.to_d4rl([episode], last_step='valid')
  assert rows['rewards'].tolist() == [0.0, 0.0, 1.0]
  assert rows['terminals'].tolist() == [False, False, True]
  observations = episode['steps']['observation']
  np.testing.assert_array_equal(rows['next_observations'][-1],
                                observations[-1])   # A placeholder.
  default = [e['steps'] for e in d4rl.from_d4rl(rows)]
  assert len(default[0]['reward']) == 4   # Read as RLDS: + a final step.


def test_reading_valid_needs_more_than_a_final_observation(tmp_path):
  episodes = [convert_testing.make_episode(1, False)]   # 0 transitions.
  path = files.write_episodes('minari', episodes,
                              os.path.join(tmp_path, FORMATS['minari']))
  with pytest.raises(ConversionError, match=r"episode 0, field 'is_last': has "
                     r'one step, only a final observation: with '
                     r"last_step='valid'"):
    list(files.read_episodes('minari', path, last_step='valid'))


@pytest.mark.parametrize('function', [
    lambda: files.write_episodes('alf', [_valid_episode(2, True, 0)], 'x.npz',
                                 last_step='keep'),
    lambda: transitions.last_step_policy('keep', 'to_d4rl'),
], ids=['writer', 'policy'])
def test_last_step_must_be_valid_or_invalid(function):
  with pytest.raises(ValueError, match="last_step must be LastStep.INVALID"):
    function()


def test_rlds_takes_no_last_step(tmp_path):
  with pytest.raises(ValueError, match="^rlds does not take "
                     "last_step='valid' when written$"):
    files.write_episodes('rlds', [_valid_episode(2, True, 0)],
                         tmp_path / 'x', last_step='valid')


def test_convert_cli_warns_in_one_line_and_valid_round_trips(tmp_path, capsys):
  source = files.write_episodes(
      'rlds', [_valid_episode(4, True, 12), _valid_episode(3, False, 13)],
      tmp_path / 'source')
  target = str(tmp_path / 'default.h5')
  assert cli.main(['convert', '--from', 'rlds', '--to', 'd4rl', source,
                   target, '--no-progress']) == 0
  out, err = capsys.readouterr()
  assert out.startswith('converted 2 episodes (7 steps)')
  assert err.splitlines() == [
      'rlds-lite convert: warning: to_d4rl: left out non-zero last-step '
      'values of action (2 of 2 episodes), discount (1 of 2 episodes), reward '
      '(2 of 2 episodes): this format has no row for a last step, whose '
      "action, reward and discount RLDS says are invalid; pass "
      "last_step='valid' (command line: --last-step valid) to keep them."]
  kept = str(tmp_path / 'valid.h5')
  back = str(tmp_path / 'back')
  for args in (['--from', 'rlds', '--to', 'd4rl', source, kept],
               ['--from', 'd4rl', '--to', 'rlds', kept, back]):
    assert cli.main(['convert', *args, '--last-step', 'valid',
                     '--no-progress']) == 0
    assert capsys.readouterr().err == ''
  convert_testing.assert_episodes_equal(
      list(files.read_episodes('rlds', back)),
      list(files.read_episodes('rlds', source)), metadata=False)
