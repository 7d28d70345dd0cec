"""Tests of rlds_lite.dense.frame_stack / chunk_actions against NumPy references."""

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest

import dense_testing as dt
import rlds_testing
from rlds_lite import dense
from rlds_lite.dense import LastStep


def frame_stack_reference(steps, history, pad='first', key='observation'):
  length = dt.length_of(steps)
  rows, masks = [], []
  for t in range(length):
    indices = [t - history + 1 + h for h in range(history)]
    def pick(x, i):
      if i >= 0:
        return x[i]
      return x[0] if pad == 'first' else dt.zeros_like_row(x)
    rows.append(dt.np_map(
        lambda x, indices=indices: np.stack([pick(x, i) for i in indices]),
        steps[key]))
    masks.append([i >= 0 for i in indices])
  out = dict(steps)
  out[key] = dt.stack_rows(rows, steps[key], [history])
  out[key + '_pad_mask'] = np.array(masks, bool).reshape(length, history)
  return out


def chunk_actions_reference(steps, horizon, last_step=LastStep.INVALID,
                            pad='last', key='action'):
  length = dt.length_of(steps)
  valid = length if last_step == LastStep.VALID else max(length - 1, 0)
  rows, masks = [], []
  for t in range(length):
    indices = [t + j for j in range(horizon)]
    def pick(x, i):
      if i < valid:
        return x[i]
      if pad == 'last' and valid > 0:
        return x[valid - 1]
      return dt.zeros_like_row(x)
    rows.append(dt.np_map(
        lambda x, indices=indices: np.stack([pick(x, i) for i in indices]),
        steps[key]))
    masks.append([i < valid for i in indices])
  out = dict(steps)
  out[key] = dt.stack_rows(rows, steps[key], [horizon])
  out[key + '_pad_mask'] = np.array(masks, bool).reshape(length, horizon)
  return out


HISTORIES = {'history1': 1, 'history2': 2, 'history3': 3,
             'history_longer_than_episode': 7}
HORIZONS = {'horizon1': 1, 'horizon2': 2, 'horizon4': 4,
            'horizon_longer_than_episode': 7}


@pytest.mark.parametrize('episode_name', dt.EPISODE_IDS)
@pytest.mark.parametrize('pad', ['first', 'zero'])
@pytest.mark.parametrize('history', list(HISTORIES.values()),
                         ids=list(HISTORIES))
def test_frame_stack_table(episode_name, pad, history):
  steps = dt.NAMED_EPISODES[episode_name]
  rlds_testing.assert_structures_equal(
      dt.to_numpy(dense.frame_stack(steps, history, pad)),
      frame_stack_reference(steps, history, pad))


@pytest.mark.parametrize('episode_name', dt.EPISODE_IDS)
@pytest.mark.parametrize('last_step', list(LastStep), ids=lambda s: s.value)
@pytest.mark.parametrize('pad', ['last', 'zero'])
@pytest.mark.parametrize('horizon', list(HORIZONS.values()), ids=list(HORIZONS))
def test_chunk_actions_table(episode_name, last_step, pad, horizon):
  steps = dt.NAMED_EPISODES[episode_name]
  rlds_testing.assert_structures_equal(
      dt.to_numpy(dense.chunk_actions(steps, horizon, last_step, pad=pad)),
      chunk_actions_reference(steps, horizon, last_step, pad))


# Masks spelled out by hand (the off-by-one/two bugs of octo#140 live here).
@pytest.mark.parametrize('length,last_step,mask,actions', [
    (3, LastStep.INVALID,
     [[True, True, False], [True, False, False], [False, False, False]],
     [[0, 10, 10], [10, 10, 10], [10, 10, 10]]),
    (3, LastStep.VALID,
     [[True, True, True], [True, True, False], [True, False, False]],
     [[0, 10, 20], [10, 20, 20], [20, 20, 20]]),
    (1, LastStep.INVALID, [[False, False, False]], [[0, 0, 0]]),
    (1, LastStep.VALID, [[True, False, False]], [[0, 0, 0]]),
    (0, LastStep.INVALID, [], []),
], ids=['three_steps_invalid', 'three_steps_valid', 'one_step_invalid',
        'one_step_valid', 'empty'])
def test_chunk_actions_by_hand(length, last_step, mask, actions):
  out = dense.chunk_actions(dt.episode(length), 3, last_step)
  assert out['action_pad_mask'].numpy().tolist() == mask
  assert out['action'].numpy().tolist() == actions
  assert out['action'].shape == (length, 3)


def test_chunk_actions_accepts_policy_strings():
  steps = dt.episode(3)
  a = dense.chunk_actions(steps, 2, 'valid')['action_pad_mask'].numpy()
  b = dense.chunk_actions(steps, 2, LastStep.VALID)['action_pad_mask'].numpy()
  np.testing.assert_array_equal(a, b)
  assert a.tolist() == [[True, True], [True, True], [True, False]]


def test_frame_stack_by_hand():
  out = dense.frame_stack(dt.episode(3), 3)
  assert out['observation_pad_mask'].numpy().tolist() == [
      [False, False, True], [False, True, True], [True, True, True]]
  assert out['observation'][..., 0].numpy().tolist() == [
      [0, 0, 0], [0, 0, 1], [0, 1, 2]]
  assert out['action'].numpy().tolist() == [0, 10, 20]  # other fields kept


def test_frame_stack_other_key_and_nested():
  steps = dt.episode(3, nested=True)
  out = dense.frame_stack(steps, 2, 'zero', key='action')
  assert out['action'][0].numpy().tolist() == [[0, 0], [0, 10], [10, 20]]
  assert out['action'][1].numpy().tolist() == [[0, 0], [0, 2], [2, 4]]
  assert out['action_pad_mask'].numpy().tolist() == [
      [False, True], [True, True], [True, True]]
  assert out['observation']['id'].shape == (3,)


@hypothesis.given(length=st.integers(0, 8), history=st.integers(1, 5),
                  pad=st.sampled_from(['first', 'zero']), nested=st.booleans())
def test_frame_stack_property(length, history, pad, nested):
  steps = dt.episode(length, nested=nested)
  rlds_testing.assert_structures_equal(
      dt.to_numpy(dense.frame_stack(steps, history, pad)),
      frame_stack_reference(steps, history, pad))


@hypothesis.given(length=st.integers(0, 8), horizon=st.integers(1, 5),
                  last_step=st.sampled_from(list(LastStep)),
                  pad=st.sampled_from(['last', 'zero']), nested=st.booleans())
def test_chunk_actions_property(length, horizon, last_step, pad, nested):
  steps = dt.episode(length, nested=nested)
  rlds_testing.assert_structures_equal(
      dt.to_numpy(dense.chunk_actions(steps, horizon, last_step, pad=pad)),
      chunk_actions_reference(steps, horizon, last_step, pad))


def test_frame_stack_and_chunk_actions_in_dataset_map():
  episodes = [dt.episode(n, nested=True) for n in (0, 1, 2, 5, 3)]
  ds = dt.dense_episodes(episodes).map(
      lambda ep: dense.chunk_actions(dense.frame_stack(ep['steps'], 2), 3,
                                     LastStep.VALID))
  assert ds.element_spec['observation']['pos'].shape.as_list() == [None, 2, 2]
  for actual, steps in zip(ds.as_numpy_iterator(), episodes, strict=True):
    expected = chunk_actions_reference(frame_stack_reference(steps, 2), 3,
                                       LastStep.VALID)
    rlds_testing.assert_structures_equal(actual, expected)


@pytest.mark.parametrize('fn,kwargs,error,match', [
    (dense.frame_stack, {'history': 0}, ValueError, 'history must be a positive'),
    (dense.frame_stack, {'history': 2, 'pad': 'last'}, ValueError,
     "pad must be one of \\('first', 'zero'\\)"),
    (dense.frame_stack, {'history': 2, 'key': 'image'}, ValueError,
     "frame_stack: needs the step field 'image'"),
    (dense.chunk_actions, {'horizon': -2}, ValueError,
     'horizon must be a positive'),
    (dense.chunk_actions, {'horizon': 2, 'pad': 'first'}, ValueError,
     "pad must be one of \\('last', 'zero'\\)"),
    (dense.chunk_actions, {'horizon': 2, 'last_step': 'maybe'}, ValueError,
     'last_step must be LastStep.INVALID or LastStep.VALID'),
    (dense.chunk_actions, {'horizon': 2, 'last_step': True}, ValueError,
     'last_step must be'),
], ids=['zero_history', 'bad_frame_pad', 'missing_key', 'negative_horizon',
        'bad_chunk_pad', 'bad_last_step', 'bool_last_step'])
def test_bad_arguments(fn, kwargs, error, match):
  with pytest.raises(error, match=match):
    fn(dt.episode(3), **kwargs)


def test_masks_are_not_overwritten():
  stacked = dense.frame_stack(dt.episode(3), 2)
  with pytest.raises(ValueError, match="adds the field 'observation_pad_mask'"):
    dense.frame_stack(stacked, 2)
  chunked = dense.chunk_actions(dt.episode(3), 2)
  with pytest.raises(ValueError, match="adds the field 'action_pad_mask'"):
    dense.chunk_actions(chunked, 2)
