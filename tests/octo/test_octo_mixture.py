"""make_interleaved_dataset: a mixture's structure, exact counts, seeds, resume, the memory plan, bad input."""

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite import octo
from rlds_lite import synthetic
from rlds_lite.pipeline import ResumableIterator

TRAJ = {'window_size': 2, 'action_horizon': 3,
        'goal_relabeling_strategy': 'uniform',
        'task_augment_strategy': 'delete_task_conditioning',
        'task_augment_kwargs': {'keep_image_prob': 0.5}}
SIZES = {'primary': (16, 16), 'wrist': (8, 8)}
AUGMENT = {'augment_order': ['random_resized_crop', 'random_brightness'],
           'random_resized_crop': {'scale': [0.8, 1.0], 'ratio': [0.9, 1.1]},
           'random_brightness': [0.1]}


@pytest.fixture(scope='module')
def kwargs_list(tmp_path_factory):
  """Two cameras with language (no proprio), and one camera with 8-d proprio (no language)."""
  a = synthetic.camera_dataset(tmp_path_factory.mktemp('a'), 'two_cams', 5, 6,
                               {'image': (16, 16), 'wrist': (8, 8)})
  b = synthetic.camera_dataset(tmp_path_factory.mktemp('b'), 'one_cam', 4, 5,
                               {'image': (16, 16)}, seed=1)
  return [{'name': a, 'data_dir': None, 'language_key': 'language_instruction',
           'image_obs_keys': {'primary': 'image', 'wrist': 'wrist'}},
          {'name': b, 'data_dir': None, 'proprio_obs_key': 'state',
           'image_obs_keys': {'primary': 'image', 'wrist': None}}]


def _mixture(kwargs_list, seed=0, train=True, **extra):
  frame = {'resize_size': SIZES, **extra.pop('frame', {})}
  return octo.make_interleaved_dataset(
      kwargs_list, [0.75, 0.25], train=train, shuffle_buffer_size=10_000,
      traj_transform_kwargs={**TRAJ, **extra.pop('traj', {})},
      frame_transform_kwargs=frame, batch_size=8, seed=seed, **extra)


def _numpy(batch):
  return tf.nest.map_structure(lambda x: x.numpy(), batch)


def test_one_batch_holds_both_datasets_in_octos_structure(kwargs_list):
  ds = _mixture(kwargs_list)
  batch = _numpy(next(iter(ds)))
  obs, task = batch['observation'], batch['task']
  shapes = {k: (v.dtype.name, v.shape) for k, v in obs.items() if k != 'pad_mask_dict'}
  assert shapes == {
      'image_primary': ('uint8', (8, 2, 16, 16, 3)),
      'image_wrist': ('uint8', (8, 2, 8, 8, 3)),
      'proprio': ('float32', (8, 2, 8)), 'timestep': ('int32', (8, 2)),
      'timestep_pad_mask': ('bool', (8, 2)), 'task_completed': ('bool', (8, 2, 3))}
  assert sorted(obs['pad_mask_dict']) == ['image_primary', 'image_wrist',
                                          'proprio', 'timestep']
  assert sorted(task) == ['image_primary', 'image_wrist', 'language_instruction',
                          'pad_mask_dict', 'proprio', 'timestep']
  assert batch['action'].shape == (8, 2, 3, 7)
  assert batch['action_pad_mask'].shape == (8, 2, 3, 7)
  names = batch['dataset_name'].tolist()
  assert names == [b'two_cams'] * 6 + [b'one_cam'] * 2   # exact_counts(0.75, 0.25)
  one = np.array(names) == b'one_cam'
  # one_cam has no wrist camera: zeros, masked out; no language: '' masked out.
  assert obs['image_wrist'][one].max() == 0
  assert not obs['pad_mask_dict']['image_wrist'][one].any()
  assert obs['pad_mask_dict']['image_wrist'][~one].all()
  assert task['language_instruction'][one].tolist() == [b'', b'']
  assert not task['pad_mask_dict']['language_instruction'][one].any()
  # two_cams has no proprio: zeros, masked out.
  assert obs['proprio'][~one].max() == 0 and obs['pad_mask_dict']['proprio'][one].all()
  assert not obs['pad_mask_dict']['proprio'][~one].any()
  assert sorted(ds.dataset_statistics) == ['one_cam', 'two_cams']
  assert ds.sample_weights.tolist() == [0.75, 0.25]


def test_task_augmentation_drops_language_or_goal_images_never_both(kwargs_list):
  ds = _mixture(kwargs_list)
  for batch in ds.take(4).as_numpy_iterator():
    task, masks = batch['task'], batch['task']['pad_mask_dict']
    two = batch['dataset_name'] == b'two_cams'
    lang, image = masks['language_instruction'][two], masks['image_primary'][two]
    assert (lang != image).all()     # exactly one of them kept
    # Dropped goal images are zeros; a dropped goal's step is the last one.
    assert task['image_primary'][two][~image].max(initial=0) == 0
    t = batch['observation']['timestep'][:, -1]
    assert (task['timestep'] >= t).all()


def test_a_seed_gives_the_same_batches_twice(kwargs_list):
  extra = {'frame': {'image_augment_kwargs': AUGMENT, 'image_dropout_prob': 0.3}}
  first = [_numpy(b) for b in _mixture(kwargs_list, seed=5, **dict(extra)).take(3)]
  again = [_numpy(b) for b in _mixture(kwargs_list, seed=5, **dict(extra)).take(3)]
  other = [_numpy(b) for b in _mixture(kwargs_list, seed=6, **dict(extra)).take(3)]
  tf.nest.map_structure(np.testing.assert_array_equal, first, again)
  assert not all(np.array_equal(a['action'], b['action'])
                 for a, b in zip(first, other))


def test_the_mixture_resumes_exactly_from_a_checkpoint(kwargs_list, tmp_path):
  it = ResumableIterator(_mixture(kwargs_list, seed=2))
  for _ in range(2):
    next(it)
  path = it.save(str(tmp_path / 'ckpt'))
  rest = [_numpy(next(it)) for _ in range(3)]
  resumed = ResumableIterator(_mixture(kwargs_list, seed=2))
  resumed.restore(path)
  again = [_numpy(next(resumed)) for _ in range(3)]
  tf.nest.map_structure(np.testing.assert_array_equal, rest, again)


def test_the_plan_stays_within_the_budget(kwargs_list):
  ds = _mixture(kwargs_list, memory_budget='64MB')
  plan = ds.plan
  assert plan.memory_budget == 64_000_000
  assert [d.name for d in plan.datasets] == ['two_cams', 'one_cam']
  assert [d.samples_per_batch for d in plan.datasets] == [6, 2]
  assert 0 < plan.memory <= plan.memory_budget
  assert 'MixturePlan(memory_budget=64.0 MB' in repr(plan)
  # 8 samples x (2 frames + a goal) of 16x16 + 8x8 x 3 bytes, 3 copies (no
  # augmentation).
  assert plan.frame_transforms == 3 * 8 * 3 * (16 * 16 + 8 * 8) * 3
  with pytest.raises(ValueError, match="dataset 'two_cams': memory_budget"):
    _mixture(kwargs_list, memory_budget=plan.frame_transforms + 1000)


@pytest.mark.parametrize('change, error, message', [
    ({'sample_weights': [1.0]}, ValueError,
     r"sample_weights has 1 weights for 2 datasets \["),
    ({'traj': {'post_chunk_transforms': [lambda t: t]}}, ValueError,
     'post_chunk_transforms are not offered on the planned path'),
    ({'frame': {'depth_resize_size': (8, 8)}}, ValueError,
     'depth cameras are not offered'),
    ({'traj': {'goal_relabeling_strategy': 'geometric'}}, ValueError,
     "goal_relabeling_strategy must be 'uniform' or None, got 'geometric'"),
    ({'memory_budget': '1KB'}, ValueError,
     r'memory_budget 1.0 KB does not hold the batch-wide stages alone \([0-9.]+ [KM]B: '
     'concatenating, augmenting and prefetching batches of 8 samples'),
])
def test_bad_input_is_one_clear_error(kwargs_list, change, error, message):
  change = dict(change)
  weights = change.pop('sample_weights', [0.75, 0.25])
  frame = {'resize_size': SIZES, **change.pop('frame', {})}
  with pytest.raises(error, match=message):
    octo.make_interleaved_dataset(
        kwargs_list, weights, train=True, shuffle_buffer_size=10,
        traj_transform_kwargs={**TRAJ, **change.pop('traj', {})},
        frame_transform_kwargs=frame, batch_size=8, **change)


def test_a_missing_camera_names_the_dataset_and_key(kwargs_list):
  bad = [{**kwargs_list[1], 'image_obs_keys': {'primary': 'front'}}]
  with pytest.raises(ValueError, match="dataset 'one_cam': image_obs_keys maps "
                     "'primary' to observation key 'front'"):
    octo.make_interleaved_dataset(bad, train=True, shuffle_buffer_size=10,
                                  batch_size=4)


def test_depth_cameras_are_refused_on_the_planned_path(kwargs_list):
  depth = [{**kwargs_list[1], 'depth_obs_keys': {'primary': None}}]
  with pytest.raises(ValueError, match="dataset 'one_cam' has depth cameras "
                     r"\['primary'\], which the planned path does not offer"):
    octo.make_interleaved_dataset(depth, train=True, shuffle_buffer_size=10,
                                  batch_size=4)
