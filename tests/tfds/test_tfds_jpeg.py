"""JPEG images written by rlds_lite's TFDS writers, at a chosen quality.

Every writer (``EpisodeWriter``, ``write_dataset``, ``build_from_envlogger``,
``RLDSBuilder`` with or without Beam, the converters' ``write_tfds``) stores
``tfds.features.Image(encoding_format='jpeg')`` frames as the bytes of
``tf.io.encode_jpeg(frame, quality=jpeg_quality)`` (TFDS's own bytes,
quality 95, when None), several cameras per observation, and TFDS's own
reader reads them.
"""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import tfds_build_testing as bt
from rlds_lite import synthetic
from rlds_lite.convert import episodes as convert_episodes
from rlds_lite.tfds import build_from_envlogger
from rlds_lite.tfds import EpisodeWriter
from rlds_lite.tfds import FileOptions
from rlds_lite.tfds import write_dataset

CAMERAS = {'image_primary': (16, 12), 'image_wrist': (8, 8)}


def stored_frames(path, key=('observation', 'image_primary')):
  """The encoded frames of every episode, as TFDS stores them."""
  builder = tfds.builder_from_directory(path)
  episodes = builder.as_dataset(
      split='train', decoders={'steps': tfds.decode.SkipDecoding()})
  out = []
  for episode in episodes:
    value = episode['steps']
    for name in key:
      value = value[name]
    out.append(value.numpy())
  return out


def expected_jpegs(frames, quality):
  return [tf.io.encode_jpeg(f, quality=quality or 95).numpy() for f in frames]


@pytest.mark.parametrize('quality', [None, 95, 60, 10])
def test_episode_writer_jpeg_quality_several_cameras(tmp_path, quality):
  episodes = list(synthetic.camera_episodes(2, 3, CAMERAS, seed=0))
  with EpisodeWriter(tmp_path, 'cams', synthetic.camera_features(CAMERAS),
                     options=FileOptions(jpeg_quality=quality)) as writer:
    writer.add_episodes(episodes)
  for camera in CAMERAS:
    stored = stored_frames(writer.path, ('observation', camera))
    for frames, episode in zip(stored, episodes, strict=True):
      assert list(frames) == expected_jpegs(
          episode['steps']['observation'][camera], quality)
  # TFDS's own reader decodes them.
  builder = tfds.builder_from_directory(writer.path)
  episode = next(iter(builder.as_dataset(split='train')))
  step = next(iter(episode['steps']))
  assert step['observation']['image_wrist'].shape == (8, 8, 3)


def test_lower_quality_writes_smaller_files(tmp_path):
  sizes = {}
  for quality in (95, 50):
    path = synthetic.camera_dataset(tmp_path / str(quality), num_episodes=1,
                                    length=4, cameras={'image_primary': (64, 64)},
                                    jpeg_quality=quality)
    sizes[quality] = sum(len(f) for f in stored_frames(path)[0])
  assert sizes[50] < 0.7 * sizes[95]


def test_write_dataset_detects_images_as_jpeg(tmp_path):
  frames = synthetic.camera_frames(np.random.default_rng(0), 3, (8, 8))
  steps = tf.data.Dataset.from_tensor_slices({
      'observation': {'image': frames, 'depth_image': frames[..., :1]},
      'action': np.zeros([3, 2], np.float32),
      'is_first': [True, False, False], 'is_last': [False, False, True],
      'is_terminal': [False, False, True]})
  path = write_dataset(tf.data.Dataset.from_tensors({'steps': steps}),
                       tmp_path, 'detected',
                       options=FileOptions(image_encoding='jpeg',
                                           jpeg_quality=70))
  feature = tfds.builder_from_directory(path).info.features['steps'].feature
  assert feature['observation']['image'].encoding_format == 'jpeg'
  assert list(stored_frames(path, ('observation', 'image'))[0]) == (
      expected_jpegs(frames, 70))


def test_png_and_raw_bytes_cameras_beside_jpeg(tmp_path):
  frames = synthetic.camera_frames(np.random.default_rng(0), 3, (8, 8))
  features = {
      'steps': {
          'observation': {
              'jpeg': tfds.features.Image(shape=(8, 8, 3),
                                          encoding_format='jpeg'),
              'png': tfds.features.Image(shape=(8, 8, 3)),
              'raw': tfds.features.Tensor(
                  shape=(8, 8, 3), dtype=np.uint8,
                  encoding=tfds.features.Encoding.BYTES)},
          'is_first': np.bool_, 'is_last': np.bool_, 'is_terminal': np.bool_}}
  episode = {'steps': {'observation': {'jpeg': frames, 'png': frames,
                                       'raw': frames},
                       'is_first': [True, False, False],
                       'is_last': [False, False, True],
                       'is_terminal': [False, False, False]}}
  with EpisodeWriter(tmp_path, 'mixed', features,
                     options=FileOptions(jpeg_quality=80)) as writer:
    writer.add_episode(episode)
  builder = tfds.builder_from_directory(writer.path)
  steps = list(next(iter(builder.as_dataset(split='train')))['steps'])
  for t, step in enumerate(steps):
    np.testing.assert_array_equal(step['observation']['png'], frames[t])
    np.testing.assert_array_equal(step['observation']['raw'], frames[t])
    np.testing.assert_array_equal(
        step['observation']['jpeg'],
        tf.io.decode_jpeg(tf.io.encode_jpeg(frames[t], quality=80)))


def test_converters_pass_the_quality_on(tmp_path):
  episode = next(synthetic.camera_episodes(1, 3, {'image': (8, 8)}, seed=1))
  del episode['steps']['language_instruction']   # write_tfds infers no text.
  path = convert_episodes.write_tfds(
      [episode], tmp_path, 'converted', options=FileOptions(
          image_encoding='jpeg', jpeg_quality=40))
  assert list(stored_frames(path, ('observation', 'image'))[0]) == (
      expected_jpegs(episode['steps']['observation']['image'], 40))


@pytest.mark.parametrize('beam', [False, True])
def test_build_from_envlogger_jpeg_quality(tmp_path, beam):
  if beam:
    pytest.importorskip('apache_beam')
  raw = bt.record_script(str(tmp_path / 'raw'), [bt.Episode(3, bt.TERMINAL)],
                         kind='dict')
  path = build_from_envlogger(tmp_path / 'raw', name='cams',
                              data_dir=tmp_path / 'tfds',
                              options=FileOptions(image_encoding='jpeg',
                                                  jpeg_quality=55), beam=beam)
  frames = [step.observation['camera_image'] for step in raw[0]]
  assert list(stored_frames(path, ('observation', 'camera_image'))[0]) == (
      expected_jpegs(frames, 55))


@pytest.mark.parametrize('quality', [101, -1, 2.5, True])
def test_bad_quality_is_an_error(tmp_path, quality):
  with pytest.raises(ValueError, match='jpeg_quality must be None or an int'):
    EpisodeWriter(tmp_path, 'bad', synthetic.camera_features(CAMERAS),
                  options=FileOptions(jpeg_quality=quality))
