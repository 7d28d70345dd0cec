"""stats.compute against a NumPy reference; merge, JSON, cache."""

import json
import os
import warnings

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import rlds_lite
from rlds_lite import nest_paths
from rlds_lite import stats
from rlds_lite import synthetic
from rlds_lite.dense import LastStepValuesWarning
from rlds_lite.stats import cache as cache_lib
from rlds_lite.stats import streaming
from rlds_lite.tfds import write_dataset
from rlds_lite import option_objects
import rlds_testing
import stats_testing
import tfds_fixtures

E = stats_testing.episode

CASES = {
    'short': [E(3, True, 0), E(4, False, 1)],
    'one-step': [E(1, False, 2), E(1, True, 3)],
    'terminal': [E(5, True, 4)],
    'truncated': [E(5, False, 5), E(2, False, 6)],
    'nested': [E(3, True, 7, nested=True), E(6, False, 8, nested=True)],
    '1-d-action': [E(4, True, 9, action_shape=(1,)), E(3, False, 10,
                                                       action_shape=(1,))],
    'scalar-action': [E(4, True, 11, action_shape=()), E(2, False, 12,
                                                         action_shape=())],
    'int-fields': [E(4, True, 13, int_action=True), E(5, False, 14,
                                                      int_action=True)],
}


def _check(result, episodes, mask_last_step=True):
  ref = stats_testing.reference(episodes, mask_last_step)
  assert result.num_episodes == len(episodes)
  assert result.num_steps == int(ref['lengths'].sum())
  assert result.num_terminated == ref['terminated']
  assert result.num_truncated == len(episodes) - ref['terminated']
  stats_testing.check_field(result.episode_length, ref['lengths'])
  stats_testing.check_field(result.episode_return, ref['returns'])
  assert sorted(result.fields) == sorted(ref['fields'])
  for path, values in ref['fields'].items():
    stats_testing.check_field(result[path], values)


@pytest.mark.parametrize('nested_steps', [False, True], ids=['dense', 'nested'])
@pytest.mark.parametrize('name', list(CASES))
def test_matches_numpy(name, nested_steps):
  episodes = CASES[name]
  result = stats.compute(stats_testing.to_dataset(episodes, nested_steps),
                         progress=False)
  _check(result, episodes)


def test_one_step_episodes_have_no_valid_action_or_reward():
  result = stats.compute(stats_testing.to_dataset(CASES['one-step']),
                         progress=False)
  assert result['action'].count == result['reward'].count == 0
  assert np.isnan(result['action'].mean).all()
  assert result['observation'].count == 2
  assert result.episode_return.mean.tolist() == 0.0


def test_keep_last_step():
  episodes = CASES['short']
  result = stats.compute(stats_testing.to_dataset(episodes),
                         last_step='valid', progress=False)
  assert result['action'].count == 7
  _check(result, episodes, mask_last_step=False)


def test_dtypes_and_shapes():
  result = stats.compute(stats_testing.to_dataset(CASES['nested']),
                         progress=False)
  assert result['observation/pos'].shape == (3,)
  assert result['observation/gripper'].dtype == 'bool'
  assert result['action'].dtype == 'float32'
  ints = stats.compute(stats_testing.to_dataset(CASES['int-fields']),
                       progress=False)
  assert ints['action'].dtype == 'int32'


def test_empty_dataset():
  empty = stats_testing.to_dataset(CASES['short']).take(0)
  result = stats.compute(empty, progress=False)
  assert (result.num_episodes, result.num_steps) == (0, 0)
  assert result['action'].count == 0
  assert np.isnan(result['action'].p50).all()
  assert stats.DatasetStats.from_json(result.to_json()) == result
  assert '0 episodes, 0 steps' in result.table()


def test_large_dataset_quantiles_within_rank_error():
  arrays = synthetic.episode_arrays(num_episodes=120, seed=3)
  ds = synthetic.episodes(num_episodes=120, seed=3, dense=True)
  result = stats.compute(ds, sketch_k=16, progress=False)
  assert result['observation'].sketch.rank_error > 0  # Compacted.
  observation = result['observation']
  assert observation.rank_error <= observation.sketch.levels / (2 * 16)
  # Bounded memory: the pass keeps only sketches, log2(n / k) + 1 levels of
  # at most 2k values each, whatever the number of steps.
  sketch = observation.sketch
  assert sketch.count == result.num_steps
  assert sketch.levels <= np.log2(sketch.count / 16) + 1
  assert sketch.size <= sketch.levels * 2 * 16 < sketch.count
  _check(result, arrays)


def test_keys_select_fields_and_skip_images():
  steps = {**E(3, True, 0, nested=True),
           'image': np.zeros((3, 4, 4, 3), np.uint8),
           'text': np.array([b'a', b'b', b'c'])}
  ds = stats_testing.to_dataset([steps])
  result = stats.compute(ds, progress=False)
  assert result.skipped == {'image': 'image (uint8[4, 4, 3])'}
  assert sorted(result.strings) == ['text']
  assert 'skipped image: image (uint8[4, 4, 3])' in result.table()
  only = stats.compute(ds, keys=['observation/pos', 'reward'], progress=False)
  assert sorted(only.fields) == ['observation/pos', 'reward']
  under = stats.compute(ds, keys=['observation'], progress=False)
  assert sorted(under.fields) == ['observation/gripper', 'observation/pos']
  with pytest.raises(KeyError, match=r"no step field 'observation/vel' \(step "
                     r'fields: action, discount, image, is_first'):
    stats.compute(ds, keys=['observation/vel'], progress=False)
  with pytest.raises(KeyError, match=r"step field 'image' has no statistics: "
                     r'image \(uint8\[4, 4, 3\]\)'):
    stats.compute(ds, keys=['image'], progress=False)


def test_bad_input():
  with pytest.raises(TypeError, match='expected a tf.data.Dataset of episodes'):
    stats.compute(3)
  with pytest.raises(TypeError, match='must hold episodes'):
    stats.compute(tf.data.Dataset.range(3))


@pytest.mark.parametrize('split_at', [1, 3], ids=['first', 'middle'])
def test_merge_equals_stats_of_union(split_at):
  episodes = [E(3 + i, i % 2 == 0, 20 + i) for i in range(5)]
  whole = stats.compute(stats_testing.to_dataset(episodes), progress=False)
  a = stats.compute(stats_testing.to_dataset(episodes[:split_at]),
                    progress=False)
  b = stats.compute(stats_testing.to_dataset(episodes[split_at:]),
                    progress=False)
  merged = stats.merge(a, b)
  assert merged.num_episodes == whole.num_episodes
  assert merged.num_terminated == whole.num_terminated
  for path in whole.fields:
    m, w = merged[path], whole[path]
    assert m.count == w.count
    np.testing.assert_array_equal(m.min, w.min)
    np.testing.assert_array_equal(m.max, w.max)
    np.testing.assert_allclose(m.mean, w.mean, rtol=1e-12)
    np.testing.assert_allclose(m.std, w.std, rtol=1e-12)
    np.testing.assert_array_equal(m.quantile([0.01, 0.5, 0.99]),
                                  w.quantile([0.01, 0.5, 0.99]))
  _check(merged, episodes)
  assert a.merge(b).num_steps == whole.num_steps


def test_json_round_trip_and_summary():
  result = stats.compute(stats_testing.to_dataset(CASES['nested']),
                         progress=False)
  again = stats.DatasetStats.from_json(result.to_json())
  assert again == result
  np.testing.assert_array_equal(again['observation/pos'].p99,
                                result['observation/pos'].p99)
  summary = json.loads(json.dumps(result.summary()))
  assert summary['fields']['action']['count'] == 7
  assert summary['num_terminated'] == 1
  assert repr(result).startswith('DatasetStats(num_episodes=2, num_steps=9')


@pytest.fixture(name='dataset_dir', scope='module')
def _dataset_dir(tmp_path_factory):
  root = tmp_path_factory.mktemp('stats_data')
  return write_dataset(synthetic.episodes(num_episodes=12, seed=5), str(root),
                       'points')


def _add_one(episodes):
  return episodes.map(lambda e: {**e, 'steps': {
      **e['steps'], 'reward': e['steps']['reward'] + 1}})


def test_path_and_cache(dataset_dir, monkeypatch):
  first = stats.compute(dataset_dir, progress=False)
  _check(first, synthetic.episode_arrays(num_episodes=12, seed=5))
  cache_dir = os.path.join(dataset_dir, cache_lib.CACHE_SUBDIR)
  assert len(os.listdir(cache_dir)) == 1
  calls = []
  real_pass = streaming._pass
  monkeypatch.setattr(streaming, '_pass',
                      lambda *a, **k: calls.append(1) or real_pass(*a, **k))
  assert stats.compute(dataset_dir, progress=False) == first  # Hit.
  assert not calls
  with pytest.warns(LastStepValuesWarning, match='reward'):  # Last: 0 + 1.
    shifted = stats.compute(dataset_dir, transform=_add_one, progress=False)
  assert len(calls) == 1  # Another transform: miss.
  np.testing.assert_allclose(shifted['reward'].mean, first['reward'].mean + 1,
                             rtol=1e-6)
  with pytest.warns(LastStepValuesWarning, match='reward'):  # A hit warns too.
    assert stats.compute(dataset_dir, transform=_add_one, progress=False) == (
        shifted)
  assert len(calls) == 1
  stats.compute(dataset_dir, keys=['action'], progress=False)
  assert len(calls) == 2  # Other keys: miss.
  stats.compute(dataset_dir, cache=False, progress=False)
  assert len(calls) == 3
  assert len(os.listdir(cache_dir)) == 3


def test_cache_falls_back_when_dataset_dir_is_read_only(dataset_dir,
                                                        monkeypatch, tmp_path):
  monkeypatch.setenv('RLDS_LITE_CACHE_DIR', str(tmp_path / 'fallback'))
  real = cache_lib._write_atomically

  def refuse_dataset_dir(path, text):
    if path.startswith(dataset_dir):
      raise PermissionError('read-only')
    real(path, text)

  monkeypatch.setattr(cache_lib, '_write_atomically', refuse_dataset_dir)
  result = stats.compute(dataset_dir, keys=['reward'], last_step='valid',
                         progress=False)
  written = os.listdir(tmp_path / 'fallback')
  assert len(written) == 1 and written[0].endswith('.json')
  monkeypatch.setattr(streaming, '_pass', None)  # A hit must not iterate.
  assert stats.compute(dataset_dir, keys=['reward'], last_step='valid',
                       progress=False) == result


def test_cache_key_changes_when_the_dataset_changes(dataset_dir, tmp_path):
  key = cache_lib.cache_key(dataset_dir, {'split': 'train'})
  assert key == cache_lib.cache_key(dataset_dir, {'split': 'train'})
  assert key != cache_lib.cache_key(dataset_dir, {'split': 'test'})
  shard = [f for f in os.listdir(dataset_dir) if 'tfrecord' in f][0]
  path = os.path.join(dataset_dir, shard)
  stat = os.stat(path)
  os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
  try:
    assert key != cache_lib.cache_key(dataset_dir, {'split': 'train'})
  finally:
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_registered_name_shares_the_cache(dataset_dir, monkeypatch):
  by_path = stats.compute(dataset_dir, progress=False)
  monkeypatch.setattr(streaming, '_pass', None)  # Must be a cache hit.
  data_dir = os.path.dirname(os.path.dirname(dataset_dir))
  by_name = stats.compute('points', data_dir=data_dir, progress=False)
  assert by_name == by_path
  with pytest.raises(ValueError, match="no TFDS dataset named 'pointz'"):
    stats.compute('pointz', data_dir=data_dir, progress=False)


def test_unwritable_cache_only_warns(dataset_dir, monkeypatch, tmp_path):
  monkeypatch.setenv('RLDS_LITE_CACHE_DIR', str(tmp_path / 'fallback'))

  def refuse(path, text):
    raise PermissionError(f'read-only: {path}')

  monkeypatch.setattr(cache_lib, '_write_atomically', refuse)
  result = stats.compute(dataset_dir, keys=['discount'], progress=False)
  assert result['discount'].count == result.num_steps - result.num_episodes


# Last-step values: left out by default (RLDS), never silently.


def _with_last(steps, **values):
  steps = {k: v.copy() if isinstance(v, np.ndarray) else v
           for k, v in steps.items()}
  for key, value in values.items():
    steps[key][-1] = value
  return steps


LAST_STEP_CASES = {
    # name: (episodes, {field: episodes with a non-zero last value},
    #        returns under 'invalid', returns under 'valid')
    'terminal_success_reward': (
        [_with_last(E(3, True, 30), reward=1.0)], {'reward': 1}),
    'truncated_last_reward': (
        [_with_last(E(4, False, 31), reward=-2.0)], {'reward': 1}),
    'action_and_discount_on_last_steps': (
        [_with_last(E(3, True, 32), action=0.5, discount=1.0),
         _with_last(E(2, False, 33), action=-1.0)],
        {'action': 2, 'discount': 1}),
    'one_step_episode': (
        [_with_last(E(1, True, 34), reward=1.0), E(2, False, 35)],
        {'reward': 1}),
    'zero_last_values': ([E(3, True, 36), E(1, False, 37)], {}),
}


@pytest.mark.parametrize('episodes, counts', LAST_STEP_CASES.values(),
                         ids=LAST_STEP_CASES.keys())
def test_nonzero_last_step_values_are_reported_and_warned_once(episodes,
                                                                counts):
  # Before: the success reward was dropped silently (return 0, no word).
  ds = stats_testing.to_dataset(episodes)
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    result = stats.compute(ds, progress=False)
  mine = [w for w in caught if issubclass(w.category, LastStepValuesWarning)]
  assert result.last_step_values == counts
  _check(result, episodes)   # The RLDS statistics (values left out).
  if not counts:
    assert not mine
    return
  assert len(mine) == 1
  message = str(mine[0].message)
  for field, count in counts.items():
    assert f'{field} ({count} of {len(episodes)} episodes)' in message
  assert "last_step='valid'" in message and '--last-step valid' in message
  assert mine[0].filename == __file__   # Points at the caller.
  assert 'left out (RLDS: invalid)' in result.table()
  with warnings.catch_warnings():
    warnings.simplefilter('error')   # 'valid' keeps them: no warning.
    kept = stats.compute(ds, last_step='valid', progress=False)
  _check(kept, episodes, mask_last_step=False)
  assert kept.last_step_values == counts
  assert 'counted (last_step=valid)' in kept.table()


def test_valid_last_step_counts_the_success_reward_in_returns():
  episodes = [_with_last(E(3, True, 40), reward=1.0)]
  episodes[0]['reward'][:] = [0, 0, 1]
  ds = stats_testing.to_dataset(episodes)
  with pytest.warns(LastStepValuesWarning):
    assert float(stats.compute(ds, progress=False).episode_return.mean) == 0
  assert float(stats.compute(ds, last_step='valid',
                             progress=False).episode_return.mean) == 1


def test_last_step_values_survive_json_and_merge():
  parts = []
  for case in ('terminal_success_reward', 'action_and_discount_on_last_steps'):
    with pytest.warns(LastStepValuesWarning):
      parts.append(stats.compute(stats_testing.to_dataset(
          LAST_STEP_CASES[case][0]), progress=False))
  assert stats.DatasetStats.from_json(parts[1].to_json()) == parts[1]
  assert stats.merge(*parts).last_step_values == {'reward': 1, 'action': 2,
                                                  'discount': 1}


def test_mask_last_step_is_a_deprecated_name_of_last_step():
  ds = stats_testing.to_dataset(CASES['short'])
  with pytest.warns(DeprecationWarning, match="use last_step='invalid'"):
    old = stats.compute(ds, mask_last_step=False, progress=False)
  assert old == stats.compute(ds, last_step='valid', progress=False)


def test_last_step_must_be_valid_or_invalid():
  with pytest.raises(ValueError, match=r"stats.compute: last_step must be "
                     r"LastStep.INVALID or LastStep.VALID \('invalid'/'valid'\)"
                     r", got 'keep'"):
    stats.compute(stats_testing.to_dataset(CASES['short']), last_step='keep')


def test_a_path_decodes_only_the_fields_it_summarises(tmp_path):
  # Two datasets with the same values but the camera's bytes: PNG frames in
  # one, garbage in the other. Statistics skip images, so they must not
  # decode them: both give the same statistics.
  good, bad = rlds_testing.camera_datasets_good_and_undecodable(tmp_path)
  with pytest.raises(tf.errors.InvalidArgumentError):  # Decoding fails.
    for _ in rlds_lite.load(bad, dense=True):
      pass
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', LastStepValuesWarning)
    expected = stats.compute(good, cache=False, progress=False).summary()
    result = stats.compute(bad, cache=False, progress=False).summary()
  assert result['skipped'] == {'observation/camera':
                               'image (uint8[8, 8, 3])'}
  assert sorted(result['fields']) == ['action', 'observation/state', 'reward']
  assert sorted(result['strings']) == ['language_instruction']
  for part in ('fields', 'strings', 'episode_length', 'episode_return',
               'num_episodes', 'num_steps', 'num_terminated', 'skipped',
               'last_step_values'):
    assert result[part] == expected[part], part
  # What the pass reads: the summarised fields and the flags it uses.
  captured = []
  real_pass = streaming._pass
  def spy(episodes, *args):
    captured.append(episodes.element_spec['steps'])
    return real_pass(episodes, *args)
  with pytest.MonkeyPatch.context() as patch:
    patch.setattr(streaming, '_pass', spy)
    stats.compute(bad, keys=['observation/state'], cache=False, progress=False)
  assert [p for p, _ in nest_paths.flatten_with_paths(captured[0])] == [
      'is_last', 'is_terminal', 'observation/state']


def _compute_quietly(dataset_or_path, **kwargs):
  """compute, raw NumPy RuntimeWarnings as errors; the warnings it gave."""
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    warnings.simplefilter('error', RuntimeWarning)
    result = stats.compute(dataset_or_path, progress=False, **kwargs)
  return result, [w for w in caught
                  if issubclass(w.category, stats.NonFiniteValuesWarning)]


@pytest.mark.parametrize('nested_steps', [False, True], ids=['dense', 'nested'])
def test_nonfinite_values_are_counted_left_out_and_named_once(nested_steps):
  episodes = stats_testing.nonfinite_episodes()
  result, caught = _compute_quietly(
      stats_testing.to_dataset(episodes, nested_steps))
  ref = stats_testing.reference(episodes)
  for path, values in ref['fields'].items():
    stats_testing.check_finite_field(result[path], values)
  stats_testing.check_finite_field(result.episode_return, ref['returns'])
  assert result['observation'].nan_count.tolist() == [1, 0, 0, 0]
  assert result['observation'].inf_count.tolist() == [0, 2, 0, 0]
  assert result.nonfinite == {'episode_return': (1, 0), 'action': (1, 0),
                              'observation': (1, 2), 'reward': (1, 0)}
  assert [str(w.message) for w in caught] == [
      'stats: non-finite values in episode_return (1 NaN), action (1 NaN), '
      'observation (1 NaN, 2 inf), reward (1 NaN): left out of mean, std, '
      'min, max and quantiles, which are of the finite values (counted in '
      'nan_count and inf_count).']
  assert result.table().splitlines()[1].split()[:4] == [
      'field', 'count', 'nan', 'inf']


def test_merge_of_nonfinite_statistics_equals_one_pass():
  episodes = stats_testing.nonfinite_episodes() + [E(4, False, 30)]
  whole, _ = _compute_quietly(stats_testing.to_dataset(episodes))
  parts = [_compute_quietly(stats_testing.to_dataset(episodes[i:j]))[0]
           for i, j in ((0, 1), (1, 3))]
  merged = stats.merge(*parts)
  for path, field in whole.fields.items():
    m = merged[path]
    assert m.count == field.count
    np.testing.assert_array_equal(m.nan_count, field.nan_count)
    np.testing.assert_array_equal(m.inf_count, field.inf_count)
    np.testing.assert_array_equal(m.min, field.min)
    np.testing.assert_array_equal(m.max, field.max)
    np.testing.assert_allclose(m.mean, field.mean, rtol=1e-12)
    np.testing.assert_array_equal(m.p50, field.p50)
  assert merged.nonfinite == whole.nonfinite


def test_nonfinite_warning_also_on_a_cache_hit(tmp_path):
  path = write_dataset(stats_testing.to_dataset(
      stats_testing.nonfinite_episodes()), str(tmp_path), 'nonfinite')
  first, caught = _compute_quietly(path)
  again, caught_again = _compute_quietly(path)
  assert again == first and again['observation'].inf_count.tolist() == [
      0, 2, 0, 0]
  assert len(caught) == len(caught_again) == 1
  assert str(caught_again[0].message) == str(caught[0].message)
  (name,) = os.listdir(os.path.join(path, cache_lib.CACHE_SUBDIR))
  with open(os.path.join(path, cache_lib.CACHE_SUBDIR, name)) as f:
    text = f.read()
  assert 'NaN' not in text and 'Infinity' not in text  # Strict JSON.
  assert json.loads(text)['format_version'] == 3


def _slash_key_dataset(directory):
  """A dataset with the step key 'a/b', published by plain TFDS (rlds_lite's
  writers refuse such a key)."""
  features = tfds.features.FeaturesDict({'steps': tfds.features.Dataset({
      'a/b': np.float32, 'is_first': np.bool_, 'is_last': np.bool_})})
  return tfds_fixtures.write_dataset(
      directory, 'slash', features,
      {'train': [{'steps': {'a/b': [1., 2.], 'is_first': [True, False],
                            'is_last': [False, True]}}]})


@pytest.mark.parametrize('given', ['path', 'tf.data'])
def test_a_key_with_a_slash_is_named_not_a_key_error(given, tmp_path):
  path = _slash_key_dataset(str(tmp_path))
  source = path if given == 'path' else rlds_lite.load(path, dense=True)
  with pytest.raises(ValueError) as error:
    stats.compute(source)
  assert str(error.value) == (
      "stats.compute: key 'steps/a/b' holds a '/', which rlds_lite reads as "
      "nesting (fields are named by paths such as 'observation/image'); "
      'rename it or nest it.')


def test_a_named_transform_is_cached_under_its_key(dataset_dir, monkeypatch):
  calls = []
  real_pass = streaming._pass
  monkeypatch.setattr(streaming, '_pass',
                      lambda *a, **k: calls.append(1) or real_pass(*a, **k))
  named = stats.Transform(lambda episodes: episodes.take(3), key='first-3')
  first = stats.compute(dataset_dir, transform=named, progress=False)
  assert (first.num_episodes, first.source['transform']) == (3, 'first-3')
  again = stats.compute(dataset_dir, transform=stats.Transform(
      lambda episodes: episodes.take(3), key='first-3'), progress=False)
  assert again == first and len(calls) == 1  # The same key: a hit.


def test_transform_key_still_works_and_warns_once(dataset_dir, monkeypatch):
  monkeypatch.setattr(option_objects, '_WARNED', set())
  take = lambda episodes: episodes.take(2)
  with pytest.warns(DeprecationWarning,
                    match=r'transform_key= is now transform=Transform'):
    old = stats.compute(dataset_dir, transform=take, transform_key='two',
                        cache=False, progress=False)
  assert (old.num_episodes, old.source['transform']) == (2, 'two')
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    stats.compute(dataset_dir, transform=take, transform_key='two',
                  cache=False, progress=False)
  assert not [w for w in caught if 'transform_key' in str(w.message)]
  with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
    stats.compute(dataset_dir, colour=1)


def test_an_opened_source_is_read_as_its_path(dataset_dir):
  opened = rlds_lite.open(dataset_dir)
  assert stats.compute(opened, cache=False, progress=False) == stats.compute(
      dataset_dir, cache=False, progress=False)
  part = stats.compute(opened.with_split('train[:2]'), cache=False,
                       progress=False)  # Its own split.
  assert (part.num_episodes, part.source['split']) == (2, 'train[:2]')
