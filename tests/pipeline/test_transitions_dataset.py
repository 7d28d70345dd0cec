"""Tests of rlds_lite.pipeline.transitions_dataset against a NumPy reference."""

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
    'terminal': dict(lengths=[6], terminal=[True]),
    'truncated': dict(lengths=[6], terminal=[False]),
    'n_longer_than_episode': dict(lengths=[3, 2], terminal=[True, False]),
    'nested': dict(lengths=[4, 5], nested=True, terminal=[False, True]),
}


def run(episodes_ds, batch_size, **kwargs):
  kwargs.setdefault('episode_fields', 'episode_id')
  kind, kwargs = pt.objects(rlds_lite.Transitions, None, kwargs)
  ds = pipeline.transitions_dataset(episodes_ds, kind, batch_size, **kwargs)
  return list(ds.as_numpy_iterator())


POOLS = ['samples', 'episodes']
TRANSITIONS = rlds_lite.Transitions()


@pytest.mark.parametrize('pool', POOLS)
@pytest.mark.parametrize('case', list(CASES.values()), ids=list(CASES))
def test_unshuffled_transitions_match_reference(case, pool):
  episodes = pt.make_episodes(**case)
  batches = run(pt.nested_dataset(episodes), 4, n=4, gamma=0.5, shuffle=False,
                pool=pool, pool_episodes=1)
  expected = pt.np_transitions(episodes, n=4, gamma=0.5)
  rlds_testing.assert_structures_equal(pt.unbatch(batches), expected)
  assert all(s == 4 for s in pt.batch_sizes(batches)[:-1])


@pytest.mark.parametrize('pool', POOLS)
@pytest.mark.parametrize('n,gamma', [(1, 1.0), (3, 0.5)],
                         ids=['one_step_returns', 'three_step_returns'])
def test_shuffled_transitions_are_each_transition_exactly_once(n, gamma, pool):
  episodes = pt.make_episodes([0, 1, 2, 7, 9, 4, 5], terminal=[True, False] * 4)
  batches = run(pt.dense_dataset(episodes), 5, n=n, gamma=gamma, seed=2,
                pool=pool, pool_episodes=3,
                drop_last_batch=False)
  expected = pt.np_transitions(episodes, n=n, gamma=gamma)
  got = pt.unbatch(batches)
  pt.assert_same_samples(got, expected)
  assert [pt.key(s) for s in got] != [pt.key(s) for s in expected]


@pytest.mark.parametrize('pool', POOLS)
def test_matches_dense_transitions_including_key_order(pool):
  episodes = pt.make_episodes([4, 6], nested=True)
  batches = run(pt.dense_dataset(episodes), 100, n=2, gamma=0.5, shuffle=False,
                episode_fields=(), pool=pool)
  out = [dense.transitions(tf.nest.map_structure(tf.constant, s), n=2, gamma=0.5)
         for s in episodes]
  expected = tf.nest.map_structure(lambda *x: np.concatenate(x), *[
      tf.nest.map_structure(lambda t: t.numpy(), o) for o in out])
  assert list(batches[0]) == list(out[0])
  rlds_testing.assert_structures_equal(batches[0], expected)


@pytest.mark.parametrize('pool', POOLS)
def test_without_discount_field_uses_ones(pool):
  episodes = pt.make_episodes([5, 3], half_discounts=False)
  for steps in episodes:
    del steps['discount']
  batches = run(pt.dense_dataset(episodes), 3, n=2, gamma=0.5, seed=0,
                pool=pool)
  pt.assert_same_samples(pt.unbatch(batches),
                         pt.np_transitions(episodes, n=2, gamma=0.5))


@pytest.mark.parametrize('pool', POOLS)
def test_seed_determinism_and_quality(pool):
  episodes = pt.make_episodes([15] * 16)
  ds = pt.dense_dataset(episodes)
  kwargs = dict(n=3, seed=11, pool=pool, pool_episodes=16)
  first = run(ds, 8, **kwargs)
  again = run(ds, 8, **kwargs)
  rlds_testing.assert_structures_equal(again, first)
  quality = pipeline.shuffle_quality(pipeline.transitions_dataset(
      ds, rlds_lite.Transitions(n=3), 8, seed=11, episode_fields='episode_id',
      pooling=pipeline.Pooling(pool=pool, pool_episodes=16)))
  assert quality.mean_distinct_episodes > 4
  assert quality.num_batches == 16 * 14 // 8


@hypothesis.given(
    lengths=st.lists(st.integers(0, 8), min_size=1, max_size=5),
    batch_size=st.integers(1, 8),
    pool_episodes=st.integers(1, 5),
    n=st.integers(1, 4),
    terminal=st.booleans(),
    pool=st.sampled_from(POOLS))
@hypothesis.settings(max_examples=10)
def test_property_every_transition_once(lengths, batch_size, pool_episodes, n,
                                        terminal, pool):
  episodes = pt.make_episodes(lengths, terminal=[terminal] * len(lengths))
  batches = run(pt.dense_dataset(episodes), batch_size, n=n, gamma=0.5, seed=0,
                pool=pool, pool_episodes=pool_episodes)
  assert all(s == batch_size for s in pt.batch_sizes(batches)[:-1])
  pt.assert_same_samples(pt.unbatch(batches),
                         pt.np_transitions(episodes, n=n, gamma=0.5))


ERRORS = {
    'batch_size_zero': (dict(batch_size=0), ValueError,
                        'batch_size must be a positive int, got 0'),
    'n_zero': (dict(n=0), ValueError, 'n must be a positive int, got 0'),
    'gamma_too_large': (dict(gamma=1.5), ValueError, r'gamma must be in \[0, 1\]'),
    'pool_episodes_negative': (dict(pool_episodes=-1), ValueError,
                               'pool_episodes must be a positive int'),
    'unknown_episode_field': (dict(episode_fields=['nope']), ValueError,
                              "episode_fields names 'nope'"),
}


@pytest.mark.parametrize('kwargs,error,match', list(ERRORS.values()),
                         ids=list(ERRORS))
def test_errors(kwargs, error, match):
  args = dict(batch_size=4)
  args.update(kwargs)
  with pytest.raises(error, match=match):
    kind, args = pt.objects(rlds_lite.Transitions, None, args)
    pipeline.transitions_dataset(pt.nested_dataset(pt.make_episodes([3])),
                                 kind, **args)


@pytest.mark.parametrize('field', ['observation', 'reward'])
def test_error_on_missing_field(field):
  steps = pt.make_episodes([3])[0]
  del steps[field]
  with pytest.raises(ValueError, match=f"needs the step field '{field}'"):
    pipeline.transitions_dataset(pt.dense_dataset([steps]), TRANSITIONS,
                                 2)


def test_error_on_existing_next_observation_and_int_reward():
  steps = pt.make_episodes([3])[0]
  steps['next_observation'] = steps['observation']
  with pytest.raises(ValueError, match="adds the field 'next_observation'"):
    pipeline.transitions_dataset(pt.dense_dataset([steps]), TRANSITIONS,
                                 2)
  steps = pt.make_episodes([3])[0]
  steps['reward'] = np.arange(3)
  with pytest.raises(TypeError, match="'reward' must be a float tensor"):
    pipeline.transitions_dataset(pt.dense_dataset([steps]), TRANSITIONS,
                                 2)


def _success_reward_episodes():
  """Terminal and truncated episodes with a non-zero last reward."""
  episodes = pt.make_episodes([4, 3, 1], terminal=[True, False, True])
  for steps in episodes:
    steps['reward'][-1] = 10.0
  return episodes


@pytest.mark.parametrize('pool', POOLS)
@pytest.mark.parametrize('last_step', ['invalid', 'valid'])
def test_last_step_is_the_same_argument_as_dense_transitions(last_step, pool):
  episodes = _success_reward_episodes()
  batches = run(pt.dense_dataset(episodes), 100, n=2, gamma=0.5,
                shuffle=False, episode_fields=(), pool=pool,
                last_step=last_step)
  out = [dense.transitions(tf.nest.map_structure(tf.constant, s), n=2,
                           gamma=0.5, last_step=last_step) for s in episodes]
  expected = tf.nest.map_structure(lambda *x: np.concatenate(x), *[
      tf.nest.map_structure(lambda t: t.numpy(), o) for o in out])
  rlds_testing.assert_structures_equal(batches[0], expected)
  # 'valid': the terminal episodes' last steps (4 and 1 steps) start one
  # more transition each, with the success reward; truncated ones do not.
  counts = {'invalid': 3 + 2 + 0, 'valid': 4 + 2 + 1}
  assert len(batches[0]['reward']) == counts[last_step]
  assert (10.0 in batches[0]['reward'].tolist()) == (last_step == 'valid')


def test_bad_last_step_is_an_error():
  with pytest.raises(ValueError, match='Transitions: last_step must be'):
    rlds_lite.Transitions(last_step='keep')


@pytest.mark.parametrize('case', list(CASES.values()), ids=list(CASES))
def test_the_old_keywords_give_the_kinds_samples_and_warn_once(case):
  episodes = pt.make_episodes(**case)
  kind = rlds_lite.Transitions(n=3, gamma=0.5, last_step='valid')
  by_kind = pipeline.transitions_dataset(
      pt.nested_dataset(episodes), kind, 4, shuffle=False,
      episode_fields='episode_id')
  option_objects._WARNED.clear()  # pylint: disable=protected-access
  with pytest.warns(DeprecationWarning) as caught:
    by_keywords = pipeline.transitions_dataset(
        pt.nested_dataset(episodes), 4, n=3, gamma=0.5, last_step='valid',
        shuffle=False, episode_fields='episode_id', prefetch=1)
  assert sorted(pt.renames(caught)) == [
      "transitions_dataset: ['batch_size as the second argument'] are now "
      'transitions_dataset(episodes, Transitions(...), batch_size); the old '
      'keywords will go in a later release.',
      "transitions_dataset: ['gamma', 'last_step', 'n'] are now "
      'Transitions(...); the old keywords will go in a later release.',
      "transitions_dataset: ['prefetch'] are now pooling=Pooling(...); the "
      'old keywords will go in a later release.']
  rlds_testing.assert_structures_equal(
      pt.unbatch(list(by_kind.as_numpy_iterator())),
      pt.unbatch(list(by_keywords.as_numpy_iterator())))


@pytest.mark.parametrize('call, message', [
    (dict(kind=rlds_lite.Transitions(n=2), batch_size=4, n=3),
     r'transitions_dataset: pass n, gamma and last_step in the kind '
     r'\(Transitions\(...\)\), not beside it\.'),
    (dict(kind=rlds_lite.Windows(2), batch_size=4),
     r'transitions_dataset: kind must be a Transitions\(...\), got Windows\.'),
    (dict(kind=rlds_lite.Transitions(n=2)),
     r"transitions_dataset\(\) missing 1 required argument: 'batch_size'"),
], ids=['kind-and-keywords', 'another-kind', 'no-batch-size'])
def test_kind_mixups_are_one_type_error(call, message):
  episodes = pt.nested_dataset(pt.make_episodes(lengths=[3]))
  with pytest.raises(TypeError, match=message):
    pipeline.transitions_dataset(episodes, **call)
