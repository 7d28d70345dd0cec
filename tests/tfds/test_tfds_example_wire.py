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
  assert example_wire.int64_feature(values) == expected.SerializeToString()


def test_random_int64_values_are_protobufs():
  values = np.random.default_rng(0).integers(_INT64.min, _INT64.max, 2000)
  expected = tf.train.Feature(int64_list=tf.train.Int64List(
      value=values.tolist()))
  assert example_wire.int64_feature(values) == expected.SerializeToString()


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
  assert example_wire.float_feature(values) == expected.SerializeToString()


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
  assert example_wire.bytes_feature(items) == expected.SerializeToString()


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
  assert (example_wire.fixed_size_bytes_feature(rows) ==
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
