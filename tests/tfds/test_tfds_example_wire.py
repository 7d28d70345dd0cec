"""rlds_lite.tfds.example_wire: byte-exact against protobuf's own serializer."""

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite.tfds import example_wire

_INT64 = np.iinfo(np.int64)

INT64_CASES = {
    'empty': np.zeros(0, np.int64),
    'zero': np.array([0]),
    'one_byte_edge': np.array([127, 126, 1]),
    'two_byte_edges': np.array([128, 16383]),
    'three_bytes': np.array([16384, 2**21 - 1]),
    'negative_ten_bytes': np.array([-1, -128, _INT64.min]),
    'int64_max': np.array([_INT64.max]),
    'bools': np.array([True, False, True]),
    'matrix': np.arange(-6, 6).reshape(3, 4) * 1000,
    'int32_column': np.array([[5], [-7]], np.int32),
}


@pytest.mark.parametrize('values', INT64_CASES.values(),
                         ids=INT64_CASES.keys())
def test_int64_feature_is_protobufs(values):
  expected = tf.train.Feature(int64_list=tf.train.Int64List(
      value=np.asarray(values, np.int64).ravel().tolist()))
  assert bytes(example_wire.int64_feature(values)) == expected.SerializeToString()


def test_random_int64_values_are_protobufs():
  values = np.random.default_rng(0).integers(_INT64.min, _INT64.max, 2000)
  expected = tf.train.Feature(int64_list=tf.train.Int64List(
      value=values.tolist()))
  assert bytes(example_wire.int64_feature(values)) == expected.SerializeToString()


FLOAT_CASES = {
    'empty': np.zeros(0, np.float32),
    'float32': np.array([0.5, -2.25], np.float32),
    'float64_rounded_to_float32': np.array([0.1, 1e-30, 3e38]),
    'special_values': np.array([np.nan, np.inf, -np.inf, -0.0], np.float32),
    'matrix': np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
}


@pytest.mark.parametrize('values', FLOAT_CASES.values(),
                         ids=FLOAT_CASES.keys())
def test_float_feature_is_protobufs(values):
  expected = tf.train.Feature(float_list=tf.train.FloatList(
      value=np.asarray(values).ravel().tolist()))
  assert bytes(example_wire.float_feature(values)) == expected.SerializeToString()


BYTES_CASES = {
    'empty_list': [],
    'one_empty_value': [b''],
    'equal_sizes': [b'ab', b'cd', b'ef'],
    'different_sizes': [b'a', b'', b'xyz'],
    'long_values': [b'p' * 20000, b'q' * 20000],
}


@pytest.mark.parametrize('items', BYTES_CASES.values(), ids=BYTES_CASES.keys())
def test_bytes_feature_is_protobufs(items):
  expected = tf.train.Feature(bytes_list=tf.train.BytesList(value=items))
  assert bytes(example_wire.bytes_feature(items)) == expected.SerializeToString()


ROWS_CASES = {
    'no_rows': np.zeros((0, 3), np.float64),
    'scalars': np.array([1.5, -2.0]),
    'vectors': np.arange(12, dtype=np.float64).reshape(4, 3),
    'images': np.arange(2 * 4 * 4 * 3, dtype=np.uint8).reshape(2, 4, 4, 3),
    'non_contiguous': np.arange(20, dtype=np.int16).reshape(4, 5)[:, ::2],
}


@pytest.mark.parametrize('rows', ROWS_CASES.values(), ids=ROWS_CASES.keys())
def test_fixed_size_rows_are_bytes_of_each_row(rows):
  expected = tf.train.Feature(bytes_list=tf.train.BytesList(
      value=[row.tobytes() for row in rows]))
  assert (bytes(example_wire.fixed_size_bytes_feature(rows)) ==
          expected.SerializeToString())


def test_example_is_canonical_protobuf_with_sorted_keys():
  features = {
      'steps/reward': example_wire.float_feature(np.array([1.0, 2.0])),
      'episode_id': example_wire.int64_feature(np.array([7])),
      'steps/observation': example_wire.fixed_size_bytes_feature(
          np.ones((2, 3))),
      'name/é': example_wire.bytes_feature([b'x']),
  }
  record = example_wire.example(features)
  parsed = tf.train.Example.FromString(record)
  assert record == parsed.SerializeToString(deterministic=True)
  assert sorted(parsed.features.feature) == sorted(features)
  assert list(parsed.features.feature['steps/reward'].float_list.value) == [
      1.0, 2.0]
  assert list(parsed.features.feature['episode_id'].int64_list.value) == [7]


def test_example_without_features_is_an_empty_features_message():
  expected = tf.train.Example(features=tf.train.Features(feature={}))
  assert example_wire.example({}) == expected.SerializeToString()


def test_tensorflow_parses_the_bytes():
  record = example_wire.example({
      'x': example_wire.float_feature(np.array([[1, 2], [3, 4]], np.float32)),
      'n': example_wire.int64_feature(np.array([-3, 300])),
  })
  parsed = tf.io.parse_single_example(record, {
      'x': tf.io.FixedLenFeature([2, 2], tf.float32),
      'n': tf.io.FixedLenFeature([2], tf.int64)})
  np.testing.assert_array_equal(parsed['x'].numpy(), [[1, 2], [3, 4]])
  np.testing.assert_array_equal(parsed['n'].numpy(), [-3, 300])


NARROW_CASES = {
    'uint8_small': np.arange(100, dtype=np.uint8) % 128,
    'uint8_all': np.arange(512, dtype=np.int64).astype(np.uint8),
    'int8_negative': np.arange(-128, 128, dtype=np.int8),
    'uint16': np.arange(0, 65536, 7, dtype=np.uint16),
    'int16_mixed': np.arange(-30000, 30000, 77, dtype=np.int16),
    'uint32_large': np.array([2**32 - 1, 0, 2**21, 5] * 20, np.uint32),
    'uint64_bits': np.array([2**64 - 1, 2**63, 1] * 30, np.uint64).view(
        np.int64),
}


@pytest.mark.parametrize('values', NARROW_CASES.values(),
                         ids=NARROW_CASES.keys())
@pytest.mark.parametrize('chunk', [7, 1 << 20], ids=['chunked', 'whole'])
def test_narrow_ints_are_varints_of_their_int64_value(values, chunk,
                                                      monkeypatch):
  monkeypatch.setattr(example_wire, '_CHUNK', chunk)
  expected = tf.train.Feature(int64_list=tf.train.Int64List(
      value=values.astype(np.int64).tolist()))
  assert bytes(example_wire.int64_feature(values)) == (
      expected.SerializeToString())


@pytest.mark.parametrize('top', [100, 255])
def test_a_large_uint8_column_is_encoded_only_into_the_record(monkeypatch,
                                                              top):
  # A large column is held uncopied (its encoded size counted) until the
  # record is built, then encoded chunk by chunk into it.
  monkeypatch.setattr(example_wire, '_DEFER', 300)
  monkeypatch.setattr(example_wire, '_CHUNK', 400)
  column = (np.arange(1000) % (top + 1)).astype(np.uint8)
  chunks = example_wire.int64_feature(column)
  held = [b.values for b in chunks.buffers if hasattr(b, 'encode')]
  assert len(held) == 2   # 400 + 400 values deferred; the last 200 encoded.
  assert all(np.shares_memory(h, column) for h in held)
  expected = tf.train.Feature(int64_list=tf.train.Int64List(
      value=column.astype(np.int64).tolist())).SerializeToString()
  assert len(chunks) == len(expected)
  assert bytes(chunks) == expected
  record = example_wire.example({'x': chunks}, allow_bytearray=True)
  assert isinstance(record, bytearray)
  assert record == example_wire.example({'x': chunks})
  assert tf.train.Example.FromString(bytes(record)).features.feature[
      'x'].SerializeToString() == expected


def test_records_without_large_integer_lists_stay_bytes():
  small = example_wire.int64_feature(np.arange(1000, dtype=np.uint8))
  record = example_wire.example(
      {'x': small, 'y': example_wire.float_feature(np.ones(3, np.float32))},
      allow_bytearray=True)
  assert type(record) is bytes  # pylint: disable=unidiomatic-typecheck


def test_float32_column_is_used_uncopied_until_the_record():
  column = np.arange(100, dtype=np.float32)
  chunks = example_wire.float_feature(column)
  assert any(isinstance(b, np.ndarray) and np.shares_memory(b, column)
             for b in chunks.buffers)
  assert len(chunks) == len(bytes(chunks))


def test_example_refuses_a_record_over_max_bytes_before_building_it():
  # A read-only broadcast view of 400 MB: refused from sizes alone (the
  # test would need the memory otherwise).
  huge = np.broadcast_to(np.float32(1), (100_000_000,))
  with pytest.raises(example_wire.RecordTooLargeError,
                     match=r'is 400.0 MB, over the 1.0 kB') as error:
    example_wire.example({'x': example_wire.float_feature(huge)},
                         max_bytes=1000)
  assert 400_000_000 < error.value.nbytes < 400_000_040  # + framing
  assert error.value.limit == 1000
  assert len(example_wire.example({'x': example_wire.float_feature(huge[:10])},
                                  max_bytes=1000)) < 1000
