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


def test_wrong_num_batches_fails_when_read():
  batches = tf.data.Dataset.from_tensor_slices({'x': np.arange(6)}).batch(2)
  ds = as_keras_dataset(batches.filter(lambda b: True), 'x', 'x', num_batches=4)
  with pytest.raises(tf.errors.FailedPreconditionError, match='4'):
    list(ds)


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
  transitions = rlds.pipeline.transitions_dataset(_episodes(), 64, seed=0)
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
      _episodes(), size=4, batch_size=64, drop_remainder=False, seed=0)
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
