"""Features from an example episode, and string fields written and read back.

Named cases: every form a robot-learning user's string column comes in
(``S``, ``U``, object arrays of bytes or str, lists, NumPy's StringDType),
written through each way of declaring the feature (inferred from an example
episode, ``tf.string``, ``np.str_``, ``Text()``) and read back by
``rlds_lite.load`` and TFDS's own builder: always the UTF-8 bytes, empty
and non-ASCII strings included.
"""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import rlds_lite
from rlds_lite.tfds import EpisodeWriter
from rlds_lite.tfds import episode_features
from rlds_lite.tfds import features_from_episode
from rlds_lite.tfds import is_example_episode

TEXTS = ['pick up the cube', '', 'place it on the plate ✓ é']
EXPECTED = [t.encode('utf-8') for t in TEXTS]


def _flags(length, terminal=True):
  index = np.arange(length)
  return {'is_first': index == 0, 'is_last': index == length - 1,
          'is_terminal': (index == length - 1) & terminal}


STRING_COLUMNS = {
    'bytes_S_array': lambda: np.array(EXPECTED, dtype='S'),
    'str_U_array': lambda: np.array(TEXTS),
    'object_bytes': lambda: np.array(EXPECTED, dtype=object),
    'object_str': lambda: np.array(TEXTS, dtype=object),
    'python_str_list': lambda: list(TEXTS),
    'python_bytes_list': lambda: list(EXPECTED),
    'numpy_bytes_scalars': lambda: [np.bytes_(t) for t in EXPECTED],
    'numpy_StringDType': lambda: np.array(
        TEXTS, dtype=np.dtypes.StringDType()),
}

DECLARATIONS = {
    'example_episode': None,   # Inferred from the episode written.
    'tf_string': tf.string,
    'np_str': np.str_,
    'text_feature': tfds.features.Text(),
}


def _episode(column):
  return {'steps': {'observation': np.arange(3, dtype=np.float32),
                    'language_instruction': column, **_flags(3)}}


def _write(path, features, episodes):
  with EpisodeWriter(path, 'strings', features) as writer:
    for episode in episodes:
      writer.add_episode(episode)
  return writer


@pytest.mark.parametrize('declaration', DECLARATIONS.values(),
                         ids=DECLARATIONS.keys())
@pytest.mark.parametrize('make_column', STRING_COLUMNS.values(),
                         ids=STRING_COLUMNS.keys())
def test_string_columns_round_trip_as_utf8_bytes(tmp_path, make_column,
                                                 declaration):
  episode = _episode(make_column())
  if declaration is None:
    features = episode
  else:
    features = {'steps': {'observation': np.float32,
                          'language_instruction': declaration}}
  writer = _write(tmp_path, features, [episode])
  back = next(iter(rlds_lite.load(writer.path, dense=True)))
  assert back['steps']['language_instruction'].numpy().tolist() == EXPECTED
  builder = tfds.builder_from_directory(writer.path)
  steps = next(iter(tfds.as_numpy(builder.as_dataset(split='train'))))['steps']
  assert [s['language_instruction'] for s in steps] == EXPECTED


def test_inferred_scalar_strings_are_text_like_open_x_embodiment():
  features = features_from_episode(_episode(np.array(TEXTS)))
  assert isinstance(features['steps']['language_instruction'],
                    tfds.features.Text)


def test_string_tensors_per_step_keep_their_shape(tmp_path):
  column = np.array([['a', 'é'], ['', 'b'], ['c', 'd']])
  episode = _episode(column)
  feature = features_from_episode(episode)['steps']['language_instruction']
  assert (type(feature), feature.shape, feature.dtype) == (
      tfds.features.Tensor, (2,), tf.string)
  writer = _write(tmp_path, episode, [episode])
  back = next(iter(rlds_lite.load(writer.path, dense=True)))
  assert back['steps']['language_instruction'].numpy().tolist() == [
      [b'a', 'é'.encode()], [b'', b'b'], [b'c', b'd']]


def test_string_metadata_round_trips(tmp_path):
  episode = {**_episode(list(TEXTS)), 'file_path': 'data/é.h5',
             'episode_metadata': {'task': b'stack', 'id': 3}}
  features = features_from_episode(episode)
  assert isinstance(features['file_path'], tfds.features.Text)
  assert isinstance(features['episode_metadata']['task'], tfds.features.Text)
  writer = _write(tmp_path, episode, [episode])
  back = next(iter(rlds_lite.load(writer.path, dense=True)))
  assert back['file_path'].numpy() == 'data/é.h5'.encode()
  assert back['episode_metadata']['task'].numpy() == b'stack'
  assert int(back['episode_metadata']['id']) == 3


@pytest.mark.parametrize('column, message', [
    (np.array([b'a', 3, b'c'], dtype=object),
     r"steps/language_instruction: int value 3 at index \(1,\) is not a "
     r'string \(str or bytes\)\.'),
    (np.arange(3), 'steps/language_instruction: dtype int64 does not match '
     'the feature dtype string; strings must be str or bytes.'),
], ids=['object_with_an_int', 'numbers'])
def test_non_strings_in_a_string_field_name_it(tmp_path, column, message):
  features = {'steps': {'language_instruction': tfds.features.Text()}}
  with EpisodeWriter(tmp_path, 'bad', features) as writer:
    with pytest.raises(ValueError, match=message):
      writer.add_episode({'steps': {'language_instruction': column,
                                    **_flags(3)}})
    writer.add_episode({'steps': {'language_instruction': ['a', 'b', 'c'],
                                  **_flags(3)}})


def test_a_string_column_does_not_change_the_callers_array(tmp_path):
  column = np.array(['a', b'b', 'c'], dtype=object)
  features = {'steps': {'language_instruction': tf.string}}
  _write(tmp_path, features, [{'steps': {'language_instruction': column,
                                         **_flags(3)}}])
  assert column.tolist() == ['a', b'b', 'c']


# Features from an example episode.


def _robot_episode(length=12):
  """Camera frames, state, actions and an instruction per step."""
  rng = np.random.default_rng(0)
  return {'steps': {
      'observation': {
          'image': rng.integers(0, 256, (length, 8, 6, 3), dtype=np.uint8),
          'state': rng.standard_normal((length, 7)),
          'gripper': rng.standard_normal((length, 1)).astype(np.float32)},
      'action': rng.standard_normal((length, 7)).astype(np.float32),
      'reward': (np.arange(length) == length - 1).astype(np.float32),
      'language_instruction': np.array(['pick the cube'] * length),
      **_flags(length)},
          'episode_metadata': {'file_path': 'run_0.h5', 'success': True}}


def _as_step_list(episode):
  def row(value, i):
    if isinstance(value, dict):
      return {k: row(v, i) for k, v in value.items()}
    return value[i]
  length = len(episode['steps']['is_last'])
  return {**episode,
          'steps': [row(episode['steps'], i) for i in range(length)]}


def test_features_from_episode_infers_each_field():
  features = features_from_episode(_robot_episode())
  step = features['steps'].feature
  observation = step['observation']
  assert repr(observation['image']) == 'Image(shape=(8, 6, 3), dtype=uint8)'
  assert (observation['state'].shape, observation['state'].dtype) == (
      (7,), tf.float64)
  assert observation['state'].to_json_content().encoding == 'bytes'  # Exact.
  assert observation['gripper'].shape == (1,)   # Kept, not squeezed.
  assert (step['action'].shape, step['reward'].dtype) == ((7,), tf.float32)
  assert {step[f].dtype for f in ('is_first', 'is_last', 'is_terminal')} == {
      tf.bool}
  metadata = features['episode_metadata']
  assert isinstance(metadata['file_path'], tfds.features.Text)
  assert metadata['success'].dtype == tf.bool


def test_step_list_and_columns_give_the_same_features():
  columns = _robot_episode()
  assert (features_from_episode(_as_step_list(columns)).to_json() ==
          features_from_episode(columns).to_json())


@pytest.mark.parametrize('form', ['columns', 'step_list'])
def test_episode_writer_takes_an_example_episode(tmp_path, form):
  # Before: "steps/is_terminal: shape () does not match the feature shape
  # (12,)": the example was read as the description of one step.
  episode = _robot_episode()
  example = episode if form == 'columns' else _as_step_list(episode)
  writer = _write(tmp_path, example, [episode, _robot_episode(3)])
  back = list(rlds_lite.load(writer.path, dense=True))
  assert [int(e['steps']['reward'].shape[0]) for e in back] == [12, 3]
  steps = back[0]['steps']
  np.testing.assert_array_equal(steps['observation']['image'],
                                episode['steps']['observation']['image'])
  np.testing.assert_array_equal(steps['observation']['state'],
                                episode['steps']['observation']['state'])
  assert steps['language_instruction'][0].numpy() == b'pick the cube'
  assert back[0]['episode_metadata']['file_path'].numpy() == b'run_0.h5'


IS_EXAMPLE = {
    'columns_with_a_flag': ({'steps': {'reward': np.zeros(3),
                                       'is_last': [False, False, True]}}, True),
    'step_list': ({'steps': [{'reward': 0.0}, {'reward': 1.0}]}, True),
    'dtypes': ({'steps': {'reward': np.float32, 'is_last': np.bool_}}, False),
    'specs': ({'steps': {'reward': tf.TensorSpec([], tf.float32),
                         'is_last': tf.TensorSpec([], tf.bool)}}, False),
    'one_step_samples': ({'steps': {'observation': np.zeros(2),
                                    'is_last': np.bool_(True)}}, False),
    'samples_without_flags': ({'steps': {'observation': np.zeros(3)}}, False),
    'features': ({'steps': {'reward': tfds.features.Scalar(tf.float32)}},
                 False),
    'no_steps': ({'reward': np.zeros(3)}, False),
}


@pytest.mark.parametrize('value, expected', IS_EXAMPLE.values(),
                         ids=IS_EXAMPLE.keys())
def test_is_example_episode(value, expected):
  assert is_example_episode(value) is expected


def test_a_one_step_description_keeps_its_meaning():
  # The documented spec form: a per-step sample, not a 2-step column.
  features = episode_features({'steps': {'observation': np.zeros(2)}})
  assert features['steps'].feature['observation'].shape == (2,)


@pytest.mark.parametrize('episode, message', [
    ({'steps': []}, 'the example episode has no steps'),
    ({'steps': {'reward': np.zeros(0), 'is_last': np.zeros(0, bool)}},
     'steps/reward: the example episode has no steps'),
    ({'steps': {'info': np.array([{'a': 1}, {'a': 2}], dtype=object),
                'is_last': [False, True]}},
     r'steps/info: an object array of dict values has no TFDS feature'),
    ({'steps': {'reward': 1.0}}, 'steps/reward: a step column needs a '
     r'leading \[T\] axis'),
], ids=['empty_list', 'zero_steps', 'object_column', 'scalar'])
def test_features_from_episode_errors_name_the_field(episode, message):
  with pytest.raises(ValueError, match=message):
    features_from_episode(episode)


def _tfds_record(features, episode):
  """The bytes TFDS's own per-step encoder and serializer give (canonical)."""
  from tensorflow_datasets.core import example_serializer  # pylint: disable=g-import-not-at-top
  steps = episode['steps']
  length = len(steps['is_last'])
  per_step = dict(episode, steps=[{k: v[i] for k, v in steps.items()}
                                  for i in range(length)])
  serializer = example_serializer.ExampleSerializer(
      features.get_serialized_info())
  record = serializer.serialize_example(features.encode_example(per_step))
  return tf.train.Example.FromString(record).SerializeToString(
      deterministic=True)


@pytest.mark.parametrize('make_column', [
    lambda: np.array(EXPECTED, dtype=object),   # TF's form: the fast path.
    lambda: np.array(TEXTS),                     # Converted first.
], ids=['object_bytes', 'str_U'])
def test_string_columns_serialize_as_tfds_does(make_column):
  from rlds_lite.tfds import encoding  # pylint: disable=g-import-not-at-top
  episode = {'steps': {'observation': np.arange(3, dtype=np.float32),
                       'language_instruction': make_column(),
                       'tokens': np.array([[b'a', b''], [b'b', b'c'],
                                           [b'', b'd']], dtype=object),
                       **_flags(3)}}
  features = features_from_episode(episode)
  encoder = encoding.EpisodeEncoder(features)
  fast = encoder._serialize_exact(episode)  # pylint: disable=protected-access
  assert (fast is not None) == (episode['steps'][
      'language_instruction'].dtype == object)
  assert encoder.serialize(episode) == _tfds_record(features, episode)
