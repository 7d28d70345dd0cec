"""rlds_lite.pipeline.sliding: the unit schedule against a NumPy reference."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite.pipeline import sliding

# Name -> (episode lengths, block_episodes, num_blocks, batch_size).
CASES = {
    'empty': ([], 1, 4, 3),
    'one_step': ([1], 1, 4, 3),
    'empty_episodes': ([0, 3, 0, 0, 2], 1, 2, 2),
    'fewer_blocks_than_window': ([4, 2, 5], 1, 8, 4),
    'exactly_a_window': ([3, 3, 3, 3], 1, 4, 5),
    'many_blocks': ([1 + (7 * i) % 12 for i in range(40)], 3, 4, 16),
    'blocks_smaller_than_parts': ([1, 2, 1, 1, 2, 1, 1, 3], 1, 4, 2),
    'one_block_window': ([5, 4, 6, 2], 2, 1, 4),
    'last_block_partial': ([6, 5, 4, 3, 2], 2, 2, 3),
}


def reference_units(block_sizes, num_blocks):
  """NumPy reference: ``{block: rows}`` of each non-empty unit, in order.

  Block ``i`` is cut into ``num_blocks`` parts; after unit ``j`` (the one
  block ``j`` enters with) it has given ``j - i + 1`` parts, none until the
  window is full (``j < num_blocks - 1``), and all of them at the end.
  """
  emitted = np.zeros(len(block_sizes), np.int64)
  units = []
  for j in range(len(block_sizes) + 1):
    final = j == len(block_sizes)
    unit = {}
    for i in range(max(0, j - num_blocks + 1), min(j + 1, len(block_sizes))):
      parts = (num_blocks if final else 0 if j < num_blocks - 1 else
               j - i + 1)
      target = parts * block_sizes[i] // num_blocks
      if target > emitted[i]:
        unit[i] = int(target - emitted[i])
        emitted[i] = target
    if unit:
      units.append(unit)
  assert emitted.tolist() == list(block_sizes)  # Every row, once.
  return units


def _steps(lengths):
  """One element per episode: its id and step index per step (``[T]``)."""
  def gen():
    for e, length in enumerate(lengths):
      yield {'episode': np.full(length, e, np.int64),
             'step': np.arange(length, dtype=np.int64),
             'obs': np.arange(2 * length, dtype=np.float32).reshape(length, 2)}
  spec = {'episode': tf.TensorSpec([None], tf.int64),
          'step': tf.TensorSpec([None], tf.int64),
          'obs': tf.TensorSpec([None, 2], tf.float32)}
  return tf.data.Dataset.from_generator(gen, output_signature=spec)


def _rows(batches):
  return [(int(e), int(s)) for b in batches
          for e, s in zip(b['episode'], b['step'])]


@pytest.mark.parametrize('lengths, block_episodes, num_blocks, batch_size',
                         CASES.values(), ids=CASES.keys())
def test_units_match_the_reference_and_every_step_comes_once(
    lengths, block_episodes, num_blocks, batch_size):
  ds = sliding.sliding_step_batches(
      _steps(lengths), batch_size, block_episodes=block_episodes,
      num_blocks=num_blocks, seed=3)
  batches = list(ds.as_numpy_iterator())
  rows = _rows(batches)
  assert sorted(rows) == [(e, s) for e, n in enumerate(lengths)
                          for s in range(n)]
  sizes = [len(b['step']) for b in batches]
  assert all(size == batch_size for size in sizes[:-1])
  assert not sizes or 0 < sizes[-1] <= batch_size
  for b in batches:  # Observations travel with their step.
    np.testing.assert_array_equal(
        b['obs'], np.stack([2 * b['step'], 2 * b['step'] + 1], axis=1))
  block_sizes = [sum(lengths[i:i + block_episodes])
                 for i in range(0, len(lengths), block_episodes)]
  start = 0
  for unit in reference_units(block_sizes, num_blocks):
    size = sum(unit.values())
    blocks = collections.Counter(
        e // block_episodes for e, _ in rows[start:start + size])
    assert dict(blocks) == unit
    start += size
  assert start == len(rows)


def test_reference_schedule_by_hand():
  # Window of 2 over blocks of 4, 6, 2 rows: part sizes are halves.
  assert reference_units([4, 6, 2], 2) == [
      {0: 4, 1: 3},  # Window full at block 1: block 0 all, block 1 half.
      {1: 3, 2: 1},
      {2: 1}]        # The end flushes the rest.


def test_drop_last_batch_keeps_full_batches_only():
  ds = sliding.sliding_step_batches(_steps([5, 4, 6]), 4, block_episodes=1,
                                    num_blocks=2, seed=0,
                                    drop_last_batch=True)
  assert [len(b['step']) for b in ds.as_numpy_iterator()] == [4, 4, 4]


def test_seeded_order_is_reproducible_and_reshuffled_every_pass():
  def make(seed):
    return sliding.sliding_step_batches(_steps([9] * 12), 8,
                                        block_episodes=2, num_blocks=3,
                                        seed=seed)
  ds = make(7)
  first, second = _rows(ds.as_numpy_iterator()), _rows(ds.as_numpy_iterator())
  assert first == _rows(make(7).as_numpy_iterator())
  assert first != second and sorted(first) == sorted(second)
  assert first != _rows(make(8).as_numpy_iterator())


def test_batches_mix_the_episodes_of_the_window():
  # 64 episodes of 30 steps, windows of 8 blocks of 8: like a pool of 64.
  ds = sliding.sliding_step_batches(_steps([30] * 256), 256,
                                    block_episodes=8, num_blocks=8, seed=0)
  distinct = [len(set(b['episode'].tolist()))
              for b in ds.as_numpy_iterator()][:-1]
  assert np.mean(distinct) > 55  # A pool of 64 mixes 64 * (1 - e^-4) = 62.8.
  assert max(distinct) <= 72  # Units straddle batches: at most 9 blocks.


@pytest.mark.parametrize('name, value', [('batch_size', 0),
                                         ('block_episodes', 0),
                                         ('num_blocks', -1)])
def test_bad_sizes_are_errors(name, value):
  kwargs = dict(block_episodes=1, num_blocks=2)
  kwargs[name] = value
  batch_size = kwargs.pop('batch_size', 4)
  with pytest.raises(ValueError, match=f'sliding_step_batches: {name}'):
    sliding.sliding_step_batches(_steps([1]), batch_size, **kwargs)
