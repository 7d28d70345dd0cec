"""RLDSBuilder: config-only TFDS builders, `tfds build`, Beam, errors."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import tfds_build_testing as et
import rlds_lite
from rlds_lite.tfds import RLDSBuilder
from rlds_lite.tfds import RLDSConfig
from rlds_lite.tfds import builder as builder_lib

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


def counting_episodes(split):
  """Module-level (picklable) episodes_fn: split-dependent columnar episodes."""
  offset = 100 if split == 'test' else 0
  for i in range(3 if split == 'train' else 1):
    length = i + 1
    yield {'steps': {'observation': np.arange(length, dtype=np.float32) + offset,
                     'reward': np.full(length, 0.1 * (i + 1)),
                     'is_terminal': np.arange(length) == length - 1},
           'episode_id': i + offset}


COUNTING = dict(
    step_features={'observation': np.float32,
                   'reward': tfds.features.Tensor(shape=(), dtype=np.float64,
                                                  encoding='bytes')},
    episode_features={'episode_id': np.int64},
    episodes_fn=counting_episodes,
    splits=('train', 'test'))


class CountingRlds(RLDSBuilder, skip_registration=True):
  """Counting episodes."""
  RLDS_CONFIG = RLDSConfig(description='Counting.', **COUNTING)


class BeamCountingRlds(RLDSBuilder, skip_registration=True):
  RLDS_CONFIG = RLDSConfig(beam=True, **COUNTING)


class TwoConfigsRlds(RLDSBuilder, skip_registration=True):
  BUILDER_CONFIGS = [
      RLDSConfig(name='small', **COUNTING),
      RLDSConfig(name='other', **{**COUNTING, 'splits': ('test',)}),
  ]


def _episodes(builder, split):
  """The split's episodes, steps dense and decoded (via rlds_lite.load)."""
  return _dense_load(builder.data_dir, split)


def _expected(split):
  return list(counting_episodes(split))


def _assert_counting(builder, split):
  loaded = _episodes(builder, split)
  expected = _expected(split)
  assert len(loaded) == len(expected)
  for actual, want in zip(loaded, expected):
    assert actual['episode_id'] == want['episode_id']
    np.testing.assert_array_equal(actual['steps']['observation'],
                                  want['steps']['observation'])
    np.testing.assert_array_equal(actual['steps']['reward'],
                                  want['steps']['reward'])
    assert actual['steps']['is_first'].tolist() == [True] + [False] * (
        len(want['steps']['reward']) - 1)


def test_builder_from_generator_config(tmp_path):
  builder = CountingRlds(data_dir=str(tmp_path))
  builder.download_and_prepare()
  assert builder.info.description == 'Counting.'
  assert builder.info.splits['train'].num_examples == 3
  _assert_counting(builder, 'train')
  _assert_counting(builder, 'test')
  assert builder.name == 'counting_rlds'
  assert len(_dense_load(builder.data_dir)) == 3


def _dense_load(path, split='train'):
  return list(rlds_lite.load(path, split=split, dense=True).as_numpy_iterator())


@pytest.mark.parametrize('file_system', ['local', 'remote'])
def test_dataset_info_json_holds_the_features(tmp_path, monkeypatch,
                                              file_system):
  """TFDS writes the features to features.json; they go in dataset_info.json.

  A remote (``gs://``) data_dir cannot be reached here: its code path (no
  lock, no fsync) runs on a local directory taken for a remote one.
  """
  if file_system == 'remote':
    monkeypatch.setattr(builder_lib.locking, 'is_local', lambda path: False)
  builder = CountingRlds(data_dir=str(tmp_path))
  builder.download_and_prepare()
  with open(os.path.join(builder.data_dir, 'dataset_info.json')) as f:
    features = json.load(f)['features']
  with open(os.path.join(builder.data_dir, 'features.json')) as f:
    assert features == json.load(f)
  os.remove(os.path.join(builder.data_dir, 'features.json'))
  _assert_counting(builder, 'train')


def test_max_examples_per_split(tmp_path):
  builder = CountingRlds(data_dir=str(tmp_path))
  builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
      max_examples_per_split=2))
  assert builder.info.splits['train'].num_examples == 2


def test_builder_configs_get_their_own_directories(tmp_path):
  small = TwoConfigsRlds(data_dir=str(tmp_path), config='small')
  small.download_and_prepare()
  other = TwoConfigsRlds(data_dir=str(tmp_path), config='other')
  other.download_and_prepare()
  assert small.data_dir.endswith(os.path.join('two_configs_rlds', 'small',
                                              '1.0.0'))
  assert sorted(other.info.splits) == ['test']
  _assert_counting(other, 'test')


def test_builder_with_beam_equals_without(tmp_path):
  plain = CountingRlds(data_dir=str(tmp_path))
  plain.download_and_prepare()
  beam = BeamCountingRlds(data_dir=str(tmp_path))
  beam.download_and_prepare(download_config=tfds.download.DownloadConfig(
      beam_runner='DirectRunner'))
  for split in ('train', 'test'):
    _assert_counting(beam, split)
    for a, b in zip(_episodes(plain, split), _episodes(beam, split)):
      tf.nest.map_structure(np.testing.assert_array_equal, a, b)


def test_envlogger_builder_infers_features_and_reloads_without_recordings(
    tmp_path):
  et.record_script(str(tmp_path / 'train_logs'),
                   [et.Episode(2, et.TERMINAL), et.Episode(0, et.RESET_ONLY)],
                   'image')
  et.record_script(str(tmp_path / 'test_logs'), [et.Episode(1, et.RESET_CUT)],
                   'image', first_episode=2)

  config = RLDSConfig(envlogger_dirs={'train': str(tmp_path / 'train_logs'),
                                      'test': [str(tmp_path / 'test_logs')]})

  class LoggedPixels(RLDSBuilder, skip_registration=True):
    RLDS_CONFIG = config

  builder = LoggedPixels(data_dir=str(tmp_path / 'tfds'))
  step = builder.info.features['steps'].feature
  assert isinstance(step['observation'], tfds.features.Image)
  builder.download_and_prepare()
  train = _episodes(builder, 'train')
  assert [len(e['steps']['is_first']) for e in train] == [3, 1]
  assert train[0]['steps']['is_terminal'].tolist() == [False, False, True]
  test = _episodes(builder, 'test')
  assert test[0]['episode_id'] == 2
  assert test[0]['steps']['is_terminal'].tolist() == [False, False]

  # The recordings are gone: the prepared dataset still loads by its class.
  for logs in ('train_logs', 'test_logs'):
    for root, _, files in os.walk(tmp_path / logs, topdown=False):
      for f in files:
        os.remove(os.path.join(root, f))
  reloaded = LoggedPixels(data_dir=str(tmp_path / 'tfds'))
  assert len(_episodes(reloaded, 'train')) == 2


@pytest.mark.parametrize('config,message', [
    (None, r'set RLDS_CONFIG = RLDSConfig\(\.\.\.\)'),
    (RLDSConfig(), r'needs features, step_features or envlogger_dirs'),
    (RLDSConfig(step_features={'x': np.float32}),
     r'needs envlogger_dirs or episodes_fn'),
    (RLDSConfig(envlogger_dirs='/no/such/logs'),
     r'EnvLogger directory /no/such/logs does not exist'),
    (RLDSConfig(step_features={'x': np.float32},
                episodes_fn=lambda split: iter([])),
     r"split 'train' has no episodes"),
    (RLDSConfig(step_features={'x': np.float32},
                episodes_fn=lambda split: iter([{'steps': {'y': [1.0]}}])),
     r"episode 0 of split 'train': steps: missing field\(s\) \['is_terminal', "
     r"'x'\]"),
], ids=['no_config', 'no_features', 'no_source', 'missing_logs', 'no_episodes',
        'bad_episode'])
def test_config_errors(tmp_path, config, message):

  class Broken(RLDSBuilder, skip_registration=True):
    RLDS_CONFIG = config

  with pytest.raises((ValueError, FileNotFoundError), match=message):
    Broken(data_dir=str(tmp_path)).download_and_prepare()
  assert not os.path.exists(tmp_path / 'broken' / '1.0.0')


BUILDER_MODULE = '''
"""A config-only RLDS dataset, built by the `tfds build` CLI."""
import numpy as np
from rlds_lite.tfds import RLDSBuilder, RLDSConfig


def _episodes(split):
  for i in range(2):
    yield {'steps': {'observation': np.arange(3, dtype=np.float32) + i,
                     'is_terminal': np.arange(3) == 2},
           'episode_id': i}


class Builder(RLDSBuilder):
  """Toy episodes."""
  RLDS_CONFIG = RLDSConfig(step_features={'observation': np.float32},
                           episode_features={'episode_id': np.int64},
                           episodes_fn=_episodes)
'''


def test_tfds_build_cli(tmp_path):
  package = tmp_path / 'cli_toy'
  package.mkdir()
  (package / 'cli_toy_dataset_builder.py').write_text(
      textwrap.dedent(BUILDER_MODULE))
  tfds_cli = os.path.join(os.path.dirname(sys.executable), 'tfds')
  env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='3')
  result = subprocess.run(
      [tfds_cli, 'build', str(package), f'--data_dir={tmp_path / "data"}'],
      capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=240,
      check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  episodes = _dense_load(str(tmp_path / 'data' / 'cli_toy' / '1.0.0'))
  assert [int(e['episode_id']) for e in episodes] == [0, 1]
  np.testing.assert_array_equal(episodes[1]['steps']['observation'],
                                [1.0, 2.0, 3.0])
