"""A damaged chunk dataset is one line naming the file: at open and at reads."""

import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import random_access as ra
from rlds_lite.catalog import records as records_lib
from rlds_lite.random_access import storage as storage_lib
import random_access_testing as testing
import tfds_fixtures

AGAIN = re.escape(storage_lib.CONVERT_AGAIN) + '$'


def _copy(chunks, tmp_path):
  copy = str(tmp_path / 'copy' / '1.0.0')
  shutil.copytree(chunks, copy)
  return copy


def _shard(path, index=0):
  return os.path.join(path, sorted(p for p in os.listdir(path)
                                   if '.tfrecord' in p)[index])


def _cut_in_half(path):
  data = open(path, 'rb').read()
  open(path, 'wb').write(data[:len(data) // 2])


def _flip(path, position, count=1):
  with open(path, 'r+b') as f:
    f.seek(position)
    data = f.read(count)
    f.seek(position)
    f.write(bytes(b ^ 0x55 for b in data))


# Damaged metadata: ChunkStorage names the file. -----------------------------


@pytest.mark.parametrize('damage,match', [
    ('dataset_info.json cut in half',
     r'{path}/dataset_info.json: is not valid JSON \(Unterminated string .*\); '
     r'it should hold the TFDS DatasetInfo \(name, version, splits\); '),
    ('metadata.json cut in half',
     r'{path}/metadata.json: is not valid JSON \(.* at line 1 column \d+\); '
     r'it should hold the chunk layout; '),
    ('dataset_info.json too deep',
     r'{path}/dataset_info.json: JSON nests deeper than 100 levels '
     r'\(refused\); it should hold the TFDS DatasetInfo \(name, version, '
     r'splits\); '),
    ('metadata.json too deep',
     r'{path}/metadata.json: JSON nests deeper than 100 levels \(refused\); '
     r'it should hold the chunk layout; '),
    ('features.json deleted',
     r'{path}/features.json: is missing, and dataset_info.json does not '
     r'describe the features either: the dataset cannot be decoded; '),
    ('episodes-train.npz deleted',
     r"{path}/episodes-train.npz: is missing; it holds the episode table "
     r"\(lengths\) of split 'train'; "),
    ('episodes-train.npz cut in half',
     r"{path}/episodes-train.npz: cannot be read \(BadZipFile: File is not a "
     r"zip file\); it holds the episode table \(lengths\) of split 'train'; "),
    ('shard deleted',
     r"{path}/vec_chunks-train.tfrecord-00001: is missing; dataset_info.json "
     r"lists it with 5 records of split 'train'; "),
])
def test_damaged_metadata_is_named(vector_chunks, tmp_path, damage, match):
  path = _copy(vector_chunks, tmp_path)
  name, how = damage.split(' ', 1)
  target = _shard(path, 1) if name == 'shard' else os.path.join(path, name)
  if how == 'deleted':
    os.remove(target)
  elif how == 'too deep':  # A RecursionError traceback before the bound.
    open(target, 'w').write('{"a": ' * 101 + '1' + '}' * 101)
  else:
    _cut_in_half(target)
  with pytest.raises(ra.DamagedChunksError, match='^random access: ' +
                     match.format(path=re.escape(path)) + AGAIN):
    ra.ChunkStorage(path)


# Damaged records: the reads name the file and record. ------------------------


def _payload_flipped(chunks, tmp_path):
  """8 bytes of record 1's first payload flipped (vectors: framing intact)."""
  path = _copy(chunks, tmp_path)
  storage = ra.ChunkStorage(path)
  _, start, _ = storage.payload_slices()[0]
  _flip(_shard(path), storage.record_bytes + start, 8)
  return path, (r'record 1 \(chunk 1: episode 1, steps 0-3\) does not match '
                r'its checksum \(its bytes were changed\)')


def _header_changed(chunks, tmp_path):
  """Record 2 claims to be of episode 9 (its checksum still matches)."""
  path = _copy(chunks, tmp_path)
  storage = ra.ChunkStorage(path)
  start, _ = storage._payloads['episode']  # pylint: disable=protected-access
  with open(_shard(path), 'r+b') as f:
    f.seek(2 * storage.record_bytes + start)
    f.write(np.int64(9).tobytes())
  return path, (r'record 2 \(chunk 2\) is not chunk 1 of episode 1 \(2 steps\) '
                r'as the episode table says \(it holds episode 9, offset 4, 2 '
                r'steps, or its bytes are damaged\)')


def _frame_flipped(chunks, tmp_path):
  """One byte in the middle of record 2's data (a camera frame's bytes)."""
  path = _copy(chunks, tmp_path)
  offsets = records_lib.record_offsets(_shard(path))
  _flip(_shard(path), (offsets[2] + offsets[3]) // 2)
  return path, (r'record 2 \(chunk 2: episode 1, steps 0-1\) does not match '
                r'its checksum \(its bytes were changed\)')


def _truncated(chunks, tmp_path):
  """The shard cut inside record 3 (image layout: records of any size)."""
  path = _copy(chunks, tmp_path)
  offsets = records_lib.record_offsets(_shard(path))
  with open(_shard(path), 'r+b') as f:
    f.truncate(offsets[3] + 20)
  return path, (r'record 3 \(byte \d+\) claims \d+ bytes, past the end of '
                r'the file \(\d+ bytes\); it is truncated or corrupt')


DAMAGE = {
    'vectors, payload flipped': ('vector_chunks', _payload_flipped),
    'vectors, header changed': ('vector_chunks', _header_changed),
    'cameras, frame flipped': ('camera_chunks', _frame_flipped),
    'cameras, shard truncated': ('camera_chunks', _truncated),
}


def _damaged(request, tmp_path, name):
  fixture, damage = DAMAGE[name]
  path, detail = damage(request.getfixturevalue(fixture), tmp_path)
  return path, f'random access: {re.escape(_shard(path))}: {detail}; {AGAIN}'


@pytest.mark.parametrize('name', DAMAGE)
def test_tf_data_gives_the_storage_error_in_one_line(request, tmp_path, name):
  path, match = _damaged(request, tmp_path, name)
  batches = ra.sample_batches(path, ra.Windows(2), 4,
                              epochs=ra.Epochs(num_epochs=1))
  with pytest.raises(tf.errors.InvalidArgumentError) as raised:
    for _ in batches:
      pass
  message = raised.value.message
  assert 'Traceback' not in message
  assert re.search(r'assertion failed: \[' + match[:-1] + r'\]', message)


@pytest.mark.parametrize('name', DAMAGE)
@pytest.mark.parametrize('reader', ['grain_batches', 'GrainSamples'])
def test_grain_raises_the_storage_error(request, tmp_path, name, reader):
  pytest.importorskip('grain')
  path, match = _damaged(request, tmp_path, name)
  with pytest.raises(ra.DamagedChunksError, match='^' + match):
    if reader == 'grain_batches':
      batches = ra.grain_batches(path, ra.Windows(2), 4,
                                 epochs=ra.Epochs(num_epochs=1))
      for k in range(len(batches)):
        batches[k]   # pylint: disable=pointless-statement
    else:
      samples = ra.GrainSamples(path, ra.Windows(2))
      samples.__getitems__(list(range(len(samples))))


@pytest.mark.parametrize('budget', [1 << 30, 0], ids=['mapped', 'pread'])
@pytest.mark.parametrize('read', ['read_block', 'gather_steps', 'read_records'])
def test_each_record_is_checked_once(vector_chunks, tmp_path, budget, read):
  path, detail = _payload_flipped(vector_chunks, tmp_path)
  storage = ra.ChunkStorage(path, mapped_budget=budget)
  call = {'read_block': storage.read_block,
          'gather_steps': lambda ids: storage.gather_steps(ids, ids * 0),
          'read_records': storage.read_records}[read]
  call(np.array([0, 2, 3]))                 # Fine: record 1 is not read.
  verified = storage._verified  # pylint: disable=protected-access
  assert np.flatnonzero(verified).tolist() == [0, 2, 3]
  with pytest.raises(ra.DamagedChunksError, match=detail):
    call(np.array([3, 1]))
  assert not verified[1]


# An edited episode table: at open, or at the first read of a record. --------


def _edit_table(path, changes, column='length'):
  table_path = os.path.join(path, 'episodes-train.npz')
  with open(table_path, 'rb') as f:
    table = dict(np.load(f))
  for episode, change in changes.items():
    if column == 'terminated':
      table[column][episode] = not table[column][episode]
    else:
      table[column][episode] += change
  with open(table_path, 'wb') as f:
    np.savez(f, **table)
  return table_path


_KEPT_TOTALS = ('holds {} episodes of {} steps as metadata.json says, but not '
                'the lengths, ends or ids it recorded (the episode table was '
                'changed)')


@pytest.mark.parametrize('chunks, changes, column, detail', [
    ('vector_chunks', {1: 1}, 'length', 'holds 6 episodes of 77 steps, '
     'metadata.json says 6 of 76 (the episode table was changed)'),
    ('vector_chunks', {4: -1}, 'length', 'holds 6 episodes of 75 steps, '
     'metadata.json says 6 of 76 (the episode table was changed)'),
    ('vector_chunks', {0: 3}, 'length', 'holds 6 episodes of 79 steps, '
     'metadata.json says 6 of 76 (the episode table was changed)'),
    ('vector_chunks', {1: 1, 4: -1}, 'length', _KEPT_TOTALS.format(6, 76)),
    ('vector_chunks', {0: 1}, 'terminated', _KEPT_TOTALS.format(6, 76)),
    ('camera_chunks', {0: 1, 1: -1}, 'length', _KEPT_TOTALS.format(3, 11)),
    ('vector_chunks', {2: 5}, 'episode_id', _KEPT_TOTALS.format(6, 76)),
], ids=['one-length-plus-1', 'one-length-minus-1', 'within-the-first-chunk',
        'both-totals-kept', 'an-end-flipped', 'cameras-both-totals-kept',
        'an-id-changed'])
def test_an_edited_episode_table_is_refused_at_open(request, tmp_path, chunks,
                                                    changes, column, detail):
  path = _copy(request.getfixturevalue(chunks), tmp_path)
  table_path = _edit_table(path, changes, column)
  with pytest.raises(ra.DamagedChunksError) as raised:
    ra.ChunkStorage(path)
  assert str(raised.value) == (f'random access: {table_path}: {detail}; '
                               f'{storage_lib.CONVERT_AGAIN}')


@pytest.mark.parametrize('budget', [1 << 30, 0], ids=['mapped', 'pread'])
@pytest.mark.parametrize('read', ['read_block', 'gather_steps', 'batches'])
def test_lengths_edited_in_step_are_refused_at_the_read(vector_chunks, tmp_path,
                                                        budget, read):
  # Episode 1: 6 -> 7 steps, episode 4: 40 -> 39 (the same chunks, the same
  # total): the repeat of episode 1's last step would be served as step 6.
  path = _copy(vector_chunks, tmp_path)
  _edit_table(path, {1: 1, 4: -1})
  testing.as_older_dataset(path)  # Newer ones refuse the table at open (above).
  storage = ra.ChunkStorage(path, mapped_budget=budget)
  detail = ('record 2 (chunk 2) is not chunk 1 of episode 1 (3 steps) as the '
            'episode table says (it holds episode 1, offset 4, 2 steps, or its '
            'bytes are damaged)')
  message = (f'random access: {_shard(path)}: {detail}; '
             f'{storage_lib.CONVERT_AGAIN}')
  if read == 'batches':   # tf.data: the message in an InvalidArgumentError.
    batches = ra.sample_batches(storage, ra.Windows(2), 80,
                                epochs=ra.Epochs(num_epochs=1))
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
      next(iter(batches))
    assert f'assertion failed: [{message}]' in raised.value.message
    return
  with pytest.raises(ra.DamagedChunksError) as raised:
    getattr(storage, read)([2], *([[2]] if read == 'gather_steps' else []))
  assert str(raised.value) == message
def test_a_key_with_a_slash_is_named_not_a_key_error(tmp_path):
  # Chunks are stored and read back by path: 'a/b' would come back nested.
  # rlds_lite's writers refuse the key; plain TFDS published this one.
  features = tfds.features.FeaturesDict({'steps': tfds.features.Dataset({
      'a/b': np.float32, 'is_first': np.bool_, 'is_last': np.bool_})})
  path = tfds_fixtures.write_dataset(
      str(tmp_path), 'slash', features,
      {'train': [{'steps': {'a/b': [1., 2.], 'is_first': [True, False],
                            'is_last': [False, True]}}]})
  with pytest.raises(ValueError) as error:
    ra.convert(path, str(tmp_path / 'chunks'), progress=False)
  assert str(error.value) == (
      f"convert: dataset {path!r}: key 'steps/a/b' holds a '/', which "
      "rlds_lite reads as nesting (fields are named by paths such as "
      "'observation/image'); rename it or nest it.")
  assert not os.path.exists(tmp_path / 'chunks')
