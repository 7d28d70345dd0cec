"""Small robot-like RLDS datasets for the catalog tests, and their NumPy reference.

Episodes have a tiny image, a state, an action, a reward (non-zero on the
last step of some episodes, to check that ``return`` leaves it out and
``last_reward`` keeps it), a ``language_instruction`` Text step field (episode
5 changes instruction half way), and episode metadata: ``success`` (bool),
``file_path`` (string), ``scene`` (int32) and ``episode_id`` (int64).
Episode 0 has one step; episode 3 has none.
"""

import json
import os
import shutil
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow_datasets as tfds

from rlds_lite.tfds import EpisodeWriter
from rlds_lite.tfds import FileOptions

TASKS = ('pick up the red block', 'open the drawer', 'close the drawer')


def features(image: int = 4) -> tfds.features.FeaturesDict:
  return tfds.features.FeaturesDict({
      'steps': tfds.features.Dataset({
          'observation': {
              'image': tfds.features.Image(shape=(image, image, 3)),
              'state': tfds.features.Tensor(shape=(2,), dtype=np.float32),
          },
          'action': tfds.features.Tensor(shape=(2,), dtype=np.float32),
          'reward': np.float32,
          'is_first': np.bool_,
          'is_last': np.bool_,
          'is_terminal': np.bool_,
          'language_instruction': tfds.features.Text(),
      }),
      'episode_metadata': {
          'success': np.bool_,
          'file_path': tfds.features.Text(),
          'scene': np.int32,
          'episode_id': np.int64,
      },
  })


def episodes(num_episodes: int = 12, seed: int = 0, first_id: int = 0,
             image: int = 4) -> List[Dict[str, Any]]:
  """The episodes (NumPy columns), deterministic in ``seed``."""
  rng = np.random.default_rng(seed)
  out = []
  for i in range(num_episodes):
    length = 1 if i == 0 else 0 if i == 3 else int(rng.integers(2, 9))
    reward = rng.integers(0, 3, length).astype(np.float32)
    if i % 4 == 1 and length:
      reward[-1] = 5.0  # A non-zero last reward.
    task = TASKS[i % len(TASKS)]
    language = [task] * length
    if i == 5:
      language = [TASKS[0]] * (length // 2) + [TASKS[2]] * (length -
                                                           length // 2)
    index = np.arange(length)
    out.append({
        'steps': {
            'observation': {
                'image': rng.integers(0, 255, (length, image, image, 3),
                                      dtype=np.uint8),
                'state': rng.normal(size=(length, 2)).astype(np.float32),
            },
            'action': rng.normal(size=(length, 2)).astype(np.float32),
            'reward': reward,
            'is_first': index == 0,
            'is_last': index == length - 1,
            'is_terminal': (index == length - 1) & (i % 2 == 1),
            'language_instruction': np.array(language, dtype=object),
        },
        'episode_metadata': {
            'success': bool(i % 3 == 0),
            'file_path': f'/raw/episode_{i}.h5',
            'scene': np.int32(i % 2),
            'episode_id': np.int64(first_id + i),
        },
    })
  return out


def write(data_dir: str, name: str = 'robot',
          data: Optional[Sequence[Dict[str, Any]]] = None,
          per_file: int = 5, file_format: str = 'tfrecord',
          image: int = 4) -> str:
  """Writes ``data`` (default `episodes()`) and returns the dataset dir."""
  data = episodes(image=image) if data is None else data
  with EpisodeWriter(data_dir, name, features(image),
                     options=FileOptions(file_format=file_format,
                                         max_episodes_per_file=per_file)
                     ) as writer:
    writer.add_episodes(data)
  return writer.path


def reference(data: Sequence[Dict[str, Any]]) -> Dict[str, List[Any]]:
  """The catalog columns a NumPy reference computes from the episodes."""
  columns: Dict[str, List[Any]] = {
      'index': [], 'episode_id': [], 'length': [], 'return': [],
      'last_reward': [], 'terminated': [], 'truncated': [],
      'language_instruction': [], 'success': [], 'file_path': [], 'scene': []}
  for i, episode in enumerate(data):
    steps = episode['steps']
    reward = steps['reward'].astype(np.float64)
    length = len(reward)
    terminated = bool(length and steps['is_terminal'][-1])
    language = []
    for text in steps['language_instruction']:
      if text not in language:
        language.append(text)
    meta = episode['episode_metadata']
    columns['index'].append(i)
    columns['episode_id'].append(int(meta['episode_id']))
    columns['length'].append(length)
    columns['return'].append(float(reward[:-1].sum()) if length else 0.0)
    columns['last_reward'].append(float(reward[-1]) if length else None)
    columns['terminated'].append(terminated)
    columns['truncated'].append(bool(length) and not terminated)
    columns['language_instruction'].append(language)
    columns['success'].append(bool(meta['success']))
    columns['file_path'].append(meta['file_path'])
    columns['scene'].append(int(meta['scene']))
  return columns


def shard_files(path: str) -> List[str]:
  return sorted(f for f in os.listdir(path) if '.tfrecord-' in f or
                '.array_record-' in f)


DAMAGE = {
    'missing': "{shard}: is missing; dataset_info.json lists it with episodes "
               "2-3 of split 'train'.",
    'truncated': "{shard}: episode 3 of split 'train': is truncated: it ends "
                 'inside record 1 (1820 bytes; the record needs 1920); the '
                 'file holds episodes 2-3.',
    'corrupted': "{shard}: episode 2 of split 'train': record 0 is corrupted "
                 '(corrupted record at 12); the file holds episodes 2-3.',
    'shard_lengths_edited': "{shard}: episode 4 of split 'train': holds 2 "
                            'records, but dataset_info.json says 5 (episodes '
                            '2-6): this episode and those after it in the '
                            'file are missing.',
    # numBytes of whole files: the open-time check cannot see it; the pass
    # reads fewer episodes than the info says.
    'shard_lengths_and_num_bytes_edited': "{shard}: episode 4 of split "
                                          "'train': holds 2 records, but "
                                          'dataset_info.json says 5 '
                                          '(episodes 2-6): this episode and '
                                          'those after it in the file are '
                                          'missing.',
}
"""Damage to the second shard of `damaged` -> the error naming it."""


def damaged(source: str, out: str, case: str) -> Tuple[str, str]:
  """A copy of ``source`` (6 episodes, 2 per shard) with its second shard damaged.

  Returns the copy's directory and the damaged shard (see `DAMAGE`).
  """
  shutil.copytree(source, out)
  shard = os.path.join(out, shard_files(out)[1])
  info_path = os.path.join(out, 'dataset_info.json')
  with open(shard, 'rb') as f:
    raw = bytearray(f.read())
  if case == 'missing':
    os.remove(shard)
  elif case == 'truncated':
    with open(shard, 'wb') as f:
      f.write(bytes(raw[:-100]))
  elif case == 'corrupted':
    raw[40] ^= 0xFF  # Inside the first record's data: its checksum fails.
    with open(shard, 'wb') as f:
      f.write(bytes(raw))
  else:
    with open(info_path) as f:
      info = json.load(f)
    info['splits'][0]['shardLengths'][1] = '5'  # It holds 2.
    if case == 'shard_lengths_and_num_bytes_edited':
      info['splits'][0]['numBytes'] = str(sum(
          os.path.getsize(os.path.join(out, f)) for f in shard_files(out)))
    with open(info_path, 'w') as f:
      json.dump(info, f)
  return out, shard
