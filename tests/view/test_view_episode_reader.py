"""rlds_lite.view.episode_reader: one episode by index equals the full read."""

import numpy as np
import pytest
import tensorflow as tf

import rlds_lite
from rlds_lite import loading
from rlds_lite.view import episode_reader
import view_testing


@pytest.fixture(name='dataset', scope='module')
def _dataset(tmp_path_factory):
  return view_testing.write_camera_dataset(
      str(tmp_path_factory.mktemp('reader')), num_episodes=5, max_length=6,
      size=8, max_episodes_per_file=2)


def test_each_episode_equals_dense_load(dataset):
  reader = episode_reader.EpisodeReader(loading.rlds_builder(dataset)[0])
  for index, expected in enumerate(rlds_lite.load(dataset, dense=True)):
    episode = reader.read('train', index)
    expected = tf.nest.map_structure(lambda t: t.numpy(), expected)
    assert sorted(episode) == sorted(expected)
    flat, flat_expected = tf.nest.flatten(episode), tf.nest.flatten(expected)
    for value, want in zip(flat, flat_expected):
      assert value.dtype == want.dtype
      np.testing.assert_array_equal(value, want)
  assert episode['steps']['observation']['front'].dtype == np.uint8
  assert episode['steps']['language_instruction'].dtype == object


def test_out_of_range_and_unknown_split(dataset):
  reader = episode_reader.EpisodeReader(loading.rlds_builder(dataset)[0])
  assert reader.num_episodes('train') == 5
  with pytest.raises(IndexError, match="episode 5 is out of range: split "
                     "'train' has 5 episodes"):
    reader.read('train', 5)
  with pytest.raises(IndexError, match='out of range'):
    reader.read('train', -1)
  with pytest.raises(KeyError, match="no split 'test'"):
    reader.read('test', 0)
