"""EpisodeWriter / write_dataset / EpisodeEncoder: exact values, atomic publish.

Serialized episodes are compared byte for byte with TFDS's, except PNG
files: rlds_lite writes its own (`rlds_lite.tfds.png`), compared by their
decoded pixels.
"""

import os
import tempfile
import warnings

from hypothesis import given
from hypothesis import settings
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from tensorflow_datasets.core import example_serializer

import episode_strategies
import rlds_testing
import rlds_lite
from rlds_lite import nest_paths
from rlds_lite.tfds import encoding
from rlds_lite.tfds import episode_writer
from rlds_lite.tfds import publish
from rlds_lite.tfds import DatasetCard
from rlds_lite.tfds import EpisodeWriter
from rlds_lite.tfds import FileOptions
from rlds_lite.tfds import rlds_features
from rlds_lite.tfds import write_dataset
from rlds_lite import option_objects

Tensor = tfds.features.Tensor


_flags = episode_strategies.flags


def vector_features():
  return rlds_features(
      {'observation': Tensor(shape=(3,), dtype=np.float32),
       'action': np.int64,
       'reward': Tensor(shape=(), dtype=np.float64, encoding='bytes'),
       'discount': np.float32},
      {'episode_id': np.int64})


def vector_episode(length, episode_id=0, terminal=True):
  t = np.arange(length)
  return {'steps': {
      'observation': np.stack([t, t + 0.5, -t], -1).astype(np.float32) +
                     100 * episode_id,
      'action': 10 * t + episode_id,
      'reward': t / 3 + episode_id,
      'discount': np.ones(length, np.float32),
      **_flags(length, terminal)}, 'episode_id': np.int64(episode_id)}


def rich_features():
  return rlds_features(
      {'observation': {
          'image': tfds.features.Image(shape=(6, 5, 3)),
          'pos': Tensor(shape=(2,), dtype=np.float32, encoding='zlib'),
          'grid': Tensor(shape=(2, 2), dtype=np.int32, encoding='bytes')},
       'language': tfds.features.Text(),
       'mode': tfds.features.ClassLabel(names=['a', 'b', 'c']),
       'valid': np.bool_},
      {'episode_id': np.int64, 'task': tfds.features.Text()})


def rich_episode(length, seed=0):
  rng = np.random.default_rng(seed)
  return {'steps': {
      'observation': {
          'image': rng.integers(0, 256, (length, 6, 5, 3), dtype=np.uint8),
          'pos': rng.standard_normal((length, 2)).astype(np.float32),
          'grid': rng.integers(-9, 9, (length, 2, 2)).astype(np.int32)},
      'language': [f'step {i}' for i in range(length)],
      'mode': rng.integers(0, 3, length),
      'valid': rng.integers(0, 2, length).astype(bool),
      **_flags(length, True)}, 'episode_id': np.int64(seed), 'task': 'stack'}


def _per_step(steps, length):
  """Columnar (nested) steps as a list of step dicts."""
  def row(value, i):
    if isinstance(value, dict):
      return {k: row(v, i) for k, v in value.items()}
    return value[i]
  return [row(steps, i) for i in range(length)]


def png_features():
  return rlds_features(
      {'observation': {
          'rgb': tfds.features.Image(shape=(6, 5, 3)),
          'depth': tfds.features.Image(shape=(4, 3, 1), dtype=np.uint16)},
       'action': np.int64},
      {'episode_id': np.int64,
       'goal': tfds.features.Image(shape=(3, 2, 4))})


def png_episode(length, seed=0):
  rng = np.random.default_rng(seed)
  return {'steps': {
      'observation': {
          'rgb': rng.integers(0, 256, (length, 6, 5, 3), dtype=np.uint8),
          'depth': rng.integers(0, 2**16, (length, 4, 3, 1), dtype=np.uint16)},
      'action': np.arange(length),
      **_flags(length, True)}, 'episode_id': np.int64(seed),
          'goal': rng.integers(0, 256, (3, 2, 4), dtype=np.uint8)}


_PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'


def _png_as_pixels(record):
  """``record`` (canonical bytes) with every PNG file replaced by its pixels.

  rlds_lite's PNG files hold TFDS's pixels in other bytes than libpng's;
  everything else must be byte-identical.
  """
  example = tf.train.Example.FromString(record)
  for feature in example.features.feature.values():
    values = feature.bytes_list.value
    for i, value in enumerate(values):
      if value.startswith(_PNG_SIGNATURE):
        dtype = tf.uint16 if value[24] == 16 else tf.uint8  # IHDR bit depth.
        pixels = tf.io.decode_png(value, dtype=dtype).numpy()
        values[i] = str(pixels.shape).encode() + pixels.tobytes()
  return example.SerializeToString(deterministic=True)


def _tfds_serialized(features, episode, length):
  """The example TFDS itself serializes (per-step encoding), canonical bytes.

  Protobuf leaves the order of map entries unspecified; the canonical form
  (``deterministic=True``) sorts the feature keys, as rlds_lite writes them.
  """
  per_step = dict(episode, steps=_per_step(episode['steps'], length))
  serializer = example_serializer.ExampleSerializer(
      features.get_serialized_info())
  record = serializer.serialize_example(features.encode_example(per_step))
  return tf.train.Example.FromString(record).SerializeToString(
      deterministic=True)


ENCODER_CASES = {
    'one_step': (vector_features, lambda: vector_episode(1), 1),
    'two_steps': (vector_features, lambda: vector_episode(2, 3), 2),
    'truncated': (vector_features, lambda: vector_episode(5, 1, False), 5),
    'images_text_labels_nested': (rich_features, lambda: rich_episode(3), 3),
    'rich_one_step': (rich_features, lambda: rich_episode(1, 4), 1),
    'nested_uint64_bytes': (lambda: _nested_features(),
                            lambda: _nested_episode(4), 4),
    'png_uint8_uint16_metadata_image': (png_features,
                                        lambda: png_episode(3, 2), 3),
}


@pytest.mark.parametrize('make_features,make_episode,length',
                         ENCODER_CASES.values(), ids=ENCODER_CASES.keys())
def test_columnar_encoding_is_tfds_bytes_and_png_pixels(make_features,
                                                        make_episode, length):
  features, episode = make_features(), make_episode()
  ours = encoding.EpisodeEncoder(features).serialize(episode)
  tfds_record = _tfds_serialized(features, episode, length)
  if b'\x89PNG' not in tfds_record:
    assert ours == tfds_record
  assert _png_as_pixels(ours) == _png_as_pixels(tfds_record)


def test_conformed_png_columns_are_png_files_tfds_stores_as_given():
  features, episode = png_features(), png_episode(2, 5)
  encoder = encoding.EpisodeEncoder(features)
  conformed = encoder.conform(episode)
  rgb = conformed['steps']['observation']['rgb']
  assert len(rgb) == 2 and all(f.startswith(_PNG_SIGNATURE) for f in rgb)
  assert conformed['goal'].startswith(_PNG_SIGNATURE)
  serializer = example_serializer.ExampleSerializer(
      features.get_serialized_info())
  record = serializer.serialize_example(features.encode_example(conformed))
  assert _png_as_pixels(record) == _png_as_pixels(
      _tfds_serialized(features, episode, 2))


def _nested_features():
  return rlds_features(
      {'observation': {'pos': Tensor(shape=(2,), dtype=np.float32),
                       'id': np.uint64},
       'action': Tensor(shape=(2,), dtype=np.int16, encoding='bytes')},
      {'episode_id': np.int64})


def _nested_episode(length):
  t = np.arange(length)
  return {'steps': {
      'observation': {'pos': np.stack([t, -t], -1).astype(np.float32),
                      'id': np.full(length, 2**63 + 5, np.uint64)},
      'action': np.stack([t, 3 * t], -1).astype(np.int16),
      **_flags(length, False)}, 'episode_id': np.int64(7)}


EXACT_CASES = {
    'one_step': (vector_features, lambda: vector_episode(1)),
    'two_steps': (vector_features, lambda: vector_episode(2, 3)),
    'truncated': (vector_features, lambda: vector_episode(5, 1, False)),
    'long_negative_ids': (vector_features, lambda: vector_episode(300, -4)),
    'nested_uint64_bytes': (_nested_features, lambda: _nested_episode(4)),
    'png_images': (png_features, lambda: png_episode(3)),
}


@pytest.mark.parametrize('make_features, make_episode', EXACT_CASES.values(),
                         ids=EXACT_CASES.keys())
def test_exact_episodes_skip_checks_with_the_same_bytes(make_features,
                                                        make_episode):
  encoder = encoding.EpisodeEncoder(make_features())
  episode = make_episode()
  fast = encoder._serialize_exact(episode)  # pylint: disable=protected-access
  assert fast is not None
  assert fast == encoder._serialize_checked(episode)  # pylint: disable=protected-access
  assert fast == encoder.serialize(episode)


def _without_flags(episode):
  steps = {k: v for k, v in episode['steps'].items() if k != 'is_first'}
  return dict(episode, steps=steps)


DECLINED = {
    # Each needs the checked path: a conversion, a derived field or an error.
    'missing_flag': _without_flags(vector_episode(3)),
    'int32_actions': dict(vector_episode(3), steps=dict(
        vector_episode(3)['steps'], action=np.arange(3, dtype=np.int32))),
    'squeezed_discount': dict(vector_episode(3), steps=dict(
        vector_episode(3)['steps'], discount=np.ones((3, 1), np.float32))),
    'list_column': dict(vector_episode(3), steps=dict(
        vector_episode(3)['steps'], action=[1, 2, 3])),
    'python_int_id': dict(vector_episode(3), episode_id=5),
    'step_list': dict(vector_episode(2), steps=[
        {k: v[i] for k, v in vector_episode(2)['steps'].items()}
        for i in range(2)]),
    'empty': {'steps': {k: v[:0] for k, v in vector_episode(2)['steps'].items()},
              'episode_id': np.int64(0)},
}


@pytest.mark.parametrize('episode', DECLINED.values(), ids=DECLINED.keys())
def test_other_episodes_take_the_checked_path(episode):
  encoder = encoding.EpisodeEncoder(vector_features())
  assert encoder._serialize_exact(episode) is None  # pylint: disable=protected-access
  assert encoder.serialize(episode) == encoder._serialize_checked(episode)  # pylint: disable=protected-access


def test_unlike_step_lengths_and_extra_fields_still_fail_clearly():
  encoder = encoding.EpisodeEncoder(vector_features())
  episode = vector_episode(3)
  short = dict(episode, steps=dict(episode['steps'],
                                   reward=episode['steps']['reward'][:2]))
  with pytest.raises(ValueError, match='all step fields must have the same '
                     'number of steps'):
    encoder.serialize(short)
  extra = dict(episode, steps=dict(episode['steps'], extra=np.zeros(3)))
  with pytest.raises(ValueError, match=r"steps: field\(s\) \['extra'\] are "
                     'not in the dataset features'):
    encoder.serialize(extra)


@pytest.mark.parametrize('form', ['columnar', 'list_of_steps', 'dataset',
                                  'tensors'])
def test_step_input_forms_encode_the_same(form):
  features, episode = vector_features(), vector_episode(4, 2)
  steps = episode['steps']
  if form == 'list_of_steps':
    steps = _per_step(steps, 4)
  elif form == 'dataset':
    steps = tf.data.Dataset.from_tensor_slices(steps)
  elif form == 'tensors':
    steps = tf.nest.map_structure(tf.constant, steps)
  encoder = encoding.EpisodeEncoder(features)
  assert (encoder.serialize(dict(episode, steps=steps)) ==
          encoder.serialize(episode))


def test_empty_episode_encodes_like_tfds():
  features = vector_features()
  encoder = encoding.EpisodeEncoder(features)
  empty = {'steps': [], 'episode_id': np.int64(1)}
  assert encoder.serialize(empty) == _tfds_serialized(features, empty, 0)
  dataset_steps = tf.data.Dataset.from_tensor_slices(
      tf.nest.map_structure(lambda a: a[:0], vector_episode(2)['steps']))
  assert encoder.serialize(dict(empty, steps=dataset_steps)) == (
      encoder.serialize(empty))


def test_missing_flags_are_derived_from_positions():
  encoder = encoding.EpisodeEncoder(vector_features())
  episode = vector_episode(3)
  without = dict(episode, steps={k: v for k, v in episode['steps'].items()
                                 if k not in ('is_first', 'is_last')})
  assert encoder.serialize(without) == encoder.serialize(episode)


def _with_steps(**changes):
  episode = vector_episode(3)
  steps = dict(episode['steps'])
  for key, value in changes.items():
    if value is None:
      del steps[key]
    else:
      steps[key] = value
  return dict(episode, steps=steps)


ENCODER_ERRORS = {
    'missing_field': (_with_steps(reward=None), r"steps: missing field\(s\) "
                      r"\['reward'\]"),
    'missing_terminal': (_with_steps(is_terminal=None),
                         r"missing field\(s\) \['is_terminal'\]"),
    'extra_field': (_with_steps(extra=np.zeros(3)),
                    r"field\(s\) \['extra'\] are not in the dataset features"),
    'ragged_lengths': (_with_steps(action=np.arange(4)),
                       r"same number of steps; got lengths .*'action': 4"),
    'wrong_shape': (_with_steps(observation=np.zeros((3, 4), np.float32)),
                    r'steps/observation: shape \(4,\) does not match the '
                    r'feature shape \(3,\)'),
    'lossy_float64_into_float32': (
        _with_steps(discount=np.full(3, 0.1)),
        r'steps/discount: dtype float64 does not match the feature dtype '
        r'float32 and casting would change values'),
    'int_out_of_range': (_with_steps(action=np.array([0, 1, 2**63 + 5], np.uint64)),
                         r'steps/action: dtype uint64 does not match'),
    'missing_metadata': ({'steps': vector_episode(2)['steps']},
                         r"episode: missing field\(s\) \['episode_id'\]"),
    'not_an_episode': ([1, 2], r"An episode must be a dict with a 'steps'"),
}


@pytest.mark.parametrize('episode,message', ENCODER_ERRORS.values(),
                         ids=ENCODER_ERRORS.keys())
def test_encoder_errors_name_the_field(episode, message):
  with pytest.raises(ValueError, match=message):
    encoding.EpisodeEncoder(vector_features()).serialize(episode)


def test_value_preserving_casts_are_accepted():
  encoder = encoding.EpisodeEncoder(vector_features())
  episode = vector_episode(3)
  cast = _with_steps(action=episode['steps']['action'].astype(np.int32),
                     discount=np.ones(3, np.float16),
                     is_terminal=np.array([0, 0, 1]))
  assert encoder.serialize(cast) == encoder.serialize(episode)


# ----------------------------------------------------------------------------
# Writing datasets.


def _dense(path, split='train'):
  return list(rlds_lite.load(path, split=split, dense=True).as_numpy_iterator())


def _assert_episode(actual, expected):
  def check(a, e):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(e))
  tf.nest.map_structure(check, actual['steps'], expected['steps'])
  assert actual['episode_id'] == expected['episode_id']


def test_splits_and_readers(tmp_path):
  train = [vector_episode(n, i) for i, n in enumerate([3, 1, 2])]
  test = [vector_episode(4, 9, terminal=False)]
  with EpisodeWriter(tmp_path / 'data', 'multi', vector_features(),
                     splits=('train', 'test')) as writer:
    for episode in train:
      writer.add_episode(episode, 'train')
    writer.add_episodes(test, split='test')
    assert writer.num_episodes == 4
  assert writer.path == str(tmp_path / 'data' / 'multi' / '1.0.0')
  for split, episodes in (('train', train), ('test', test)):
    loaded = _dense(writer.path, split)
    assert len(loaded) == len(episodes)
    for actual, expected in zip(loaded, episodes):
      _assert_episode(actual, expected)
  by_name = tfds.load('multi', data_dir=str(tmp_path / 'data'), split='train')
  assert [int(e['episode_id']) for e in by_name] == [0, 1, 2]
  builder = tfds.builder_from_directory(writer.path)
  assert builder.info.splits['test'].num_examples == 1
  first = next(iter(builder.as_dataset(split='train')))
  assert [float(s['reward']) for s in first['steps']] == [0.0, 1 / 3, 2 / 3]


def test_rich_features_round_trip(tmp_path):
  episodes = [rich_episode(3, 0), rich_episode(1, 1)]
  with EpisodeWriter(tmp_path, 'rich', rich_features()) as writer:
    writer.add_episodes(episodes)
  loaded = _dense(writer.path)
  for actual, expected in zip(loaded, episodes):
    for key in ('image', 'pos', 'grid'):
      np.testing.assert_array_equal(actual['steps']['observation'][key],
                                    expected['steps']['observation'][key])
    assert [s.decode() for s in actual['steps']['language']] == (
        expected['steps']['language'])
    np.testing.assert_array_equal(actual['steps']['mode'],
                                  expected['steps']['mode'])
    assert actual['task'] == b'stack'


def test_array_record_random_access(tmp_path):
  with EpisodeWriter(tmp_path, 'random', vector_features(),
                     options=FileOptions(file_format='array_record')
                     ) as writer:
    writer.add_episodes([vector_episode(2, 0), vector_episode(3, 1)])
  source = tfds.data_source('random', data_dir=str(tmp_path), split='train')
  assert len(source) == 2
  assert [s['action'] for s in source[1]['steps']] == [1, 11, 21]


def test_shards_roll_over_and_keep_order(tmp_path):
  episodes = [vector_episode(2, i) for i in range(5)]
  with EpisodeWriter(tmp_path, 'sharded', vector_features(),
                     options=FileOptions(max_episodes_per_file=2)) as writer:
    writer.add_episodes(episodes)
  info = tfds.builder_from_directory(writer.path).info
  assert info.splits['train'].shard_lengths == [2, 2, 1]
  assert [int(e['episode_id']) for e in _dense(writer.path)] == [0, 1, 2, 3, 4]


def test_append_in_a_second_session(tmp_path):
  with EpisodeWriter(tmp_path, 'grow', vector_features()) as writer:
    writer.add_episodes([vector_episode(2, 0), vector_episode(1, 1)])
  with EpisodeWriter(tmp_path, 'grow', vector_features(),
                     splits=('train', 'validation'),
                     if_exists='append') as again:
    again.add_episode(vector_episode(3, 2), 'train')
    again.add_episode(vector_episode(2, 3), 'validation')
  with EpisodeWriter(tmp_path, 'grow', None, if_exists='append') as third:
    third.add_episode(vector_episode(1, 4))
  assert [int(e['episode_id']) for e in _dense(writer.path)] == [0, 1, 2, 4]
  assert [int(e['episode_id']) for e in _dense(writer.path, 'validation')] == [3]
  _assert_episode(_dense(writer.path)[2], vector_episode(3, 2))


def test_append_with_other_features_is_an_error(tmp_path):
  with EpisodeWriter(tmp_path, 'fixed', vector_features()) as writer:
    writer.add_episode(vector_episode(2))
  other = rlds_features({'observation': np.float32})
  with pytest.raises(ValueError, match=r'cannot append to .*fixed.*features '
                     r'differ'):
    EpisodeWriter(tmp_path, 'fixed', other, if_exists='append')
  with pytest.raises(ValueError, match=r'stored as tfrecord, not array_record'):
    EpisodeWriter(tmp_path, 'fixed', vector_features(), if_exists='append',
                  options=FileOptions(file_format='array_record'))


def test_existing_dataset_is_an_error_by_default(tmp_path):
  with EpisodeWriter(tmp_path, 'once', vector_features()) as writer:
    writer.add_episode(vector_episode(2))
  with pytest.raises(FileExistsError, match=r"dataset 'once' version 1.0.0 "
                     r"already exists.*if_exists='append'"):
    EpisodeWriter(tmp_path, 'once', vector_features())
  assert len(_dense(writer.path)) == 1


def test_overwrite_replaces_at_close(tmp_path):
  with EpisodeWriter(tmp_path, 'swap', vector_features()) as writer:
    writer.add_episodes([vector_episode(2, 0), vector_episode(2, 1)])
  with EpisodeWriter(tmp_path, 'swap', vector_features(),
                     if_exists='overwrite') as again:
    again.add_episode(vector_episode(3, 7))
    assert len(_dense(writer.path)) == 2  # Still the old one until close().
  assert [int(e['episode_id']) for e in _dense(writer.path)] == [7]
  assert sorted(os.listdir(tmp_path / 'swap')) == ['.1.0.0.lock', '1.0.0']


def test_reader_never_sees_a_half_written_dataset(tmp_path):
  writer = EpisodeWriter(tmp_path, 'pending', vector_features())
  writer.add_episode(vector_episode(2))
  assert not os.path.exists(writer.path)
  with pytest.raises(tfds.core.registered.DatasetNotFoundError):
    tfds.builder('pending', data_dir=str(tmp_path))
  writer.close()
  assert len(_dense(writer.path)) == 1


def test_failure_inside_the_with_block_publishes_nothing(tmp_path):
  with pytest.raises(RuntimeError, match='boom'):
    with EpisodeWriter(tmp_path, 'failed', vector_features(),
                       options=FileOptions(max_episodes_per_file=1)) as writer:
      writer.add_episodes([vector_episode(2), vector_episode(3)])
      raise RuntimeError('boom')
  # Only the lock file (never deleted) in the name folder: no dataset.
  assert os.listdir(tmp_path / 'failed') == ['.1.0.0.lock']
  with pytest.raises(ValueError, match=r'add_episode\(\) after aborted'):
    writer.add_episode(vector_episode(1))


def _disk_full(*unused_args, **unused_kwargs):
  raise OSError('disk full')


def test_failure_while_publishing_leaves_no_dataset(tmp_path, monkeypatch):
  monkeypatch.setattr(publish, 'write_temp', _disk_full)
  with pytest.raises(OSError, match='disk full'):
    with EpisodeWriter(tmp_path, 'crash', vector_features()) as writer:
      writer.add_episode(vector_episode(2))
  assert os.listdir(tmp_path / 'crash') == ['.1.0.0.lock']


def test_failed_append_keeps_the_existing_dataset(tmp_path, monkeypatch):
  with EpisodeWriter(tmp_path, 'kept', vector_features()) as writer:
    writer.add_episode(vector_episode(2, 0))
  files = sorted(os.listdir(writer.path))
  with pytest.raises(ValueError, match=r'steps/observation: shape'):
    with EpisodeWriter(tmp_path, 'kept', vector_features(),
                       if_exists='append') as again:
      again.add_episode(vector_episode(2, 1))
      again.add_episode(_with_steps(observation=np.zeros((3, 1), np.float32)))
  with EpisodeWriter(tmp_path, 'kept', vector_features(),
                     if_exists='append') as third:
    third.add_episode(vector_episode(2, 2))
    monkeypatch.setattr(publish, 'write_temp', _disk_full)
    with pytest.raises(OSError, match='disk full'):
      third.close()
  monkeypatch.undo()
  assert sorted(os.listdir(writer.path)) == files
  assert [int(e['episode_id']) for e in _dense(writer.path)] == [0]


@pytest.mark.parametrize('kwargs,error,message', [
    (dict(name='NotSnake'), ValueError, r'snake_case TFDS dataset name'),
    (dict(if_exists='merge'), ValueError, r"if_exists must be one of"),
    (dict(splits='train'), ValueError, r'splits must be a non-empty sequence'),
    (dict(splits=('a b',)), ValueError, r"Bad split name 'a b'"),
    (dict(options=FileOptions(file_format='csv')), ValueError,
     r'file_format must be one of'),
    (dict(version='one'), ValueError, r'Invalid version|version'),
    (dict(features_or_spec=None), ValueError,
     r'features_or_spec is required unless appending'),
], ids=['bad_name', 'bad_if_exists', 'splits_string', 'bad_split',
        'bad_format', 'bad_version', 'no_features'])
def test_writer_argument_errors(tmp_path, kwargs, error, message):
  args = dict(data_dir=tmp_path, name='ok', features_or_spec=vector_features())
  args.update(kwargs)
  with pytest.raises(error, match=message):
    EpisodeWriter(**args)


def test_split_and_state_errors(tmp_path):
  writer = EpisodeWriter(tmp_path, 'states', vector_features(),
                         splits=('train', 'test'))
  with pytest.raises(ValueError, match=r'pass split=, one of'):
    writer.add_episode(vector_episode(1))
  with pytest.raises(ValueError, match=r"unknown split 'val'"):
    writer.add_episode(vector_episode(1), 'val')
  with pytest.raises(ValueError, match=r'no episode was added'):
    writer.close()
  assert not os.path.exists(writer.path)


# ----------------------------------------------------------------------------
# write_dataset: transform and save.


def _nested_episodes(episodes):
  steps = [tf.data.Dataset.from_tensor_slices(e['steps']) for e in episodes]
  return tf.data.Dataset.from_tensor_slices({
      'steps': steps,
      'episode_id': [e['episode_id'] for e in episodes]})


def test_write_dataset_transform_and_save(tmp_path):
  episodes = [vector_episode(3, 0), vector_episode(1, 1),
              vector_episode(2, 2, terminal=False)]
  source = _nested_episodes(episodes)
  doubled = source.map(lambda e: {**e, 'steps': e['steps'].map(
      lambda s: {**s, 'reward': 2 * s['reward']})})
  path = write_dataset(doubled, tmp_path, 'doubled')
  loaded = _dense(path)
  for actual, expected in zip(loaded, episodes):
    want = dict(expected, steps=dict(expected['steps'],
                                     reward=2 * expected['steps']['reward']))
    _assert_episode(actual, want)
  step = tfds.builder_from_directory(path).info.features['steps'].feature
  assert step['reward'].dtype == tf.float64  # Inferred, exact.
  assert step['observation'].shape == (3,)


def test_write_dataset_of_dense_episodes_and_round_trip(tmp_path):
  episodes = [vector_episode(2, 0), vector_episode(4, 1)]
  first = write_dataset(_nested_episodes(episodes), tmp_path, 'first',
                        features=vector_features())
  dense = rlds_lite.load(first, dense=True)
  second = write_dataset(dense, tmp_path, 'second')
  for actual, expected in zip(_dense(second), episodes):
    _assert_episode(actual, expected)
  first_features = tfds.builder_from_directory(first).info.features
  second_features = tfds.builder_from_directory(second).info.features
  assert (first_features['steps'].feature['reward'].dtype ==
          second_features['steps'].feature['reward'].dtype)


def test_write_dataset_detects_image_observations(tmp_path):
  images = np.arange(2 * 8 * 8 * 3, dtype=np.int64).reshape(2, 8, 8, 3) % 256
  steps = {'observation': images.astype(np.uint8), **_flags(2, True)}
  episodes = tf.data.Dataset.from_tensors(
      {'steps': tf.data.Dataset.from_tensor_slices(steps)})
  path = write_dataset(episodes, tmp_path, 'pixels')
  step = tfds.builder_from_directory(path).info.features['steps'].feature
  assert isinstance(step['observation'], tfds.features.Image)
  np.testing.assert_array_equal(_dense(path)[0]['steps']['observation'],
                                steps['observation'])


def test_write_dataset_rejects_non_episodes(tmp_path):
  with pytest.raises(TypeError, match=r'episodes must be a tf.data.Dataset of '
                     r"episode dicts with a 'steps' entry"):
    write_dataset(tf.data.Dataset.range(3), tmp_path, 'nope')


# ----------------------------------------------------------------------------
# Upstream rlds.tfds.episode_writer.EpisodeWriter form.


def _upstream_config():
  return tfds.rlds.rlds_base.DatasetConfig(
      name='upstream_style',
      observation_info=Tensor(shape=(3,), dtype=np.float32),
      action_info=np.int64,
      reward_info=Tensor(shape=(), dtype=np.float64, encoding='bytes'),
      discount_info=np.float32,
      episode_metadata_info={'episode_id': np.int64})


def test_upstream_form_writes_into_the_given_directory(tmp_path):
  directory = tmp_path / 'dataset'
  directory.mkdir()  # Upstream required it to exist: an empty one is fine.
  with warnings.catch_warnings():
    warnings.simplefilter('error')  # Upstream's own keywords: no warning.
    writer = EpisodeWriter(str(directory), _upstream_config(),
                           max_episodes_per_file=1, split_name='train')
  for i in range(2):
    writer.add_episode(dict(vector_episode(2, i),
                            steps=_per_step(vector_episode(2, i)['steps'], 2)))
  writer.close()
  builder = tfds.builder_from_directory(str(directory))
  assert str(builder.info.version) == '0.0.1'
  assert builder.info.splits['train'].shard_lengths == [1, 1]
  loaded = _dense(str(directory))
  for actual, expected in zip(loaded, [vector_episode(2, 0),
                                       vector_episode(2, 1)]):
    _assert_episode(actual, expected)
  again = EpisodeWriter(str(directory), _upstream_config(), overwrite=False)
  again.add_episode(vector_episode(1, 5))
  again.close()
  assert [int(e['episode_id']) for e in _dense(str(directory))] == [0, 1, 5]


def test_upstream_form_refuses_a_directory_that_is_not_a_dataset(tmp_path):
  (tmp_path / 'notes.txt').write_text('keep me')
  with pytest.raises(FileExistsError, match=r'exists and is not a TFDS '
                     r'dataset.*left untouched'):
    EpisodeWriter(str(tmp_path), _upstream_config())
  assert (tmp_path / 'notes.txt').read_text() == 'keep me'


def test_upstream_keywords_need_the_upstream_form(tmp_path):
  with pytest.raises(ValueError, match=r'split_name= and overwrite= are for '
                     r'the upstream form'):
    EpisodeWriter(tmp_path, 'ours', vector_features(), overwrite=True)


# Zero-size step fields: TFDS parses plain zero-size step fields with a
# division by zero (SIGFPE, the process dies), so the writer byte-encodes
# inferred ones (they read back exactly) and refuses declared ones.


@pytest.mark.parametrize('value', [
    np.zeros((3, 0), np.float32), np.zeros((3, 2, 0), np.int32),
    np.zeros((3, 0, 4), np.uint8), np.zeros((3, 0), np.float64),
], ids=['float32-0', 'int32-2x0', 'uint8-0x4', 'float64-0'])
def test_zero_size_step_fields_are_stored_and_read_exactly(value, tmp_path):
  episode = {'steps': {'empty': value, 'reward': np.ones(3, np.float32),
                       **_flags(3, True)}}
  path = rlds_lite.convert.write_tfds([episode], tmp_path, 'zero')
  steps = _dense(path)[0]['steps']
  assert steps['empty'].dtype == value.dtype
  assert steps['empty'].shape == value.shape


@pytest.mark.parametrize('features, field, shape', [
    ({'empty': Tensor(shape=(0,), dtype=np.float32)}, 'empty', (0,)),
    ({'obs': {'empty': Tensor(shape=(2, 0), dtype=np.int64)}}, 'obs/empty',
     (2, 0)),
    ({'words': Tensor(shape=(0,), dtype=np.str_)}, 'words', (0,)),
], ids=['flat', 'nested', 'strings'])
def test_declared_zero_size_plain_step_fields_are_refused(features, field,
                                                          shape, tmp_path):
  with pytest.raises(ValueError) as error:
    EpisodeWriter(tmp_path, 'zero', rlds_features(features))
  assert str(error.value) == (
      f'EpisodeWriter: step field {field!r} has shape {shape} stored as '
      'plain values, which TFDS cannot read back (its parser divides by the '
      "zero size and kills the process); declare it tfds.features.Tensor"
      "(..., encoding='bytes') (a string field: leave it out).")
  assert not os.path.exists(tmp_path / 'zero' / '1.0.0')


def test_inferred_zero_size_strings_are_refused(tmp_path):
  episode = {'steps': {'words': np.zeros((3, 0), 'S1'), **_flags(3, True)}}
  with pytest.raises(ValueError, match=r"^EpisodeWriter: step field 'words' "
                     r'has shape \(0,\) stored as plain values'):
    rlds_lite.convert.write_tfds([episode], tmp_path, 'zero')


# Keys with '/': rlds_lite names fields by '/' paths, so such a key would
# read back as nesting; every writer refuses it, naming the key.


@pytest.mark.parametrize('episode, path', [
    ({'steps': {'a/b': np.zeros(2, np.float32), **_flags(2, True)}},
     'steps/a/b'),
    ({'steps': {'observation': {'p/q': np.zeros(2, np.float32)},
                **_flags(2, True)}}, 'steps/observation/p/q'),
    ({'steps': _flags(2, True), 'meta/id': np.int64(3)}, 'meta/id'),
], ids=['step-key', 'nested-step-key', 'metadata-key'])
def test_keys_with_a_slash_are_refused_at_write(episode, path, tmp_path):
  with pytest.raises(ValueError) as error:
    rlds_lite.convert.write_tfds([episode], tmp_path, 'slash')
  assert str(error.value) == (
      f"EpisodeWriter: key {path!r} holds a '/', which rlds_lite reads as "
      "nesting (fields are named by paths such as 'observation/image'); "
      'rename it or nest it.')
  with pytest.raises(rlds_lite.convert.ConversionError) as error:
    rlds_lite.convert.minari.to_minari([episode], tmp_path, 'slash-v0')
  assert str(error.value) == (
      f"<episodes>: episode 0: key {path!r} holds a '/', which rlds_lite "
      "reads as nesting (fields are named by paths such as "
      "'observation/image'); rename it or nest it")


# Property: random episodes (nesting, dtypes, zero-size arrays, strings, keys
# with '/' and '.') are read back exactly, or refused at write with a
# ValueError naming the key or field. Reading runs in this process: a field
# TFDS would crash on is refused by the writer (and by every reader).

def _zero_size_strings(steps):
  return [p for p, leaf in nest_paths.flatten_with_paths(steps)
          if leaf.dtype == object and 0 in leaf.shape[1:]]


@settings(max_examples=25, deadline=None)
@given(episode=episode_strategies.random_episode())
def test_random_episodes_read_back_exactly_or_are_refused(episode):
  slash = nest_paths.slash_key(episode)
  zero_strings = _zero_size_strings(episode['steps'])
  with tempfile.TemporaryDirectory() as work:
    try:
      path = rlds_lite.convert.write_tfds([episode], work, 'random')
    except ValueError as error:
      expected = [f'steps/{p}: an object array of nothing values has no TFDS '
                  'feature to infer (only strings do); give this field a '
                  'feature.' for p in zero_strings]
      if slash:
        expected.append(
            f'EpisodeWriter: {nest_paths.slash_key_problem(slash)}.')
      assert str(error) in expected
      return
    assert not slash and not zero_strings
    got = _dense(path)
    assert len(got) == 1
    rlds_testing.assert_structures_equal(got[0]['steps'], episode['steps'],
                                         string_dtypes=True)


# ----------------------------------------------------------------------------
# FileOptions and DatasetCard; the flat keywords of before.


def test_options_and_card_show_what_differs_from_the_defaults():
  assert repr(FileOptions()) == 'FileOptions()'
  assert repr(FileOptions(max_episodes_per_file=5, jpeg_quality=80)) == (
      'FileOptions(max_episodes_per_file=5, jpeg_quality=80)')
  assert repr(DatasetCard(citation='@misc{x}')) == (
      "DatasetCard(citation='@misc{x}')")
  with pytest.raises(ValueError, match=r'max_episodes_per_file must be a '
                     r'positive int, got 0\.'):
    FileOptions(max_episodes_per_file=0)


def test_card_reaches_the_dataset_info(tmp_path):
  card = DatasetCard(description='toy robot', homepage='https://example.org',
                     citation='@misc{toy}', metadata={'robot': 'arm'})
  with EpisodeWriter(tmp_path, 'carded', vector_features(),
                     card=card) as writer:
    writer.add_episode(vector_episode(2))
  info = tfds.builder_from_directory(writer.path).info
  assert (info.description, info.homepage, info.citation) == (
      'toy robot', 'https://example.org', '@misc{toy}')
  assert info.metadata == {'robot': 'arm'}


def test_options_and_keywords_together_are_an_error(tmp_path):
  with pytest.raises(TypeError, match=r"EpisodeWriter: pass \['file_format'\] "
                     r'in options=FileOptions\(\.\.\.\), not beside it\.'):
    EpisodeWriter(tmp_path, 'both', vector_features(), options=FileOptions(),
                  file_format='array_record')
  with pytest.raises(TypeError, match=r'EpisodeWriter: card must be a '
                     r'DatasetCard\(\.\.\.\), got dict\.'):
    EpisodeWriter(tmp_path, 'both', vector_features(), card={'a': 1})
  with pytest.raises(TypeError, match=r"EpisodeWriter\(\) got an unexpected "
                     r"keyword argument 'max_episodes'"):
    EpisodeWriter(tmp_path, 'both', vector_features(), max_episodes=3)


def _deprecations(caught):
  return [str(w.message) for w in caught
          if issubclass(w.category, DeprecationWarning)]


OLD_WRITER_KEYWORDS = {
    'file_format': ('array_record', 'options=FileOptions'),
    'max_episodes_per_file': (1, 'options=FileOptions'),
    'max_bytes_per_file': (1 << 20, 'options=FileOptions'),
    'use_images': (False, 'options=FileOptions'),
    'image_encoding': ('jpeg', 'options=FileOptions'),
    'jpeg_quality': (90, 'options=FileOptions'),
    'tensor_encoding': ('bytes', 'options=FileOptions'),
    'description': ('old style', 'card=DatasetCard'),
    'homepage': ('https://example.org', 'card=DatasetCard'),
    'citation': ('@misc{old}', 'card=DatasetCard'),
    'metadata': ({'old': True}, 'card=DatasetCard'),
}


@pytest.mark.parametrize('key', list(OLD_WRITER_KEYWORDS))
def test_old_writer_keywords_still_work_and_warn_once(tmp_path, monkeypatch,
                                                      key):
  monkeypatch.setattr(option_objects, '_WARNED', set())
  value, new = OLD_WRITER_KEYWORDS[key]
  for call in range(2):
    with warnings.catch_warnings(record=True) as caught:
      warnings.simplefilter('always')
      writer = EpisodeWriter(tmp_path, f'old{call}', vector_features(),
                             **{key: value})
    warned = _deprecations(caught)
    with writer:
      writer.add_episodes([vector_episode(2, 0), vector_episode(2, 1)])
    if call == 0:
      assert warned == [f'EpisodeWriter: {key}= is now {new}({key}=...); the '
                        'old keyword will go in a later release.']
    else:
      assert warned == []  # Once.
  # The old keyword did what the new spelling does.
  field = new.split('=')[0]
  if field == 'options':
    assert getattr(writer._options, key) == value
  else:
    assert getattr(writer._card, key) == value
  info = tfds.builder_from_directory(writer.path).info
  if key == 'max_episodes_per_file':
    assert info.splits['train'].shard_lengths == [1, 1]
  if key == 'file_format':
    assert info.file_format.value == 'array_record'
  if key in ('description', 'homepage', 'citation'):
    assert getattr(info, key) == value
  if key == 'metadata':
    assert info.metadata == value


def test_old_write_dataset_keywords_still_work_and_warn_once(tmp_path,
                                                             monkeypatch):
  monkeypatch.setattr(option_objects, '_WARNED', set())
  episodes = tf.data.Dataset.from_tensors({'steps': {
      'reward': [1.0, 2.0], 'is_first': [True, False],
      'is_last': [False, True], 'is_terminal': [False, True]}})
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    path = write_dataset(episodes, tmp_path, 'old', description='said so',
                         file_format='array_record')
  assert _deprecations(caught) == [
      'write_dataset: file_format= is now options=FileOptions(file_format=...)'
      '; the old keyword will go in a later release.',
      'write_dataset: description= is now card=DatasetCard(description=...); '
      'the old keyword will go in a later release.']
  info = tfds.builder_from_directory(path).info
  assert (info.description, info.file_format.value) == ('said so',
                                                        'array_record')
  with pytest.raises(TypeError, match=r"write_dataset\(\) got an unexpected "
                     r"keyword argument 'max_episodes_per_file'"):
    write_dataset(episodes, tmp_path, 'new', max_episodes_per_file=2)
