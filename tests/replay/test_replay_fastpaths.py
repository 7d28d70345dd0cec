"""The replay core's fast paths equal the slow paths exactly: sum tree updates, NumPy windows, spec pass-through."""

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite import replay
from rlds_lite.replay import buffer as buffer_lib
from rlds_lite.replay import spec as spec_lib
from rlds_lite.replay import sum_tree
from rlds_lite.sample_kinds import Transitions, Windows
from replay_testing import buffer_of, episode


def _tree_with_unique(capacity, op, updates):
  """The previous `SegmentTree.set`: parents deduplicated with ``np.unique`` at each level."""
  tree = sum_tree.SegmentTree(capacity, op)
  combine = np.add if op == 'sum' else np.minimum
  for leaves, values in updates:
    nodes = np.asarray(leaves, np.int64) + tree.size
    tree.tree[nodes] = values
    nodes = np.unique(nodes // 2)
    while nodes[0] >= 1:
      tree.tree[nodes] = combine(tree.tree[2 * nodes], tree.tree[2 * nodes + 1])
      if nodes[0] == 1:
        break
      nodes = np.unique(nodes // 2)
  return tree


@pytest.mark.parametrize('op', ['sum', 'min'])
@pytest.mark.parametrize('capacity', [1, 2, 7, 64, 1000])
def test_segment_tree_set_equals_the_unique_per_level_version(op, capacity):
  rng = np.random.default_rng(capacity)
  updates = []
  for size in [1, 3, capacity // 2 + 1, capacity, 3 * capacity]:   # Small, level-wide, repeats.
    leaves = rng.integers(0, capacity, size)
    updates.append((leaves, rng.uniform(0.0, 5.0, size)))
  for begin, end in [(capacity // 3, capacity // 3 + capacity // 2 + 1), (capacity - 2, capacity)]:
    run = np.arange(max(begin, 0), min(end, capacity))   # Consecutive leaves: the ring's case.
    updates.append((run, rng.uniform(0.0, 5.0, len(run))))
  updates.append((np.arange(capacity), np.zeros([capacity]) if op == 'sum' else
                  np.full([capacity], np.inf)))   # Every leaf emptied at once.
  updates.append((np.array([capacity - 1, 0, capacity - 1]), np.array([1.0, 2.0, 3.0])))
  fast = sum_tree.SegmentTree(capacity, op)
  for i, (leaves, values) in enumerate(updates):
    fast.set(leaves, values)
    slow = _tree_with_unique(capacity, op, updates[:i + 1])
    np.testing.assert_array_equal(fast.tree, slow.tree, err_msg=f'after update {i}')
  leaves = fast.leaves(np.arange(capacity))
  assert leaves[capacity - 1] == 3.0 and leaves[0] == (3.0 if capacity == 1 else 2.0)  # Last wins.
  assert fast.total() == (leaves.sum() if op == 'sum' else leaves.min())


def test_segment_tree_find_after_fast_sets_matches_a_cumulative_sum():
  tree = sum_tree.SegmentTree(10)
  priorities = np.array([0.0, 1.0, 0.5, 0.0, 2.0, 0.0, 0.0, 0.25, 0.0, 3.0])
  tree.set(np.arange(10), priorities)
  tree.set(np.array([2, 2]), np.array([9.0, 0.5]))   # Repeats: the last (0.5) wins.
  prefix = np.array([0.0, 0.99, 1.0, 1.49, 1.5, 3.6, 3.75, 6.74])
  expected = np.searchsorted(np.cumsum(priorities), prefix, side='right')
  assert tree.find(prefix).tolist() == expected.tolist() == [1, 1, 2, 2, 4, 7, 9, 9]


@pytest.mark.parametrize('capacity', [5, 4096, 70_000])   # Searched levels only; and then descended.
def test_segment_tree_find_equals_a_search_of_the_running_sums(capacity):
  rng = np.random.default_rng(1)
  priorities = rng.uniform(0.1, 2.0, capacity) * (rng.random(capacity) < 0.3)  # Mostly empty.
  priorities[0], priorities[-1] = 1.0, 0.0   # The last leaf is empty: a prefix near the total must not land there.
  tree = sum_tree.SegmentTree(capacity)
  tree.set(np.arange(capacity), priorities)
  prefix = np.concatenate([rng.uniform(0.0, tree.total(), 1000), [0.0, tree.total() * (1 - 1e-12)]])
  expected = np.searchsorted(np.cumsum(priorities), prefix, side='right')
  got = tree.find(prefix)
  assert got.tolist() == expected.tolist()
  assert (priorities[got] > 0).all()


EPISODES = {
    'one_step': [episode(1)],
    'terminal': [episode(5)],
    'truncated': [episode(5, terminal=False)],
    'mixed': [episode(4, base=0), episode(1, base=100), episode(6, False, base=200)],
}
WINDOWS = {
    'strict': Windows(size=3),
    'padded': Windows(size=3, drop_remainder=False),   # Past the end: zeros and a mask.
    'strided_padded': Windows(size=2, shift=2, stride=2, drop_remainder=False),
    'longer_than_every_episode_padded': Windows(size=8, drop_remainder=False),
}


def _with_image(steps):
  t = len(steps['action'])
  image = (np.arange(t * 4 * 3 * 2) % 251).astype(np.uint8).reshape([t, 4, 3, 2])
  return dict(steps, image=image)


def _fast_and_slow(kind, buffer):
  slots = np.flatnonzero(buffer.sampler.ok)
  values = buffer._gather(slots)
  fast = buffer_lib._windows_in_numpy(kind, values)
  slow = kind.assemble({p: tf.constant(v) for p, v in values['steps'].items()},
                       tf.constant(values['start']),
                       tf.constant(values['length']), tf.constant(values['terminated']))
  return fast, {p: v.numpy() for p, v in slow.items()}


@pytest.mark.parametrize('episodes_name', EPISODES)
@pytest.mark.parametrize('kind_name', WINDOWS)
def test_windows_in_numpy_equal_their_assemble(kind_name, episodes_name):
  kind = WINDOWS[kind_name]
  episodes = [_with_image(steps) for steps in EPISODES[episodes_name]]
  buffer = buffer_of(episodes, kind=kind)
  if not buffer.num_samples:
    assert kind_name == 'strict' and episodes_name in ('one_step',)
    return
  fast, slow = _fast_and_slow(kind, buffer)
  assert sorted(fast) == sorted(slow)
  for path in slow:
    assert fast[path].dtype == slow[path].dtype and fast[path].shape == slow[path].shape, path
    np.testing.assert_array_equal(fast[path], slow[path], err_msg=path)


def test_windows_of_an_open_episode_in_numpy_equal_their_assemble():
  kind = Windows(size=2, drop_remainder=False)
  buffer = replay.ReplayBuffer(replay.MemoryStorage(16), kind=kind)
  steps = episode(6)
  buffer.extend({k: v[:4] for k, v in steps.items()})   # Still open: is_last not yet added.
  fast, slow = _fast_and_slow(kind, buffer)
  for path in slow:
    np.testing.assert_array_equal(fast[path], slow[path], err_msg=path)
  assert fast['mask'].all()   # An open episode offers only windows it holds whole.


def test_strings_and_other_kinds_take_the_tf_path():
  steps = dict(episode(3), note=np.array(['a', 'bb', 'ccc'], object))
  kind = Windows(size=2)
  buffer = buffer_of([steps], kind=kind)
  assert buffer_lib._windows_in_numpy(kind, buffer._gather(np.array([0]))) is None
  batch, _ = buffer.sample(4)
  assert batch['note'].shape == (4, 2) and set(batch['note'][:, 0]) <= {b'a', b'bb'}
  other = buffer_of([episode(3)], kind=Transitions())
  assert buffer_lib._windows_in_numpy(other.kind, other._gather(np.array([0]))) is None


def test_spec_check_passes_through_arrays_that_match_and_casts_the_rest():
  spec = {'observation': spec_lib.Field((2,), 'float32'), 'action': spec_lib.Field((), 'int64')}
  observation = np.zeros([3, 2], np.float32)
  out = spec_lib.check({'observation': observation, 'action': np.arange(3, dtype=np.int32)},
                       spec, 1, 'steps')
  assert out['observation'] is observation
  assert out['action'].dtype == np.int64 and out['action'].tolist() == [0, 1, 2]
  with pytest.raises(ValueError, match=r"steps field 'observation' has shape \[3\] float32"):
    spec_lib.check({'observation': np.zeros([3, 3], np.float32), 'action': np.arange(3)},
                   spec, 1, 'steps')
