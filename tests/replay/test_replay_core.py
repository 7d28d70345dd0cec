"""The buffer's samples against a NumPy reference: named cases of kinds, eviction, priorities, limits."""

import numpy as np
import pytest

from rlds_lite import replay
from rlds_lite.sample_kinds import RobotSamples, Transitions, Windows
from replay_testing import buffer_of, episode, flat, one_epoch

EPISODES = {
    'one_step': [episode(1)],
    'terminal': [episode(5)],
    'truncated': [episode(5, terminal=False)],
    'three': [episode(4, base=0), episode(1, base=100), episode(6, False, base=200)],
}
KINDS = {
    'windows': Windows(size=3),
    'windows_padded': Windows(size=3, drop_remainder=False),
    'windows_strided': Windows(size=2, shift=2, stride=2),
    'transitions': Transitions(),
    'nstep': Transitions(n=3, gamma=0.9),
    'nstep_valid': Transitions(n=2, gamma=0.5, last_step='valid'),
    'robot': RobotSamples(history=2, action_chunk=3),
}


def _reference(kind, episodes):
  """Every sample of ``kind`` in ``episodes``: {(episode, start step): flat sample}."""
  samples = {}
  for e, steps in enumerate(episodes):
    out = {k: np.asarray(v) for k, v in kind.reference(steps).items()}
    count = len(next(iter(out.values())))
    for j, start in enumerate(kind.starts(np.arange(count)).tolist()):
      samples[(e, start)] = {k: v[j] for k, v in out.items()}
  return samples


@pytest.mark.parametrize('episodes_name', EPISODES)
@pytest.mark.parametrize('kind_name', KINDS)
def test_an_epoch_of_a_kind_is_its_reference(kind_name, episodes_name):
  kind, episodes = KINDS[kind_name], EPISODES[episodes_name]
  expected = _reference(kind, episodes)
  buffer = buffer_of(episodes, kind=kind, sampler=replay.WithoutReplacement())
  assert buffer.num_samples == len(expected)
  if not expected:
    with pytest.raises(ValueError, match='holds .* steps but no sample of'):
      buffer.sample(1)
    return
  batch, info = one_epoch(buffer)
  batch = flat(batch)
  got = {}
  for i, key in enumerate(zip(info.episode_ids.tolist(), info.step_ids.tolist())):
    got[key] = {k: v[i] for k, v in batch.items()}
  assert sorted(got) == sorted(expected)
  for key, sample in expected.items():
    assert sorted(got[key]) == sorted(sample), key
    for field, value in sample.items():
      np.testing.assert_allclose(got[key][field], value, rtol=1e-6, err_msg=f'{key} {field}')


def test_steps_without_a_kind_are_the_stored_steps():
  steps = episode(6)
  buffer = buffer_of([steps], sampler=replay.WithoutReplacement())
  batch, info = one_epoch(buffer)
  order = np.argsort(info.step_ids)
  assert info.step_ids[order].tolist() == list(range(6))
  for field, value in steps.items():
    np.testing.assert_array_equal(batch[field][order], value)
  assert info.weights.tolist() == [1.0] * 6


@pytest.mark.parametrize('evict, held', [
    ('episode', {1: [0, 1, 2, 3], 2: [0, 1, 2, 3]}),
    ('cut', {0: [2, 3], 1: [0, 1, 2, 3], 2: [0, 1, 2, 3]}),
])
def test_eviction_across_an_episode_boundary(evict, held):
  # Capacity 10: the third episode overwrites the first two steps of the first.
  episodes = [episode(4, base=0), episode(4, base=10), episode(4, base=20)]
  buffer = buffer_of(episodes, capacity=10, writer=replay.RoundRobin(evict=evict),
                     kind=Windows(size=1), sampler=replay.WithoutReplacement())
  batch, info = one_epoch(buffer)
  got = {}
  for e, t, first in zip(info.episode_ids.tolist(), info.step_ids.tolist(),
                         batch['is_first'][:, 0].tolist()):
    got.setdefault(e, []).append((t, first))
  assert {e: sorted(t for t, _ in v) for e, v in got.items()} == held
  if evict == 'cut':   # The cut episode's first remaining step is its first now.
    assert sorted(got[0]) == [(2, True), (3, False)]
    assert buffer.num_episodes() == 3
  else:
    assert buffer.num_episodes() == 2


def test_a_cut_episode_samples_as_the_episode_it_has_become():
  buffer = buffer_of([episode(6, base=0), episode(6, base=10)], capacity=10,
                     writer=replay.RoundRobin(evict='cut'), kind=Transitions(n=2),
                     sampler=replay.WithoutReplacement())
  batch, info = one_epoch(buffer)
  cut = info.episode_ids == 0
  assert sorted(info.step_ids[cut].tolist()) == [2, 3, 4]
  order = np.argsort(info.step_ids[cut])
  assert batch['observation'][cut][order][:, 0].tolist() == [2.0, 3.0, 4.0]
  assert batch['next_observation'][cut][order][:, 0].tolist() == [4.0, 5.0, 5.0]


def test_an_open_episode_offers_a_sample_once_every_step_it_reads_arrived():
  buffer = replay.ReplayBuffer(replay.MemoryStorage(32), kind=Transitions(n=2))
  steps = episode(5)
  counts = []
  for t in range(5):
    buffer.add({k: v[t] for k, v in steps.items()})
    counts.append(buffer.num_samples)
  # Open: a transition at t needs steps t..t+2; the last step closes the episode.
  assert counts == [0, 0, 1, 2, 4]


def test_slices_at_both_ends_of_an_episode():
  kind = RobotSamples(history=3, action_chunk=3)
  buffer = buffer_of([episode(4)], kind=kind, sampler=replay.WithoutReplacement())
  batch, info = one_epoch(buffer)
  order = np.argsort(info.step_ids)
  assert info.step_ids[order].tolist() == [0, 1, 2]
  # History at the start repeats the first observation; the chunk past the
  # end repeats the last valid action (Octo's padding).
  assert batch['observation'][order][:, :, 0].tolist() == [[0, 0, 0], [0, 0, 1], [0, 1, 2]]
  assert batch['observation_pad_mask'][order].tolist() == [
      [False, False, True], [False, True, True], [True, True, True]]
  assert batch['action'][order].tolist() == [[0, 1, 2], [1, 2, 2], [2, 2, 2]]
  assert batch['action_pad_mask'][order].tolist() == [
      [True, True, True], [True, True, False], [True, False, False]]


def test_priorities_after_eviction():
  sampler = replay.Prioritized(alpha=1.0, beta=1.0, eps=0.0)
  buffer = buffer_of([episode(4)], capacity=4, sampler=sampler)
  buffer.update_priority(np.arange(4), [1.0, 2.0, 3.0, 4.0])
  np.testing.assert_allclose(sampler.probabilities(np.arange(4)), [0.1, 0.2, 0.3, 0.4])
  buffer.add_episode({'steps': episode(2, base=50)})   # Overwrites slots 0 and 1.
  # New steps get the largest priority seen (4); the evicted ones are gone.
  np.testing.assert_allclose(sampler.probabilities(np.arange(4)),
                             np.array([4.0, 4.0, 3.0, 4.0]) / 15.0)
  buffer.update_priority([0], [0.0])
  assert sampler.probabilities(np.array([0]))[0] == 0.0


def test_prioritized_draws_follow_the_priorities():
  priorities = np.arange(1.0, 9.0)
  sampler = replay.Prioritized(alpha=0.5, beta=0.6, eps=0.0)
  buffer = buffer_of([episode(8)], capacity=8, sampler=sampler, seed=3)
  buffer.update_priority(np.arange(8), priorities)
  draws = 40_000
  _, info = buffer.sample(draws)
  expected = priorities ** 0.5 / np.sum(priorities ** 0.5)
  counts = np.bincount(info.indices, minlength=8)
  chi2 = np.sum((counts - draws * expected) ** 2 / (draws * expected))
  assert chi2 < 24.32   # chi-square, 7 degrees of freedom, p = 0.001.
  np.testing.assert_allclose(
      info.weights, (priorities[info.indices] ** 0.5 / 1.0) ** -0.6, rtol=1e-5)


def test_prioritized_slices_weigh_each_start():
  sampler = replay.Prioritized(alpha=1.0, beta=0.0, eps=0.0)
  buffer = buffer_of([episode(5)], kind=Windows(size=2), sampler=sampler)
  assert buffer.num_samples == 4
  _, info = buffer.sample(4)
  buffer.update_priority(info.indices, np.where(info.step_ids == 3, 1.0, 0.0))
  _, info = buffer.sample(50)
  assert set(info.step_ids.tolist()) == {3}


def test_rate_limiter_min_size_and_ratio_both_ways():
  limiter = replay.RateLimiter(min_size=3, samples_per_insert=2.0, error_buffer=4.0,
                               timeout=0.05)
  buffer = replay.ReplayBuffer(replay.MemoryStorage(16), rate_limiter=limiter)
  steps = episode(8)
  for t in range(2):
    buffer.add({k: v[t] for k, v in steps.items()})
  with pytest.raises(replay.RateLimitTimeout,
                     match=r'holds 2 of the 3 steps the rate limiter needs first'):
    buffer.sample(1)
  buffer.add({k: v[2] for k, v in steps.items()})
  # d = 3 * 2 - samples must stay >= 6 - 4 = 2 after sampling: 4 samples now.
  buffer.sample(4)
  with pytest.raises(replay.RateLimitTimeout, match='more inserts are needed'):
    buffer.sample(1)
  # Inserting: d + 2 must stay <= 6 + 4 = 10; d = 2 now, so 4 more inserts.
  for t in range(3, 7):
    buffer.add({k: v[t] for k, v in steps.items()})
  with pytest.raises(replay.RateLimitTimeout, match='the learner has not sampled enough'):
    buffer.add({k: v[7] for k, v in steps.items()})
  buffer.sample(2)
  buffer.add({k: v[7] for k, v in steps.items()})
  assert len(buffer) == 8


def test_max_times_sampled_removes_a_sample_after_k_draws():
  buffer = buffer_of([episode(3)], sampler=replay.WithoutReplacement(), max_times_sampled=2)
  _, first = buffer.sample(3)
  _, second = buffer.sample(3)
  assert sorted(first.step_ids.tolist()) == sorted(second.step_ids.tolist()) == [0, 1, 2]
  assert buffer.num_samples == 0
  with pytest.raises(ValueError, match='holds 3 steps but no sample'):
    buffer.sample(1)


def test_top_k_keeps_the_largest_keys():
  buffer = replay.ReplayBuffer(replay.MemoryStorage(3), writer=replay.TopK('reward'),
                               sampler=replay.WithoutReplacement())
  rewards = np.array([5.0, 1.0, 3.0, 4.0, 0.0, 6.0], np.float32)
  buffer.extend({'reward': rewards, 'observation': np.arange(6.0)})
  batch, _ = buffer.sample(3)
  assert sorted(batch['reward'].tolist()) == [4.0, 5.0, 6.0]


def test_memmap_storage_is_reopened_after_a_restart(tmp_path):
  path = str(tmp_path / 'buffer')
  buffer = replay.ReplayBuffer(replay.MemmapStorage(path, 16), kind=Windows(size=2),
                               sampler=replay.WithoutReplacement())
  buffer.add_episode({'steps': episode(5)})
  del buffer
  again = replay.ReplayBuffer(replay.MemmapStorage(path), kind=Windows(size=2),
                              sampler=replay.WithoutReplacement())
  assert (len(again), again.num_samples) == (5, 4)
  batch, info = one_epoch(again)
  order = np.argsort(info.step_ids)
  assert batch['observation'][order][:, :, 0].tolist() == [[0, 1], [1, 2], [2, 3], [3, 4]]


@pytest.mark.parametrize('make, call, error, match', [
    (lambda: buffer_of([episode(2)]), lambda b: b.add_episode({'steps': {
        **episode(2), 'observation': np.zeros([2, 3], np.float32)}}),
     ValueError, r"field 'observation' has shape \[3\] float32, but the buffer holds shape \[2\] float32"),
    (lambda: buffer_of([episode(2)], sampler=replay.Prioritized()),
     lambda b: b.update_priority([0, 1], [1.0, np.nan]), ValueError,
     r'the priority of index 1 is nan; priorities must be finite and >= 0'),
    (lambda: buffer_of([episode(2)], sampler=replay.Prioritized()),
     lambda b: b.update_priority([1], [-1.0]), ValueError, 'index 1 is -1.0'),
    (lambda: buffer_of([]), lambda b: b.sample(2), ValueError, 'the buffer is empty'),
    (lambda: buffer_of([episode(3)], kind=Windows(size=4)), lambda b: b.sample(2),
     ValueError, r'holds 3 steps but no sample of Windows\(size=4.*longest episode holds 3'),
    (lambda: buffer_of([]), lambda b: b.add({**{k: v[1] for k, v in episode(2).items()}}),
     ValueError, 'step 0 of these steps continues no episode'),
    (lambda: buffer_of([], capacity=3), lambda b: b.add_episode({'steps': episode(4)}),
     ValueError, '4 steps do not fit in a buffer of capacity 3'),
    (lambda: buffer_of([episode(3)], capacity=4, writer=replay.Immutable()),
     lambda b: b.add_episode({'steps': episode(2)}), ValueError,
     'the buffer is immutable .* holds 3 of 4 steps and cannot take 2 more'),
    (lambda: None, lambda b: replay.ReplayBuffer(replay.MemoryStorage(4), writer=replay.TopK(),
                                                 kind=Windows(2)),
     ValueError, r'keeps single steps; a kind .* needs writer=RoundRobin\(\)'),
    (lambda: buffer_of([episode(2)]), lambda b: b.update_priority([0], [1.0]), TypeError,
     r'update_priority needs sampler=Prioritized'),
    (lambda: None, lambda b: replay.ReplayBuffer(replay.MemoryStorage(4), kind=Windows),
     TypeError, 'kind must be None'),
])
def test_bad_input(make, call, error, match):
  buffer = make()
  with pytest.raises(error, match=match):
    call(buffer)


def test_nothing_half_added_is_sampled():
  buffer = buffer_of([episode(3)], sampler=replay.WithoutReplacement())
  with pytest.raises(ValueError):
    buffer.add_episode({'steps': {**episode(2), 'reward': np.zeros([2, 2], np.float32)}})
  assert (len(buffer), buffer.num_samples) == (3, 3)


def test_memmap_refuses_variable_length_strings(tmp_path):
  buffer = replay.ReplayBuffer(replay.MemmapStorage(str(tmp_path / 'b'), 4))
  with pytest.raises(ValueError, match=r"cannot hold the string field 'tag' of variable length"):
    buffer.add({'tag': b'x', 'is_first': True, 'is_last': True})


def test_repr_says_what_it_holds():
  buffer = buffer_of([episode(3), episode(2)], kind=Transitions(n=2))
  assert repr(buffer) == (
      "ReplayBuffer(MemoryStorage(capacity=64, 7 fields, 2.5 KB), sampler=Uniform(), "
      "writer=RoundRobin(evict='episode'), kind=Transitions(n=2, gamma=1.0, "
      "last_step='invalid'), 5 steps, 2 episodes)")


def test_nested_fields_images_and_strings_round_trip(tmp_path):
  frames = np.arange(3 * 4 * 4 * 3, dtype=np.uint8).reshape(3, 4, 4, 3)
  steps = {'observation': {'image': frames, 'state': np.eye(3, dtype=np.float64)},
           'language': np.array([b'pick', b'place', b''], object),
           'is_first': np.array([True, False, False]), 'is_last': np.array([False, False, True])}
  memory = replay.ReplayBuffer(replay.MemoryStorage(8), sampler=replay.WithoutReplacement())
  spec = {'observation/image': replay.Field((4, 4, 3), 'uint8'),
          'observation/state': replay.Field((3,), 'float64'),
          'language': replay.Field((), 'S8'), 'is_first': replay.Field((), 'bool'),
          'is_last': replay.Field((), 'bool')}
  mapped = replay.ReplayBuffer(replay.MemmapStorage(str(tmp_path / 'b'), 8, spec=spec),
                               sampler=replay.WithoutReplacement())
  for buffer in (memory, mapped):
    buffer.extend(steps)
    batch, info = one_epoch(buffer)
    order = np.argsort(info.step_ids)
    np.testing.assert_array_equal(batch['observation']['image'][order], frames)
    np.testing.assert_array_equal(batch['observation']['state'][order], np.eye(3))
    assert batch['language'][order].tolist() == [b'pick', b'place', b'']


def test_a_string_longer_than_its_width_is_refused(tmp_path):
  spec = {'language': replay.Field((), 'S4'), 'is_first': replay.Field((), 'bool'),
          'is_last': replay.Field((), 'bool')}
  buffer = replay.ReplayBuffer(replay.MemmapStorage(str(tmp_path / 'b'), 4, spec=spec))
  with pytest.raises(ValueError, match=r"field 'language' holds a string of 6 bytes, longer "
                     r"than the buffer's width 4 \(Field\(\(\), 'S4'\)\)"):
    buffer.add({'language': 'abcdef', 'is_first': True, 'is_last': True})
  assert len(buffer) == 0


def _kill_mid_write(buffer, slots):
  """What a writer killed after reserving ``slots`` more leaves: RESERVED ahead, the slots torn."""
  storage = buffer.storage
  storage.header[replay.storage.RESERVED] += len(slots)
  storage.columns['observation'][slots] = np.nan


@pytest.mark.parametrize('kind, samples, episodes', [
    (None, [2, 3, 4, 5], 2),                 # steps: the torn slots alone are gone
    (Windows(size=2), [3, 4], 1),            # slices: the torn episode is gone whole
])
def test_a_writer_killed_mid_write_leaves_its_slots_unreadable(kind, samples, episodes):
  buffer = buffer_of([episode(3, base=0), episode(3, base=3)], capacity=6, kind=kind,
                     sampler=replay.WithoutReplacement())
  _kill_mid_write(buffer, np.array([0, 1]))
  batch, info = one_epoch(buffer)
  assert sorted(info.indices.tolist()) == samples
  assert not np.isnan(batch['observation']).any()
  assert (len(buffer), buffer.num_episodes()) == (4, episodes)
  buffer.add_episode({'steps': episode(2, base=10)})    # the next writer reuses the torn slots
  batch, info = one_epoch(buffer)
  assert sorted(info.indices.tolist()) == sorted(samples + ([0, 1] if kind is None else [0]))
  assert len(buffer) == 6
