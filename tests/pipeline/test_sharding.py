"""Tests of rlds_lite.pipeline.sharding: shards partition the episodes."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import rlds_lite
from rlds_lite import synthetic
from rlds_lite.pipeline import sharding
from rlds_lite.tfds import write_dataset

NUM_EPISODES = 10


def ids_of(episodes):
  return [int(e['episode_id']) for e in episodes]


def assert_partition(shards, num_episodes):
  """Union is every episode, shards are disjoint, sizes differ by <= 1."""
  flat = [i for part in shards for i in part]
  assert sorted(flat) == list(range(num_episodes))
  sizes = [len(part) for part in shards]
  assert max(sizes) - min(sizes) <= 1


def np_seeded_shards(num_episodes, count, seed):
  """Reference: episode perm[j] goes to host j % count, kept in id order."""
  perm = np.random.default_rng(seed).permutation(num_episodes)
  return [sorted(perm[index::count].tolist()) for index in range(count)]


SHARD_CASES = {
    'even': (12, 3),
    'uneven': (10, 3),
    'one_host': (5, 1),
    'more_hosts_than_episodes': (2, 4),
    'empty': (0, 2),
}


@pytest.mark.parametrize('num_episodes,count', list(SHARD_CASES.values()),
                         ids=list(SHARD_CASES))
def test_round_robin_shards_match_numpy(num_episodes, count):
  ds = tf.data.Dataset.range(num_episodes)
  shards = [[int(x) for x in sharding.shard(ds, i, count)]
            for i in range(count)]
  assert shards == [list(range(num_episodes))[i::count] for i in range(count)]
  assert_partition(shards, num_episodes)


@pytest.mark.parametrize('num_episodes,count', list(SHARD_CASES.values()),
                         ids=list(SHARD_CASES))
@pytest.mark.parametrize('seed', [0, 7])
def test_seeded_shards_match_numpy_permutation(num_episodes, count, seed):
  ds = tf.data.Dataset.range(num_episodes)
  shards = [[int(x) for x in sharding.shard(ds, i, count, seed=seed)]
            for i in range(count)]
  assert shards == np_seeded_shards(num_episodes, count, seed)
  assert_partition(shards, num_episodes)


def test_seed_changes_the_assignment_and_hosts_agree():
  ds = tf.data.Dataset.range(40)
  first = [int(x) for x in sharding.shard(ds, 0, 2, seed=1)]
  again = [int(x) for x in sharding.shard(ds, 0, 2, seed=1)]
  other = [int(x) for x in sharding.shard(ds, 0, 2, seed=2)]
  assert first == again
  assert first != other


SLICE_CASES = {
    'even': (12, 4, False),
    'uneven': (10, 3, False),
    'more_slices_than_episodes': (2, 3, False),
    'drop_remainder': (10, 3, True),
    'empty': (0, 2, False),
}


@pytest.mark.parametrize('num_episodes,num_slices,drop',
                         list(SLICE_CASES.values()), ids=list(SLICE_CASES))
def test_split_slices_with_num_episodes_are_exact_ranges(num_episodes,
                                                         num_slices, drop):
  parts = np.array_split(np.arange(num_episodes), num_slices)
  if drop:  # Equal slices from the start; the remainder at the end is left.
    size = num_episodes // num_slices
    parts = [np.arange(i * size, (i + 1) * size) for i in range(num_slices)]
  starts = np.cumsum([0] + [len(p) for p in parts])[:-1]
  expected = [f'train[{s}:{s + len(p)}]' for s, p in zip(starts, parts)]
  assert sharding.split_slices('train', num_slices, num_episodes=num_episodes,
                               drop_remainder=drop) == expected


@pytest.fixture(scope='module')
def toy_path(tmp_path_factory):
  episodes = synthetic.episodes(num_episodes=NUM_EPISODES, max_length=5,
                                seed=3)
  return write_dataset(episodes, tmp_path_factory.mktemp('shard'), 'toy')


def test_named_shards_read_contiguous_slices(toy_path):
  count = 4  # 10 episodes: slices of 3, 3, 2, 2.
  shards = [ids_of(sharding.shard(toy_path, i, count)) for i in range(count)]
  assert [len(s) for s in shards] == [3, 3, 2, 2]
  assert [i for part in shards for i in part] == list(range(NUM_EPISODES))


def test_named_seeded_shards_match_numpy_and_are_dense(toy_path):
  shards = [sharding.shard(toy_path, i, 3, seed=5) for i in range(3)]
  assert [sorted(ids_of(s)) for s in shards] == np_seeded_shards(
      NUM_EPISODES, 3, 5)
  steps = shards[0].element_spec['steps']
  assert isinstance(steps, dict) and steps['reward'].shape.as_list() == [None]


@pytest.mark.parametrize('drop', [False, True], ids=['all', 'drop_remainder'])
def test_split_slices_load_like_numpy_array_split(toy_path, drop):
  num_slices = 3
  expected = [p.tolist() for p in np.array_split(np.arange(NUM_EPISODES),
                                                 num_slices)]
  if drop:
    size = NUM_EPISODES // num_slices
    expected = [list(range(i * size, (i + 1) * size))
                for i in range(num_slices)]
  for num_episodes in (None, NUM_EPISODES):  # tfds.even_splits, then exact.
    slices = sharding.split_slices('train', num_slices,
                                   num_episodes=num_episodes,
                                   drop_remainder=drop)
    parts = [ids_of(rlds_lite.load(toy_path, s, dense=True)) for s in slices]
    assert parts == expected


def test_sliced_split_slices_split_the_slice(toy_path):
  slices = sharding.split_slices('train[2:8]', 2)
  parts = [ids_of(rlds_lite.load(toy_path, s, dense=True)) for s in slices]
  assert parts == [[2, 3, 4], [5, 6, 7]]


BAD = {
    'index_too_large': (
        lambda: sharding.shard(tf.data.Dataset.range(4), 4, 4), ValueError,
        r'shard: index 4 is out of range for count 4 \(need 0 <= index < 4\)'),
    'negative_index': (
        lambda: sharding.shard(tf.data.Dataset.range(4), -1, 2), ValueError,
        'index -1 is out of range for count 2'),
    'zero_count': (
        lambda: sharding.shard(tf.data.Dataset.range(4), 0, 0), ValueError,
        'shard: count must be a positive int, got 0'),
    'bool_index': (
        lambda: sharding.shard(tf.data.Dataset.range(4), True, 2), TypeError,
        'index must be an int, got bool'),
    'not_a_dataset': (
        lambda: sharding.shard([1, 2], 0, 2), TypeError,
        'must be a tf.data.Dataset, a TFDS name or a directory, got list'),
    'seeded_unknown_cardinality': (
        lambda: sharding.shard(tf.data.Dataset.range(4).filter(
            lambda x: x > 1), 0, 2, seed=0), ValueError,
        r'seeded shard needs a dataset of known, finite cardinality '
        r'\(this one has -2'),
    'seeded_infinite': (
        lambda: sharding.shard(tf.data.Dataset.range(4).repeat(), 0, 2,
                               seed=0), ValueError, 'this one has -1'),
    'zero_slices': (
        lambda: sharding.split_slices('train', 0), ValueError,
        'split_slices: num_slices must be a positive int, got 0'),
    'sliced_split_with_num_episodes': (
        lambda: sharding.split_slices('train[:50%]', 2, num_episodes=10),
        ValueError, 'with num_episodes, split must be a plain split name'),
}


@pytest.mark.parametrize('make,error,message', list(BAD.values()),
                         ids=list(BAD))
def test_bad_input_raises_clear_error(make, error, message):
  with pytest.raises(error, match=message):
    make()


def test_named_index_out_of_range(toy_path):
  with pytest.raises(ValueError, match='index 3 is out of range for count 3'):
    sharding.shard(toy_path, 3, 3)


def test_named_unknown_split(toy_path):
  with pytest.raises(ValueError, match="has no split 'test'"):
    sharding.shard(toy_path, 0, 2, split='test')


def test_seeded_file_shuffling_needs_a_shuffle_seed(toy_path):
  with pytest.raises(ValueError, match=r'shuffle_files=True needs '
                     r'read_config=tfds.ReadConfig\(shuffle_seed=...\)'):
    sharding.shard(toy_path, 0, 2, seed=0, shuffle_files=True)
