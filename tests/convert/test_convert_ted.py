"""TorchRL TED nests and H5 files <-> RLDS: layout, semantics, bad input."""

import h5py
from hypothesis import given
from hypothesis import settings
import numpy as np
import pytest

import convert_testing
from rlds_lite import convert
from rlds_lite.convert import ted


def ted_reference(episodes):
  """NumPy reference of the TED nest of RLDS Episodes (per-step loop)."""
  rows = []
  for episode in episodes:
    steps = episode['steps']
    length = len(steps['is_last'])
    terminated = bool(steps['is_terminal'][-1])
    obs = steps['observation']
    at = lambda nest, t: ({k: v[t] for k, v in nest.items()}
                          if isinstance(nest, dict) else nest[t])
    for t in range(length - 1):
      end = t == length - 2
      rows.append({
          'observation': at(obs, t), 'action': steps['action'][t],
          'done': [False], 'terminated': [False], 'truncated': [False],
          'next': {'observation': at(obs, t + 1),
                   'reward': [steps['reward'][t]], 'done': [end],
                   'terminated': [end and terminated],
                   'truncated': [end and not terminated]}})
  return stack(rows)


def stack(rows):
  if isinstance(rows[0], dict):
    return {k: stack([r[k] for r in rows]) for k in rows[0]}
  return np.array(rows)


NAMES = [n for n in convert_testing.NAMED_EPISODES
         if n not in ('empty', 'one-step', 'mixed-ends')]


@pytest.mark.parametrize('name', NAMES)
def test_named_cases_layout_and_round_trip(name, tmp_path):
  episodes = convert_testing.NAMED_EPISODES[name]
  nest = ted.to_ted(episodes)
  convert_testing.assert_episodes_equal([{'steps': nest}],
                                        [{'steps': ted_reference(episodes)}])
  convert_testing.assert_episodes_equal(ted.from_ted(nest), episodes,
                                        metadata=False)
  path = ted.to_ted_h5(episodes, tmp_path / 'ted.h5')
  with h5py.File(path) as file:
    assert sorted(file['next']) == ['done', 'observation', 'reward',
                                    'terminated', 'truncated']
    convert_testing.assert_episodes_equal(ted.from_ted(file), episodes,
                                          metadata=False)
  convert_testing.assert_episodes_equal(ted.from_ted(path), episodes,
                                        metadata=False)
  assert sorted(p.name for p in tmp_path.iterdir()) == ['ted.h5']


def test_empty_and_one_step_cases():
  with pytest.raises(ValueError, match='no episodes with rows'):
    ted.to_ted(convert_testing.NAMED_EPISODES['empty'])
  episodes = convert_testing.NAMED_EPISODES['mixed-ends']  # episode 1: T = 1
  with pytest.raises(convert.ConversionError) as error:
    ted.to_ted(episodes)
  assert str(error.value) == (
      "<episodes>: episode 1, field 'is_last': has one step (only a final "
      "observation), so no row in TED; pass one_step='skip' to leave such "
      'episodes out')
  kept = [e for e in episodes if len(e['steps']['is_last']) > 1]
  convert_testing.assert_episodes_equal(
      ted.from_ted(ted.to_ted(episodes, one_step='skip')), kept,
      metadata=False)
  empty = {'observation': np.zeros((0, 2)), 'action': np.zeros((0, 1)),
           'next': {'observation': np.zeros((0, 2)),
                    'done': np.zeros((0, 1), bool)}}
  assert ted.from_ted(empty) == []


@settings(max_examples=25, deadline=None)
@given(convert_testing.rlds_episodes(allow_one_step=False))
def test_round_trip_is_exact(episodes):
  convert_testing.assert_episodes_equal(ted.from_ted(ted.to_ted(episodes)),
                                        episodes, metadata=False)


@settings(max_examples=15, deadline=None)
@given(convert_testing.rlds_episodes(allow_one_step=True, max_length=3))
def test_round_trip_skips_one_step_episodes(episodes):
  convert_testing.assert_one_step_episodes_skipped(ted.to_ted, ted.from_ted, episodes)


def test_tuple_keys_batch_form_and_observation_keys():
  episodes = convert_testing.NAMED_EPISODES['terminal']
  nest = ted.to_ted(episodes)
  flat = {('next', k): v for k, v in nest['next'].items()}
  flat.update({k: v for k, v in nest.items() if k != 'next'})
  convert_testing.assert_episodes_equal(ted.from_ted(flat), episodes,
                                        metadata=False)
  batch = {k: (np.stack([v, v]) if not isinstance(v, dict) else
               {s: np.stack([w, w]) for s, w in v.items()})
           for k, v in nest.items()}  # [B=2, T=5]: two copies of the episode
  convert_testing.assert_episodes_equal(
      ted.from_ted(batch, batch_dims=2), episodes * 2, metadata=False)
  pixels = {'pixels': nest['observation'], 'action': nest['action'],
            'step_count': np.arange(5)[:, None],
            'next': {'pixels': nest['next']['observation'],
                     'done': nest['next']['done'],
                     'terminated': nest['next']['terminated']}}
  [episode] = ted.from_ted(pixels)
  np.testing.assert_array_equal(episode['steps']['observation']['pixels'],
                                episodes[0]['steps']['observation'])
  np.testing.assert_array_equal(episode['steps']['step_count'][:, 0],
                                [0, 1, 2, 3, 4, 0])
  assert 'reward' not in episode['steps']


def test_stored_discount_and_dataset_input():
  odd = convert_testing.make_episode(4, terminated=False, seed=9)
  odd['steps']['discount'] = np.array([1., .5, .25, 0.], np.float32)
  nest = ted.to_ted(convert.to_dataset([odd]))
  np.testing.assert_array_equal(nest['next']['discount'][:, 0], [1., .5, .25])
  convert_testing.assert_episodes_equal(ted.from_ted(nest), [odd],
                                        metadata=False)


# next/(done, terminated, truncated) per row (None = key absent) -> per
# episode (is_terminal[-1], discount).
SEMANTICS = {
    'terminated': ([0, 1], [0, 1], [0, 0], [(True, [1., 0., 0.])]),
    'truncated': ([0, 1], [0, 0], [0, 1], [(False, [1., 1., 0.])]),
    'both-set-terminal-wins': ([1], [1], [1], [(True, [0., 0.])]),
    'done-only-is-terminal': ([0, 1], None, None, [(True, [1., 0., 0.])]),
    'done-and-truncated-only': ([1, 1], None, [1, 0],
                                [(False, [1., 0.]), (True, [0., 0.])]),
    'no-done-key': (None, [1, 0], [0, 1],
                    [(True, [0., 0.]), (False, [1., 0.])]),
}


@pytest.mark.parametrize('done, terminated, truncated, expected',
                         SEMANTICS.values(), ids=SEMANTICS.keys())
def test_end_semantics_table(done, terminated, truncated, expected):
  flags = {'done': done, 'terminated': terminated, 'truncated': truncated}
  rows = len(next(v for v in flags.values() if v is not None))
  following = {k: np.array(v, bool)[:, None] for k, v in flags.items()
               if v is not None}
  obs = np.arange(rows + 1, dtype=np.float32)
  ends = np.array(done if done is not None else
                  np.logical_or(terminated, truncated), bool)
  next_obs = obs[1:].copy()
  observation = np.where(np.concatenate([[False], ends[:-1]]), -1, obs[:-1])
  data = {'observation': observation, 'action': np.zeros(rows),
          'next': {'observation': next_obs, 'reward': np.ones((rows, 1)),
                   **following}}
  episodes = ted.from_ted(data)
  assert [(bool(e['steps']['is_terminal'][-1]),
           e['steps']['discount'].tolist()) for e in episodes] == expected
  back = ted.to_ted(episodes)
  terminal = np.zeros(rows, bool)
  terminal[np.flatnonzero(ends)] = [t for t, _ in expected]
  np.testing.assert_array_equal(back['next']['done'][:, 0], ends)
  np.testing.assert_array_equal(back['next']['terminated'][:, 0], terminal)
  np.testing.assert_array_equal(back['next']['truncated'][:, 0],
                                ends & ~terminal)


def _data(rows=3):
  return {'observation': np.arange(rows, dtype=np.float32),
          'action': np.zeros(rows),
          'next': {'observation': np.arange(1, rows + 1, dtype=np.float32),
                   'reward': np.zeros((rows, 1)),
                   'done': np.eye(rows, dtype=bool)[-1][:, None],
                   'terminated': np.eye(rows, dtype=bool)[-1][:, None],
                   'truncated': np.zeros((rows, 1), bool)}}


def _set(path, value):
  def mutate(data):
    node = data
    for key in path[:-1]:
      node = node[key]
    if value is None:
      del node[path[-1]]
    else:
      node[path[-1]] = value
  return mutate


BAD_INPUT = {
    'missing-next': (_set(('next',), None),
                     "<ted dict>: field 'next': is missing; TED keeps time "
                     't + 1 under next'),
    'missing-action': (_set(('action',), None),
                       "<ted dict>: field 'action': is missing"),
    'missing-done-flags': (
        lambda d: [d['next'].pop(k) for k in ('done', 'terminated',
                                              'truncated')],
        "<ted dict>: field 'next/done': is missing (and so are "
        'next/terminated and next/truncated)'),
    'missing-final-observation': (
        _set(('next', 'observation'), None),
        "<ted dict>: field 'next/observation': is missing; it holds the "
        'final observations'),
    'done-inconsistent': (
        _set(('next', 'done'), np.array([[1], [0], [1]], bool)),
        "<ted dict>: episode 0, field 'next/done': is True on row 0 but "
        'next/terminated | next/truncated is False'),
    'done-missing-a-termination': (
        _set(('next', 'terminated'), np.array([[0], [1], [1]], bool)),
        "<ted dict>: episode 0, field 'next/done': is False on row 1 but "
        'next/terminated | next/truncated is True'),
    'shapes-disagree': (_set(('action',), np.zeros(4)),
                        "<ted dict>: field 'action': has 4 rows; next/done "
                        'has 3'),
    'flag-rows-disagree': (
        _set(('next', 'truncated'), np.zeros((2, 1), bool)),
        "<ted dict>: field 'next/truncated': has 2 rows; next/done has 3"),
    'done-never-set-at-end': (
        lambda d: [d['next'].update({k: np.zeros((3, 1), bool)})
                   for k in ('done', 'terminated')],
        "<ted dict>: episode 0, field 'next/done': is not set on the last "
        "row (2): rows 0..2 do not end an episode; pass repair='truncate' to "
        "end them as a truncated episode or repair='drop' to drop them"),
    'not-continuous': (
        _set(('observation',), np.array([0., 5., 2.], np.float32)),
        "<ted dict>: episode 0, field 'next/observation': differs on row 0 "
        'from observation on row 1 of the same episode (pass '
        'check_continuity=False for multi-step data)'),
    'next-observation-structure': (
        _set(('next', 'observation'), {'a': np.zeros(3)}),
        "<ted dict>: field 'next/observation': is a dict; observation is "
        'not'),
    'next-observation-shape': (
        _set(('next', 'observation'), np.zeros((3, 2), np.float32)),
        "<ted dict>: field 'next/observation': has rows of shape (2,); "
        'observation has ()'),
    'done-nan': (
        _set(('next', 'done'), np.array([[0.], [np.nan], [1.]])),
        "<ted dict>: field 'next/done': holds nan at index 1; a flag stored "
        'as numbers must be 0 or 1'),
    'terminated-half': (
        _set(('next', 'terminated'), np.array([[0.], [0.5], [0.]])),
        "<ted dict>: field 'next/terminated': holds 0.5 at index 1; a flag "
        'stored as numbers must be 0 or 1'),
    'truncated-strings': (
        _set(('next', 'truncated'), np.array([[b'no'], [b'no'], [b'yes']])),
        "<ted dict>: field 'next/truncated': has dtype |S3; a flag must be "
        'bool or numbers 0 and 1'),
}


@pytest.mark.parametrize('mutate, message', BAD_INPUT.values(),
                         ids=BAD_INPUT.keys())
def test_bad_input_errors(mutate, message):
  data = _data()
  mutate(data)
  with pytest.raises(convert.ConversionError) as error:
    ted.from_ted(data)
  assert str(error.value) == message


def test_repairs_and_continuity_opt_out(tmp_path):
  data = _data()
  for key in ('done', 'terminated'):
    data['next'][key] = np.array([[1], [0], [0]], bool)
  data['observation'][1] = 7  # row 1 starts episode 1: no continuity needed
  episodes = ted.from_ted(data, repair='truncate')
  assert [e['steps']['observation'].tolist() for e in episodes] == [
      [0., 1.], [7., 2., 3.]]
  assert [bool(e['steps']['is_terminal'][-1]) for e in episodes] == [
      True, False]
  assert len(ted.from_ted(data, repair='drop')) == 1
  multi_step = _data()
  multi_step['observation'] = np.array([0., 5., 2.], np.float32)
  [episode] = ted.from_ted(multi_step, check_continuity=False)
  np.testing.assert_array_equal(episode['steps']['observation'],
                                [0., 5., 2., 3.])
  path = str(tmp_path / 'bad.h5')
  with h5py.File(path, 'w') as file:
    file['observation'] = np.zeros(2)
    file['action'] = np.zeros(2)
    file['next/observation'] = np.zeros(2)
    file['next/done'] = np.zeros((2, 1), bool)
  with pytest.raises(convert.ConversionError,
                     match=f"^{path}: episode 0, field 'next/done': is not "
                           'set on the last row'):
    ted.from_ted(path)


class FakeTensorDict:
  """Stands in for tensordict.TensorDict (only ``to_dict`` is used)."""

  def __init__(self, nest):
    self.nest = nest

  def to_dict(self):
    return self.nest


def test_tensordict_like_input_and_nan_observations():
  episodes = [convert_testing.make_episode(4, terminated=False, seed=3)]
  episodes[0]['steps']['observation'][1:3, 0] = np.nan
  nest = ted.to_ted(episodes)
  convert_testing.assert_episodes_equal(ted.from_ted(FakeTensorDict(nest)),
                                        episodes, metadata=False)
