"""ALF TimeSteps <-> RLDS: layout, step_type/discount semantics, bad input."""

import collections

from hypothesis import given
from hypothesis import settings
import numpy as np
import pytest

import convert_testing
from rlds_lite import convert
from rlds_lite.convert import alf

TimeStep = collections.namedtuple(
    'TimeStep', ['step_type', 'reward', 'discount', 'observation',
                 'prev_action', 'env_id', 'untransformed', 'env_info'])


def alf_reference(episodes):
  """NumPy reference of the ALF TimeSteps of RLDS Episodes (per-step loop)."""
  rows = []
  for episode in episodes:
    steps = episode['steps']
    length = len(steps['is_last'])
    obs = steps['observation']
    at = lambda nest, t: ({k: v[t] for k, v in nest.items()}
                          if isinstance(nest, dict) else nest[t])
    for t in range(length):
      first = t == 0
      rows.append({
          'step_type': np.int32(0 if first else 2 if t == length - 1 else 1),
          'observation': at(obs, t),
          'prev_action': (np.zeros_like(steps['action'][0]) if first
                          else steps['action'][t - 1]),
          'reward': (np.zeros_like(steps['reward'][0]) if first
                     else steps['reward'][t - 1]),
          'discount': (np.float32(1) if first
                       else steps['discount'][t - 1]),
          'env_id': np.int32(0)})
  return stack(rows)


def stack(rows):
  if isinstance(rows[0], dict):
    return {k: stack([r[k] for r in rows]) for k in rows[0]}
  return np.array(rows)


NAMES = [n for n in convert_testing.NAMED_EPISODES
         if n not in ('empty', 'one-step', 'mixed-ends')]


@pytest.mark.parametrize('name', NAMES)
def test_named_cases_layout_and_round_trip(name):
  episodes = convert_testing.NAMED_EPISODES[name]
  time_steps = alf.to_alf(episodes)
  assert time_steps.pop('env_info') == {}
  convert_testing.assert_episodes_equal(
      [{'steps': time_steps}], [{'steps': alf_reference(episodes)}])
  convert_testing.assert_episodes_equal(alf.from_alf(time_steps), episodes,
                                        metadata=False)
  as_tuple = TimeStep(untransformed=None, env_info=None, **time_steps)
  convert_testing.assert_episodes_equal(alf.from_alf(as_tuple), episodes,
                                        metadata=False)


@pytest.mark.parametrize('terminated,last_discount', [
    (True, 1.0),    # Open X-Embodiment: discount 1 up to a terminal step.
    (False, 0.0),   # 0 before a step cut by a time limit.
], ids=['terminal-with-discount-1', 'truncated-with-discount-0'])
def test_the_ending_is_kept_when_the_discount_disagrees(terminated,
                                                        last_discount):
  episode = convert_testing.make_episode(4, terminated)
  episode['steps']['discount'][-2] = last_discount
  with pytest.warns(UserWarning, match=r'^to_alf: 1 episode\(s\) end with a '
                    'discount that disagrees with is_terminal'):
    time_steps = alf.to_alf([episode])
  assert time_steps['discount'][-1] == (0.0 if terminated else 1.0)
  back = list(alf.from_alf(time_steps))[0]['steps']
  assert back['is_terminal'].tolist() == [False] * 3 + [terminated]


def test_empty_and_one_step_cases():
  with pytest.raises(ValueError, match='no episodes with two or more steps'):
    alf.to_alf(convert_testing.NAMED_EPISODES['empty'])
  episodes = convert_testing.NAMED_EPISODES['mixed-ends']  # episode 1: T = 1
  with pytest.raises(convert.ConversionError) as error:
    alf.to_alf(episodes)
  assert str(error.value) == (
      "<episodes>: episode 1, field 'is_last': has one step (only a reset), "
      "which ALF cannot hold as FIRST ... LAST; pass one_step='skip' to "
      'leave such episodes out')
  kept = [e for e in episodes if len(e['steps']['is_last']) > 1]
  convert_testing.assert_episodes_equal(
      alf.from_alf(alf.to_alf(episodes, one_step='skip')), kept,
      metadata=False)
  empty = {'step_type': np.zeros(0, np.int32), 'observation': np.zeros(0),
           'prev_action': np.zeros(0), 'reward': np.zeros(0),
           'discount': np.zeros(0)}
  assert alf.from_alf(empty) == []


@settings(max_examples=25, deadline=None)
@given(convert_testing.rlds_episodes(allow_one_step=False))
def test_round_trip_is_exact(episodes):
  convert_testing.assert_episodes_equal(alf.from_alf(alf.to_alf(episodes)),
                                        episodes, metadata=False)


@settings(max_examples=15, deadline=None)
@given(convert_testing.rlds_episodes(allow_one_step=True, max_length=3))
def test_round_trip_skips_one_step_episodes(episodes):
  convert_testing.assert_one_step_episodes_skipped(alf.to_alf, alf.from_alf, episodes)


def test_env_info_batch_form_and_dataset_input():
  episodes = convert_testing.NAMED_EPISODES['truncated']
  with_info = [{'steps': {**episodes[0]['steps'],
                          'speed': np.arange(5, dtype=np.float32)}}]
  time_steps = alf.to_alf(convert.to_dataset(with_info))
  np.testing.assert_array_equal(time_steps['env_info']['speed'],
                                np.arange(5))
  convert_testing.assert_episodes_equal(alf.from_alf(time_steps), with_info)
  batch = {k: (np.stack([v, v]) if not isinstance(v, dict) else
               {s: np.stack([w, w]) for s, w in v.items()})
           for k, v in time_steps.items()}  # [B=2, T=5]
  convert_testing.assert_episodes_equal(alf.from_alf(batch), with_info * 2)


# step_type, discount -> per episode (is_terminal[-1], RLDS discount).
SEMANTICS = {
    'last-discount-0-is-terminal': ([0, 1, 2], [1, 1, 0],
                                    [(True, [1., 0., 0.])]),
    'last-discount-1-is-time-limit': ([0, 1, 2], [1, 1, 1],
                                      [(False, [1., 1., 0.])]),
    'two-step-episodes': ([0, 2, 0, 2], [1, 0, 1, 1],
                          [(True, [0., 0.]), (False, [1., 0.])]),
    'soft-discount-kept': ([0, 1, 2], [1, .5, 1], [(False, [.5, 1., 0.])]),
}


@pytest.mark.parametrize('step_type, discount, expected', SEMANTICS.values(),
                         ids=SEMANTICS.keys())
def test_end_semantics_table(step_type, discount, expected):
  rows = len(step_type)
  data = {'step_type': np.array(step_type, np.int32),
          'observation': np.arange(rows, dtype=np.float32),
          'prev_action': np.arange(rows) * 10,
          'reward': np.arange(rows, dtype=np.float32),
          'discount': np.array(discount, np.float32)}
  episodes = alf.from_alf(data)
  assert [(bool(e['steps']['is_terminal'][-1]),
           e['steps']['discount'].tolist()) for e in episodes] == expected
  back = alf.to_alf(episodes)
  for key in ('step_type', 'discount', 'observation'):
    np.testing.assert_array_equal(back[key], data[key])
  first = np.array(step_type) == 0
  np.testing.assert_array_equal(back['prev_action'],
                                np.where(first, 0, data['prev_action']))
  np.testing.assert_array_equal(back['reward'],
                                np.where(first, 0, data['reward']))


def _data(step_type=(0, 1, 2)):
  rows = len(step_type)
  return {'step_type': np.array(step_type), 'observation': np.zeros((rows, 2)),
          'prev_action': np.zeros(rows), 'reward': np.zeros(rows),
          'discount': np.ones(rows)}


BAD_INPUT = {
    'first-not-first': (
        lambda d: d.update(step_type=np.array([1, 1, 2])),
        "<alf time steps>: episode 0, field 'step_type': row 0 starts the "
        'episode with MID; expected FIRST (0)'),
    'last-after-last': (
        lambda d: d.update(step_type=np.array([0, 2, 2])),
        "<alf time steps>: episode 1, field 'step_type': row 2 starts the "
        'episode with LAST; expected FIRST (0)'),
    'first-inside-episode': (
        lambda d: d.update(step_type=np.array([0, 0, 2])),
        "<alf time steps>: episode 0, field 'step_type': row 1 is FIRST "
        'inside the episode that starts on row 0: that episode has no LAST'),
    'unknown-step-type': (
        lambda d: d.update(step_type=np.array([0, 3, 2])),
        "<alf time steps>: episode 0, field 'step_type': is 3 on row 1; "
        'expected 0 (FIRST), 1 (MID) or 2 (LAST)'),
    'last-never-set-at-end': (
        lambda d: d.update(step_type=np.array([0, 2, 0])),
        "<alf time steps>: episode 1, field 'step_type': is not set on the "
        "last row (2): rows 2..2 do not end an episode; pass "
        "repair='truncate' to end them as a truncated episode or "
        "repair='drop' to drop them"),
    'missing-key': (lambda d: d.pop('prev_action'),
                    "<alf time steps>: field 'prev_action': is missing; ALF "
                    'TimeSteps need step_type, observation, prev_action, '
                    'reward, discount'),
    'shapes-disagree': (lambda d: d.update(reward=np.zeros(4)),
                        "<alf time steps>: field 'reward': has 4 rows; "
                        'step_type has 3'),
    'discount-not-a-column': (lambda d: d.update(discount=np.ones((3, 2))),
                              "<alf time steps>: field 'discount': has shape "
                              '(3, 2); expected [N]'),
    # A NaN discount on LAST would read as "not terminated".
    'discount-nan': (lambda d: d.update(discount=np.array([1., 1., np.nan])),
                     "<alf time steps>: field 'discount': holds nan at index "
                     '2; it must be a finite number'),
    'step-type-nan': (
        lambda d: d.update(step_type=np.array([0., np.nan, 2.])),
        "<alf time steps>: episode 0, field 'step_type': is nan on row 1; "
        'expected 0 (FIRST), 1 (MID) or 2 (LAST)'),
    'step-type-fraction': (
        lambda d: d.update(step_type=np.array([0., 1.5, 2.])),
        "<alf time steps>: episode 0, field 'step_type': is 1.5 on row 1; "
        'expected 0 (FIRST), 1 (MID) or 2 (LAST)'),
}


@pytest.mark.parametrize('mutate, message', BAD_INPUT.values(),
                         ids=BAD_INPUT.keys())
def test_bad_input_errors(mutate, message):
  data = _data()
  mutate(data)
  with pytest.raises(convert.ConversionError) as error:
    alf.from_alf(data)
  assert str(error.value) == message


def test_vector_rewards():
  episode = convert_testing.make_episode(4, terminated=True, seed=5)
  episode['steps']['reward'] = np.arange(8, dtype=np.float32).reshape(4, 2)
  episode['steps']['reward'][-1] = 0
  time_steps = alf.to_alf([episode])
  np.testing.assert_array_equal(time_steps['reward'],
                                [[0, 0], [0, 1], [2, 3], [4, 5]])
  convert_testing.assert_episodes_equal(alf.from_alf(time_steps), [episode],
                                        metadata=False)


def test_repairs_of_unfinished_time_steps():
  data = _data((0, 2, 0, 1))
  data['discount'] = np.array([1, 0, 1, 0.])
  episodes = alf.from_alf(data, repair='truncate')
  assert [len(e['steps']['is_last']) for e in episodes] == [2, 2]
  assert [bool(e['steps']['is_terminal'][-1]) for e in episodes] == [
      True, False]
  assert len(alf.from_alf(data, repair='drop')) == 1
  with pytest.raises(TypeError, match='got list'):
    alf.from_alf([1, 2])
