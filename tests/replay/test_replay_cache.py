"""decoded_cache: samples equal robot_samples_dataset's field by field; cost, fingerprint, atomic fill, bad input."""

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

import rlds_lite
from rlds_lite import nest_paths
from rlds_lite import pipeline
from rlds_lite import replay
from rlds_lite import synthetic
from rlds_lite.replay import cache as cache_lib
from rlds_lite.tfds import publish
import rlds_testing

CAMERAS = {'image_primary': (32, 32), 'image_wrist': (16, 16)}
LENGTHS = (1, 2, 7, 5, 9, 3)   # A one-step episode, short ones, longer ones.
SIZES = {'observation/image_primary': (16, 16),   # DCT scaling alone.
         'observation/image_wrist': (12, 12)}     # Decoded whole, then resized.
KINDS = {
    'octo_2_3': dict(history=2, action_chunk=3),
    'strided_valid_zero_pads': dict(history=3, history_stride=2, action_chunk=2,
                                    last_step='valid', history_pad='zero',
                                    action_pad='zero'),
}


@pytest.fixture(scope='module')
def camera_path(tmp_path_factory):
  return rlds_testing.write_camera_dataset(tmp_path_factory.mktemp('cams'), CAMERAS, LENGTHS)


@pytest.fixture(scope='module')
def cache_path(camera_path, tmp_path_factory):
  """A cache filled once; tests open it with the kinds they need."""
  path = str(tmp_path_factory.mktemp('caches') / 'cache')
  replay.decoded_cache(camera_path, path, image_size=SIZES, episode_fields='episode_id')
  return path


def opened(camera_path, cache_path, **kwargs):
  return replay.decoded_cache(camera_path, cache_path, image_size=SIZES,
                              episode_fields='episode_id', **kwargs)


def by_key(batch, episode_ids, anchors):
  """(episode_id, anchor) -> the sample's flat fields."""
  flat = dict(nest_paths.flatten_with_paths(batch))
  out = {}
  for row, key in enumerate(zip(episode_ids.tolist(), anchors.tolist())):
    assert key not in out, f'sample {key} came out twice'
    out[key] = {p: v[row] for p, v in flat.items()}
  return out


def reference(camera_path, kind):
  """robot_samples_dataset's samples, frames decoded at SIZES, by (episode_id, anchor)."""
  kind = rlds_lite.RobotSamples(index_key='t', **kind)
  ds = pipeline.robot_samples_dataset(
      camera_path, kind, 64, shuffle=False, episode_fields='episode_id',
      frames=pipeline.FrameDecoding(image_size=SIZES))
  samples = {}
  for batch in ds.as_numpy_iterator():
    ids, anchors = batch['episode_id'], batch.pop('t')
    samples.update(by_key(batch, ids, anchors))
  return samples


def an_epoch(buffer):
  batch, info = buffer.sample(buffer.num_samples)
  return by_key(batch, batch['episode_id'], info.step_ids)


def assert_same(actual, expected):
  assert sorted(actual) == sorted(expected)
  for key, sample in expected.items():
    assert sorted(actual[key]) == sorted(sample), key
    for path, value in sample.items():
      got, value = np.asarray(actual[key][path]), np.asarray(value)
      assert got.dtype == value.dtype and got.shape == value.shape, (key, path)
      np.testing.assert_array_equal(got, value, err_msg=f'{key} {path}')


@pytest.mark.parametrize('kind_name', sorted(KINDS))
def test_samples_equal_robot_samples_dataset_field_by_field(camera_path, cache_path,
                                                            kind_name):
  kind = KINDS[kind_name]
  cache = opened(camera_path, cache_path, kind=rlds_lite.RobotSamples(**kind),
                 sampler=replay.WithoutReplacement())
  expected = reference(camera_path, kind)
  # Named cases: the one-step episode 0 has a sample only with last_step='valid'.
  assert ((0, 0) in expected) == (kind.get('last_step') == 'valid')
  assert (4, 7) in expected and ((4, 8) in expected) == (kind.get('last_step') == 'valid')
  assert_same(an_epoch(cache), expected)
  frames = expected[4, 7]['observation/image_primary']
  assert frames.shape[1:] == (16, 16, 3)
  assert expected[4, 7]['observation/image_wrist'].shape[1:] == (12, 12, 3)
  assert expected[4, 7]['language_instruction'] == synthetic.INSTRUCTIONS[0].encode()


def test_gathered_samples_equal_the_buffers_own_assembly(camera_path, cache_path):
  kind = rlds_lite.RobotSamples(**KINDS['strided_valid_zero_pads'])
  cache = opened(camera_path, cache_path, kind=kind, sampler=replay.WithoutReplacement())
  plain = replay.ReplayBuffer(replay.MemmapStorage(cache_path), kind=kind,
                              writer=replay.Immutable(),
                              sampler=replay.WithoutReplacement())
  assert_same(an_epoch(cache), an_epoch(plain))


def test_uniform_samples_cover_the_whole_split(camera_path, cache_path):
  cache = opened(camera_path, cache_path, kind=rlds_lite.RobotSamples(history=2),
                 seed=3)
  assert (len(cache), cache.num_samples) == (sum(LENGTHS), sum(LENGTHS) - len(LENGTHS))
  _, info = cache.sample(2000)
  keys, counts = np.unique(info.indices, return_counts=True)
  assert len(keys) == cache.num_samples   # Every anchor drawn...
  assert counts.min() > 2000 / 21 * 0.5 and counts.max() < 2000 / 21 * 1.6   # ...about evenly.
  assert cache.num_episodes() == len(LENGTHS)


def test_reopening_decodes_nothing_and_samples_the_same(camera_path, cache_path,
                                                        monkeypatch):
  kind = rlds_lite.RobotSamples(**KINDS['octo_2_3'])
  first = opened(camera_path, cache_path, kind=kind, seed=5).sample(8)
  monkeypatch.setattr(cache_lib, '_fill', None)   # Filling again would fail.
  monkeypatch.setattr(cache_lib._Plan, 'cost', None)
  again = opened(camera_path, cache_path, kind=kind, seed=5).sample(8)
  np.testing.assert_array_equal(first[1].indices, again[1].indices)
  np.testing.assert_array_equal(first[0]['observation']['image_primary'],
                                again[0]['observation']['image_primary'])


def test_cost_is_what_the_fill_takes_on_disk(camera_path, cache_path):
  cost = replay.cache_cost(camera_path, image_size=SIZES, episode_fields='episode_id')
  width = len(synthetic.INSTRUCTIONS[0])   # Every episode's (each its own seed 0 episode).
  assert cost.spec['observation/image_primary'] == replay.Field((16, 16, 3), 'uint8')
  assert cost.spec['observation/image_wrist'] == replay.Field((12, 12, 3), 'uint8')
  assert cost.spec['language_instruction'] == replay.Field((), f'S{width}')
  assert cost.spec['episode_id'] == replay.Field((), 'int64')
  per_step = 768 + 432 + 32 + 28 + 4 + 4 + 3 + width + 8 + 12
  assert (cost.steps, cost.episodes, cost.bytes) == (27, 6, 27 * per_step)
  on_disk = sum(os.path.getsize(os.path.join(cache_path, f))
                for f in os.listdir(cache_path) if f.endswith('.npy'))
  header_bytes = 8 * 8 + 128 * (len(cost.spec) + 3)   # The header; .npy headers.
  assert on_disk - header_bytes == cost.bytes
  assert repr(cost).startswith('CacheCost(27 steps of 6 episodes, ')


def test_a_cache_is_refused_for_another_source_split_or_size(camera_path, tmp_path):
  data = str(tmp_path / 'data')
  shutil.copytree(camera_path, data)
  path = str(tmp_path / 'cache')
  replay.decoded_cache(data, path, image_size=(8, 8))
  with pytest.raises(ValueError, match=r"other settings: image_size .*\[8, 8\].*\[16, 16\].*"
                     'valid only for what it was filled from'):
    replay.decoded_cache(data, path, image_size=(16, 16))
  with pytest.raises(ValueError, match=r"split 'train' \(now 'train\[:2\]'\)"):
    replay.decoded_cache(data, path, image_size=(8, 8), split='train[:2]')
  with pytest.raises(ValueError, match=r"other settings: data_dir '.*/data' \(now '"):
    replay.decoded_cache(camera_path, path, image_size=(8, 8))
  shard = [f for f in os.listdir(data) if '.tfrecord' in f][0]
  os.utime(os.path.join(data, shard), ns=(1, 1))
  with pytest.raises(ValueError, match=rf'files changed since it was filled \({shard}\)'):
    replay.decoded_cache(data, path, image_size=(8, 8))


def test_a_failed_fill_leaves_nothing(camera_path, tmp_path, monkeypatch):
  path = str(tmp_path / 'cache')
  calls = []

  def write(self, storage, values, episode_ids, step_ids):
    calls.append(len(episode_ids))
    if len(calls) == 3:
      raise OSError('disk full')
    return original(self, storage, values, episode_ids, step_ids)

  original = replay.Immutable.write
  monkeypatch.setattr(replay.Immutable, 'write', write)
  with pytest.raises(OSError, match='disk full'):
    replay.decoded_cache(camera_path, path)
  assert os.listdir(tmp_path) == []


def test_a_filler_killed_before_publishing_leaves_no_cache(camera_path, tmp_path):
  path = str(tmp_path / 'cache')
  code = textwrap.dedent(f"""
      from rlds_lite import replay
      replay.decoded_cache({camera_path!r}, {path!r}, image_size=(8, 8))
  """)
  env = dict(os.environ, **{publish.FAULT_KILL_ENV: 'output_staged'})
  result = subprocess.run([sys.executable, '-c', code], env=env, check=False,
                          capture_output=True)
  assert result.returncode == -9, result.stderr[-2000:]
  left = sorted(set(os.listdir(tmp_path)) - {'.cache.lock'})   # The lock: released by the kernel.
  assert len(left) == 1 and left[0].startswith('.cache.incomplete-')   # Filled, not published.
  assert 'cache.json' in os.listdir(tmp_path / left[0])
  cache = replay.decoded_cache(camera_path, path, image_size=(8, 8))   # Fills anew.
  assert sorted(os.listdir(tmp_path)) == ['cache'] and len(cache) == sum(LENGTHS)


def test_a_disk_too_small_is_refused_before_filling(camera_path, tmp_path, monkeypatch):
  usage = shutil.disk_usage(tmp_path)._replace(free=1000)
  monkeypatch.setattr(cache_lib.shutil, 'disk_usage', lambda _: usage)
  with pytest.raises(OSError, match=r'needs [0-9.]+ KB on disk \(CacheCost\(27 steps.*'
                     r'only 1.0 KB is free; give a smaller image_size'):
    replay.decoded_cache(camera_path, str(tmp_path / 'cache'))
  assert os.listdir(tmp_path) == []


def test_bad_input_one_clear_error_each(camera_path, cache_path, tmp_path):
  cache = opened(camera_path, cache_path, kind=rlds_lite.RobotSamples())
  with pytest.raises(ValueError, match='is immutable: it holds the 27 steps it was filled with'):
    cache.extend({'reward': np.zeros([2], np.float32)})
  with pytest.raises(TypeError, match='not a tf.data.Dataset'):
    replay.decoded_cache(tf.data.Dataset.range(3), str(tmp_path / 'c'))
  with pytest.raises(ValueError, match=r"episode_fields names 'id', which is not an "
                     r"episode field; the episodes have \['episode_id'\]"):
    replay.decoded_cache(camera_path, str(tmp_path / 'c'), episode_fields='id')
  with pytest.raises(ValueError, match=r"image_size names \['observation/image'\]"):
    replay.decoded_cache(camera_path, str(tmp_path / 'c'),
                         image_size={'observation/image': (8, 8)})
  os.mkdir(tmp_path / 'other')
  with pytest.raises(ValueError, match='exists but is not a decoded cache'):
    replay.decoded_cache(camera_path, str(tmp_path / 'other'))


def test_an_undecodable_frame_names_file_episode_field_and_step(tmp_path):
  _, bad = rlds_testing.camera_datasets_good_and_undecodable(tmp_path, only_at=(2, 3))
  path = str(tmp_path / 'cache')
  with pytest.raises(rlds_lite.dataset_files.CorruptDatasetError,
                     match=r"cams-train.tfrecord-00000: episode 2 of split 'train', field "
                     r"'observation/camera': step 3 does not decode as the image"):
    replay.decoded_cache(bad, path)
  assert not os.path.exists(path)
