"""Tests of rlds_lite.pipeline.mixing against NumPy references."""

import collections
import fractions
import warnings

import hypothesis
from hypothesis import strategies as st

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite import synthetic
from rlds_lite import option_objects
from rlds_lite.pipeline import mixing
from rlds_lite.pipeline import windows
from rlds_lite.tfds import write_dataset
from rlds_lite.sample_kinds import Windows

OFFSET = 10_000  # Source i yields i * OFFSET, i * OFFSET + 1, ...


def np_exact_counts(weights, total):
  """Largest remainder (Hamilton) with exact fractions; ties to lower index."""
  shares = [fractions.Fraction(w).limit_denominator(10**6) * total
            for w in weights]
  counts = [int(s) for s in shares]
  order = sorted(range(len(shares)), key=lambda i: (-(shares[i] - counts[i]), i))
  for i in order[:total - sum(counts)]:
    counts[i] += 1
  return counts


def sources(num, length=None):
  """``num`` int64 sources: source i counts up from i * OFFSET."""
  out = []
  for i in range(num):
    ds = tf.data.Dataset.range(i * OFFSET, i * OFFSET + (length or OFFSET))
    out.append(ds)
  return out


def source_of(values):
  return np.asarray(values) // OFFSET


EXACT_CASES = {
    'half_half': (0.5, 0.5),
    'ninety_ten': (0.9, 0.1),
    'all_first': (1.0, 0.0),
    'thirds': (1 / 3, 1 / 3, 1 / 3),
    'uneven_three': (0.2, 0.3, 0.5),
}


@pytest.mark.filterwarnings('ignore::rlds_lite.pipeline.ExactCountsWarning')
@pytest.mark.parametrize('batch_size', [7, 64])
@pytest.mark.parametrize('weights', list(EXACT_CASES.values()),
                         ids=list(EXACT_CASES))
def test_exact_batches_hold_exact_counts_in_source_order(weights, batch_size):
  ds = mixing.mix(sources(len(weights)), weights, exact=True,
                  batch_size=batch_size, seed=0)
  expected_counts = np_exact_counts(weights, batch_size)
  taken = [0] * len(weights)
  for batch in ds.take(5).as_numpy_iterator():
    assert batch.shape == (batch_size,)
    counts = np.bincount(source_of(batch), minlength=len(weights)).tolist()
    assert counts == expected_counts
    for i, count in enumerate(counts):  # Each source's next rows, in order.
      rows = np.sort(batch[source_of(batch) == i])
      np.testing.assert_array_equal(
          rows, i * OFFSET + taken[i] + np.arange(count))
      taken[i] += count


# The rounding is the same in every batch: (weights, batch_size) -> the
# counts, and the error or warning it gives (None: none).
EXACT_ROUNDING_CASES = {
    'one_row_of_two_sources': ((0.5, 0.5), 1, ValueError,
                               'mix: batch_size 1 gives datasets[1] (weight '
                               '0.5) no row in any batch (the weights round '
                               'to [1, 0] rows); a batch_size of 2 or more '
                               'gives every source a row, or use '
                               'exact=False.'),
    'a_middle_source_never_drawn': (
        (0.3, 0.3, 0.4), 2, ValueError,
        'gives datasets[1] (weight 0.3) no row in any batch (the weights '
        'round to [1, 0, 1] rows); a batch_size of 4 or more gives every '
        'source a row'),
    'a_rare_source_never_drawn': (
        (0.99, 0.01), 8, ValueError,
        'gives datasets[1] (weight 0.01) no row in any batch (the weights '
        'round to [8, 0] rows); a batch_size of 100 or more gives every '
        'source a row'),
    'shares_far_off': (
        (0.25, 0.25, 0.5), 3, mixing.ExactCountsWarning,
        'mix: batch_size 3: every batch holds [1, 1, 1] rows, shares '
        '[0.333, 0.333, 0.333] of weights [0.25, 0.25, 0.5]'),
    'shares_close': ((1 / 3, 1 / 3, 1 / 3), 64, None, None),
    'a_zero_weight_is_no_row': ((1.0, 0.0), 1, None, None),
}


@pytest.mark.parametrize('case', list(EXACT_ROUNDING_CASES.values()),
                         ids=list(EXACT_ROUNDING_CASES))
def test_exact_rounding_never_drops_a_source_silently(case):
  weights, batch_size, kind, message = case
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    if kind is ValueError:
      with pytest.raises(ValueError) as raised:
        mixing.mix(sources(len(weights)), weights, exact=True,
                   batch_size=batch_size)
      assert message in str(raised.value)
    else:
      mixing.mix(sources(len(weights)), weights, exact=True,
                 batch_size=batch_size)
  warned = [str(w.message) for w in caught
            if issubclass(w.category, mixing.ExactCountsWarning)]
  if kind is mixing.ExactCountsWarning:
    assert len(warned) == 1 and message in warned[0]
  else:
    assert not warned


def test_exact_without_permute_concatenates_sources_in_order():
  ds = mixing.mix(sources(2), (0.75, 0.25), exact=True, batch_size=4,
                  permute=False)
  batches = list(ds.take(2).as_numpy_iterator())
  np.testing.assert_array_equal(batches, [[0, 1, 2, OFFSET],
                                          [3, 4, 5, OFFSET + 1]])


def test_exact_permutation_is_seeded():
  def first_batches(seed):
    ds = mixing.mix(sources(2), (0.5, 0.5), exact=True, batch_size=16,
                    seed=seed)
    return np.stack(list(ds.take(3).as_numpy_iterator()))

  np.testing.assert_array_equal(first_batches(3), first_batches(3))
  assert not np.array_equal(first_batches(3), first_batches(4))


def test_exact_rebatches_datasets_of_batches():
  batched = [ds.batch(5) for ds in sources(2, length=100)]
  ds = mixing.mix(batched, (0.25, 0.75), exact=True, batch_size=8,
                  batched=True, seed=0)
  batches = list(ds.as_numpy_iterator())
  assert len(batches) == 16  # Source 1 runs out after 100 // 6 = 16 batches.
  for batch in batches:
    assert np.bincount(source_of(batch), minlength=2).tolist() == [2, 6]


def test_exact_mixes_real_pipelines_of_batches():
  def pipeline(offset):
    episodes = synthetic.episodes(num_episodes=4, seed=offset, dense=True)
    episodes = episodes.map(
        lambda e: {**e, 'episode_id': e['episode_id'] + offset})
    return windows.windows_dataset(episodes, Windows(2), 8, seed=0,
                                   episode_fields='episode_id').repeat()

  ds = mixing.mix({'sim': pipeline(0), 'real': pipeline(1000)},
                  {'sim': 0.75, 'real': 0.25}, exact=True, batch_size=16,
                  batched=True, seed=0)
  for batch in ds.take(2).as_numpy_iterator():
    assert batch['observation'].shape == (16, 2, 4)
    assert int((batch['episode_id'] >= 1000).sum()) == 4


SAMPLED_CASES = {
    'half_half': (0.5, 0.5),
    'ninety_ten': (0.9, 0.1),
    'uneven_three': (0.2, 0.3, 0.5),
    'zero_weight': (0.6, 0.0, 0.4),
}


@pytest.mark.parametrize('weights', list(SAMPLED_CASES.values()),
                         ids=list(SAMPLED_CASES))
def test_sampled_fractions_match_weights(weights):
  n = 2000
  ds = mixing.mix([s.repeat() for s in sources(len(weights))], weights,
                  batch_size=n, seed=0)
  batch = next(iter(ds)).numpy()
  fractions_seen = np.bincount(source_of(batch), minlength=len(weights)) / n
  # 4 binomial standard deviations (<= 0.045 at n=2000); fixed seed.
  np.testing.assert_allclose(fractions_seen, weights, atol=0.045)
  assert fractions_seen[np.asarray(weights) == 0].sum() == 0


def test_sampled_keeps_each_source_in_order():
  ds = mixing.mix(sources(2, length=50), seed=1, stop_on_empty_dataset=False)
  values = np.fromiter(ds.as_numpy_iterator(), np.int64)
  assert sorted(values.tolist()) == list(range(50)) + list(
      range(OFFSET, OFFSET + 50))
  for i in range(2):
    rows = values[source_of(values) == i]
    np.testing.assert_array_equal(rows, np.sort(rows))


def test_sampled_stops_when_a_source_runs_out():
  ds = mixing.mix([sources(1)[0], sources(2, length=10)[1]], seed=1)
  values = np.fromiter(ds.as_numpy_iterator(), np.int64)
  assert (source_of(values) == 1).sum() == 10
  assert len(values) < 100


def test_sampled_batches_datasets_of_batches():
  batched = [ds.batch(3) for ds in sources(2, length=30)]
  ds = mixing.mix(batched, batch_size=4, batched=True, seed=0,
                  stop_on_empty_dataset=False, drop_remainder=True)
  batches = list(ds.as_numpy_iterator())
  assert [b.shape for b in batches] == [(4,)] * 15
  assert sorted(np.concatenate(batches).tolist()) == list(range(30)) + list(
      range(OFFSET, OFFSET + 30))


BALANCE_CASES = {
    'steps_equal_weights': dict(weights=None, sizes=[100, 300],
                                counts=[2, 6]),
    'steps_weighted': dict(weights=[0.75, 0.25], sizes=[100, 300],
                           counts=[4, 4]),
    'sizes_dict': dict(weights=None, sizes={'a': 1, 'b': 3}, counts=[2, 6]),
}


@pytest.mark.parametrize('case', list(BALANCE_CASES.values()),
                         ids=list(BALANCE_CASES))
def test_balance_multiplies_weights_by_sizes(case):
  datasets = dict(zip('ab', (s.repeat() for s in sources(2))))
  if not isinstance(case['sizes'], dict):
    datasets = list(datasets.values())
  ds = mixing.mix(datasets, case['weights'], balance=case['sizes'],
                  exact=True, batch_size=8, seed=0)
  batch = next(iter(ds)).numpy()
  assert np.bincount(source_of(batch), minlength=2).tolist() == case['counts']


def test_the_old_sizes_keyword_still_works_and_warns_once():
  datasets = [s.repeat() for s in sources(2)]
  option_objects._WARNED.clear()  # pylint: disable=protected-access
  with pytest.warns(DeprecationWarning, match=r"^mix: \['sizes'\] are now "
                    r'balance=sizes \(the sizes themselves\)'):
    ds = mixing.mix(datasets, balance='steps', sizes=[100, 300], exact=True,
                    batch_size=8, seed=0)
  batch = next(iter(ds)).numpy()
  assert np.bincount(source_of(batch), minlength=2).tolist() == [2, 6]
  with pytest.raises(ValueError, match='sizes are only used with balance'):
    mixing.mix(sources(2), sizes=[1, 2])


def test_balance_episodes_uses_cardinality_of_episode_datasets():
  def episodes(ids):
    return tf.data.Dataset.from_tensor_slices(
        {'steps': {'reward': np.zeros([len(ids), 3], np.float32)},
         'episode_id': np.asarray(ids, np.int64)})

  ds = mixing.mix([episodes([0, 1]), episodes([100 + i for i in range(6)])],
                  balance='episodes', exact=True, batch_size=4,
                  permute=False)
  ids = [int(e) for e in next(iter(ds))['episode_id']]
  assert ids == [0, 100, 101, 102]


@pytest.fixture(scope='module')
def toy_dataset(tmp_path_factory):
  arrays = synthetic.episode_arrays(num_episodes=5, seed=2)
  path = write_dataset(synthetic.episodes(num_episodes=5, seed=2),
                       tmp_path_factory.mktemp('mix'), 'toy')
  return path, arrays


@pytest.mark.parametrize('split,unit,expected', [
    ('train', 'episodes', lambda a: len(a)),
    ('train', 'steps', lambda a: sum(len(e['reward']) for e in a)),
    ('train[1:3]', 'steps', lambda a: sum(len(e['reward']) for e in a[1:3])),
], ids=['episodes', 'steps', 'sliced_steps'])
def test_dataset_size_counts_episodes_and_steps(toy_dataset, split, unit,
                                                expected):
  path, arrays = toy_dataset
  assert mixing.dataset_size(path, split, unit) == expected(arrays)


@hypothesis.settings(max_examples=25)
@hypothesis.given(
    st.lists(st.integers(0, 20), min_size=1, max_size=6).filter(any),
    st.integers(0, 300))
def test_exact_counts_sum_to_total_and_stay_within_one(raw, total):
  weights = np.asarray(raw, np.float64) / sum(raw)
  counts = mixing.exact_counts(weights, total)
  assert sum(counts) == total
  assert all(abs(c - w * total) < 1 for c, w in zip(counts, weights))
  assert counts == np_exact_counts(weights, total)


def _empty_unknown():
  return tf.data.Dataset.range(5).filter(lambda x: x > 10)


BAD = {
    'weights_sum_over_one': (
        lambda: mixing.mix(sources(2), [0.5, 0.6]), ValueError,
        r'weights \[0.5, 0.6\] sum to 1.1, not 1'),
    'weights_sum_under_one': (
        lambda: mixing.mix(sources(2), [0.2, 0.2]), ValueError,
        'sum to 0.4, not 1'),
    'negative_weight': (
        lambda: mixing.mix(sources(2), [1.5, -0.5]), ValueError,
        r'the weight of datasets\[1\] is -0.5; weights must be finite and '
        'non-negative'),
    'nan_weight': (
        lambda: mixing.mix(sources(2), [float('nan'), 1.0]), ValueError,
        r'the weight of datasets\[0\] is nan'),
    'wrong_number_of_weights': (
        lambda: mixing.mix(sources(3), [0.5, 0.5]), ValueError,
        'weights has 2 values for 3 datasets'),
    'weight_dict_keys': (
        lambda: mixing.mix(dict(zip('ab', sources(2))), {'a': 0.5, 'c': 0.5}),
        ValueError, r"keys \['a', 'c'\]; it needs exactly the keys"),
    'empty_dataset': (
        lambda: mixing.mix([sources(1)[0], tf.data.Dataset.range(0)]),
        ValueError, r'datasets\[1\] is empty \(cardinality 0\)'),
    'empty_named_dataset': (
        lambda: mixing.mix({'sim': sources(1)[0],
                            'real': tf.data.Dataset.range(0)}),
        ValueError, r"'real' is empty"),
    'no_datasets': (lambda: mixing.mix([]), ValueError, 'datasets is empty'),
    'not_a_dataset': (lambda: mixing.mix([sources(1)[0], [1, 2]]), TypeError,
                      r'datasets\[1\] is a list, not a tf.data.Dataset'),
    'structure_mismatch': (
        lambda: mixing.mix([sources(1)[0], tf.data.Dataset.from_tensors(
            {'x': np.int64(1)})]), ValueError,
        r'datasets\[1\] has elements .* not the structure of datasets\[0\]'),
    'dtype_mismatch': (
        lambda: mixing.mix([sources(1)[0], tf.data.Dataset.range(3).map(
            lambda x: tf.cast(x, tf.int32))]), ValueError,
        r'datasets\[1\] has elements .* whose dtypes differ'),
    'exact_without_batch_size': (
        lambda: mixing.mix(sources(2), exact=True), ValueError,
        'exact=True needs batch_size'),
    'exact_no_stop': (
        lambda: mixing.mix(sources(2), exact=True, batch_size=2,
                           stop_on_empty_dataset=False), ValueError,
        'stop_on_empty_dataset=False would break the exact fractions'),
    'bad_batch_size': (
        lambda: mixing.mix(sources(2), exact=True, batch_size=0), ValueError,
        'batch_size must be a positive int, got 0'),
    'bad_balance': (
        lambda: mixing.mix(sources(2), balance='frames'), ValueError,
        "balance must be one of .* got 'frames'"),
    'balance_needs_sizes': (
        lambda: mixing.mix(sources(2), balance='steps'), ValueError,
        r"balance='steps' needs the sizes, balance=\[...\] .*dataset_size"),
    'zero_size': (
        lambda: mixing.mix(sources(2), balance=[3, 0]),
        ValueError, r'datasets\[1\] has size 0 \(sizes\)'),
    'negative_size': (
        lambda: mixing.mix(sources(2), balance=[3, -1]),
        ValueError, r'the size of datasets\[1\] is -1.0'),
    'bad_unit': (
        lambda: mixing.dataset_size('/nonexistent', unit='frames'),
        ValueError, "unit must be one of .* got 'frames'"),
}


@pytest.mark.parametrize('make,error,message', list(BAD.values()),
                         ids=list(BAD))
def test_bad_input_raises_clear_error(make, error, message):
  with pytest.raises(error, match=message):
    make()


@pytest.mark.parametrize('exact', [False, True], ids=['sampled', 'exact'])
def test_source_found_empty_when_read_is_named(exact):
  ds = mixing.mix({'sim': sources(1)[0], 'real': _empty_unknown()},
                  exact=exact, batch_size=4, seed=0)
  message = 'mix: real is empty; a mixture needs every dataset to have elements'
  with pytest.raises(tf.errors.InvalidArgumentError, match=message):
    list(ds.take(100))


def test_unknown_cardinality_source_with_elements_is_passed_through():
  some = tf.data.Dataset.range(10).filter(lambda x: x % 2 == 0)
  ds = mixing.mix([some, tf.data.Dataset.range(OFFSET, OFFSET + 5)], seed=0,
                  stop_on_empty_dataset=False)
  assert collections.Counter(ds.as_numpy_iterator()) == collections.Counter(
      [0, 2, 4, 6, 8] + list(range(OFFSET, OFFSET + 5)))
