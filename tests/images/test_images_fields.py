"""Tests of rlds_lite.images.fields: image specs and encoded episodes."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import rlds_testing
import rlds_lite
from rlds_lite import images
from rlds_lite import synthetic


def test_image_specs_of_nested_features():
  steps = tfds.features.FeaturesDict({
      'observation': {
          'image_primary': tfds.features.Image(shape=(8, 6, 3),
                                               encoding_format='jpeg'),
          'depth': tfds.features.Image(shape=(8, 6, 1), dtype=np.uint16),
          'any_size': tfds.features.Image(shape=(None, None, 3)),
          'state': tfds.features.Tensor(shape=(2,), dtype=np.float32)},
      'image': tfds.features.Image(shape=(4, 4, 3))})
  assert images.image_specs(steps) == {
      'observation/image_primary': images.ImageSpec((8, 6, 3), 'jpeg'),
      'observation/depth': images.ImageSpec((8, 6, 1), 'png', tf.uint16),
      'image': images.ImageSpec((4, 4, 3), 'png'),
  }


@pytest.mark.parametrize('encoding', ['jpeg', 'png'])
def test_load_encoded_decodes_to_the_dense_load(tmp_path, encoding):
  cameras = {'image_primary': (16, 16), 'image_wrist': (8, 8)}
  path = synthetic.camera_dataset(tmp_path, num_episodes=2, length=3,
                                  cameras=cameras, image_encoding=encoding)
  encoded, specs = images.load_encoded(path)
  assert sorted(specs) == ['observation/image_primary',
                           'observation/image_wrist']
  decoded = rlds_lite.load(path, dense=True)
  for ours, theirs in zip(encoded, decoded, strict=True):
    steps = ours['steps']
    assert steps['observation']['image_primary'].dtype == tf.string
    frames = images.decode_images(steps, specs)
    for a, b in zip(tf.nest.flatten(frames),
                    tf.nest.flatten(theirs['steps'])):
      np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert int(ours['episode_id']) == int(theirs['episode_id'])


def test_load_encoded_errors_as_load(tmp_path):
  with pytest.raises(FileNotFoundError, match='does not exist'):
    images.load_encoded(str(tmp_path / 'missing'))
  path = synthetic.camera_dataset(tmp_path, num_episodes=1, length=2,
                                  cameras={'image': (8, 8)})
  with pytest.raises(ValueError, match="has no split 'test'"):
    images.load_encoded(path, 'test')


@pytest.mark.parametrize('episode,step', [
    pytest.param(0, 0, id='first_frame'),
    pytest.param(2, 3, id='middle_of_an_episode'),
    pytest.param(2, 5, id='last_step'),
    pytest.param(1, 0, id='one_step_episode'),
])
def test_first_bad_frame_names_the_field_and_step(tmp_path, episode, step):
  good, bad = rlds_testing.camera_datasets_good_and_undecodable(
      tmp_path, only_at=(episode, step))
  assert images.first_bad_frame(bad, 'train', episode) == images.BadFrame(
      'observation/camera', step, b'not a pn')
  others = [e for e in range(3) if e != episode]
  assert [images.first_bad_frame(bad, 'train', e) for e in others] == [
      None, None]
  assert images.first_bad_frame(good, 'train', episode) is None


def test_first_bad_frame_of_an_episode_the_split_lacks(tmp_path):
  good, _ = rlds_testing.camera_datasets_good_and_undecodable(tmp_path)
  for episode in (3, -1):
    with pytest.raises(ValueError, match=f"split 'train' has no episode "
                       f"{episode}"):
      images.first_bad_frame(good, 'train', episode)
