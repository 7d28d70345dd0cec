"""il-representations dicts <-> RLDS: layout, ends, round trips, bad input."""

from hypothesis import given
from hypothesis import settings
import numpy as np
import pytest

import convert_testing
from rlds_lite import convert
from rlds_lite.convert import il_representations as il
from rlds_lite import option_objects


def il_reference(episodes):
  """NumPy reference of the il-representations dict of RLDS Episodes."""
  rows = {}

  def add(key, value):
    rows.setdefault(key, []).append(value)

  def cut(nest, a, b):
    if isinstance(nest, dict):
      return {k: v[a:b] for k, v in nest.items()}
    return nest[a:b]

  for episode in episodes:
    steps = episode['steps']
    length = len(steps['is_last'])
    terminated = bool(steps['is_terminal'][-1])
    add('obs', cut(steps['observation'], 0, length - 1))
    add('next_obs', cut(steps['observation'], 1, length))
    add('acts', steps['action'][:length - 1])
    add('rews', steps['reward'][:length - 1])
    last = np.arange(length - 1) == length - 2
    add('dones', last)
    add('truncated', last & (not terminated))
  out = {}
  for key, values in rows.items():
    if isinstance(values[0], dict):
      out[key] = {k: np.concatenate([v[k] for v in values])
                  for k in values[0]}
    else:
      out[key] = np.concatenate(values)
  return out


NAMES = [n for n in convert_testing.NAMED_EPISODES
         if n not in ('empty', 'one-step', 'mixed-ends')]


@pytest.mark.parametrize('name', NAMES)
def test_named_cases_layout_and_round_trip(name):
  episodes = convert_testing.NAMED_EPISODES[name]
  data = il.to_il_dict(episodes)
  convert_testing.assert_episodes_equal([{'steps': data}],
                                        [{'steps': il_reference(episodes)}])
  convert_testing.assert_episodes_equal(il.from_il_dict(data), episodes,
                                        metadata=False)


def test_empty_and_one_step_cases():
  with pytest.raises(ValueError, match='no episodes with rows'):
    il.to_il_dict(convert_testing.NAMED_EPISODES['empty'])
  with pytest.raises(ValueError, match='no episodes with rows'):
    il.to_il_dict(convert_testing.NAMED_EPISODES['one-step'], one_step='skip')
  empty = {'obs': np.zeros((0, 2)), 'next_obs': np.zeros((0, 2)),
           'acts': np.zeros((0, 1)), 'dones': np.zeros(0, bool)}
  assert il.from_il_dict(empty) == []


def test_one_step_episodes_have_no_rows():
  episodes = convert_testing.NAMED_EPISODES['mixed-ends']  # episode 1: T = 1
  with pytest.raises(convert.ConversionError) as error:
    il.to_il_dict(episodes)
  assert str(error.value) == (
      "<episodes>: episode 1, field 'is_last': has one step (only a final "
      'observation), so no row in an il-representations dict; pass '
      "one_step='skip' to leave such episodes out")
  data = il.to_il_dict(episodes, one_step='skip')
  kept = [e for e in episodes if len(e['steps']['is_last']) > 1]
  convert_testing.assert_episodes_equal(il.from_il_dict(data), kept,
                                        metadata=False)


@settings(max_examples=25, deadline=None)
@given(convert_testing.rlds_episodes(allow_one_step=False))
def test_round_trip_is_exact(episodes):
  convert_testing.assert_episodes_equal(
      il.from_il_dict(il.to_il_dict(episodes)), episodes, metadata=False)


@settings(max_examples=15, deadline=None)
@given(convert_testing.rlds_episodes(allow_one_step=True, max_length=3))
def test_round_trip_skips_one_step_episodes(episodes):
  convert_testing.assert_one_step_episodes_skipped(il.to_il_dict, il.from_il_dict, episodes)


def test_dataset_input_and_stored_discount():
  episodes = convert_testing.NAMED_EPISODES['nested']
  data = il.to_il_dict(convert.to_dataset(episodes))
  convert_testing.assert_episodes_equal(il.from_il_dict(data), episodes,
                                        metadata=False)
  odd = convert_testing.make_episode(4, terminated=False, seed=9)
  odd['steps']['discount'] = np.array([1., .5, .25, 0.], np.float32)
  data = il.to_il_dict([odd])
  np.testing.assert_array_equal(data['discounts'], [1., .5, .25])
  convert_testing.assert_episodes_equal(il.from_il_dict(data), [odd],
                                        metadata=False)


# dones, truncated (None = key absent), dones_mean -> per episode
# (is_terminal[-1], discount).
SEMANTICS = {
    'dones-default-terminated': ([0, 1], None, 'terminated',
                                 [(True, [1., 0., 0.])]),
    'dones-mean-truncated': ([0, 1], None, 'truncated',
                             [(False, [1., 1., 0.])]),
    'truncated-marker': ([0, 1, 1], [0, 1, 0], 'terminated',
                         [(False, [1., 1., 0.]), (True, [0., 0.])]),
    'one-row-episodes': ([1, 1], [1, 0], 'truncated',
                         [(False, [1., 0.]), (True, [0., 0.])]),
}


@pytest.mark.parametrize('dones, truncated, dones_mean, expected',
                         SEMANTICS.values(), ids=SEMANTICS.keys())
def test_end_semantics_table(dones, truncated, dones_mean, expected):
  rows = len(dones)
  data = {'obs': np.arange(rows, dtype=np.float32),
          'next_obs': np.arange(1, rows + 1, dtype=np.float32),
          'acts': np.ones(rows), 'dones': np.array(dones, bool)}
  if truncated is not None:
    data['truncated'] = np.array(truncated, bool)
  episodes = il.from_il_dict(data, dones_mean=dones_mean)
  got = [(bool(e['steps']['is_terminal'][-1]),
          e['steps']['discount'].tolist()) for e in episodes]
  assert got == expected
  back = il.to_il_dict(episodes)
  np.testing.assert_array_equal(back['dones'], data['dones'])
  terminal_rows = np.zeros(rows, bool)
  terminal_rows[np.flatnonzero(data['dones'])] = [t for t, _ in expected]
  np.testing.assert_array_equal(back['truncated'],
                                data['dones'] & ~terminal_rows)


def _data(rows=3, dones=(0, 0, 1)):
  return {'obs': np.zeros((rows, 2)), 'next_obs': np.ones((rows, 2)),
          'acts': np.zeros(rows), 'rews': np.ones(rows),
          'dones': np.array(dones, bool)}


BAD_INPUT = {
    'missing-key': (lambda d: d.pop('acts'), None,
                    "<il dict>: field 'acts': is missing; an "
                    'il-representations dict needs obs, next_obs, acts, '
                    'dones'),
    'shapes-disagree': (lambda d: d.update(obs=np.zeros((2, 2))), None,
                        "<il dict>: field 'obs': has 2 rows; dones has 3"),
    'nested-shapes-disagree': (
        lambda d: d.update(obs={'a': np.zeros(3), 'b': np.zeros(4)},
                           next_obs={'a': np.zeros(3), 'b': np.zeros(4)}),
        None, "<il dict>: field 'obs/b': has 4 rows; dones has 3"),
    'next-obs-structure': (
        lambda d: d.update(obs={'a': np.zeros(3)}), None,
        "<il dict>: field 'next_obs': is an array; obs is not"),
    'next-obs-shape': (
        lambda d: d.update(next_obs=np.zeros((3, 4))), None,
        "<il dict>: field 'next_obs': has rows of shape (4,); obs has (2,)"),
    'nested-next-obs-shape': (
        lambda d: d.update(obs={'a': np.zeros((3, 2))},
                           next_obs={'a': np.zeros(3)}), None,
        "<il dict>: field 'next_obs/a': has rows of shape (); obs/a has (2,)"),
    'dones-never-set-at-end': (
        lambda d: d.update(dones=np.array([0, 1, 0], bool)), None,
        "<il dict>: episode 1, field 'dones': is not set on the last row "
        "(2): rows 2..2 do not end an episode; pass repair='truncate' to end "
        "them as a truncated episode or repair='drop' to drop them"),
    'no-dones-at-all': (
        lambda d: d.update(dones=np.zeros(3, bool)), None,
        "<il dict>: episode 0, field 'dones': is not set on the last row "
        "(2): rows 0..2 do not end an episode; pass repair='truncate' to end "
        "them as a truncated episode or repair='drop' to drop them"),
    'truncated-without-done': (
        lambda d: d.update(truncated=np.array([1, 0, 1], bool)), None,
        "<il dict>: episode 0, field 'truncated': is True on row 0 where "
        'dones is False'),
    'dones-2d': (lambda d: d.update(dones=np.zeros((3, 2))), None,
                 "<il dict>: field 'dones': has shape (3, 2); expected [rows]"),
    'dones-nan': (lambda d: d.update(dones=np.array([0., np.nan, 1.])), None,
                  "<il dict>: field 'dones': holds nan at index 1; a flag "
                  'stored as numbers must be 0 or 1'),
    'truncated-half': (
        lambda d: d.update(truncated=np.array([0., 0., 0.5])), None,
        "<il dict>: field 'truncated': holds 0.5 at index 2; a flag stored "
        'as numbers must be 0 or 1'),
}


@pytest.mark.parametrize('mutate, repair, message', BAD_INPUT.values(),
                         ids=BAD_INPUT.keys())
def test_bad_input_errors(mutate, repair, message):
  data = _data()
  mutate(data)
  with pytest.raises(convert.ConversionError) as error:
    il.from_il_dict(data, repair=repair)
  assert str(error.value) == message


def test_repairs_of_unfinished_rows():
  data = _data(dones=(0, 1, 0))
  truncated = il.from_il_dict(data, repair='truncate')
  assert [len(e['steps']['is_last']) for e in truncated] == [3, 2]
  assert [bool(e['steps']['is_terminal'][-1]) for e in truncated] == [
      True, False]
  dropped = il.from_il_dict(data, repair='drop')
  assert [len(e['steps']['is_last']) for e in dropped] == [3]
  with pytest.raises(ValueError, match="repair='fix'"):
    il.from_il_dict(data, repair='fix')
  with pytest.raises(ValueError, match="dones_mean='x'"):
    il.from_il_dict(data, dones_mean='x')


def test_writer_errors_name_episode_and_field():
  episodes = [convert_testing.make_episode(3, terminated=True, seed=1),
              convert_testing.make_episode(3, terminated=True, seed=2)]
  del episodes[1]['steps']['reward']
  with pytest.raises(convert.ConversionError) as error:
    il.to_il_dict(episodes)
  assert str(error.value) == (
      "<episodes>: episode 1, field 'reward': is in some episodes only")
  del episodes[0]['steps']['action']
  with pytest.raises(convert.ConversionError) as error:
    il.to_il_dict(episodes)
  assert str(error.value) == (
      "<episodes>: episode 0, field 'action': is missing; an "
      'il-representations dict needs it')


def test_episodes_from_rows_of_before_transition_rows_still_works_and_warns(
    monkeypatch):
  monkeypatch.setattr(option_objects, '_WARNED', set())
  ends = np.array([0, 1, 1], bool)
  terminated = np.array([0, 1, 0], bool)
  rows = il.TransitionRows(np.arange(3.), np.arange(1., 4.), np.ones(3),
                           np.array([1., 2., 3.]),
                           extras={'info': np.arange(3)})
  new = il.episodes_from_rows(rows, ends, terminated)
  with pytest.warns(DeprecationWarning,
                    match=r'is now episodes_from_rows\(TransitionRows'):
    old = il.episodes_from_rows(np.arange(3.), np.arange(1., 4.), np.ones(3),
                                np.array([1., 2., 3.]), ends, terminated,
                                extras={'info': np.arange(3)})
  convert_testing.assert_episodes_equal(old, new)
  assert [e['steps']['info'].tolist() for e in new] == [[0, 1, 0], [2, 0]]
  with pytest.raises(TypeError, match='pass discounts and extras in the '
                     'TransitionRows'):
    il.episodes_from_rows(rows, ends, terminated, extras={})
  assert repr(rows) == ('TransitionRows(3 rows: observations, '
                        'next_observations, actions, rewards, info)')
