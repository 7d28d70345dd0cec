"""Feature statistics of a LeRobotDataset, per episode and aggregated, as lerobot 0.4 stores them.

Which statistics, and how they differ from lerobot's: docs/convert_lerobot.md.
"""

from typing import Any, Dict

import numpy as np

QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
QUANTILE_KEYS = tuple(f'q{int(q * 100):02d}' for q in QUANTILES)
STAT_KEYS = ('min', 'max', 'mean', 'std', 'count') + QUANTILE_KEYS
"""The statistics of a feature, in lerobot's order."""

Stats = Dict[str, np.ndarray]


def numeric_stats(values: np.ndarray) -> Stats:
  """Statistics of a numeric or bool feature's ``[T, ...]`` values.

  Example:
    >>> numeric_stats(np.array([[0, 1], [2, 5]]))['max']
    array([2, 5])
  """
  values = np.asarray(values)
  length = len(values)
  width = values.shape[-1] if values.ndim > 1 else 1
  rows = values.reshape(-1, width)
  as_float = rows.astype(np.float64)
  stats = {
      'min': rows.min(axis=0),
      'max': rows.max(axis=0),
      'mean': as_float.mean(axis=0),
      'std': as_float.std(axis=0),
      'count': np.array([length]),
  }
  quantiles = np.quantile(as_float, QUANTILES, axis=0)
  for key, value in zip(QUANTILE_KEYS, quantiles):
    stats[key] = value
  return stats


def sample_indices(length: int) -> np.ndarray:
  """The frames lerobot samples for image statistics (100 up to 10,000).

  Example:
    >>> sample_indices(3).tolist(), len(sample_indices(1000))
    ([0, 1, 2], 177)
  """
  count = length if length < 100 else max(100, min(int(length ** 0.75),
                                                   10_000))
  return np.round(np.linspace(0, length - 1, count)).astype(int)


def _downsample(frames: np.ndarray) -> np.ndarray:
  """lerobot's ``auto_downsample_height_width`` on ``[N, H, W, C]``."""
  height, width = frames.shape[1:3]
  if max(height, width) < 300:
    return frames
  factor = int(width / 150) if width > height else int(height / 150)
  return frames[:, ::factor, ::factor]


def _histogram_quantiles(counts: np.ndarray) -> np.ndarray:
  """Linear-interpolated quantiles of uint8 values given their 256 counts."""
  cumulative = np.cumsum(counts)
  total = cumulative[-1]
  out = []
  for q in QUANTILES:
    position = q * (total - 1)
    low, high = np.floor(position), np.ceil(position)
    value_low = np.searchsorted(cumulative, low, side='right')
    value_high = np.searchsorted(cumulative, high, side='right')
    out.append(value_low + (value_high - value_low) * (position - low))
  return np.array(out, np.float64)


def image_stats(frames: np.ndarray) -> Stats:
  """Per-channel statistics of ``[T, H, W, C]`` uint8 frames, in [0, 1].

  Example:
    >>> frames = np.zeros((2, 4, 4, 3), np.uint8); frames[1] = 255
    >>> s = image_stats(frames)
    >>> s['mean'].shape, s['mean'][:, 0, 0].tolist(), s['count'].tolist()
    ((3, 1, 1), [0.5, 0.5, 0.5], [2])
  """
  sampled = _downsample(np.asarray(frames)[sample_indices(len(frames))])
  channels = sampled.shape[-1]
  pixels = sampled.reshape(-1, channels)
  counts = np.stack([np.bincount(pixels[:, c], minlength=256)
                     for c in range(channels)])
  present = counts > 0
  levels = np.arange(256, dtype=np.float64)
  total = counts.sum(axis=1)
  mean = counts @ levels / total
  variance = counts @ levels ** 2 / total - mean ** 2
  stats = {
      'min': present.argmax(axis=1).astype(np.float64),
      'max': 255 - present[:, ::-1].argmax(axis=1).astype(np.float64),
      'mean': mean,
      'std': np.sqrt(np.maximum(0.0, variance)),
  }
  stats = {k: v.reshape(channels, 1, 1) / 255.0 for k, v in stats.items()}
  stats['count'] = np.array([len(sampled)])
  quantiles = np.stack([_histogram_quantiles(c) for c in counts])  # [C, Q]
  for index, key in enumerate(QUANTILE_KEYS):
    stats[key] = quantiles[:, index].reshape(channels, 1, 1) / 255.0
  return {key: stats[key] for key in STAT_KEYS}


class Aggregate:
  """Dataset statistics from episode statistics, added one episode at a time.

  Keeps count-weighted sums, so memory does not grow with the dataset.

  Example:
    >>> s = numeric_stats(np.array([1., 2., 3., 4.], np.float32))
    >>> s['min'], s['mean'], s['count'], s['q50']
    (array([1.], dtype=float32), array([2.5]), array([4]), array([2.5]))
    >>> total = Aggregate()
    >>> total.add({'x': s}); total.add({'x': numeric_stats(np.array([5.]))})
    >>> float(total.result()['x']['mean'][0]), int(total.result()['x']['count'][0])
    (3.0, 5)
  """

  def __init__(self):
    self._sums: Dict[str, Dict[str, Any]] = {}

  def add(self, episode: Dict[str, Stats]) -> None:
    """Adds one episode's ``{feature: stats}``."""
    for name, stats in episode.items():
      weight = float(stats['count'][0])
      mean = stats['mean'].astype(np.float64)
      square = stats['std'].astype(np.float64) ** 2 + mean ** 2
      sums = self._sums.get(name)
      if sums is None:
        self._sums[name] = {
            'min': stats['min'], 'max': stats['max'], 'count': stats['count'],
            'mean': weight * mean, 'square': weight * square,
            **{q: weight * stats[q] for q in QUANTILE_KEYS}}
        continue
      sums['min'] = np.minimum(sums['min'], stats['min'])
      sums['max'] = np.maximum(sums['max'], stats['max'])
      sums['count'] = sums['count'] + stats['count']
      sums['mean'] = sums['mean'] + weight * mean
      sums['square'] = sums['square'] + weight * square
      for q in QUANTILE_KEYS:
        sums[q] = sums[q] + weight * stats[q]

  def result(self) -> Dict[str, Stats]:
    """``{feature: stats}`` of everything added."""
    out = {}
    for name, sums in self._sums.items():
      total = float(sums['count'][0])
      mean = sums['mean'] / total
      out[name] = {
          'min': sums['min'], 'max': sums['max'], 'mean': mean,
          'std': np.sqrt(np.maximum(0.0, sums['square'] / total - mean ** 2)),
          'count': sums['count'],
          **{q: sums[q] / total for q in QUANTILE_KEYS}}
    return out


def to_json(stats: Dict[str, Stats]) -> Dict[str, Dict[str, Any]]:
  """Stats as JSON-ready nested lists (``meta/stats.json``)."""
  return {name: {k: np.asarray(v).tolist() for k, v in feature.items()}
          for name, feature in stats.items()}
