"""rlds_lite.checks.sources: what a check reads, Episodes of an opened split."""

import pytest
import tensorflow as tf

import rlds_lite
from rlds_lite import synthetic
from rlds_lite.checks import sources


@pytest.fixture(name='path', scope='module')
def _path():
  return synthetic.dataset(3, seed=0)


def test_a_path_is_opened_once_and_its_source_kept(path):
  checked = sources.open_source(path, 'train')
  assert (checked.kind, checked.total, checked.split) == ('dense', 3, 'train')
  assert sources.open_source(path, 'train[:2]').total is None  # A slice.
  assert isinstance(checked.opened, rlds_lite.source.Source)
  assert (checked.label, checked.builder) == (path, checked.opened.builder)
  opened = rlds_lite.open(path)
  assert sources.open_source(opened).opened is opened  # Not reopened.


def test_datasets_and_python_episodes_have_no_source():
  dataset = sources.open_source(synthetic.episodes(num_episodes=2))
  python = sources.open_source(synthetic.episode_arrays(num_episodes=2))
  assert [(c.kind, c.total, c.label, c.opened, c.builder, c.split)
          for c in (dataset, python)] == [
              ('nested', 2, '<dataset>', None, None, None),
              ('python', 2, '<episodes>', None, None, None)]
  assert sources.Episodes([], sources.PYTHON, numbers=[4, 7]).number(1) == 7


def test_the_source_record_of_before_still_works_and_warns(path):
  builder = rlds_lite.open(path).builder
  with pytest.warns(DeprecationWarning, match='checks.sources.Source is now '
                    r'checks.sources.Episodes'):
    make = sources.Source
  old = make('mine', tf.data.Dataset.range(0), sources.DENSE, 3, builder,
             'train')
  assert (old.label, old.builder, old.split, old.total) == ('mine', builder,
                                                            'train', 3)
  assert make('x', [], sources.PYTHON).label == '<episodes>'
