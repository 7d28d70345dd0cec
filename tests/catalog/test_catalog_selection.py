"""``rlds_lite.load(path, episodes=...)``: only the chosen episodes, exactly."""

import os

import numpy as np
import pytest
import tensorflow as tf

import rlds_lite
from rlds_lite import catalog as catalog_lib
from rlds_lite.catalog import records as records_lib
import catalog_testing


@pytest.fixture(name='robot', scope='module')
def _robot(tmp_path_factory):
  data = catalog_testing.episodes()
  path = catalog_testing.write(str(tmp_path_factory.mktemp('robot')),
                               data=data, per_file=5)
  return path, data


def _ids(dataset):
  return [int(e['episode_metadata']['episode_id']) for e in dataset]


def _assert_same_episodes(got, expected):
  assert len(got) == len(expected)
  for a, b in zip(got, expected):
    tf.nest.map_structure(
        lambda x, y: np.testing.assert_array_equal(x.numpy(), y.numpy()), a, b)


@pytest.mark.parametrize('episodes, expected', [
    ([7], [7]),
    ([4, 5, 6], [4, 5, 6]),  # One run across a shard boundary (5 per shard).
    ([11, 0, 6], [11, 0, 6]),  # The order given.
    ([2, 2], [2, 2]),  # Repeats are read again.
    (np.array([9, 10], np.int32), [9, 10]),
    (range(10, 12), [10, 11]),
    ([], []),
    ('terminated and length > 3', None),
    (lambda row: row['episode_metadata/scene'] == 0, None),
], ids=['one', 'run-across-shards', 'given-order', 'repeats', 'numpy-int32',
        'range', 'none', 'expr', 'function'])
def test_dense_episodes_equal_those_of_a_full_read(robot, episodes, expected):
  path, data = robot
  if expected is None:  # Split order, from a NumPy reference of the catalog.
    reference = catalog_testing.reference(data)
    expected = [i for i in reference['index']
                if (reference['terminated'][i] and reference['length'][i] > 3
                    if isinstance(episodes, str) else i % 2 == 0)]
    assert expected
  full = list(rlds_lite.load(path, dense=True))
  chosen = rlds_lite.load(path, dense=True, episodes=episodes)
  assert int(chosen.cardinality()) == len(expected)
  _assert_same_episodes(list(chosen), [full[i] for i in expected])


def test_a_selection_of_nothing_says_so(robot, caplog):
  path, data = robot
  with caplog.at_level('WARNING', logger='rlds_lite'):
    chosen = rlds_lite.load(path, episodes='length > 1000')
  assert int(chosen.cardinality()) == 0
  assert caplog.messages == [
      f"load: episodes='length > 1000' chose none of the {len(data)} "
      "episodes of split 'train': the dataset is empty."]
  caplog.clear()
  with caplog.at_level('WARNING', logger='rlds_lite'):
    rlds_lite.load(path, episodes=[3])
  assert not caplog.messages


def test_nested_steps_too(robot):
  path, _ = robot
  full = list(rlds_lite.load(path))
  (chosen,) = list(rlds_lite.load(path, episodes=[8]))
  steps = list(chosen['steps'])
  expected = list(full[8]['steps'])
  assert len(steps) == len(expected) > 0
  _assert_same_episodes(steps, expected)
  assert chosen['episode_metadata']['file_path'].numpy() == b'/raw/episode_8.h5'


def test_a_catalog_chooses_in_its_row_order(robot):
  path, _ = robot
  catalog = catalog_lib.episodes(path, progress=False)
  best = catalog.select('length > 0').sort('return', descending=True).head(3)
  assert _ids(rlds_lite.load(path, episodes=best)) == best['episode_id'].tolist()


def test_only_the_chosen_records_are_read(tmp_path):
  path = catalog_testing.write(str(tmp_path),
                               data=catalog_testing.episodes(num_episodes=6),
                               per_file=6)
  shard = os.path.join(path, catalog_testing.shard_files(path)[0])
  offsets = records_lib.record_offsets(shard)
  raw = bytearray(open(shard, 'rb').read())
  raw[offsets[2] + 20] ^= 0xFF  # Episode 2's data no longer matches its CRC.
  open(shard, 'wb').write(bytes(raw))
  assert _ids(rlds_lite.load(path, dense=True, episodes=[1, 3, 5])) == [1, 3, 5]
  with pytest.raises(tf.errors.DataLossError):
    list(rlds_lite.load(path, dense=True, episodes=[2]))
  with pytest.raises(tf.errors.DataLossError):
    list(rlds_lite.load(path, dense=True))


def test_array_record_datasets(tmp_path):
  data = catalog_testing.episodes(num_episodes=7)
  path = catalog_testing.write(str(tmp_path), data=data, per_file=3,
                               file_format='array_record')
  chosen = list(rlds_lite.load(path, dense=True, episodes=[6, 0, 1, 2, 3]))
  assert [int(e['episode_metadata']['episode_id']) for e in chosen] == [
      6, 0, 1, 2, 3]
  np.testing.assert_array_equal(chosen[0]['steps']['observation']['image'],
                                data[6]['steps']['observation']['image'])


@pytest.mark.parametrize('kwargs, error, message', [
    (dict(episodes=[12]), IndexError,
     "episode index 12 is out of range: '{path}' split 'train' has 12 "
     'episodes.'),
    (dict(episodes=[-1]), IndexError, 'episode index -1 is out of range'),
    (dict(episodes=[1.5]), TypeError,
     'episodes must be a list of episode indices (ints), got float64 [1].'),
    (dict(episodes=3), TypeError, 'episodes must be a list of episode '
     'indices, an EXPR, a function of a catalog row or a Catalog, got int.'),
    (dict(episodes='lenght > 3'), ValueError,
     "EXPR 'lenght > 3': no column 'lenght' (columns: index, episode_id,"),
    (dict(episodes=[1], split='train[:5]'), ValueError,
     "has no split 'train[:5]' (its splits: ['train']); pass a plain split "
     'name (no slicing).'),
    (dict(episodes=[1], shuffle_files=True), ValueError,
     'load: episodes= reads the chosen episodes in their order; it does not '
     'take shuffle_files or read_config'),
], ids=['past-the-end', 'negative', 'not-integers', 'not-a-list',
        'unknown-column', 'sliced-split', 'shuffle-files'])
def test_bad_choices_raise_one_clear_error(robot, kwargs, error, message):
  path, _ = robot
  with pytest.raises(error) as raised:
    rlds_lite.load(path, **kwargs)
  text = raised.value.args[0] if error is IndexError else str(raised.value)
  assert message.format(path=path) in text


def test_a_catalog_of_another_split_is_refused(robot, tmp_path):
  path, _ = robot
  other = catalog_testing.write(str(tmp_path),
                                data=catalog_testing.episodes(num_episodes=2))
  with pytest.raises(ValueError, match='the catalog describes split'):
    rlds_lite.load(path, episodes=catalog_lib.episodes(other, progress=False))
