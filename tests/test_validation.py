"""Tests of the RLDS format validator: one named case per rule."""

import numpy as np
import pytest
import tensorflow as tf

import rlds_lite as rlds
import rlds_testing


def _flags(first, last, terminal=None):
  steps = {'is_first': np.array(first, bool), 'is_last': np.array(last, bool)}
  if terminal is not None:
    steps['is_terminal'] = np.array(terminal, bool)
  return steps


VALID = [
    ('one_step', [rlds_testing.make_steps(1)]),
    ('two_step_terminal', [rlds_testing.make_steps(2)]),
    ('truncated', [rlds_testing.make_steps(4, terminal=False)]),
    ('several_episodes', [rlds_testing.make_steps(3), rlds_testing.make_steps(1)]),
    ('flags_only', [_flags([1, 0], [0, 1])]),
    ('nested_observation', [rlds_testing.make_steps(3, nested=True)]),
]


@pytest.mark.parametrize('episodes', [e for _, e in VALID], ids=[n for n, _ in VALID])
def test_valid_datasets(episodes):
  ds = rlds_testing.episodes_dataset(episodes)
  assert rlds.validate_episodes(ds) == len(episodes)
  assert rlds.is_valid_rlds_dataset(ds)


INVALID = [
    ('empty_episode', [rlds_testing.make_steps(2), rlds_testing.make_steps(0)],
     1, 'steps', 'the episode has no steps'),
    ('no_is_first', [_flags([0, 0], [0, 1])], 0, 'is_first',
     'step 0 must have is_first=True'),
    ('second_is_first', [_flags([1, 0, 1], [0, 0, 1])], 0, 'is_first',
     'only step 0 may have is_first=True; step 2 has it'),
    ('no_is_last', [_flags([1], [1]), _flags([1, 0], [0, 0])], 1,
     'is_last', r'the final step \(index 1\) must have is_last=True'),
    ('early_is_last', [_flags([1, 0, 0], [1, 0, 1])], 0, 'is_last',
     r'only the final step \(index 2\) may have is_last=True; step 0 has it'),
    ('early_is_terminal', [_flags([1, 0, 0], [0, 0, 1], [0, 1, 1])], 0,
     'is_terminal', r'only the final step \(index 2\) may have is_terminal=True; step 1 has it'),
]


@pytest.mark.parametrize('episodes, index, field, message',
                         [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_datasets_name_episode_and_field(episodes, index, field, message):
  ds = rlds_testing.episodes_dataset(episodes)
  assert not rlds.is_valid_rlds_dataset(ds)
  with pytest.raises(rlds.RLDSFormatError,
                     match=f"^episode {index}, field '{field}': {message}") as info:
    rlds.validate_episodes(ds)
  assert (info.value.episode_index, info.value.field) == (index, field)


def test_num_episodes_limits_the_check():
  ds = rlds_testing.episodes_dataset([_flags([1, 0], [0, 1]), _flags([0, 0], [0, 1])])
  assert rlds.validate_episodes(ds, num_episodes=1) == 1
  assert not rlds.is_valid_rlds_dataset(ds)


@pytest.mark.parametrize('ds, message', [
    (tf.data.Dataset.range(2), 'elements must be episode dicts'),
    (tf.data.Dataset.from_tensors({'steps': tf.data.Dataset.range(2)}),
     'steps must be dicts of fields'),
    (tf.data.Dataset.from_tensors({'steps': tf.data.Dataset.from_tensor_slices(
        {'is_first': [True]})}), "field 'is_last': the mandatory step field is missing"),
    (tf.data.Dataset.from_tensors({'steps': tf.data.Dataset.from_tensor_slices(
        {'is_first': [1], 'is_last': [1]})}),
     "field 'is_first': must be a boolean scalar per step"),
], ids=['not_episodes', 'steps_not_dicts', 'missing_is_last', 'int_flags'])
def test_structure_errors(ds, message):
  with pytest.raises(rlds.RLDSFormatError, match=message):
    rlds.validate_episodes(ds)


def _ragged_observation_episodes(lengths_per_episode):
  """Episodes whose observation spec has an open dimension."""
  def episode(obs_lengths):
    obs = [tf.range(n, dtype=tf.float32) for n in obs_lengths]
    steps = tf.data.Dataset.from_generator(
        lambda: iter(zip(obs, *_flags([i == 0 for i in range(len(obs))],
                                      [i == len(obs) - 1 for i in range(len(obs))]).values())),
        output_signature=(tf.TensorSpec([None], tf.float32),
                          tf.TensorSpec([], tf.bool), tf.TensorSpec([], tf.bool)))
    return steps.map(lambda o, f, l: {'observation': o, 'is_first': f, 'is_last': l})
  datasets = [episode(lengths) for lengths in lengths_per_episode]
  ds = tf.data.Dataset.from_tensors({'steps': datasets[0]})
  for other in datasets[1:]:
    ds = ds.concatenate(tf.data.Dataset.from_tensors({'steps': other}))
  return ds


def test_one_structure_for_all_steps_is_checked_on_open_dimensions():
  assert rlds.validate_episodes(_ragged_observation_episodes([[3, 3], [3]])) == 2
  with pytest.raises(rlds.RLDSFormatError,
                     match=r"^episode 1, field 'observation': step 1 has shape \[2\] "
                     r'but earlier steps have \[3\]'):
    rlds.validate_episodes(_ragged_observation_episodes([[3, 3], [3, 2]]))


def test_dense_episodes_are_validated_too():
  good = {'steps': {k: tf.constant(v) for k, v in rlds_testing.make_steps(3).items()}}
  bad = {'steps': {k: tf.constant(v) for k, v in _flags([1, 1], [0, 1]).items()}}
  assert rlds.validate_episodes(tf.data.Dataset.from_tensors(good)) == 1
  with pytest.raises(rlds.RLDSFormatError, match="episode 0, field 'is_first'"):
    rlds.validate_episodes(tf.data.Dataset.from_tensors(bad))


def test_dense_fields_of_different_lengths_are_named():
  steps = {k: tf.constant(v) for k, v in rlds_testing.make_steps(3).items()}
  steps['reward'] = tf.zeros([5])
  with pytest.raises(
      rlds.RLDSFormatError,
      match=r"^episode 0, field 'reward': has 5 entries along the step axis, "
      r'but the episode has 3 steps'):
    rlds.validate_episodes(tf.data.Dataset.from_tensors({'steps': steps}))
