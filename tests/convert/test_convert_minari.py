"""Minari <-> RLDS: layout, end-of-episode semantics, round trips, bad input."""

import json
import os

import h5py
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import numpy as np
import pytest

import convert_testing
import rlds_lite
from rlds_lite import convert
from rlds_lite.convert import minari as minari_lib


def minari_reference(episode):
  """NumPy reference of the Minari layout of one RLDS Episode."""
  steps = episode['steps']
  length = len(steps['is_last'])
  terminated = bool(steps['is_terminal'][-1])
  ends = [False] * (length - 2) + [True] if length > 1 else []
  return {
      'observations': steps['observation'],
      'actions': {k: v[:length - 1] for k, v in steps['action'].items()}
                 if isinstance(steps['action'], dict)
                 else steps['action'][:length - 1],
      'rewards': steps['reward'][:length - 1],
      'terminations': np.array([e and terminated for e in ends], bool),
      'truncations': np.array([e and not terminated for e in ends], bool),
  }


def rlds_reference(observations, actions, rewards, terminations, truncations):
  """NumPy reference of the RLDS steps of one Minari episode (N transitions)."""
  del truncations
  count = len(rewards)
  terminated = bool(count and terminations[-1])
  discount = np.ones(count + 1, np.float32)
  discount[-1] = 0
  if terminated:
    discount[-2] = 0
  pad = lambda x: np.concatenate([x, np.zeros((1,) + x.shape[1:], x.dtype)])
  return {
      'observation': observations,
      'action': ({k: pad(v) for k, v in actions.items()}
                 if isinstance(actions, dict) else pad(actions)),
      'reward': pad(np.asarray(rewards)),
      'discount': discount,
      'is_first': np.arange(count + 1) == 0,
      'is_last': np.arange(count + 1) == count,
      'is_terminal': (np.arange(count + 1) == count) & terminated,
  }


def _read_group(node):
  if isinstance(node, h5py.Group):
    return {k: _read_group(v) for k, v in node.items()}
  return node[()]


def _truncate_one_step_terminals(episodes):
  """One-step terminal episodes have no Minari form: make them truncated."""
  for episode in episodes:
    if len(episode['steps']['is_last']) == 1:
      episode['steps']['is_terminal'] = np.array([False])
  return episodes


_SPACES = {'observation_space': {'type': 'Box', 'dtype': 'float32',
                                 'shape': [3], 'low': [0, 0, 0],
                                 'high': [1, 1, 1]},
           'action_space': {'type': 'Discrete', 'dtype': 'int64', 'start': 0,
                            'n': 2}}


@pytest.mark.parametrize('name', list(convert_testing.NAMED_EPISODES))
def test_named_cases_layout_and_round_trip(name, tmp_path):
  episodes = convert_testing.NAMED_EPISODES[name]
  path = minari_lib.to_minari(episodes, tmp_path, f'cases/{name}-v0',
                              **(_SPACES if not episodes else {}))
  with h5py.File(os.path.join(path, 'data', 'main_data.hdf5')) as file:
    assert sorted(file) == [f'episode_{i}' for i in range(len(episodes))]
    for index, episode in enumerate(episodes):
      group = file[f'episode_{index}']
      expected = minari_reference(episode)
      got = _read_group(group)
      assert sorted(got) == sorted(expected)
      convert_testing.assert_episodes_equal([{'steps': got}],
                                            [{'steps': expected}])
      assert dict(group.attrs) == {
          'id': index, 'total_steps': len(expected['rewards']),
          'episode_id': episode['episode_id']}
  back = list(minari_lib.from_minari(path))
  convert_testing.assert_episodes_equal(back, episodes)
  assert [int(e['id']) for e in back] == list(range(len(episodes)))
  metadata = minari_lib.read_metadata(path)
  assert metadata['total_episodes'] == len(episodes)
  assert metadata['total_steps'] == sum(
      len(e['steps']['is_last']) - 1 for e in episodes)


@settings(max_examples=25)
@given(convert_testing.rlds_episodes(), st.booleans())
def test_round_trip_rlds_minari_rlds_is_exact(episodes, with_infos):
  import tempfile  # pylint: disable=g-import-not-at-top
  episodes = _truncate_one_step_terminals(episodes)
  if with_infos:  # extra step fields: Minari episode datasets, N + 1 entries
    for episode in episodes:
      length = len(episode['steps']['is_last'])
      episode['steps']['infos'] = {
          'count': np.arange(length, dtype=np.int16),
          'nested': {'flag': np.arange(length) % 2 == 0}}
  with tempfile.TemporaryDirectory() as out:
    path = minari_lib.to_minari(episodes, out, 'prop-v0')
    convert_testing.assert_episodes_equal(
        list(minari_lib.from_minari(path)), episodes)


def test_stored_discount_round_trips(tmp_path):
  episode = convert_testing.make_episode(4, terminated=False, seed=7)
  episode['steps']['discount'] = np.array([1., .5, .25, 0.], np.float32)
  path = minari_lib.to_minari([episode], tmp_path, 'disc-v0')
  with h5py.File(minari_lib.locate(path)) as file:
    assert file['episode_0/discounts'][()].tolist() == [1., .5, .25]
  convert_testing.assert_episodes_equal(list(minari_lib.from_minari(path)),
                                        [episode])


def test_one_step_terminal_episode_is_an_error(tmp_path):
  episode = convert_testing.make_episode(1, terminated=True)
  with pytest.raises(convert.ConversionError) as error:
    minari_lib.to_minari([episode], tmp_path, 'one-v0')
  assert str(error.value) == (
      "<episodes>: episode 0, field 'is_terminal': is True on the only step: "
      'a one-step episode has no transition, and Minari records termination '
      'on a transition')
  assert os.listdir(tmp_path) == []  # nothing half-written


def test_paths_root_data_dir_and_file_are_accepted(tmp_path):
  episodes = convert_testing.NAMED_EPISODES['mixed-ends']
  root = minari_lib.to_minari(episodes, tmp_path, 'paths-v0')
  for path in (root, os.path.join(root, 'data'),
               os.path.join(root, 'data', 'main_data.hdf5')):
    convert_testing.assert_episodes_equal(
        list(minari_lib.from_minari(path)), episodes)
  picked = list(minari_lib.from_minari(root, episodes=[3, 1]))
  convert_testing.assert_episodes_equal(picked, [episodes[3], episodes[1]])
  with pytest.raises(convert.ConversionError,
                     match="episode 9: no group 'episode_9' in the file"):
    list(minari_lib.from_minari(root, episodes=[9]))
  # The Minari root to_minari wrote into holds one dataset: it is read too.
  convert_testing.assert_episodes_equal(
      list(minari_lib.from_minari(tmp_path)), episodes)
  os.mkdir(tmp_path / 'empty')
  with pytest.raises(FileNotFoundError, match='no main_data.hdf5 there'):
    list(minari_lib.from_minari(tmp_path / 'empty'))
  minari_lib.to_minari(episodes, tmp_path, 'ns/other-v1')
  with pytest.raises(ValueError, match=r'a Minari root with 2 datasets '
                     r'\(ns/other-v1, paths-v0\); give one dataset'):
    list(minari_lib.from_minari(tmp_path))


def test_dataset_id_and_if_exists(tmp_path):
  episodes = convert_testing.NAMED_EPISODES['terminal']
  with pytest.raises(ValueError, match="^to_minari: dataset_id='no-version' "
                     'is not a Minari id: '):
    minari_lib.to_minari(episodes, tmp_path, 'no-version')
  minari_lib.to_minari(episodes, tmp_path, 'a/b/c-v2')
  assert sorted(os.listdir(tmp_path / 'a')) == ['b', 'namespace_metadata.json']
  with pytest.raises(FileExistsError, match='exists'):
    minari_lib.to_minari(episodes, tmp_path, 'a/b/c-v2')
  other = convert_testing.NAMED_EPISODES['truncated']
  path = minari_lib.to_minari(other, tmp_path, 'a/b/c-v2',
                              if_exists='overwrite')
  convert_testing.assert_episodes_equal(list(minari_lib.from_minari(path)),
                                        other)
  assert sorted(os.listdir(tmp_path / 'a' / 'b')) == [
      'c-v2', 'namespace_metadata.json']
  (tmp_path / 'mine-v0').mkdir()
  (tmp_path / 'mine-v0' / 'notes.txt').write_text('keep me')
  with pytest.raises(FileExistsError, match=r'is not a Minari dataset \(it '
                     r'has no data/main_data.hdf5\)'):
    minari_lib.to_minari(other, tmp_path, 'mine-v0', if_exists='overwrite')
  assert (tmp_path / 'mine-v0' / 'notes.txt').read_text() == 'keep me'


def test_minari_to_tfds(tmp_path):
  episodes = convert_testing.NAMED_EPISODES['nested']
  src = minari_lib.to_minari(episodes, tmp_path / 'minari', 'tf-v0')
  out = minari_lib.minari_to_tfds(src, tmp_path / 'tfds', 'from_minari')
  back = list(convert.numpy_episodes(rlds_lite.load(out, dense=True)))
  convert_testing.assert_episodes_equal(back, episodes)


# --- Bad input: hand-written files ------------------------------------------


def _write_raw(path, episodes, metadata=True):
  """A main_data.hdf5 with the given episode groups, exactly as given."""
  os.makedirs(path, exist_ok=True)
  with h5py.File(os.path.join(path, 'main_data.hdf5'), 'w') as file:
    for index, fields in enumerate(episodes):
      group = file.create_group(f'episode_{index}')
      for key, value in fields.items():
        if isinstance(value, dict):
          for sub, leaf in value.items():
            group.create_dataset(f'{key}/{sub}', data=leaf)
        else:
          group.create_dataset(key, data=value)
  if metadata:
    with open(os.path.join(path, 'metadata.json'), 'w') as f:
      json.dump({'dataset_id': 'raw-v0'}, f)
  return os.path.join(path, 'main_data.hdf5')


def _raw_episode(count=3, obs=None, terminated=True, **overrides):
  fields = {
      'observations': np.arange(count + 1, dtype=np.float32)[:, None]
                      if obs is None else obs,
      'actions': np.arange(count, dtype=np.int64),
      'rewards': np.ones(count),
      'terminations': np.arange(count) == count - 1 if terminated
                      else np.zeros(count, bool),
      'truncations': np.arange(count) == count - 1 if not terminated
                     else np.zeros(count, bool),
  }
  fields.update(overrides)
  return {k: v for k, v in fields.items() if v is not None}


@pytest.mark.parametrize('episode, field, message', [
    (_raw_episode(obs=np.zeros((3, 1))), 'observations',
     'has 3 entries; Minari needs N + 1 = 4 (the reset observation and one '
     'per transition; N = 3 rewards); pass '
     "repair='drop_last_transition' or repair='repeat_last_observation' "
     'if the '
     'final observation is missing (Minari#199)'),
    (_raw_episode(obs={'a': np.zeros((4, 1)), 'b': np.zeros((5, 1))}),
     'observations/b', 'has 5 entries; Minari needs N + 1 = 4 (the reset '
     'observation and one per transition; N = 3 rewards); pass '
     "repair='drop_last_transition' or repair='repeat_last_observation' "
     'if the '
     'final observation is missing (Minari#199)'),
    (_raw_episode(actions=None), 'actions',
     "is missing from group '/episode_1'"),
    (_raw_episode(rewards=None), 'rewards',
     "is missing from group '/episode_1'"),
    (_raw_episode(rewards=np.ones(2)), 'actions',
     'has 3 entries; rewards has N = 2 (one per transition)'),
    (_raw_episode(rewards=np.ones((3, 2))), 'rewards',
     'has shape (3, 2); expected [N] or [N, 1]'),
    (_raw_episode(terminated=False, truncations=np.zeros(3, bool)),
     'terminations',
     'neither terminations nor truncations is set on the last transition '
     "(2), so the episode has no recorded end; pass repair='mark_truncated' "
     'to read it as truncated'),
    (_raw_episode(terminations=np.array([False, True, True])), 'terminations',
     'is set on transition 1, before the last one (2)'),
    (_raw_episode(infos={'x': np.zeros(7)}), 'infos/x',
     'has 7 entries; a step field needs N + 1 = 4 (or N = 3) entries'),
    (_raw_episode(terminations=np.array([0., np.nan, 1.])), 'terminations',
     'holds nan at index 1; a flag stored as numbers must be 0 or 1'),
    (_raw_episode(truncations=np.array([0., 0., 0.5])), 'truncations',
     'holds 0.5 at index 2; a flag stored as numbers must be 0 or 1'),
], ids=['n-observations-minari-199', 'nested-observations-disagree',
        'missing-actions', 'missing-rewards', 'rewards-shorter-than-actions',
        'rewards-2d', 'no-end-flag', 'early-termination', 'infos-length',
        'terminations-nan', 'truncations-half'])
def test_bad_minari_input_names_file_episode_and_field(episode, field, message,
                                                       tmp_path):
  file = _write_raw(tmp_path / 'data', [_raw_episode(), episode])
  with pytest.raises(convert.ConversionError) as error:
    list(minari_lib.from_minari(tmp_path))
  assert str(error.value) == f"{file}: episode 1, field '{field}': {message}"
  assert (error.value.episode, error.value.field) == (1, field)


def _set_json(root, **changes):
  path = os.path.join(root, 'data', 'metadata.json')
  with open(path) as f:
    metadata = json.load(f)
  metadata.update(changes)
  with open(path, 'w') as f:
    json.dump(metadata, f)


def _edit_hdf5(root, edit):
  with h5py.File(os.path.join(root, 'data', 'main_data.hdf5'), 'a') as file:
    edit(file)


@pytest.mark.parametrize('breaks, episode, field, message', [
    (lambda root: _edit_hdf5(root, lambda f: f.__delitem__('episode_1')), 1,
     'total_episodes', "has no group 'episode_1', though the metadata's "
     'total_episodes = 4 counts it'),
    (lambda root: _set_json(root, total_episodes=5), 4, 'total_episodes',
     "has no group 'episode_4', though the metadata's total_episodes = 5 "
     'counts it'),
    (lambda root: _set_json(root, total_episodes=3), None, 'total_episodes',
     'is 3, but the file holds 4 episode groups'),
    (lambda root: _set_json(root, total_episodes='4'), None, 'total_episodes',
     "is '4'; expected an integer"),
    (lambda root: _set_json(root, total_steps=99), None, 'total_steps',
     'is 99, but the file holds 9 transitions (rewards of all episodes)'),
    (lambda root: _edit_hdf5(
        root, lambda f: f['episode_1'].attrs.__setitem__('total_steps', 7)),
     1, 'total_steps', 'is 7, but the file holds 0 transitions (rewards)'),
    (lambda root: _edit_hdf5(
        root, lambda f: f['episode_0'].attrs.__setitem__('total_steps', 2.5)),
     0, 'total_steps', 'is 2.5; expected an integer'),
], ids=['missing-group', 'total-episodes-more', 'total-episodes-fewer',
        'total-episodes-text', 'total-steps', 'episode-total-steps',
        'episode-total-steps-fraction'])
def test_metadata_counts_must_match_the_file(breaks, episode, field, message,
                                             tmp_path):
  root = minari_lib.to_minari(
      convert_testing.NAMED_EPISODES['mixed-ends'], tmp_path, 'counts-v0')
  breaks(root)
  with pytest.raises(convert.ConversionError) as error:
    list(minari_lib.from_minari(root))
  where = f'episode {episode}, ' if episode is not None else ''
  file = os.path.join(root, 'data', 'main_data.hdf5')
  assert str(error.value) == f"{file}: {where}field '{field}': {message}"


# The semantics table (docs/convert_minari_d4rl.md), Minari rows: end flags of
# the N transitions -> RLDS flags and discount of the T = N + 1 steps.
@pytest.mark.parametrize('terminations, truncations, is_terminal, discount', [
    ([0, 0, 1], [0, 0, 0], [0, 0, 0, 1], [1, 1, 0, 0]),
    ([0, 0, 0], [0, 0, 1], [0, 0, 0, 0], [1, 1, 1, 0]),
    ([0, 0, 1], [0, 0, 1], [0, 0, 0, 1], [1, 1, 0, 0]),
    ([1], [0], [0, 1], [0, 0]),
    ([0], [1], [0, 0], [1, 0]),
    ([], [], [0], [0]),
], ids=['terminated', 'truncated', 'both-flags-terminal-wins',
        'one-transition-terminated', 'one-transition-truncated',
        'zero-transitions'])
def test_semantics_table_minari(terminations, truncations, is_terminal,
                                discount, tmp_path):
  count = len(terminations)
  file = _write_raw(tmp_path, [_raw_episode(
      count, terminations=np.array(terminations, bool),
      truncations=np.array(truncations, bool))])
  steps = next(minari_lib.from_minari(file))['steps']
  assert steps['is_terminal'].tolist() == [bool(x) for x in is_terminal]
  assert steps['is_last'].tolist() == [i == count for i in range(count + 1)]
  assert steps['is_first'].tolist() == [i == 0 for i in range(count + 1)]
  assert steps['discount'].tolist() == discount
  assert steps['discount'].dtype == np.float32
  assert steps['action'].tolist() == list(range(count)) + [0]
  assert steps['reward'].tolist() == [1.] * count + [0.]
  # And back: the same flags on the same transitions.
  written = minari_lib.to_minari([{'steps': steps}], tmp_path / 'out', 'b-v0')
  with h5py.File(minari_lib.locate(written)) as back:
    assert back['episode_0/terminations'][()].tolist() == [
        bool(x) for x in terminations]
    assert back['episode_0/truncations'][()].tolist() == [
        bool(x) and not terminations[-1] for x in truncations]


def test_repairs_minari_199_and_missing_end(tmp_path):
  observations = np.arange(3, dtype=np.float32)[:, None]  # N = 3, no o_3
  file = _write_raw(tmp_path, [
      _raw_episode(obs=observations, infos={'x': np.arange(3)}),
      _raw_episode(terminated=False, truncations=np.zeros(3, bool))])
  dropped = list(minari_lib.from_minari(
      file, repair=['drop_last_transition', 'mark_truncated']))
  steps = dropped[0]['steps']
  np.testing.assert_array_equal(steps['observation'], observations)
  assert steps['action'].tolist() == [0, 1, 0]
  assert steps['reward'].tolist() == [1., 1., 0.]
  assert steps['is_terminal'].tolist() == [False, False, False]
  assert steps['discount'].tolist() == [1., 1., 0.]
  assert steps['infos']['x'].tolist() == [0, 1, 2]
  assert dropped[1]['steps']['is_terminal'].tolist() == [False] * 4
  repeated = next(minari_lib.from_minari(file,
                                         repair='repeat_last_observation'))
  steps = repeated['steps']
  assert steps['observation'][:, 0].tolist() == [0., 1., 2., 2.]
  assert steps['action'].tolist() == [0, 1, 2, 0]
  assert steps['is_terminal'].tolist() == [False, False, False, True]
  assert steps['discount'].tolist() == [1., 1., 0., 0.]
  assert steps['infos']['x'].tolist() == [0, 1, 2, 0]
  with pytest.raises(ValueError, match="^from_minari: repair='fix' is "
                     'unknown; choose from'):
    list(minari_lib.from_minari(file, repair='fix'))


def test_old_layout_2d_columns_and_root_attributes(tmp_path):
  """The standard's [N, 1] rewards/flags and attribute-only metadata."""
  file = _write_raw(tmp_path, [_raw_episode(
      rewards=np.ones((3, 1)), terminations=np.array([[0], [0], [1]], bool),
      truncations=np.zeros((3, 1), bool))], metadata=False)
  with h5py.File(file, 'a') as f:
    f.attrs['total_episodes'] = 1
  assert minari_lib.read_metadata(file) == {'total_episodes': 1}
  steps = next(minari_lib.from_minari(file))['steps']
  assert steps['reward'].tolist() == [1., 1., 1., 0.]
  assert steps['is_terminal'].tolist() == [False, False, False, True]


# --- Compatibility with the minari package ----------------------------------


@pytest.fixture
def minari_root(tmp_path, monkeypatch):
  monkeypatch.setenv('MINARI_DATASETS_PATH', str(tmp_path))
  return tmp_path


def _nested_episodes():
  episodes = convert_testing.NAMED_EPISODES['nested'] + [
      convert_testing.make_episode(1, False, nested=True, seed=9,
                                   episode_id=2)]
  out = []
  for index, episode in enumerate(episodes):
    steps = dict(episode['steps'])
    length = len(steps['is_last'])
    steps['action'] = {'_index_0': steps['action'],
                       '_index_1': np.arange(length, dtype=np.int64) % 3}
    steps['action']['_index_1'][-1] = 0
    steps['infos'] = {'step': np.arange(length, dtype=np.int32) * (index + 1)}
    out.append({**episode, 'steps': steps, 'seed': np.int64(40 + index)})
  return out


def test_minari_loads_what_to_minari_writes(minari_root):
  import minari  # pylint: disable=g-import-not-at-top
  from gymnasium import spaces  # pylint: disable=g-import-not-at-top
  episodes = _nested_episodes()
  minari_lib.to_minari(episodes, minari_root, 'rlds/nested-v0',
                       metadata={'author': {'me'}, 'algorithm_name': 'random',
                                 'ref_max_score': np.float32(2.5)})
  dataset = minari.load_dataset('rlds/nested-v0')
  assert isinstance(dataset.observation_space, spaces.Dict)
  assert isinstance(dataset.action_space, spaces.Tuple)
  assert dataset.total_episodes == 3
  assert dataset.total_steps == 3 + 2 + 0
  assert 'rlds/nested-v0' in minari.list_local_datasets()
  assert dataset.storage.metadata['author'] == {'me'}
  assert dataset.storage.metadata['ref_max_score'] == 2.5
  for episode, loaded in zip(episodes, dataset.iterate_episodes()):
    expected = minari_reference(episode)
    assert len(loaded) == len(expected['rewards'])
    for key in ('pos', 'vel'):
      np.testing.assert_array_equal(loaded.observations[key],
                                    expected['observations'][key])
    assert isinstance(loaded.actions, tuple)
    np.testing.assert_array_equal(loaded.actions[0],
                                  expected['actions']['_index_0'])
    np.testing.assert_array_equal(loaded.actions[1],
                                  expected['actions']['_index_1'])
    for key in ('rewards', 'terminations', 'truncations'):
      np.testing.assert_array_equal(getattr(loaded, key), expected[key])
    np.testing.assert_array_equal(loaded.infos['step'],
                                  episode['steps']['infos']['step'])
  metadata = list(dataset.storage.get_episode_metadata([0, 1, 2]))
  assert [m['seed'] for m in metadata] == [40, 41, 42]


DATASET_IDS = ['ab/walk-v0', 'a/walk-v0', 'ab/c/walk-v12', 'walk-v0', 'w-v0',
               'walk', 'ab/walk', 'ab/-v0', 'a//b-v0', 'ab//c/walk-v0',
               '-_/x-v1', 'ns/wa lk-v0', 'ns/walk-v0.1', '/walk-v0']
"""Ids Minari takes and ids it refuses (a one-character namespace, no
version, an empty part)."""


def test_dataset_ids_are_what_minari_parses(minari_root):
  from minari.dataset import minari_dataset  # pylint: disable=g-import-not-at-top

  def minari_parses(dataset_id):
    try:
      minari_dataset.parse_dataset_id(dataset_id)
    except (ValueError, TypeError):  # TypeError: int(None), no version.
      return False
    return True

  accepted = [i for i in DATASET_IDS if minari_parses(i)]
  assert accepted == ['ab/walk-v0', 'ab/c/walk-v12', 'walk-v0', 'w-v0',
                      'ab//c/walk-v0', '-_/x-v1']
  assert [i for i in DATASET_IDS if minari_lib.is_dataset_id(i)] == accepted
  episodes = convert_testing.NAMED_EPISODES['truncated']
  with pytest.raises(ValueError, match=(
      r"^to_minari: dataset_id='a/walk-v0' is not a Minari id: .*a namespace "
      r'of 2 characters or more')):
    minari_lib.to_minari(episodes, minari_root, 'a/walk-v0')
  assert not os.listdir(minari_root)
  import minari  # pylint: disable=g-import-not-at-top
  minari_lib.to_minari(episodes, minari_root, 'ab/walk-v0')
  dataset = minari.load_dataset('ab/walk-v0')
  assert dataset.total_episodes == 1 and dataset.total_steps == 4
  assert 'ab/walk-v0' in minari.list_local_datasets()


def test_from_minari_reads_what_minari_writes(minari_root):
  import minari  # pylint: disable=g-import-not-at-top
  from gymnasium import spaces  # pylint: disable=g-import-not-at-top
  from minari import data_collector  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(0)
  buffers = []
  cases = [(3, True), (4, False), (1, True)]
  for index, (count, terminated) in enumerate(cases):
    buffers.append(data_collector.EpisodeBuffer(
        seed=index + 10,
        observations={'pos': rng.normal(size=(count + 1, 3)).astype(np.float32),
                      'n': rng.integers(0, 4, count + 1)},
        actions=(rng.normal(size=(count, 2)).astype(np.float32),
                 rng.integers(0, 3, count)),
        rewards=list(rng.normal(size=count)),
        terminations=[False] * (count - 1) + [terminated],
        truncations=[False] * (count - 1) + [not terminated],
        infos={'x': np.arange(count + 1) * 10}))
  obs_space = spaces.Dict({'pos': spaces.Box(-9, 9, (3,), np.float32),
                           'n': spaces.Discrete(4)})
  act_space = spaces.Tuple((spaces.Box(-9, 9, (2,), np.float32),
                            spaces.Discrete(3)))
  with pytest.warns(UserWarning):
    minari.create_dataset_from_buffers(
        'made/by-minari-v0', buffers, observation_space=obs_space,
        action_space=act_space)
  got = list(minari_lib.from_minari(minari_root / 'made' / 'by-minari-v0'))
  expected = []
  for index, buf in enumerate(buffers):
    steps = rlds_reference(
        buf.observations,
        {'_index_0': buf.actions[0], '_index_1': buf.actions[1]},
        np.array(buf.rewards), buf.terminations, buf.truncations)
    steps['infos'] = {'x': buf.infos['x']}
    expected.append({'steps': steps, 'id': np.int64(index),
                     'seed': np.int64(index + 10)})
  convert_testing.assert_episodes_equal(got, expected)
  # Minari -> RLDS -> Minari: minari loads the copy with the same arrays.
  metadata = minari_lib.read_metadata(minari_root / 'made' / 'by-minari-v0')
  minari_lib.to_minari(got, minari_root, 'made/copy-v0',
                       observation_space=metadata['observation_space'],
                       action_space=metadata['action_space'])
  copy = minari.load_dataset('made/copy-v0')
  assert copy.observation_space == obs_space
  assert copy.action_space == act_space
  for buf, loaded in zip(buffers, copy.iterate_episodes()):
    for key in ('pos', 'n'):
      np.testing.assert_array_equal(loaded.observations[key],
                                    buf.observations[key])
    for i in (0, 1):
      np.testing.assert_array_equal(loaded.actions[i], buf.actions[i])
    np.testing.assert_array_equal(loaded.rewards, buf.rewards)
    np.testing.assert_array_equal(loaded.terminations, buf.terminations)
    np.testing.assert_array_equal(loaded.truncations, buf.truncations)
    np.testing.assert_array_equal(loaded.infos['x'], buf.infos['x'])
  assert [m['seed'] for m in copy.storage.get_episode_metadata([0, 1, 2])] == [
      10, 11, 12]


def test_jpeg_encoded_images_written_by_minari(minari_root):
  import minari  # pylint: disable=g-import-not-at-top
  from gymnasium import spaces  # pylint: disable=g-import-not-at-top
  from minari import data_collector  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(1)
  images = rng.integers(0, 255, (3, 32, 32, 3), dtype=np.uint8)
  buffer = data_collector.EpisodeBuffer(
      observations=list(images), actions=[0, 1], rewards=[1., 2.],
      terminations=[False, True], truncations=[False, False])
  with pytest.warns(UserWarning):
    minari.create_dataset_from_buffers(
        'jpeg-v0', [buffer],
        observation_space=spaces.Box(0, 255, (32, 32, 3), np.uint8),
        action_space=spaces.Discrete(2))
  loaded = next(minari.load_dataset('jpeg-v0').iterate_episodes())
  steps = next(minari_lib.from_minari(minari_root / 'jpeg-v0'))['steps']
  assert steps['observation'].shape == (3, 32, 32, 3)
  np.testing.assert_array_equal(steps['observation'], loaded.observations)
  assert not np.array_equal(steps['observation'], images)  # JPEG is lossy


def test_minari_loads_string_observations_as_text(minari_root):
  # RT-1 keeps its instruction in the observation: a gymnasium Text space.
  import minari  # pylint: disable=g-import-not-at-top
  from gymnasium import spaces  # pylint: disable=g-import-not-at-top
  texts = np.array(['pick é', 'place', ''])
  episode = {'steps': {
      'observation': {'state': np.zeros((3, 2), np.float32),
                      'instruction': texts},
      'action': np.zeros((3, 1), np.float32),
      'reward': np.zeros(3, np.float32),
      **convert.rlds_flags(3, True)},
             'task': 'stack é', 'file': b'run.h5'}
  path = minari_lib.to_minari([episode], minari_root, 'rlds/text-v0')
  dataset = minari.load_dataset('rlds/text-v0')
  space = dataset.observation_space['instruction']
  assert isinstance(space, spaces.Text)
  assert space.max_length == 6
  loaded = next(dataset.iterate_episodes())
  assert list(loaded.observations['instruction']) == texts.tolist()
  back = next(minari_lib.from_minari(path))
  assert back['steps']['observation']['instruction'].tolist() == [
      t.encode() for t in texts]
  assert (back['task'], back['file']) == ('stack é'.encode(), b'run.h5')
