"""rlds_lite.tfds.publish and the writers' publishing: one atomic switch.

- ``dataset_info.json`` alone describes a dataset (features inside): TFDS's
  readers and rlds_lite's restore the features from it even when
  ``features.json`` is stale or missing, and values round-trip exactly.
- Overwrites write a new generation of shards and keep the replaced one:
  a reader's pass survives one overwrite; one spanning two fails naming the
  missing shard, never yielding another version's data.
- Everything is flushed (fsync) before the switch, the directory after it.

Kills at each step are in tests/faults/test_faults_writers.py.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import rlds_lite
from rlds_lite.tfds import EpisodeWriter
from rlds_lite.tfds import FileOptions
from rlds_lite.tfds import leftovers
from rlds_lite.tfds import publish
from rlds_lite.tfds import write_dataset
from test_tfds_episode_writer import _assert_episode
from test_tfds_episode_writer import rich_episode
from test_tfds_episode_writer import rich_features
from test_tfds_episode_writer import vector_episode
from test_tfds_episode_writer import vector_features


def _ids(path, **kwargs):
  return [int(e['episode_id']) for e in
          rlds_lite.load(path, dense=True, **kwargs).as_numpy_iterator()]


# ----------------------------------------------------------------------------
# dataset_info.json alone describes the dataset.


@pytest.mark.parametrize('features_json', ['missing', 'stale'])
def test_features_come_from_dataset_info_json_alone(tmp_path, features_json):
  vectors = [vector_episode(3, 0), vector_episode(1, 1)]
  riches = [rich_episode(2, 0), rich_episode(3, 1)]
  with EpisodeWriter(tmp_path, 'vectors', vector_features()) as writer:
    writer.add_episodes(vectors)
  with EpisodeWriter(tmp_path, 'riches', rich_features()) as rich_writer:
    rich_writer.add_episodes(riches)
  other = write_dataset(rlds_lite.synthetic.episodes(1), tmp_path, 'other')
  with open(os.path.join(other, 'features.json')) as f:
    other_features = f.read()   # Another dataset's features.
  for path in (writer.path, rich_writer.path):
    with open(os.path.join(path, 'dataset_info.json')) as f:
      assert 'features' in json.load(f)
    features_path = os.path.join(path, 'features.json')
    if features_json == 'missing':
      os.remove(features_path)
    else:  # Stale: readers must not use it.
      with open(features_path, 'w') as f:
        f.write(other_features)
  builder = tfds.builder_from_directory(writer.path)
  assert builder.info.features.to_json() == vector_features().to_json()
  if features_json == 'stale':
    # TFDS's lookup by name wants the file to exist (any content).
    assert len(tfds.load('vectors', data_dir=str(tmp_path),
                         split='train')) == 2
  for actual, expected in zip(
      rlds_lite.load(writer.path, dense=True).as_numpy_iterator(), vectors):
    _assert_episode(actual, expected)   # float64 'bytes' rewards exact.
  loaded = list(rlds_lite.load(rich_writer.path, dense=True).as_numpy_iterator())
  for actual, expected in zip(loaded, riches):
    for key in ('image', 'pos', 'grid'):
      np.testing.assert_array_equal(actual['steps']['observation'][key],
                                    expected['steps']['observation'][key])
    assert [s.decode() for s in actual['steps']['language']] == (
        expected['steps']['language'])
    np.testing.assert_array_equal(actual['steps']['mode'],
                                  expected['steps']['mode'])
  nested = next(iter(tfds.builder_from_directory(rich_writer.path).as_dataset(
      split='train')))
  assert nested['task'].numpy() == b'stack'
  # The next writer puts features.json back, for tools that read it.
  with EpisodeWriter(tmp_path, 'vectors', None, if_exists='append') as again:
    again.add_episode(vector_episode(2, 2))
  with open(os.path.join(writer.path, 'features.json')) as f:
    assert json.load(f)['featuresDict']['features']['steps']


# ----------------------------------------------------------------------------
# Shard generations.


def _files(path):
  return sorted(n for n in os.listdir(path) if n.startswith('swap-'))


def test_overwrites_write_generations_and_keep_the_replaced_one(tmp_path):
  with EpisodeWriter(tmp_path, 'swap', vector_features()) as writer:
    writer.add_episodes([vector_episode(2, 0), vector_episode(2, 1)])
  path = writer.path
  assert _files(path) == ['swap-train.tfrecord-00000']
  for generation, episode_id in ((2, 7), (3, 8)):
    with EpisodeWriter(tmp_path, 'swap', vector_features(),
                       if_exists='overwrite') as again:
      again.add_episode(vector_episode(3, episode_id))
    assert _ids(path) == [episode_id]
    template = tfds.builder_from_directory(path).info.splits[
        'train'].filename_template.template
    assert template == f'{{DATASET}}-{{SPLIT}}-g{generation:04d}.' \
                       '{FILEFORMAT}-{SHARD_INDEX}'
  # Generation 1 was deleted by the second overwrite; 2 is kept, 3 current.
  assert _files(path) == ['swap-train-g0002.tfrecord-00000',
                          'swap-train-g0003.tfrecord-00000']
  with EpisodeWriter(tmp_path, 'swap', None, if_exists='append',
                     splits=('train', 'test')) as more:
    more.add_episode(vector_episode(1, 9), 'train')
    more.add_episode(vector_episode(1, 10), 'test')
  assert _ids(path) == [8, 9]
  assert _ids(path, split='test') == [10]
  assert _files(path) == ['swap-test-g0003.tfrecord-00000',
                          'swap-train-g0002.tfrecord-00000',
                          'swap-train-g0003.tfrecord-00000',
                          'swap-train-g0003.tfrecord-00001']


def test_a_pass_survives_one_overwrite_and_fails_clearly_after_two(tmp_path):
  with EpisodeWriter(tmp_path, 'swap', vector_features()) as writer:
    writer.add_episodes([vector_episode(2, 0), vector_episode(2, 1)])

  def overwrite(episode_id):
    with EpisodeWriter(tmp_path, 'swap', vector_features(),
                       if_exists='overwrite') as again:
      again.add_episode(vector_episode(2, episode_id))

  # Readers that read dataset_info.json before the overwrites (their passes
  # start later).
  before_one = rlds_lite.load(writer.path, dense=True)
  before_two = rlds_lite.load(writer.path, dense=True)
  overwrite(5)
  assert [int(e['episode_id']) for e in before_one.as_numpy_iterator()] == [
      0, 1]
  assert _ids(writer.path) == [5]
  overwrite(6)
  with pytest.raises(tf.errors.NotFoundError,
                     match=r'swap/1.0.0/swap-train.tfrecord-00000; No such '
                     r'file'):
    list(before_two.as_numpy_iterator())
  assert _ids(writer.path) == [6]


def test_read_builder_retries_while_dataset_info_json_changes(tmp_path,
                                                              monkeypatch):
  with EpisodeWriter(tmp_path, 'moving', vector_features()) as writer:
    writer.add_episode(vector_episode(2, 0))
  original = tfds.builder_from_directory
  calls = []

  def switched_meanwhile(path):
    calls.append(path)
    builder = original(path)
    if len(calls) == 1:  # A writer publishes while TFDS reads.
      with EpisodeWriter(tmp_path, 'moving', None, if_exists='append') as w:
        w.add_episode(vector_episode(1, 1))
    return builder

  monkeypatch.setattr(tfds, 'builder_from_directory', switched_meanwhile)
  builder = publish.read_builder(writer.path)
  assert len(calls) == 3  # Read, the writer's own read, read again.
  assert builder.info.splits['train'].num_examples == 2
  monkeypatch.undo()
  assert tfds.builder_from_directory(writer.path).info.splits[
      'train'].num_examples == 2


# ----------------------------------------------------------------------------
# Durability: flushed before the switch, the directory after it.


@pytest.fixture
def disk_log(monkeypatch):
  """Records fsyncs (by path) and renames, in order."""
  log = []
  fsync, replace = os.fsync, os.replace

  def logged_fsync(fd):
    log.append(('fsync', os.readlink(f'/proc/self/fd/{fd}')))
    return fsync(fd)

  def logged_replace(source, target):
    log.append(('rename', os.fspath(source), os.fspath(target)))
    return replace(source, target)

  monkeypatch.setattr(os, 'fsync', logged_fsync)
  monkeypatch.setattr(os, 'replace', logged_replace)
  return log


def _synced_before(log, path, index):
  return any(e == ('fsync', path) for e in log[:index])


def test_a_new_dataset_is_on_disk_before_it_is_renamed_into_place(tmp_path,
                                                                  disk_log):
  data_dir = tmp_path / 'new_data_dir'
  with EpisodeWriter(data_dir, 'durable', vector_features(),
                     options=FileOptions(max_episodes_per_file=1)) as writer:
    writer.add_episodes([vector_episode(2, 0), vector_episode(2, 1)])
  switch = next(i for i, e in enumerate(disk_log)
                if e[0] == 'rename' and e[2] == writer.path)
  staging = disk_log[switch][1]
  for name in os.listdir(writer.path):
    assert _synced_before(disk_log, os.path.join(staging, name), switch), name
  assert _synced_before(disk_log, staging, switch)
  after = disk_log[switch + 1:]
  for directory in (tmp_path / 'new_data_dir' / 'durable',  # The rename.
                    tmp_path / 'new_data_dir', tmp_path):  # Created dirs.
    assert ('fsync', str(directory)) in after, directory


def test_an_append_is_on_disk_before_dataset_info_json_is_replaced(tmp_path,
                                                                   disk_log):
  with EpisodeWriter(tmp_path, 'durable', vector_features()) as writer:
    writer.add_episode(vector_episode(2, 0))
  del disk_log[:]
  with EpisodeWriter(tmp_path, 'durable', None, if_exists='append') as again:
    again.add_episode(vector_episode(2, 1))
  info = os.path.join(writer.path, 'dataset_info.json')
  switch = next(i for i, e in enumerate(disk_log)
                if e[0] == 'rename' and e[2] == info)
  shard = os.path.join(writer.path, 'durable-train.tfrecord-00001')
  shard_rename = next(i for i, e in enumerate(disk_log)
                      if e[0] == 'rename' and e[2] == shard)
  assert _synced_before(disk_log, disk_log[shard_rename][1], shard_rename)
  assert _synced_before(disk_log, writer.path, switch)  # Shard names.
  assert _synced_before(disk_log, disk_log[switch][1], switch)
  assert ('fsync', writer.path) in disk_log[switch + 1:]
  assert _ids(writer.path) == [0, 1]


def test_publish_steps_are_in_order_and_the_hook_kills_only_when_named(
    monkeypatch):
  assert publish.PUBLISH_STEPS.index('info_written') < (
      publish.PUBLISH_STEPS.index('published'))
  monkeypatch.setenv(publish.FAULT_KILL_ENV, 'no_such_step')
  for step in publish.PUBLISH_STEPS:
    publish.step(step)  # Alive.
  with pytest.raises(ValueError, match='unknown publish step'):
    publish.step('nope')


def test_leftovers_module_reads_what_the_writer_references(tmp_path):
  with EpisodeWriter(tmp_path, 'refs', vector_features(),
                     options=FileOptions(max_episodes_per_file=1)) as writer:
    writer.add_episodes([vector_episode(1, 0), vector_episode(1, 1)])
  proto = leftovers.read_info_proto(writer.path)
  assert leftovers.referenced_files(writer.path, proto) == {
      'refs-train.tfrecord-00000', 'refs-train.tfrecord-00001'}
  assert leftovers.current_generation(proto) == 1
  assert leftovers.next_generation(writer.path, 'refs', proto) == 2
