"""EpisodeWriter.add_serialized_episode and DatasetCard.metadata (used to copy episodes)."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import rlds_lite
from rlds_lite.tfds import DatasetCard
from rlds_lite.tfds import EpisodeWriter

FEATURES = {'steps': {'observation': np.float32, 'reward': np.float32},
            'episode_id': np.int64}


def _episode(i):
  return {'steps': {'observation': [float(i), 1.0], 'reward': [1.0, 0.0],
                    'is_terminal': [False, True]}, 'episode_id': i}


def _records(path):
  files = tfds.builder_from_directory(path).info.splits['train'].file_instructions
  return [r.numpy() for f in files for r in tf.data.TFRecordDataset(f.filename)]


def test_serialized_episodes_are_written_as_they_are(tmp_path):
  with EpisodeWriter(str(tmp_path / 'a'), 'toy', FEATURES) as source:
    source.add_episodes(_episode(i) for i in range(3))
  records = _records(source.path)
  with EpisodeWriter(str(tmp_path / 'b'), 'toy', FEATURES,
                     splits=('train', 'test')) as copy:
    copy.add_serialized_episode(records[2], 'train')
    copy.add_serialized_episode(records[0], 'train')
    copy.add_serialized_episode(records[1], 'test')
  assert copy.num_episodes == 3
  assert _records(copy.path) == [records[2], records[0]]
  assert [int(e['episode_id']) for e in rlds_lite.load(copy.path)] == [2, 0]
  with pytest.raises(ValueError, match=r'add_serialized_episode\(\) after '
                     'closed'):
    copy.add_serialized_episode(records[0], 'train')


def test_metadata_is_readable_with_tfds(tmp_path):
  metadata = {'rlds_lite': {'operation': 'filter', 'where': 'length > 2',
                            'runs': [[0, 1, 2]]}}
  with EpisodeWriter(str(tmp_path), 'toy', FEATURES,
                     card=DatasetCard(metadata=metadata)) as writer:
    writer.add_episode(_episode(0))
  assert tfds.builder_from_directory(writer.path).info.metadata == metadata
  with open(os.path.join(writer.path, 'metadata.json')) as f:
    assert json.load(f) == metadata


def test_no_metadata_no_file(tmp_path):
  with EpisodeWriter(str(tmp_path), 'toy', FEATURES) as writer:
    writer.add_episode(_episode(0))
  assert not os.path.exists(os.path.join(writer.path, 'metadata.json'))


def test_metadata_is_refused_when_appending(tmp_path):
  with EpisodeWriter(str(tmp_path), 'toy', FEATURES,
                     card=DatasetCard(metadata={'a': 1})) as writer:
    writer.add_episode(_episode(0))
  with pytest.raises(ValueError, match='DatasetCard.metadata is written with '
                     'a new dataset, not when appending.'):
    EpisodeWriter(str(tmp_path), 'toy', None, if_exists='append',
                  card=DatasetCard(metadata={'a': 2}))
  assert tfds.builder_from_directory(writer.path).info.metadata == {'a': 1}
