"""Offline data and a buffer: to_rlds / from_rlds, TED, exact mixing, log_to, against NumPy references."""

import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import rlds_lite
from rlds_lite import replay
from rlds_lite.replay import offline
from rlds_lite.sample_kinds import Transitions
from replay_testing import episode, flat


def rich(length, terminal=True, base=0):
  """`episode` with a nested float64 field, a tiny uint8 frame and a string per step."""
  steps = episode(length, terminal, base)
  t = np.arange(length)
  steps['observation'] = {'pos': steps['observation'],
                          'frame': np.full([length, 2, 2, 3], base % 250, np.uint8) + t[:, None, None, None].astype(np.uint8)}
  steps['value'] = (base + 0.1 * t).astype(np.float64)
  steps['note'] = np.array([f'e{base}s{i}'.encode() for i in t], object)
  return steps


def assert_steps_equal(got, want):
  got, want = flat(got), flat(want)
  assert sorted(got) == sorted(want)
  for path in want:
    assert got[path].dtype == want[path].dtype or want[path].dtype == object, path
    np.testing.assert_array_equal(got[path], want[path], err_msg=path)


# Named cases: a one-step episode, a terminal one, a truncated one (is_last, not terminal).
EPISODES = [rich(1, base=0), rich(4, base=10), rich(3, terminal=False, base=20)]


def buffer_of(episodes, capacity=64, **kwargs):
  buffer = replay.ReplayBuffer(replay.MemoryStorage(capacity), **kwargs)
  for steps in episodes:
    buffer.add_episode({'steps': steps})
  return buffer


@pytest.fixture(scope='module')
def written(tmp_path_factory):
  """The three named episodes written by `to_rlds` once (shared by the tests)."""
  path = buffer_of(EPISODES).to_rlds(str(tmp_path_factory.mktemp('rlds')), 'stored')
  return path


def test_to_rlds_loads_with_tfds_and_rlds_lite(written):
  builder = tfds.builder_from_directory(written)
  assert builder.info.splits['train'].num_examples == 3
  episodes = list(builder.as_dataset(split='train'))
  assert [len(list(e['steps'])) for e in episodes] == [1, 4, 3]
  source = rlds_lite.open(written)
  assert (source.num_episodes, source.num_steps) == (3, 8)


def test_round_trip_buffer_to_rlds_from_rlds_is_equal_field_by_field(written):
  back = replay.ReplayBuffer.from_rlds(rlds_lite.open(written))
  assert isinstance(back.writer, replay.Immutable) and back.storage.capacity == 8
  got = list(offline.stored_episodes(back))
  assert len(got) == 3
  for steps, want in zip(got, EPISODES):
    assert_steps_equal(steps, flat(want))
  # A path works as the opened value does; a transform sees each episode's nested steps.
  doubled = replay.ReplayBuffer.from_rlds(
      written, transform=lambda s: {**s, 'value': 2 * s['value']})
  np.testing.assert_array_equal(doubled.storage.columns['value'],
                                np.concatenate([2 * e['value'] for e in EPISODES]))
  # fields= reads only those (the flags always); encoded_images= leaves frames as PNG bytes.
  some = replay.ReplayBuffer.from_rlds(written, fields=['observation', 'reward'],
                                       encoded_images=True)
  assert sorted(some.storage.spec) == ['is_first', 'is_last', 'is_terminal', 'observation/frame',
                                       'observation/pos', 'reward']
  frames = some.storage.columns['observation/frame']
  assert frames.dtype == object and frames[0].startswith(b'\x89PNG')
  assert some.num_episodes() == 3


def test_from_rlds_into_a_memory_mapped_storage(written, tmp_path):
  storage = replay.MemmapStorage(str(tmp_path / 'buffer'), 8)
  with pytest.raises(ValueError, match="string field 'note' of variable length"):
    replay.ReplayBuffer.from_rlds(written, storage)
  buffer = replay.ReplayBuffer.from_rlds(
      written, replay.MemmapStorage(str(tmp_path / 'other'), 8), fields=['action', 'value'])
  reopened = replay.MemmapStorage(str(tmp_path / 'other'))
  np.testing.assert_array_equal(reopened.columns['value'],
                                np.concatenate([e['value'] for e in EPISODES]))
  assert len(buffer) == 8 and reopened.columns['value'].dtype == np.float64


def test_from_rlds_with_a_kind_samples_the_reference(tmp_path):
  kind = Transitions(n=2, gamma=0.5)
  steps = episode(5)
  source = buffer_of([steps]).to_rlds(str(tmp_path), 'five')
  buffer = replay.ReplayBuffer.from_rlds(source, kind=kind, sampler=replay.WithoutReplacement())
  batch, _ = buffer.sample(buffer.num_samples)
  reference = kind.reference(steps)
  order = np.argsort(batch['action'])
  for key in ('reward', 'discount', 'next_observation'):
    np.testing.assert_allclose(batch[key][order], np.asarray(reference[key]), err_msg=key)


def _stored(buffer, open_episodes='skip'):
  return list(offline.stored_episodes(buffer, open_episodes))


@pytest.mark.parametrize('evict', ['episode', 'cut'])
def test_eviction_across_an_episode_boundary_keeps_correct_flags(evict):
  # 3 episodes of 4 in 10 slots: the first loses its first two steps.
  episodes = [episode(4, base=b) for b in (0, 100, 200)]
  buffer = buffer_of(episodes, capacity=10, writer=replay.RoundRobin(evict=evict))
  got = _stored(buffer)
  if evict == 'episode':  # Evicted whole, as the buffer samples it.
    assert [e['action'].tolist() for e in got] == [[100, 101, 102, 103], [200, 201, 202, 203]]
  else:  # The rest kept, its first remaining step is_first.
    assert [e['action'].tolist() for e in got] == [[2, 3], [100, 101, 102, 103],
                                                     [200, 201, 202, 203]]
    assert got[0]['is_first'].tolist() == [True, False]
    assert got[0]['is_last'].tolist() == [False, True]
    assert got[0]['is_terminal'].tolist() == [False, True]
  for e in got:
    assert e['is_first'][0] and e['is_last'][-1] and e['is_first'].sum() == e['is_last'].sum() == 1


def test_an_open_episode_is_skipped_or_written_truncated():
  buffer = buffer_of([episode(3)])
  following = episode(4, base=50)
  for t in range(2):  # Two of its four steps added.
    buffer.add({k: v[t] for k, v in following.items()})
  assert [e['action'].tolist() for e in _stored(buffer)] == [[0, 1, 2]]
  truncated = _stored(buffer, 'truncate')
  assert [e['action'].tolist() for e in truncated] == [[0, 1, 2], [50, 51]]
  assert truncated[1]['is_last'].tolist() == [False, True]
  assert truncated[1]['is_terminal'].tolist() == [False, False]
  # The buffer itself still holds the open episode as open.
  assert not buffer.storage.columns['is_last'][4]


def test_an_episode_evicted_while_it_is_being_written_is_left_out():
  buffer = buffer_of([episode(2, base=0), episode(2, base=10), episode(4, base=20)], capacity=8)
  episodes = offline.stored_episodes(buffer)
  assert next(episodes)['action'].tolist() == [0, 1]
  buffer.add_episode({'steps': episode(6, base=30)})  # Overwrites episode 10 and 20's head.
  assert list(episodes) == []
  assert [e['action'].tolist() for e in _stored(buffer)] == [[30, 31, 32, 33, 34, 35]]


def test_steps_without_flags_are_written_as_one_step_episodes():
  buffer = replay.ReplayBuffer(replay.MemoryStorage(4))
  buffer.extend({'reward': np.array([1., 2.], np.float32)})
  got = _stored(buffer)
  assert [(e['reward'].tolist(), e['is_first'].tolist(), e['is_last'].tolist(),
           e['is_terminal'].tolist()) for e in got] == [([1.], [True], [True], [False]),
                                                        ([2.], [True], [True], [False])]


def test_to_rlds_bad_input_is_one_clear_error(tmp_path):
  with pytest.raises(ValueError, match=r"holds no episode to write \(0 steps stored"):
    replay.ReplayBuffer(replay.MemoryStorage(4)).to_rlds(str(tmp_path), 'empty')
  buffer = replay.ReplayBuffer(replay.MemoryStorage(4))
  buffer.add({k: v[0] for k, v in episode(3).items()})
  with pytest.raises(ValueError, match=r"1 steps stored, open_episodes='skip'.*'truncate'"):
    buffer.to_rlds(str(tmp_path), 'open')
  with pytest.raises(ValueError, match=r"open_episodes must be one of \('skip', 'truncate'\)"):
    buffer.to_rlds(str(tmp_path), 'open', open_episodes='keep')
  top = replay.ReplayBuffer(replay.MemoryStorage(4), writer=replay.TopK('reward'))
  top.extend(episode(3))
  with pytest.raises(ValueError, match=r"TopK\(key='reward'\) keeps single steps, not episodes"):
    top.to_rlds(str(tmp_path), 'top')
  assert not os.listdir(tmp_path)  # Nothing half-written.


def test_from_rlds_bad_input_is_one_clear_error(written):
  with pytest.raises(FileNotFoundError, match="'/no/such/dataset' does not exist"):
    replay.ReplayBuffer.from_rlds('/no/such/dataset')
  episodes = tf.data.Dataset.from_tensors({'steps': {'reward': [1.0], 'is_first': [True],
                                                     'is_last': [True]}})
  with pytest.raises(ValueError, match=r'capacity of a tf.data.Dataset .* pass storage='):
    replay.ReplayBuffer.from_rlds(episodes)
  assert len(replay.ReplayBuffer.from_rlds(episodes, replay.MemoryStorage(2))) == 1
  with pytest.raises(ValueError, match=r'from_rlds: episode 1: the buffer is immutable .* holds 1 of 4 steps and cannot take 4 more'):
    replay.ReplayBuffer.from_rlds(written, replay.MemoryStorage(4))
  spec = {'reward': replay.Field((), 'float32'), 'is_first': replay.Field((), 'bool'),
          'is_last': replay.Field((), 'bool')}
  with pytest.raises(ValueError, match=r"from_rlds: episode 0: episode has fields .* \(missing \[\], "
                                       r"unexpected \['action'"):
    replay.ReplayBuffer.from_rlds(written, replay.MemoryStorage(8, spec=spec))
  with pytest.raises(TypeError, match="from_rlds: episode 0 is not a dict with 'steps'"):
    replay.ReplayBuffer.from_rlds([{'reward': [1.0]}], replay.MemoryStorage(2))
  with pytest.raises(TypeError, match=r'use replay.decoded_cache\(source, path, image_size=...\)'):
    replay.ReplayBuffer.from_rlds(written, image_size=(64, 64))


# TED.
def test_ted_round_trip_through_the_buffer():
  # TED has no row for an RLDS last step: its action, reward and discount come back zero.
  episodes = [episode(1), episode(4, base=10), episode(3, terminal=False, base=20)]
  for steps in episodes:
    for key in ('action', 'reward', 'discount'):
      steps[key][-1] = 0
  buffer = buffer_of(episodes)
  rows = replay.to_ted(buffer, one_step='skip')
  assert rows['action'].tolist() == [10, 11, 12, 20, 21]
  assert rows['next']['terminated'][:, 0].tolist() == [False, False, True, False, False]
  assert rows['next']['truncated'][:, 0].tolist() == [False, False, False, False, True]
  back = replay.from_ted(rows, sampler=replay.WithoutReplacement())
  assert back.storage.capacity == 7
  got = _stored(back)
  for steps, want in zip(got, episodes[1:]):
    assert_steps_equal(steps, want)
  with pytest.raises(ValueError, match=r"episode 0, field 'is_last': has one step .* pass one_step='skip'"):
    replay.to_ted(buffer)


# Mixing.
def _constant_buffer(value, steps=16, **kwargs):
  buffer = replay.ReplayBuffer(replay.MemoryStorage(steps), seed=int(value), **kwargs)
  buffer.extend({'reward': np.full([steps], value, np.float32),
                 'step': np.arange(steps, dtype=np.int64)})
  return buffer


def test_mix_has_exact_counts_in_every_batch():
  online = _constant_buffer(1, sampler=replay.Prioritized())
  both = replay.mix({'offline': _constant_buffer(0), 'online': online},
                    {'offline': 0.5, 'online': 0.5}, 64)
  assert repr(both) == "Mix({'offline': 32, 'online': 32} per batch of 64)"
  for _ in range(50):
    batch, info = both.sample()
    assert batch['reward'].tolist() == [0.0] * 32 + [1.0] * 32
    assert info.sources.tolist() == [0] * 32 + [1] * 32 and info.names == ('offline', 'online')
    np.testing.assert_array_equal(info.indices, batch['step'])
    assert info.weights.shape == (64,)
  # Rounded like pipeline.mix(exact=True): 0.3 / 0.7 of 10.
  thirds = replay.mix({'a': _constant_buffer(0), 'b': _constant_buffer(1)}, {'a': 0.3, 'b': 0.7}, 10)
  assert thirds.counts == [3, 7]
  batch, _ = replay.mix({'a': _constant_buffer(0), 'b': _constant_buffer(1)},
                        counts={'a': 1, 'b': 3}).sample()
  assert batch['reward'].tolist() == [0.0, 1.0, 1.0, 1.0]


def test_mix_update_priority_goes_to_each_sample_s_own_buffer():
  offline_buffer, online = _constant_buffer(0), _constant_buffer(1, sampler=replay.Prioritized(alpha=1.0))
  both = replay.mix({'offline': offline_buffer, 'online': online}, counts={'offline': 2, 'online': 2})
  _, info = both.sample()
  priorities = np.array([9.0, 9.0, 5.0, 5.0])
  both.update_priority(info, priorities)
  p = online.sampler.probabilities(np.arange(16))
  touched = np.unique(info.indices[2:])
  expected = np.ones(16)
  expected[touched] = 5.0 + online.sampler.eps
  np.testing.assert_allclose(p, expected / expected.sum())


def test_mix_an_rlds_dataset_with_a_buffer_of_the_same_kind(tmp_path):
  kind = Transitions(n=1)
  offline_path = buffer_of([episode(6, base=100)]).to_rlds(str(tmp_path), 'offline')
  online = buffer_of([episode(6, base=0)], kind=kind)
  both = replay.mix({'offline': rlds_lite.open(offline_path), 'online': online},
                    {'offline': 0.5, 'online': 0.5}, 8)
  assert both.buffers['offline'].kind == kind
  batch, info = both.sample()
  assert (batch['action'][:4] >= 100).all() and (batch['action'][4:] < 100).all()
  np.testing.assert_array_equal(batch['next_observation'][:, 0], batch['observation'][:, 0] + 1)


def test_mix_bad_input_is_one_clear_error():
  a, b = _constant_buffer(0), _constant_buffer(1)
  with pytest.raises(ValueError, match=r'sum to 1.2'):
    replay.mix({'a': a, 'b': b}, {'a': 0.6, 'b': 0.6}, 8)
  with pytest.raises(ValueError, match=r"batch_size 4 gives 'b' \(weight 0.1\) no row"):
    replay.mix({'a': a, 'b': b}, {'a': 0.9, 'b': 0.1}, 4)
  with pytest.raises(ValueError, match=r"weights must be a dict with exactly the keys \['a', 'b'\]"):
    replay.mix({'a': a, 'b': b}, {'a': 1.0}, 4)
  with pytest.raises(ValueError, match='give counts= or weights= with batch_size=, not both'):
    replay.mix({'a': a, 'b': b}, {'a': 0.5, 'b': 0.5}, 4, counts={'a': 2, 'b': 2})
  other = replay.ReplayBuffer(replay.MemoryStorage(4))
  other.extend({'reward': np.ones([4], np.float64), 'step': np.arange(4)})
  with pytest.raises(ValueError, match=r"samples of 'c' and 'a' differ in field 'reward': "
                                       r"float64 \[\] in 'c', float32 \[\] in 'a'"):
    replay.mix({'a': a, 'c': other}, counts={'a': 1, 'c': 1}).sample()
  with pytest.raises(FileNotFoundError, match=r"mix: 'd' is neither a ReplayBuffer nor a readable"):
    replay.mix({'a': a, 'd': '/no/such/dataset'}, counts={'a': 1, 'd': 1})


# log_to.
def test_log_to_keeps_every_episode_the_buffer_evicts(tmp_path):
  episodes = [episode(3, base=10 * i, terminal=i % 2 == 0) for i in range(5)]
  log = replay.RLDSLog(str(tmp_path), 'seen', publish_every=2)
  buffer = buffer_of([], capacity=6, log_to=log)
  for i, steps in enumerate(episodes):
    if i == 4:  # Step by step: logged when its is_last step arrives.
      for t in range(3):
        buffer.add({k: v[t] for k, v in steps.items()})
    else:
      buffer.add_episode({'steps': steps})
    if i == 2:  # A crash now keeps the 2 published episodes: the dataset loads with them.
      assert rlds_lite.open(log.path).num_episodes == 2
  assert buffer.num_episodes() == 2
  path = log.close()
  assert (log.num_logged, log.num_published) == (5, 5)
  got = [e['steps'] for e in rlds_lite.load(path, dense=True).as_numpy_iterator()]
  assert len(got) == 5
  for steps, want in zip(got, episodes):
    assert_steps_equal(steps, want)


def test_log_to_on_close_writes_an_open_episode_truncated_or_drops_it(tmp_path):
  for open_episodes, expected in (('truncate', [[0, 1, 2], [7, 8]]), ('skip', [[0, 1, 2]])):
    log = replay.RLDSLog(str(tmp_path), f'log_{open_episodes}', open_episodes=open_episodes)
    buffer = buffer_of([episode(3)], capacity=8, log_to=log)
    buffer.extend({k: v[:2] for k, v in episode(4, base=7).items()})
    assert log.num_logged == 1
    path = log.close()
    got = [e['steps'] for e in rlds_lite.load(path, dense=True).as_numpy_iterator()]
    assert [s['action'].tolist() for s in got] == expected
    assert [s['is_last'].tolist()[-1] for s in got] == [True] * len(expected)
    assert got[-1]['is_terminal'].tolist()[-1] == (open_episodes == 'skip')


def test_log_to_bad_input_is_one_clear_error(tmp_path):
  with pytest.raises(TypeError, match=r'log_to must be a log such as replay.RLDSLog'):
    replay.ReplayBuffer(replay.MemoryStorage(4), log_to=str(tmp_path))
  with replay.RLDSLog(str(tmp_path), 'taken', publish_every=1) as log:
    buffer_of([episode(2)], log_to=log)
  with pytest.raises(FileExistsError, match=r"dataset 'taken' already exists .* if_exists='append'"):
    replay.RLDSLog(str(tmp_path), 'taken')
  with replay.RLDSLog(str(tmp_path), 'taken', if_exists='append') as log:
    buffer_of([episode(2, base=5)], log_to=log)
  assert rlds_lite.open(log.path).num_episodes == 2
  with pytest.raises(ValueError, match='publish_every must be a positive int'):
    replay.RLDSLog(str(tmp_path), 'x', publish_every=0)
  with pytest.raises(ValueError, match='add after close'):
    log.add({'reward': np.zeros([1])}, np.zeros([1], np.int64), True)


_KILLED_ACTOR = '''
import os, signal, sys
import numpy as np
sys.path.insert(0, {tests!r})
from rlds_lite import replay
from replay_testing import episode
log = replay.RLDSLog({data_dir!r}, 'killed', publish_every=2)
buffer = replay.ReplayBuffer(replay.MemoryStorage(8), log_to=log)
for i in range(3):
  buffer.add_episode({{'steps': episode(3, base=10 * i)}})
buffer.add({{k: v[0] for k, v in episode(3, base=30).items()}})
os.kill(os.getpid(), signal.SIGKILL)   # Episode 2 written but unpublished, episode 3 open.
'''


def test_a_killed_log_loses_only_what_it_had_not_published(tmp_path):
  tests = os.path.dirname(os.path.abspath(__file__))
  code = _KILLED_ACTOR.format(tests=tests, data_dir=str(tmp_path))
  env = {**os.environ, 'PYTHONPATH': os.pathsep.join(
      [os.path.dirname(os.path.dirname(tests))] + sys.path)}
  done = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, timeout=300)
  assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]
  path = os.path.join(str(tmp_path), 'killed', '1.0.0')
  got = [e['steps']['action'].tolist()
         for e in rlds_lite.load(path, dense=True).as_numpy_iterator()]
  assert got == [[0, 1, 2], [10, 11, 12]]
  # The next log appends; what the killed one left unpublished is removed.
  with replay.RLDSLog(str(tmp_path), 'killed', if_exists='append') as log:
    buffer_of([episode(2, base=50)], log_to=log)
  got = [e['steps']['action'].tolist()
         for e in rlds_lite.load(path, dense=True).as_numpy_iterator()]
  assert got == [[0, 1, 2], [10, 11, 12], [50, 51]]
  assert tfds.builder_from_directory(path).info.splits["train"].num_examples == 3
  assert sorted(os.listdir(path)) == ['dataset_info.json', 'features.json',
                                      'killed-train.tfrecord-00000', 'killed-train.tfrecord-00001']
