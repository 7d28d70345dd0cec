"""Encode an episode's camera frames as an MP4 (H.264, in-process with PyAV) browsers play.

Example:
  >>> import numpy as np
  >>> frames = np.zeros((5, 32, 48, 3), np.uint8)
  >>> data = encode_mp4(frames, fps=10)
  >>> data[4:8]
  b'ftyp'
  >>> video_size(32, 48)
  (128, 192)
"""

import fractions
import math
import os
import tempfile
from typing import Tuple

import numpy as np

MIN_SIDE = 128
"""Frames are enlarged (by a whole factor) until their smaller side is this."""
MAX_SCALE = 8


def _scale(height: int, width: int) -> int:
  return max(1, min(MAX_SCALE, math.ceil(MIN_SIDE / max(1, min(height, width)))))


def video_size(height: int, width: int) -> Tuple[int, int]:
  """The ``(height, width)`` of the video of ``height x width`` frames."""
  scale = _scale(height, width)
  return (height * scale + (height * scale) % 2,
          width * scale + (width * scale) % 2)


def _prepare(frames: np.ndarray) -> np.ndarray:
  """Enlarged, even-sized ``[T, H, W, 3]`` uint8 frames."""
  _, height, width, _ = frames.shape
  scale = _scale(height, width)
  if scale > 1:
    frames = frames.repeat(scale, axis=1).repeat(scale, axis=2)
  _, height, width, _ = frames.shape
  return np.pad(frames, ((0, 0), (0, height % 2), (0, width % 2), (0, 0)),
                mode='edge')


def encode_mp4(frames: np.ndarray, fps: float = 10, crf: int = 18) -> bytes:
  """The MP4 bytes (H.264, yuv420p, fast start) of ``[T, H, W, 3]`` uint8 frames.

  ``crf`` is x264's quality (lower is better; 18 is visually lossless).
  """
  frames = np.asarray(frames)
  if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
    raise ValueError('encode_mp4: frames must be [T, H, W, 3] uint8, got '
                     f'{frames.dtype}{list(frames.shape)}.')
  if not len(frames):
    raise ValueError('encode_mp4: no frames.')
  if not fps > 0:
    raise ValueError(f'encode_mp4: fps must be > 0, got {fps}.')
  try:
    import av  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ImportError('encode_mp4 needs PyAV: pip install av (or '
                      "'rlds_lite[view]').") from None
  frames = _prepare(frames)
  rate = fractions.Fraction(fps).limit_denominator(1001)
  # Fast start (the index first) rewrites the file: it needs a real file.
  with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, 'episode.mp4')
    _write(av, frames, rate, crf, path)
    with open(path, 'rb') as f:
      return f.read()


def _write(av, frames: np.ndarray, rate: fractions.Fraction, crf: int,
           path: str) -> None:
  with av.open(path, 'w', format='mp4',
               options={'movflags': 'faststart'}) as container:
    stream = container.add_stream('libx264', rate=rate)
    stream.width, stream.height = frames.shape[2], frames.shape[1]
    stream.pix_fmt = 'yuv420p'
    stream.options = {'preset': 'veryfast', 'crf': str(crf),
                      'g': str(max(1, round(rate)))}
    for i, frame in enumerate(frames):
      video_frame = av.VideoFrame.from_ndarray(frame, format='rgb24')
      video_frame.pts = i
      video_frame.time_base = 1 / rate
      for packet in stream.encode(video_frame):
        container.mux(packet)
    for packet in stream.encode():
      container.mux(packet)
