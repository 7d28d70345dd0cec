"""rlds_lite.view.episode_table: one streaming pass, against a NumPy reference."""

import json
import os

import numpy as np
import pytest
import tensorflow_datasets as tfds

from rlds_lite.view import episode_reader
from rlds_lite.view import episode_table
from rlds_lite import loading
import view_testing


@pytest.fixture(name='dataset', scope='module')
def _dataset(tmp_path_factory):
  root = tmp_path_factory.mktemp('episode_table')
  return view_testing.write_camera_dataset(str(root), num_episodes=7,
                                           max_length=12, size=8)


def test_columns_match_numpy_reference(dataset):
  table = episode_table.compute(dataset, 'train', cache=False, progress=False)
  expected = view_testing.expected_rows(
      view_testing.camera_episodes(num_episodes=7, max_length=12, size=8))
  assert table.num_episodes == 7
  assert table.length.tolist() == [r['length'] for r in expected]
  np.testing.assert_allclose(table.episode_return,
                             [r['return'] for r in expected], rtol=1e-6)
  assert table.terminated.tolist() == [r['terminated'] for r in expected]
  assert table.truncated.tolist() == [not r['terminated'] for r in expected]
  assert table.instructions == [r['instructions'] for r in expected]
  assert table.metadata == {'episode_id': [r['episode_id'] for r in expected]}


def test_cached_next_to_the_dataset_and_read_back(dataset, monkeypatch):
  table = episode_table.compute(dataset, 'train', progress=False)
  cache_dir = os.path.join(dataset, episode_table.CACHE_SUBDIR)
  files = os.listdir(cache_dir)
  assert len(files) == 1 and files[0].startswith('episode_table-')
  with open(os.path.join(cache_dir, files[0])) as f:
    assert json.load(f)['length'] == table.length.tolist()
  def no_pass(*args):
    raise AssertionError('the cached table should have been read')
  monkeypatch.setattr(episode_table, '_pass', no_pass)
  assert episode_table.compute(dataset, 'train', progress=False) == table


def test_unwritable_dataset_dir_caches_in_fallback_dir(tmp_path, monkeypatch):
  dataset = view_testing.write_camera_dataset(str(tmp_path / 'data'),
                                              num_episodes=2, size=8)
  # A file where the cache folder would go: the cache cannot be written
  # there (as in a read-only directory, even for root).
  with open(os.path.join(dataset, episode_table.CACHE_SUBDIR), 'w') as f:
    f.write('not a folder')
  fallback = tmp_path / 'fallback'
  monkeypatch.setenv('RLDS_LITE_CACHE_DIR', str(fallback))
  table = episode_table.compute(dataset, 'train', progress=False)
  assert table.num_episodes == 2
  [cached] = list(fallback.iterdir())
  assert cached.name.startswith('episode_table-')
  assert episode_table.compute(dataset, 'train', progress=False) == table


def test_no_reward_no_language(tmp_path):
  features = {'steps': {'observation': np.float32}}
  from rlds_lite.tfds import episode_writer  # pylint: disable=g-import-not-at-top
  with episode_writer.EpisodeWriter(str(tmp_path), 'bare', features) as writer:
    writer.add_episode({'steps': {'observation': [0.0, 1.0, 2.0],
                                  'is_terminal': [False, False, True]}})
    writer.add_episode({'steps': {'observation': [5.0],
                                  'is_terminal': [False]}})
  table = episode_table.compute(writer.path, 'train', cache=False,
                                progress=False)
  assert table.length.tolist() == [3, 1]
  assert table.episode_return is None
  assert table.terminated.tolist() == [True, False]
  assert table.instructions == [[], []]
  assert table.to_dict()['return'] is None


def test_rows_follow_slicing_order_when_files_are_interleaved(tmp_path):
  # A dataset written without disable_shuffling: TFDS interleaves its files
  # in a full pass by default (blocks of 16 episodes from 16 files at a
  # time); row i must still be split[i:i+1].
  dataset = view_testing.write_camera_dataset(
      str(tmp_path), num_episodes=40, max_length=3, size=4,
      max_episodes_per_file=20)
  info_path = os.path.join(dataset, 'dataset_info.json')
  with open(info_path) as f:
    info = json.load(f)
  info['disableShuffling'] = False
  with open(info_path, 'w') as f:
    json.dump(info, f)
  builder, _ = loading.rlds_builder(dataset)
  assert not builder.info.disable_shuffling
  default_order = [int(e['episode_id']) for e in builder.as_dataset(
      split='train', decoders={'steps': tfds.decode.SkipDecoding()})]
  assert default_order != sorted(default_order)  # Interleaved by default.
  table = episode_table.compute(dataset, 'train', cache=False, progress=False)
  reader = episode_reader.EpisodeReader(builder)
  # Rows around the files' 16-episode interleaving blocks.
  rows = [0, 15, 16, 19, 20, 31, 32, 39]
  assert [default_order[i] for i in rows] != [100 + i for i in rows]
  assert table.metadata['episode_id'] == list(range(100, 140))
  assert [int(reader.read('train', i)['episode_id']) for i in rows] == [
      100 + i for i in rows]


def test_unknown_split_and_missing_dataset(dataset, tmp_path):
  with pytest.raises(ValueError, match="has no split 'test'"):
    episode_table.compute(dataset, 'test')
  with pytest.raises(FileNotFoundError, match='does not exist'):
    episode_table.compute(str(tmp_path / 'missing'), 'train')


def test_json_round_trip_keeps_nan_as_none():
  table = episode_table.EpisodeTable(
      'train', np.array([2, 3]), np.array([np.nan, 1.5]),
      np.array([False, True]), [['a'], []], {'episode_id': [4, 5]})
  data = table.to_dict()
  assert data['return'] == [None, 1.5]
  back = episode_table.EpisodeTable.from_dict(json.loads(json.dumps(data)))
  assert back == table and np.isnan(back.episode_return[0])
  with pytest.raises(ValueError, match='format_version'):
    episode_table.EpisodeTable.from_dict({**data, 'format_version': 0})


def test_empty_and_vector_reward_episodes(tmp_path):
  from rlds_lite.tfds import episode_writer  # pylint: disable=g-import-not-at-top
  features = {'steps': {'reward': episode_writer.tfds.features.Tensor(
      shape=(2,), dtype=np.float32)}}
  with episode_writer.EpisodeWriter(str(tmp_path), 'vec', features) as writer:
    writer.add_episode({'steps': {'reward': np.zeros((0, 2), np.float32),
                                  'is_terminal': np.zeros(0, bool)}})
    writer.add_episode({'steps': {'reward': [[1.0, 2.0], [3.0, 4.0],
                                             [9.0, 9.0]],
                                  'is_terminal': [False, False, True]}})
  table = episode_table.compute(writer.path, 'train', cache=False,
                                progress=False)
  assert table.length.tolist() == [0, 3]
  # Summed over the reward's elements, the last step's left out.
  assert table.episode_return.tolist() == [0.0, 10.0]
  assert table.terminated.tolist() == [False, True]
