"""The batch augmentation and dropout of make_interleaved_dataset against Octo's per-frame functions."""

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite.octo import augment
from rlds_lite.octo import frames

DEFAULT = {'augment_order': ['random_resized_crop', 'random_brightness',
                             'random_contrast', 'random_saturation', 'random_hue'],
           'random_resized_crop': {'scale': [0.5, 1.0], 'ratio': [0.8, 1.2]},
           'random_brightness': [0.2], 'random_contrast': [0.7, 1.3],
           'random_saturation': [0.7, 1.3], 'random_hue': [0.1]}
JITTER_FIRST = {**DEFAULT, 'augment_order': ['random_brightness', 'random_resized_crop',
                                             'random_hue']}
SATURATION_ALONE = {**DEFAULT, 'augment_order': ['random_saturation', 'random_contrast',
                                                 'random_hue']}
WITH_FLIP = {**DEFAULT, 'augment_order': ['random_flip_left_right', 'random_brightness']}


@pytest.fixture(scope='module')
def frames_and_seeds():
  rng = np.random.default_rng(0)
  images = rng.integers(0, 255, (4, 3, 32, 32, 3)).astype(np.uint8)
  seeds = rng.integers(0, 2**31 - 1, (4, 2))
  return tf.constant(images), tf.constant(seeds, tf.int64)


@pytest.mark.parametrize('kwargs', [DEFAULT, JITTER_FIRST, SATURATION_ALONE, WITH_FLIP],
                         ids=['octo_default', 'crop_between_jitters',
                              'saturation_then_other_ops', 'flip_per_frame'])
def test_batch_augmentation_equals_dlimps_per_frame_ops(frames_and_seeds, kwargs):
  images, seeds = frames_and_seeds
  out = augment.augment_frames(images, seeds, kwargs).numpy().astype(int)
  ref = np.stack([np.stack([
      frames.augment_image(images[i, j], seed=tf.cast(seeds[i], tf.int32), **kwargs).numpy()
      for j in range(3)]) for i in range(4)]).astype(int)
  diff = np.abs(out - ref)
  assert diff.max() <= 1                 # float rounding of the same ops
  assert (diff > 0).mean() < 1e-3
  assert not np.array_equal(out, images.numpy())   # it did augment


def test_a_samples_frames_share_its_parameters(frames_and_seeds):
  images, seeds = frames_and_seeds
  same = tf.repeat(images[:, :1], 3, axis=1)
  out = augment.augment_frames(same, seeds, DEFAULT).numpy()
  np.testing.assert_array_equal(out[:, 0], out[:, 2])
  assert not np.array_equal(out[0, 0], out[1, 0])


@pytest.mark.parametrize('kwargs', [DEFAULT, JITTER_FIRST, SATURATION_ALONE],
                         ids=['octo_default', 'crop_between_jitters',
                              'saturation_then_other_ops'])
def test_padding_frames_are_left_alone(frames_and_seeds, kwargs):
  # They get the identity's parameters: exactly their pixels come back.
  images, seeds = frames_and_seeds
  present = tf.constant([[True, False, True]] * 4)
  out = augment.augment_frames(images, seeds, kwargs, present).numpy()
  np.testing.assert_array_equal(out[:, 1], images.numpy()[:, 1])
  assert not np.array_equal(out[:, 0], images.numpy()[:, 0])


def test_frames_stacked_without_the_word_packing_are_the_same(frames_and_seeds, monkeypatch):
  # The fallback for big-endian machines gives the pixels of the packed path.
  images, seeds = frames_and_seeds
  packed = augment.augment_frames(images, seeds, DEFAULT).numpy()
  monkeypatch.setattr(augment, '_COMPILED', {})
  monkeypatch.setattr(augment.sys, 'byteorder', 'big')
  np.testing.assert_array_equal(augment.augment_frames(images, seeds, DEFAULT).numpy(), packed)


@pytest.mark.parametrize('present, keep', [
    ([True, True, True], None), ([False, True, True], None),
    ([False, False, False], None), ([True, True, False], 1)])
def test_dropout_decisions_equal_octos_image_dropout(present, keep):
  seeds = tf.constant(np.arange(40).reshape(20, 2), tf.int64)
  got = augment.dropout_masks(tf.constant([present] * 20), seeds, 0.5, keep).numpy()
  keys = ['image_a', 'image_b', 'image_c']
  for i in range(20):
    obs = {k: tf.zeros([2, 2, 3], tf.uint8) for k in keys}
    obs['pad_mask_dict'] = {k: tf.constant(p) for k, p in zip(keys, present)}
    ref = frames.image_dropout(obs, tf.cast(seeds[i], tf.int32), 0.5,
                               None if keep is None else keys[keep])
    assert got[i].tolist() == [bool(ref['pad_mask_dict'][k]) for k in keys]
  if any(present):
    assert got.any(axis=1).all()      # one real image always kept
    assert not got.all()              # and some dropped
