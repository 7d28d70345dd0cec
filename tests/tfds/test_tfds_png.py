"""rlds_lite.tfds.png: every file decodes to exactly the input's pixels."""

import io
import zlib

import hypothesis
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
import numpy as np
from PIL import Image
import pytest
import tensorflow as tf

from rlds_lite.tfds import png

_RNG = np.random.default_rng(0)


def _random(shape, dtype):
  return _RNG.integers(0, np.iinfo(dtype).max, shape, dtype=dtype,
                       endpoint=True)


def _gradient(t, h, w, c, dtype=np.uint8):
  y, x = np.mgrid[0:h, 0:w]
  frames = [(x * (k + 1) + 3 * y + 7 * ch) for k in range(t) for ch in range(c)]
  return (np.stack(frames, -1).reshape(h, w, t, c).transpose(2, 0, 1, 3) %
          (np.iinfo(dtype).max + 1)).astype(dtype)


CASES = {
    'one_pixel': np.array([[[[7, 8, 9]]]], np.uint8),
    'one_frame': _random((1, 6, 5, 3), np.uint8),
    'odd_width': _random((2, 4, 7, 3), np.uint8),
    'one_column': _random((2, 9, 1, 3), np.uint8),
    'one_row': _random((2, 1, 13, 4), np.uint8),
    'gray': _random((3, 5, 5, 1), np.uint8),
    'gray_alpha': _random((3, 5, 3, 2), np.uint8),
    'rgb': _gradient(4, 16, 11, 3),
    'rgba': _random((2, 8, 8, 4), np.uint8),
    'uint16_gray_above_255': np.array([[[[0], [256]], [[300], [65535]]]],
                                      np.uint16),
    'uint16_rgb': _random((2, 5, 7, 3), np.uint16),
    'uint16_gradient_rgba': _gradient(2, 9, 6, 4, np.uint16) * 257,
    'uint16_big_endian_array': _random((2, 3, 4, 2), np.uint16).astype('>u2'),
    'all_zero': np.zeros((3, 12, 12, 3), np.uint8),
    'all_max': np.full((2, 4, 6, 3), 255, np.uint8),
    'random_noise': _random((5, 32, 32, 3), np.uint8),
    'large_batch_threaded': _random((40, 48, 48, 3), np.uint8),
}


def _decoded(data, dtype):
  return tf.io.decode_png(data, dtype=tf.as_dtype(dtype)).numpy()


@pytest.mark.parametrize('images', CASES.values(), ids=CASES.keys())
def test_files_decode_to_the_same_pixels(images):
  files = png.encode_png_batch(images)
  assert len(files) == len(images)
  for data, frame in zip(files, images):
    np.testing.assert_array_equal(_decoded(data, images.dtype), frame)


@pytest.mark.parametrize('images', CASES.values(), ids=CASES.keys())
def test_files_are_valid_for_pil(images):
  for data, frame in zip(png.encode_png_batch(images[:3]), images):
    with Image.open(io.BytesIO(data)) as image:
      image.verify()  # Chunk CRCs and structure.
    with Image.open(io.BytesIO(data)) as image:
      pixels = np.asarray(image)
    if frame.dtype == np.uint8:  # PIL reads 16-bit data only for gray.
      np.testing.assert_array_equal(pixels.reshape(frame.shape), frame)
    elif frame.shape[-1] == 1:
      np.testing.assert_array_equal(pixels.reshape(frame.shape), frame)


def test_an_empty_batch_is_an_empty_list():
  assert png.encode_png_batch(np.zeros((0, 4, 4, 3), np.uint8)) == []
  assert png.encode_png_batch(np.zeros((0, 0, 0, 3), np.uint16)) == []


@pytest.mark.parametrize('filters', [[name] for name in png.FILTERS] +
                         [png.DEFAULT_FILTERS, png.FILTERS, 'paeth'],
                         ids=lambda f: '+'.join(f) if not isinstance(f, str)
                         else f)
@pytest.mark.parametrize('level', [0, 1, 6, 9])
@pytest.mark.parametrize('strategy', png.STRATEGIES)
def test_every_filter_strategy_and_level_round_trips(filters, level, strategy):
  images = np.concatenate([_gradient(2, 10, 9, 3), _random((2, 10, 9, 3),
                                                           np.uint8)])
  for data, frame in zip(png.encode_png_batch(
      images, filters=filters, level=level, strategy=strategy), images):
    np.testing.assert_array_equal(_decoded(data, np.uint8), frame)


def _tiles(count, size=42):
  """Frames of a random 6x6 tile repeated: string matching beats RLE."""
  tiles = _random((count, 6, 6, 3), np.uint8)
  return np.tile(tiles, (1, size // 6, size // 6, 1))


@pytest.mark.parametrize('images', [
    _tiles(4), _gradient(4, 40, 40, 3), CASES['all_zero'],
    CASES['random_noise']], ids=['tiles', 'gradient', 'zeros', 'noise'])
def test_auto_strategy_is_within_10_percent_of_the_smaller(images):
  def size(strategy):
    return sum(map(len, png.encode_png_batch(images, strategy=strategy)))
  assert size('auto') <= 1.1 * min(size('rle'), size('lz77'))


def test_auto_strategy_takes_lz77_for_repeated_tiles():
  images = _tiles(3)
  auto = png.encode_png_batch(images)
  assert auto == png.encode_png_batch(images, strategy='lz77')
  assert sum(map(len, auto)) * 5 < sum(map(len, png.encode_png_batch(
      images, strategy='rle')))


@pytest.mark.parametrize('strategy', png.STRATEGIES)
def test_threads_give_the_same_files(strategy):
  images = np.concatenate([_random((15, 40, 40, 3), np.uint8),
                           _gradient(15, 40, 40, 3)])
  one = png.encode_png_batch(images, strategy=strategy, threads=1)
  assert png.encode_png_batch(images, strategy=strategy, threads=2) == one
  assert png.encode_png_batch(images, strategy=strategy, threads=3) == one
  assert png.encode_png_batch(images, strategy=strategy) == one


def test_adaptive_rows_pick_the_filter_that_zeroes_them():
  # Every row equal to the one above: Up makes all rows but the first zero.
  row = _random((1, 1, 16, 3), np.uint8)
  images = np.repeat(row, 8, axis=1)
  data = png.encode_png_batch(images, level=0)[0]
  # Level 0: the IDAT data is zlib's stored blocks, the scanlines readable.
  idat = data[data.index(b'IDAT') + 4:data.index(b'IEND') - 8]
  scanlines = zlib.decompress(idat)
  filter_types = scanlines[::1 + 16 * 3]
  assert list(filter_types[1:]) == [2] * 7


def test_uint16_samples_are_big_endian():
  data = png.encode_png_batch(np.array([[[[0x0102]]]], np.uint16),
                              filters='none', level=0)[0]
  idat = data[data.index(b'IDAT') + 4:data.index(b'IEND') - 8]
  assert zlib.decompress(idat) == b'\x00\x01\x02'


@st.composite
def _image_batches(draw):
  dtype = draw(st.sampled_from([np.uint8, np.uint16]))
  shape = (draw(st.integers(0, 4)), draw(st.integers(1, 17)),
           draw(st.integers(1, 17)), draw(st.integers(1, 4)))
  images = draw(hnp.arrays(dtype, shape, elements=st.integers(
      0, np.iinfo(dtype).max)))
  filters = draw(st.lists(st.sampled_from(png.FILTERS), min_size=1,
                          max_size=5))
  options = {'filters': filters, 'level': draw(st.integers(0, 9)),
             'strategy': draw(st.sampled_from(png.STRATEGIES)),
             'threads': draw(st.sampled_from([None, 1, 2]))}
  return images, options


@hypothesis.settings(max_examples=40, deadline=None)
@hypothesis.given(_image_batches())
def test_random_batches_decode_to_the_same_pixels(batch):
  images, options = batch
  files = png.encode_png_batch(images, **options)
  assert len(files) == len(images)
  for data, frame in zip(files, images):
    np.testing.assert_array_equal(_decoded(data, images.dtype), frame)


ERRORS = {
    'float32': (np.zeros((1, 2, 2, 3), np.float32), {},
                r'uint8 or uint16, got dtype float32 \(shape \(1, 2, 2, 3\)\)'),
    'int64': (np.zeros((1, 2, 2, 1), np.int64), {}, 'got dtype int64'),
    'bool': (np.zeros((1, 2, 2, 1), bool), {}, 'got dtype bool'),
    'uint32': (np.zeros((1, 2, 2, 1), np.uint32), {}, 'got dtype uint32'),
    'rank_3': (np.zeros((2, 2, 3), np.uint8), {},
               r'\[T, height, width, channels\].*got shape \(2, 2, 3\)'),
    'five_channels': (np.zeros((1, 2, 2, 5), np.uint8), {},
                      r'got shape \(1, 2, 2, 5\) \(uint8\)'),
    'no_channels': (np.zeros((1, 2, 2, 0), np.uint16), {},
                    r'got shape \(1, 2, 2, 0\) \(uint16\)'),
    'zero_width': (np.zeros((1, 2, 0, 3), np.uint8), {},
                   r'height and width of at least 1, got shape \(1, 2, 0, 3\)'),
    'unknown_filter': (np.zeros((1, 2, 2, 3), np.uint8),
                       {'filters': ['up', 'median']}, "'median'"),
    'no_filter': (np.zeros((1, 2, 2, 3), np.uint8), {'filters': []},
                  'non-empty subset'),
    'level_10': (np.zeros((1, 2, 2, 3), np.uint8), {'level': 10},
                 'level must be an int from 0 to 9, got 10'),
    'unknown_strategy': (np.zeros((1, 2, 2, 3), np.uint8),
                         {'strategy': 'huffman'},
                         "strategy must be one of .*, got 'huffman'"),
    'threads_0': (np.zeros((1, 2, 2, 3), np.uint8), {'threads': 0},
                  'threads must be None or an int >= 1, got 0'),
}


@pytest.mark.parametrize('images, kwargs, message', ERRORS.values(),
                         ids=ERRORS.keys())
def test_bad_input_is_a_clear_value_error(images, kwargs, message):
  with pytest.raises(ValueError, match=message):
    png.encode_png_batch(images, **kwargs)
