"""rlds_lite.view.episode_payload: an episode as the episode page's JSON."""

import json

import numpy as np
import tensorflow as tf

from rlds_lite.view import episode_payload


def _spec(steps):
  def leaf(v):
    v = np.asarray(v)
    dtype = tf.string if v.dtype == object else tf.as_dtype(v.dtype)
    return tf.TensorSpec(v.shape[1:], dtype)
  return tf.nest.map_structure(leaf, steps)


def _steps(length=4, terminal=True):
  index = np.arange(length)
  return {
      'observation': {'pos': np.arange(length * 2, dtype=np.float32).reshape(
          length, 2), 'cam': np.zeros((length, 4, 6, 3), np.uint8)},
      'action': np.arange(length, dtype=np.float32) + 0.5,
      'reward': np.array([1.0, np.nan, 2.0, 9.0][:length], np.float32),
      'discount': np.ones(length, np.float32),
      'is_first': index == 0, 'is_last': index == length - 1,
      'is_terminal': (index == length - 1) & terminal,
      'language_instruction': np.array(['open', 'open', '', 'close'][:length],
                                       object),
  }


def test_payload():
  steps = _steps()
  payload = episode_payload.episode_payload(
      {'steps': steps, 'episode_id': np.int64(3), 'file': b'a.h5',
       'embedding': np.zeros(5, np.float32)}, _spec(steps))
  json.dumps(payload, allow_nan=False)  # Browser-safe JSON.
  assert payload['length'] == 4
  assert payload['flags'] == {'is_first': [0], 'is_last': [3],
                              'is_terminal': [3]}
  panels = {p['name']: p['series'] for p in payload['panels']}
  assert list(panels) == ['action', 'state', 'reward', 'discount']
  assert panels['action'] == [{'name': 'action', 'path': 'action',
                               'values': [0.5, 1.5, 2.5, None]}]
  assert [s['name'] for s in panels['state']] == ['observation/pos[0]',
                                                   'observation/pos[1]']
  assert panels['state'][1]['values'] == [1.0, 3.0, 5.0, 7.0]  # Last kept.
  assert panels['reward'][0]['values'] == [1.0, None, 2.0, None]  # NaN, last.
  assert payload['cameras'] == [{'key': 'observation/cam', 'height': 4,
                                 'width': 6}]
  assert payload['instructions'] == ['open', 'close']
  assert payload['metadata'] == {'embedding': 'float32[5]', 'episode_id': 3,
                                 'file': 'a.h5'}
  assert payload['not_plotted'] == {}


def test_truncated_episode_has_no_terminal_flag():
  steps = _steps(terminal=False)
  payload = episode_payload.episode_payload({'steps': steps}, _spec(steps))
  assert payload['flags']['is_terminal'] == []


def test_flags_missing_from_the_dataset_follow_positions():
  steps = {'reward': np.array([1.0, 2.0, 3.0], np.float32)}
  payload = episode_payload.episode_payload({'steps': steps}, _spec(steps))
  assert payload['flags'] == {'is_first': [0], 'is_last': [2],
                              'is_terminal': []}
  assert payload['panels'][0]['series'][0]['values'] == [1.0, 2.0, None]


def test_multi_dimensional_fields_name_each_element():
  steps = {'observation': np.zeros((2, 2, 3), np.float32),
           'is_last': np.array([False, True])}
  payload = episode_payload.episode_payload({'steps': steps}, _spec(steps))
  assert [s['name'] for s in payload['panels'][0]['series']] == [
      'observation[0,0]', 'observation[0,1]', 'observation[0,2]',
      'observation[1,0]', 'observation[1,1]', 'observation[1,2]']


def test_empty_episode():
  steps = _steps()
  empty = {k: v[:0] if not isinstance(v, dict) else
           {kk: vv[:0] for kk, vv in v.items()} for k, v in steps.items()}
  payload = episode_payload.episode_payload({'steps': empty}, _spec(steps))
  assert payload['length'] == 0
  assert payload['flags'] == {'is_first': [], 'is_last': [],
                              'is_terminal': []}
  assert all(s['values'] == [] for p in payload['panels'] for s in p['series'])
  assert payload['cameras'] == []  # Nothing to play.
