"""Tests of rlds_lite.loading.load on small TFDS datasets written to disk."""

import os
import pathlib
import warnings
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import rlds_testing
import tfds_fixtures
import rlds_lite
from rlds_lite import loading
from rlds_lite import nest_paths
from rlds_lite import option_objects

LENGTHS = {'empty': 0, 'one_step': 1, 'two_step': 2, 'terminal': 5,
           'truncated': 4}


def _episode(i, length, terminal):
  rng = np.random.default_rng(i)
  return {
      'steps': {
          'observation': {
              'image': rng.integers(0, 256, (length, 8, 8, 3), np.uint8),
              # float64 values float32 cannot hold (1/3 + tiny): must survive.
              'x': rng.random((length, 2)) / 3 + 1e-12,
          },
          'action': rng.random((length, 2)).astype(np.float32),
          'reward': np.arange(length, dtype=np.float32) + 0.5,
          'lang': [f'step {t}' for t in range(length)],
          **tfds_fixtures.flags(length, terminal),
      },
      'episode_id': np.int64(i),
      'agent': f'agent-{i % 2}',
  }


FEATURES = tfds_fixtures.rlds_features(
    {
        'observation': {
            'image': tfds.features.Image(shape=(8, 8, 3)),
            'x': tfds.features.Tensor(shape=(2,), dtype=np.float64,
                                      encoding='zlib'),
        },
        'action': tfds.features.Tensor(shape=(2,), dtype=np.float32),
        'reward': np.float32,
        'lang': tfds.features.Text(),
    },
    {'episode_id': np.int64, 'agent': tfds.features.Text()})


@pytest.fixture(scope='module')
def data_dir(tmp_path_factory):
  root = str(tmp_path_factory.mktemp('tfds'))
  episodes = [_episode(i, n, name != 'truncated')
              for i, (name, n) in enumerate(LENGTHS.items())]
  tfds_fixtures.write_dataset(root, 'toy_rlds', FEATURES,
                              {'train': episodes, 'test': episodes[:2]})
  tfds_fixtures.write_dataset(
      root, 'toy_vectors', tfds_fixtures.vector_features(3, 2),
      {'train': tfds_fixtures.vector_episodes(3, 4, obs_dim=3, action_dim=2)})
  tfds_fixtures.write_dataset(
      root, 'not_rlds', tfds.features.FeaturesDict({'x': np.int32}),
      {'train': [{'x': 1}]})
  return root


def _nested_to_numpy(episodes):
  out = []
  for episode in episodes:
    steps = list(episode['steps'].as_numpy_iterator())
    meta = {k: v.numpy() for k, v in episode.items() if k != 'steps'}
    out.append((steps, meta))
  return out


def _assert_dense_equals_nested(dense_ds, nested_ds):
  nested = _nested_to_numpy(nested_ds)
  dense = list(dense_ds.as_numpy_iterator())
  assert len(dense) == len(nested)
  for (steps, meta), episode in zip(nested, dense):
    dense_steps = episode.pop('steps')
    rlds_testing.assert_structures_equal(episode, meta)
    length = len(dense_steps['is_last'])
    assert length == len(steps)
    for t, step in enumerate(steps):
      rlds_testing.assert_structures_equal(
          tf.nest.map_structure(lambda x, t=t: x[t], dense_steps), step)


@pytest.mark.parametrize('how', ['version_dir', 'dataset_dir', 'pathlib', 'name'])
def test_dense_equals_nested(data_dir, how):
  source = {
      'version_dir': os.path.join(data_dir, 'toy_rlds', '1.0.0'),
      'dataset_dir': os.path.join(data_dir, 'toy_rlds'),
      'pathlib': pathlib.Path(data_dir) / 'toy_rlds' / '1.0.0',
      'name': 'toy_rlds',
  }[how]
  kwargs = {'data_dir': data_dir} if how == 'name' else {}
  dense = loading.load(source, dense=True, **kwargs)
  nested = loading.load(source, **kwargs)
  assert isinstance(nested.element_spec['steps'], tf.data.DatasetSpec)
  spec = dense.element_spec['steps']
  assert spec['observation']['image'] == tf.TensorSpec([None, 8, 8, 3], tf.uint8)
  assert spec['observation']['x'] == tf.TensorSpec([None, 2], tf.float64)
  assert spec['lang'] == tf.TensorSpec([None], tf.string)
  _assert_dense_equals_nested(dense, nested)


def test_named_episodes_round_trip_exactly(data_dir):
  dense = list(loading.load(os.path.join(data_dir, 'toy_rlds'), dense=True)
               .as_numpy_iterator())
  for i, (name, length) in enumerate(LENGTHS.items()):
    expected = _episode(i, length, name != 'truncated')
    got = dense[i]
    assert got['episode_id'] == i, name
    assert got['agent'] == expected['agent'].encode()
    exp_steps = dict(expected['steps'])
    exp_steps['lang'] = np.array([s.encode() for s in exp_steps['lang']],
                                 dtype=object)
    for path, value in [
        ('image', exp_steps['observation']['image']),
        ('x', exp_steps['observation']['x']),
    ]:
      np.testing.assert_array_equal(got['steps']['observation'][path], value)
    assert got['steps']['observation']['x'].dtype == np.float64
    np.testing.assert_array_equal(got['steps']['is_terminal'],
                                  exp_steps['is_terminal'])
    np.testing.assert_array_equal(got['steps']['lang'].astype(bytes),
                                  exp_steps['lang'].astype(bytes))


@pytest.mark.parametrize('step_fields, kept', [
    (['observation/x', 'reward'], ['observation/x', 'reward']),
    (['observation', 'lang'], ['lang', 'observation/image', 'observation/x']),
    (['/is_last/'], ['is_last']),
], ids=['fields', 'a-path-selects-below-it', 'slashes'])
def test_step_fields_keeps_and_decodes_only_those(data_dir, step_fields,
                                                  kept):
  path = os.path.join(data_dir, 'toy_rlds')
  full = list(loading.load(path, dense=True).as_numpy_iterator())
  only = loading.load(path, dense=True, step_fields=step_fields)
  assert [p for p, _ in nest_paths.flatten_with_paths(
      only.element_spec['steps'])] == kept
  for episode, want in zip(only.as_numpy_iterator(), full):
    assert sorted(episode) == sorted(want)  # Episode metadata kept.
    for field in kept:
      np.testing.assert_array_equal(
          nest_paths.get_path(episode['steps'], field),
          nest_paths.get_path(want['steps'], field))
  chosen = loading.load(path, dense=True, step_fields=step_fields,
                        episodes=[3, 1])
  assert [int(e['episode_id']) for e in chosen] == [3, 1]
  assert chosen.element_spec['steps'] == only.element_spec['steps']


def test_step_fields_errors(data_dir):
  path = os.path.join(data_dir, 'toy_rlds')
  with pytest.raises(KeyError, match=r"load: no step field 'observation/y' "
                     r'\(step fields: action, is_first, is_last, is_terminal, '
                     r'lang, observation/image, observation/x, reward\)'):
    loading.load(path, dense=True, step_fields=['observation/y'])
  with pytest.raises(ValueError, match='load: step_fields needs dense=True'):
    loading.load(path, step_fields=['reward'])
  with pytest.raises(TypeError, match='a list of step field paths'):
    loading.load(path, dense=True, step_fields='reward')


def test_plain_tensor_dataset_and_split_slicing(data_dir):
  dense = loading.load('toy_vectors', 'train[:2]', data_dir=data_dir,
                       dense=True)
  nested = loading.load('toy_vectors', 'train[:2]', data_dir=data_dir)
  _assert_dense_equals_nested(dense, nested)
  assert len(list(dense)) == 2
  config = tfds.ReadConfig(interleave_cycle_length=1)
  assert len(list(loading.load('toy_rlds', 'test+train[:1]', data_dir=data_dir,
                               dense=True, read_config=config))) == 3


def test_errors(data_dir, tmp_path):
  missing = os.path.join(data_dir, 'nowhere')
  with pytest.raises(FileNotFoundError, match=f"'{missing}' does not exist"):
    loading.load(missing)
  empty = tmp_path / 'empty'
  empty.mkdir()
  with pytest.raises(ValueError, match=f"'{empty}' is not a TFDS dataset directory"):
    loading.load(empty)
  with pytest.raises(ValueError, match='holds several datasets'):
    loading.load(data_dir)
  with pytest.raises(ValueError, match="no TFDS dataset named 'nope_rlds'"):
    loading.load('nope_rlds', data_dir=data_dir)
  not_rlds = os.path.join(data_dir, 'not_rlds', '1.0.0')
  with pytest.raises(ValueError) as error:
    loading.load(not_rlds)
  assert str(error.value) == (
      f"load: dataset '{not_rlds}' is not an RLDS dataset: it has no 'steps' "
      'feature of type tfds.features.Dataset (its top-level features: x '
      '(Tensor)).')
  with pytest.raises(ValueError, match="'not_rlds' is not an RLDS dataset"):
    loading.load('not_rlds', data_dir=data_dir, dense=True)
  with pytest.raises(ValueError, match=r"no split 'validation' \(its splits: \['test', 'train'\]"):
    loading.load('toy_rlds', 'validation', data_dir=data_dir)
  with pytest.raises(TypeError, match='name_or_dir must be a TFDS name'):
    loading.load(3)


def test_a_chunk_dataset_is_named_as_one(data_dir, tmp_path):
  # It used to be "is not an RLDS dataset" with the whole FeaturesDict
  # (684 characters on one line).
  from rlds_lite import random_access  # pylint: disable=g-import-not-at-top
  from rlds_lite.random_access import layout  # pylint: disable=g-import-not-at-top
  assert rlds_lite.source._CHUNK_LAYOUT == layout.LAYOUT_NAME  # pylint: disable=protected-access
  source = os.path.join(data_dir, 'toy_vectors', '1.0.0')
  chunks = random_access.convert(source, str(tmp_path / 'chunks'),
                                 progress=False)
  for read in (loading.load, rlds_lite.open):
    with pytest.raises(ValueError) as error:
      read(chunks)
    assert str(error.value) == (
        f'load: {chunks} is a chunk dataset (rlds_lite.random_access, '
        f'converted from {source}); pass its source, or read it with '
        'rlds_lite.random_access.')


def test_a_dataset_without_steps_names_its_top_level_features(tmp_path):
  # Not the whole FeaturesDict: at most 8 keys, each with its kind.
  features = {f'k{i:02d}': np.int32 for i in range(10)}
  features['steps'] = {'x': np.float32}  # Not a tfds.features.Dataset.
  path = tfds_fixtures.write_dataset(
      str(tmp_path), 'wide', tfds.features.FeaturesDict(features),
      {'train': [{**{k: 1 for k in features if k != 'steps'},
                  'steps': {'x': 0.5}}]})
  with pytest.raises(ValueError) as error:
    rlds_lite.open(path)
  assert str(error.value) == (
      f"load: dataset '{path}' is not an RLDS dataset: it has no 'steps' "
      'feature of type tfds.features.Dataset (its top-level features: k00 '
      '(Tensor), k01 (Tensor), k02 (Tensor), k03 (Tensor), k04 (Tensor), k05 '
      '(Tensor), k06 (Tensor), k07 (Tensor) and 3 more).')


_READ_EVERY_WAY = """
import sys
import rlds_lite
from rlds_lite import checks, stats
path = sys.argv[1]
for name, read in [('load', lambda: list(rlds_lite.load(path, dense=True))),
                   ('nested', lambda: list(rlds_lite.load(path))),
                   ('stats', lambda: stats.compute(path)),
                   ('validate', lambda: checks.validate(path)),
                   ('inspect', lambda: checks.describe(path))]:
  try:
    read()
    print(name, 'read')
  except ValueError as error:
    print(name, error)
"""


def test_a_zero_size_plain_step_field_is_refused_not_a_crash(tmp_path):
  # Published by plain TFDS (rlds_lite's writer byte-encodes such a field):
  # TFDS's parser divides by its zero size and the process dies (SIGFPE), so
  # every reader is run in a subprocess that must live to print its error.
  features = tfds.features.FeaturesDict({'steps': tfds.features.Dataset({
      'empty': tfds.features.Tensor(shape=(2, 0), dtype=np.float32),
      'is_first': np.bool_, 'is_last': np.bool_})})
  path = tfds_fixtures.write_dataset(
      str(tmp_path), 'zero', features,
      {'train': [{'steps': {'empty': np.zeros((2, 2, 0), np.float32),
                            'is_first': [True, False],
                            'is_last': [False, True]}}]})
  result = subprocess.run([sys.executable, '-c', _READ_EVERY_WAY, path],
                          capture_output=True, text=True, timeout=300,
                          check=False)
  assert result.returncode == 0, result.stderr[-2000:]
  message = (f"load: dataset '{path}': step field 'empty' has shape (2, 0) stored "
             'as plain values, which TFDS cannot parse (it divides by the '
             'zero size and kills the process); it is not read.')
  assert result.stdout.splitlines() == [
      f'{name} {message}'
      for name in ('load', 'nested', 'stats', 'validate', 'inspect')]


def test_found_by_name_without_features_json(tmp_path):
  """TFDS's lookup by name skips a prepared dataset without features.json.

  With the features in dataset_info.json (as rlds_lite writes) the dataset
  reads (the highest version, or the one named); a legacy dataset (TFDS's
  own layout, features in features.json only) gets the error naming the file
  instead of "no dataset named".
  """
  from rlds_lite import synthetic, tfds as rlds_tfds  # pylint: disable=g-import-not-at-top
  data_dir = str(tmp_path)
  for version, count in (('1.0.0', 2), ('1.1.0', 3)):
    path = rlds_tfds.write_dataset(synthetic.episodes(count, seed=0), data_dir,
                                   'toy', version=version)
    os.remove(os.path.join(path, 'features.json'))
  assert len(list(loading.load('toy', data_dir=data_dir))) == 3
  assert len(list(loading.load('toy:1.0.0', data_dir=data_dir))) == 2
  with pytest.raises(ValueError, match="no TFDS dataset named 'toy:2.0.0'"):
    loading.load('toy:2.0.0', data_dir=data_dir)
  legacy = tfds_fixtures.write_dataset(
      data_dir, 'legacy', tfds_fixtures.vector_features(3, 2),
      {'train': tfds_fixtures.vector_episodes(1, 3, obs_dim=3, action_dim=2)})
  os.remove(os.path.join(legacy, 'features.json'))
  with pytest.raises(loading.CorruptDatasetError,
                     match='features.json: is missing, and dataset_info.json '
                           'does not describe the features either'):
    loading.load('legacy', data_dir=data_dir)


_LOAD_CAMERAS = '''
import tempfile, rlds_lite
from rlds_lite import synthetic
path = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=2, length=4)
episode = next(iter(rlds_lite.load(path, dense=True)))
print(episode['steps']['language_instruction'].shape)
'''


def test_loading_images_and_strings_warns_nothing_about_tfds_internals():
  # TFDS's decode_batch_example reads its own deprecated `dtype`, and absl
  # warned "FeatureConnector.dtype is deprecated" in the user's console. A
  # fresh process: absl prints that warning only the first 10 times.
  import subprocess, sys  # pylint: disable=g-import-not-at-top,multiple-imports
  run = subprocess.run([sys.executable, '-c', _LOAD_CAMERAS],
                       capture_output=True, text=True, timeout=300,
                       check=True)
  assert run.stdout == '(4,)\n'
  assert 'is deprecated' not in run.stderr


def test_moved_names_still_work_and_warn_once(data_dir):
  path = os.path.join(data_dir, 'toy_vectors', '1.0.0')
  option_objects._WARNED.clear()  # pylint: disable=protected-access
  with pytest.warns(DeprecationWarning, match=r'rlds_lite\.open'):
    builder, label = loading.rlds_builder(path)
  assert (os.fspath(builder.data_dir), label) == (path, path)
  with pytest.warns(DeprecationWarning,
                    match=r'loading\.named_read_errors is now rlds_lite\.'
                    r'diagnosis\.named_read_errors'):
    assert loading.named_read_errors is rlds_lite.diagnosis.named_read_errors
  with warnings.catch_warnings():
    warnings.simplefilter('error')  # Once: no second warning.
    assert loading.named_read_errors is rlds_lite.diagnosis.named_read_errors
  with pytest.raises(AttributeError, match="has no attribute 'nope'"):
    loading.nope  # pylint: disable=pointless-statement


def test_a_source_is_accepted_wherever_a_path_is(data_dir):
  path = os.path.join(data_dir, 'toy_vectors', '1.0.0')
  source = rlds_lite.open(path, 'train[:2]')
  assert source.num_episodes == 2
  assert int(loading.load(source).cardinality()) == 2
  assert int(loading.load(source, 'train[:1]').cardinality()) == 1
  assert rlds_lite.pipeline.dataset_size(source) == 2
  assert rlds_lite.open(path).num_steps == sum(
      int(e['steps']['reward'].shape[0]) for e in loading.load(path, dense=True))
