"""Records a reader cannot parse are refused, values that do not fit named.

A ``tf.train.Example`` over 2**31 - 1 bytes cannot be parsed (TF 2.21
crashes at 2**31 bytes and reads larger records as empty): every writer
refuses such an episode before it reaches a shard, naming it, its size and
what to do. The limit is patched down to test every writer cheaply; one
real 2.2 GB case is refused from array sizes alone (a broadcast view: no
memory). Also: Python ints that overflow the feature dtype, and the memory
a uint8 column costs.
"""

import os
import tracemalloc

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import rlds_lite
import tfds_build_testing as et
from rlds_lite.convert import episodes as convert_episodes
from rlds_lite.tfds import beam as beam_lib
from rlds_lite.tfds import build_from_envlogger
from rlds_lite.tfds import encoding
from rlds_lite.tfds import EpisodeWriter
from rlds_lite.tfds import RLDSBuilder
from rlds_lite.tfds import RLDSConfig
from rlds_lite.tfds import shards
from rlds_lite.tfds import write_dataset

ADVICE = (r"over the 1.5 kB a record can hold; store images encoded "
          r"\(image_encoding='png' or 'jpeg'\) or split the episode into "
          r'shorter ones\.')


def _flags(n):
  index = np.arange(n)
  return {'is_first': index == 0, 'is_last': index == n - 1,
          'is_terminal': index == n - 1}


def _episode(n, as_lists=False):
  steps = {'observation': np.ones((n, 4), np.float32), **_flags(n)}
  if as_lists:   # Not the exact fast path: the checked one.
    steps = [{k: v[i] for k, v in steps.items()} for i in range(n)]
  return {'steps': steps}


FEATURES = {'steps': {'observation': tfds.features.Tensor(shape=(4,),
                                                          dtype=np.float32)}}


def test_a_real_2_2_gb_episode_is_refused_before_anything_is_written(
    tmp_path):
  # The np.ones((100000, 5500), np.float32), as a view of one value.
  observation = np.broadcast_to(np.float32(1), (100_000, 5500))
  features = {'steps': {'observation': tfds.features.Tensor(
      shape=(5500,), dtype=np.float32)}}
  writer = EpisodeWriter(tmp_path, 'huge', features)
  writer.add_episode(_episode(2) | {'steps': {
      'observation': np.ones((2, 5500), np.float32), **_flags(2)}})
  with pytest.raises(encoding.RecordTooLargeError,
                     match=r"^episode 1: its serialized tf.train.Example is "
                     r'2.2 GB, over the 2 GiB a record can hold; store '
                     r"images encoded \(image_encoding='png' or 'jpeg'\) or "
                     r'split the episode into shorter ones\.$') as error:
    writer.add_episode({'steps': {'observation': observation,
                                  **_flags(100_000)}})
  assert error.value.nbytes > 2_200_000_000
  assert writer.num_episodes == 1
  writer.close()
  assert len(rlds_lite.load(writer.path)) == 1


@pytest.fixture
def small_limit(monkeypatch):
  monkeypatch.setattr(encoding, 'MAX_RECORD_BYTES', 1500)


@pytest.mark.parametrize('as_lists', [False, True], ids=['columns', 'lists'])
def test_episode_writer_names_the_episode(tmp_path, small_limit, as_lists):
  with pytest.raises(encoding.RecordTooLargeError,
                     match=r'^episode 2: its serialized tf.train.Example is '
                     r'2.0 kB, ' + ADVICE):
    with EpisodeWriter(tmp_path, 'capped', FEATURES) as writer:
      writer.add_episodes([_episode(3, as_lists), _episode(5, as_lists),
                           _episode(100, as_lists)])
  assert os.listdir(tmp_path / 'capped') == ['.1.0.0.lock']


def test_write_dataset_and_converters_name_the_episode(tmp_path, small_limit):
  episodes = tf.data.Dataset.from_generator(
      lambda: iter([_episode(3), _episode(100)]),
      output_signature={'steps': {
          'observation': tf.TensorSpec((None, 4), tf.float32),
          'is_first': tf.TensorSpec((None,), tf.bool),
          'is_last': tf.TensorSpec((None,), tf.bool),
          'is_terminal': tf.TensorSpec((None,), tf.bool)}})
  with pytest.raises(encoding.RecordTooLargeError, match=r'^episode 1: .*' +
                     ADVICE):
    write_dataset(episodes, tmp_path, 'transformed', features=FEATURES)
  with pytest.raises(encoding.RecordTooLargeError, match=r'^episode 1: .*' +
                     ADVICE):
    convert_episodes.write_tfds([_episode(3), _episode(100)], tmp_path,
                                'converted')
  assert sorted(os.listdir(tmp_path)) == ['converted', 'transformed']
  for name in ('converted', 'transformed'):
    assert os.listdir(tmp_path / name) == ['.1.0.0.lock']


def _generated(split):
  del split
  yield _episode(3)
  yield _episode(100)


class CappedBuilder(RLDSBuilder, skip_registration=True):
  RLDS_CONFIG = RLDSConfig(features=FEATURES, episodes_fn=_generated)


def test_builders_name_the_episode(tmp_path, small_limit):
  with pytest.raises(encoding.RecordTooLargeError,
                     match=r"^capped_builder: episode 1 of split 'train': .*" +
                     ADVICE):
    CappedBuilder(data_dir=str(tmp_path)).download_and_prepare()
  assert not os.path.exists(tmp_path / 'capped_builder' / '1.0.0')

  et.record_script(str(tmp_path / 'logs'), [et.Episode(1, et.TERMINAL),
                                            et.Episode(40, et.TERMINAL)])
  with pytest.raises(encoding.RecordTooLargeError,
                     match=r'^recorded: episode 1 of EnvLogger recording '
                     r'.*logs.*: .*' + ADVICE):
    build_from_envlogger(tmp_path / 'logs', name='recorded',
                         data_dir=tmp_path / 'tfds')
  assert os.listdir(tmp_path / 'tfds' / 'recorded') == ['.1.0.0.lock']


def test_beam_refuses_from_its_size_bound(small_limit):
  encoder = encoding.EpisodeEncoder(
      rlds_lite.tfds.episode_features(FEATURES))
  assert beam_lib._conformed(encoder, _episode(3), 'e')  # pylint: disable=protected-access
  with pytest.raises(encoding.RecordTooLargeError,
                     match=r"^episode 7 of split 'x': .*" + ADVICE):
    beam_lib._conformed(encoder, _episode(100), "episode 7 of split 'x'")  # pylint: disable=protected-access


def test_shard_writer_refuses_an_oversized_record(tmp_path, small_limit):
  template = tfds.core.ShardedFileTemplate(
      data_dir=str(tmp_path), template=shards.SHARD_TEMPLATE,
      dataset_name='toy', split='train', filetype_suffix='tfrecord')
  writer = shards.ShardWriter(template, 'tfrecord')
  with pytest.raises(encoding.RecordTooLargeError, match=r'is 1.6 kB, over'):
    writer.write(b'x' * 1600)
  writer.write(b'x' * 1500)
  assert writer.finalize() == ([1], 1500)


# ----------------------------------------------------------------------------
# Values that do not fit their feature.


INT_FEATURES = {'steps': {'action': np.int32, 'pixel': np.uint8},
                'episode_id': np.int64}


@pytest.mark.parametrize('episode,message', [
    ({'steps': {'action': [1, 2**40], 'pixel': [0, 1]}, 'episode_id': 0},
     r'^episode 1: steps/action: cannot convert list to int32: Python '
     r'integer 1099511627776 out of bounds for int32$'),
    ({'steps': {'action': [1, 2], 'pixel': [0, 256]}, 'episode_id': 0},
     r'^episode 1: steps/pixel: cannot convert list to uint8: Python integer '
     r'256 out of bounds for uint8$'),
    ({'steps': [{'action': 1, 'pixel': -1}], 'episode_id': 0},
     r'^episode 1: steps/pixel: .*-1 out of bounds for uint8$'),
    ({'steps': {'action': [1], 'pixel': [0]}, 'episode_id': 2**70},
     r'^episode 1: episode_id: cannot convert int to int64: Python int too '
     r'large to convert to C long$'),
], ids=['int32_step', 'uint8_step', 'negative_uint8_step_dicts',
        'int64_metadata'])
def test_python_ints_that_overflow_name_the_field_and_episode(
    tmp_path, episode, message):
  good = {'steps': {'action': [1], 'pixel': [255], 'is_terminal': [True]},
          'episode_id': 0}
  steps = episode['steps']
  if isinstance(steps, list):
    steps = [dict(step, is_terminal=False) for step in steps]
  else:
    steps = dict(steps, is_terminal=[False] * len(steps['action']))
  episode = dict(episode, steps=steps)
  with EpisodeWriter(tmp_path, 'ints', INT_FEATURES) as writer:
    with pytest.raises(ValueError, match=message):
      writer.add_episodes([good, episode])
  assert len(rlds_lite.load(writer.path)) == 1   # The good one.


# ----------------------------------------------------------------------------
# Memory: a uint8 column is never widened to int64.


@pytest.mark.parametrize('values,bound', [('small', 1.2), ('random', 3.2)])
def test_uint8_column_memory_stays_near_the_record_size(tmp_path, values,
                                                        bound):
  # 32 MB of uint8 (a Tensor feature: stored as int64 varints, 1 byte each
  # below 128, 2 above). Peak traced allocations while writing, over the
  # episode: old code 10x (small values) and 136x (random: OOM at 200 MB).
  steps, width = 32_000, 1000
  rng = np.random.default_rng(0)
  pixels = (np.full((steps, width), 7, np.uint8) if values == 'small' else
            rng.integers(0, 256, (steps, width), dtype=np.uint8))
  features = {'steps': {'pixels': tfds.features.Tensor(shape=(width,),
                                                       dtype=np.uint8)}}
  writer = EpisodeWriter(tmp_path, 'wide', features)
  episode = {'steps': {'pixels': pixels, **_flags(steps)}}
  tracemalloc.start()
  try:
    writer.add_episode(episode)
    writer.close()
    peak = tracemalloc.get_traced_memory()[1]
  finally:
    tracemalloc.stop()
  assert peak < bound * pixels.nbytes, peak / pixels.nbytes
  loaded = next(iter(rlds_lite.load(writer.path, dense=True)))
  np.testing.assert_array_equal(loaded['steps']['pixels'].numpy(), pixels)
