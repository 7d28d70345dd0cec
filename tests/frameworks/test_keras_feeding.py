"""Tests of rlds_lite.frameworks.as_keras_dataset."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import rlds_lite as rlds
from rlds_lite.frameworks import as_keras_dataset

BATCH = {
    'observation': {'pos': np.array([[1., 2.], [3., 4.]], np.float32),
                    'vel': np.array([[5.], [6.]], np.float32)},
    'action': (np.array([7, 8], np.int64), np.array([0.5, 0.25], np.float32)),
    'reward': np.array([1., -1.], np.float32),
    'mask': np.array([[True, False], [True, True]]),
}


def _batches():
  return tf.data.Dataset.from_tensors(BATCH)


def _tree_equal(got, want):
  tf.nest.assert_same_structure(got, want)
  for g, w in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
    np.testing.assert_array_equal(np.asarray(g), w)
    assert np.asarray(g).dtype == np.asarray(w).dtype


@pytest.mark.parametrize(
    'features, labels, sample_weight, want',
    [
        ('observation/pos', 'reward', None,
         (BATCH['observation']['pos'], BATCH['reward'])),
        ('observation', 'action/0', None,
         (BATCH['observation'], BATCH['action'][0])),
        (('observation/pos', 'observation/vel'), 'action/1', None,
         ((BATCH['observation']['pos'], BATCH['observation']['vel']),
          BATCH['action'][1])),
        ({'p': 'observation/pos', 'v': 'observation/vel'}, ['reward'], None,
         ({'p': BATCH['observation']['pos'], 'v': BATCH['observation']['vel']},
          (BATCH['reward'],))),
        (lambda b: b['reward'] * 2, 'reward', None,
         (BATCH['reward'] * 2, BATCH['reward'])),
        ('observation/pos', 'reward', 'mask',
         (BATCH['observation']['pos'], BATCH['reward'],
          np.array([[1., 0.], [1., 1.]], np.float32))),
        ('observation/vel', 'reward', 'action/0',
         (BATCH['observation']['vel'], BATCH['reward'],
          np.array([7., 8.], np.float32))),
        ('observation/vel', 'reward', 'reward',
         (BATCH['observation']['vel'], BATCH['reward'], BATCH['reward'])),
    ],
    ids=['single-path', 'nested-path-and-tuple-index', 'tuple', 'dict',
         'callable', 'mask-weights', 'int-weights-cast', 'float-weights'])
def test_mapping(features, labels, sample_weight, want):
  ds = as_keras_dataset(_batches(), features, labels, sample_weight)
  got = list(ds.as_numpy_iterator())
  assert len(got) == 1
  _tree_equal(got[0], want)


@pytest.mark.parametrize(
    'features, labels, sample_weight, missing',
    [('obs', 'reward', None, 'obs'),
     ('observation/position', 'reward', None, 'observation/position'),
     ('observation', 'action/2', None, 'action/2'),
     ('observation', 'reward', 'weights', 'weights')],
    ids=['top-level', 'nested', 'tuple-index', 'sample-weight'])
def test_missing_key_names_it_and_lists_available(features, labels,
                                                  sample_weight, missing):
  role = 'sample_weight' if missing == sample_weight else (
      'labels' if missing == labels else 'features')
  with pytest.raises(KeyError) as error:
    as_keras_dataset(_batches(), features, labels, sample_weight)
  message = error.value.args[0]
  assert message == (
      f"as_keras_dataset: {role} names {missing!r}, which the batches do not "
      "have; available keys: ['action', 'action/0', 'action/1', 'mask', "
      "'observation', 'observation/pos', 'observation/vel', 'reward'].")


@pytest.mark.parametrize('bad', [3, (), {}, None], ids=['int', 'empty-tuple',
                                                        'empty-dict', 'none'])
def test_bad_selector(bad):
  with pytest.raises(TypeError, match='features must be a key path'):
    as_keras_dataset(_batches(), bad, 'reward')


def test_not_a_dataset():
  with pytest.raises(TypeError, match='batches must be a tf.data.Dataset, got dict'):
    as_keras_dataset(BATCH, 'observation', 'reward')


def test_cardinality_kept():
  batches = tf.data.Dataset.from_tensor_slices({'x': np.zeros((6, 2))}).batch(2)
  ds = as_keras_dataset(batches, 'x', 'x')
  assert int(ds.cardinality()) == 3


@pytest.mark.parametrize('num_batches, want', [(None, tf.data.UNKNOWN_CARDINALITY),
                                               ('count', 3), (3, 3)],
                         ids=['none', 'count', 'int'])
def test_num_batches(num_batches, want):
  batches = tf.data.Dataset.from_tensor_slices({'x': np.arange(6)}).batch(2)
  batches = batches.filter(lambda b: True)  # Unknown cardinality.
  ds = as_keras_dataset(batches, 'x', 'x', num_batches=num_batches)
  assert int(ds.cardinality()) == want
  assert len(list(ds)) == 3


def _unknown_cardinality(num_batches):
  """{'x': ...} in ``num_batches`` batches of 2, cardinality unknown."""
  batches = tf.data.Dataset.from_tensor_slices(
      {'x': np.arange(2 * num_batches)}).batch(2)
  return batches.filter(lambda b: True)


@pytest.mark.parametrize('num_batches, message', [
    (4, 'num_batches is 4 but batches ran out after 3 batches'),
    (2, 'num_batches is 2 but batches holds more (batch 3 came)'),
    (0, 'num_batches is 0 but batches holds more (batch 1 came)'),
], ids=['too-few', 'too-many', 'zero'])
def test_wrong_num_batches_fails_when_read(num_batches, message):
  ds = as_keras_dataset(_unknown_cardinality(3), 'x', 'x',
                        num_batches=num_batches)
  assert int(ds.cardinality()) == num_batches
  with pytest.raises(tf.errors.InvalidArgumentError) as error:
    list(ds)
  assert (f'assertion failed: [as_keras_dataset: {message}; set num_batches '
          'to the number of batches in one pass (or to count, to have them '
          'counted).]') in error.value.message


def test_keras_fit_reads_num_batches_an_epoch_so_extra_ones_go_unseen():
  # As the README says: by hand batch 3 fails (above); fit stops before it.
  class Count(keras.callbacks.Callback):
    batches = 0

    def on_train_batch_end(self, batch, logs=None):
      Count.batches += 1

  model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
  model.compile(optimizer='sgd', loss='mse')
  fit = lambda n: model.fit(
      as_keras_dataset(_unknown_cardinality(3), 'x', 'x', num_batches=n),
      epochs=2, verbose=0, shuffle=False, callbacks=[Count()])
  fit(2)
  assert Count.batches == 4
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match='num_batches is 4 but batches ran out after 3 '
                     'batches'):
    fit(4)


def test_num_batches_checked_as_read_keeps_batches_and_specs():
  plain = as_keras_dataset(_unknown_cardinality(3), 'x', {'y': 'x'}, 'x')
  checked = as_keras_dataset(_unknown_cardinality(3), 'x', {'y': 'x'}, 'x',
                             num_batches=3)
  assert checked.element_spec == plain.element_spec
  for got, want in zip(checked.as_numpy_iterator(), plain.as_numpy_iterator(),
                       strict=True):
    _tree_equal(got, want)


def test_empty_batches_with_zero_num_batches():
  ds = as_keras_dataset(_unknown_cardinality(0), 'x', 'x', num_batches=0)
  assert not list(ds)


@pytest.mark.parametrize('num_batches, message', [
    (1000, 'num_batches is 1000 but batches holds 3 batches (its '
     "cardinality); num_batches must be the number of batches a pass reads "
     "(or 'count', or None)."),
    (2, 'num_batches is 2 but batches holds 3 batches (its cardinality); '
     "num_batches must be the number of batches a pass reads (or 'count', or "
     'None); take the first 2 with batches.take(2).'),
], ids=['more', 'fewer'])
def test_num_batches_against_known_cardinality(num_batches, message):
  batches = tf.data.Dataset.from_tensor_slices({'x': np.arange(6)}).batch(2)
  with pytest.raises(ValueError) as error:
    as_keras_dataset(batches, 'x', 'x', num_batches=num_batches)
  assert str(error.value) == f'as_keras_dataset: {message}'


def test_count_uses_a_known_cardinality():
  batches = tf.data.Dataset.from_tensor_slices({'x': np.arange(6)}).batch(2)
  batches = batches.map(lambda b: {'x': b['x'] // (b['x'] - b['x'])})
  # Counting would read (and divide by zero); the cardinality is known.
  ds = as_keras_dataset(batches, 'x', 'x', num_batches='count')
  assert int(ds.cardinality()) == 3


def test_infinite_batches():
  batches = _unknown_cardinality(3).repeat()
  with pytest.raises(ValueError, match="num_batches='count' cannot count "
                     'batches that never end'):
    as_keras_dataset(batches, 'x', 'x', num_batches='count')
  ds = as_keras_dataset(batches, 'x', 'x', num_batches=5)  # Epoch length.
  assert int(ds.cardinality()) == 5
  assert [x.tolist() for x, _ in ds.take(5).as_numpy_iterator()] == [
      [0, 1], [2, 3], [4, 5], [0, 1], [2, 3]]


@pytest.mark.parametrize('sample_weight, field, dtype', [
    ('name', 'name', 'string'),
    (('reward', {'n': 'name'}), 'name', 'string'),
    (lambda b: {'n': b['name']}, '<callable>/n', 'string'),
    ('z', 'z', 'complex64'),
], ids=['path', 'nested-selector', 'callable', 'complex'])
def test_non_numeric_sample_weight_is_refused(sample_weight, field, dtype):
  batches = tf.data.Dataset.from_tensors(
      {'reward': np.ones(2, np.float32), 'name': np.array([b'a', b'b']),
       'z': np.ones(2, np.complex64)})
  with pytest.raises(ValueError) as error:
    as_keras_dataset(batches, 'reward', 'reward', sample_weight)
  assert str(error.value) == (
      f'as_keras_dataset: sample_weight {field!r} has dtype {dtype}; sample '
      'weights must be numbers or booleans (they are cast to float32).')


def test_string_features_and_labels_pass():
  # Keras models take strings (keras.layers.StringLookup): not refused.
  batches = tf.data.Dataset.from_tensors({'name': np.array([b'a', b'b'])})
  x, y = next(iter(as_keras_dataset(batches, 'name', 'name')))
  assert x.dtype == y.dtype == tf.string


@pytest.mark.parametrize('bad', [-1, 'all', 2.0], ids=['negative', 'str', 'float'])
def test_bad_num_batches(bad):
  with pytest.raises(ValueError, match="num_batches must be a non-negative int, 'count'"):
    as_keras_dataset(_batches(), 'reward', 'reward', num_batches=bad)


def _episodes():
  return rlds.synthetic.episodes(num_episodes=40, max_length=30, seed=0,
                                 dense=True)


def _linear_model(input_shape, units):
  """A seeded linear Keras model, compiled with Adam and MSE."""
  inputs = keras.Input(input_shape)
  outputs = keras.layers.Dense(
      units, kernel_initializer=keras.initializers.GlorotUniform(0))(inputs)
  model = keras.Model(inputs, outputs)
  model.compile(optimizer=keras.optimizers.Adam(0.05), loss='mse')
  return model


def test_keras_fit_on_transitions_loss_falls():
  # Learn the next observation from (observation, action): a linear map.
  transitions = rlds.pipeline.transitions_dataset(
      _episodes(), rlds.Transitions(), 64, seed=0)
  ds = as_keras_dataset(
      transitions,
      lambda b: tf.concat([b['observation'], b['action']], axis=-1),
      'next_observation', num_batches='count')
  model = _linear_model((6,), 4)
  history = model.fit(ds, epochs=6, verbose=0, shuffle=False).history['loss']
  assert history[-1] < 0.2 * history[0], history


def test_keras_fit_on_padded_windows_with_mask_weights():
  # Per-step regression on zero-padded windows; padding counts zero.
  windows = rlds.pipeline.windows_dataset(
      _episodes(), rlds.Windows(size=4, drop_remainder=False), 64, seed=0)
  ds = as_keras_dataset(windows, 'observation', 'action', sample_weight='mask',
                        num_batches='count')
  x, y, w = next(iter(ds))
  assert w.shape.as_list() == y.shape.as_list()[:2] and w.dtype == tf.float32
  model = _linear_model((4, 4), 2)  # Applied to every step of a window.
  history = model.fit(ds, epochs=5, verbose=0, shuffle=False).history['loss']
  assert history[-1] < 0.7 * history[0], history
  # The weighted loss ignores the padded steps: it equals NumPy's masked MSE.
  squared = np.mean((model.predict(x, verbose=0) - y.numpy())**2, axis=-1)
  masked = np.sum(squared * w.numpy()) / squared.size
  np.testing.assert_allclose(
      model.evaluate(x, y, sample_weight=w, verbose=0), masked, rtol=1e-4)
