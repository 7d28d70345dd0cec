"""A damaged chunk dataset is one line naming the file: at open and at reads."""

import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite import random_access as ra
from rlds_lite.catalog import records as records_lib
from rlds_lite.random_access import storage as storage_lib
import random_access_testing as testing

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
  return path, (r'record 2 \(chunk 2\) is not chunk 1 of episode 1 as the '
                r'episode table says \(it holds episode 9, offset 4, or its '
                r'bytes are damaged\)')


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
  batches = ra.sample_batches(path, ra.Windows(2), 4, num_epochs=1)
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
      batches = ra.grain_batches(path, ra.Windows(2), 4, num_epochs=1)
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
