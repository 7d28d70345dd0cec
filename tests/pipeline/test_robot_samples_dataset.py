"""Tests of rlds_lite.pipeline.robot_samples_dataset: samples, decoding, plans.

The reference: the dataset read fully decoded by ``rlds_lite.load(...,
dense=True)`` (TFDS's image decoding), each episode through
``rlds_lite.dense.robot_samples``. Every decode placement must give exactly
those samples (same pixels), each once per pass.
"""

import collections
import dataclasses
import functools
import logging
import os

import numpy as np
import pytest
import tensorflow as tf

import rlds_lite
from rlds_lite import dense
from rlds_lite import images
from rlds_lite import pipeline
from rlds_lite import synthetic
from rlds_lite import option_objects
import rlds_testing

CAMERAS = {'image_primary': (32, 32), 'image_wrist': (16, 16)}
LENGTHS = (1, 2, 7, 5, 9, 3)   # A one-step episode, short ones, longer ones.


@pytest.fixture(scope='module')
def camera_path(tmp_path_factory):
  return rlds_testing.write_camera_dataset(tmp_path_factory.mktemp('cams'), CAMERAS, LENGTHS)


KIND_FIELDS = {f.name for f in dataclasses.fields(rlds_lite.RobotSamples)}
FRAME_FIELDS = {f.name for f in dataclasses.fields(pipeline.FrameDecoding)}


def reference(path, **kwargs):
  """(episode_id, anchor) -> the sample, from fully decoded episodes."""
  return _reference(path, rlds_lite.RobotSamples(index_key='t', **kwargs))


@functools.lru_cache(maxsize=None)
def _reference(path, kind):
  """`reference`, computed once per kind (the tables share them)."""
  samples = {}
  for episode in rlds_lite.load(path, dense=True):
    out = dense.robot_samples(episode['steps'], kind)
    out = tf.nest.map_structure(lambda x: x.numpy(), out)
    episode_id = int(episode['episode_id'])
    for row, t in enumerate(out.pop('t')):
      samples[episode_id, int(t)] = tf.nest.map_structure(lambda x: x[row], out)
  return samples


def collect(ds):
  """(episode_id, anchor) -> sample, from the batches; each key once."""
  samples, sizes = {}, []
  for batch in ds.as_numpy_iterator():
    sizes.append(len(batch['t']))
    ids, anchors = batch.pop('episode_id'), batch.pop('t')
    for row, key in enumerate(zip(ids.tolist(), anchors.tolist())):
      assert key not in samples, f'sample {key} came out twice'
      samples[key] = tf.nest.map_structure(lambda x: x[row], batch)
  return samples, sizes


def assert_same_samples(actual, expected):
  assert sorted(actual) == sorted(expected)
  for key, sample in expected.items():
    got = actual[key]
    tf.nest.assert_same_structure(got, sample)
    for a, b in zip(tf.nest.flatten(got), tf.nest.flatten(sample)):
      np.testing.assert_array_equal(a, b, err_msg=str(key))


DECODES = {
    'per_episode_whole': dict(decode='per_episode'),
    'per_episode_segments_of_2': dict(
        decode='per_episode', frames=pipeline.FrameDecoding(segment_steps=2)),
    'per_episode_segments_of_3': dict(
        decode='per_episode', frames=pipeline.FrameDecoding(segment_steps=3)),
    'after_sampling': dict(decode='after_sampling'),
    'auto': dict(decode='auto'),
}
SAMPLES = {
    'octo_2_4_valid': dict(history=2, action_chunk=4, last_step='valid'),
    'history_3_invalid_last_step': dict(history=3, action_chunk=2),
    'keep_actionless': dict(history=2, action_chunk=3, keep_actionless=True),
    'strided': dict(history=2, action_chunk=2, history_stride=2, shift=2,
                    last_step='valid'),
    'final_goal': dict(history=2, action_chunk=1, goal='final',
                       last_step='valid'),
}


# Every sample kind through the two decode paths that differ most (segments
# cut across samples, decoding after sampling); every decode path with the
# two kinds whose samples reach furthest (a stride, a 3-step history).
CASES = sorted({(s, d) for s in SAMPLES
                for d in ('per_episode_segments_of_2', 'after_sampling')} |
               {(s, d) for s in ('strided', 'history_3_invalid_last_step')
                for d in DECODES})


@pytest.mark.parametrize('sample, decode', CASES,
                         ids=[f'{s}-{d}' for s, d in CASES])
def test_samples_equal_the_dense_op_on_decoded_episodes(camera_path, sample,
                                                        decode):
  kwargs, decode = SAMPLES[sample], DECODES[decode]
  kind = rlds_lite.RobotSamples(index_key='t', **kwargs)
  ds = pipeline.robot_samples_dataset(
      camera_path, kind, 4, seed=1, episode_fields='episode_id', **decode)
  actual, sizes = collect(ds)
  assert_same_samples(actual, reference(camera_path, **kwargs))
  assert all(size == 4 for size in sizes[:-1]) and 0 < sizes[-1] <= 4


def test_batch_layout(camera_path):
  ds = pipeline.robot_samples_dataset(
      camera_path, rlds_lite.RobotSamples(history=2, action_chunk=4,
                                          last_step='valid', goal='future'),
      5, seed=0, episode_fields='episode_id', drop_last_batch=True)
  spec = ds.element_spec
  assert spec['observation']['image_primary'].shape.as_list() == [5, 2, 32, 32,
                                                                  3]
  assert spec['observation']['image_wrist'].shape.as_list() == [5, 2, 16, 16, 3]
  assert spec['observation']['state'].shape.as_list() == [5, 2, 8]
  assert spec['observation_pad_mask'].shape.as_list() == [5, 2]
  assert spec['action'].shape.as_list() == [5, 4, 7]
  assert spec['action_pad_mask'].shape.as_list() == [5, 4]
  assert spec['goal']['image_primary'].shape.as_list() == [5, 32, 32, 3]
  assert spec['goal']['state'].shape.as_list() == [5, 8]
  assert spec['language_instruction'].dtype == tf.string
  assert spec['episode_id'].shape.as_list() == [5]
  assert sum(1 for _ in ds) == sum(LENGTHS) // 5


@pytest.mark.parametrize('decode', ['per_episode', 'after_sampling'])
def test_image_size_decodes_at_the_dct_ratio(camera_path, decode):
  kind = rlds_lite.RobotSamples(history=2, action_chunk=1, last_step='valid',
                                index_key='t')
  ds = pipeline.robot_samples_dataset(
      camera_path, kind, 8, seed=0, decode=decode, episode_fields='episode_id',
      frames=pipeline.FrameDecoding(image_size=(16, 16)))
  actual, _ = collect(ds)
  encoded, specs = images.load_encoded(camera_path)
  for episode in encoded:
    episode_id = int(episode['episode_id'])
    observation = episode['steps']['observation']
    primary = images.decode_frames(observation['image_primary'],
                                   specs['observation/image_primary'],
                                   (16, 16)).numpy()
    direct = tf.stack([tf.io.decode_jpeg(f, ratio=2) for f in
                       observation['image_primary']]).numpy()
    np.testing.assert_array_equal(primary, direct)   # DCT scaling, no resize
    for t in range(len(primary)):
      sample = actual[episode_id, t]
      np.testing.assert_array_equal(sample['observation']['image_primary'][1],
                                    primary[t])
      assert sample['observation']['image_wrist'].shape == (2, 16, 16, 3)


def test_image_size_per_camera_and_resize(camera_path):
  ds = pipeline.robot_samples_dataset(
      camera_path, rlds_lite.RobotSamples(history=1), 4, seed=0,
      frames=pipeline.FrameDecoding(
          image_size={'observation/image_primary': (24, 20)}))
  spec = ds.element_spec['observation']
  assert spec['image_primary'].shape.as_list()[2:] == [24, 20, 3]
  assert spec['image_wrist'].shape.as_list()[2:] == [16, 16, 3]
  next(iter(ds))
  with pytest.raises(ValueError, match="image_size names \\['image'\\]"):
    pipeline.robot_samples_dataset(
        camera_path, rlds_lite.RobotSamples(), 4,
        frames=pipeline.FrameDecoding(image_size={'image': (8, 8)}))


@pytest.mark.parametrize('decode,pool', [('per_episode', 6), ('per_episode', 3),
                                         ('after_sampling', 4)])
def test_batches_mix_min_batch_and_pool_episodes(camera_path, decode, pool):
  ds = pipeline.robot_samples_dataset(
      camera_path, rlds_lite.RobotSamples(history=1, last_step='valid'), 3,
      seed=2, decode=decode, episode_fields='episode_id',
      frames=pipeline.FrameDecoding(pool_episodes=pool))
  first = next(iter(ds))['episode_id'].numpy()
  assert len(set(first.tolist())) == 3   # Episodes 2..5 have >= 3 steps.


def test_seeded_and_reshuffled_every_epoch(camera_path):
  def order(seed, epochs=1):
    ds = pipeline.robot_samples_dataset(
        camera_path,
        rlds_lite.RobotSamples(history=2, last_step='valid', index_key='t'), 4,
        seed=seed, episode_fields='episode_id')
    ds = ds.repeat(epochs) if epochs > 1 else ds
    return [(int(e), int(t)) for b in ds for e, t in zip(b['episode_id'],
                                                          b['t'])]
  assert order(3) == order(3)
  assert order(3) != order(4)
  two = order(3, epochs=2)
  assert two[:len(two) // 2] != two[len(two) // 2:]
  assert sorted(two[:len(two) // 2]) == sorted(two[len(two) // 2:])


def test_unshuffled_is_in_episode_order(camera_path):
  ds = pipeline.robot_samples_dataset(
      camera_path,
      rlds_lite.RobotSamples(history=2, last_step='valid', index_key='t'), 4,
      shuffle=False, episode_fields='episode_id', decode='per_episode',
      frames=pipeline.FrameDecoding(segment_steps=2))
  keys = [(int(e), int(t)) for b in ds for e, t in zip(b['episode_id'], b['t'])]
  assert keys == sorted(keys)


# ---------------------------------------------------- only used frames decoded


def corrupt_last_frame_episodes():
  """Dense episodes whose last frame is not a JPEG (and the spec)."""
  frames = synthetic.camera_frames(np.random.default_rng(0), 4, (16, 16))
  encoded = [tf.io.encode_jpeg(f).numpy() for f in frames[:3]] + [b'not a jpeg']
  steps = {'observation': {'image': np.array(encoded, object)},
           'action': np.arange(4, dtype=np.float32),
           'is_last': np.array([False, False, False, True])}
  ds = tf.data.Dataset.from_tensors({'steps': steps}).repeat(2)
  return ds, {'observation/image': images.ImageSpec((16, 16, 3), 'jpeg')}


@pytest.mark.parametrize('decode', ['per_episode', 'after_sampling'])
def test_frames_no_sample_uses_are_not_decoded(decode):
  ds, specs = corrupt_last_frame_episodes()
  # Under LastStep.INVALID the last step is no anchor, and histories only
  # look back: its (broken) frame is never decoded.
  batches = pipeline.robot_samples_dataset(
      ds, rlds_lite.RobotSamples(history=2), 4, decode=decode, seed=0,
      frames=pipeline.FrameDecoding(image_specs=specs))
  assert sum(int(b['action'].shape[0]) for b in batches) == 6
  strided = pipeline.robot_samples_dataset(
      ds, rlds_lite.RobotSamples(history=1, shift=2, keep_actionless=True), 4,
      decode=decode, seed=0,
      frames=pipeline.FrameDecoding(image_specs=specs))   # anchors 0, 2
  assert sum(int(b['action'].shape[0]) for b in strided) == 4
  used = pipeline.robot_samples_dataset(
      ds, rlds_lite.RobotSamples(history=2, keep_actionless=True), 4,
      decode=decode, seed=0, frames=pipeline.FrameDecoding(image_specs=specs))
  with pytest.raises(tf.errors.InvalidArgumentError):
    list(used)


def test_dataset_source_with_raw_frames():
  episodes = [next(synthetic.camera_episodes(1, n, {'image': (8, 8)}, seed=n))
              for n in (3, 4)]
  def gen():
    for i, e in enumerate(episodes):
      yield {'steps': e['steps'], 'episode_id': np.int64(i)}
  spec = tf.nest.map_structure(
      lambda x: tf.TensorSpec((None,) + x.shape[1:], tf.as_dtype(x.dtype)),
      episodes[0]['steps'])
  ds = tf.data.Dataset.from_generator(
      gen, output_signature={'steps': spec,
                             'episode_id': tf.TensorSpec([], tf.int64)})
  batches = pipeline.robot_samples_dataset(
      ds, rlds_lite.RobotSamples(history=2, last_step='valid', index_key='t'),
      3, seed=0, episode_fields='episode_id',
      frames=pipeline.FrameDecoding(image_size=(4, 4)))
  samples, _ = collect(batches)
  assert sorted(samples) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2),
                             (1, 3)]
  frames = episodes[1]['steps']['observation']['image']
  expected = tf.cast(tf.round(tf.image.resize(frames[1:3], (4, 4),
                                              antialias=True)), tf.uint8)
  np.testing.assert_array_equal(samples[1, 2]['observation']['image'],
                                expected.numpy())


# ------------------------------------------------------------------ plans


def test_plan_is_logged_and_matches_plan_robot_samples(camera_path, caplog):
  with caplog.at_level(logging.INFO, logger='rlds_lite'):
    pipeline.robot_samples_dataset(
        camera_path, rlds_lite.RobotSamples(history=2), 4, memory_budget='3MB')
  plan = pipeline.plan_robot_samples(
      camera_path, rlds_lite.RobotSamples(history=2), 4, memory_budget='3MB')
  assert f'robot_samples_dataset: {plan!r}' in caplog.text
  assert plan.decode in ('per_episode', 'after_sampling')
  assert plan.memory.total <= 3_000_000


def test_budget_picks_smaller_segments(camera_path):
  # (Decoding after sampling as the last resort: test_robot_memory.)
  def plan(budget, image_size=None, **kwargs):
    return pipeline.plan_robot_samples(
        camera_path, rlds_lite.RobotSamples(history=2), 4, memory_budget=budget,
        frames=pipeline.FrameDecoding(image_size=image_size), **kwargs)
  large = plan('1GB')
  assert large.decode == 'per_episode' and large.segment_steps is None
  # Long episodes: whole ones no longer fit, segments do.
  segmented = plan('20MB', num_steps=4000, image_size=(32, 32))
  assert segmented.decode == 'per_episode' and segmented.segment_steps
  assert segmented.memory.total <= 20_000_000
  small = plan('3.5MB', image_size=(96, 96))
  assert small[:3] == ('per_episode', 2, 3)   # 3/4 of the 4 pooled
  assert small.memory.total <= 3_500_000
  with pytest.raises(ValueError, match='memory_budget 10 B .* is too small'):
    plan(10)


def test_plan_repr_names_the_choice(camera_path):
  plan = pipeline.plan_robot_samples(
      camera_path, rlds_lite.RobotSamples(history=2), 4, decode='per_episode',
      frames=pipeline.FrameDecoding(segment_steps=3))
  text = repr(plan)
  assert text.startswith("DecodePlan(decode='per_episode', segments of 3 "
                         'samples, 4 episodes pooled, 5 open; RobotMemory(')
  assert plan.memory.total == (plan.memory.pools + plan.memory.open_episodes +
                               plan.memory.batches + plan.memory.runtime)


@pytest.mark.parametrize('kwargs,error,match', [
    (dict(decode='twice'), ValueError, 'decode must be one of'),
    (dict(decode='after_sampling', segment_steps=4), ValueError,
     'segment_steps applies to'),
    (dict(history=0), ValueError, 'history must be a positive'),
    (dict(index_key='action'), ValueError, 'index_key .* is the name'),
    (dict(episode_fields='nope'), ValueError, 'not episode metadata'),
    (dict(memory_budget='lots'), ValueError, 'memory_budget must be'),
    (dict(seed='x'), TypeError,
     '^robot_samples_dataset: seed must be an int or None, got str.$'),
    (dict(resize_method='cubicx'), ValueError,
     r"^robot_samples_dataset: resize_method must be one of \('bilinear', "
     r".*got 'cubicx'.$"),
    (dict(image_specs={'observation/nope': images.ImageSpec((4, 4, 3))}),
     ValueError, '^robot_samples_dataset: image_specs describes the image '
     'fields of a tf.data.Dataset source; a TFDS dataset declares its own'),
    (dict(image_size=128), ValueError,  # It said "size must be".
     r'^robot_samples_dataset: image_size must be None or \(height, width\) '
     r'of positive ints, got 128.$'),
], ids=['bad_decode', 'segments_after_sampling', 'zero_history',
        'index_key_collision', 'unknown_episode_field', 'bad_budget',
        'string_seed', 'unknown_resize_method', 'image_specs_of_tfds',
        'one_number_image_size'])
def test_bad_arguments(camera_path, kwargs, error, match):
  kind = {k: v for k, v in kwargs.items() if k in KIND_FIELDS}
  frames = {k: v for k, v in kwargs.items() if k in FRAME_FIELDS}
  rest = {k: v for k, v in kwargs.items() if k not in kind and k not in frames}
  with pytest.raises(error, match=match):
    pipeline.robot_samples_dataset(
        camera_path, rlds_lite.RobotSamples(**kind), 4,
        frames=pipeline.FrameDecoding(**frames), **rest)


@pytest.mark.parametrize('op', ['robot_samples_dataset', 'plan_robot_samples'])
def test_a_bad_source_is_named_by_the_entry_point(camera_path, tmp_path, op):
  missing = str(tmp_path / 'missing')
  with pytest.raises(FileNotFoundError) as error:
    getattr(pipeline, op)(missing, batch_size=4)
  assert str(error.value) == (
      f'{op}: dataset directory {missing!r} does not exist.')
  with pytest.raises(ValueError) as error:
    getattr(pipeline, op)(camera_path, 'test', batch_size=4)
  assert str(error.value) == (
      f"{op}: dataset {camera_path!r} has no split 'test' (its splits: "
      "['train']).")


def test_a_batch_larger_than_the_split_with_drop_last_batch(camera_path):
  steps = sum(LENGTHS)
  with pytest.raises(ValueError, match=(
      r"^robot_samples_dataset: drop_last_batch=True gives no batch: split "
      rf"'train' has {steps} steps, so fewer samples than batch_size "
      rf'{steps + 1}.')):
    pipeline.robot_samples_dataset(
        camera_path, rlds_lite.RobotSamples(), steps + 1, drop_last_batch=True)
  ds = pipeline.robot_samples_dataset(
      camera_path, rlds_lite.RobotSamples(), steps + 1)
  assert [len(b['action']) for b in ds] == [steps - len(LENGTHS)]


def test_dataset_source_errors():
  ds, specs = corrupt_last_frame_episodes()
  with pytest.raises(ValueError, match='memory_budget needs a TFDS dataset'):
    pipeline.robot_samples_dataset(
        ds, rlds_lite.RobotSamples(), 2, memory_budget='1GB',
        frames=pipeline.FrameDecoding(image_specs=specs))
  with pytest.raises(ValueError, match="image_specs names 'observation/x'"):
    pipeline.robot_samples_dataset(
        ds, rlds_lite.RobotSamples(), 2,
        frames=pipeline.FrameDecoding(
            image_specs={'observation/x': specs['observation/image']}))
  steps = {'image': np.zeros([2, 4, 4, 3], np.uint8),
           'observation': np.zeros([2, 1], np.float32),
           'action': np.zeros([2], np.float32)}
  odd = tf.data.Dataset.from_tensors({'steps': steps})
  with pytest.raises(ValueError, match="image field 'image' is not part of"):
    pipeline.robot_samples_dataset(
        odd, rlds_lite.RobotSamples(), 2,
        frames=pipeline.FrameDecoding(
            image_specs={'image': images.ImageSpec((4, 4, 3), None)}))


@pytest.mark.parametrize('decode', ['per_episode', 'after_sampling'])
def test_an_image_spec_of_another_size_is_named(decode):
  ds, _ = corrupt_last_frame_episodes()   # 16x16 JPEG frames.
  specs = {'observation/image': images.ImageSpec((32, 32, 3), 'jpeg')}
  batches = pipeline.robot_samples_dataset(
      ds, rlds_lite.RobotSamples(), 4, decode=decode, seed=0,
      frames=pipeline.FrameDecoding(image_specs=specs, image_size=(16, 16)))
  with pytest.raises(tf.errors.InvalidArgumentError) as error:
    list(batches)
  # image_size (16, 16) decodes the 32x32 the spec says at 1/2 scale.
  assert ('assertion failed: [image field observation/image: its ImageSpec '
          'says frames of 32x32 (height x width) (decoded at 1/2 scale: '
          '16x16); give it the shape of the stored frames (image_size= '
          'resizes them). This frame decodes at that scale to (height, '
          'width, channels):] [8 8 3]') in error.value.message


@pytest.mark.parametrize('spec, error, message, stored', [
    (images.ImageSpec((32, 32, 3), None), ValueError,
     "image field 'observation/image': its ImageSpec says frames of shape "
     '(32, 32, 3) but they are (16, 16, 3).', 'raw'),
    (images.ImageSpec((16, 16, 3), 'jpeg'), ValueError,
     "image_specs says 'observation/image' holds jpeg frames, but it is uint8 "
     '(4, 16, 16, 3); for raw frames use ImageSpec((16, 16, 3), None).',
     'raw'),
    (images.ImageSpec((16, 16, 3), None), ValueError,
     "image_specs says 'observation/image' holds raw frames, but it is string "
     "(4,) (encoded frames); give their encoding: ImageSpec((16, 16, 3), "
     "'jpeg') or ImageSpec((16, 16, 3), 'png').", 'jpeg'),
    ((16, 16, 3), TypeError,
     "image_specs['observation/image'] must be an rlds_lite.images.ImageSpec, "
     'got tuple.', 'raw'),
], ids=['raw-of-another-shape', 'raw-called-jpeg', 'jpeg-called-raw',
        'not-an-image-spec'])
def test_image_specs_are_checked_against_the_frames_at_once(spec, error,
                                                             message, stored):
  frames = synthetic.camera_frames(np.random.default_rng(0), 4, (16, 16))
  if stored == 'jpeg':
    frames = tf.stack([tf.io.encode_jpeg(f) for f in frames])
  steps = {'observation': {'image': frames},
           'action': np.arange(4, dtype=np.float32)}
  ds = tf.data.Dataset.from_tensors({'steps': steps})
  with pytest.raises(error) as raised:
    pipeline.robot_samples_dataset(
        ds, rlds_lite.RobotSamples(), 2,
        frames=pipeline.FrameDecoding(image_specs={'observation/image': spec}))
  assert str(raised.value) == f'robot_samples_dataset: {message}'


def test_language_and_episode_fields_are_carried(camera_path):
  ds = pipeline.robot_samples_dataset(
      camera_path, rlds_lite.RobotSamples(history=2, last_step='valid'), 32,
      seed=0, episode_fields='episode_id')
  counts = collections.Counter()
  for batch in ds:
    for e, text in zip(batch['episode_id'].numpy(),
                       batch['language_instruction'].numpy()):
      assert text.decode() == synthetic.INSTRUCTIONS[0]   # seed-th episode 0
      counts[int(e)] += 1
  assert dict(counts) == dict(enumerate(LENGTHS))


def test_estimate_memory_covers_robot_samples(camera_path):
  kwargs = dict(history=2, action_chunk=3, image_size=(16, 16))
  memory = pipeline.estimate_memory(camera_path, batch_size=4,
                                    memory_budget='1MB', robot_samples=kwargs)
  plan = pipeline.plan_robot_samples(
      camera_path, rlds_lite.RobotSamples(history=2, action_chunk=3), 4,
      memory_budget='1MB', frames=pipeline.FrameDecoding(image_size=(16, 16)))
  assert memory == plan.memory
  assert memory.step_bytes == 16 * 16 * 3 * 2   # both cameras at 16x16


@pytest.mark.parametrize('decode', ['per_episode', 'after_sampling'])
def test_episodes_without_images(decode):
  episodes = synthetic.episodes(num_episodes=5, seed=0, dense=True)
  ds = pipeline.robot_samples_dataset(
      episodes,
      rlds_lite.RobotSamples(history=3, action_chunk=2, index_key='t'), 8,
      decode=decode, episode_fields='episode_id', seed=0)
  actual, _ = collect(ds)
  expected = {}
  for episode in episodes:
    out = dense.robot_samples(episode['steps'], rlds_lite.RobotSamples(
        history=3, action_chunk=2, index_key='t'))
    out = tf.nest.map_structure(lambda x: x.numpy(), out)
    for row, t in enumerate(out.pop('t')):
      expected[int(episode['episode_id']), int(t)] = tf.nest.map_structure(
          lambda x, row=row: x[row], out)
  assert_same_samples(actual, expected)


@pytest.mark.parametrize('pool', [2, 6])
def test_segments_decode_a_shared_frame_about_once(camera_path, monkeypatch,
                                                   pool):
  # History 2 in segments of 2: without the carry every segment but an
  # episode's first decodes the frame before it again (37 frames per camera
  # for 27 samples); with it, only where a segment's predecessor is not in
  # an earlier pool (the rotation's start; a pool holding both).
  decoded = []
  decode_frames = images.decode.decode_frames

  def counting(encoded, spec, size=None, **kwargs):
    count = tf.py_function(lambda n: decoded.append(int(n)) or 0,
                           [tf.shape(encoded)[0]], tf.int32)
    with tf.control_dependencies([count]):
      return tf.identity(decode_frames(encoded, spec, size, **kwargs))

  monkeypatch.setattr(images.decode, 'decode_frames', counting)
  ds = pipeline.robot_samples_dataset(
      camera_path,
      rlds_lite.RobotSamples(history=2, last_step='valid', index_key='t'), 4,
      seed=1, decode='per_episode', episode_fields='episode_id',
      frames=pipeline.FrameDecoding(segment_steps=2, pool_episodes=pool))
  actual, _ = collect(ds)
  assert_same_samples(actual, reference(camera_path, history=2,
                                        last_step='valid'))
  per_camera = sum(decoded) / 2
  assert sum(LENGTHS) <= per_camera < 37   # Measured: 31 (pools of 2), 33 (6).


@pytest.mark.parametrize('decode', ['per_episode', 'after_sampling'])
def test_undecodable_frame_error_names_its_field(tmp_path, decode):
  _, bad = rlds_testing.camera_datasets_good_and_undecodable(
      tmp_path, only_at=(2, 3))
  ds = pipeline.robot_samples_dataset(
      bad, rlds_lite.RobotSamples(history=2), 4, decode=decode, seed=0)
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'Unknown image file format[^\n]*\n[^\n]*'
                     r'\{\{node observation/camera/map/while/DecodePng\}\}'):
    for _ in ds:
      pass


@pytest.mark.parametrize('decode', ['per_episode', 'after_sampling'])
def test_named_read_errors_names_the_undecodable_frames_episode(tmp_path,
                                                                decode):
  """The docstring's remedy: the loop inside ``Source.read_errors``."""
  _, bad = rlds_testing.camera_datasets_good_and_undecodable(
      tmp_path, only_at=(2, 3))
  source = rlds_lite.open(bad)
  ds = pipeline.robot_samples_dataset(
      source, rlds_lite.RobotSamples(history=2), 4, decode=decode, seed=0)
  shard = os.path.join(bad, 'cams-train.tfrecord-00000')
  with pytest.raises(rlds_lite.dataset_files.CorruptDatasetError) as raised:
    with source.read_errors():
      for _ in ds:
        pass
  assert str(raised.value) == (
      f"{shard}: episode 2 of split 'train', field 'observation/camera': "
      'step 3 does not decode as the image its feature declares in '
      'dataset_info.json (Unknown image file format. One of JPEG, JPEG XL, '
      "PNG, GIF, BMP, WebP required); its bytes begin b'not a pn'.")
  assert raised.value.__cause__ is None and raised.value.__suppress_context__


@pytest.mark.parametrize('kind, frames, kwargs', [
    (rlds_lite.RobotSamples(history=1), None, {}),
    (rlds_lite.RobotSamples(history=2, action_chunk=4),
     pipeline.FrameDecoding(segment_steps=2), {}),
    (rlds_lite.RobotSamples(history=3, history_stride=2, goal='final',
                            last_step='valid'),
     pipeline.FrameDecoding(segment_steps=3), {}),
    (rlds_lite.RobotSamples(history=2), None, dict(shuffle=False)),
], ids=['history_1', 'carry', 'strided_carry_goal', 'unshuffled'])
def test_segments_log_nothing(camera_path, capfd, kind, frames, kwargs):
  # Slices of rows reaching a rebatch made TF log "Tensor RefCount not
  # reliable if buf_ points to a SubBuffer" (ERROR) several times a segment.
  ds = pipeline.robot_samples_dataset(camera_path, kind, 4, seed=0,
                                      decode='per_episode', frames=frames,
                                      **kwargs)
  capfd.readouterr()
  assert sum(len(b['action']) for b in ds) > 0
  assert 'RefCount' not in capfd.readouterr().err


@pytest.mark.parametrize('memory_budget', [None, '1GB'])
def test_a_path_is_opened_once(camera_path, monkeypatch, memory_budget):
  """One TFDS builder per call: opening, planning and reading share it."""
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  built = []
  for name in ('builder_from_directory', 'builder'):
    original = getattr(tfds, name)

    def counted(*args, original=original, **kwargs):
      built.append(args[0])
      return original(*args, **kwargs)

    monkeypatch.setattr(tfds, name, counted)
  ds = pipeline.robot_samples_dataset(
      camera_path, rlds_lite.RobotSamples(history=2), 4, seed=0,
      drop_last_batch=True, memory_budget=memory_budget)
  next(iter(ds))
  assert len(built) == 1


KINDS = {
    'zero_padding': dict(history=3, action_chunk=4, history_pad='zero',
                         action_pad='zero'),
    'octo_padding_valid': dict(history=2, action_chunk=3, last_step='valid'),
}


@pytest.mark.parametrize('decode', ['per_episode', 'after_sampling'])
@pytest.mark.parametrize('kwargs', list(KINDS.values()), ids=list(KINDS))
def test_a_kind_object_gives_the_dense_samples(camera_path, decode, kwargs):
  kind = rlds_lite.RobotSamples(index_key='t', **kwargs)
  ds = pipeline.robot_samples_dataset(rlds_lite.open(camera_path), kind, 4,
                                      decode=decode, seed=1,
                                      episode_fields='episode_id')
  actual, _ = collect(ds)
  assert_same_samples(actual, reference(camera_path, **kwargs))


def test_the_old_keywords_equal_the_kind_and_frames(camera_path):
  new = pipeline.robot_samples_dataset(
      camera_path, rlds_lite.RobotSamples(history=2, action_chunk=2,
                                          index_key='t'), 4, seed=3,
      frames=pipeline.FrameDecoding(image_size=(16, 16), segment_steps=2),
      episode_fields='episode_id')
  with pytest.warns(DeprecationWarning, match='RobotSamples'):
    option_objects._WARNED.clear()  # pylint: disable=protected-access
    old = pipeline.robot_samples_dataset(
        camera_path, 'train', batch_size=4, seed=3, history=2, action_chunk=2,
        index_key='t', image_size=(16, 16), segment_steps=2,
        episode_fields='episode_id')
  assert_same_samples(collect(old)[0], collect(new)[0])


@pytest.mark.parametrize('call, error, message', [
    (dict(kind=rlds_lite.RobotSamples(), history=2), TypeError,
     r"robot_samples_dataset: pass the sample arguments in the kind "
     r"\(RobotSamples\(...\)\), not beside it: \['history'\]\."),
    (dict(kind=rlds_lite.RobotSamples(), frames=pipeline.FrameDecoding(),
          image_size=(8, 8)), TypeError,
     r"robot_samples_dataset: pass \['image_size'\] in "
     r"frames=FrameDecoding\(...\), not beside it\."),
    (dict(kind=rlds_lite.Windows(2)), TypeError,
     r'robot_samples_dataset: kind must be a RobotSamples\(...\), got '
     r'Windows\.'),
    (dict(kind=rlds_lite.RobotSamples(), histroy=2), TypeError,
     r"robot_samples_dataset\(\) got an unexpected keyword argument "
     r"'histroy'"),
    (dict(history=0), ValueError,
     r'robot_samples_dataset: history must be a positive int, got 0\.'),
], ids=['kind-and-keywords', 'frames-and-keywords', 'another-kind', 'typo',
        'legacy-bad-value'])
def test_kind_and_keyword_mixups_are_one_error(camera_path, call, error,
                                               message):
  with pytest.raises(error, match=message):
    pipeline.robot_samples_dataset(camera_path, batch_size=4, **call)
