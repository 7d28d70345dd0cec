"""Named cases of Octo's semantics: rlds_lite.octo against the NumPy reference (octo_reference.py), field by field."""

import fnmatch
import functools
import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import octo
import octo_reference as ref
import rlds_testing

# Two datasets: 'alpha' (action 2, proprio 3; episode 1 unlabeled; episodes 2
# and 4 of one length, 2 terminal, 4 truncated) and 'beta' (action 3, proprio 2).
SPECS = {'alpha': dict(index=0, lengths=(1, 2, 5, 7, 5), action_dim=2,
                       proprio_dim=3, unlabeled=(1,)),
         'beta': dict(index=1, lengths=(3, 6), action_dim=3, proprio_dim=2,
                      unlabeled=())}
KEYS = dict(image_obs_keys={'primary': 'cam', 'wrist': None},
            proprio_obs_key='state', language_key='language_instruction')
SIZE = 8


def _raw(spec, e, length):
  """Episode ``e``: cam pixel (e+1, t+1, dataset+1), action e*10+t+d/10, state -(e*10+t)-p/10."""
  t = np.arange(length)
  base = (e * 10 + t)[:, None].astype(np.float32)
  cam = np.zeros((length, SIZE, SIZE, 3), np.uint8)
  cam[..., 0], cam[..., 1], cam[..., 2] = e + 1, (t + 1)[:, None, None], spec['index'] + 1
  label = b'' if e in spec['unlabeled'] else f'task {e}'.encode()
  return {'observation': {'cam': cam, 'state': -base - np.arange(
      spec['proprio_dim'], dtype=np.float32) / 10},
          'action': base + np.arange(spec['action_dim'], dtype=np.float32) / 10,
          'language_instruction': np.array([label] * length, object),
          'language_instruction_2': np.array([f'alt {e}'.encode()] * length, object)}


def _write(root, name, spec):
  from rlds_lite.tfds import EpisodeWriter  # pylint: disable=g-import-not-at-top
  features = {'steps': {
      'observation': {'cam': tfds.features.Image(shape=(SIZE, SIZE, 3), encoding_format='png'),
                      'state': tfds.features.Tensor(shape=(spec['proprio_dim'],), dtype=np.float32)},
      'action': tfds.features.Tensor(shape=(spec['action_dim'],), dtype=np.float32),
      'reward': np.float32, 'language_instruction': tfds.features.Text(),
      'language_instruction_2': tfds.features.Text()}}
  raws = []
  with EpisodeWriter(str(root), name, features) as writer:
    for e, length in enumerate(spec['lengths']):
      raw = _raw(spec, e, length)
      index = np.arange(length)
      writer.add_episode({'steps': {
          **raw, 'reward': np.zeros(length, np.float32),
          'is_first': index == 0, 'is_last': index == length - 1,
          'is_terminal': (index == length - 1) & (e % 2 == 0)}})
      raws.append(raw)
  return raws


@pytest.fixture(scope='module')
def data(tmp_path_factory):
  """``(data_dir, {name: [raw episodes]})``."""
  root = tmp_path_factory.mktemp('octo')
  return str(root), {name: _write(root, name, spec) for name, spec in SPECS.items()}


@functools.lru_cache(maxsize=None)
def _pixel(s):
  """The top-left pixel of a PNG frame (frames are constant): ``(episode+1, step+1, dataset+1)``."""
  return tuple(int(v) for v in tf.io.decode_png(s).numpy()[0, 0])


def _indices(strings, episode):
  """Encoded frames (any shape) as their step indices, -1 for padding ('')."""
  pixels = [None if s == b'' else _pixel(s) for s in np.ravel(strings)]
  assert all(p[0] == episode + 1 for p in pixels if p is not None), pixels
  flat = [-1 if p is None else p[1] - 1 for p in pixels]
  return np.array(flat, np.int64).reshape(np.shape(strings))


def _indexed(tree, episode):
  return {k: (_indexed(v, episode) if isinstance(v, dict) else
              _indices(v, episode) if ref.is_image_key(k) and v.dtype == object else v)
          for k, v in tree.items()}


def _episode(traj):
  return _pixel(np.ravel(traj['observation']['image_primary'])[0])[0] - 1


_OPENED = {}


def _trajectories(root, name, **kwargs):
  """make_dataset_from_rlds (skip_norm unless told), made once per arguments: its trajectories are read anew each time."""
  options = dict(KEYS, skip_norm=True)
  options.update(kwargs)
  key = repr((root, name, sorted(options.items())))
  if key not in _OPENED:
    _OPENED[key] = octo.make_dataset_from_rlds(name, root, train=True, shuffle=False, **options)
  return _OPENED[key]


def _read(data, name='alpha', traj=None, **kwargs):
  """``({episode: trajectory with frames as indices}, statistics)``."""
  ds, stats = _trajectories(data[0], name, **kwargs)
  if traj is not None:
    ds = octo.apply_trajectory_transforms(ds, train=True, **traj)
  out = {}
  for t in ds.as_numpy_iterator():
    out[_episode(t)] = _indexed(t, _episode(t))
  return out, stats


def _keys(name='alpha', **kwargs):
  options = dict(KEYS, name=name)
  options.update(kwargs)
  options.pop('skip_norm', None)
  return options


def _expected(data, dataset, e, **kwargs):
  return ref.expected_trajectory(data[1][dataset][e], **kwargs)


def _goals_from_proprio(traj, raw_state):
  """The goal index of each step: the step whose (raw) state is the goal's proprio."""
  goal = traj['task']['proprio'][:, :raw_state.shape[1]]
  return np.array([int(np.flatnonzero((raw_state == g).all(1))[0]) for g in goal])


TRAJ_CASES = {
    'one_step_trajectory': dict(window_size=2, action_horizon=3),
    'history_at_the_episode_start': dict(window_size=4, action_horizon=1),
    'a_chunk_past_the_end': dict(window_size=1, action_horizon=5),
    'window_and_chunk': dict(window_size=3, action_horizon=4),
    'max_action_dim_and_max_proprio_dim_padding': dict(
        window_size=2, action_horizon=2, max_action_dim=5, max_proprio_dim=4),
}


@pytest.mark.parametrize('case', sorted(TRAJ_CASES))
def test_trajectory_transforms_match_the_reference(data, case):
  kwargs = TRAJ_CASES[case]
  got, _ = _read(data, traj=kwargs)
  assert sorted(got) == list(range(len(SPECS['alpha']['lengths'])))
  for e, traj in got.items():
    rlds_testing.assert_structures_equal(
        traj, _expected(data, 'alpha', e, **kwargs, **_keys()), f'episode {e}')
  if case == 'one_step_trajectory':   # Episode 0 has one step.
    one = got[0]
    assert one['observation']['timestep_pad_mask'].tolist() == [[False, True]]
    np.testing.assert_array_equal(one['action'][0, 1], np.float32([[0, .1]] * 3))
    assert one['observation']['task_completed'].tolist() == [[[False, False, False], [False, False, True]]]
  if case == 'history_at_the_episode_start':
    three = got[3]['observation']
    assert three['timestep_pad_mask'][0].tolist() == [False, False, False, True]
    assert three['timestep'][1].tolist() == [0, 0, 0, 1]
    assert three['image_primary'][2].tolist() == [0, 0, 1, 2]
  if case == 'a_chunk_past_the_end':  # Episode 3 (7 steps): the last action repeated.
    np.testing.assert_array_equal(got[3]['action'][5, 0, :, 0], np.float32([35, 36, 36, 36, 36]))
    assert got[3]['action_pad_mask'][6, 0, :, 0].tolist() == [True, True, False, False, False]
  if case == 'max_action_dim_and_max_proprio_dim_padding':
    assert got[3]['action'].shape == (7, 2, 2, 5)
    assert got[3]['action_pad_mask'][0, 0, 0].tolist() == [True, True, False, False, False]
    assert got[3]['observation']['proprio'][4, 1].tolist() == pytest.approx([-34, -34.1, -34.2, 0])


def test_terminal_and_truncated_ends_are_treated_alike(data):
  kwargs = dict(window_size=2, action_horizon=3)
  got, _ = _read(data, traj=kwargs)
  terminal, truncated = got[2], got[4]   # Both 5 steps; 2 terminal, 4 truncated.
  for path in (('observation', 'task_completed'), ('observation', 'timestep_pad_mask'),
               ('action_pad_mask',), ('observation', 'timestep')):
    a, b = terminal, truncated
    for k in path:
      a, b = a[k], b[k]
    np.testing.assert_array_equal(a, b, err_msg='/'.join(path))


def test_goal_relabeling_uniform(data):
  kwargs = dict(window_size=2, action_horizon=3, goal_relabeling_strategy='uniform')
  got, _ = _read(data, traj=kwargs)
  for e, traj in got.items():
    goals = traj['task']['timestep']
    length = len(goals)
    assert ((goals >= np.arange(length)) & (goals < length)).all(), goals
    np.testing.assert_array_equal(traj['task']['image_primary'], goals)  # Goal image = goal step.
    np.testing.assert_array_equal(_goals_from_proprio(traj, data[1]['alpha'][e]['observation']['state']), goals)
    expected = _expected(data, 'alpha', e, goal_idxs=goals,
                         **{k: v for k, v in kwargs.items() if k != 'goal_relabeling_strategy'}, **_keys())
    rlds_testing.assert_structures_equal(traj, expected, f'episode {e}')


@pytest.mark.parametrize('keep_image_prob', [0.0, 1.0])
def test_task_augmentation_delete_task_conditioning(data, keep_image_prob):
  kwargs = dict(window_size=1, action_horizon=2, goal_relabeling_strategy='uniform',
                task_augment_strategy='delete_task_conditioning',
                task_augment_kwargs={'keep_image_prob': keep_image_prob})
  got, _ = _read(data, traj=kwargs)
  for e, traj in got.items():
    raw = data[1]['alpha'][e]
    labeled = e not in SPECS['alpha']['unlabeled']
    keep = keep_image_prob == 1.0 or not labeled
    assert traj['task']['pad_mask_dict']['image_primary'].all() == keep, e
    assert traj['task']['pad_mask_dict']['language_instruction'].any() == (labeled and not keep), e
    goals = _goals_from_proprio(traj, raw['observation']['state'])
    expected = _expected(data, 'alpha', e, window_size=1, action_horizon=2, goal_idxs=goals,
                         keep_images=keep, **_keys())
    rlds_testing.assert_structures_equal(traj, expected, f'episode {e}')


def test_padding_images_decode_to_zeros_at_the_resize_size(data):
  kwargs = dict(window_size=2, action_horizon=1, goal_relabeling_strategy='uniform')
  root, raws = data[0], data[1]['alpha']
  ds, _ = octo.make_dataset_from_rlds('alpha', root, train=True, shuffle=False, skip_norm=True, **KEYS)
  ds = octo.apply_trajectory_transforms(ds, train=True, **kwargs)
  ds = octo.apply_frame_transforms(ds, train=False, resize_size={'primary': (16, 16), 'wrist': (16, 16)})
  seen = 0
  for traj in ds.as_numpy_iterator():
    obs = traj['observation']
    e = int(obs['image_primary'][0, 0, 0, 0, 0]) - 1
    length = len(raws[e]['action'])
    expected = ref.expected_trajectory(raws[e], window_size=2, action_horizon=1,
                                       goal_idxs=traj['task']['timestep'], **_keys())
    for part, key in (('observation', 'image_primary'), ('observation', 'image_wrist'),
                      ('task', 'image_primary'), ('task', 'image_wrist')):
      index = expected[part][key]
      pixels = np.zeros(index.shape + (16, 16, 3), np.uint8)
      pixels[index >= 0] = [e + 1, 0, 1]
      pixels[..., 1] = np.where(index >= 0, index + 1, 0)[..., None, None]
      rlds_testing.assert_structures_equal(traj[part][key], pixels, f'{e}/{part}/{key}')
    assert obs['pad_mask_dict']['image_wrist'].tolist() == [[False, False]] * length
    assert traj['task']['pad_mask_dict']['image_wrist'].tolist() == [False] * length
    seen += 1
  assert seen == len(raws)


def test_missing_language_gives_no_language_instruction(data):
  got, _ = _read(data, traj={}, language_key=None)
  for e, traj in got.items():
    assert 'language_instruction' not in traj['task']
    assert traj['task']['pad_mask_dict'] == {}
    rlds_testing.assert_structures_equal(
        traj, _expected(data, 'alpha', e, **_keys(language_key=None)), f'episode {e}')


def test_language_key_fnmatching_several_keys_picks_one_per_trajectory(data):
  picks = set()
  candidates = ['language_instruction', 'language_instruction_2']
  assert fnmatch.filter(candidates, 'language_instruction*') == candidates
  for _ in range(2):
    got, _ = _read(data, traj={}, language_key='language_instruction*')
    for e, traj in got.items():
      raw = data[1]['alpha'][e]
      pick = [i for i, k in enumerate(candidates)
              if np.array_equal(traj['task']['language_instruction'], raw[k])]
      assert pick, (e, traj['task']['language_instruction'])
      picks.add(pick[0])
      rlds_testing.assert_structures_equal(
          traj, _expected(data, 'alpha', e, **_keys(language_key='language_instruction*',
                                                    language_pick=pick[0])), f'episode {e}')
  assert picks <= {0, 1}


def test_statistics_are_octos_numpy_statistics(data):
  """Octo: np.mean/std/max/min exact; p01 / p99 between the two order statistics np.quantile interpolates."""
  _, stats = _read(data)
  raws = data[1]['alpha']
  actions = np.concatenate([r['action'] for r in raws])
  states = np.concatenate([r['observation']['state'] for r in raws])
  assert int(stats['num_transitions']) == len(actions)
  assert int(stats['num_trajectories']) == len(raws)
  for key, values in (('action', actions), ('proprio', states)):
    for stat, fn in (('mean', np.mean), ('std', np.std), ('max', np.max), ('min', np.min)):
      np.testing.assert_allclose(stats[key][stat], fn(values, 0), rtol=1e-5,
                                 err_msg=f'{key}/{stat}')
    ordered = np.sort(values, 0)
    for stat, q in (('p01', 0.01), ('p99', 0.99)):
      rank = q * (len(values) - 1)   # np.quantile's linear interpolation.
      low, high = ordered[int(np.floor(rank))], ordered[int(np.ceil(rank))]
      got = np.asarray(stats[key][stat], np.float32)
      assert ((low <= got) & (got <= high)).all(), (key, stat, got, low, high)


def _unchanged(traj):
  return traj


def test_statistics_read_from_the_records_equal_the_pipelines(data):
  """Stored fields read from the record files (frames unread) vs the trajectory pipeline (any standardize_fn)."""
  _, fast = _read(data)
  _, slow = _read(data, standardize_fn=_unchanged)
  for key in ('num_transitions', 'num_trajectories'):
    assert int(fast[key]) == int(slow[key]), key
  for key in ('action', 'proprio'):
    for stat in ('mean', 'std', 'max', 'min'):
      np.testing.assert_allclose(fast[key][stat], slow[key][stat], rtol=1e-6,
                                 err_msg=f'{key}/{stat}')


def test_statistics_of_a_cut_record_file_name_the_file_and_record(data, tmp_path):
  copy = shutil.copytree(os.path.join(data[0], 'alpha', '1.0.0'), tmp_path / 'alpha')
  shard = sorted(str(p) for p in copy.glob('*.tfrecord*'))[0]
  with open(shard, 'r+b') as f:
    f.truncate(f.seek(0, 2) - 1)
  with pytest.raises(ValueError, match=(
      rf'^{re.escape(shard)}: record \d+ \(byte \d+\): it is cut off \(it needs '
      r'\d+ bytes, the file has \d+\)$')):
    octo.make_dataset_from_rlds(str(copy), None, train=True, skip_norm=True,
                                force_recompute_dataset_statistics=True, **KEYS)


@pytest.mark.parametrize('kind', ['normal', 'bounds'])
@pytest.mark.parametrize('mask', [None, [True, False]])
def test_normalisation_with_a_mask(data, kind, mask):
  """Normalised with the statistics make_dataset_from_rlds returns (their values: the test above)."""
  got, stats = _read(data, skip_norm=False, action_proprio_normalization_type=kind,
                     action_normalization_mask=mask)
  raws = data[1]['alpha']
  if mask is not None:
    assert stats['action']['mask'].tolist() == mask
  for e, traj in got.items():
    expected = ref.normalize(ref.restructure(raws[e], **_keys()), stats, kind)
    if mask is not None:
      np.testing.assert_array_equal(traj['action'][:, 1], raws[e]['action'][:, 1])
    for path in ('action',), ('observation', 'proprio'):
      a, b = traj, expected
      for k in path:
        a, b = a[k], b[k]
      rlds_testing.assert_structures_equal(a, b, f'episode {e}/{"/".join(path)}')


def test_skip_unlabeled_drops_trajectories_without_language(data):
  got, _ = _read(data, traj=dict(skip_unlabeled=True))
  assert sorted(got) == [0, 2, 3, 4]
  with pytest.raises(ValueError, match='skip_unlabeled'):
    _read(data, traj=dict(skip_unlabeled=True), language_key=None)


def test_max_action_filters_trajectories(data):
  limit = 25.0
  got, _ = _read(data, traj=dict(max_action=limit))
  expected = [e for e, r in enumerate(data[1]['alpha']) if np.abs(r['action']).max() <= limit]
  assert expected == [0, 1, 2]
  assert sorted(got) == expected


# make_interleaved_dataset: every sample equals the reference for its
# (dataset, episode, t, goal_t, keep).
def test_interleaved_batches_match_the_reference(data):
  root, raws = data
  traj_kwargs = dict(window_size=2, action_horizon=2, goal_relabeling_strategy='uniform',
                     task_augment_strategy='delete_task_conditioning',
                     task_augment_kwargs={'keep_image_prob': 0.5},
                     max_action_dim=3, max_proprio_dim=3)
  ds = octo.make_interleaved_dataset(
      [dict(KEYS, name=name, data_dir=root) for name in SPECS], [1.0, 1.0],
      train=True, shuffle_buffer_size=8, traj_transform_kwargs=traj_kwargs,
      frame_transform_kwargs=dict(resize_size={'primary': (SIZE, SIZE), 'wrist': (SIZE, SIZE)}),
      batch_size=4, seed=0)
  compared = set()
  for batch in ds.take(3).as_numpy_iterator():
    assert batch['action'].shape == (4, 2, 2, 3)
    for i in range(4):
      sample = tf.nest.map_structure(lambda x, i=i: x[i], batch)
      compared.add(_check_sample(sample, raws, ds.dataset_statistics))
  assert {name for name, _ in compared} == set(SPECS)


def _check_sample(sample, raws, statistics):
  name = sample['dataset_name'].decode()
  current = sample['observation']['image_primary'][-1]
  e, t = int(current[0, 0, 0]) - 1, int(current[0, 0, 1]) - 1
  assert current[0, 0, 2] == SPECS[name]['index'] + 1
  assert int(sample['observation']['timestep'][-1]) == t
  raw = raws[name][e]
  opts = dict(window_size=2, action_horizon=2, statistics=statistics[name],
              max_action_dim=3, max_proprio_dim=3, **_keys(name))
  plain = ref.expected_trajectory(raw, **opts)
  goal = np.flatnonzero((plain['observation']['proprio'][:, -1] == sample['task']['proprio']).all(1))
  labeled = e not in SPECS[name]['unlabeled']
  keep = bool(sample['task']['pad_mask_dict']['image_primary']) or not labeled
  expected = ref.expected_sample(raw, t, goal_t=int(goal[0]), keep_images=keep, **opts)
  for part in ('observation', 'task'):
    for key in [k for k in expected[part] if ref.is_image_key(k)]:
      index = expected[part][key]
      pixels = np.zeros(np.shape(index) + (SIZE, SIZE, 3), np.uint8)
      pixels[index >= 0] = [e + 1, 0, SPECS[name]['index'] + 1]
      pixels[..., 1] = np.where(index >= 0, index + 1, 0)[..., None, None]
      expected[part][key] = pixels
  rlds_testing.assert_structures_equal(sample, expected, f'{name} episode {e} step {t}')
  return name, e


# Bad input: the message names the dataset and the key.
def _message(data, **kwargs):
  with pytest.raises(ValueError) as error:
    _read(data, **kwargs)
  return str(error.value)


def test_a_missing_camera_key_is_named(data):
  message = _message(data, image_obs_keys={'primary': 'no_camera'})
  assert 'alpha' in message and 'no_camera' in message, message


def test_a_language_key_matching_nothing_is_named(data):
  message = _message(data, language_key='no_language*')
  assert 'alpha' in message and 'no_language*' in message, message


def test_statistics_of_another_dataset_are_refused(data):
  _, beta_stats = _read(data, 'beta')
  message = _message(data, dataset_statistics=beta_stats)
  assert 'alpha' in message and 'action' in message, message


def test_weights_of_another_length_are_refused(data):
  root, _ = data
  with pytest.raises(ValueError) as error:
    octo.make_interleaved_dataset([dict(KEYS, name=name, data_dir=root) for name in SPECS],
                                  [1.0], train=True, shuffle_buffer_size=8)
  assert 'sample_weights' in str(error.value) and '2' in str(error.value), str(error.value)
