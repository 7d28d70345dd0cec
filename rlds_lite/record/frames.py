"""What the browser recorder shows: an env's pixels, its ``render()``, or its state drawn as a plot.

Example:
  >>> import numpy as np
  >>> source = FrameSource(np.zeros((2, 3), np.float32))
  >>> source.kind, source.frame(np.eye(2, 3, dtype=np.float32)).shape
  ('state', (2, 3, 3))
"""

import io
from typing import Any, Callable, Optional

import numpy as np
import tree

__all__ = ['FrameSource', 'png']

_PLOT_HEIGHT = 64


def _pixels_leaf(observation: Any) -> Optional[str]:
  """The path of the first uint8 ``[H, W, 3]`` leaf ('' for the whole), or None."""
  for path, leaf in tree.flatten_with_path(observation):
    array = np.asarray(leaf)
    if array.dtype == np.uint8 and array.ndim == 3 and array.shape[-1] in (1, 3):
      return path
  return None


def _plot(state: Any) -> np.ndarray:
  """A state as an image: a 2-D array as a grey board, anything else as bars."""
  leaves = [np.asarray(x, np.float64) for x in tree.flatten(state)]
  if len(leaves) == 1 and leaves[0].ndim == 2:
    board = leaves[0]
    span = float(board.max() - board.min()) or 1.0
    grey = ((board - board.min()) / span * 255).astype(np.uint8)
    return np.repeat(grey[..., None], 3, axis=-1)
  values = np.concatenate([x.ravel() for x in leaves]) if leaves else np.zeros(1)
  values = np.clip(np.nan_to_num(values), -1e9, 1e9)
  scale = float(np.abs(values).max()) or 1.0
  heights = np.round(values / scale * (_PLOT_HEIGHT // 2 - 1)).astype(int)
  image = np.full((_PLOT_HEIGHT, 8 * len(values), 3), 250, np.uint8)
  middle = _PLOT_HEIGHT // 2
  image[middle, :] = 160
  for i, h in enumerate(heights):
    low, high = sorted((middle, middle - h))
    image[low:high + 1, 8 * i + 1:8 * i + 7] = (40, 110, 200)
  return image


class FrameSource:
  """Turns an env's timesteps into RGB frames: its pixels, ``render()``, or a plot of its state.

  Args:
    observation: a first observation (decides where frames come from).
    render: the env's ``render`` (Gymnasium), used when no observation is an image.

  Attributes:
    kind: ``'pixels'``, ``'render'`` or ``'state'`` (no image: the state as a plot).
  """

  def __init__(self, observation: Any,
               render: Optional[Callable[[], Any]] = None):
    self._path = _pixels_leaf(observation)
    self._render = render
    if self._path is not None:
      self.kind = 'pixels'
    elif render is not None and _is_image(_try(render)):
      self.kind = 'render'
    else:
      self.kind = 'state'

  def frame(self, observation: Any) -> np.ndarray:
    """The ``[H, W, 3]`` uint8 frame of an observation."""
    if self.kind == 'pixels':
      node = observation
      for key in self._path:
        node = node[key]
      image = np.asarray(node)
      return np.repeat(image, 3, axis=-1) if image.shape[-1] == 1 else image
    if self.kind == 'render':
      return np.asarray(self._render(), np.uint8)
    return _plot(observation)


def _try(render: Callable[[], Any]) -> Any:
  """``render()``, or None if it fails (e.g. Gymnasium without pygame)."""
  try:
    return render()
  except Exception:  # pylint: disable=broad-except
    return None


def _is_image(value: Any) -> bool:
  array = np.asarray(value) if value is not None else None
  return (array is not None and array.ndim == 3 and array.shape[-1] == 3 and
          array.dtype == np.uint8)


def png(frame: np.ndarray) -> bytes:
  """A frame as PNG bytes (fast zlib level: the page shows it once).

  Example:
    >>> png(np.zeros((4, 4, 3), np.uint8))[:4]
    b'\\x89PNG'
  """
  from PIL import Image  # pylint: disable=g-import-not-at-top
  out = io.BytesIO()
  Image.fromarray(np.ascontiguousarray(frame)).save(out, format='PNG',
                                                    compress_level=1)
  return out.getvalue()
