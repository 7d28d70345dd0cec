"""Plots of dataset statistics, written to PNG (matplotlib, no display).

`plot_stats` draws small multiples from the statistics' quantile sketches (no
second pass over the data): returns and lengths, then one panel per
dimension, wide fields grouped, discrete fields as bar charts. What a panel
shows and when one is not drawn (`PlotWarning`): docs/stats.md.

Example:
  >>> import tempfile
  >>> from rlds_lite import stats, synthetic
  >>> s = stats.compute(synthetic.episodes(num_episodes=5), progress=False)
  >>> path = plot_stats(s, tempfile.mkdtemp() + '/stats.png')
  >>> open(path, 'rb').read(4)
  b'\\x89PNG'
"""

import dataclasses
import math
import os
import textwrap
from typing import List, Optional, Tuple, Union
import warnings

import numpy as np

from rlds_lite.stats import types

MAX_BARS = 24
"""Integer fields with at most this many distinct values are bar charts."""

_COLUMNS = 4
_COLOR = '#1f77b4'
_RANGES_KEY = '(bar p01-p99, line min-max, dot median)'


class PlotWarning(UserWarning):
  """A panel of `plot_stats` could not be drawn (the others were)."""


@dataclasses.dataclass(frozen=True)
class Panel:
  """One panel: ``dims`` of ``field`` (one: a distribution; more: ranges)."""
  title: str
  xlabel: str
  field: types.FieldStats
  dims: Tuple[int, ...]

  @property
  def kind(self) -> str:
    """``'bars'`` (counts per value), ``'histogram'`` or ``'ranges'``."""
    if len(self.dims) > 1:
      return 'ranges'
    return 'bars' if _distinct_values(self.field, self.dims[0]) else (
        'histogram')


def _is_discrete(field: types.FieldStats) -> bool:
  dtype = np.dtype(field.dtype) if field.dtype else np.dtype('float64')
  return dtype == np.bool_ or np.issubdtype(dtype, np.integer)


def _distinct_values(field: types.FieldStats, dim: int
                     ) -> Optional[Tuple[np.ndarray, np.ndarray]]:
  """``(values, counts)`` of a discrete dimension with few values, or None."""
  if not _is_discrete(field):
    return None
  values, weights = _finite_samples(field, dim)
  if not values.shape[0]:
    return None
  unique, inverse = np.unique(values, return_inverse=True)
  if len(unique) > MAX_BARS:
    return None
  return unique, np.bincount(inverse, weights=weights)


def _finite_samples(field: types.FieldStats, dim: int
                    ) -> Tuple[np.ndarray, np.ndarray]:
  """The sketch's finite values of dimension ``dim`` and their weights."""
  values, weights = field.sketch.samples()
  column = values[:, dim]
  finite = np.isfinite(column)
  return column[finite], weights[finite]


def _left_out(panel: 'Panel') -> str:
  """``'2 NaN, 1 inf'``: the panel's values that are not drawn ('' if none)."""
  nans = int(panel.field.nan_count.reshape(-1)[list(panel.dims)].sum())
  infs = int(panel.field.inf_count.reshape(-1)[list(panel.dims)].sum())
  return ', '.join(f'{n} {what}' for n, what in ((nans, 'NaN'), (infs, 'inf'))
                   if n)


def _index_name(shape: Tuple[int, ...], flat: int) -> str:
  """``'[i]'`` or ``'[i, j]'`` of flat index ``flat`` in ``shape``."""
  return '[' + ', '.join(str(int(i)) for i in np.unravel_index(flat, shape)
                         ) + ']'


def panels(stats: types.DatasetStats, *, max_fields: int = 12,
           max_dims: int = 16, group_size: int = 64) -> List[Panel]:
  """The panels `stats_figure` draws, in order.

  Args:
    stats: the statistics.
    max_fields: step fields to plot at most (in path order).
    max_dims: a field with at most this many dimensions gets one panel per
      dimension; a larger one is grouped.
    group_size: dimensions per grouped panel.

  Example:
    >>> from rlds_lite import stats, synthetic
    >>> s = stats.compute(synthetic.episodes(num_episodes=3), progress=False)
    >>> [p.title for p in panels(s)][:4]
    ['episode return', 'episode length', 'action[0]', 'action[1]']
  """
  out = []
  if stats.episode_return is not None:
    out.append(Panel('episode return', 'sum of valid rewards',
                     stats.episode_return, (0,)))
  out.append(Panel('episode length', 'steps', stats.episode_length, (0,)))
  for path, field in list(stats.fields.items())[:max_fields]:
    size = math.prod(field.shape)
    if not field.shape:
      out.append(Panel(path, 'value', field, (0,)))
    elif size <= max_dims:
      out.extend(Panel(f'{path}{_index_name(field.shape, d)}', 'value',
                       field, (d,)) for d in range(size))
    else:  # Near-equal groups of at most group_size dimensions.
      groups = np.array_split(np.arange(size), math.ceil(size / group_size))
      out.extend(Panel(f'{path}[{g[0]}:{g[-1] + 1}]',
                       f'dimension of {size} {_RANGES_KEY}', field,
                       tuple(int(d) for d in g)) for g in groups)
  return out


def _no_values(axes, text: str = 'no values') -> None:
  axes.text(0.5, 0.5, textwrap.fill(text, 32), ha='center', va='center',
            transform=axes.transAxes, fontsize=8)


def _no_finite_values(axes, panel: Panel) -> None:
  left_out = _left_out(panel)
  _no_values(axes, f'no finite values ({left_out})' if left_out else
             'no values')


def _draw_bars(axes, panel: Panel) -> None:
  """Counts per value, each bar at its value (a numeric axis)."""
  from matplotlib import ticker  # pylint: disable=g-import-not-at-top
  values, counts = _distinct_values(panel.field, panel.dims[0])
  gap = float(np.diff(values).min()) if len(values) > 1 else 1.0
  axes.bar(values, counts, color=_COLOR, width=0.7 * gap)
  axes.set_xlim(values[0] - gap, values[-1] + gap)
  if np.dtype(panel.field.dtype) == np.bool_:
    axes.set_xticks(values, [str(bool(v)) for v in values])
  elif (values[-1] - values[0]) / gap <= 12:  # Every value fits as a tick.
    axes.set_xticks(values, [str(int(v)) for v in values])
  else:
    axes.xaxis.set_major_locator(ticker.MaxNLocator(nbins=6, integer=True))
  axes.set_ylabel('count', fontsize=7)


def _draw_histogram(axes, panel: Panel, bins: int) -> None:
  values, weights = _finite_samples(panel.field, panel.dims[0])
  if not values.shape[0]:
    _no_finite_values(axes, panel)
    return
  axes.hist(values, bins=bins, weights=weights, color=_COLOR, alpha=0.85)
  axes.set_ylabel('count', fontsize=7)


def _draw_ranges(axes, panel: Panel) -> None:
  field, dims = panel.field, list(panel.dims)
  flat = lambda a: np.asarray(a, np.float64).reshape(-1)[dims]
  low, high = flat(field.min), flat(field.max)
  p01, p50, p99 = flat(field.p01), flat(field.p50), flat(field.p99)
  drawn = np.isfinite(low) & np.isfinite(high)  # Dimensions with values.
  if not drawn.any():
    _no_finite_values(axes, panel)
    return
  x = np.asarray(dims)[drawn]
  low, high, p01, p50, p99 = (a[drawn] for a in (low, high, p01, p50, p99))
  width = float(np.clip(100 / len(dims), 1, 4))  # Points; thinner when many.
  axes.vlines(x, low, high, color='0.55', linewidth=0.7)
  axes.vlines(x, p01, p99, color=_COLOR, linewidth=width)
  axes.plot(x, p50, 'o', color='black', markersize=min(width, 2.5))
  axes.set_ylabel('value', fontsize=7)


def _draw_panel(axes, panel: Panel, bins: int) -> None:
  """Draws one panel; one that fails says why (panel and `PlotWarning`)."""
  try:
    with np.errstate(all='ignore'), warnings.catch_warnings():
      warnings.simplefilter('ignore', RuntimeWarning)  # NumPy's, in Matplotlib.
      kind = panel.kind
      if kind == 'bars':
        _draw_bars(axes, panel)
      elif kind == 'histogram':
        _draw_histogram(axes, panel, bins)
      else:
        _draw_ranges(axes, panel)
  except (ValueError, OverflowError, MemoryError) as e:
    reason = ' '.join(str(e).split()) or type(e).__name__
    title = axes.get_title()
    axes.cla()
    axes.set_title(title, fontsize=9)
    _no_values(axes, f'not drawn: {reason}')
    warnings.warn(f'plot_stats: panel {panel.title!r} not drawn: {reason}',
                  PlotWarning, stacklevel=4)


def stats_figure(stats: types.DatasetStats, *, max_fields: int = 12,
                 max_dims: int = 16, group_size: int = 64, bins: int = 40):
  """The matplotlib ``Figure`` that `plot_stats` writes (see `panels`).

  Example:
    >>> from rlds_lite import stats, synthetic
    >>> s = stats.compute(synthetic.episodes(num_episodes=3), progress=False)
    >>> [a.get_title() for a in stats_figure(s).axes][:3]
    ['episode return (n=3)', 'episode length (n=3)', 'action[0] (n=...)']
  """
  # matplotlib is imported here: `import rlds_lite.stats` stays light.
  # pylint: disable=g-import-not-at-top
  from matplotlib import figure as figure_lib
  from matplotlib import ticker
  from matplotlib.backends import backend_agg
  chosen = panels(stats, max_fields=max_fields, max_dims=max_dims,
                  group_size=group_size)
  columns = min(_COLUMNS, len(chosen))
  rows = (len(chosen) + columns - 1) // columns
  fig = figure_lib.Figure(figsize=(3.4 * columns, 2.5 * rows + 0.4))
  backend_agg.FigureCanvasAgg(fig)
  for i, panel in enumerate(chosen):
    axes = fig.add_subplot(rows, columns, i + 1)
    left_out = _left_out(panel)
    axes.set_title(f'{panel.title} (n={panel.field.count})' + (
        f'\n{left_out} not drawn' if left_out else ''), fontsize=9)
    axes.set_xlabel(panel.xlabel, fontsize=7 if len(panel.xlabel) < 40 else 6)
    axes.tick_params(labelsize=7)
    axes.xaxis.set_major_locator(ticker.MaxNLocator(nbins=6))
    _draw_panel(axes, panel, bins)
  fig.suptitle(f'{stats.num_episodes} episodes, {stats.num_steps} steps '
               f'({stats.num_terminated} terminated, {stats.num_truncated} '
               'truncated)', fontsize=10)
  fig.tight_layout()
  return fig


def plot_stats(stats: types.DatasetStats, path: Union[str, os.PathLike],
               *, max_fields: int = 12, max_dims: int = 16,
               group_size: int = 64, bins: int = 40) -> str:
  """Writes a PNG: episode returns and lengths, then each field (`panels`).

  Args:
    stats: the statistics.
    path: the PNG file to write (its directory is created).
    max_fields: how many step fields to plot at most.
    max_dims: fields with at most this many dimensions get one panel per
      dimension; larger ones are grouped (per-dimension ranges).
    group_size: dimensions per grouped panel.
    bins: histogram bins.

  Returns:
    The path written.
  """
  fig = stats_figure(stats, max_fields=max_fields, max_dims=max_dims,
                     group_size=group_size, bins=bins)
  path = os.fspath(path)
  if os.path.dirname(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
  fig.savefig(path, format='png', dpi=80)
  return path
