"""plot_stats: small multiples, one titled panel per dimension; bars for
discrete values; wide fields grouped into per-dimension ranges."""

import dataclasses
import warnings

import numpy as np
import pytest

from rlds_lite import stats
from rlds_lite.stats import plot as plot_lib
from rlds_lite.stats import types
import stats_testing

E = stats_testing.episode


def _stats(*fields, num_episodes=2):
  """DatasetStats with the given FieldStats (lengths 3 and 4)."""
  return types.DatasetStats(
      num_episodes=num_episodes, num_steps=7, num_terminated=1,
      num_truncated=1,
      episode_length=types.FieldStats.from_values('length', [3, 4], 'int64'),
      episode_return=None, fields={f.path: f for f in fields})


def test_one_panel_per_dimension_titled_with_the_field(tmp_path):
  episodes = [E(3, True, 0), E(4, False, 1)]
  result = stats.compute(stats_testing.to_dataset(episodes), progress=False)
  fig = plot_lib.stats_figure(result)
  assert fig.get_suptitle() == (
      '2 episodes, 7 steps (1 terminated, 1 truncated)')
  axes = fig.axes
  assert [a.get_title() for a in axes] == [
      'episode return (n=2)', 'episode length (n=2)', 'action[0] (n=5)',
      'action[1] (n=5)', 'discount (n=5)', 'observation[0] (n=7)',
      'observation[1] (n=7)', 'observation[2] (n=7)', 'observation[3] (n=7)',
      'reward (n=5)']
  assert [a.get_xlabel() for a in axes] == [
      'sum of valid rewards', 'steps'] + ['value'] * 8
  assert {a.get_ylabel() for a in axes} == {'count'}
  assert all(a.get_legend() is None for a in axes)  # No overlaid dimensions.
  assert [p.kind for p in plot_lib.panels(result)] == [
      'histogram', 'bars'] + ['histogram'] * 8  # Lengths are integers.
  observations = np.concatenate([e['observation'] for e in episodes])
  heights = sum(p.get_height() for p in axes[6].patches)
  assert heights == len(observations)  # All of observation[1], one panel.
  path = stats.plot_stats(result, tmp_path / 'sub' / 'stats.png')
  with open(path, 'rb') as f:
    assert f.read(8) == b'\x89PNG\r\n\x1a\n'


def test_discrete_actions_are_bars_of_counts():
  episodes = [E(30, True, 0, action_shape=(), int_action=True),
              E(20, False, 1, action_shape=(), int_action=True)]
  result = stats.compute(stats_testing.to_dataset(episodes), progress=False)
  panel = {p.title: p for p in plot_lib.panels(result)}['action']
  assert panel.kind == 'bars'
  axes = plot_lib.stats_figure(result).axes[2]
  assert axes.get_title() == 'action (n=48)'
  actions = np.concatenate([e['action'][:-1] for e in episodes])
  values, counts = np.unique(actions, return_counts=True)
  assert [t.get_text() for t in axes.get_xticklabels()] == [
      str(v) for v in values]
  bars = sorted((p.get_x() + p.get_width() / 2, p.get_height())
                for p in axes.patches)
  np.testing.assert_allclose(bars, np.stack([values, counts], -1))


def test_boolean_fields_are_bars_labelled_false_and_true():
  gripper = types.FieldStats.from_values('gripper', [True, False, True],
                                         'bool')
  axes = plot_lib.stats_figure(_stats(gripper)).axes[1]
  assert [t.get_text() for t in axes.get_xticklabels()] == ['False', 'True']
  assert sorted(p.get_height() for p in axes.patches) == [1, 2]


def test_integers_with_many_values_are_histograms():
  many = types.FieldStats.from_values(
      'tick', np.arange(plot_lib.MAX_BARS + 1), 'int64')
  few = types.FieldStats.from_values('mode', np.arange(plot_lib.MAX_BARS),
                                     'int32')
  kinds = {p.title: p.kind for p in plot_lib.panels(_stats(many, few))}
  assert (kinds['tick'], kinds['mode']) == ('histogram', 'bars')


def test_wide_fields_are_grouped_into_per_dimension_ranges():
  rng = np.random.default_rng(0)
  wide = types.FieldStats.from_values('joints', rng.normal(size=(50, 5, 7)))
  narrow = types.FieldStats.from_values('grid', rng.normal(size=(9, 2, 3)))
  chosen = plot_lib.panels(_stats(narrow, wide), max_dims=6, group_size=16)
  assert [p.title for p in chosen] == [
      'episode length', 'grid[0, 0]', 'grid[0, 1]', 'grid[0, 2]',
      'grid[1, 0]', 'grid[1, 1]', 'grid[1, 2]',
      # 35 dimensions in 3 near-equal groups of at most 16.
      'joints[0:12]', 'joints[12:24]', 'joints[24:35]']
  assert [p.kind for p in chosen[-3:]] == ['ranges'] * 3
  fig = plot_lib.stats_figure(_stats(narrow, wide), max_dims=6, group_size=16)
  axes = fig.axes[-1]
  assert axes.get_title() == 'joints[24:35] (n=50)'
  assert axes.get_xlabel() == ('dimension of 35 (bar p01-p99, line min-max, '
                               'dot median)')
  assert axes.get_ylabel() == 'value'
  ranges, bars = axes.collections  # min-max lines, then p01-p99 bars.
  assert len(ranges.get_segments()) == len(bars.get_segments()) == 11
  low, high = ranges.get_segments()[0][:, 1]
  assert (low, high) == (wide.min[3, 3], wide.max[3, 3])  # Dimension 24.
  np.testing.assert_array_equal(axes.lines[0].get_ydata(),
                                wide.p50.reshape(-1)[24:])


def test_at_most_max_fields_fields_are_drawn():
  fields = [types.FieldStats.from_values(f'f{i}', [0.5, 1.5]) for i in range(5)]
  titles = [p.title for p in plot_lib.panels(_stats(*fields), max_fields=2)]
  assert titles == ['episode length', 'f0', 'f1']


def test_a_field_without_values_says_so():
  empty = types.FieldStats.from_values('x', np.zeros((0,)))
  assert [p.kind for p in plot_lib.panels(_stats(empty))] == ['bars',
                                                              'histogram']
  axes = plot_lib.stats_figure(_stats(empty)).axes[1]
  assert [t.get_text() for t in axes.texts] == ['no values']


def test_nonfinite_values_are_left_out_and_titled(tmp_path):
  values = np.array([[1.0, np.nan], [2.0, np.nan], [np.inf, np.nan],
                     [np.nan, -np.inf]])
  field = types.FieldStats.from_values('x', values)
  wide = types.FieldStats.from_values(
      'wide', np.where(np.arange(20) < 3, np.nan, np.ones((5, 20))))
  ret = types.FieldStats.from_values('return', [1.0, np.nan])
  s = dataclasses.replace(_stats(field, wide), episode_return=ret)
  with warnings.catch_warnings():
    warnings.simplefilter('error')  # Neither NumPy's nor a PlotWarning.
    fig = plot_lib.stats_figure(s, max_dims=4)
    path = stats.plot_stats(s, tmp_path / 'nonfinite.png', max_dims=4)
  assert [a.get_title() for a in fig.axes] == [
      'episode return (n=2)\n1 NaN not drawn', 'episode length (n=2)',
      'x[0] (n=4)\n1 NaN, 1 inf not drawn', 'x[1] (n=4)\n3 NaN, 1 inf not drawn',
      'wide[0:20] (n=5)\n15 NaN not drawn']
  assert sum(p.get_height() for p in fig.axes[2].patches) == 2  # 1.0, 2.0.
  assert [t.get_text() for t in fig.axes[3].texts] == [
      'no finite values (3 NaN, 1 inf)']
  assert len(fig.axes[4].collections[0].get_segments()) == 17  # Drawn dims.
  with open(path, 'rb') as f:
    assert f.read(4) == b'\x89PNG'


def test_a_panel_that_cannot_be_drawn_says_so_and_the_others_are(tmp_path):
  huge = types.FieldStats.from_values('huge', [1.7e308, -1.7e308, 0.0])
  fine = types.FieldStats.from_values('fine', [1.0, 2.0])
  with pytest.warns(stats.PlotWarning) as caught:
    fig = plot_lib.stats_figure(_stats(fine, huge))
  assert [str(w.message) for w in caught] == [
      "plot_stats: panel 'huge' not drawn: Too many bins for data range. "
      'Cannot create 40 finite-sized bins.']
  fine_axes, huge_axes = fig.axes[1], fig.axes[2]
  assert huge_axes.get_title() == 'huge (n=3)'
  assert [t.get_text().replace('\n', ' ') for t in huge_axes.texts] == [
      'not drawn: Too many bins for data range. Cannot create 40 '
      'finite-sized bins.']
  assert sum(p.get_height() for p in fine_axes.patches) == 2
