"""Tests of rlds_lite.dense.robot_samples against a NumPy reference.

The named cases: history at the episode start, an action chunk running past
the end, a one-step (and an empty) episode, terminal vs truncated episodes,
strided histories and anchors, subsampled anchors, goals.
"""

import re
import warnings

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest
import tensorflow as tf

import dense_testing as dt
import rlds_testing
from rlds_lite import dense
from rlds_lite import RobotSamples
from rlds_lite.dense import LastStep
from rlds_lite.dense import robot as robot_lib
from rlds_lite import option_objects


def robot_samples_reference(steps, history=1, action_chunk=1,
                            last_step=LastStep.INVALID, history_stride=1,
                            shift=1, keep_actionless=False, history_pad='first',
                            action_pad='last', anchors=None, goals=None):
  """Plain loops: one sample per anchor (``anchors`` overrides the choice)."""
  length = dt.length_of(steps)
  valid = length if last_step == LastStep.VALID else max(length - 1, 0)
  if anchors is None:
    anchors = list(range(0, length if keep_actionless else valid, shift))
  rows = []
  for t in anchors:
    row = {k: dt.np_map(lambda x, t=t: x[t], v) for k, v in steps.items()
           if k not in ('observation', 'action')}
    obs_steps = [t - (history - 1 - j) * history_stride for j in range(history)]

    def obs(x, i):
      if i >= 0:
        return x[i]
      return x[0] if history_pad == 'first' else dt.zeros_like_row(x)

    row['observation'] = dt.np_map(
        lambda x, s=obs_steps: np.stack([obs(x, i) for i in s]),
        steps['observation'])
    row['observation_pad_mask'] = np.array([i >= 0 for i in obs_steps])
    act_steps = [t + j for j in range(action_chunk)]

    def act(x, i):
      if i < valid:
        return x[i]
      if action_pad == 'last' and valid > 0:
        return x[valid - 1]
      return dt.zeros_like_row(x)

    row['action'] = dt.np_map(
        lambda x, s=act_steps: np.stack([act(x, i) for i in s]),
        steps['action'])
    row['action_pad_mask'] = np.array([i < valid for i in act_steps])
    rows.append(row)
  like = {k: v for k, v in steps.items()}
  like['observation_pad_mask'] = np.zeros([length], bool)
  like['action_pad_mask'] = np.zeros([length], bool)
  if rows:
    out = dt.np_map(lambda *xs: np.stack(xs), *rows)
  else:
    out = {k: dt.np_map(lambda x: np.zeros((0,) + x.shape[1:], x.dtype), v)
           for k, v in like.items() if k not in ('observation', 'action')}
    out['observation'] = dt.stack_rows([], steps['observation'], [history])
    out['action'] = dt.stack_rows([], steps['action'], [action_chunk])
    out['observation_pad_mask'] = np.zeros([0, history], bool)
    out['action_pad_mask'] = np.zeros([0, action_chunk], bool)
  if goals is not None:
    out['goal'] = dt.stack_rows(
        [dt.np_map(lambda x, g=g: x[g], steps['observation']) for g in goals],
        steps['observation'], [])
    out['goal_index'] = np.asarray(goals, np.int32).reshape(-1)
  return out


# Named argument sets: each one a padding rule or a layout.
CASES = {
    'one_frame_one_action': dict(history=1, action_chunk=1),
    'history_at_episode_start': dict(history=3, action_chunk=1),
    'chunk_past_the_end': dict(history=1, action_chunk=4),
    'octo_2_4': dict(history=2, action_chunk=4),
    'octo_2_4_last_step_valid': dict(history=2, action_chunk=4,
                                     last_step=LastStep.VALID),
    'keep_actionless_last_step': dict(history=2, action_chunk=2,
                                      keep_actionless=True),
    'zero_padding': dict(history=3, action_chunk=3, history_pad='zero',
                         action_pad='zero'),
    'strided_history': dict(history=3, action_chunk=2, history_stride=2),
    'strided_anchors': dict(history=2, action_chunk=2, shift=2),
    'strided_both_valid': dict(history=2, action_chunk=3, history_stride=3,
                               shift=3, last_step=LastStep.VALID),
    'history_longer_than_episode': dict(history=7, action_chunk=7,
                                        keep_actionless=True),
}


@pytest.mark.parametrize('episode_name', dt.EPISODE_IDS)
@pytest.mark.parametrize('kwargs', list(CASES.values()), ids=list(CASES))
def test_robot_samples_table(episode_name, kwargs):
  steps = dt.NAMED_EPISODES[episode_name]
  rlds_testing.assert_structures_equal(
      dt.to_numpy(dense.robot_samples(steps, RobotSamples(**kwargs))),
      robot_samples_reference(steps, **kwargs))


# Spelled out by hand: observations are t (+0.5), actions 10 t.
@pytest.mark.parametrize('length,kwargs,obs,obs_mask,actions,action_mask', [
    (3, dict(history=2, action_chunk=3),
     [[0, 0], [0, 1]], [[False, True], [True, True]],
     [[0, 10, 10], [10, 10, 10]], [[True, True, False], [True, False, False]]),
    (3, dict(history=2, action_chunk=3, last_step='valid'),
     [[0, 0], [0, 1], [1, 2]], [[False, True], [True, True], [True, True]],
     [[0, 10, 20], [10, 20, 20], [20, 20, 20]],
     [[True, True, True], [True, True, False], [True, False, False]]),
    (1, dict(history=2, action_chunk=2), [], [], [], []),
    (1, dict(history=2, action_chunk=2, keep_actionless=True),
     [[0, 0]], [[False, True]], [[0, 0]], [[False, False]]),
    (1, dict(history=2, action_chunk=2, last_step='valid'),
     [[0, 0]], [[False, True]], [[0, 0]], [[True, False]]),
    (5, dict(history=2, action_chunk=1, history_stride=2, shift=2),
     [[0, 0], [0, 2]], [[False, True], [True, True]], [[0], [20]],
     [[True], [True]]),
], ids=['three_steps_invalid', 'three_steps_valid', 'one_step_invalid',
        'one_step_keep_actionless', 'one_step_valid', 'strided_five_steps'])
def test_robot_samples_by_hand(length, kwargs, obs, obs_mask, actions,
                               action_mask):
  out = dense.robot_samples(dt.episode(length), RobotSamples(**kwargs))
  assert out['observation'][..., 0].numpy().tolist() == obs
  assert out['observation_pad_mask'].numpy().tolist() == obs_mask
  assert out['action'].numpy().tolist() == actions
  assert out['action_pad_mask'].numpy().tolist() == action_mask


@pytest.mark.parametrize('terminal', [True, False], ids=['terminal', 'truncated'])
def test_terminal_and_truncated_differ_only_in_the_flags(terminal):
  out = dt.to_numpy(dense.robot_samples(dt.episode(4, terminal=terminal),
                                        RobotSamples(2, 3, keep_actionless=True)))
  assert out['is_terminal'].tolist() == [False, False, False, terminal]
  assert out['is_last'].tolist() == [False, False, False, True]
  assert out['action_pad_mask'].tolist() == [
      [True, True, True], [True, True, False], [True, False, False],
      [False, False, False]]


@pytest.mark.parametrize('goal,goal_p', [('final', None), ('future', None),
                                        ('uniform', None), ('geometric', 0.5)])
@pytest.mark.parametrize('episode_name', dt.EPISODE_IDS)
def test_robot_samples_goals(episode_name, goal, goal_p):
  steps = dt.NAMED_EPISODES[episode_name]
  kind = RobotSamples(2, 2, goal=goal, goal_p=goal_p, last_step='valid')
  out = dt.to_numpy(dense.robot_samples(steps, kind, seed=5))
  length = dt.length_of(steps)
  anchors = list(range(length))
  goals = out['goal_index'].tolist()
  for t, g in zip(anchors, goals):
    if goal == 'final':
      assert g == length - 1
    elif goal == 'future':
      assert t <= g < length
    elif goal == 'geometric':
      assert min(t + 1, length - 1) <= g < length
    else:
      assert 0 <= g < length
  rlds_testing.assert_structures_equal(
      out, robot_samples_reference(steps, 2, 2, LastStep.VALID, goals=goals))
  # The same goals as relabel_goals' on the whole episode, at the anchors.
  assert out['goal_index'].shape == (length,)


def test_max_samples_subsamples_anchors_in_order():
  steps = dt.episode(20)
  kind = RobotSamples(2, 2, max_samples=5, index_key='t')
  out = dt.to_numpy(dense.robot_samples(steps, kind, seed=3))
  anchors = out['t'].tolist()
  assert len(anchors) == 5 and anchors == sorted(set(anchors))
  assert all(0 <= t < 19 for t in anchors)
  rlds_testing.assert_structures_equal(
      {k: v for k, v in out.items() if k != 't'},
      robot_samples_reference(steps, 2, 2, anchors=anchors))
  again = dense.robot_samples(steps, kind, seed=3)
  assert again['t'].numpy().tolist() == anchors
  short = dense.robot_samples(dt.episode(3), RobotSamples(max_samples=5),
                              seed=3)
  assert short['action'].shape[0] == 2


@hypothesis.given(length=st.integers(0, 9), history=st.integers(1, 4),
                  chunk=st.integers(1, 4), stride=st.integers(1, 3),
                  shift=st.integers(1, 3), keep=st.booleans(),
                  last_step=st.sampled_from(list(LastStep)), nested=st.booleans())
def test_robot_samples_property(length, history, chunk, stride, shift, keep,
                                last_step, nested):
  steps = dt.episode(length, nested=nested)
  kwargs = dict(history=history, action_chunk=chunk, history_stride=stride,
                shift=shift, keep_actionless=keep, last_step=last_step)
  rlds_testing.assert_structures_equal(
      dt.to_numpy(dense.robot_samples(steps, RobotSamples(**kwargs))),
      robot_samples_reference(steps, **kwargs))


def test_robot_samples_in_dataset_map():
  episodes = [dt.episode(n, nested=True, tag=True) for n in (0, 1, 2, 5, 3)]
  ds = dt.dense_episodes(episodes).map(
      lambda ep: dense.robot_samples(ep['steps'],
                                     RobotSamples(2, 3, last_step='valid')))
  assert ds.element_spec['observation']['pos'].shape.as_list() == [None, 2, 2]
  assert ds.element_spec['tag'].shape.as_list() == [None]
  for actual, steps in zip(ds.as_numpy_iterator(), episodes, strict=True):
    rlds_testing.assert_structures_equal(
        actual, robot_samples_reference(steps, 2, 3, LastStep.VALID))


def test_indices_agree_with_frame_stack_and_chunk_actions():
  steps = dt.episode(6)
  out = dense.robot_samples(steps, RobotSamples(3, 2, keep_actionless=True))
  stacked = dense.chunk_actions(dense.frame_stack(steps, 3), 2)
  for key in ('observation', 'observation_pad_mask', 'action',
              'action_pad_mask'):
    np.testing.assert_array_equal(out[key].numpy(), stacked[key].numpy())


@pytest.mark.parametrize('kwargs,error,match', [
    ({'history': 0}, ValueError, 'history must be a positive'),
    ({'action_chunk': -1}, ValueError, 'action_chunk must be a positive'),
    ({'history_stride': 0}, ValueError, 'history_stride must be a positive'),
    ({'max_samples': 0}, ValueError, 'max_samples must be a positive'),
    ({'goal': 'past'}, ValueError, 'goal must be None or one of'),
    ({'goal': 'geometric'}, ValueError, "goal 'geometric' needs goal_p"),
    ({'goal_p': 0.5}, ValueError, 'goal_p is only used with a goal'),
    ({'history_pad': 'last'}, ValueError, 'history_pad must be one of'),
    ({'last_step': 'maybe'}, ValueError, 'last_step must be'),
    ({'observation_key': 'image'}, ValueError,
     "robot_samples: needs the step field 'image'"),
    ({'index_key': 'reward'}, ValueError, "adds the field 'reward'"),
], ids=['zero_history', 'negative_chunk', 'zero_stride', 'zero_max_samples',
        'unknown_goal', 'geometric_without_p', 'p_without_goal', 'bad_pad',
        'bad_last_step', 'missing_key', 'existing_index_key'])
def test_robot_samples_bad_arguments(kwargs, error, match):
  with pytest.raises(error, match=match):
    dense.robot_samples(dt.episode(3), RobotSamples(**{'history': 2, **kwargs}))


def test_seeded_goals_are_reproducible_and_graph_equals_eager():
  steps = dt.episode(30)
  def goals(seed):
    return dense.robot_samples(steps, RobotSamples(goal='future'), seed=seed)[
        'goal_index'].numpy().tolist()
  assert goals(1) == goals(1) and goals(1) != goals(2)
  ds = tf.data.Dataset.range(1).map(lambda _: dense.robot_samples(
      {k: tf.constant(v) for k, v in steps.items()}, RobotSamples(goal='future'),
      seed=1))
  assert next(ds.as_numpy_iterator())['goal_index'].tolist() == goals(1)


def test_the_defaults_are_robot_samples_fields():
  assert RobotSamples().dense_kwargs() == robot_lib.SAMPLE_DEFAULTS
  steps = dt.episode(4)
  rlds_testing.assert_structures_equal(
      dt.to_numpy(dense.robot_samples(steps)),
      dt.to_numpy(dense.robot_samples(steps, RobotSamples())))


def test_the_flat_spelling_still_works_and_warns_once():
  steps, kind = dt.episode(6), RobotSamples(2, 3, goal='future', shift=2)
  new = dt.to_numpy(dense.robot_samples(steps, kind, seed=4))
  option_objects._WARNED.clear()  # pylint: disable=protected-access
  with pytest.warns(DeprecationWarning, match=re.escape(
      "robot_samples: the sample keywords are now a kind: robot_samples(..., "
      "RobotSamples(history=2, action_chunk=3, goal='future', shift=2)) "
      '(rlds_lite.RobotSamples)')):
    old = dense.robot_samples(steps, 2, 3, goal='future', shift=2, seed=4)
  rlds_testing.assert_structures_equal(dt.to_numpy(old), new)
  with warnings.catch_warnings():
    warnings.simplefilter('error')   # Once.
    dense.robot_samples(steps, history=2, action_chunk=3)


def test_the_flat_spelling_of_the_indices_still_works_and_warns_once():
  kind = RobotSamples(2, 3, history_stride=2)
  new = robot_lib.robot_sample_indices(tf.constant(5), kind)
  option_objects._WARNED.clear()  # pylint: disable=protected-access
  with pytest.warns(DeprecationWarning, match=re.escape(
      'robot_sample_indices: the sample keywords are now a kind: '
      'robot_sample_indices(..., RobotSamples(history=2, action_chunk=3, '
      'history_stride=2))')):
    old = dense.robot_sample_indices(tf.constant(5), 2, 3, history_stride=2)
  for got, want in zip(old, new):
    assert (got is None and want is None) or (
        got.numpy().tolist() == want.numpy().tolist())


@pytest.mark.parametrize('call,error,message', [
    (lambda s: dense.robot_samples(s, RobotSamples(), history=2), TypeError,
     "robot_samples: pass the sample arguments in the kind (RobotSamples(...)),"
     " not beside it: ['history']."),
    (lambda s: dense.robot_samples(s, dense), TypeError,
     'robot_samples: kind must be a RobotSamples(...), got module.'),
    (lambda s: dense.robot_samples(s, 2, 3, 4), TypeError,
     'robot_samples() takes from 1 to 3 positional arguments but 4 were '
     'given'),
    (lambda s: dense.robot_samples(s, histroy=2), TypeError,
     "robot_samples() got an unexpected keyword argument 'histroy'"),
    (lambda s: dense.robot_sample_indices(3, history_pad='zero'), TypeError,
     "robot_sample_indices() got an unexpected keyword argument "
     "'history_pad'"),
], ids=['kind_and_keywords', 'not_a_kind', 'too_many_positional',
        'misspelt_keyword', 'indices_take_no_pads'])
def test_kind_argument_errors(call, error, message):
  with pytest.raises(error, match='^' + re.escape(message) + '$'):
    call(dt.episode(3))
