"""Chunk storage: bad input and damaged data are clear errors."""

import itertools
import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite import random_access as ra
from rlds_lite.random_access import storage as storage_lib
import random_access_testing as testing

AGAIN = re.escape(storage_lib.CONVERT_AGAIN) + '$'


def test_missing_and_not_chunked(vectors, tmp_path):
  with pytest.raises(FileNotFoundError, match='does not exist'):
    ra.ChunkStorage(tmp_path / 'nothing')
  with pytest.raises(ra.NotChunkedError, match=r'rlds-lite chunk .*vec/1.0.0`'
                     r" \(it writes '.*vec_chunks/1.0.0'\)"):
    ra.ChunkStorage(vectors)
  with pytest.raises(ValueError, match="has no split 'test'"):
    ra.ChunkStorage(ra.convert(vectors, tmp_path / 'c', progress=False), 'test')


def test_an_index_of_other_data_is_refused(vector_chunks, other_chunks):
  index = ra.SampleIndex.build(ra.Windows(2), ra.ChunkStorage(other_chunks))
  with pytest.raises(ValueError, match='the sample index .* does not match the '
                     'data of'):
    ra.SampleReader(ra.ChunkStorage(vector_chunks), index)


def _copy(chunks, tmp_path):
  copy = str(tmp_path / 'copy')
  shutil.copytree(chunks, copy)
  storage = ra.ChunkStorage(copy)
  return copy, storage._files.paths  # pylint: disable=protected-access


def test_a_damaged_record_is_named(vector_chunks, tmp_path):
  copy, paths = _copy(vector_chunks, tmp_path)
  storage = ra.ChunkStorage(copy)
  size = storage._record_bytes  # pylint: disable=protected-access
  start, _ = storage._payloads['episode']  # pylint: disable=protected-access
  with open(paths[0], 'r+b') as f:   # Record 2 claims to be of episode 9.
    f.seek(2 * size + start)
    f.write(np.int64(9).tobytes())
  for budget in (1 << 30, 0):   # Memory-mapped, and read with pread.
    storage = ra.ChunkStorage(copy, mapped_budget=budget)
    for read in (lambda ids: storage.read_block(ids),
                 lambda ids: storage.gather_steps(ids, np.zeros_like(ids))):
      with pytest.raises(ra.DamagedChunksError, match=(
          r'^random access: .*-00000: record 2 \(chunk 2\) is not chunk 1 '
          r'of episode 1 \(2 steps\) as the episode table says \(it holds '
          r'episode 9, offset 4, 2 steps, or its bytes are damaged\); ' +
          AGAIN)):
        read(np.array([0, 2]))
      read(np.array([0, 1, 3]))   # The others are fine.


def test_a_damaged_record_frame_is_named(vector_chunks, tmp_path):
  copy, paths = _copy(vector_chunks, tmp_path)
  size = ra.ChunkStorage(copy)._record_bytes  # pylint: disable=protected-access
  with open(paths[0], 'r+b') as f:   # Record 2's length CRC (byte 8) flipped.
    f.seek(2 * size + 8)
    byte = f.read(1)
    f.seek(2 * size + 8)
    f.write(bytes([byte[0] ^ 0xFF]))
  for budget in (1 << 30, 0):   # Memory-mapped, and read with pread.
    storage = ra.ChunkStorage(copy, mapped_budget=budget)
    with pytest.raises(ra.DamagedChunksError, match=(
        r'-00000: record 2 \(chunk 2\) is not chunk 1 of episode 1 .* or '
        r'its bytes are damaged\); ' + AGAIN)):
      storage.gather_steps(np.array([0, 2]), np.array([0, 3]))
    storage.gather_steps(np.array([0, 1, 3]), np.array([0, 3, 1]))


def test_a_truncated_shard_is_named(vector_chunks, tmp_path):
  copy, paths = _copy(vector_chunks, tmp_path)
  with open(paths[1], 'r+b') as f:
    f.truncate(os.path.getsize(paths[1]) - 10)
  with pytest.raises(ra.DamagedChunksError, match=(
      r'-00001: holds \d+ bytes, but its \d+ records of \d+ bytes make \d+ '
      r'\(it is truncated or was changed\); ' + AGAIN)):
    ra.ChunkStorage(copy)


def test_an_episode_table_that_does_not_match(vector_chunks, tmp_path):
  copy, _ = _copy(vector_chunks, tmp_path)
  table = os.path.join(copy, 'episodes-train.npz')
  # The episodes and steps metadata.json records (6, 76), in other chunks.
  np.savez(table, length=np.array([4, 3, 17, 3, 40, 9]),
           terminated=np.zeros(6, bool))
  testing.as_older_dataset(copy)  # Newer ones refuse the table's digest.
  with pytest.raises(ra.DamagedChunksError, match=(
      r'episodes-train.npz: gives 21 chunks, the shards of split .train. hold '
      r'22 records; ' + AGAIN)):
    ra.ChunkStorage(copy)


def test_out_of_range_and_existing_output(vector_chunks, vectors):
  storage = ra.ChunkStorage(vector_chunks)
  with pytest.raises(IndexError, match='chunk 22 is out of range'):
    storage.read_block([22])
  with pytest.raises(FileExistsError, match='already exists'):
    ra.convert(vectors, vector_chunks, progress=False)


def _damage(path, how):
  """Damages the first shard of the dataset at ``path`` (a copy)."""
  shard = sorted(p for p in os.listdir(path) if '.tfrecord' in p)[0]
  shard = os.path.join(path, shard)
  data = bytearray(open(shard, 'rb').read())
  if how == 'deleted':
    os.remove(shard)
  elif how == 'truncated':
    open(shard, 'wb').write(data[:len(data) * 2 // 3])
  elif how == 'byte_flipped':
    data[len(data) // 2] ^= 0xFF
    open(shard, 'wb').write(bytes(data))
  return shard


@pytest.mark.parametrize('how,match', [
    ('deleted', r'{shard}: is missing; dataset_info.json lists it'),
    ('truncated', r"{shard}: episode \d+ of split 'train': is truncated"),
    ('byte_flipped', r"{shard}: episode \d+ of split 'train': record \d+ "
     r'is corrupted'),
])
def test_convert_names_the_damaged_source_file(vectors, tmp_path, how, match):
  copy = tmp_path / 'source' / 'vectors' / '1.0.0'
  shutil.copytree(vectors, copy)
  shard = _damage(copy, how)
  with pytest.raises(ValueError, match='^' + match.format(shard=shard)):
    ra.convert(copy, tmp_path / 'chunks', progress=False)
  assert sorted(os.listdir(tmp_path)) == ['source']


def test_convert_refuses_a_split_its_files_hold_less_of(vectors, tmp_path,
                                                        monkeypatch):
  # Files whose damage no check finds, yet that end early: nothing written.
  from rlds_lite.random_access import conversion  # pylint: disable=g-import-not-at-top
  read = conversion._episodes  # pylint: disable=protected-access
  monkeypatch.setattr(conversion, '_episodes', lambda *args: itertools.islice(
      read(*args), 3))
  with pytest.raises(ValueError, match=r'/dataset_info.json: lists \d+ '
                     r"episodes in split 'train' but its files hold 3; "
                     'nothing was converted.'):
    ra.convert(vectors, tmp_path / 'chunks', progress=False)
  assert not os.listdir(tmp_path)


def test_overwrite_replaces_only_a_chunk_dataset(vectors, tmp_path):
  data_dir = os.path.dirname(os.path.dirname(vectors))
  before = sorted(os.listdir(vectors))
  with pytest.raises(ValueError, match=f'convert: {data_dir} holds the '
                     f'source {vectors}; overwriting it would delete'):
    ra.convert(vectors, data_dir, overwrite=True, progress=False)
  other = tmp_path / 'other'
  other.mkdir()
  (other / 'notes.txt').write_text('keep me')
  with pytest.raises(FileExistsError, match='is not a chunk dataset'):
    ra.convert(vectors, other, overwrite=True, progress=False)
  assert sorted(os.listdir(vectors)) == before
  assert (other / 'notes.txt').read_text() == 'keep me'
  chunks = ra.convert(vectors, tmp_path / 'chunks', chunk_steps=8,
                      progress=False)
  ra.convert(vectors, chunks, chunk_steps=4, overwrite=True, progress=False)
  assert ra.ChunkStorage(chunks).chunk_steps == 4


@pytest.mark.parametrize('name', ['vectors', 'cameras'])
def test_pread_reads_what_the_maps_read(vector_chunks, tmp_path, name):
  # A split larger than mapped_budget is read with pread: the same values.
  if name == 'vectors':
    chunks = vector_chunks
    kind = ra.Windows(4)
  else:
    chunks = ra.convert(testing.write_cameras(tmp_path), chunk_steps=2,
                        progress=False)
    kind = ra.RobotSamples(2, 2)
  mapped = ra.ChunkStorage(chunks)
  unmapped = ra.ChunkStorage(chunks, mapped_budget=0)
  assert mapped._mapped and not unmapped._mapped  # pylint: disable=protected-access
  read = [ra.SampleReader(s, ra.SampleIndex.build(kind, s)).read(
      tf.constant([0, 5, 3, 5])) for s in (mapped, unmapped)]
  tf.nest.map_structure(np.testing.assert_array_equal, *read)
  if name == 'vectors':
    np.testing.assert_array_equal(mapped.read_block([[0, 7], [21, 3]]),
                                  unmapped.read_block([[0, 7], [21, 3]]))
    assert unmapped._maps == {}  # pylint: disable=protected-access
