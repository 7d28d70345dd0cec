"""plot_stats: one titled, labelled histogram panel per statistic."""

from rlds_lite import stats
from rlds_lite.stats import plot as plot_lib
import stats_testing

E = stats_testing.episode


def test_panels_titles_and_labels(tmp_path):
  episodes = [E(3, True, 0), E(4, False, 1)]
  result = stats.compute(stats_testing.to_dataset(episodes), progress=False)
  fig = plot_lib.stats_figure(result)
  assert fig.get_suptitle() == (
      '2 episodes, 7 steps (1 terminated, 1 truncated)')
  axes = fig.axes
  assert [a.get_title() for a in axes] == [
      'episode return (n=2)', 'episode length (n=2)', 'action (n=5)',
      'discount (n=5)', 'observation (n=7)', 'reward (n=5)']
  assert [a.get_xlabel() for a in axes] == [
      'sum of valid rewards', 'steps', 'value', 'value', 'value', 'value']
  assert {a.get_ylabel() for a in axes} == {'count'}
  legend = axes[4].get_legend()  # One line per observation dimension.
  assert [t.get_text() for t in legend.get_texts()] == ['[0]', '[1]', '[2]',
                                                        '[3]']
  assert all(a.patches for a in axes)  # No empty panel.
  path = stats.plot_stats(result, tmp_path / 'sub' / 'stats.png')
  with open(path, 'rb') as f:
    assert f.read(8) == b'\x89PNG\r\n\x1a\n'
