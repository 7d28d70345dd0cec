"""rlds_lite.progress: bars on a terminal only, ending on their real count."""

import io

import numpy as np
import pytest

from rlds_lite import progress
from rlds_lite.tfds import builder as builder_lib


class _Terminal(io.StringIO):
  """A stderr that says it is a terminal."""

  def isatty(self):
    return True


@pytest.mark.parametrize('option, on_terminal, in_a_pipe', [
    (None, True, False), (True, True, True), (False, False, False)],
                         ids=['default', 'forced-on', 'off'])
def test_shown(monkeypatch, option, on_terminal, in_a_pipe):
  monkeypatch.setattr('sys.stderr', _Terminal())
  assert progress.shown(option) == on_terminal
  monkeypatch.setattr('sys.stderr', io.StringIO())
  assert progress.shown(option) == in_a_pipe


def test_a_bar_ends_on_its_real_count(monkeypatch):
  terminal = _Terminal()
  monkeypatch.setattr('sys.stderr', terminal)
  with progress.bar(desc='work', unit=' episodes', mininterval=60) as bar:
    bar.update(3)  # Within mininterval: not drawn until close.
  assert terminal.getvalue().rstrip().split('\r')[-1].startswith(
      'work: 3 episodes')


def _toy_builder(data_dir, count):
  def episodes(split):
    del split
    for _ in range(count):
      yield {'steps': {'observation': np.arange(3, dtype=np.float32),
                       'is_terminal': [False, False, True]}}

  class ToyBar(builder_lib.RLDSBuilder, skip_registration=True):
    RLDS_CONFIG = builder_lib.RLDSConfig(
        step_features={'observation': np.float32}, episodes_fn=episodes)
  return ToyBar(data_dir=data_dir)


def test_builder_bar_shows_the_episodes_written(tmp_path, monkeypatch,
                                                capsys):
  # It showed "0 episodes": drawn at the start, its one update came within
  # mininterval (1 s) so it was not redrawn, and leave=False erased it.
  terminal = _Terminal()
  monkeypatch.setattr('sys.stderr', terminal)
  _toy_builder(str(tmp_path / 'a'), 5).download_and_prepare()
  last = terminal.getvalue().rstrip().split('\r')[-1]
  assert last.startswith('Writing toy_bar train: 5 episodes'), last
  capsys.readouterr()


def test_builder_bar_is_hidden_off_a_terminal(tmp_path, monkeypatch, capsys):
  pipe = io.StringIO()
  monkeypatch.setattr('sys.stderr', pipe)
  _toy_builder(str(tmp_path / 'b'), 2).download_and_prepare()
  assert 'Writing' not in pipe.getvalue()
  capsys.readouterr()
