"""Plots of dataset statistics, written to PNG (matplotlib, no display).

The histograms are drawn from the quantile sketches kept in the statistics
(weighted samples), so a plot needs no second pass over the data and works on
merged or cached statistics.

Example:
  >>> import tempfile
  >>> from rlds_lite import stats, synthetic
  >>> s = stats.compute(synthetic.episodes(num_episodes=5), progress=False)
  >>> path = plot_stats(s, tempfile.mkdtemp() + '/stats.png')
  >>> open(path, 'rb').read(4)
  b'\\x89PNG'
"""

import os
from typing import List, Tuple, Union

import numpy as np

from rlds_lite.stats import types


def _histogram(axes, field: types.FieldStats, title: str, xlabel: str,
               max_dims: int, bins: int) -> None:
  values, weights = field.sketch.samples()
  axes.set_title(f'{title} (n={field.count})', fontsize=9)
  axes.set_xlabel(xlabel, fontsize=7)
  axes.set_ylabel('count', fontsize=7)
  if not values.shape[0]:
    axes.text(0.5, 0.5, 'no values', ha='center', va='center',
              transform=axes.transAxes)
    return
  dims = min(values.shape[1], max_dims)
  edges = np.histogram_bin_edges(values[:, :dims], bins)  # Shared by dims.
  for d in range(dims):
    label = f'[{d}]' if field.shape else None
    axes.hist(values[:, d], bins=edges, weights=weights, histtype='step',
              label=label)
  if field.shape and dims > 1:
    axes.legend(fontsize=6, ncol=2)
  axes.tick_params(labelsize=7)


def stats_figure(stats: types.DatasetStats, *, max_fields: int = 12,
                 max_dims: int = 8, bins: int = 40):
  """The matplotlib ``Figure`` that `plot_stats` writes (one panel each).

  Example:
    >>> from rlds_lite import stats, synthetic
    >>> s = stats.compute(synthetic.episodes(num_episodes=3), progress=False)
    >>> [a.get_title() for a in stats_figure(s).axes][:3]
    ['episode return (n=3)', 'episode length (n=3)', 'action (n=...)']
  """
  # matplotlib is imported here: `import rlds_lite.stats` stays light.
  # pylint: disable=g-import-not-at-top
  from matplotlib import figure as figure_lib
  from matplotlib.backends import backend_agg
  panels: List[Tuple[str, str, types.FieldStats]] = []
  if stats.episode_return is not None:
    panels.append(('episode return', 'sum of valid rewards',
                   stats.episode_return))
  panels.append(('episode length', 'steps', stats.episode_length))
  panels.extend((path, 'value', field) for path, field in
                list(stats.fields.items())[:max_fields])
  columns = 3
  rows = (len(panels) + columns - 1) // columns
  fig = figure_lib.Figure(figsize=(4 * columns, 2.8 * rows))
  backend_agg.FigureCanvasAgg(fig)
  for i, (title, xlabel, field) in enumerate(panels):
    _histogram(fig.add_subplot(rows, columns, i + 1), field, title, xlabel,
               max_dims, bins)
  fig.suptitle(f'{stats.num_episodes} episodes, {stats.num_steps} steps '
               f'({stats.num_terminated} terminated, {stats.num_truncated} '
               'truncated)', fontsize=10)
  fig.tight_layout()
  return fig


def plot_stats(stats: types.DatasetStats, path: Union[str, os.PathLike],
               *, max_fields: int = 12, max_dims: int = 8,
               bins: int = 40) -> str:
  """Writes a PNG: episode returns and lengths, then each field per dimension.

  Args:
    stats: the statistics.
    path: the PNG file to write (its directory is created).
    max_fields: how many step fields to plot at most.
    max_dims: how many dimensions per field to draw.
    bins: histogram bins.

  Returns:
    The path written.
  """
  fig = stats_figure(stats, max_fields=max_fields, max_dims=max_dims,
                     bins=bins)
  path = os.fspath(path)
  if os.path.dirname(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
  fig.savefig(path, format='png', dpi=80)
  return path
