"""A pure-Python/NumPy animated GIF (GIF89a) writer; no encoder needed."""

import struct
from typing import List, Tuple

import numpy as np

_CUBE_LEVELS = 6
_MAX_CODES = 4096
_SUB_BLOCK = 255


def _cube_palette() -> np.ndarray:
  levels = np.round(np.arange(_CUBE_LEVELS) * 255 / (_CUBE_LEVELS - 1))
  r, g, b = np.meshgrid(levels, levels, levels, indexing='ij')
  return np.stack([r.ravel(), g.ravel(), b.ravel()], -1).astype(np.uint8)


def quantize(frames: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
  """Palette indices ``[T, H, W]`` and palette ``[N, 3]``: exact up to 256 colours, else 6x6x6.

  Example:
    >>> frames = np.array([[[[0, 0, 0], [255, 0, 0]]]], np.uint8)
    >>> indices, palette = quantize(frames)
    >>> indices.tolist(), palette.tolist()
    ([[[0, 1]]], [[0, 0, 0], [255, 0, 0]])
  """
  rgb = frames.astype(np.uint32)
  codes = (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]
  colours, inverse = np.unique(codes, return_inverse=True)
  if len(colours) <= 256:
    palette = np.stack([colours >> 16, (colours >> 8) & 255, colours & 255],
                       -1).astype(np.uint8)
    return inverse.reshape(codes.shape).astype(np.uint8), palette
  levels = np.rint(frames.astype(np.float32) * ((_CUBE_LEVELS - 1) / 255))
  levels = levels.astype(np.uint8)
  indices = (levels[..., 0] * _CUBE_LEVELS + levels[..., 1]) * _CUBE_LEVELS
  return (indices + levels[..., 2]).astype(np.uint8), _cube_palette()


def _pack_codes(codes: List[int], sizes: List[int]) -> bytes:
  """Codes of variable bit width, packed least-significant bit first."""
  codes_arr = np.asarray(codes, np.uint32)
  sizes_arr = np.asarray(sizes, np.int64)
  bits = (codes_arr[:, None] >> np.arange(12, dtype=np.uint32)) & 1
  keep = np.arange(12)[None, :] < sizes_arr[:, None]
  return np.packbits(bits[keep].astype(np.uint8), bitorder='little').tobytes()


def lzw_encode(indices: bytes, min_code_size: int) -> bytes:
  """The GIF LZW code stream of palette indices (not yet in sub-blocks).

  Example:
    >>> lzw_encode(bytes([0, 0, 0, 0]), 2).hex()
    '8451'
  """
  clear = 1 << min_code_size
  end = clear + 1
  codes, sizes = [clear], [min_code_size + 1]
  table = {}
  next_code = end + 1
  code_size = min_code_size + 1
  if not indices:
    codes.append(end)
    sizes.append(code_size)
    return _pack_codes(codes, sizes)
  prefix = indices[0]
  for index in indices[1:]:
    key = (prefix << 8) | index
    code = table.get(key)
    if code is not None:
      prefix = code
      continue
    codes.append(prefix)
    sizes.append(code_size)
    table[key] = next_code
    if next_code == (1 << code_size) and code_size < 12:
      code_size += 1
    next_code += 1
    if next_code == _MAX_CODES:
      codes.append(clear)
      sizes.append(code_size)
      table = {}
      next_code = end + 1
      code_size = min_code_size + 1
    prefix = index
  codes.extend((prefix, end))
  sizes.extend((code_size, code_size))
  return _pack_codes(codes, sizes)


def _sub_blocks(data: bytes) -> bytes:
  chunks = [data[i:i + _SUB_BLOCK] for i in range(0, len(data), _SUB_BLOCK)]
  return b''.join(bytes([len(c)]) + c for c in chunks) + b'\x00'


def encode_gif(frames: np.ndarray, fps: float = 10, loop: int = 0) -> bytes:
  """The bytes of an animated GIF of uint8 RGB ``frames`` ``[T, H, W, 3]`` (``loop`` 0: forever).

  Example:
    >>> len(encode_gif(np.zeros((1, 1, 1, 3), np.uint8)))
    62
  """
  frames = np.asarray(frames)
  if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
    raise ValueError('encode_gif: frames must be uint8 [T, H, W, 3]; got '
                     f'{frames.dtype} {list(frames.shape)}.')
  num_frames, height, width, _ = frames.shape
  if num_frames == 0 or height == 0 or width == 0:
    raise ValueError(f'encode_gif: no pixels to write (shape '
                     f'{list(frames.shape)}).')
  if height > 65535 or width > 65535:
    raise ValueError(f'encode_gif: frames of {height}x{width} exceed 65535.')
  indices, palette = quantize(frames)
  bits = max(1, int(np.ceil(np.log2(max(len(palette), 2)))))
  table = np.zeros((1 << bits, 3), np.uint8)
  table[:len(palette)] = palette
  delay = max(1, int(round(100 / fps)))
  out = [b'GIF89a',
         struct.pack('<HHBBB', width, height, 0xF0 | (bits - 1), 0, 0),
         table.tobytes(),
         b'\x21\xff\x0bNETSCAPE2.0\x03\x01' + struct.pack('<H', loop) + b'\x00']
  min_code_size = max(2, bits)
  for frame in indices:
    out.append(b'\x21\xf9\x04\x04' + struct.pack('<H', delay) + b'\x00\x00')
    out.append(b'\x2c' + struct.pack('<HHHHB', 0, 0, width, height, 0))
    out.append(bytes([min_code_size]))
    out.append(_sub_blocks(lzw_encode(frame.tobytes(), min_code_size)))
  out.append(b'\x3b')
  return b''.join(out)


def write_gif(frames: np.ndarray, path: str, fps: float = 10,
              loop: int = 0) -> None:
  """Writes `encode_gif` of ``frames`` to ``path``.

  Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), 'x.gif')
    >>> write_gif(np.zeros((2, 3, 3, 3), np.uint8), path)
    >>> open(path, 'rb').read(6)
    b'GIF89a'
  """
  data = encode_gif(frames, fps, loop)
  with open(path, 'wb') as f:
    f.write(data)
