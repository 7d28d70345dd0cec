"""Damaged RLDS datasets for the corrupt-file tests: a small dataset and its injuries.

`write_dataset` writes 6 episodes (lengths 5..10) into 3 shards of 2 episodes
each (``toy-train.<format>-0000{0,1,2}``), as rlds_lite writes every dataset:
``dataset_info.json`` holds the features (TFDS decodes with those and does
not read ``features.json``, which is written too, for other tools).
`make_legacy` turns a copy into a dataset as TFDS itself, older rlds_lite and
upstream RLDS write them: the features only in ``features.json``.

Each entry of `TFRECORD_CASES` / `LEGACY_CASES` / `ARRAY_RECORD_CASES`
damages a copy of the dataset (legacy for `LEGACY_CASES`) in one named way
and says what a reader must then report (`Expect`): the file named, the
episode of the split (where it is known) and the field, when the damage
shows (opening or reading), and what iterating ``rlds_lite.load`` raises in
a user's own loop when the damage only shows there (TF's own error: it names
no file). Each entry of `UNREAD_FEATURES_JSON_CASES` damages the
``features.json`` that readers do not read: every reader reads the intact
data, and ``validate`` reports one problem (`Expect`) naming the file.
"""

import dataclasses
import json
import os
import shutil
import struct
import subprocess
import sys
from typing import Callable, Dict, List, Optional

import numpy as np

from rlds_lite import tfds as rlds_tfds

NAME = 'toy'
EPISODES_PER_SHARD = 2
NUM_EPISODES = 6


def write_dataset(data_dir: str, file_format: str = 'tfrecord') -> str:
  """The intact dataset; its directory."""
  features = {'steps': {'observation': np.zeros(3, np.float32),
                        'action': np.zeros(2, np.float32),
                        'reward': np.float32, 'discount': np.float32}}
  rng = np.random.default_rng(0)
  with rlds_tfds.EpisodeWriter(data_dir, NAME, features,
                               options=rlds_tfds.FileOptions(
                                   file_format=file_format,
                                   max_episodes_per_file=EPISODES_PER_SHARD)
                               ) as w:
    for index in range(NUM_EPISODES):
      length = 5 + index
      valid = np.arange(length) < length - 1  # RLDS: the last step's
      w.add_episode({'steps': {              # action/reward/discount are 0.
          'observation': rng.normal(size=(length, 3)).astype(np.float32),
          'action': (rng.normal(size=(length, 2)) *
                     valid[:, None]).astype(np.float32),
          'reward': valid.astype(np.float32),
          'discount': valid.astype(np.float32),
          'is_terminal': [False] * (length - 1) + [True]}})
  return w.path


def make_legacy(path: str) -> str:
  """Drops the features from ``dataset_info.json``: TFDS reads features.json."""
  file = os.path.join(path, 'dataset_info.json')
  with open(file) as f:
    info = json.load(f)
  del info['features']
  with open(file, 'w') as f:
    json.dump(info, f)
  return path


def copy_dataset(path: str, target: str) -> str:
  """A copy of the dataset directory at ``target`` (same layout)."""
  shutil.copytree(path, target)
  return target


def shard(path: str, index: int = 1) -> str:
  """The path of shard ``index`` of the train split."""
  names = sorted(n for n in os.listdir(path) if f'{NAME}-train.' in n)
  return os.path.join(path, names[index])


def _record_spans(file: str):
  """(start, data start, end) of each TFRecord record of a file."""
  spans, offset = [], 0
  data = open(file, 'rb').read()
  while offset < len(data):
    (length,) = struct.unpack('<Q', data[offset:offset + 8])
    spans.append((offset, offset + 12, offset + 16 + length))
    offset += 16 + length
  return spans


def _rewrite(file: str, edit: Callable[[bytearray], bytes]) -> None:
  data = bytearray(open(file, 'rb').read())
  with open(file, 'wb') as f:
    f.write(edit(data))


def _flip(position_of: Callable[[str], int]) -> Callable[[str], None]:
  def damage(path):
    file = shard(path)
    position = position_of(file)

    def edit(data):
      data[position] ^= 0xFF
      return bytes(data)

    _rewrite(file, edit)
  return damage


def _truncate(size_of: Callable[[str], int]) -> Callable[[str], None]:
  def damage(path):
    file = shard(path)
    size = size_of(file)
    _rewrite(file, lambda data: bytes(data[:size]))
  return damage


def _write(name: str, text: str) -> Callable[[str], None]:
  def damage(path):
    with open(os.path.join(path, name), 'w') as f:
      f.write(text)
  return damage


def _half(name: str) -> Callable[[str], None]:
  def damage(path):
    file = os.path.join(path, name)
    _rewrite(file, lambda data: bytes(data[:len(data) // 2]))
  return damage


def _edit_json(name: str, edit: Callable[[dict], None]) -> Callable[[str], None]:
  def damage(path):
    file = os.path.join(path, name)
    with open(file) as f:
      value = json.load(f)
    edit(value)
    with open(file, 'w') as f:
      json.dump(value, f)
  return damage


def _observation(features: dict) -> dict:
  steps = features['featuresDict']['features']['steps']['sequence']['feature']
  return steps['featuresDict']['features']['observation']['tensor']


def _features_of(name: str) -> Callable[[dict], dict]:
  """The features in a file's JSON: all of features.json, or a field."""
  if name == 'features.json':
    return lambda value: value
  return lambda info: info['features']


def _shape(*dims: str, name: str = 'features.json') -> Callable[[str], None]:
  features = _features_of(name)
  return _edit_json(name, lambda f: _observation(features(f))['shape'].update(
      dimensions=list(dims)))


def _dtype(dtype: str, name: str = 'features.json') -> Callable[[str], None]:
  features = _features_of(name)
  return _edit_json(name, lambda f: _observation(features(f)).update(
      dtype=dtype))


def _shard_lengths(edit: Callable[[list], list]) -> Callable[[str], None]:
  def change(info):
    split = info['splits'][0]
    split['shardLengths'] = [str(n) for n in edit(
        [int(n) for n in split['shardLengths']])]
  return _edit_json('dataset_info.json', change)


def _delete(name: Optional[str] = None) -> Callable[[str], None]:
  def damage(path):
    os.remove(os.path.join(path, name) if name else shard(path))
  return damage


def _garbage(path: str) -> None:
  file = shard(path)
  size = os.path.getsize(file)
  with open(file, 'wb') as f:
    f.write(np.random.default_rng(1).bytes(size))


@dataclasses.dataclass(frozen=True)
class Expect:
  """What a reader must report for a damaged dataset.

  Attributes:
    file: the base name of the file named (``'features.json'``).
    at_open: ``rlds_lite.load`` raises when it opens the dataset; otherwise
      the damage shows only when episodes are read.
    episode: the episode of the split named, where it is known.
    field: the field named, where it is known.
    kind: the kind of the problem ``validate`` reports.
    load_error: for damage seen only while reading: the ``tf.errors`` class
      iterating ``rlds_lite.load(path)`` raises in a user's own loop.
    text: words the message must contain.
  """
  file: str
  at_open: bool
  episode: Optional[int] = None
  field: Optional[str] = None
  kind: str = 'corrupt_file'
  load_error: Optional[str] = None
  text: str = ''


SHARD_1 = f'{NAME}-train.tfrecord-00001'  # Episodes 2 and 3.

TFRECORD_CASES: Dict[str, tuple] = {
    'shard_truncated_inside_a_record': (
        _truncate(lambda f: _record_spans(f)[1][1] + 20),
        Expect(SHARD_1, at_open=True, episode=3,
               text='is truncated: it ends inside record 1')),
    'shard_truncated_at_a_record_boundary': (
        _truncate(lambda f: _record_spans(f)[1][0]),
        Expect(SHARD_1, at_open=True, episode=3,
               text="holds 1 records, but dataset_info.json says 2")),
    'shard_byte_flipped': (
        _flip(lambda f: _record_spans(f)[1][1] + 30),
        Expect(SHARD_1, at_open=False, episode=3,
               load_error='DataLossError', text='record 1 is corrupted')),
    'shard_length_header_flipped': (
        _flip(lambda f: _record_spans(f)[1][0] + 2),
        Expect(SHARD_1, at_open=False, episode=3, load_error='DataLossError',
               text='record 1 has a corrupted header')),
    'shard_overwritten_with_garbage': (
        _garbage,
        Expect(SHARD_1, at_open=False, episode=2, load_error='DataLossError',
               text='record 0 has a corrupted header')),
    'shard_deleted': (
        _delete(),
        Expect(SHARD_1, at_open=True,
               text='is missing; dataset_info.json lists it with episodes '
                    "2-3 of split 'train'")),
    'shard_empty': (
        _truncate(lambda f: 0),
        Expect(SHARD_1, at_open=True, text='is empty')),
    'info_garbage': (
        _write('dataset_info.json', 'garbage{'),
        Expect('dataset_info.json', at_open=True, text='is not valid JSON')),
    'info_empty': (
        _write('dataset_info.json', ''),
        Expect('dataset_info.json', at_open=True, text='is empty')),
    'info_truncated': (
        _half('dataset_info.json'),
        Expect('dataset_info.json', at_open=True, text='is not valid JSON')),
    'info_a_list': (
        _write('dataset_info.json', '[1]'),
        Expect('dataset_info.json', at_open=True,
               text='holds a JSON list, not an object')),
    'info_unknown_field': (
        _edit_json('dataset_info.json', lambda i: i.update(shards=3)),
        Expect('dataset_info.json', at_open=True,
               text='is not a TFDS DatasetInfo')),
    'info_bad_version': (
        _edit_json('dataset_info.json', lambda i: i.update(version='one')),
        Expect('dataset_info.json', at_open=True,
               text="has no valid version (got 'one'")),
    'info_splits_removed': (
        _edit_json('dataset_info.json', lambda i: i.pop('splits')),
        Expect('dataset_info.json', at_open=True, text='lists no splits')),
    'info_name_changed': (
        _edit_json('dataset_info.json', lambda i: i.update(name='other')),
        Expect('other-train.tfrecord-00000', at_open=True, text='is missing')),
    'info_extra_shard_listed': (
        _shard_lengths(lambda lengths: lengths + [2]),
        Expect(f'{NAME}-train.tfrecord-00003', at_open=True,
               text='is missing')),
    'info_shard_length_raised': (  # Found at open: the sizes do not add up.
        _shard_lengths(lambda lengths: [2, 3, 2]),
        Expect(SHARD_1, at_open=True, episode=4,
               text='holds 2 records, but dataset_info.json says 3')),
    'info_features_garbage': (
        _edit_json('dataset_info.json', lambda i: i.update(features='x')),
        Expect('dataset_info.json', at_open=True,
               text='is not a TFDS DatasetInfo')),
    'info_features_not_features': (
        _edit_json('dataset_info.json', lambda i: i.update(
            features={'pythonClassName': 'x.Y'})),
        Expect('dataset_info.json', at_open=True,
               text='its "features" do not describe TFDS features')),
    'info_features_shape_edited': (
        _shape('4', name='dataset_info.json'),
        Expect('dataset_info.json', at_open=False, episode=0,
               field='observation', kind='undecodable',
               load_error='InvalidArgumentError',
               text='does not fit the features declared here: Error while '
                    'parsing feature with key steps/observation')),
    'info_features_shape_made_scalar': (
        _shape(name='dataset_info.json'),
        Expect('dataset_info.json', at_open=False, episode=0,
               field='observation', kind='undecodable',
               load_error='InvalidArgumentError',
               text='does not have one entry per step')),
    'info_features_shape_unparseable': (
        _shape('-1', name='dataset_info.json'),
        Expect('dataset_info.json', at_open=True,
               text='TFDS cannot read the dataset with the features')),
    'info_features_dtype_edited': (
        _dtype('int32', name='dataset_info.json'),
        Expect('dataset_info.json', at_open=False, episode=0,
               field='observation', kind='undecodable',
               load_error='InvalidArgumentError',
               text="does not fit the features declared here: Key: "
                    "steps/observation. Data types don't match.")),
}
"""Damage of a tfrecord dataset -> (damage(path), Expect).

The features are in ``dataset_info.json``: damage to them is named there;
damage to ``features.json`` is in `UNREAD_FEATURES_JSON_CASES`.
"""

LEGACY_CASES: Dict[str, tuple] = {
    'features_garbage': (
        _write('features.json', 'garbage{'),
        Expect('features.json', at_open=True, text='is not valid JSON')),
    'features_truncated': (
        _half('features.json'),
        Expect('features.json', at_open=True, text='is not valid JSON')),
    'features_deleted': (
        _delete('features.json'),
        Expect('features.json', at_open=True,
               text='is missing, and dataset_info.json does not describe the '
                    'features either')),
    'features_not_features': (
        _write('features.json', '{}'),
        Expect('features.json', at_open=True,
               text='does not describe TFDS features')),
    'features_shape_edited': (
        _shape('4'),
        Expect('features.json', at_open=False, episode=0, field='observation',
               kind='undecodable', load_error='InvalidArgumentError',
               text='does not fit the features declared here: Error while parsing '
                    'feature with key steps/observation')),
    'features_shape_made_scalar': (
        _shape(),
        Expect('features.json', at_open=False, episode=0, field='observation',
               kind='undecodable', load_error='InvalidArgumentError',
               text='does not have one entry per step')),
    'features_shape_unparseable': (
        _shape('-1'),
        Expect('features.json', at_open=True,
               text='TFDS cannot read the dataset with the features')),
    'features_dtype_edited': (
        _dtype('int32'),
        Expect('features.json', at_open=False, episode=0, field='observation',
               kind='undecodable', load_error='InvalidArgumentError',
               text="does not fit the features declared here: Key: "
                    "steps/observation. Data types don't match.")),
}
"""Damage of a legacy dataset (features only in features.json) -> (damage, Expect).
"""

_COPY = ('it should hold a copy of the features in dataset_info.json (which '
         'TFDS decodes with), for tools that read it')

UNREAD_FEATURES_JSON_CASES: Dict[str, tuple] = {
    'features_garbage': (
        _write('features.json', 'garbage{'),
        Expect('features.json', at_open=False, kind='features_mismatch',
               text=f'is not valid JSON (Expecting value at line 1 column 1); '
                    f'{_COPY}.')),
    'features_truncated': (
        _half('features.json'),
        Expect('features.json', at_open=False, kind='features_mismatch',
               text='is not valid JSON')),
    'features_deleted': (
        _delete('features.json'),
        Expect('features.json', at_open=False, kind='features_mismatch',
               text='is missing; TFDS decodes with the features in '
                    'dataset_info.json, but tools that look for features.json '
                    '(tfds.builder or tfds.load by name) do not find the '
                    'dataset.')),
    'features_not_features': (
        _write('features.json', '{}'),
        Expect('features.json', at_open=False, kind='features_mismatch',
               text='does not describe TFDS features (no "pythonClassName"); '
                    f'{_COPY}.')),
    'features_shape_edited': (
        _shape('4'),
        Expect('features.json', at_open=False, field='steps/observation',
               kind='features_mismatch',
               text='disagrees with the features in dataset_info.json, which '
                    'TFDS decodes with: float32 of shape (4,) here, float32 of '
                    'shape (3,) there.')),
    'features_shape_same_size': (  # Would read reshaped if TFDS read it.
        _shape('1', '3'),
        Expect('features.json', at_open=False, field='steps/observation',
               kind='features_mismatch',
               text='float32 of shape (1, 3) here, float32 of shape (3,) '
                    'there.')),
    'features_shape_made_scalar': (
        _shape(),
        Expect('features.json', at_open=False, field='steps/observation',
               kind='features_mismatch',
               text='float32 of shape () here, float32 of shape (3,) there.')),
    'features_shape_unparseable': (
        _shape('-1'),
        Expect('features.json', at_open=False, field='steps/observation',
               kind='features_mismatch',
               text='float32 of shape (None,) here, float32 of shape (3,) '
                    'there.')),
    'features_dtype_edited': (
        _dtype('int32'),
        Expect('features.json', at_open=False, field='steps/observation',
               kind='features_mismatch',
               text='int32 of shape (3,) here, float32 of shape (3,) there.')),
}
"""Damage of the features.json readers do not read -> (damage, Expect).

The Expect is what validate reports.

The features are in ``dataset_info.json``: every reader reads the intact data.
"""

AR_SHARD_1 = f'{NAME}-train.array_record-00001'

ARRAY_RECORD_CASES: Dict[str, tuple] = {
    'shard_truncated': (
        _truncate(lambda f: os.path.getsize(f) // 2),
        Expect(AR_SHARD_1, at_open=False,
               text='is not a readable ArrayRecord file')),
    'shard_chunk_flipped': (
        _flip(lambda f: 100),  # Inside the first chunk's header.
        Expect(AR_SHARD_1, at_open=False, episode=2,
               text='record 0 is corrupted')),
    'shard_deleted': (
        _delete(),
        Expect(AR_SHARD_1, at_open=True, text='is missing')),
    'shard_empty': (
        _truncate(lambda f: 0),
        Expect(AR_SHARD_1, at_open=True, text='is empty')),
}
"""Damage of an array_record dataset -> (damage(path), Expect)."""


def run_cli(*args: str) -> subprocess.CompletedProcess:
  """``python -m rlds_lite.cli ARGS`` as a user runs it."""
  return subprocess.run([sys.executable, '-m', 'rlds_lite.cli', *args],
                        capture_output=True, text=True, timeout=600,
                        check=False)


def own_lines(stderr: str) -> List[str]:
  """stderr lines that are not TensorFlow's native start-up logs."""
  return [line for line in stderr.splitlines()
          if line.strip() and not line.startswith(('WARNING: All log', 'I0000',
                                                   'W0000', 'E0000'))
          and 'rebuild TensorFlow with the appropriate compiler' not in line]
