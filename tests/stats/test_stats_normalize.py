"""normalize / denormalize: exact values against NumPy, round trips."""

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite import stats
from rlds_lite.stats import types
import stats_testing

ACTIONS = np.array([[0.0, 5.0, 1.0], [2.0, 5.0, 3.0], [4.0, 5.0, 100.0],
                    [1.0, 5.0, 2.0]])
OBS = np.array([1.0, 2.0, 3.0, 4.0])


def _stats():
  return types.DatasetStats(
      1, 4, 1, 0, types.FieldStats.from_values('length', [4]), None,
      {'action': types.FieldStats.from_values('action', ACTIONS, 'float32'),
       'observation': types.FieldStats.from_values('observation', OBS,
                                                   'float64'),
       'count': types.FieldStats.from_values('count', [1, 3], 'int32')})


def _steps(**extra):
  return tf.data.Dataset.from_tensor_slices(
      {'action': ACTIONS.astype(np.float32), 'observation': OBS, **extra})


def _gaussian(x, values):
  std = values.std(axis=0)
  return (x - values.mean(axis=0)) / np.where(std > 1e-8, std, 1.0)


def _bounds(x, low, high, clip=True):
  center, half = (low + high) / 2, (high - low) / 2
  y = (x - center) / np.where(half > 1e-8, half, 1.0)
  return np.clip(y, -1, 1) if clip else y


def _collect(ds, key):
  return np.stack([s[key].numpy() for s in ds])


@pytest.mark.parametrize('mode, bounds, expected', [
    ('gaussian', 'quantiles', lambda: _gaussian(ACTIONS, ACTIONS)),
    ('bounds', 'minmax', lambda: _bounds(ACTIONS, ACTIONS.min(0),
                                         ACTIONS.max(0))),
    ('bounds', 'quantiles', lambda: _bounds(
        ACTIONS, np.quantile(ACTIONS, 0.01, axis=0, method='inverted_cdf'),
        np.quantile(ACTIONS, 0.99, axis=0, method='inverted_cdf'))),
], ids=['gaussian', 'minmax', 'quantiles-clipped'])
def test_exact_values(mode, bounds, expected):
  out = stats.normalize(_steps(), _stats(), mode, bounds=bounds)
  np.testing.assert_allclose(_collect(out, 'action'), expected(), rtol=1e-6,
                             atol=1e-7)
  assert out.element_spec['action'].dtype == tf.float32
  np.testing.assert_allclose(_collect(out, 'observation'),
                             _gaussian(OBS, OBS) if mode == 'gaussian' else
                             _bounds(OBS, 1.0, 4.0))


def test_constant_dimension_is_only_centred():
  out = _collect(stats.normalize(_steps(), _stats()), 'action')
  assert out[:, 1].tolist() == [0.0, 0.0, 0.0, 0.0]


def test_mask_keeps_dimensions():
  mask = {'action': [True, False, True]}
  out = _collect(stats.normalize(_steps(), _stats(), mask=mask), 'action')
  np.testing.assert_array_equal(out[:, 1], ACTIONS[:, 1])
  back = _collect(stats.denormalize(stats.normalize(
      _steps(), _stats(), mask=mask), _stats(), mask=mask), 'action')
  np.testing.assert_allclose(back, ACTIONS, rtol=1e-6, atol=1e-6)


def test_integer_field_becomes_float32():
  out = stats.normalize(_steps(count=np.array([1, 3, 1, 3], np.int32)),
                        _stats(), keys=['count'])
  assert out.element_spec['count'].dtype == tf.float32
  assert _collect(out, 'count').tolist() == [-1.0, 1.0, -1.0, 1.0]


def _shapes(kind):
  episodes = [stats_testing.episode(4, True, 0, nested=True),
              stats_testing.episode(3, False, 1, nested=True)]
  if kind == 'steps':
    return tf.data.Dataset.from_tensor_slices(
        {k: np.concatenate([e[k] for e in episodes]) for k in ('action',)})
  if kind == 'batched-steps':
    return tf.data.Dataset.from_tensor_slices(
        {'action': np.concatenate([e['action'] for e in episodes])}).batch(3)
  return stats_testing.to_dataset(episodes, nested_steps=kind == 'nested')


def _actions(ds):
  spec = ds.element_spec
  if 'steps' in spec:
    if isinstance(spec['steps'], tf.data.DatasetSpec):
      return np.concatenate([_collect(e['steps'], 'action') for e in ds])
    return np.concatenate([e['steps']['action'].numpy() for e in ds])
  return np.concatenate([np.reshape(s['action'].numpy(), (-1, 2)) for s in ds])


@pytest.mark.parametrize('mode', ['gaussian', 'bounds'])
@pytest.mark.parametrize('kind', ['steps', 'batched-steps', 'dense', 'nested'])
def test_round_trip(kind, mode):
  ds = _shapes(kind)
  episodes = _shapes('dense')
  s = stats.compute(episodes, progress=False)
  out = stats.normalize(ds, s, mode, bounds='minmax')
  normalised = _actions(out)
  if mode == 'bounds':
    assert normalised.min() >= -1 and normalised.max() <= 1
  back = _actions(stats.denormalize(out, s, mode, bounds='minmax'))
  np.testing.assert_allclose(back, _actions(ds), rtol=1e-5, atol=1e-6)
  if kind == 'dense':
    pos = next(iter(out))['steps']['observation']['pos'].numpy()
    raw = next(iter(ds))['steps']['observation']['pos'].numpy()
    field = s['observation/pos']
    expected = ((raw - field.mean) / field.std if mode == 'gaussian' else
                _bounds(raw, field.min, field.max))
    np.testing.assert_allclose(pos, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('kwargs, error, message', [
    ({'keys': ['reward']}, KeyError, r"no statistics of field 'reward'"),
    ({'keys': ['count']}, KeyError, r"the steps have no field 'count'"),
    ({'mode': 'zscore'}, ValueError, r"mode must be one of \('gaussian', "
     r"'bounds'\), got 'zscore'"),
    ({'bounds': 'iqr'}, ValueError, 'bounds must be one of'),
    ({'mask': {'reward': [True]}}, KeyError, 'mask names fields not '
     r"normalised: \['reward'\]"),
], ids=['no-stats', 'not-in-steps', 'mode', 'bounds', 'mask-key'])
def test_errors(kwargs, error, message):
  with pytest.raises(error, match=message):
    stats.normalize(_steps(), _stats(), **kwargs)


def test_field_without_values():
  s = _stats()
  s.fields['action'] = types.FieldStats.empty('action', (3,))
  with pytest.raises(ValueError, match="field 'action' has no valid values"):
    stats.normalize(_steps(), s)


def _other_shapes():
  """Statistics whose action has 4 elements (the data's have 3)."""
  s = _stats()
  s.fields['action'] = types.FieldStats.from_values('action', np.ones((2, 4)))
  return s


@pytest.mark.parametrize('kind, data_shape', [
    ('steps', r'\(3,\) \(element_spec \(3,\)\)'),
    ('batched-steps', r'\(None, 3\) \(element_spec \(None, 3\)\)'),
    ('dense', r'\(3,\) \(element_spec \(4, 3\)\)'),
    ('nested', r'\(3,\) \(element_spec \(3,\)\)'),
])
def test_statistics_of_another_shape_fail_when_called(kind, data_shape):
  steps = _steps()
  datasets = {
      'steps': steps, 'batched-steps': steps.batch(2),
      'dense': tf.data.Dataset.from_tensors({'steps': {
          'action': ACTIONS.astype(np.float32)}}),
      'nested': tf.data.Dataset.from_tensors(0).map(
          lambda _: {'steps': tf.data.Dataset.from_tensor_slices(
              {'action': ACTIONS.astype(np.float32)})})}
  message = (r"normalize: field 'action' has statistics of shape \(4,\) but "
             rf'the data holds shape {data_shape}: statistics of another '
             r'dataset\?')
  for fn in (stats.normalize, stats.denormalize):
    with pytest.raises(ValueError, match=message):
      fn(datasets[kind], _other_shapes(), keys=['action'])


def test_statistics_of_a_scalar_do_not_broadcast_over_a_vector():
  s = _stats()
  s.fields['action'] = types.FieldStats.from_values('action', [1.0, 2.0])
  episodes = tf.data.Dataset.from_tensors({'steps': {
      'action': ACTIONS.astype(np.float32)}})
  with pytest.raises(ValueError, match=r"statistics of shape \(\) but the "
                     r'data holds shape \(3,\)'):
    stats.normalize(episodes, s, keys=['action'])


def test_an_element_holding_only_nonfinite_values_is_named():
  s = _stats()
  values = np.array([[1.0, np.nan, 2.0], [3.0, np.inf, 4.0],
                     [5.0, np.nan, 6.0]])
  s.fields['action'] = types.FieldStats.from_values('action', values)
  for mode in ('gaussian', 'bounds'):
    with pytest.raises(ValueError, match=(
        r"cannot normalise field 'action': element action\[1\]: it holds only "
        r'non-finite values \(2 NaN, 1 inf of 3\); leave it out with keys= '
        r'or mask=\.')):
      stats.normalize(_steps(), s, mode, keys=['action'])
  out = _collect(stats.normalize(_steps(), s, keys=['action'],
                                 mask={'action': [True, False, True]}),
                 'action')  # Masked out: passes through.
  np.testing.assert_array_equal(out[:, 1], ACTIONS[:, 1])
  np.testing.assert_allclose(out[:, 0], (ACTIONS[:, 0] - 3.0) / np.std(
      [1.0, 3.0, 5.0]), rtol=1e-6)


def test_statistics_that_are_not_numbers_are_named():
  s = _stats()
  old = types.FieldStats.from_values('action', ACTIONS)
  old.mean = np.array([np.nan, 5.0, 27.0])  # As a file before counts had.
  s.fields['action'] = old
  with pytest.raises(ValueError, match=(
      r"element action\[0\]: its statistics are not finite \(center nan, "
      r'scale 1\.4')):
    stats.normalize(_steps(), s, keys=['action'])


def test_data_with_nonfinite_values_uses_the_finite_statistics():
  values = ACTIONS.copy()
  values[1, 0] = np.nan
  values[2, 2] = np.inf
  s = _stats()
  s.fields['action'] = types.FieldStats.from_values('action', values)
  steps = tf.data.Dataset.from_tensor_slices({'action': values})
  out = _collect(stats.normalize(steps, s, keys=['action']), 'action')
  finite = [values[np.isfinite(values[:, i]), i] for i in range(3)]
  for i in range(3):
    std = finite[i].std()
    expected = (values[:, i] - finite[i].mean()) / (std if std > 1e-8 else 1)
    np.testing.assert_allclose(out[:, i], expected, rtol=1e-6)  # NaN stays.
