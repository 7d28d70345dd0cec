"""Where episodes live (from dataset_info.json) and reading their records."""

import rlds_lite
import os

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite import loading
from rlds_lite.catalog import records
import catalog_testing


def _write_records(path, payloads):
  with tf.io.TFRecordWriter(path) as writer:
    for payload in payloads:
      writer.write(payload)


def test_offsets_point_at_each_record(tmp_path):
  path = str(tmp_path / 'x.tfrecord')
  payloads = [b'', b'a', b'b' * 1000, b'cc']
  _write_records(path, payloads)
  offsets = records.record_offsets(path, expected=4)
  assert offsets.tolist() == [0, 16, 33, 1049, 1067]
  assert offsets[-1] == os.path.getsize(path)


@pytest.mark.parametrize('cut, message', [
    (30, r'the file ends inside the header of record 1 \(byte 16\)'),
    (5, r'record 2 \(byte 33\) claims 2 bytes, past the end of the file '
     r'\(46 bytes\)'),
], ids=['inside-a-header', 'inside-a-record'])
def test_truncated_files_are_named(tmp_path, cut, message):
  path = str(tmp_path / 'x.tfrecord')
  _write_records(path, [b'', b'a', b'bb'])
  data = open(path, 'rb').read()
  open(path, 'wb').write(data[:len(data) - cut])
  with pytest.raises(ValueError, match=rf'{path}: {message}'):
    records.record_offsets(path)


def test_a_record_count_other_than_the_info_is_an_error(tmp_path):
  path = str(tmp_path / 'x.tfrecord')
  _write_records(path, [b'a', b'b'])
  with pytest.raises(ValueError, match='holds 2 records, the dataset info '
                     'says 3.'):
    records.record_offsets(path, expected=3)


def test_split_files_follow_the_info_not_the_directory(tmp_path):
  path = catalog_testing.write(str(tmp_path),
                               data=catalog_testing.episodes(num_episodes=7),
                               per_file=3)
  # A leftover file the info does not list (an older generation, a copy).
  open(os.path.join(path, 'robot-train.tfrecord-00009'), 'wb').write(b'junk')
  files = records.split_files(rlds_lite.open(path).builder, 'train')
  assert files.shard_names == ('robot-train.tfrecord-00000',
                               'robot-train.tfrecord-00001',
                               'robot-train.tfrecord-00002')
  assert files.lengths == (3, 3, 1) and files.num_episodes == 7
  shards, positions = files.locate([0, 3, 5, 6])
  assert shards.tolist() == [0, 1, 1, 2] and positions.tolist() == [0, 0, 2, 0]
  every = list(records.iterate_records(files))
  assert len(every) == 7
  assert list(records.iterate_records(files, [6, 2, 3, 3])) == [
      every[6], every[2], every[3], every[3]]
  assert list(records.iterate_records(files, np.array([], np.int64))) == []
