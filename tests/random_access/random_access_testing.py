"""Small datasets for the random-access tests (named episode lengths)."""

import json
import os

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

import rlds_lite
from rlds_lite.tfds import EpisodeWriter

LENGTHS = (1, 6, 17, 3, 40, 9)
"""One-step, short, across chunks of 4 and 8, long; every other terminal."""


def vector_episodes(lengths=LENGTHS, offset=0):
  for i, length in enumerate(lengths):
    steps = np.arange(length)
    yield {
        'steps': {
            'observation': np.stack([steps, steps * 2, np.full(length, i)],
                                    -1).astype(np.float32) + offset,
            'action': np.stack([steps, -steps], -1).astype(np.int32),
            'reward': (steps + 1).astype(np.float32) / 4 + i,
            'discount': np.where(steps % 5 == 2, 0.5, 1.0).astype(np.float32),
            'step': steps.astype(np.int32),
            'is_terminal': (steps == length - 1) & (i % 2 == 0),
        },
        'episode_id': np.int64(100 + i),
    }


def write_vectors(data_dir, name='vec', lengths=LENGTHS, file_format='tfrecord',
                  offset=0):
  features = {'steps': {'observation': tfds.features.Tensor(shape=(3,), dtype=np.float32),
                        'action': tfds.features.Tensor(shape=(2,), dtype=np.int32),
                        'reward': np.float32, 'discount': np.float32,
                        'step': np.int32},
              'episode_id': np.int64}
  with EpisodeWriter(str(data_dir), name, features, file_format=file_format,
                     max_episodes_per_file=4) as writer:
    writer.add_episodes(vector_episodes(lengths, offset))
  return writer.path


def camera_episodes(lengths=(3, 7, 1)):
  rng = np.random.default_rng(0)
  for i, length in enumerate(lengths):
    yield {
        'steps': {
            'observation': {
                'image': rng.integers(0, 255, (length, 8, 8, 3), np.uint8),
                'state': rng.standard_normal((length, 2)).astype(np.float32)},
            'reward': np.arange(length, dtype=np.float32),
            'action': (np.arange(length)[:, None] * [1, -1]).astype(np.float32),
            'language_instruction': np.array([f'task {i}'] * length, object),
            'is_terminal': np.arange(length) == length - 1,
        },
    }


def write_cameras(data_dir, name='cams'):
  features = {'steps': {
      'observation': {'image': tfds.features.Image(shape=(8, 8, 3),
                                                   encoding_format='png'),
                      'state': tfds.features.Tensor(shape=(2,), dtype=np.float32)},
      'reward': np.float32,
      'action': tfds.features.Tensor(shape=(2,), dtype=np.float32),
      'language_instruction': tfds.features.Text()}}
  with EpisodeWriter(str(data_dir), name, features) as writer:
    writer.add_episodes(camera_episodes())
  return writer.path


def dense_steps(path):
  """Every episode's dense steps (flat NumPy dicts), in split order."""
  out = []
  for episode in rlds_lite.load(path, dense=True):
    out.append(tf.nest.map_structure(lambda x: x, episode['steps']))
  return out


def reference(kind, path):
  """Every sample of ``kind``, in index order: the dense op per episode."""
  parts = [kind.reference(steps) for steps in dense_steps(path)]
  parts = [p for p in parts if tf.nest.flatten(p)[0].shape[0]]
  return tf.nest.map_structure(lambda *xs: np.concatenate([x.numpy() for x in xs]),
                               *parts)


def as_older_dataset(path):
  """Drops a chunk dataset's table digests, as older versions wrote it."""
  metadata_path = os.path.join(path, 'metadata.json')
  with open(metadata_path) as f:
    metadata = json.load(f)
  for split in metadata['splits'].values():
    del split['table_sha256']
  with open(metadata_path, 'w') as f:
    json.dump(metadata, f)
