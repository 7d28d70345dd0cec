"""LeRobot's camera streams with PyAV: MP4 files of many episodes (`VideoWriter`, `VideoReader`).

The encoding follows lerobot 0.4; see docs/convert_lerobot.md.
"""

from fractions import Fraction
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from rlds_lite.convert import episodes as episodes_lib
from rlds_lite.convert import lerobot_layout

ConversionError = episodes_lib.ConversionError

DEFAULT_VCODEC = 'libsvtav1'
PIX_FMT = 'yuv420p'
GOP = 2
CRF = 30
SVT_PRESET = 12
TOLERANCE_S = 1e-4
"""How far a frame's time may be from its row's timestamp (lerobot's default)."""

_Placement = Tuple[int, int, float, float]  # chunk, file, from_ts, to_ts


def _av():
  try:
    import av  # pylint: disable=g-import-not-at-top
  except ImportError as error:
    raise ImportError('rlds_lite.convert.lerobot needs pyarrow and av: '
                      "pip install 'rlds_lite[lerobot]'") from error
  return av


def codec_options(vcodec: str) -> Dict[str, str]:
  """The encoder options lerobot 0.4 passes (``g``, ``crf``, SVT ``preset``).

  Example:
    >>> codec_options('libsvtav1')
    {'g': '2', 'crf': '30', 'preset': '12'}
  """
  options = {'g': str(GOP), 'crf': str(CRF)}
  if vcodec == 'libsvtav1':
    options['preset'] = str(SVT_PRESET)
  if vcodec in ('hevc', 'libx265'):
    options['x265-params'] = 'log-level=error'  # x265 prints a summary.
  return options


class VideoWriter:
  """Encodes one camera's episodes into MP4 files, one after the other.

  Encoding runs in the caller's thread: SVT-AV1 (and x264) spread each
  encode over all cores on their own; a thread per camera measured no faster
  (benchmarks/RESULTS.md, LeRobot).

  Args:
    path_of: ``(chunk, file) -> path`` of the video files.
    fps: frames per second.
    vcodec: ``'libsvtav1'`` (lerobot's default), ``'h264'`` or ``'hevc'``.
    file_size_in_mb: start a new file before an episode that would take the
      current one past this size (lerobot's ``video_files_size_in_mb``; the
      size counts packets out of the encoder, which lag a few frames).
    chunks_size: files per chunk.
    name: the camera's feature name, for errors.

  Example:
    >>> import tempfile, os
    >>> frames = np.zeros((3, 16, 16, 3), np.uint8) + 128
    >>> work = tempfile.mkdtemp()
    >>> writer = VideoWriter(lambda chunk, file: os.path.join(work, f'{file}.mp4'),
    ...                      fps=10)
    >>> writer.add(0, frames), writer.add(1, frames[:2])
    ((0, 0, 0.0, 0.3), (0, 0, 0.3, 0.5))
    >>> writer.close()
    >>> reader = VideoReader(os.path.join(work, '0.mp4'))
    >>> got = reader.frames(0.3, 0.5, np.array([0., 0.1], np.float32), {})
    >>> got.shape, int(abs(got.astype(int) - 128).max()) <= 3
    ((2, 16, 16, 3), True)
    >>> reader.close()
  """

  def __init__(self, path_of: Callable[[int, int], str], fps: int, *,
               vcodec: str = DEFAULT_VCODEC,
               file_size_in_mb: float = 200, chunks_size: int = 1000,
               name: str = 'video'):
    _av()
    os.environ.setdefault('SVT_LOG', '1')  # SVT-AV1 prints banners otherwise.
    self._path_of = path_of
    self._fps = fps
    self._vcodec = vcodec
    self._limit = file_size_in_mb * (1 << 20)
    self._chunks_size = chunks_size
    self._name = name
    self._chunk, self._file = 0, -1
    self._container = None
    self._stream = None
    self._bytes = 0
    self._frames = 0

  def add(self, episode: int, frames: np.ndarray) -> _Placement:
    """Encodes an episode's ``[T, H, W, 3]`` uint8 frames.

    Returns:
      (chunk, file, from_timestamp, to_timestamp) of the episode.

    Raises:
      ConversionError: the codec refuses the frames (naming episode, camera).
    """
    try:
      return self._encode(frames)
    except Exception as error:  # pylint: disable=broad-except
      raise ConversionError(
          f'cannot be encoded with {self._vcodec} ({frames.shape[2]}x'
          f'{frames.shape[1]} frames): {error}', source='<episodes>',
          episode=episode, field=self._name) from error

  def close(self) -> None:
    """Flushes the encoder and closes the file."""
    if self._container is not None:
      try:
        self._mux(self._stream.encode(None))
      finally:
        self._container.close()
        self._container = None

  def _open(self, height: int, width: int) -> None:
    av = _av()
    if self._file >= 0:
      self._chunk, self._file = lerobot_layout.next_file(
          self._chunk, self._file, self._chunks_size)
    else:
      self._file = 0
    path = self._path_of(self._chunk, self._file)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    self._container = av.open(path, 'w', options={'movflags': 'faststart'})
    self._stream = self._container.add_stream(
        self._vcodec, rate=self._fps, options=codec_options(self._vcodec))
    self._stream.pix_fmt = PIX_FMT
    self._stream.width = width
    self._stream.height = height
    self._stream.time_base = Fraction(1, self._fps)
    self._bytes = 0
    self._frames = 0

  def _mux(self, packets: List[Any]) -> None:
    for packet in packets:
      self._bytes += packet.size
      self._container.mux(packet)

  def _encode(self, frames: np.ndarray) -> _Placement:
    av = _av()
    if self._container is not None and self._frames:
      per_frame = self._bytes / self._frames
      if self._bytes + per_frame * len(frames) >= self._limit:
        self.close()
    if self._container is None:
      self._open(frames.shape[1], frames.shape[2])
    start = self._frames
    key = av.video.frame.PictureType.I
    for index, image in enumerate(frames):
      frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(image),
                                         format='rgb24')
      frame.pts = self._frames
      if index == 0:
        frame.pict_type = key  # Each episode starts on a key frame.
      self._mux(self._stream.encode(frame))
      self._frames += 1
    return (self._chunk, self._file, start / self._fps,
            self._frames / self._fps)


class VideoReader:
  """Frames of one MP4 file by timestamp, decoded once, in order.

  Args:
    path: the video file.
    threads: decoder threads (0: as many as the codec likes).
  """

  def __init__(self, path: str, threads: int = 0):
    av = _av()
    self.path = path
    try:
      self._container = av.open(path)
    except FileNotFoundError:
      raise
    except av.FFmpegError as error:
      raise ConversionError(f'is not a readable video file: {error}',
                            source=path) from None
    if not self._container.streams.video:
      self._container.close()
      raise ConversionError('has no video stream', source=path)
    self._stream = self._container.streams.video[0]
    self._stream.thread_type = 'AUTO'
    self._stream.codec_context.thread_count = threads
    self._time_base = float(self._stream.time_base)
    # One converter for the file: frame.to_ndarray(format=...) sets up a new
    # one per frame, 10x slower on small frames.
    self._to_rgb = av.video.reformatter.VideoReformatter()
    self._frames = None
    self._pending = None  # A decoded frame not handed out yet.
    self._last_time = -np.inf

  def close(self) -> None:
    self._container.close()

  def _restart(self, time: float) -> None:
    """Seeks to the key frame at or before ``time``."""
    offset = int(max(0.0, time) / self._stream.time_base)
    self._container.seek(offset, stream=self._stream, backward=True)
    self._frames = self._container.decode(self._stream)
    self._pending = None
    self._last_time = -np.inf

  def _next(self) -> Optional[Any]:
    if self._pending is not None:
      frame, self._pending = self._pending, None
      return frame
    if self._frames is None:
      self._frames = self._container.decode(self._stream)
    try:
      frame = next(self._frames)
    except StopIteration:
      return None
    if frame.pts is None:
      raise ConversionError('has a frame without a timestamp', source=self.path)
    self._last_time = frame.pts * self._time_base
    return frame

  def _decode(self, start: float, end: float, from_ts: float
              ) -> Tuple[List[np.ndarray], List[float]]:
    """The RGB frames of ``[start, end)`` and their times from ``from_ts``."""
    if self._frames is None or start < self._last_time or (
        start > self._last_time + 2.0 and self._pending is None):
      self._restart(start)
    out, times = [], []
    while True:
      frame = self._next()
      if frame is None:
        break
      time = frame.pts * self._time_base
      if time < start:
        continue
      if time >= end:
        self._pending = frame
        break
      out.append(self._to_rgb.reformat(frame, format='rgb24').to_ndarray())
      times.append(time - from_ts)
    return out, times

  def frames(self, from_ts: float, to_ts: float, timestamps: np.ndarray,
             where: Dict[str, Any]) -> np.ndarray:
    """The frames of ``[from_ts, to_ts)`` as ``[T, H, W, 3]`` uint8.

    Args:
      from_ts: the episode's start in the file (seconds).
      to_ts: its end.
      timestamps: the episode's row timestamps (from 0); frame ``i`` must be
        at ``from_ts + timestamps[i]``.
      where: ``episode``/``field`` for errors (the file is added).

    Raises:
      ConversionError: another number of frames than rows, or a frame away
        from its row's time.
    """
    where = {**where, 'source': self.path}
    try:
      out, times = self._decode(from_ts - TOLERANCE_S, to_ts - TOLERANCE_S,
                                from_ts)
    except _av().FFmpegError as error:  # Garbage bytes, a file cut short.
      raise ConversionError(
          f'cannot be decoded between {from_ts:g} s and {to_ts:g} s: {error}',
          **where) from None
    if len(out) != len(timestamps):
      raise ConversionError(
          f'has {len(out)} frames between {from_ts:g} s and {to_ts:g} s; '
          f'the data file has {len(timestamps)} rows for the episode',
          **where)
    if out:
      gap = np.abs(np.asarray(times) - timestamps.astype(np.float64))
      worst = int(np.argmax(gap))
      if gap[worst] > TOLERANCE_S:
        raise ConversionError(
            f'frame {worst} is at {times[worst]:.6f} s into the episode, its '
            f'row at timestamp {float(timestamps[worst]):.6f} s', **where)
      return np.stack(out)
    return np.zeros((0, self._stream.height, self._stream.width, 3), np.uint8)


def video_info(path: str) -> Dict[str, Any]:
  """The ``info`` of a video feature in info.json (lerobot's keys)."""
  av = _av()
  with av.open(path) as container:
    stream = container.streams.video[0]
    pix_fmt = stream.codec_context.pix_fmt or stream.format.name
    return {
        'video.height': stream.height,
        'video.width': stream.width,
        'video.codec': stream.codec_context.codec.canonical_name,
        'video.pix_fmt': pix_fmt,
        'video.is_depth_map': False,
        'video.fps': int(stream.base_rate),
        'video.channels': _channels(pix_fmt),
        'has_audio': bool(container.streams.audio),
    }


def _channels(pix_fmt: str) -> int:
  """lerobot's ``get_video_pixel_channels``."""
  if 'gray' in pix_fmt or 'depth' in pix_fmt or 'monochrome' in pix_fmt:
    return 1
  return 4 if 'rgba' in pix_fmt or 'yuva' in pix_fmt else 3


def encode_png(image: np.ndarray, compression_level: int = 6) -> bytes:
  """A ``[H, W, 3]`` uint8 image as PNG bytes (lerobot: level 6 for images).

  Example:
    >>> image = np.arange(48, dtype=np.uint8).reshape(4, 4, 3)
    >>> data = encode_png(image)
    >>> data[:4], bool((decode_image(data) == image).all())
    (b'\\x89PNG', True)
  """
  av = _av()
  height, width = image.shape[:2]
  context = av.CodecContext.create('png', 'w')
  context.width, context.height = width, height
  context.pix_fmt = 'rgb24'
  context.options = {'compression_level': str(compression_level)}
  frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(image),
                                     format='rgb24')
  return b''.join(bytes(p) for p in context.encode(frame) + context.encode(None))


def decode_image(data: bytes) -> np.ndarray:
  """PNG or JPEG bytes as a ``[H, W, 3]`` uint8 array."""
  av = _av()
  codec = 'mjpeg' if data[:2] == b'\xff\xd8' else 'png'
  context = av.CodecContext.create(codec, 'r')  # One per image: PNG keeps state.
  frames = context.decode(av.Packet(data)) + context.decode(None)
  if not frames:
    raise ValueError('no image in the bytes')
  return frames[0].to_ndarray(format='rgb24')
