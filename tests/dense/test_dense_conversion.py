"""Tests of rlds_lite.dense.to_dense / to_nested / dense_episode."""

import numpy as np
import pytest
import tensorflow as tf

import dense_testing as dt
import rlds_testing
import rlds_lite
from rlds_lite import dense
from rlds_lite.dense import conversion

CASES = {
    'flat': ([dt.episode(0, tag=True), dt.episode(1, tag=True),
              dt.episode(2, tag=True), dt.episode(5, True, tag=True),
              dt.episode(4, False, tag=True)],
             {'episode_id': np.arange(10, 15, dtype=np.int32),
              'name': np.array([b'empty', b'one', b'two', b'terminal', b'truncated'])}),
    'nested': ([dt.episode(3, nested=True), dt.episode(0, nested=True),
                dt.episode(1, nested=True)],
               {'episode_id': np.arange(3, dtype=np.int32),
                'score': np.array([0.5, 1.5, 2.5], np.float32)}),
    'only_empty': ([dt.episode(0)], {'episode_id': np.array([7], np.int32)}),
}


def expected_dense(episodes_steps, metadata):
  return [{'steps': steps, **{k: v[i] for k, v in metadata.items()}}
          for i, steps in enumerate(episodes_steps)]


def nested_as_lists(ds):
  """Episodes with their steps datasets turned into lists of steps."""
  return [{**ep, 'steps': rlds_testing.to_numpy(ep['steps'])} for ep in ds]


@pytest.mark.parametrize('episodes,metadata', list(CASES.values()),
                         ids=list(CASES))
def test_to_dense(episodes, metadata):
  ds = dense.to_dense(rlds_testing.episodes_dataset(episodes, metadata))
  for leaf in tf.nest.flatten(ds.element_spec['steps']):
    assert leaf.shape[0] is None  # T unknown in the graph
  rlds_testing.assert_dataset_equals(ds, expected_dense(episodes, metadata))


@pytest.mark.parametrize('episodes,metadata', list(CASES.values()),
                         ids=list(CASES))
def test_round_trips(episodes, metadata):
  nested = rlds_testing.episodes_dataset(episodes, metadata)
  back = dense.to_nested(dense.to_dense(nested))
  assert back.element_spec == nested.element_spec
  expected = [{**ep, 'steps': [dt.np_map(lambda x, t=t: x[t], ep['steps'])
                               for t in range(dt.length_of(ep['steps']))]}
              for ep in expected_dense(episodes, metadata)]
  actual = nested_as_lists(back)
  assert len(actual) == len(expected)
  for a, e in zip(actual, expected):
    assert len(a['steps']) == len(e['steps'])
    for step_a, step_e in zip(a['steps'], e['steps']):
      rlds_testing.assert_structures_equal(step_a, step_e)
    rlds_testing.assert_structures_equal(
        {k: v for k, v in a.items() if k != 'steps'},
        {k: v for k, v in e.items() if k != 'steps'})
  # dense -> nested -> dense is the identity too.
  dense_again = dense.to_dense(back)
  rlds_testing.assert_dataset_equals(dense_again,
                                     expected_dense(episodes, metadata))


def test_to_nested_from_dense_tensors():
  episodes = tf.data.Dataset.from_tensor_slices(
      {'steps': {'reward': [[1.0, 2.0], [3.0, 4.0]]}, 'id': [1, 2]})
  out = nested_as_lists(dense.to_nested(episodes))
  assert [[s['reward'] for s in ep['steps']] for ep in out] == [[1.0, 2.0],
                                                                 [3.0, 4.0]]
  assert [int(ep['id']) for ep in out] == [1, 2]


@pytest.mark.parametrize('length', [0, 1, 3], ids=['empty', 'one_step',
                                                   'three_steps'])
def test_dense_episode_eager(length):
  steps = dt.episode(length, nested=True, tag=True)
  out = dt.to_numpy(dense.dense_episode(rlds_testing.steps_dataset(steps)))
  rlds_testing.assert_structures_equal(out, steps)


def test_dense_episode_unknown_inner_dim():
  ds = tf.data.Dataset.from_generator(
      lambda: iter([]), output_signature={'x': tf.TensorSpec([None, 3], tf.int32)})
  assert dense.dense_episode(ds)['x'].shape == (0, 0, 3)


@pytest.mark.parametrize('fn,arg,error,match', [
    (dense.to_dense, [1, 2], TypeError, 'episodes must be a tf.data.Dataset'),
    (dense.to_dense, tf.data.Dataset.range(3), TypeError,
     "episodes must be dicts with a 'steps' field"),
    (dense.to_dense, tf.data.Dataset.from_tensors({'steps': {'r': [1.0]}}),
     TypeError, 'already dense'),
    (dense.to_nested, rlds_testing.episodes_dataset([dt.episode(2)]),
     TypeError, 'already a nested dataset'),
    (dense.to_nested, tf.data.Dataset.from_tensors({'steps': [1.0]}),
     TypeError, "'steps' must be a dict of"),
    (dense.dense_episode, {'r': [1.0]}, TypeError,
     'steps must be a tf.data.Dataset'),
    (dense.dense_episode,
     tf.data.Dataset.from_tensors({'r': tf.ragged.constant([[1], [2, 3]])}),
     TypeError, "step field 'r' has spec"),
], ids=['not_a_dataset', 'not_episodes', 'dense_to_dense', 'nested_to_nested',
        'steps_not_a_dict', 'dense_episode_of_dict', 'ragged_field'])
def test_bad_input(fn, arg, error, match):
  with pytest.raises(error, match=match):
    fn(arg)


def test_dense_episode_of_mapped_steps_inside_a_map():
  # A mapped steps dataset has an unknown cardinality inside Dataset.map;
  # batching it by "all steps" at once used to reserve memory for 2**63
  # steps and hang.
  episodes = rlds_lite.synthetic.episodes(num_episodes=3, seed=0)
  rewards = episodes.map(lambda e: conversion.dense_episode(
      e['steps'].map(lambda s: {'reward': 2 * s['reward']}))['reward'])
  expected = [2 * e['steps']['reward'].numpy() for e in
              rlds_lite.synthetic.episodes(num_episodes=3, seed=0, dense=True)]
  got = [r.numpy() for r in rewards]
  assert [len(r) for r in got] == [5, 46, 46]
  for a, b in zip(got, expected):
    np.testing.assert_array_equal(a, b)
