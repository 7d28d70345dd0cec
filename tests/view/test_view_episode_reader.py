"""rlds_lite.view.episode_reader: one episode by index equals the full read."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import rlds_lite
from rlds_lite import loading
from rlds_lite.view import dataset_view
from rlds_lite.view import episode_reader
from rlds_lite.view import table_query
import view_testing


@pytest.fixture(name='dataset', scope='module')
def _dataset(tmp_path_factory):
  return view_testing.write_camera_dataset(
      str(tmp_path_factory.mktemp('reader')), num_episodes=5, max_length=6,
      size=8, max_episodes_per_file=2)


def test_each_episode_equals_dense_load(dataset):
  reader = episode_reader.EpisodeReader(rlds_lite.open(dataset).builder)
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
  reader = episode_reader.EpisodeReader(rlds_lite.open(dataset).builder)
  assert reader.num_episodes('train') == 5
  with pytest.raises(IndexError, match="episode 5 is out of range: split "
                     "'train' has 5 episodes"):
    reader.read('train', 5)
  with pytest.raises(IndexError, match='out of range'):
    reader.read('train', -1)
  with pytest.raises(KeyError, match="no split 'test'"):
    reader.read('test', 0)


def test_table_rows_are_the_episodes_read_even_with_interleaved_files(
    tmp_path):
  # A dataset written without disable_shuffling: TFDS interleaves its files
  # in a full pass by default (blocks of 16 episodes from 16 files at a
  # time); the table's row i (the catalog's index i) must still be the
  # episode the page reads, split[i:i+1].
  dataset = view_testing.write_camera_dataset(
      str(tmp_path), num_episodes=40, max_length=3, size=4,
      max_episodes_per_file=20)
  info_path = os.path.join(dataset, 'dataset_info.json')
  with open(info_path) as f:
    info = json.load(f)
  info['disableShuffling'] = False
  with open(info_path, 'w') as f:
    json.dump(info, f)
  builder = rlds_lite.open(dataset).builder
  assert not builder.info.disable_shuffling
  default_order = [int(e['episode_id']) for e in builder.as_dataset(
      split='train', decoders={'steps': tfds.decode.SkipDecoding()})]
  assert default_order != sorted(default_order)  # Interleaved by default.
  view = dataset_view.DatasetView(dataset, cache=False)
  rows = table_query.query(view.table('train'),
                           table_query.Query(limit=1000))['rows']
  assert [r['metadata']['episode_id'] for r in rows] == list(range(100, 140))
  # Rows around the files' 16-episode interleaving blocks.
  picked = [0, 15, 16, 19, 20, 31, 32, 39]
  assert [default_order[i] for i in picked] != [100 + i for i in picked]
  assert [int(view.episode('train', i)['episode_id']) for i in picked] == [
      100 + i for i in picked]
