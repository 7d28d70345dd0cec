"""Tests of rlds_lite.pipeline.shuffling: steps of TFDS splits, each once."""

import collections
import math

import numpy as np
import pytest
import tensorflow as tf

import pipeline_testing as pt
import rlds_lite
import rlds_testing
from rlds_lite import pipeline
from rlds_lite import option_objects
from rlds_lite.pipeline import pools
from rlds_lite.pipeline import shuffling
from rlds_lite.pipeline import sliding
from rlds_lite.tfds import EpisodeWriter

# Name -> (episode lengths, terminal flags, episodes per shard file).
DATASETS = {
    'empty_episodes': ([0, 3, 0, 2, 0], None, 1000),
    'one_episode': ([7], None, 1000),
    'one_step_episodes': ([1] * 9, None, 1000),
    'terminal': ([5, 4, 6], [True] * 3, 1000),
    'truncated': ([5, 4, 6], [False] * 3, 1000),
    'many_shards': ([3, 1, 8, 2, 5, 7, 4, 6, 2, 9, 1, 3], None, 4),
    'many_episodes': ([1 + (7 * i) % 12 for i in range(60)], None, 16),
}


def steps_of(lengths, terminal):
  """Reference columnar steps, with a per-step ``index`` (int32)."""
  episodes = pt.make_episodes(lengths, terminal)
  for steps in episodes:
    steps['index'] = np.arange(len(steps['is_last']), dtype=np.int32)
  return episodes


@pytest.fixture(scope='module')
def datasets(tmp_path_factory):
  """Name -> (dataset directory, reference episodes), written once per module."""
  written = {}

  def get(name):
    if name not in written:
      lengths, terminal, per_file = DATASETS[name]
      episodes = steps_of(lengths, terminal)
      spec = pt.dense_dataset(episodes).element_spec
      features = {**spec, 'steps': {
          k: tf.TensorSpec(s.shape[1:], s.dtype)
          for k, s in spec['steps'].items()}}
      with EpisodeWriter(tmp_path_factory.mktemp(name), name, features,
                         max_episodes_per_file=per_file) as writer:
        for i, steps in enumerate(episodes):
          writer.add_episode({'steps': steps, 'episode_id': np.int64(i)})
      written[name] = (writer.path, episodes)
    return written[name]

  return get


def reference_steps(episodes, select=None):
  """Every step of ``episodes`` (with its ``episode_id``), in order."""
  out = []
  for i, steps in enumerate(episodes):
    if select is not None and i not in select:
      continue
    for t in range(len(steps['is_last'])):
      step = {k: v[t] for k, v in steps.items()}
      step['episode_id'] = np.int64(i)
      out.append(step)
  return out


def with_knobs(kwargs):
  """``kwargs`` with the knobs among them in ``knobs=ShuffleKnobs(...)``."""
  kwargs = dict(kwargs)
  knobs = {k: kwargs.pop(k) for k in shuffling.KNOB_FIELDS if k in kwargs}
  return dict(kwargs, knobs=shuffling.ShuffleKnobs(**knobs))


def run(path, **kwargs):
  kwargs.setdefault('episode_fields', 'episode_id')
  kwargs.setdefault('seed', 0)
  return list(shuffling.shuffled_steps(
      path, **with_knobs(kwargs)).as_numpy_iterator())


def step_ids(batches):
  return [(int(e), int(t)) for b in batches
          for e, t in zip(b['episode_id'], b['index'])]


# Name -> (dataset, shuffled_steps arguments).
CASES = {
    'empty_episodes': ('empty_episodes', dict(batch_size=2, num_slices=5)),
    'one_episode': ('one_episode', dict(batch_size=3)),
    'one_step_episodes': ('one_step_episodes',
                          dict(batch_size=4, num_slices=3, pool_episodes=2)),
    'terminal': ('terminal', dict(batch_size=4, cycle_length=2)),
    'truncated': ('truncated', dict(batch_size=5, pool_episodes=1)),
    'many_slices': ('many_shards', dict(batch_size=7, num_slices=12,
                                        cycle_length=5, pool_episodes=3)),
    'slices_across_shards': ('many_shards', dict(batch_size=6, num_slices=5,
                                                 cycle_length=2)),
    'parallel_reads_episode_buffer': ('many_shards', dict(
        batch_size=8, num_slices=6, num_parallel_reads=3,
        episode_shuffle_buffer=4)),
}


@pytest.mark.parametrize('name', list(CASES))
def test_every_step_exactly_once(datasets, name):
  dataset, kwargs = CASES[name]
  path, episodes = datasets(dataset)
  batches = run(path, **kwargs)
  pt.assert_same_samples(pt.unbatch(batches), reference_steps(episodes))
  total = sum(len(s['is_last']) for s in episodes)
  size = kwargs['batch_size']
  expected_sizes = [size] * (total // size) + ([total % size] if total % size
                                               else [])
  assert pt.batch_sizes(batches) == expected_sizes


@pytest.mark.parametrize('split,select', [
    ('train[2:9]', set(range(2, 9))),
    ('train[:25%]+train[-3:]', {0, 1, 2, 9, 10, 11}),
], ids=['absolute_slice', 'percent_plus_negative'])
def test_sliced_split_is_read_exactly_once(datasets, split, select):
  path, episodes = datasets('many_shards')
  batches = run(path, split=split, batch_size=4, num_slices=4, cycle_length=3)
  pt.assert_same_samples(pt.unbatch(batches),
                         reference_steps(episodes, select))


def test_drop_remainder_drops_only_the_last_partial_batch(datasets):
  path, episodes = datasets('many_shards')
  total = sum(len(s['is_last']) for s in episodes)
  batches = run(path, batch_size=7, drop_remainder=True)
  assert pt.batch_sizes(batches) == [7] * (total // 7)
  ids = step_ids(batches)
  assert len(set(ids)) == len(ids) == 7 * (total // 7)
  exact = run(path, batch_size=total, drop_remainder=True)
  assert pt.batch_sizes(exact) == [total]


def test_fields_select_step_fields(datasets):
  path, episodes = datasets('terminal')
  batches = run(path, batch_size=4, fields=['reward', 'index'])
  assert sorted(batches[0]) == ['episode_id', 'index', 'reward']
  expected = [{k: s[k] for k in ('reward', 'index', 'episode_id')}
              for s in reference_steps(episodes)]
  pt.assert_same_samples(pt.unbatch(batches), expected)


def test_same_seed_same_order_other_seed_other_order(datasets):
  path, _ = datasets('many_episodes')
  kwargs = dict(batch_size=16, num_slices=8, cycle_length=3, pool_episodes=8)
  first = step_ids(run(path, seed=3, **kwargs))
  assert step_ids(run(path, seed=3, **kwargs)) == first
  other = step_ids(run(path, seed=4, **kwargs))
  assert other != first and sorted(other) == sorted(first)


def test_each_epoch_is_reshuffled(datasets):
  path, _ = datasets('many_episodes')
  ds = shuffling.shuffled_steps(path, batch_size=16, seed=1,
                                episode_fields='episode_id')
  epochs = [step_ids(list(ds.as_numpy_iterator())) for _ in range(2)]
  assert epochs[0] != epochs[1] and sorted(epochs[0]) == sorted(epochs[1])


def test_shuffle_quality_beats_episode_order(datasets):
  path, _ = datasets('many_episodes')
  ds = shuffling.shuffled_steps(path, batch_size=16, seed=0,
                                knobs=shuffling.ShuffleKnobs(pool_episodes=16),
                                episode_fields='episode_id',
                                drop_remainder=True)
  quality = pipeline.shuffle_quality(ds)
  # 16 steps from a pool of 16 episodes of ~6.5 steps: ~10 distinct expected.
  assert quality.mean_distinct_episodes >= 8.0
  unshuffled = shuffling.shuffled_steps(
      path, batch_size=16, seed=0,
      knobs=shuffling.ShuffleKnobs(num_slices=1, pool_episodes=1),
      episode_fields='episode_id', drop_remainder=True)
  assert pipeline.shuffle_quality(unshuffled).mean_distinct_episodes < 3.5


def test_shuffled_episodes_each_once_in_a_shuffled_order(datasets):
  path, episodes = datasets('many_episodes')
  knobs = shuffling.ShuffleKnobs(num_slices=6, cycle_length=3,
                                 episode_shuffle_buffer=4)
  read = list(shuffling.shuffled_episodes(
      path, seed=0, knobs=knobs).as_numpy_iterator())
  ids = [int(e['episode_id']) for e in read]
  assert sorted(ids) == list(range(len(episodes)))
  assert ids != sorted(ids)
  for episode in read:
    expected = episodes[int(episode['episode_id'])]
    for k, v in expected.items():
      np.testing.assert_array_equal(episode['steps'][k], v)
  again = [int(e['episode_id']) for e in shuffling.shuffled_episodes(
      path, seed=0, knobs=knobs)]
  assert again == ids
  option_objects._WARNED.clear()  # pylint: disable=protected-access
  with pytest.warns(DeprecationWarning, match=r"^shuffled_episodes: \["
                    r"'cycle_length', 'episode_shuffle_buffer', 'num_slices'\] "
                    r'are now knobs=ShuffleKnobs\(...\)'):
    old = shuffling.shuffled_episodes(path, seed=0, num_slices=6,
                                      cycle_length=3, episode_shuffle_buffer=4)
  assert [int(e['episode_id']) for e in old] == ids
  with pytest.raises(ValueError, match=r"^shuffled_episodes: \['pool_episodes'"
                     r'\] pool steps; whole episodes take only'):
    shuffling.shuffled_episodes(
        path, knobs=shuffling.ShuffleKnobs(pool_episodes=2))


def np_step_bytes(steps):
  return sum(np.asarray(v).dtype.itemsize * int(np.prod(np.shape(v)[1:]))
             for v in steps.values())


@pytest.mark.parametrize('knobs', [
    dict(),
    dict(num_slices=4, cycle_length=3, pool_episodes=5, read_ahead=2,
         episode_shuffle_buffer=7, num_parallel_reads=2, prefetch=1),
], ids=['defaults', 'explicit'])
def test_memory_estimate_equals_hand_computation(datasets, knobs):
  path, episodes = datasets('many_shards')
  memory = shuffling.estimate_memory(path, batch_size=8,
                                     knobs=shuffling.ShuffleKnobs(**knobs))
  step = np_step_bytes(episodes[0])
  assert step == 8 + 8 + 4 + 4 + 3 + 4  # obs [2] f32, action i64, ... index
  mean = sum(len(s['is_last']) for s in episodes) / len(episodes)
  episode = math.ceil(mean * step)
  cycle = knobs.get('cycle_length', 4)
  reads = knobs.get('num_parallel_reads', 1)
  pool = knobs.get('pool_episodes', 64)
  gather = pools.gather_size(8, step, sliding.GATHER_BYTES)
  assert memory.step_bytes == step
  assert memory.mean_episode_steps == mean
  assert memory.episode_bytes == episode
  assert memory.episode_buffer == knobs.get('episode_shuffle_buffer', 0) * episode
  assert memory.interleave == cycle * (256 * 1024 + (2 * reads - 1) * episode)
  blocks = min(8, pool)
  block = math.ceil(pool / blocks)
  assert memory.pools == (blocks + 3) * block * episode
  assert memory.read_ahead == knobs.get('read_ahead', block) * episode
  assert memory.batches == (knobs.get('prefetch', 2) * 8 + gather) * step
  assert memory.total == (memory.episode_buffer + memory.interleave +
                          memory.pools + memory.read_ahead + memory.batches)
  assert memory.knobs.num_slices == knobs.get('num_slices', 12)
  assert 'pools=' in repr(memory) and 'steps x 31 B' in repr(memory)


def test_smaller_budgets_pick_smaller_knobs(datasets):
  path, _ = datasets('many_episodes')
  budgets = [560_000, 700_000, 1_000_000, 3_000_000, 100_000_000]
  memories = [shuffling.estimate_memory(path, batch_size=8, memory_budget=b)
              for b in budgets]
  for budget, memory in zip(budgets, memories):
    assert memory.total <= budget
  knobs = [m.knobs for m in memories]
  assert all(k.read_ahead == sliding.window_blocks(k.pool_episodes)[1]
             for k in knobs)  # One block of the window.
  for field in ('pool_episodes', 'cycle_length', 'episode_shuffle_buffer'):
    values = [getattr(k, field) for k in knobs]
    assert values == sorted(values), (field, values)
    assert values[0] < values[-1], (field, values)
  assert knobs[-1].pool_episodes == 60     # capped at the episode count
  assert knobs[-1].cycle_length == 16      # capped at num_slices
  explicit = shuffling.estimate_memory(
      path, batch_size=8, knobs=shuffling.ShuffleKnobs(pool_episodes=3),
      memory_budget=100_000_000)
  assert explicit.knobs.pool_episodes == 3  # given knobs are kept
  batches = run(path, batch_size=8, memory_budget='700KB')
  assert len(step_ids(batches)) == len(set(step_ids(batches))) == sum(
      DATASETS['many_episodes'][0])


def test_parse_bytes_units():
  assert shuffling.parse_bytes('512MB') == 512 * 10**6
  assert shuffling.parse_bytes('1.5 GiB') == 3 << 29
  assert shuffling.parse_bytes('2kb') == 2000
  assert shuffling.parse_bytes(1234) == 1234


BAD = {
    'batch_size_over_steps': (
        dict(batch_size=50, drop_remainder=True),
        "shuffled_steps: batch_size=50 is larger than the 15 steps of split "
        "'train' of dataset '{path}', and drop_remainder=True would drop "
        'them all.'),
    'num_slices_over_episodes': (
        dict(batch_size=2, num_slices=4),
        "shuffled_steps: num_slices=4 is more than the 3 episodes of split "
        "'train' of dataset '{path}'; every slice needs at least one "
        'episode.'),
    'unknown_split': (
        dict(batch_size=2, split='validation'),
        "shuffled_steps: dataset '{path}' has no split 'validation' (its "
        "splits: "
        "['train'])."),
    'unknown_field': (
        dict(batch_size=2, fields=['pixels']),
        "shuffled_steps: dataset '{path}' has no step field 'pixels' (its step "
        "fields: ['action', 'discount', 'index', 'is_first', 'is_last', "
        "'is_terminal', 'observation', 'reward'])."),
    'unknown_episode_field': (
        dict(batch_size=2, episode_fields=['agent']),
        "shuffled_steps: dataset '{path}' has no episode field 'agent' (its "
        "episode fields: ['episode_id'])."),
    'zero_batch_size': (dict(batch_size=0),
                        'shuffled_steps: batch_size must be a positive int, '
                        'got 0.'),
    'zero_num_slices': (dict(batch_size=2, num_slices=0),
                        'ShuffleKnobs: num_slices must be a positive int, '
                        'got 0.'),
    'negative_cycle_length': (dict(batch_size=2, cycle_length=-1),
                              'ShuffleKnobs: cycle_length must be a positive '
                              'int, got -1.'),
    'zero_pool_episodes': (dict(batch_size=2, pool_episodes=0),
                           'ShuffleKnobs: pool_episodes must be a positive '
                           'int, got 0.'),
    'zero_parallel_reads': (dict(batch_size=2, num_parallel_reads=0),
                            'ShuffleKnobs: num_parallel_reads must be a '
                            'positive int, got 0.'),
    'negative_episode_buffer': (
        dict(batch_size=2, episode_shuffle_buffer=-2),
        'ShuffleKnobs: episode_shuffle_buffer must be a non-negative int, '
        'got -2.'),
    'bad_budget': (dict(batch_size=2, memory_budget='-5MB'),
                   "shuffled_steps: memory_budget must be a positive number of "
                   "bytes or a string like '512MB', got '-5MB'."),
    'budget_too_small': (
        dict(batch_size=2, memory_budget=1000),
        'shuffled_steps: memory_budget 1.0 KB (1000 bytes) is too small: one '
        'episode takes about 155 B (5.0 steps x 31 bytes) and the smallest '
        'pipeline (ShuffleKnobs(num_slices=3, cycle_length=1, '
        'num_parallel_reads=1, pool_episodes=1, read_ahead=1, '
        'episode_shuffle_buffer=0, prefetch=2)) needs about {needs}; raise the budget or lower '
        'batch_size / select fewer fields.'),
}


@pytest.mark.parametrize('name', list(BAD))
def test_bad_input_errors(datasets, name):
  kwargs, message = BAD[name]
  path, _ = datasets('truncated')   # 3 episodes of 5, 4, 6 steps
  # The smallest pipeline: one open slice's read buffer and episode, a window
  # of one one-episode block (plus the next unit's block, the block being read
  # and its concatenation) and one read ahead, two prefetched batches and one
  # gather of steps.
  needs = ((256 * 1024 + 155) + (1 + 3) * 155 + 155 +
           (2 * 2 + pools.gather_size(2, 31, sliding.GATHER_BYTES)) * 31)
  message = message.format(path=path,
                           needs=f'{needs / 1e3:.1f} KB ({needs} bytes)')
  kwargs = dict(kwargs)
  split = kwargs.pop('split', 'train')
  with pytest.raises(ValueError) as error:
    shuffling.shuffled_steps(path, split, **with_knobs(kwargs))
  assert str(error.value) == message


def test_the_old_knob_keywords_still_work_and_warn_once(datasets):
  path, _ = datasets('many_episodes')
  knobs = dict(num_slices=8, cycle_length=3, pool_episodes=8)
  new = step_ids(run(path, batch_size=16, **knobs))
  option_objects._WARNED.clear()  # pylint: disable=protected-access
  with pytest.warns(DeprecationWarning) as caught:
    old = shuffling.shuffled_steps(path, batch_size=16, seed=0,
                                   episode_fields='episode_id', **knobs)
    shuffling.shuffled_steps(path, batch_size=16, pool_episodes=2)
    memory = shuffling.estimate_memory(path, batch_size=16, data_dir=None,
                                       **knobs)
  assert pt.renames(caught) == [
      "shuffled_steps: ['cycle_length', 'num_slices', 'pool_episodes'] are "
      'now knobs=ShuffleKnobs(...); the old keywords will go in a later '
      'release.',
      "estimate_memory: ['cycle_length', 'num_slices', 'pool_episodes'] are "
      'now knobs=ShuffleKnobs(...); the old keywords will go in a later '
      'release.']
  assert step_ids(list(old.as_numpy_iterator())) == new
  assert memory.knobs == shuffling.ShuffleKnobs(
      num_slices=8, cycle_length=3, num_parallel_reads=1, pool_episodes=8,
      read_ahead=1, episode_shuffle_buffer=0, prefetch=2)
  with pytest.raises(ValueError, match='^shuffled_steps: num_slices must be a '
                     'positive int, got 0.$'):
    shuffling.shuffled_steps(path, batch_size=2, num_slices=0)
  with pytest.raises(TypeError, match=r"^shuffled_steps: pass \['prefetch'\] "
                     r'in knobs=ShuffleKnobs\(...\), not beside it\.$'):
    shuffling.shuffled_steps(path, batch_size=2, prefetch=1,
                             knobs=shuffling.ShuffleKnobs())


def test_shuffle_knobs_show_what_is_set():
  knobs = shuffling.ShuffleKnobs(pool_episodes=128, cycle_length=8)
  assert repr(knobs) == 'ShuffleKnobs(cycle_length=8, pool_episodes=128)'
  assert knobs._replace(cycle_length=None) == shuffling.ShuffleKnobs(
      pool_episodes=128)


def test_counts_steps_without_decoding_images(tmp_path):
  # The camera's bytes are not a PNG: decoding them fails, counting does not.
  good, bad = rlds_testing.camera_datasets_good_and_undecodable(tmp_path)
  with pytest.raises(tf.errors.InvalidArgumentError):
    for _ in rlds_lite.load(bad, dense=True):
      pass
  assert shuffling.count_steps(good) == shuffling.count_steps(bad) == 11


def test_counts_steps_once_per_dataset(datasets, monkeypatch):
  path, episodes = datasets('many_shards')
  counted = []
  count = rlds_lite.source.count_steps

  def counting(*args, **kwargs):
    counted.append(args)
    return count(*args, **kwargs)

  monkeypatch.setattr(rlds_lite.source, 'count_steps', counting)
  rlds_lite.source._STEP_COUNTS.clear()  # pylint: disable=protected-access
  assert shuffling.count_steps(path) == sum(len(s['is_last']) for s in episodes)
  assert shuffling.count_steps(path) == rlds_lite.open(path).num_steps
  assert len(counted) == 1
