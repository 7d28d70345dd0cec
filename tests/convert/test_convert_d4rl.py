"""D4RL-style dicts <-> RLDS: layout, end semantics, round trips, bad input."""

import h5py
from hypothesis import given
from hypothesis import settings
import numpy as np
import pytest

import convert_testing
import rlds_lite
from rlds_lite import convert
from rlds_lite.convert import d4rl


def d4rl_reference(episodes):
  """NumPy reference of the D4RL rows of RLDS Episodes (flat '/' keys)."""
  rows = {}

  def add(key, value):
    if isinstance(value, dict):
      for sub, leaf in value.items():
        add(f'{key}/{sub}', leaf)
    else:
      rows.setdefault(key, []).append(value)

  for episode in episodes:
    steps = episode['steps']
    length = len(steps['is_last'])
    terminated = bool(steps['is_terminal'][-1])
    obs = steps['observation']
    cut = lambda nest, a, b: ({k: v[a:b] for k, v in nest.items()}
                              if isinstance(nest, dict) else nest[a:b])
    add('observations', cut(obs, 0, length - 1))
    add('next_observations', cut(obs, 1, length))
    add('actions', cut(steps['action'], 0, length - 1))
    add('rewards', steps['reward'][:length - 1])
    last = np.arange(length - 1) == length - 2
    add('terminals', last & terminated)
    add('timeouts', last & (not terminated))
  return {k: np.concatenate(v) for k, v in rows.items()}


@pytest.mark.parametrize('name', [n for n in convert_testing.NAMED_EPISODES
                                  if n not in ('empty', 'one-step',
                                               'mixed-ends')])
def test_named_cases_layout_and_round_trip(name, tmp_path):
  episodes = convert_testing.NAMED_EPISODES[name]
  rows = d4rl.to_d4rl(episodes, tmp_path / 'd.hdf5')
  expected = d4rl_reference(episodes)
  convert_testing.assert_episodes_equal([{'steps': rows}],
                                        [{'steps': expected}])
  for source in (rows, tmp_path / 'd.hdf5', str(tmp_path / 'd.hdf5')):
    convert_testing.assert_episodes_equal(list(d4rl.from_d4rl(source)),
                                          episodes, metadata=False)


def test_one_step_episodes_have_no_rows():
  episodes = convert_testing.NAMED_EPISODES['mixed-ends']  # episode 1: T = 1
  with pytest.raises(convert.ConversionError) as error:
    d4rl.to_d4rl(episodes)
  assert str(error.value) == (
      "<episodes>: episode 1, field 'is_last': has one step (only a final "
      "observation), so no D4RL row; pass one_step='skip' to leave such "
      'episodes out')
  rows = d4rl.to_d4rl(episodes, one_step='skip')
  kept = [episodes[0], episodes[2], episodes[3]]
  convert_testing.assert_episodes_equal([{'steps': rows}],
                                        [{'steps': d4rl_reference(kept)}])
  convert_testing.assert_episodes_equal(list(d4rl.from_d4rl(rows)), kept,
                                        metadata=False)
  with pytest.raises(ValueError, match='to_d4rl: no episodes with rows'):
    d4rl.to_d4rl(convert_testing.NAMED_EPISODES['one-step'], one_step='skip')
  with pytest.raises(ValueError, match='to_d4rl: no episodes with rows'):
    d4rl.to_d4rl([])


@settings(max_examples=30)
@given(convert_testing.rlds_episodes(allow_one_step=False))
def test_round_trip_rlds_d4rl_rlds_is_exact(episodes):
  convert_testing.assert_episodes_equal(
      list(d4rl.from_d4rl(d4rl.to_d4rl(episodes))), episodes, metadata=False)


def test_from_tf_dataset_and_to_tfds(tmp_path):
  episodes = convert_testing.NAMED_EPISODES['nested']
  rows = d4rl.to_d4rl(convert.to_dataset(episodes))  # an RLDS dataset in
  out = d4rl.d4rl_to_tfds(rows, tmp_path, 'from_d4rl')
  back = list(convert.numpy_episodes(rlds_lite.load(out, dense=True)))
  convert_testing.assert_episodes_equal(back, episodes, metadata=False)


def test_stored_discount_and_infos_round_trip():
  episode = convert_testing.make_episode(4, terminated=True, seed=3)
  episode['steps']['discount'] = np.array([.9, .9, 0., 0.], np.float32)
  episode['steps']['infos'] = {'qpos': np.array([[1.], [2.], [3.], [0.]])}
  rows = d4rl.to_d4rl([episode])
  assert rows['discounts'].tolist() == pytest.approx([.9, .9, 0.])
  assert rows['infos/qpos'][:, 0].tolist() == [1., 2., 3.]
  convert_testing.assert_episodes_equal(list(d4rl.from_d4rl(rows)), [episode],
                                        metadata=False)


def _rows(count=5, **overrides):
  data = {
      'observations': np.arange(count, dtype=np.float32)[:, None],
      'actions': np.arange(count, dtype=np.float32)[:, None] * 10,
      'rewards': np.ones(count, np.float32),
      'terminals': np.arange(count) == 1,
      'timeouts': np.arange(count) == count - 1,
  }
  data.update(overrides)
  return {k: v for k, v in data.items() if v is not None}


# The semantics table (docs/convert_minari_d4rl.md), D4RL rows: end flags of
# the rows -> episodes and the RLDS flags and discount of each.
@pytest.mark.parametrize('terminals, timeouts, is_terminal, discount', [
    ([0, 0, 1], [0, 0, 0], [[0, 0, 0, 1]], [[1, 1, 0, 0]]),
    ([0, 0, 0], [0, 0, 1], [[0, 0, 0, 0]], [[1, 1, 1, 0]]),
    ([0, 0, 1], [0, 0, 1], [[0, 0, 0, 1]], [[1, 1, 0, 0]]),
    ([1, 0, 0], [0, 0, 1], [[0, 1], [0, 0, 0]], [[0, 0], [1, 1, 0]]),
    ([0, 1, 1], [0, 0, 0], [[0, 0, 1], [0, 1]], [[1, 0, 0], [0, 0]]),
], ids=['terminated', 'truncated', 'both-flags-terminal-wins',
        'one-row-terminal-then-timeout', 'two-terminal-episodes'])
def test_semantics_table_d4rl(terminals, timeouts, is_terminal, discount):
  data = _rows(count=3, terminals=np.array(terminals, bool),
               timeouts=np.array(timeouts, bool))
  data['next_observations'] = data['observations'] + 100
  episodes = list(d4rl.from_d4rl(data))
  assert [e['steps']['is_terminal'].tolist() for e in episodes] == [
      [bool(x) for x in flags] for flags in is_terminal]
  assert [e['steps']['discount'].tolist() for e in episodes] == discount
  assert [e['steps']['observation'][-1, 0] for e in episodes] == [
      100. + len(d) - 2 + sum(len(p) - 1 for p in discount[:i])
      for i, d in enumerate(discount)]
  back = d4rl.to_d4rl(episodes)
  assert back['terminals'].tolist() == [bool(x) for x in terminals]
  assert back['timeouts'].tolist() == [
      bool(x) and not t for x, t in zip(timeouts, terminals)]


@pytest.mark.parametrize('final, expected', [
    ('repeat', [[0., 1., 1.], [2., 3., 4., 4.]]),
    ('zeros', [[0., 1., 0.], [2., 3., 4., 0.]]),
], ids=['repeat', 'zeros'])
def test_without_next_observations_the_final_observation_is_chosen(final,
                                                                   expected):
  episodes = list(d4rl.from_d4rl(_rows(), final_observation=final))
  observations = [e['steps']['observation'][:, 0].tolist() for e in episodes]
  assert observations == expected
  assert [e['steps']['is_terminal'].tolist() for e in episodes] == [
      [False, False, True], [False] * 4]
  assert [e['steps']['discount'].tolist() for e in episodes] == [
      [1., 0., 0.], [1., 1., 1., 0.]]
  assert episodes[1]['steps']['action'][:, 0].tolist() == [20., 30., 40., 0.]


def test_nested_flat_keys_and_terminal_wins_over_timeout():
  data = _rows(count=2, terminals=np.array([False, True]),
               timeouts=np.array([False, True]))
  data['next_observations'] = data['observations'] + 1
  data['infos/qpos'] = np.array([[7.], [8.]])
  data['metadata/algorithm'] = 'sac'  # global, ignored
  (episode,) = d4rl.from_d4rl(data)
  assert episode['steps']['is_terminal'].tolist() == [False, False, True]
  assert episode['steps']['infos']['qpos'][:, 0].tolist() == [7., 8., 0.]
  assert episode['steps']['observation'][:, 0].tolist() == [0., 1., 2.]
  assert sorted(episode) == ['steps']


@pytest.mark.parametrize('data, kwargs, episode, field, message', [
    (_rows(actions=None), {}, None, 'actions',
     'is missing; a D4RL dict needs observations, actions, rewards, terminals '
     '(and timeouts)'),
    (_rows(), {}, None, 'next_observations',
     "is missing, so each episode's final observation is unknown; pass "
     "final_observation='repeat' (repeat the last row's observation) or "
     "final_observation='zeros'"),
    (_rows(actions=np.zeros((4, 1))), {'final_observation': 'zeros'}, None,
     'actions', 'has 4 rows; rewards has 5'),
    (_rows(observations={'a': np.zeros((5, 1)), 'b': np.zeros((6,))}),
     {'final_observation': 'zeros'}, None, 'observations/b',
     'has 6 rows; rewards has 5'),
    (_rows(timeouts=np.zeros(5, bool)), {'final_observation': 'zeros'}, 1,
     'timeouts', 'neither terminals nor timeouts is set on the last row (4): '
     "rows 2..4 do not end an episode; pass repair='drop_unfinished' to drop "
     "them or repair='truncate_unfinished' to end them as a truncated "
     'episode'),
    (_rows(terminals=np.zeros(5, bool), timeouts=np.zeros(5, bool)),
     {'final_observation': 'zeros'}, 0, 'timeouts',
     'neither terminals nor timeouts is set on the last row (4): rows 0..4 do '
     "not end an episode; pass repair='drop_unfinished' to drop them or "
     "repair='truncate_unfinished' to end them as a truncated episode"),
    (_rows(rewards=np.ones((5, 2))), {}, None, 'rewards',
     'has shape (5, 2); expected [rows]'),
    # Flags as numbers: exactly 0 or 1 (astype(bool) reads NaN as True).
    (_rows(terminals=np.array([0., 1., np.nan, 0., np.nan])),
     {'final_observation': 'zeros'}, None, 'terminals',
     'holds nan at index 2; a flag stored as numbers must be 0 or 1'),
    (_rows(terminals=np.array([0., 0.5, 0., 0., 0.])),
     {'final_observation': 'zeros'}, None, 'terminals',
     'holds 0.5 at index 1; a flag stored as numbers must be 0 or 1'),
    (_rows(timeouts=np.array([[0], [0], [0], [0], [2]])),
     {'final_observation': 'zeros'}, None, 'timeouts',
     'holds 2 at index 4; a flag stored as numbers must be 0 or 1'),
    (_rows(timeouts=np.array([0, 0, 0, 0, -1], np.int8)),
     {'final_observation': 'zeros'}, None, 'timeouts',
     'holds -1 at index 4; a flag stored as numbers must be 0 or 1'),
    (_rows(terminals=np.array(['0', '1', '0', '0', '0'])),
     {'final_observation': 'zeros'}, None, 'terminals',
     'has dtype <U1; a flag must be bool or numbers 0 and 1'),
], ids=['missing-actions', 'no-final-observation', 'rows-disagree',
        'nested-rows-disagree', 'dones-never-set-at-end', 'dones-never-set',
        'rewards-2d', 'terminals-nan', 'terminals-half', 'timeouts-2',
        'timeouts-negative', 'terminals-strings'])
def test_bad_d4rl_input_names_field(data, kwargs, episode, field, message):
  """Each bad input is one error naming the field (and episode)."""
  with pytest.raises(convert.ConversionError) as error:
    d4rl.from_d4rl(data, **kwargs)
  where = f'episode {episode}, ' if episode is not None else ''
  assert str(error.value) == f"<d4rl dict>: {where}field '{field}': {message}"
  assert error.value.field == field


def test_repairs_of_unfinished_rows(tmp_path):
  data = _rows(timeouts=np.zeros(5, bool))
  path = tmp_path / 'unfinished.hdf5'
  with h5py.File(path, 'w') as file:
    for key, value in data.items():
      file.create_dataset(key, data=value)
  with pytest.raises(convert.ConversionError,
                     match=f"^{path}: episode 1, field 'timeouts'"):
    d4rl.from_d4rl(path, final_observation='zeros')
  dropped = list(d4rl.from_d4rl(path, final_observation='repeat',
                                repair='drop_unfinished'))
  assert [len(e['steps']['is_last']) for e in dropped] == [3]
  truncated = list(d4rl.from_d4rl(path, final_observation='repeat',
                                  repair='truncate_unfinished'))
  assert [e['steps']['is_terminal'][-1] for e in truncated] == [True, False]
  assert truncated[1]['steps']['observation'][:, 0].tolist() == [2., 3., 4., 4.]
  with pytest.raises(ValueError, match=r"^from_d4rl: repair='x' is unknown; "
                     r"choose from \['drop_unfinished', "
                     r"'truncate_unfinished'\]\.$"):
    d4rl.from_d4rl(path, repair='x')
  with pytest.raises(ValueError, match="final_observation='last'"):
    d4rl.from_d4rl(path, final_observation='last')


def test_next_observations_must_match_observations():
  data = _rows(observations={'a': np.zeros((5, 1))})
  data['next_observations'] = {'b': np.zeros((5, 1))}
  with pytest.raises(convert.ConversionError) as error:
    list(d4rl.from_d4rl(data))
  assert str(error.value) == (
      "<d4rl dict>: field 'next_observations': has keys ['b']; observations "
      "has ['a']")
  data['next_observations'] = {'a': np.zeros((5, 3))}
  with pytest.raises(convert.ConversionError) as error:
    list(d4rl.from_d4rl(data))
  assert str(error.value) == (
      "<d4rl dict>: field 'next_observations/a': has rows of shape (3,); "
      'observations/a has (1,)')
