"""Tests of rlds_lite.images.decode: pixels, DCT scaling, resizing, dedupe."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import images
from rlds_lite import synthetic


def frames(count=3, size=(32, 24), seed=0):
  return synthetic.camera_frames(np.random.default_rng(seed), count, size)


def jpegs(array, quality=95):
  return tf.stack([tf.io.encode_jpeg(f, quality=quality) for f in array])


def test_jpeg_pixels_are_tfds_decoding():
  array = frames()
  feature = tfds.features.Image(shape=(32, 24, 3), encoding_format='jpeg')
  encoded = jpegs(array)
  ours = images.decode_frames(encoded, images.ImageSpec((32, 24, 3), 'jpeg'))
  theirs = tf.stack([feature.decode_example(e) for e in encoded])
  np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize('dtype', [np.uint8, np.uint16])
def test_png_pixels_are_exact(dtype):
  array = frames().astype(dtype) * (257 if dtype == np.uint16 else 1)
  encoded = tf.stack([tf.io.encode_png(f) for f in array])
  spec = images.ImageSpec((32, 24, 3), 'png', tf.as_dtype(dtype))
  np.testing.assert_array_equal(images.decode_frames(encoded, spec).numpy(),
                                array)


# (stored size, output size) -> the DCT ratio: exact scales, the nearest
# larger scale, no scaling.
@pytest.mark.parametrize('source,target,ratio', [
    ((256, 256), (128, 128), 2),
    ((256, 256), (64, 64), 4),
    ((256, 256), (32, 32), 8),
    ((256, 256), (16, 16), 8),
    ((256, 256), (224, 224), 1),
    ((256, 256), (100, 100), 2),
    ((480, 640), (60, 80), 8),
    ((480, 640), (240, 200), 2),
    ((255, 255), (128, 128), 2),   # libjpeg rounds up: ceil(255 / 2) = 128
    ((256, 256), (256, 256), 1),
    ((256, 256), (300, 300), 1),
], ids=['half', 'quarter', 'eighth', 'below_eighth', 'slightly_smaller',
        'between', 'non_square_eighth', 'non_square_mixed', 'odd_rounds_up',
        'same', 'larger'])
def test_dct_ratio_table(source, target, ratio):
  assert images.dct_ratio(source, target) == ratio


def test_exact_ratio_is_dct_scaled_decoding_without_resize():
  encoded = jpegs(frames())
  spec = images.ImageSpec((32, 24, 3), 'jpeg')
  ours = images.decode_frames(encoded, spec, (16, 12))
  direct = tf.stack([tf.io.decode_jpeg(e, ratio=2) for e in encoded])
  np.testing.assert_array_equal(ours.numpy(), direct.numpy())


def test_other_sizes_decode_scaled_then_resize():
  encoded = jpegs(frames())
  spec = images.ImageSpec((32, 24, 3), 'jpeg')
  ours = images.decode_frames(encoded, spec, (10, 7))   # ratio 2: 16x12
  scaled = tf.stack([tf.io.decode_jpeg(e, ratio=2) for e in encoded])
  expected = tf.cast(tf.clip_by_value(tf.round(tf.image.resize(
      scaled, (10, 7), antialias=True)), 0, 255), tf.uint8)
  np.testing.assert_array_equal(ours.numpy(), expected.numpy())
  upscaled = images.decode_frames(encoded, spec, (40, 30))
  assert upscaled.shape == (3, 40, 30, 3)


def test_raw_frames_are_resized_or_passed_through():
  array = frames()
  spec = images.ImageSpec((32, 24, 3), None)
  np.testing.assert_array_equal(images.decode_frames(array, spec).numpy(),
                                array)
  assert images.decode_frames(array, spec, (8, 6)).shape == (3, 8, 6, 3)


def test_decode_images_nested_batches_with_and_without_dedupe():
  array = frames(4)
  encoded = jpegs(array)
  histories = tf.stack([encoded[:2], encoded[1:3], encoded[2:4]])   # [3, 2]
  batch = {'observation': {'image': histories, 'state': tf.zeros([3, 2])},
           'action': tf.zeros([3, 4])}
  specs = {'observation/image': images.ImageSpec((32, 24, 3), 'jpeg')}
  plain = images.decode_images(batch, specs)
  deduped = images.decode_images(batch, specs, dedupe=True)
  assert plain['observation']['image'].shape == (3, 2, 32, 24, 3)
  np.testing.assert_array_equal(plain['observation']['image'].numpy(),
                                deduped['observation']['image'].numpy())
  single = images.decode_frames(encoded, specs['observation/image']).numpy()
  np.testing.assert_array_equal(deduped['observation']['image'][2, 1].numpy(),
                                single[3])
  assert batch['observation']['image'].dtype == tf.string   # Not modified.
  sized = images.decode_images(batch, specs,
                               {'observation/image': (16, 12)})
  assert sized['observation']['image'].shape == (3, 2, 16, 12, 3)


def test_decode_images_in_a_dataset_map_keeps_static_shapes():
  encoded = jpegs(frames(4))
  specs = {'image': images.ImageSpec((32, 24, 3), 'jpeg')}
  ds = tf.data.Dataset.from_tensors({'image': tf.reshape(encoded, [2, 2])})
  ds = ds.map(lambda b: images.decode_images(b, specs, dedupe=True))
  assert ds.element_spec['image'].shape.as_list() == [2, 2, 32, 24, 3]


@pytest.mark.parametrize('call,error,match', [
    (lambda e, s: images.decode_frames(e, s, (0, 4)), ValueError,
     'size must be None or \\(height, width\\)'),
    (lambda e, s: images.decode_frames(e, s._replace(encoding='gif')),
     ValueError, 'encoding must be one of'),
    (lambda e, s: images.decode_images({'a': e}, {'b': s}), KeyError,
     "no image field 'b'"),
], ids=['bad_size', 'bad_encoding', 'missing_field'])
def test_bad_arguments(call, error, match):
  with pytest.raises(error, match=match):
    call(jpegs(frames(1)), images.ImageSpec((32, 24, 3), 'jpeg'))


def test_output_shape_and_frame_bytes():
  spec = images.ImageSpec((256, 256, 3))
  assert images.output_shape(spec) == (256, 256, 3)
  assert images.output_shape(spec, (64, 32)) == (64, 32, 3)
  assert spec.frame_bytes == 196608
  assert images.ImageSpec((4, 4, 1), 'png', tf.uint16).frame_bytes == 32


@pytest.mark.parametrize('field,node', [
    ('observation/wrist image', 'observation/wrist_image/map/while/DecodePng'),
    (None, 'decode_frames/map/while/DecodePng'),
])
def test_a_frame_that_does_not_decode_names_its_field(field, node):
  spec = images.ImageSpec((4, 4, 3), 'png')
  frames = tf.data.Dataset.from_tensors(tf.constant([b'not a png']))
  ds = frames.map(lambda x: images.decode_frames(x, spec, field=field))
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'\{\{node ' + node + r'\}\}'):
    next(iter(ds))


@pytest.mark.parametrize('encoding, spec_shape, size, field, message', [
    ('jpeg', (48, 24, 3), None, 'observation/image',
     'image field observation/image: its ImageSpec says frames of 48x24 '
     '(height x width); give it the shape of the stored frames (image_size= '
     'resizes them). This frame decodes to (height, width, channels):] '
     '[32 24 3]'),
    # Decoded at 1/2 scale (DCT): the message says so.
    ('jpeg', (64, 48, 3), (32, 24), 'observation/image',
     'image field observation/image: its ImageSpec says frames of 64x48 '
     '(height x width) (decoded at 1/2 scale: 32x24); give it the shape of '
     'the stored frames (image_size= resizes them). This frame decodes at '
     'that scale to (height, width, channels):] [16 12 3]'),
    ('png', (16, 12, 3), (8, 6), None,
     'decode_frames: its ImageSpec says frames of 16x12 (height x width); '
     'give it the shape of the stored frames (image_size= resizes them). '
     'This frame decodes to (height, width, channels):] [32 24 3]'),
], ids=['jpeg', 'jpeg-dct-scaled', 'png-unnamed'])
@pytest.mark.parametrize('graph', ['dataset-map', 'tf-function'])
def test_a_frame_of_another_size_names_the_field_and_both_sizes(
    encoding, spec_shape, size, field, message, graph):
  array = frames(2)   # 32x24.
  encoded = (jpegs(array) if encoding == 'jpeg' else
             tf.stack([tf.io.encode_png(f) for f in array]))
  spec = images.ImageSpec(spec_shape, encoding)
  decode = lambda x: images.decode_frames(x, spec, size, field=field)
  with pytest.raises(tf.errors.InvalidArgumentError) as error:
    if graph == 'dataset-map':
      next(iter(tf.data.Dataset.from_tensors(encoded).map(decode)))
    else:   # Grappler ran a tf.ensure_shape here before the assertion.
      tf.function(decode)(encoded)
  assert f'assertion failed: [{message}' in error.value.message


def test_a_frame_of_another_size_decoded_eagerly_names_it_too():
  spec = images.ImageSpec((48, 24, 3), 'jpeg')
  with pytest.raises(tf.errors.InvalidArgumentError) as error:
    images.decode_frames(jpegs(frames(2)), spec, field='observation/image')
  # TF words an assertion run eagerly so (TF's eager wording of an assertion);
  # the shape is on the next line.
  assert (
      "Expected 'tf.Tensor(False, shape=(), dtype=bool)' to be true. "
      "Summarized data: b'image field observation/image: its ImageSpec says "
      'frames of 48x24 (height x width); give it the shape of the stored '
      'frames (image_size= resizes them). This frame decodes to (height, '
      "width, channels):' 32, 24, 3") in ' '.join(error.value.message.split())


def test_raw_frames_of_another_shape_are_refused():
  spec = images.ImageSpec((16, 16, 3), None)
  with pytest.raises(ValueError) as error:
    images.decode_frames(frames(2), spec, field='observation/image')
  assert str(error.value) == (
      "decode_frames: image field 'observation/image': its ImageSpec says "
      'frames of shape (16, 16, 3) but they are (32, 24, 3).')
