"""masked_crc32c gives the checksums TFRecord files store."""

import os

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite.catalog import records as records_lib
from rlds_lite.random_access import checksums


def _stored(path):
  """Each record's data and stored data checksum, from a TFRecord file."""
  data = open(path, 'rb').read()
  offsets = records_lib.record_offsets(path)
  records = [data[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
  return ([r[12:-4] for r in records],
          [int(np.frombuffer(r[-4:], '<u4')[0]) for r in records])


@pytest.mark.parametrize('lengths', [
    pytest.param([0, 1, 2, 3], id='under-4-bytes'),
    pytest.param([4, 5, 63, 64, 65], id='a-few-bytes'),
    pytest.param([100, 2000, 70000], id='mixed-lengths'),
    pytest.param([16384] * 3, id='one-length'),
    pytest.param([300000], id='a-large-record'),
])
def test_the_checksums_tf_writes(tmp_path, lengths):
  rng = np.random.default_rng(len(lengths))
  path = os.path.join(tmp_path, 'x.tfrecord')
  with tf.io.TFRecordWriter(path) as writer:
    for n in lengths:
      writer.write(rng.integers(0, 256, n, np.uint8).tobytes())
  data, stored = _stored(path)
  assert checksums.masked_crc32c(data).tolist() == stored
  if len(set(lengths)) == 1:   # As one [N, L] array.
    rows = np.stack([np.frombuffer(d, np.uint8) for d in data])
    assert checksums.masked_crc32c(rows).tolist() == stored


def test_a_changed_byte_changes_the_checksum():
  record = bytearray(range(256)) * 8
  before = checksums.masked_crc32c([bytes(record)])[0]
  record[1000] ^= 1
  assert checksums.masked_crc32c([bytes(record)])[0] != before
  assert checksums.masked_crc32c([]).tolist() == []
