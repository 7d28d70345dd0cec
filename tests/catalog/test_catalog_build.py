"""`rlds_lite.catalog.episodes`: the columns against a NumPy reference, the cache."""

import os
import stat

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import catalog as catalog_lib
from rlds_lite.catalog import build
from rlds_lite.catalog import storage
from rlds_lite.catalog import table
from rlds_lite.stats import cache as stats_cache
from rlds_lite.stats import types as stats_types
from rlds_lite.tfds import EpisodeWriter
import catalog_testing


@pytest.fixture(name='robot', scope='module')
def _robot(tmp_path_factory):
  data = catalog_testing.episodes()
  path = catalog_testing.write(str(tmp_path_factory.mktemp('robot')), data=data)
  return path, data


def test_columns_match_the_numpy_reference(robot):
  path, data = robot
  catalog = catalog_lib.episodes(path, progress=False, cache=False)
  assert catalog.columns == (
      'index', 'episode_id', 'length', 'return', 'last_reward', 'terminated',
      'truncated', 'language_instruction', 'episode_metadata/file_path',
      'episode_metadata/scene', 'episode_metadata/success', 'shard', 'record')
  expected = catalog_testing.reference(data)
  records = catalog.to_records()
  for name, values in expected.items():
    column = catalog.resolve(name)
    assert [r[column] for r in records] == values, name
  assert catalog['scene'].dtype == np.int32
  assert catalog['success'].dtype == bool
  assert catalog['return'].dtype == np.float64


@pytest.mark.parametrize('index, length, ret, last, terminated, truncated', [
    (0, 1, 0.0, None, False, True),  # One step: its reward is the last one.
    (1, None, None, 5.0, True, False),  # Terminal, non-zero last reward.
    (2, None, None, None, False, True),  # Truncated.
    (3, 0, 0.0, None, False, False),  # No steps: neither.
], ids=['one-step', 'terminal', 'truncated', 'empty'])
def test_named_episode_cases(robot, index, length, ret, last, terminated,
                             truncated):
  path, data = robot
  row = catalog_lib.episodes(path, progress=False).row(index)
  reward = data[index]['steps']['reward']
  assert row['length'] == (len(reward) if length is None else length)
  assert row['return'] == (float(reward[:-1].sum()) if ret is None else ret)
  if last is not None or length == 0:
    assert row['last_reward'] == last
  assert row['terminated'] is terminated
  assert row['truncated'] is truncated


def test_language_lists_each_episodes_distinct_instructions_in_order(robot):
  path, _ = robot
  column = catalog_lib.episodes(path, progress=False)['language_instruction']
  assert column[5] == ('pick up the red block', 'close the drawer')
  assert column[4] == ('open the drawer',)
  assert column[3] == ()


def test_shard_and_record_come_from_the_dataset_info(robot):
  path, _ = robot
  catalog = catalog_lib.episodes(path, progress=False)
  instructions = tfds.builder_from_directory(path).info.splits[
      'train'].file_instructions
  expected = [(os.path.basename(i.filename), r) for i in instructions
              for r in range(i.examples_in_shard)]
  assert list(zip(catalog['shard'].tolist(),
                  catalog['record'].tolist())) == expected
  assert catalog_testing.shard_files(path) == sorted({s for s, _ in expected})
  assert len(expected) == 12 and len(instructions) == 3


def test_nested_language_fields_string_ids_and_vector_rewards(tmp_path):
  features = {
      'steps': {'observation': {'natural_language_instruction':
                                tfds.features.Text(),
                                'goal_text': tfds.features.Text()},
                'reward': tfds.features.Tensor(shape=(2,), dtype=np.float64),
                'caption_embedding': tfds.features.Tensor(shape=(3,),
                                                          dtype=np.float32)},
      'episode_id': tfds.features.Text(),
      'camera': tfds.features.Tensor(shape=(2,), dtype=np.float32)}
  with EpisodeWriter(str(tmp_path), 'nested', features) as writer:
    writer.add_episode({
        'steps': {'observation': {'natural_language_instruction': ['a', 'a', 'b'],
                                  'goal_text': ['x', 'y', 'z']},
                  'reward': [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
                  'caption_embedding': np.zeros((3, 3), np.float32),
                  'is_terminal': [False, False, False]},
        'episode_id': 'run-7/ep-0', 'camera': [1.0, 2.0]})
  catalog = catalog_lib.episodes(writer.path, progress=False)
  # Not language: goal_text (name), caption_embedding (floats); camera is
  # not a scalar.
  assert catalog.columns == (
      'index', 'episode_id', 'length', 'return', 'last_reward', 'terminated',
      'truncated', 'observation/natural_language_instruction', 'shard',
      'record')
  assert catalog.to_records()[0] == {
      'index': 0, 'episode_id': 'run-7/ep-0', 'length': 3,
      'return': [4.0, 6.0], 'last_reward': [5.0, 6.0], 'terminated': False,
      'truncated': True, 'observation/natural_language_instruction': ['a', 'b'],
      'shard': 'nested-train.tfrecord-00000', 'record': 0}
  assert catalog.select("natural_language_instruction == 'b'")[
      'index'].tolist() == [0]


def test_steps_without_reward_or_is_terminal_give_no_such_columns(tmp_path):
  with EpisodeWriter(str(tmp_path), 'bare', {'steps': {'x': np.int32}}) as w:
    w.add_episode({'steps': {'x': [1, 2], 'is_first': [True, False],
                             'is_last': [False, True],
                             'is_terminal': [False, True]}})
  # The writer always stores the flags; a dataset made elsewhere may not.
  catalog = catalog_lib.episodes(w.path, progress=False)
  assert 'return' not in catalog and 'terminated' in catalog
  plan = build._plan(tfds.features.FeaturesDict({  # pylint: disable=protected-access
      'steps': tfds.features.Dataset({'x': np.int32})}))
  assert (plan.reward, plan.is_terminal, plan.length_field) == (None, None, 'x')


@pytest.mark.parametrize('path, feature, expected', [
    ('language_instruction', tfds.features.Text(), True),
    ('observation/natural_language_instruction', tfds.features.Text(), True),
    ('instruction', tfds.features.Tensor(shape=(), dtype=np.str_), True),
    ('task', tfds.features.Text(), True),
    ('language', tfds.features.Text(), True),
    ('language_embedding', tfds.features.Tensor(shape=(512,),
                                                dtype=np.float32), False),
    ('task_id', tfds.features.Tensor(shape=(), dtype=np.int64), False),
    ('instructions', tfds.features.Sequence(tfds.features.Text()), False),
    ('file_path', tfds.features.Text(), False),
    ('language_image', tfds.features.Image(shape=(4, 4, 3)), False),
], ids=['language_instruction', 'nested', 'string-tensor', 'task', 'language',
        'embedding', 'integer-task-id', 'not-scalar', 'other-name', 'image'])
def test_language_fields_are_detected_by_name_and_type(path, feature, expected):
  assert build.is_language_field(path, feature) is expected


def test_catalog_is_cached_and_rebuilt_when_the_dataset_changes(tmp_path,
                                                                 monkeypatch):
  data = catalog_testing.episodes(num_episodes=4)
  path = catalog_testing.write(str(tmp_path), data=data)
  first = catalog_lib.episodes(path, progress=False)
  cached = os.listdir(os.path.join(path, storage.CACHE_SUBDIR))
  assert len(cached) == 1 and cached[0].startswith('train-')

  def no_pass(*args):
    raise AssertionError('the catalog was rebuilt')

  with monkeypatch.context() as patch:
    patch.setattr(build, '_pass', no_pass)
    assert catalog_lib.episodes(path, progress=False).to_records() == (
        first.to_records())
  with EpisodeWriter(str(tmp_path), 'robot', None, if_exists='append') as w:
    w.add_episodes(catalog_testing.episodes(num_episodes=2, first_id=100))
  again = catalog_lib.episodes(path, progress=False)
  assert again['episode_id'].tolist() == [0, 1, 2, 3, 100, 101]
  assert again['shard'].tolist()[-1] == 'robot-train.tfrecord-00001'
  # The stale catalog was replaced, not kept beside the new one.
  assert len(os.listdir(os.path.join(path, storage.CACHE_SUBDIR))) == 1


def test_read_only_dataset_directory_falls_back_to_the_cache_dir(
    tmp_path, monkeypatch):
  path = catalog_testing.write(str(tmp_path / 'data'),
                               data=catalog_testing.episodes(num_episodes=2))
  monkeypatch.setenv('RLDS_LITE_CACHE_DIR', str(tmp_path / 'cache'))
  real_write = storage._write_atomically  # pylint: disable=protected-access

  def read_only(target, catalog):
    if target.startswith(path):
      raise PermissionError(13, 'Permission denied', target)
    real_write(target, catalog)

  monkeypatch.setattr(storage, '_write_atomically', read_only)
  catalog_lib.episodes(path, progress=False)
  assert not os.path.exists(os.path.join(path, storage.CACHE_SUBDIR))
  (cached,) = os.listdir(tmp_path / 'cache' / 'catalog')
  assert cached.endswith('.npz')
  monkeypatch.setattr(build, '_pass', None)  # Read back, not rebuilt.
  assert len(catalog_lib.episodes(path, progress=False)) == 2


_KEY = 'k' * 16
_STATS = stats_types.DatasetStats(0, 0, 0, 0,
                                  stats_types.FieldStats.empty('length'), None,
                                  {})
CACHES = {
    # cache: (folder, file name, write, read back)
    'catalog': (storage.CACHE_SUBDIR, f'train-invalid-{_KEY}.npz',
                lambda d: storage.write(d, 'train', _KEY, table.Catalog(
                    {'index': np.arange(3)})),
                lambda d: storage.read(d, 'train', _KEY)['index'].tolist()),
    'stats': (stats_cache.CACHE_SUBDIR, f'{_KEY}.json',
              lambda d: stats_cache.write(d, _KEY, _STATS),
              lambda d: stats_cache.read(d, _KEY) == _STATS),
}


@pytest.mark.parametrize('cache', sorted(CACHES))
def test_a_cache_file_is_published_whole_and_a_killed_writers_removed(
    tmp_path, cache):
  folder, name, write, read = CACHES[cache]
  os.mkdir(tmp_path / folder)
  killed = tmp_path / folder / f'.{name}.incomplete-123-{"ab" * 16}'
  killed.write_bytes(b'half a file')
  umask = os.umask(0o022)
  try:
    paths = [write(str(tmp_path)) for _ in range(2)]  # The second replaces.
  finally:
    os.umask(umask)
  assert paths == [str(tmp_path / folder / name)] * 2
  assert os.listdir(tmp_path / folder) == [name]  # No staging, no lock.
  assert stat.S_IMODE(os.stat(paths[0]).st_mode) == 0o644  # Not mkstemp's.
  assert read(str(tmp_path)) == ([0, 1, 2] if cache == 'catalog' else True)


@pytest.mark.parametrize('split, error, message', [
    ('test', ValueError, "has no split 'test' (its splits: ['train'])"),
    ('train[:2]', ValueError, "has no split 'train[:2]'"),
], ids=['unknown-split', 'sliced-split'])
def test_bad_splits(robot, split, error, message):
  with pytest.raises(error) as raised:
    catalog_lib.episodes(robot[0], split, progress=False)
  assert message in str(raised.value)


def test_array_record_datasets(tmp_path):
  data = catalog_testing.episodes(num_episodes=6)
  path = catalog_testing.write(str(tmp_path), data=data, per_file=4,
                               file_format='array_record')
  catalog = catalog_lib.episodes(path, progress=False)
  assert catalog['length'].tolist() == catalog_testing.reference(data)['length']
  assert catalog['shard'].tolist() == ['robot-train.array_record-00000'] * 4 + [
      'robot-train.array_record-00001'] * 2


@pytest.fixture(name='six', scope='module')
def _six(tmp_path_factory):
  """6 episodes, 2 per shard (3 shards)."""
  return catalog_testing.write(str(tmp_path_factory.mktemp('six')),
                               data=catalog_testing.episodes(num_episodes=6),
                               per_file=2)


@pytest.mark.parametrize('case', sorted(catalog_testing.DAMAGE))
def test_a_damaged_shard_is_named_as_the_other_readers_name_it(six, tmp_path,
                                                               case):
  # It was TF's own text ("{{function_node __wrapped__IteratorGetNext...}}
  # truncated record at 1538"), naming no file or episode, or for edited
  # shardLengths "could not broadcast input array from shape (6,) into
  # shape (9,)".
  path, shard = catalog_testing.damaged(six, str(tmp_path / 'd'), case)
  with pytest.raises(build.dataset_files.CorruptDatasetError) as error:
    catalog_lib.episodes(path, cache=False, progress=False)
  assert str(error.value) == catalog_testing.DAMAGE[case].format(shard=shard)


def test_a_read_error_the_files_do_not_explain_names_the_dataset(
    six, monkeypatch):
  # Whole files, yet TF fails (here: records that are not Examples).
  monkeypatch.setattr(build.records_lib, 'read_records',
                      lambda files: tf.data.Dataset.from_tensors(b'x'))
  with pytest.raises(ValueError, match=rf"^catalog: cannot read the episodes "
                     rf"of '{six}' split 'train': .*Could not parse example"):
    catalog_lib.episodes(six, cache=False, progress=False)
