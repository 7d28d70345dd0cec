"""The pure-NumPy GIF writer and episode_to_video, decoded back with Pillow."""

import io
import sys

import hypothesis
from hypothesis import strategies as st
import numpy as np
from PIL import Image
import pytest
import tensorflow as tf

from rlds_lite import gif
from rlds_lite import video


def decode(data):
  """Frames, durations (ms) and loop count of a GIF, with Pillow."""
  image = Image.open(io.BytesIO(data))
  frames, durations = [], []
  for index in range(image.n_frames):
    image.seek(index)
    frames.append(np.asarray(image.convert('RGB')))
    durations.append(image.info.get('duration'))
  return np.stack(frames), durations, image.info.get('loop')


def cube_frames(shape, seed=0):
  """Frames whose colours are all on the 6x6x6 cube (> 256 colours)."""
  levels = np.random.default_rng(seed).integers(0, 6, size=shape + (3,))
  return (levels * 51).astype(np.uint8)


CLIPS = {
    'one-frame': np.full((1, 3, 5, 3), 7, np.uint8),
    'two-colours': np.stack([np.zeros((4, 6, 3)), np.full((4, 6, 3), 255)]
                            ).astype(np.uint8),
    'cube-colours': cube_frames((6, 20, 30)),
    'odd-size': cube_frames((3, 7, 13), seed=1),
    # 256 colours of noise: LZW fills its 4096-code table and clears it.
    'table-overflow': np.random.default_rng(2).integers(
        0, 256, size=(2, 64, 64, 1)).repeat(3, -1).astype(np.uint8),
}


@pytest.mark.parametrize('frames', CLIPS.values(), ids=CLIPS.keys())
def test_gif_decodes_to_the_same_frames(frames):
  decoded, durations, loop = decode(gif.encode_gif(frames, fps=20))
  np.testing.assert_array_equal(decoded, frames)
  assert durations == [50] * len(frames)
  assert loop == 0


def test_more_than_256_colours_go_to_the_nearest_cube_colour():
  frames = np.random.default_rng(0).integers(0, 256, size=(2, 16, 16, 3)
                                             ).astype(np.uint8)
  decoded, _, _ = decode(gif.encode_gif(frames))
  reference = (np.rint(frames / 51.0) * 51).astype(np.uint8)  # 6 levels.
  np.testing.assert_array_equal(decoded, reference)
  assert np.abs(decoded.astype(int) - frames).max() <= 26


def test_quantize_is_exact_for_few_colours():
  frames = CLIPS['two-colours']
  indices, palette = gif.quantize(frames)
  np.testing.assert_array_equal(palette[indices], frames)
  assert palette.tolist() == [[0, 0, 0], [255, 255, 255]]


def test_loop_and_fps_are_written():
  _, durations, loop = decode(gif.encode_gif(CLIPS['one-frame'], fps=4, loop=3))
  assert (durations, loop) == ([250], 3)


@hypothesis.settings(max_examples=15)
@hypothesis.given(st.integers(1, 3), st.integers(1, 9), st.integers(1, 9),
                  st.integers(1, 256), st.integers(0, 2**31))
def test_gif_round_trip_property(num_frames, height, width, colours, seed):
  rng = np.random.default_rng(seed)
  palette = rng.integers(0, 256, size=(colours, 3)).astype(np.uint8)
  frames = palette[rng.integers(0, colours, size=(num_frames, height, width))]
  decoded, _, _ = decode(gif.encode_gif(frames))
  np.testing.assert_array_equal(decoded, frames)


def test_bad_frames_raise():
  with pytest.raises(ValueError, match=r'frames must be uint8 \[T, H, W, 3\]'):
    gif.encode_gif(np.zeros((2, 3, 3), np.uint8))
  with pytest.raises(ValueError, match='no pixels to write'):
    gif.encode_gif(np.zeros((0, 3, 3, 3), np.uint8))


IMAGES = {
    'rgb-uint8': (cube_frames((4, 6, 5)), cube_frames((4, 6, 5))),
    'gray-hw': (np.arange(4 * 6 * 5).reshape(4, 6, 5).astype(np.uint8),
                np.arange(4 * 6 * 5).reshape(4, 6, 5, 1).repeat(3, -1)),
    'gray-hw1': (np.full((2, 3, 3, 1), 9, np.uint8), np.full((2, 3, 3, 3), 9)),
    'float-0-1': (np.array([[[0.0, 0.5, 1.0]]], np.float32),
                  np.array([[[[0] * 3, [128] * 3, [255] * 3]]])),
    'rgba': (np.full((1, 2, 2, 4), 200, np.uint8), np.full((1, 2, 2, 3), 200)),
    'bool': (np.array([[[True, False]]]), np.array([[[[255] * 3, [0] * 3]]])),
}


@pytest.mark.parametrize('form', ['dense-numpy', 'dense-tensor', 'nested',
                                  'bare-steps'])
@pytest.mark.parametrize('images, expected', IMAGES.values(), ids=IMAGES.keys())
def test_episode_to_video_writes_every_step(tmp_path, images, expected, form):
  steps = {'observation': {'image': images},
           'reward': np.zeros(len(images), np.float32)}
  if form == 'dense-tensor':
    episode = {'steps': tf.nest.map_structure(tf.constant, steps)}
  elif form == 'nested':
    episode = {'steps': tf.data.Dataset.from_tensor_slices(steps)}
  elif form == 'bare-steps':
    episode = steps
  else:
    episode = {'steps': steps}
  path = tmp_path / 'clip.gif'
  assert video.episode_to_video(episode, 'observation/image', path,
                                fps=5) == str(path)
  decoded, durations, _ = decode(path.read_bytes())
  np.testing.assert_array_equal(decoded, np.asarray(expected, np.uint8))
  assert durations == [200] * len(images)


@pytest.mark.parametrize('steps, key, error, message', [
    ({'obs': {'image': np.zeros((2, 4, 4, 3), np.uint8)}}, 'obs/img', KeyError,
     "no step field 'obs/img'; image-like fields: ['obs/image'], all fields: "
     "['obs/image']"),
    ({'reward': np.zeros(3)}, 'reward', ValueError,
     "field 'reward' is not an image: per-step shape []"),
    ({'img': np.full((1, 2, 2), 2.0)}, 'img', ValueError,
     "field 'img': float images must hold values in [0, 1]; got [2.0, 2.0]."),
    ({'img': np.zeros((0, 2, 2), np.uint8)}, 'img', ValueError,
     "field 'img': the episode has no steps."),
], ids=['unknown-key', 'not-an-image', 'float-out-of-range', 'empty'])
def test_bad_fields_raise_clear_errors(tmp_path, steps, key, error, message):
  with pytest.raises(error) as info:
    video.episode_to_video({'steps': steps}, key, tmp_path / 'x.gif')
  assert message in str(info.value)
  assert not (tmp_path / 'x.gif').exists()


def test_unknown_key_in_nested_steps_lists_image_fields():
  steps = tf.data.Dataset.from_tensor_slices(
      {'observation': {'pixels': np.zeros((2, 4, 4, 1), np.uint8)},
       'action': np.zeros(2)})
  with pytest.raises(KeyError, match=r"image-like fields: \['observation/"
                     r"pixels'\], all fields: \['action', 'observation/"
                     r"pixels'"):
    video.episode_frames({'steps': steps}, 'observation/image')


def test_mp4_without_imageio_says_what_to_install(tmp_path, monkeypatch):
  monkeypatch.setitem(sys.modules, 'imageio', None)
  with pytest.raises(ImportError, match='writing MP4 needs the imageio and '
                     'imageio-ffmpeg packages'):
    video.episode_to_video({'img': np.zeros((1, 2, 2), np.uint8)}, 'img',
                           tmp_path / 'x.mp4')


def test_unknown_format_and_bad_fps(tmp_path):
  episode = {'img': np.zeros((1, 2, 2), np.uint8)}
  with pytest.raises(ValueError, match="unknown video format '.png'"):
    video.episode_to_video(episode, 'img', tmp_path / 'x.png')
  with pytest.raises(ValueError, match='fps must be positive'):
    video.episode_to_video(episode, 'img', tmp_path / 'x.gif', fps=0)


def test_mp4_round_trip_through_ffmpeg(tmp_path):
  """Real MP4 (imageio-ffmpeg, in the test extra): frames, even sizes, colours."""
  import imageio.v2 as imageio  # pylint: disable=g-import-not-at-top
  colours = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 255],
                      [0, 0, 0]], np.uint8)
  frames = np.broadcast_to(colours[:, None, None, :], (5, 15, 16, 3))
  path = video.episode_to_video({'img': frames}, 'img', tmp_path / 'x.mp4',
                                fps=5)
  assert path == str(tmp_path / 'x.mp4')
  decoded = np.stack(imageio.mimread(path))
  assert decoded.shape == (5, 16, 16, 3)  # The odd height padded to even.
  means = decoded[:, 4:12, 4:12].reshape(5, -1, 3).mean(axis=1)
  np.testing.assert_allclose(means, colours, atol=12)  # Lossy, but close.


# --- Several cameras side by side, whole-number upscaling. ---

def test_upscale_repeats_each_pixel():
  frames = np.arange(6, dtype=np.uint8).reshape(1, 2, 3, 1)
  big = video.upscale(frames, 3)
  assert big.shape == (1, 6, 9, 1)
  np.testing.assert_array_equal(big[0, ::3, ::3], frames[0])
  np.testing.assert_array_equal(big[0, :3, :3, 0], np.zeros((3, 3)))
  assert video.upscale(frames, 1) is frames
  for bad in (0, -1, 1.5, True):
    with pytest.raises(ValueError, match='scale must be a whole number >= 1'):
      video.upscale(frames, bad)


@pytest.mark.parametrize('height, scale', [
    (1, 128), (12, 11), (16, 8), (32, 4), (64, 2), (84, 2), (127, 2),
    (128, 1), (480, 1)])
def test_auto_scale_makes_small_frames_at_least_128_high(height, scale):
  assert video.auto_scale(height) == scale
  assert height * scale >= video.MIN_HEIGHT or height >= video.MIN_HEIGHT


def test_side_by_side_pads_and_enlarges_to_the_tallest():
  main = np.full((2, 8, 6, 3), 10, np.uint8)
  wrist = np.full((2, 4, 3, 3), 20, np.uint8)  # Doubled: 8 high.
  odd = np.full((2, 3, 2, 3), 30, np.uint8)  # Doubled: 6 high, padded by 2.
  frames = video.side_by_side([main, wrist, odd])
  assert frames.shape == (2, 8, 6 + 2 + 6 + 2 + 4, 3)
  np.testing.assert_array_equal(frames[:, :, :6], main)
  np.testing.assert_array_equal(frames[:, :, 6:8], 128)  # The grey gap.
  np.testing.assert_array_equal(frames[:, :, 8:14], 20)
  np.testing.assert_array_equal(frames[:, :6, 16:], 30)
  np.testing.assert_array_equal(frames[:, 6:, 16:], 0)  # Black padding.
  with pytest.raises(ValueError, match=r'different frame counts: \[1, 2\]'):
    video.side_by_side([main, wrist[:1]])


def test_episode_to_video_of_two_cameras_scaled(tmp_path):
  steps = {'observation': {'image': np.full((3, 16, 12, 3), 50, np.uint8),
                           'wrist': np.full((3, 8, 8), 200, np.uint8)}}
  assert video.camera_fields(steps) == ['observation/image',
                                        'observation/wrist']
  path = video.episode_to_video(steps, video.camera_fields(steps),
                                tmp_path / 'x.gif', scale=None)
  decoded, _, _ = decode(open(path, 'rb').read())
  assert decoded.shape == (3, 128, (12 + 2 + 16) * 8, 3)  # auto_scale(16): 8.
  np.testing.assert_array_equal(decoded[:, :, :96], 50)
  np.testing.assert_array_equal(decoded[:, :, 112:], 200)
  path = video.episode_to_video(steps, 'observation/wrist', tmp_path / 'y.gif',
                                scale=2)
  assert decode(open(path, 'rb').read())[0].shape == (3, 16, 16, 3)


def test_camera_fields_prefer_uint8_images_and_say_when_there_is_none():
  steps = {'depth': np.zeros((2, 4, 4), np.float32),
           'rgb': np.zeros((2, 4, 4, 3), np.uint8)}
  assert video.camera_fields(steps) == ['rgb']
  assert video.camera_fields({'depth': steps['depth']}) == ['depth']
  with pytest.raises(KeyError, match=r"no image field; all fields: \['a'\]"):
    video.camera_fields({'a': np.zeros((2, 3))})
