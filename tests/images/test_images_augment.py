"""Tests of rlds_lite.images.augment: per-image references, seeds, layout."""

import math

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite import images
from rlds_lite import synthetic

OPTIONS = dict(crop_scale=(0.5, 0.9), crop_ratio=(0.8, 1.25), brightness=0.2,
               contrast=0.3, saturation=0.4, hue=0.1)


def batch(count=4, history=2, size=(16, 12), seed=0):
  clip = synthetic.camera_frames(np.random.default_rng(seed), count * history,
                                 size)
  return clip.reshape((count, history) + clip.shape[1:])


def per_image_reference(image, params, i, size):
  """One float image through tf.image's own ops with sample i's parameters."""
  x = tf.image.convert_image_dtype(image, tf.float32)
  x = tf.image.crop_and_resize(x[None], params.boxes[i:i + 1], [0], size)[0]
  x = tf.image.adjust_brightness(x, params.brightness[i])
  x = tf.image.adjust_contrast(x, params.contrast[i])
  x = tf.clip_by_value(x, 0.0, 1.0)
  x = tf.image.adjust_hue(x, params.hue[i])
  x = tf.image.adjust_saturation(x, params.saturation[i])
  return tf.clip_by_value(x, 0.0, 1.0)


def test_vectorised_equals_tf_image_per_image():
  frames = batch()
  params = images.draw_params(4, seed=7, **OPTIONS)
  out = images.apply_params(tf.image.convert_image_dtype(frames, tf.float32),
                            params, (10, 8))
  assert out.shape == (4, 2, 10, 8, 3)
  for i in range(4):
    for h in range(2):
      expected = per_image_reference(frames[i, h], params, i, (10, 8))
      np.testing.assert_allclose(out[i, h].numpy(), expected.numpy(),
                                 atol=2e-5)


def test_no_options_is_the_identity():
  frames = batch()
  np.testing.assert_array_equal(images.augment_images(frames, 0).numpy(),
                                frames)


def test_seeded_and_the_same_for_a_samples_frames():
  frames = batch(history=1)
  frames = np.concatenate([frames, frames], axis=1)   # two equal frames
  a = images.augment_images(frames, 5, **OPTIONS).numpy()
  b = images.augment_images(frames, tf.constant([5, 0]), **OPTIONS).numpy()
  c = images.augment_images(frames, 6, **OPTIONS).numpy()
  np.testing.assert_array_equal(a, b)
  assert not np.array_equal(a, c)
  np.testing.assert_array_equal(a[:, 0], a[:, 1])
  assert a.dtype == np.uint8


def test_crop_boxes_keep_the_area_and_ratio_asked():
  params = images.draw_params(2000, 0, crop_scale=(0.3, 0.6),
                              crop_ratio=(0.5, 2.0))
  boxes = params.boxes.numpy()
  height, width = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
  assert boxes.min() >= 0 and boxes.max() <= 1 + 1e-6
  area, ratio = height * width, width / height
  clipped = (height >= 1 - 1e-6) | (width >= 1 - 1e-6)
  assert np.all((area[~clipped] >= 0.3 - 1e-5) & (area[~clipped] <= 0.6 + 1e-5))
  assert np.all((ratio[~clipped] >= 0.5 - 1e-5) &
                (ratio[~clipped] <= 2.0 + 1e-5))
  assert abs(np.mean(np.log(ratio[~clipped]))) < 0.05   # log-uniform
  jitter = images.draw_params(2000, 0, brightness=0.2, hue=0.1)
  assert np.abs(jitter.brightness.numpy()).max() <= 0.2
  assert abs(jitter.brightness.numpy().mean()) < 5 * 0.2 / math.sqrt(3 * 2000)


@pytest.mark.parametrize('kwargs,match', [
    (dict(crop_scale=(0.5, 1.5)), 'crop_scale must be within'),
    (dict(crop_scale=(0.9, 0.5)), 'crop_scale must be \\(low, high\\)'),
    (dict(contrast=2.0), 'contrast must be in \\[0, 1.0\\]'),
    (dict(hue=0.7), 'hue must be in \\[0, 0.5\\]'),
    (dict(brightness=-0.1), 'brightness must be >= 0, got -0.1'),
], ids=['crop_above_one', 'crop_reversed', 'contrast', 'hue', 'brightness'])
def test_bad_options(kwargs, match):
  with pytest.raises(ValueError, match=match):
    images.augment_images(batch(1, 1), 0, **kwargs)


def test_bad_frames_and_seeds():
  frames = batch(2, 1)
  with pytest.raises(ValueError, match=r'^augment_images: images must be a '
                     r'batch \[B, ..., h, w, c\] \(rank >= 4\), got shape '
                     r'\(16, 12, 3\); for one frame pass frame\[tf.newaxis\].$'):
    images.augment_images(frames[0, 0], 0, brightness=0.1)
  for seed in (None, 'x', 1.5, True):
    with pytest.raises(TypeError, match='^augment_images: seed must be an int '
                       'or a shape-\\[2\\] int tensor, got '):
      images.augment_images(frames, seed, brightness=0.1)


def test_augment_batches_needs_image_fields():
  floats = {'observation': {'image': np.zeros([2, 4, 4, 3], np.float32)}}
  ds = tf.data.Dataset.from_tensors(floats)
  with pytest.raises(ValueError, match=r'^augment_batches: the batches have '
                     r'no uint8 field .* name the image fields with keys='):
    images.augment_batches(ds, seed=0, brightness=0.1)
  out = next(iter(images.augment_batches(ds, ['observation/image'], seed=0)))
  np.testing.assert_array_equal(out['observation']['image'], 0)


def test_augment_batches_seeds_per_batch_and_epoch_and_camera():
  frames = batch(count=2, history=1, size=(8, 8))
  one = {'observation': {'image_primary': frames, 'image_wrist': frames,
                         'state': np.zeros([2, 1, 3], np.float32)},
         'goal': {'image_primary': frames[:, 0]}}
  ds = tf.data.Dataset.from_tensors(one).repeat(2)

  def run(seed, epochs=1):
    out = images.augment_batches(ds, seed=seed, brightness=0.3, hue=0.2)
    return [tf.nest.map_structure(lambda x: x.numpy(), b)
            for b in out.repeat(epochs)]

  first, again = run(1), run(1)
  for a, b in zip(first, again):
    tf.nest.map_structure(np.testing.assert_array_equal, a, b)
  a, b = first
  assert not np.array_equal(a['observation']['image_primary'],
                            b['observation']['image_primary'])   # per batch
  assert not np.array_equal(a['observation']['image_primary'],
                            a['observation']['image_wrist'])   # per camera
  np.testing.assert_array_equal(a['observation']['image_primary'][:, 0],
                                a['goal']['image_primary'])   # same camera
  np.testing.assert_array_equal(a['observation']['state'], 0)
  two_epochs = run(1, epochs=2)
  assert not np.array_equal(two_epochs[0]['observation']['image_primary'],
                            two_epochs[2]['observation']['image_primary'])
  with pytest.raises(ValueError, match="no field 'observation/depth'"):
    images.augment_batches(ds, ['observation/depth'], seed=0)
