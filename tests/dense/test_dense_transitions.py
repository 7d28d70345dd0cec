"""Tests of rlds_lite.dense.transitions against a NumPy reference."""

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest
import tensorflow as tf

import dense_testing as dt
import rlds_testing
from rlds_lite import dense
from rlds_lite.dense import LastStep


def transitions_reference(steps, n=1, gamma=1.0, last_step=LastStep.INVALID):
  """Plain loops over start steps t < end (float32 arithmetic).

  end = T-1, or T for a terminal episode under LastStep.VALID (a virtual
  step after the last one, whose observation stands in as o_{T-1}).
  """
  length = dt.length_of(steps)
  reward = steps['reward']
  discount = steps.get('discount', np.ones(length, reward.dtype))
  gamma = discount.dtype.type(gamma)
  terminal = 'is_terminal' in steps and length > 0 and steps['is_terminal'][-1]
  end = length - 1
  if last_step == LastStep.VALID and terminal:
    end = length
  rows = []
  for t in range(end):
    m = min(n, end - t)
    ret = np.zeros(reward.shape[1:], reward.dtype)
    weight = np.ones(discount.shape[1:], discount.dtype)
    for k in range(m):
      ret = ret + weight * reward[t + k]
      weight = weight * (gamma * discount[t + k])
    if t + m == end and terminal:
      weight = np.zeros_like(weight)
    row = dt.np_map(lambda x, t=t: x[t], steps)
    row['reward'] = ret
    row['discount'] = weight
    row['next_observation'] = dt.np_map(lambda x, i=min(t + m, length - 1): x[i],
                                        steps['observation'])
    rows.append(row)
  if rows:
    return dt.np_map(lambda *xs: np.stack(xs), *rows)
  out = dt.np_map(lambda x: x[:0], steps)
  out['discount'] = discount[:0]
  out['next_observation'] = dt.np_map(lambda x: x[:0], steps['observation'])
  return out


REWARDS5 = [1.0, 2.0, 4.0, 8.0, 16.0]
DISCOUNTS5 = [1.0, 0.5, 1.0, 0.5, 1.0]

EPISODES = {
    **dt.NAMED_EPISODES,
    'terminal_discounts': dt.episode(5, True, rewards=REWARDS5,
                                     discounts=DISCOUNTS5),
    'truncated_discounts': dt.episode(5, False, rewards=REWARDS5,
                                      discounts=DISCOUNTS5),
    'zero_discount_mid_episode': dt.episode(4, False, rewards=REWARDS5[:4],
                                            discounts=[1.0, 0.0, 1.0, 1.0]),
    'vector_rewards': dt.episode(4, True, rewards=[[1, -1], [2, -2], [4, -4],
                                                   [8, -8]]),
}

NS_GAMMAS = {'n1': (1, 1.0), 'n1_gamma_half': (1, 0.5), 'n3': (3, 0.5),
             'n_longer_than_episode': (10, 0.75), 'gamma_zero': (2, 0.0)}


@pytest.mark.parametrize('episode_name', list(EPISODES))
@pytest.mark.parametrize('n,gamma', list(NS_GAMMAS.values()),
                         ids=list(NS_GAMMAS))
@pytest.mark.parametrize('last_step', list(LastStep), ids=lambda s: s.value)
def test_transitions_table(episode_name, n, gamma, last_step):
  steps = EPISODES[episode_name]
  actual = dt.to_numpy(dense.transitions(steps, n, gamma, last_step=last_step))
  rlds_testing.assert_structures_equal(
      actual, transitions_reference(steps, n, gamma, last_step))
  assert set(actual) == set(steps) | {'next_observation'}


@pytest.mark.parametrize('terminal,n,rewards,discounts,next_obs', [
    # 3 steps: r = [1, 2, x], d = [1, 0.5, x], gamma = 0.5
    (True, 1, [1.0, 2.0], [0.5, 0.0], [1.0, 2.0]),
    (False, 1, [1.0, 2.0], [0.5, 0.25], [1.0, 2.0]),
    (True, 2, [1.0 + 0.5 * 2.0, 2.0], [0.0, 0.0], [2.0, 2.0]),
    (False, 2, [1.0 + 0.5 * 2.0, 2.0], [0.5 * 0.25, 0.25], [2.0, 2.0]),
], ids=['terminal_n1', 'truncated_n1', 'terminal_n2', 'truncated_n2'])
def test_transitions_by_hand(terminal, n, rewards, discounts, next_obs):
  steps = dt.episode(3, terminal, rewards=[1.0, 2.0, 99.0],
                     discounts=[1.0, 0.5, 99.0])
  out = dense.transitions(steps, n, gamma=0.5)
  assert out['reward'].numpy().tolist() == rewards
  assert out['discount'].numpy().tolist() == discounts
  assert out['next_observation'][:, 0].numpy().tolist() == next_obs
  assert out['action'].numpy().tolist() == [0, 10]


@pytest.mark.parametrize('terminal,n,rewards,discounts,next_obs', [
    # 3 steps: r = [1, 2, 4], d = [1, 0.5, 0.5], gamma = 0.5
    (True, 1, [1.0, 2.0, 4.0], [0.5, 0.25, 0.0], [1.0, 2.0, 2.0]),
    (True, 2, [2.0, 3.0, 4.0], [0.125, 0.0, 0.0], [2.0, 2.0, 2.0]),
    (False, 2, [2.0, 2.0], [0.125, 0.25], [2.0, 2.0]),
], ids=['terminal_n1', 'terminal_n2', 'truncated_same_as_invalid'])
def test_transitions_last_step_valid_by_hand(terminal, n, rewards, discounts,
                                             next_obs):
  steps = dt.episode(3, terminal, rewards=[1.0, 2.0, 4.0],
                     discounts=[1.0, 0.5, 0.5])
  out = dense.transitions(steps, n, gamma=0.5, last_step='valid')
  assert out['reward'].numpy().tolist() == rewards
  assert out['discount'].numpy().tolist() == discounts
  assert out['next_observation'][:, 0].numpy().tolist() == next_obs


@pytest.mark.parametrize('last_step,count', [(LastStep.INVALID, 0),
                                             (LastStep.VALID, 1)],
                         ids=['invalid', 'valid'])
def test_transitions_one_terminal_step(last_step, count):
  out = dense.transitions(dt.episode(1, True, rewards=[3.0]),
                          last_step=last_step)
  assert out['reward'].numpy().tolist() == [3.0] * count
  assert out['discount'].numpy().tolist() == [0.0] * count


def test_transitions_without_discount_or_terminal_fields():
  steps = dt.episode(3, rewards=[1.0, 2.0, 4.0])
  del steps['discount'], steps['is_terminal']
  out = dense.transitions(steps, 2, gamma=0.5)
  assert out['reward'].numpy().tolist() == [2.0, 2.0]
  assert out['discount'].numpy().tolist() == [0.25, 0.5]  # truncated: bootstrap
  assert out['discount'].dtype == tf.float32


def test_transitions_keep_float64_and_tensor_gamma():
  steps = dt.episode(3)
  steps['reward'] = steps['reward'].astype(np.float64)
  steps['discount'] = steps['discount'].astype(np.float64)
  out = dense.transitions(steps, 2, gamma=tf.constant(0.5, tf.float64))
  assert out['reward'].dtype == tf.float64
  assert out['discount'].dtype == tf.float64
  rlds_testing.assert_structures_equal(
      dt.to_numpy(out), transitions_reference(steps, 2, 0.5))


@hypothesis.given(
    length=st.integers(0, 8), n=st.integers(1, 5),
    gamma=st.sampled_from([0.0, 0.5, 0.75, 1.0]), terminal=st.booleans(),
    last_step=st.sampled_from(list(LastStep)), data=st.data())
def test_transitions_property(length, n, gamma, terminal, last_step, data):
  rewards = data.draw(st.lists(st.integers(-8, 8), min_size=length,
                               max_size=length))
  discounts = data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]),
                                 min_size=length, max_size=length))
  nested = data.draw(st.booleans())
  steps = dt.episode(length, terminal, nested=nested,
                     rewards=[r / 4 for r in rewards], discounts=discounts)
  actual = dt.to_numpy(dense.transitions(steps, n, gamma,
                                         last_step=last_step))
  # Dyadic values: every sum and product is exact in float32.
  rlds_testing.assert_structures_equal(
      actual, transitions_reference(steps, n, gamma, last_step))


@pytest.mark.parametrize('last_step', list(LastStep), ids=lambda s: s.value)
def test_transitions_in_dataset_map(last_step):
  episodes = [dt.episode(n, terminal=n % 2 == 0, nested=True)
              for n in (0, 1, 2, 5, 3, 4)]
  ds = dt.dense_episodes(episodes).map(
      lambda ep: dense.transitions(ep['steps'], 3, 0.5, last_step=last_step))
  assert ds.element_spec['reward'].shape.as_list() == [None]
  for actual, steps in zip(ds.as_numpy_iterator(), episodes, strict=True):
    rlds_testing.assert_structures_equal(
        actual, transitions_reference(steps, 3, 0.5, last_step))


@pytest.mark.parametrize('steps,kwargs,error,match', [
    ({'observation': np.zeros(2)}, {}, ValueError,
     "transitions: needs the step field 'reward'"),
    ({'reward': np.zeros(2, np.float32)}, {}, ValueError,
     "needs the step field 'observation'"),
    ({'observation': np.zeros(2), 'reward': np.zeros(2, np.int32)}, {},
     TypeError, "'reward' must be a float tensor, got int32"),
    ({'observation': np.zeros(2), 'reward': np.zeros(2, np.float32),
      'discount': np.ones(2, np.int64)}, {}, TypeError,
     "'discount' must be a float tensor"),
    ({'observation': np.zeros(2), 'reward': np.zeros(2, np.float32),
      'next_observation': np.zeros(2)}, {}, ValueError,
     "adds the field 'next_observation'"),
    (dt.episode(3), {'n': 0}, ValueError, 'n must be a positive int'),
    (dt.episode(3), {'gamma': 1.5}, ValueError, r'gamma must be in \[0, 1\]'),
    (dt.episode(3), {'gamma': 'x'}, TypeError, 'gamma must be a number'),
    ({'observation': np.zeros(2), 'reward': np.zeros(2, np.float32),
      'discount': np.ones((2, 3), np.float32)}, {}, ValueError,
     'discount has rank 2, more than the rank 1 of reward'),
    (dt.episode(3), {'last_step': 'last'}, ValueError,
     'last_step must be LastStep.INVALID or LastStep.VALID'),
], ids=['no_reward', 'no_observation', 'int_reward', 'int_discount',
        'has_next_observation', 'zero_n', 'gamma_above_one', 'gamma_string',
        'discount_rank_above_reward', 'bad_last_step'])
def test_transitions_bad_input(steps, kwargs, error, match):
  with pytest.raises(error, match=match):
    dense.transitions(steps, **kwargs)
