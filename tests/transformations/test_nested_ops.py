"""Tests of rlds_lite.transformations.nested_ops."""

import logging
from typing import Any, Dict, List

import numpy as np
import pytest
import tensorflow as tf

import rlds_testing
from rlds_lite import rlds_types
from rlds_lite.transformations import auto_batch
from rlds_lite.transformations import nested_ops

AUTO = auto_batch.BATCH_AUTO_TUNE
# One step at a time, and vectorised over several batches (AUTO gives one
# batch on these small datasets; it is covered by dedicated cases).
BATCH_SIZES = [1, 2]
BATCH_IDS = ['batch1', 'batch2']

STEP_CASES = [
    ('empty', rlds_testing.make_steps(0)),
    ('one_step', rlds_testing.make_steps(1)),
    ('two_steps', rlds_testing.make_steps(2)),
    ('terminal', rlds_testing.make_steps(4, terminal=True)),
    ('truncated', rlds_testing.make_steps(4, terminal=False)),
    ('nested_dict_tuple', rlds_testing.make_steps(3, nested=True)),
]
CASE_IDS = [name for name, _ in STEP_CASES]
STEPS = [steps for _, steps in STEP_CASES]


def rows(columns: Any) -> List[Any]:
  """The per-step NumPy structures of columnar steps."""
  length = len(columns[rlds_types.IS_FIRST])
  return [tf.nest.map_structure(lambda x, i=i: x[i], columns)
          for i in range(length)]


def add_one_to_reward(step: Dict[str, Any]) -> Dict[str, Any]:
  step[rlds_types.REWARD] += 1  # Mutates its argument, as upstream tests do.
  return step


def with_reward_plus_one(columns: Dict[str, Any]) -> Dict[str, Any]:
  return {**columns, rlds_types.REWARD: columns[rlds_types.REWARD] + 1}


# --------------------------------------------------------------------------
# map_steps / map_nested_steps / apply_nested_steps


@pytest.mark.parametrize('batch_size', BATCH_SIZES, ids=BATCH_IDS)
@pytest.mark.parametrize('columns', STEPS, ids=CASE_IDS)
def test_map_steps(columns, batch_size):
  ds = rlds_testing.steps_dataset(columns)
  out = nested_ops.map_steps(ds, add_one_to_reward, batch_size)
  rlds_testing.assert_dataset_equals(out, rows(with_reward_plus_one(columns)))
  # The input dataset is unchanged.
  rlds_testing.assert_dataset_equals(ds, rows(columns))


@pytest.mark.parametrize('batch_size', BATCH_SIZES, ids=BATCH_IDS)
def test_map_steps_python_if_on_tensors(batch_size):
  columns = rlds_testing.make_steps(3)

  def reward_or_minus_one(step):
    if step[rlds_types.IS_LAST]:
      return tf.constant(-1.0)
    return step[rlds_types.REWARD]

  out = nested_ops.map_steps(
      rlds_testing.steps_dataset(columns), reward_or_minus_one, batch_size)
  rlds_testing.assert_dataset_equals(
      out, [np.float32(0.25), np.float32(1.25), np.float32(-1.0)])


@pytest.mark.parametrize('batch_size', BATCH_SIZES, ids=BATCH_IDS)
def test_map_steps_tuple_steps_get_one_argument(batch_size):
  ds = tf.data.Dataset.from_tensor_slices(([1, 2, 3], [10.0, 20.0, 30.0]))
  out = nested_ops.map_steps(ds, lambda step: step[0] * 2, batch_size)
  rlds_testing.assert_dataset_equals(out, [np.int32(2), np.int32(4),
                                           np.int32(6)])


@pytest.mark.parametrize('batch_size', BATCH_SIZES, ids=BATCH_IDS)
def test_map_steps_variable_shapes_fall_back_per_step(batch_size):
  # Outputs of different lengths cannot be vectorised: mapped one by one.
  ds = tf.data.Dataset.from_tensor_slices({'n': [0, 2, 1]})
  out = nested_ops.map_steps(ds, lambda s: tf.range(s['n']), batch_size)
  rlds_testing.assert_dataset_equals(
      out, [np.zeros([0], np.int32), np.array([0, 1], np.int32),
            np.array([0], np.int32)])
  # Inputs of different lengths cannot be batched.
  ragged = tf.data.Dataset.range(1, 4).map(lambda n: {'v': tf.range(n)})
  out = nested_ops.map_steps(ragged, lambda s: tf.reduce_sum(s['v']),
                             batch_size)
  rlds_testing.assert_dataset_equals(
      out, [np.int64(0), np.int64(1), np.int64(3)])


@pytest.mark.parametrize('batch_size', [1, 2, AUTO],
                         ids=['batch1', 'batch2', 'auto'])
def test_map_nested_steps_keeps_metadata(batch_size):
  episodes = [rlds_testing.make_steps(n, nested=True) for n in (0, 1, 3)]
  ds = rlds_testing.episodes_dataset(episodes, {'episode_id': [7, 8, 9]})
  out = list(nested_ops.map_nested_steps(ds, add_one_to_reward, batch_size))
  assert [int(e['episode_id']) for e in out] == [7, 8, 9]
  for episode, columns in zip(out, episodes):
    assert sorted(episode) == ['episode_id', 'steps']
    rlds_testing.assert_dataset_equals(
        episode[rlds_types.STEPS], rows(with_reward_plus_one(columns)))


def test_apply_nested_steps():
  episodes = [rlds_testing.make_steps(n) for n in (0, 1, 3)]
  ds = rlds_testing.episodes_dataset(episodes, {'episode_id': [1, 2, 3]})
  out = list(nested_ops.apply_nested_steps(ds, lambda steps: steps.take(2)))
  assert [int(e['episode_id']) for e in out] == [1, 2, 3]
  for episode, columns in zip(out, episodes):
    rlds_testing.assert_dataset_equals(episode[rlds_types.STEPS],
                                       rows(columns)[:2])


@pytest.mark.parametrize('call, error, match', [
    (lambda: nested_ops.map_steps([1, 2], lambda s: s), TypeError,
     'steps_dataset must be a tf.data.Dataset'),
    (lambda: nested_ops.map_steps(tf.data.Dataset.range(2), 3), TypeError,
     'transform_step must be callable'),
    (lambda: nested_ops.map_steps(tf.data.Dataset.range(2), lambda s: s, -5),
     ValueError, 'batch size must be positive'),
    (lambda: nested_ops.map_nested_steps(tf.data.Dataset.range(2),
                                         lambda s: s),
     TypeError, 'episodes_dataset must hold episodes'),
    (lambda: nested_ops.apply_nested_steps(
        rlds_testing.episodes_dataset([rlds_testing.make_steps(2)]),
        lambda steps: 3), TypeError,
     'transform_step_dataset must return a tf.data.Dataset'),
], ids=['steps_not_dataset', 'fn_not_callable', 'bad_batch_size',
        'not_episodes', 'apply_returns_non_dataset'])
def test_map_errors(call, error, match):
  with pytest.raises(error, match=match):
    call()


# --------------------------------------------------------------------------
# sum_dataset / sum_nested_steps


def obs_action(step):
  return {rlds_types.OBSERVATION: step[rlds_types.OBSERVATION],
          rlds_types.ACTION: step[rlds_types.ACTION]}


def numpy_sum(columns):
  """NumPy reference of sum_dataset(obs_action): sums keeping dtypes."""
  picked = {k: columns[k] for k in (rlds_types.OBSERVATION, rlds_types.ACTION)}
  return tf.nest.map_structure(
      lambda x: np.sum(x, axis=0, dtype=x.dtype), picked)


@pytest.mark.parametrize('batch_size', BATCH_SIZES, ids=BATCH_IDS)
@pytest.mark.parametrize('columns', STEPS, ids=CASE_IDS)
def test_sum_dataset(columns, batch_size):
  total = nested_ops.sum_dataset(
      rlds_testing.steps_dataset(columns), obs_action, batch_size)
  rlds_testing.assert_structures_equal(
      tf.nest.map_structure(lambda t: t.numpy(), total), numpy_sum(columns))


def test_map_steps_and_sum_dataset_auto_batch_size():
  columns = rlds_testing.make_steps(5, nested=True)
  out = nested_ops.map_steps(rlds_testing.steps_dataset(columns),
                             add_one_to_reward)
  rlds_testing.assert_dataset_equals(out, rows(with_reward_plus_one(columns)))
  total = nested_ops.sum_dataset(rlds_testing.steps_dataset(columns),
                                 obs_action)
  rlds_testing.assert_structures_equal(
      tf.nest.map_structure(lambda t: t.numpy(), total), numpy_sum(columns))


def test_sum_dataset_upstream_example():
  steps = tf.data.Dataset.from_tensor_slices({
      'observation': {'field0': [[1., 0.], [0., 1.], [0., 2.]],
                      'field1': [[1., 0.], [1., 1.], [1., 2.]]},
      'action': ([0, 10, 20], [10, 11, 21], [20, 21, 22]),
  })
  total = nested_ops.sum_dataset(steps, lambda s: s, 2)
  rlds_testing.assert_structures_equal(
      tf.nest.map_structure(lambda t: t.numpy(), total),
      {'observation': {'field0': np.array([1., 3.], np.float32),
                       'field1': np.array([3., 3.], np.float32)},
       'action': (np.int32(30), np.int32(42), np.int32(63))})


@pytest.mark.parametrize('batch_size', [2], ids=['batch2'])
@pytest.mark.parametrize('lengths', [(), (0,), (0, 1), (2, 0, 3)],
                         ids=['no_episodes', 'one_empty', 'empty_and_one',
                              'three_episodes'])
def test_sum_nested_steps(lengths, batch_size):
  episodes = [rlds_testing.make_steps(n, nested=True, start=10 * i)
              for i, n in enumerate(lengths)]
  spec_source = [rlds_testing.make_steps(0, nested=True)]
  ds = rlds_testing.episodes_dataset(episodes or spec_source)
  if not lengths:
    ds = ds.take(0)
  total = nested_ops.sum_nested_steps(ds, obs_action, batch_size)
  all_steps = tf.nest.map_structure(
      lambda *xs: np.concatenate(xs), *(episodes or spec_source))
  rlds_testing.assert_structures_equal(
      tf.nest.map_structure(lambda t: t.numpy(), total), numpy_sum(all_steps))


def test_sum_dataset_per_episode_inside_graph():
  # E.g. the return of each episode, computed in episodes.map.
  episodes = rlds_testing.episodes_dataset(
      [rlds_testing.make_steps(n) for n in (0, 1, 3)])
  returns = episodes.map(lambda e: nested_ops.sum_dataset(
      e[rlds_types.STEPS], lambda s: s[rlds_types.REWARD], 2))
  rlds_testing.assert_dataset_equals(   # rewards are t + 0.25
      returns, [np.float32(0), np.float32(0.25), np.float32(3.75)])


@pytest.mark.parametrize('fn, match', [
    (lambda s: s[rlds_types.IS_LAST], "'<value>' of dtype bool"),
    (lambda s: {'name': tf.strings.as_string(s[rlds_types.ACTION])},
     "'name' of dtype string"),
], ids=['bool', 'string'])
def test_sum_dataset_rejects_non_numeric(fn, match):
  ds = rlds_testing.steps_dataset(rlds_testing.make_steps(2))
  with pytest.raises(TypeError, match=match):
    nested_ops.sum_dataset(ds, fn)


# --------------------------------------------------------------------------
# last_element


@pytest.mark.parametrize('ds, expected, found', [
    (tf.data.Dataset.range(0), -1, False),
    (tf.data.Dataset.range(1), 0, True),
    (tf.data.Dataset.range(2), 1, True),
    (tf.data.Dataset.range(6).filter(lambda x: x % 2 == 0), 4, True),
    (tf.data.Dataset.range(6).filter(lambda x: x > 9), -1, False),
], ids=['empty', 'one_element', 'two_elements', 'unknown_cardinality',
        'empty_unknown_cardinality'])
def test_last_element(ds, expected, found):
  default = tf.constant(-1, tf.int64)
  last = nested_ops.last_element(ds, default).get_single_element()
  assert (int(last[0]), bool(last[1])) == (expected, found)


# --------------------------------------------------------------------------
# final_step


def unknown_cardinality(ds: tf.data.Dataset) -> tf.data.Dataset:
  out = ds.filter(lambda *_: True)
  assert int(out.cardinality()) == tf.data.UNKNOWN_CARDINALITY
  return out


FINAL_CASES = [
    ('one_step', rlds_testing.make_steps(1)),
    ('two_steps', rlds_testing.make_steps(2)),
    ('terminal', rlds_testing.make_steps(4, terminal=True)),
    ('truncated', rlds_testing.make_steps(4, terminal=False)),
    ('nested_dict_tuple', rlds_testing.make_steps(3, nested=True)),
]


@pytest.mark.parametrize('known_cardinality', [True, False],
                         ids=['known_cardinality', 'unknown_cardinality'])
@pytest.mark.parametrize('columns', [c for _, c in FINAL_CASES],
                         ids=[n for n, _ in FINAL_CASES])
def test_final_step(columns, known_cardinality):
  ds = rlds_testing.steps_dataset(columns)
  if not known_cardinality:
    ds = unknown_cardinality(ds)
  last = nested_ops.final_step(ds)
  rlds_testing.assert_structures_equal(
      tf.nest.map_structure(lambda t: t.numpy(), last), rows(columns)[-1])


@pytest.mark.parametrize('ds, expected', [
    (tf.data.Dataset.from_tensor_slices(([1, 2, 3], [b'a', b'b', b'c'])),
     (np.int32(3), b'c')),
    (tf.data.Dataset.range(5), np.int64(4)),
    (tf.data.Dataset.range(3).map(lambda n: tf.range(n)),
     np.array([0, 1], np.int64)),
], ids=['tuple_steps', 'single_tensor_steps', 'variable_shape_steps'])
def test_final_step_any_structure(ds, expected):
  for steps in (ds, unknown_cardinality(ds)):
    last = nested_ops.final_step(steps)
    rlds_testing.assert_structures_equal(
        tf.nest.map_structure(lambda t: t.numpy(), last), expected)


def test_final_step_inside_graph():
  episodes = rlds_testing.episodes_dataset(
      [rlds_testing.make_steps(n, start=10 * n) for n in (1, 3)])
  lasts = episodes.map(
      lambda e: nested_ops.final_step(e[rlds_types.STEPS])[rlds_types.REWARD])
  rlds_testing.assert_dataset_equals(
      lasts, [np.float32(10.25), np.float32(32.25)])


@pytest.mark.parametrize('ds', [
    tf.data.Dataset.range(0),
    tf.data.Dataset.range(3).filter(lambda x: x > 5),
], ids=['empty_known_cardinality', 'empty_unknown_cardinality'])
def test_final_step_empty_raises(ds):
  with pytest.raises(ValueError, match='final_step: steps_dataset is empty'):
    nested_ops.final_step(ds)


def test_final_step_empty_inside_graph_raises_when_run():
  episodes = rlds_testing.episodes_dataset([rlds_testing.make_steps(0)])
  lasts = episodes.map(lambda e: nested_ops.final_step(e[rlds_types.STEPS]))
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match='final_step: steps_dataset is empty'):
    list(lasts)


def test_final_step_infinite_raises():
  with pytest.raises(ValueError, match='final_step: steps_dataset is infinite'):
    nested_ops.final_step(tf.data.Dataset.range(3).repeat())


# --------------------------------------------------------------------------
# episode_length


LENGTH_CASES = [
    ('empty', rlds_testing.steps_dataset(rlds_testing.make_steps(0)), 0),
    ('one_step', rlds_testing.steps_dataset(rlds_testing.make_steps(1)), 1),
    ('two_steps', rlds_testing.steps_dataset(rlds_testing.make_steps(2)), 2),
    ('terminal', rlds_testing.steps_dataset(rlds_testing.make_steps(5)), 5),
    ('nested_dict_tuple', rlds_testing.steps_dataset(
        rlds_testing.make_steps(3, nested=True)), 3),
    ('nested_observation_first', tf.data.Dataset.from_tensor_slices({
        'a_observation': {'pos': tf.zeros([6, 2])}, 'b': tf.zeros([6])}), 6),
    ('tuple_steps', tf.data.Dataset.from_tensor_slices(
        (tf.zeros([4, 3]), tf.zeros([4]))), 4),
    ('single_tensor_steps', tf.data.Dataset.range(7), 7),
    ('variable_shape_steps',
     tf.data.Dataset.range(4).map(lambda n: {'v': tf.range(n)}), 4),
    ('string_steps', tf.data.Dataset.from_tensor_slices(['a', 'b']), 2),
]


@pytest.mark.parametrize('known_cardinality', [True, False],
                         ids=['known_cardinality', 'unknown_cardinality'])
@pytest.mark.parametrize('ds, expected', [c[1:] for c in LENGTH_CASES],
                         ids=[c[0] for c in LENGTH_CASES])
def test_episode_length(ds, expected, known_cardinality):
  if not known_cardinality:
    ds = unknown_cardinality(ds)
  length = nested_ops.episode_length(ds)
  assert isinstance(length, tf.Tensor)
  assert length.dtype == tf.int32 and length.shape == ()
  assert int(length) == expected


@pytest.mark.parametrize('batch_size', [0, 1, 3, AUTO],
                         ids=['batch0', 'batch1', 'batch3', 'auto'])
def test_episode_length_counting_batch_sizes(batch_size):
  for length in (0, 1, 2, 7):
    steps = rlds_testing.make_steps(length, nested=True)
    ds = unknown_cardinality(rlds_testing.steps_dataset(steps))
    assert int(nested_ops.episode_length(ds, batch_size)) == length


def test_episode_length_of_filtered_steps_inside_graph():
  episodes = rlds_testing.episodes_dataset(
      [rlds_testing.make_steps(n, nested=True) for n in (0, 1, 5)])
  lengths = episodes.map(lambda e: nested_ops.episode_length(
      e[rlds_types.STEPS].filter(
          lambda s: s[rlds_types.OBSERVATION]['id'] % 2 == 0), 2))
  rlds_testing.assert_dataset_equals(
      lengths, [np.int32(0), np.int32(1), np.int32(3)])


def test_episode_length_infinite_raises():
  with pytest.raises(ValueError,
                     match='episode_length: steps_dataset is infinite'):
    nested_ops.episode_length(tf.data.Dataset.range(3).repeat())


def test_reductions_give_autograph_no_warning():
  """AutoGraph converts every function (it warned on every call before)."""
  from rlds_lite.transformations import dataset_concat  # pylint: disable=g-import-not-at-top
  logged = []
  handler = logging.Handler()
  handler.emit = lambda record: logged.append(record.getMessage())
  logger = tf.get_logger()
  logger.addHandler(handler)
  try:
    steps = tf.data.Dataset.from_tensor_slices(
        {'reward': [1.0, 2.0, 3.0], 'is_terminal': [False, False, True]})
    unknown = steps.filter(lambda step: True)
    assert float(nested_ops.sum_dataset(steps, lambda s: s['reward'])) == 6.0
    assert float(nested_ops.final_step(unknown)['reward']) == 3.0
    assert int(nested_ops.episode_length(unknown)) == 3
    assert len(list(dataset_concat.concat_if_terminal(
        unknown, tf.data.Dataset.from_tensors))) == 4
  finally:
    logger.removeHandler(handler)
  assert not [m for m in logged if 'could not transform' in m]
