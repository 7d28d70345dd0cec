"""rlds_lite.view.video_encoding: decode the MP4 back with PyAV and compare."""

import io

import av
import numpy as np
import pytest

from rlds_lite.view import video_encoding


def _smooth_frames(num_frames, height, width):
  """Frames a codec keeps well: gradients that move with the frame index."""
  y, x = np.mgrid[0:height, 0:width]
  frames = [np.stack([(x * 255 // max(1, width - 1) + 9 * t) % 256,
                      (y * 255 // max(1, height - 1)) % 256,
                      np.full_like(x, (40 * t) % 256)], axis=-1)
            for t in range(num_frames)]
  return np.asarray(frames, np.uint8)


def _decode(data):
  with av.open(io.BytesIO(data)) as container:
    stream = container.streams.video[0]
    frames = [(float(f.pts * f.time_base), f.to_ndarray(format='rgb24'))
              for f in container.decode(stream)]
    return stream.codec_context.name, container.duration / 1e6, frames


@pytest.mark.parametrize('height, width, fps', [(64, 96, 10), (128, 160, 4.5)])
def test_round_trip(height, width, fps):
  frames = _smooth_frames(6, height, width)
  codec, duration, decoded = _decode(video_encoding.encode_mp4(frames, fps))
  assert codec == 'h264'
  assert duration == pytest.approx(6 / fps, abs=1e-3)
  assert [t for t, _ in decoded] == pytest.approx([i / fps for i in range(6)],
                                                  abs=1e-3)
  scale = video_encoding.video_size(height, width)[0] // height
  for (_, image), frame in zip(decoded, frames):
    assert image.shape == (height * scale, width * scale, 3)
    small = image[::scale, ::scale].astype(int)
    assert np.abs(small - frame).mean() < 4  # Visually lossless (crf 18).


def test_small_odd_frames_are_enlarged_and_padded():
  assert video_encoding.video_size(5, 7) == (40, 56)  # At most 8x.
  assert video_encoding.video_size(64, 100) == (128, 200)  # 2x.
  assert video_encoding.video_size(300, 200) == (300, 200)
  assert video_encoding.video_size(201, 133) == (202, 134)  # Even for H.264.
  for shape in [(5, 7), (201, 133)]:
    frames = np.full((2,) + shape + (3,), 90, np.uint8)
    _, _, decoded = _decode(video_encoding.encode_mp4(frames))
    assert decoded[0][1].shape == video_encoding.video_size(*shape) + (3,)


def test_each_step_is_its_own_frame():
  frames = np.zeros((4, 16, 16, 3), np.uint8)
  for t in range(4):
    frames[t, :, 4 * t:4 * t + 4] = 255  # A bar moving right.
  _, _, decoded = _decode(video_encoding.encode_mp4(frames))
  for t, (_, image) in enumerate(decoded):
    columns = image.mean(axis=(0, 2)) > 128
    scale = image.shape[1] // 16
    assert np.flatnonzero(columns).min() // scale == 4 * t


@pytest.mark.parametrize('frames, fps, message', [
    (np.zeros((2, 4, 4), np.uint8), 10, r'must be \[T, H, W, 3\] uint8'),
    (np.zeros((2, 4, 4, 3), np.float32), 10, 'uint8'),
    (np.zeros((0, 4, 4, 3), np.uint8), 10, 'no frames'),
    (np.zeros((1, 4, 4, 3), np.uint8), 0, 'fps must be > 0'),
])
def test_bad_input(frames, fps, message):
  with pytest.raises(ValueError, match=message):
    video_encoding.encode_mp4(frames, fps)
