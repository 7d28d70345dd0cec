"""Tests of rlds_lite.pipeline.windows_dataset against a NumPy reference."""

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest
import tensorflow as tf

import pipeline_testing as pt
import rlds_lite
import rlds_testing
from rlds_lite import dense
from rlds_lite import pipeline
from rlds_lite import option_objects

CASES = {
    'empty': dict(lengths=[0]),
    'one_step': dict(lengths=[1]),
    'two_step': dict(lengths=[2]),
    'terminal': dict(lengths=[5], terminal=[True]),
    'truncated': dict(lengths=[5], terminal=[False]),
    'nested': dict(lengths=[4, 6], nested=True),
    'mixed': dict(lengths=[0, 1, 2, 5, 7, 3], terminal=[True, False] * 3),
}


def run(episodes_ds, size, batch_size, **kwargs):
  kwargs.setdefault('episode_fields', 'episode_id')
  kind, kwargs = pt.objects(rlds_lite.Windows, size, kwargs)
  ds = pipeline.windows_dataset(episodes_ds, kind, batch_size, **kwargs)
  return list(ds.as_numpy_iterator())


POOLS = ['samples', 'episodes']


@pytest.mark.parametrize('pool', POOLS)
@pytest.mark.parametrize('case', list(CASES.values()), ids=list(CASES))
def test_unshuffled_windows_come_in_episode_order(case, pool):
  episodes = pt.make_episodes(**case)
  batches = run(pt.nested_dataset(episodes), size=2, batch_size=3,
                shuffle=False, pool=pool, pool_episodes=2)
  expected = pt.np_windows(episodes, 2)
  rlds_testing.assert_structures_equal(pt.unbatch(batches), expected)
  sizes = pt.batch_sizes(batches)
  assert sizes == [3] * (len(expected) // 3) + ([len(expected) % 3]
                                                 if len(expected) % 3 else [])


CONFIGS = {
    'size2': dict(size=2),
    'size3_shift2_padded': dict(size=3, shift=2, drop_remainder=False),
    'size2_stride2': dict(size=2, stride=2),
    'size1': dict(size=1),
    'size3_stride2_padded': dict(size=3, stride=2, drop_remainder=False),
}


@pytest.mark.parametrize('pool', POOLS)
@pytest.mark.parametrize('config', list(CONFIGS.values()), ids=list(CONFIGS))
def test_shuffled_windows_are_each_window_exactly_once(config, pool):
  episodes = pt.make_episodes([0, 1, 2, 5, 7, 3, 9], terminal=[True, False] * 4)
  config = dict(config)
  size = config.pop('size')
  batches = run(pt.dense_dataset(episodes), size, 4, seed=3, pool=pool,
                pool_episodes=3, **config)
  expected = pt.np_windows(episodes, size, **config)
  pt.assert_same_samples(pt.unbatch(batches), expected)
  unshuffled = [pt.key(s) for s in expected]
  assert [pt.key(s) for s in pt.unbatch(batches)] != unshuffled


def test_matches_dense_windows_per_episode():
  episodes = pt.make_episodes([3, 6, 4], nested=True)
  batches = run(pt.nested_dataset(episodes), 3, 100, shuffle=False,
                drop_remainder=False, stride=2, episode_fields=())
  got = pt.unbatch(batches)
  expected = []
  for steps in episodes:
    out = dense.windows(tf.nest.map_structure(tf.constant, steps), 3, stride=2,
                        drop_remainder=False)
    expected.extend(pt.unbatch([tf.nest.map_structure(lambda x: x.numpy(), out)]))
  rlds_testing.assert_structures_equal(got, expected)


@pytest.mark.parametrize('pool', POOLS)
def test_seed_makes_it_deterministic(pool):
  episodes = pt.make_episodes([8, 9, 10, 11, 12])
  ds = pt.dense_dataset(episodes)
  kwargs = dict(pool=pool, pool_episodes=2,
                episode_shuffle_buffer=4)
  first = run(ds, 2, 5, seed=7, **kwargs)
  again = run(ds, 2, 5, seed=7, **kwargs)
  other = run(ds, 2, 5, seed=8, **kwargs)
  rlds_testing.assert_structures_equal(again, first)
  assert [pt.key(s) for s in pt.unbatch(other)] != [
      pt.key(s) for s in pt.unbatch(first)]
  pt.assert_same_samples(pt.unbatch(other), pt.unbatch(first))


@pytest.mark.parametrize('pool', POOLS)
def test_shuffle_mixes_episodes_across_the_pool(pool):
  episodes = pt.make_episodes([20] * 24)
  ds = pt.dense_dataset(episodes)
  shuffled = pipeline.windows_dataset(
      ds, rlds_lite.Windows(2), 16, seed=0, episode_fields='episode_id',
      pooling=pipeline.Pooling(pool=pool, pool_episodes=24))
  ordered = pipeline.windows_dataset(ds, rlds_lite.Windows(2), 16,
                                     shuffle=False, episode_fields='episode_id')
  quality = pipeline.shuffle_quality(shuffled)
  assert quality.mean_distinct_episodes > 9
  assert quality.num_batches == 24 * 19 // 16 + 1
  assert pipeline.shuffle_quality(ordered).mean_distinct_episodes < 2


def test_samples_pools_are_consecutive_episodes_aligned_on_batches():
  # 9 episodes of 6 steps: 5 windows each; pools of 3 episodes hold 15
  # windows: windows [15p, 15p + 15) of the output come from episodes
  # 3p..3p+2, so a batch of 4 mixes only the pools its positions overlap.
  episodes = pt.make_episodes([6] * 9)
  batches = run(pt.dense_dataset(episodes), 2, 4, seed=5, pool='samples',
                pool_episodes=3)
  assert pt.batch_sizes(batches) == [4] * 11 + [1]
  position = 0
  for batch in batches:
    size = len(batch['episode_id'])
    pools = {p // 15 for p in range(position, position + size)}
    assert {int(e) // 3 for e in batch['episode_id']} <= pools
    position += size
  first_pool = [int(e) for b in batches[:3] for e in b['episode_id']]
  assert len(set(first_pool)) == 3   # Windows of a pool are mixed.


@pytest.mark.parametrize('pool', POOLS)
@pytest.mark.parametrize(
    'batch_size,pool_episodes,drop_last_batch,expected_sizes',
    [(4, 2, False, [4, 4, 4, 4, 4, 4, 1]),
     (4, 2, True, [4, 4, 4, 4, 4, 4]),
     (30, 1, False, [25]),
     (30, 1, True, []),
     (1, 1, True, [1] * 25),
     (7, 10, False, [7, 7, 7, 4])],
    ids=['carry_across_pools', 'drop_last_batch', 'batch_larger_than_data',
         'batch_larger_than_data_dropped', 'batch_of_one', 'one_pool'])
def test_batch_sizes(batch_size, pool_episodes, drop_last_batch,
                     expected_sizes, pool):
  episodes = pt.make_episodes([3, 4, 0, 5, 6, 1, 7])   # 2+3+0+4+5+0+6 = 20
  episodes += pt.make_episodes([6])                      # + 5 = 25 windows
  ds = pipeline.windows_dataset(
      pt.dense_dataset(episodes), rlds_lite.Windows(2), batch_size, seed=1,
      pooling=pipeline.Pooling(pool=pool, pool_episodes=pool_episodes),
      drop_last_batch=drop_last_batch)
  batches = list(ds.as_numpy_iterator())
  assert pt.batch_sizes(batches) == expected_sizes
  static = ds.element_spec['observation'].shape.as_list()
  assert static == [batch_size if drop_last_batch else None, 2, 2]
  assert ds.element_spec['observation'].dtype == tf.float32
  if expected_sizes:
    assert batches[0]['observation'].dtype == np.float32
    assert batches[0]['action'].shape[1:] == (2,)


def test_auto_pool_picks_episodes_for_large_windows():
  images = [{'observation': np.full((t, 48, 48, 3), t, np.uint8),
             'is_last': np.arange(t) == t - 1} for t in (5, 6)]
  ds = pt.dense_dataset(images)
  auto = run(ds, 4, 3, seed=4, pool_episodes=2)
  by_episodes = run(ds, 4, 3, seed=4, pool='episodes', pool_episodes=2)
  by_samples = run(ds, 4, 3, seed=4, pool='samples')
  rlds_testing.assert_structures_equal(auto, by_episodes)
  pt.assert_same_samples(pt.unbatch(by_samples), pt.unbatch(auto))
  assert pt.np_windows(images, 4)[0]['observation'].shape == (4, 48, 48, 3)
  pt.assert_same_samples(pt.unbatch(auto), pt.np_windows(images, 4))


@pytest.mark.parametrize('pool', POOLS)
def test_string_step_fields_and_padding(pool):
  episodes = pt.make_episodes([3, 5])
  for steps in episodes:
    steps['tag'] = np.array([b'step %d' % t for t in range(len(steps['reward']))])
  batches = run(pt.dense_dataset(episodes), 3, 4, seed=5, pool=pool,
                drop_remainder=False, stride=2, pool_episodes=2)
  expected = pt.np_windows(episodes, 3, stride=2, drop_remainder=False)
  assert expected[-1]['tag'].tolist() == [b'step 4', b'', b'']
  pt.assert_same_samples(pt.unbatch(batches), expected)


def test_repeat_episodes_for_epochs():
  episodes = pt.make_episodes([4, 5])
  batches = run(pt.dense_dataset(episodes).repeat(3), 2, 4, seed=0)
  pt.assert_same_samples(pt.unbatch(batches), pt.np_windows(episodes, 2) * 3)


@hypothesis.given(
    lengths=st.lists(st.integers(0, 9), min_size=1, max_size=6),
    batch_size=st.integers(1, 9),
    pool_episodes=st.integers(1, 5),
    size=st.integers(1, 3),
    drop_last_batch=st.booleans(),
    pool=st.sampled_from(POOLS))
@hypothesis.settings(max_examples=10)
def test_property_every_window_once_and_full_batches(lengths, batch_size,
                                                     pool_episodes, size,
                                                     drop_last_batch, pool):
  episodes = pt.make_episodes(lengths)
  batches = run(pt.dense_dataset(episodes), size, batch_size, seed=0,
                pool=pool, pool_episodes=pool_episodes,
                drop_last_batch=drop_last_batch)
  expected = pt.np_windows(episodes, size)
  sizes = pt.batch_sizes(batches)
  assert all(s == batch_size for s in sizes[:-1])
  if drop_last_batch:
    assert sizes == [batch_size] * (len(expected) // batch_size)
    assert len(pt.unbatch(batches)) == len(expected) // batch_size * batch_size
  else:
    pt.assert_same_samples(pt.unbatch(batches), expected)


ERRORS = {
    'batch_size_zero': (dict(batch_size=0), ValueError,
                        'batch_size must be a positive int, got 0'),
    'batch_size_negative': (dict(batch_size=-2), ValueError,
                            'batch_size must be a positive int, got -2'),
    'batch_size_float': (dict(batch_size=2.5), TypeError,
                         'batch_size must be a positive int'),
    'size_zero': (dict(size=0), ValueError, 'size must be a positive int, got 0'),
    'shift_zero': (dict(shift=0), ValueError, 'shift must be a positive int'),
    'stride_zero': (dict(stride=0), ValueError, 'stride must be a positive int'),
    'pool_episodes_zero': (dict(pool_episodes=0), ValueError,
                           'pool_episodes must be a positive int, got 0'),
    'unknown_pool': (dict(pool='steps'), ValueError,
                     "pool must be one of .*'auto'.*got 'steps'"),
    'negative_episode_buffer': (dict(episode_shuffle_buffer=-1), ValueError,
                                'episode_shuffle_buffer must be a non-negative'),
    'unknown_episode_field': (dict(episode_fields='agent'), ValueError,
                              "episode_fields names 'agent'.*'episode_id'"),
    'episode_field_is_steps': (dict(episode_fields='steps'), ValueError,
                               "episode_fields names 'steps'"),
}


@pytest.mark.parametrize('kwargs,error,match', list(ERRORS.values()),
                         ids=list(ERRORS))
def test_errors(kwargs, error, match):
  args = dict(size=2, batch_size=4)
  args.update(kwargs)
  episodes = pt.nested_dataset(pt.make_episodes([3]))
  with pytest.raises(error, match=match):
    kind, args = pt.objects(rlds_lite.Windows, None, args)
    pipeline.windows_dataset(episodes, kind, **args)


def test_error_on_field_collisions():
  steps = pt.make_episodes([3])[0]
  steps['mask'] = np.ones(3, bool)
  with pytest.raises(ValueError, match="adds the field 'mask'"):
    pipeline.windows_dataset(pt.dense_dataset([steps]),
                             rlds_lite.Windows(2, drop_remainder=False), 2)
  steps = pt.make_episodes([3])[0]
  steps['episode_id'] = np.zeros(3, np.int64)
  with pytest.raises(ValueError, match="episode field 'episode_id' has the name"):
    pipeline.windows_dataset(pt.dense_dataset([steps]), rlds_lite.Windows(2),
                             2, episode_fields='episode_id')


def test_error_on_bad_episodes():
  with pytest.raises(TypeError, match='episodes must be a tf.data.Dataset'):
    pipeline.windows_dataset([1, 2], rlds_lite.Windows(2), 2)
  with pytest.raises(TypeError, match="dicts with a 'steps' field"):
    pipeline.windows_dataset(tf.data.Dataset.range(3), rlds_lite.Windows(2),
                             2)
  unknown = tf.data.Dataset.from_generator(
      lambda: iter([]), output_signature={
          'steps': {'observation': tf.TensorSpec([None, None], tf.float32)}})
  with pytest.raises(ValueError, match="step field 'observation' has shape"):
    pipeline.windows_dataset(unknown, rlds_lite.Windows(2), 2)


@pytest.mark.parametrize('drop_remainder', [True, False])
def test_the_old_keywords_give_the_kinds_samples_and_warn_once(drop_remainder):
  episodes = pt.make_episodes(lengths=[0, 1, 5, 7], terminal=[True, False] * 2)
  kind = rlds_lite.Windows(3, shift=2, stride=2, drop_remainder=drop_remainder)
  pooling = pipeline.Pooling(pool_episodes=2, prefetch=0)
  by_kind = pipeline.windows_dataset(pt.nested_dataset(episodes), kind, 4,
                                     seed=0, pooling=pooling)
  option_objects._WARNED.clear()  # pylint: disable=protected-access
  with pytest.warns(DeprecationWarning) as caught:
    by_keywords = pipeline.windows_dataset(
        pt.nested_dataset(episodes), 3, 4, shift=2, stride=2,
        drop_remainder=drop_remainder, seed=0, pool_episodes=2, prefetch=0)
    pipeline.windows_dataset(pt.nested_dataset(episodes), size=3,
                             batch_size=4, pool_episodes=2)
  assert sorted(pt.renames(caught)) == [
      "windows_dataset: ['drop_remainder', 'shift', 'size', 'stride'] are now "
      'Windows(...); the old keywords will go in a later release.',
      "windows_dataset: ['pool_episodes', 'prefetch'] are now "
      'pooling=Pooling(...); the old keywords will go in a later release.']
  assert {w.filename for w in caught if 'are now' in str(w.message)} == {
      __file__}
  rlds_testing.assert_structures_equal(list(by_kind.as_numpy_iterator()),
                                       list(by_keywords.as_numpy_iterator()))


def test_a_windows_kind_and_its_keywords_beside_it_is_one_type_error():
  episodes = pt.nested_dataset(pt.make_episodes(lengths=[3]))
  with pytest.raises(TypeError, match=r'windows_dataset: pass shift, stride '
                     r'and drop_remainder in the kind \(Windows\(...\)\), not '
                     r'beside it\.'):
    pipeline.windows_dataset(episodes, rlds_lite.Windows(2), 4, shift=2)
