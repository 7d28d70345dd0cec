"""tfds.example_fields: chosen features of TFRecord Examples, the rest never read."""

import os

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite.tfds import example_fields


def _feature(values):
  values = np.asarray(values)
  if values.dtype == object:
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=list(values)))
  if values.dtype.kind == 'f':
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))
  return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def _write(path, records):
  with tf.io.TFRecordWriter(path) as writer:
    for record in records:
      writer.write(tf.train.Example(features=tf.train.Features(feature={
          k: _feature(v) for k, v in record.items()})).SerializeToString())
  return path


_RECORDS = [
    {'steps/action': np.arange(6, dtype=np.float32) / 3,
     'steps/is_last': [0, 0, 1],
     'steps/image': np.array([b'\xff' * 5000] * 3, object),
     'id': [-7]},
    {'steps/action': np.zeros([0], np.float32), 'steps/is_last': np.zeros([0], int),
     'steps/image': np.array([], object), 'id': [2 ** 40]},
    {'steps/image': np.array([b'x'], object), 'id': [1]},
]


def test_reads_the_chosen_features_as_tf_parses_them(tmp_path):
  path = _write(str(tmp_path / 'a.tfrecord'), _RECORDS)
  got = list(example_fields.read(path, ['steps/action', 'steps/is_last', 'id']))
  assert len(got) == 3
  parsed = [tf.io.parse_single_example(r, {
      'steps/action': tf.io.RaggedFeature(tf.float32),
      'steps/is_last': tf.io.RaggedFeature(tf.int64),
      'id': tf.io.RaggedFeature(tf.int64)}) for r in tf.data.TFRecordDataset(path)]
  for record, want, raw in zip(got, parsed, _RECORDS):
    assert sorted(record) == sorted(k for k in raw if k != 'steps/image')
    for key, values in record.items():
      np.testing.assert_array_equal(values, want[key].numpy(), err_msg=key)
      assert values.dtype == want[key].dtype.as_numpy_dtype, key
  assert got[0]['id'].tolist() == [-7] and got[1]['id'].tolist() == [2 ** 40]


def test_bytes_features_and_an_empty_file(tmp_path):
  path = _write(str(tmp_path / 'a.tfrecord'), _RECORDS[:1])
  (image,) = [r['steps/image'] for r in example_fields.read(path, ['steps/image'])]
  assert image.tolist() == [b'\xff' * 5000] * 3
  empty = str(tmp_path / 'empty.tfrecord')
  open(empty, 'wb').close()
  assert list(example_fields.read(empty, ['id'])) == []


@pytest.mark.parametrize('cut, message', [
    # The last footer byte gone.
    (-1, 'record 1 (byte {first}): it is cut off (it needs {size} bytes, the '
         'file has {kept})'),
    # A few bytes of the next header.
    (5, 'record 1 (byte {first}): its header is cut off'),
])
def test_a_cut_file_is_named_with_the_record(tmp_path, cut, message):
  path = _write(str(tmp_path / 'a.tfrecord'), _RECORDS[:2])
  data = open(path, 'rb').read()
  first = 12 + int(np.frombuffer(data[:8], '<u8')[0]) + 4
  kept = data[:cut] if cut < 0 else data[:first] + data[first:first + cut]
  with open(path, 'wb') as f:
    f.write(kept)
  with pytest.raises(example_fields.RecordFormatError) as error:
    list(example_fields.read(path, ['id']))
  assert str(error.value) == f'{path}: ' + message.format(
      first=first, size=len(data), kept=len(kept))


def test_a_record_that_is_not_an_example_is_named(tmp_path):
  path = str(tmp_path / 'a.tfrecord')
  with tf.io.TFRecordWriter(path) as writer:
    writer.write(tf.train.Example().SerializeToString() + b'\x0a')  # empty + a cut tag
    writer.write(b'not a proto')
  with pytest.raises(example_fields.RecordFormatError,
                     match=rf'^{path}: record 0: a varint runs past'):
    list(example_fields.read(path, ['id']))
  with tf.io.TFRecordWriter(path) as writer:
    writer.write(b'not a proto')
  with pytest.raises(example_fields.RecordFormatError,
                     match=rf'^{path}: record 0: unexpected wire type 6 at byte 13$'):
    list(example_fields.read(path, ['id']))
