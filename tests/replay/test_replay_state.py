"""save/restore hold a buffer's exact state: a restored buffer samples exactly what the original would have."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from rlds_lite import replay
from rlds_lite.replay import checkpoint
from rlds_lite.sample_kinds import Transitions
from rlds_lite.sample_kinds import Windows
from tests.replay import replay_testing

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _with_language(steps, base):
  steps = dict(steps)
  steps['language'] = np.array([f'go {base + t}' for t in range(len(steps['action']))], object)
  return steps


def _fill(buffer, base=0, language=False):
  """Episodes past the capacity (eviction), then an open episode of 3 steps."""
  for i, length in enumerate([7, 1, 9, 5, 8]):
    steps = replay_testing.episode(length, terminal=i % 2 == 0, base=base + 100 * i)
    buffer.add_episode({'steps': _with_language(steps, base) if language else steps})
  steps = replay_testing.episode(6, base=base + 900)
  if language:
    steps = _with_language(steps, base)
  for t in range(3):
    buffer.add({k: v[t] for k, v in steps.items()})
  return steps


def _continue(buffer, open_steps, batches=4, batch_size=5):
  """Finishes the open episode (unless None), adds one more, and samples (updating priorities)."""
  for t in range(3, 6) if open_steps is not None else ():
    buffer.add({k: v[t] for k, v in open_steps.items()})
  out = []
  for b in range(batches):
    batch, info = buffer.sample(batch_size)
    if isinstance(buffer.sampler, replay.Prioritized):
      buffer.update_priority(info.indices, (info.indices % 7 + b).astype(np.float64))
    out.append((batch, info))
    if b == 1 and open_steps is not None:
      steps = replay_testing.episode(4, base=700)
      if 'language' in buffer.storage.spec:
        steps = _with_language(steps, 700)
      buffer.add_episode({'steps': steps})
  return out


def _assert_same(left, right):
  assert len(left) == len(right)
  for (batch_a, info_a), (batch_b, info_b) in zip(left, right):
    assert sorted(batch_a) == sorted(batch_b)
    for key in batch_a:
      np.testing.assert_array_equal(batch_a[key], batch_b[key], err_msg=key)
    for field in ('indices', 'episode_ids', 'step_ids', 'weights'):
      np.testing.assert_array_equal(getattr(info_a, field), getattr(info_b, field))


CASES = {
    'uniform_steps': dict(sampler=replay.Uniform()),
    'without_replacement_windows': dict(sampler=replay.WithoutReplacement(),
                                        kind=Windows(size=3)),
    'prioritized_transitions': dict(sampler=replay.Prioritized(alpha=0.7, beta=0.5),
                                    kind=Transitions(n=2, gamma=0.9)),
    'prioritized_cut_max_times_limited': dict(
        sampler=replay.Prioritized(), writer=replay.RoundRobin(evict='cut'),
        kind=Windows(size=2), max_times_sampled=3,
        rate_limiter=replay.RateLimiter(min_size=4, samples_per_insert=4.0,
                                        error_buffer=200.0, timeout=1.0)),
    'top_k_steps': dict(sampler=replay.WithoutReplacement(), writer=replay.TopK('reward')),
}


@pytest.mark.parametrize('case', sorted(CASES))
def test_restore_mid_stream_samples_exactly_what_the_original_would(case, tmp_path):
  buffer = replay.ReplayBuffer(replay.MemoryStorage(24), seed=3, **CASES[case])
  open_steps = _fill(buffer, language=case == 'uniform_steps')
  _continue(buffer, None, batches=3)  # Mid-epoch, priorities updated, an episode open.
  path = buffer.save(str(tmp_path / 'ckpt'))
  restored = replay.ReplayBuffer.restore(path)
  assert repr(restored) == repr(buffer)
  assert restored.num_samples == buffer.num_samples
  _assert_same(_continue(buffer, open_steps), _continue(restored, open_steps))
  assert repr(restored) == repr(buffer)
  np.testing.assert_array_equal(restored.storage.header, buffer.storage.header)
  np.testing.assert_array_equal(restored.times_sampled, buffer.times_sampled)


def test_strings_keep_str_and_bytes(tmp_path):
  buffer = replay.ReplayBuffer(replay.MemoryStorage(4))
  buffer.extend({'text': np.array(['é', b'\x00b', ''], object), 'reward': np.ones([3])})
  restored = replay.ReplayBuffer.restore(buffer.save(str(tmp_path / 'ckpt')))
  assert restored.storage.columns['text'].tolist() == ['é', b'\x00b', '', b'']


@pytest.fixture(scope='module')
def saved(tmp_path_factory):
  buffer = replay.ReplayBuffer(replay.MemoryStorage(24), sampler=replay.Prioritized(),
                               kind=Transitions(n=2), seed=0)
  _fill(buffer)
  return buffer, buffer.save(str(tmp_path_factory.mktemp('state') / 'ckpt'))


def test_restore_onto_another_storage_is_refused(saved, tmp_path):
  _, path = saved
  spec = dict(saved[0].storage.spec)
  with pytest.raises(ValueError, match=r'holds a MemoryStorage, not a MemmapStorage'):
    replay.ReplayBuffer.restore(path, replay.MemmapStorage(str(tmp_path / 'm'), 24))
  with pytest.raises(ValueError, match=r'holds a buffer of capacity 24, not 25'):
    replay.ReplayBuffer.restore(path, replay.MemoryStorage(25))
  spec['reward'] = replay.Field((2,), 'float32')
  with pytest.raises(ValueError, match=r"holds field 'reward' as shape \[\] float32, the storage as shape \[2\] float32: another spec"):
    replay.ReplayBuffer.restore(path, replay.MemoryStorage(24, spec=spec))
  full = replay.ReplayBuffer(replay.MemoryStorage(24))
  full.extend({'reward': np.ones([2])})
  with pytest.raises(ValueError, match=r'is not empty; restore into a new storage'):
    replay.ReplayBuffer.restore(path, full.storage)


def _copy(path, tmp_path):
  import shutil  # pylint: disable=g-import-not-at-top
  copy = str(tmp_path / 'copy')
  shutil.copytree(path, copy)
  return copy


def test_a_corrupt_or_truncated_checkpoint_names_its_file(saved, tmp_path):
  copy = _copy(saved[1], tmp_path)
  column = os.path.join(copy, 'storage.column-3.npy')
  data = bytearray(open(column, 'rb').read())
  data[-1] ^= 1
  open(column, 'wb').write(bytes(data))
  with pytest.raises(ValueError, match=rf'{column} is missing, corrupt or truncated'):
    replay.ReplayBuffer.restore(copy)
  open(column, 'wb').write(bytes(data[:-20]))
  with pytest.raises(ValueError, match=rf'{column} is missing, corrupt or truncated'):
    replay.ReplayBuffer.restore(copy)
  manifest = os.path.join(copy, checkpoint.MANIFEST)
  text = open(manifest).read()
  open(manifest, 'w').write(text[:len(text) // 2])
  with pytest.raises(ValueError, match=rf'{manifest} is corrupt or truncated'):
    replay.ReplayBuffer.restore(copy)
  open(manifest, 'w').write(text.replace('"seed": 0', '"seed": 1'))
  with pytest.raises(ValueError, match=rf'{manifest} is corrupt or truncated'):
    replay.ReplayBuffer.restore(copy)
  with pytest.raises(FileNotFoundError, match=r'holds no replay checkpoint'):
    replay.ReplayBuffer.restore(str(tmp_path / 'nothing'))


def test_save_replaces_only_a_checkpoint(tmp_path):
  (tmp_path / 'mine').mkdir()
  (tmp_path / 'mine' / 'notes.txt').write_text('keep')
  buffer = replay.ReplayBuffer(replay.MemoryStorage(4))
  with pytest.raises(FileExistsError, match=r'exists and is not a replay checkpoint'):
    buffer.save(str(tmp_path / 'mine'))
  assert (tmp_path / 'mine' / 'notes.txt').read_text() == 'keep'


def test_memmap_save_copies_the_files(tmp_path):
  spec = {'observation': replay.Field((2,), 'float32'), 'action': replay.Field((), 'int64'),
          'reward': replay.Field((), 'float32'), 'discount': replay.Field((), 'float32'),
          'is_first': replay.Field((), 'bool'), 'is_last': replay.Field((), 'bool'),
          'is_terminal': replay.Field((), 'bool')}
  buffer = replay.ReplayBuffer(replay.MemmapStorage(str(tmp_path / 'live'), 24, spec=spec),
                               sampler=replay.WithoutReplacement(), kind=Windows(size=2))
  open_steps = _fill(buffer)
  path = buffer.save(str(tmp_path / 'ckpt'))
  with pytest.raises(ValueError, match=r'holds a MemmapStorage; give storage=MemmapStorage'):
    replay.ReplayBuffer.restore(path)
  restored = replay.ReplayBuffer.restore(
      path, replay.MemmapStorage(str(tmp_path / 'other'), 24))
  _assert_same(_continue(buffer, open_steps), _continue(restored, open_steps))
  buffer.storage.columns['reward'][:] = -1   # The live files change; the checkpoint does not.
  again = replay.ReplayBuffer.restore(path, replay.MemmapStorage(str(tmp_path / 'third'), 24))
  assert (again.storage.columns['reward'][again.storage.readable()] > 0).all()


def test_a_failed_save_leaves_the_old_checkpoint(saved, tmp_path, monkeypatch):
  path = _copy(saved[1], tmp_path)
  buffer = replay.ReplayBuffer(replay.MemoryStorage(8))
  buffer.extend({'reward': np.ones([2])})
  calls = []

  def failing(*args, **kwargs):
    calls.append(args[0])
    if len(calls) == 3:
      raise OSError('disk full')
    with open(args[0], 'wb') as f:
      np.lib.format.write_array(f, args[1], allow_pickle=False)

  monkeypatch.setattr(checkpoint.np, 'save', failing)
  with pytest.raises(OSError, match='disk full'):
    buffer.save(path)
  monkeypatch.undo()
  assert sorted(os.listdir(tmp_path)) == ['copy']
  assert checkpoint.describe(path) == ('MemoryStorage', 24)


@pytest.mark.parametrize('step', ['output_set_aside'])
def test_a_kill_mid_save_leaves_the_old_checkpoint(step, saved, tmp_path):
  path = _copy(saved[1], tmp_path)
  script = textwrap.dedent(f'''
      import numpy as np
      from rlds_lite import replay
      buffer = replay.ReplayBuffer(replay.MemoryStorage(8))
      buffer.extend({{'reward': np.ones([2])}})
      buffer.save({path!r})
  ''')
  env = dict(os.environ, RLDS_LITE_FAULT_KILL_AT=step, PYTHONPATH=ROOT,
             TF_CPP_MIN_LOG_LEVEL='3')
  done = subprocess.run([sys.executable, '-c', script], env=env, cwd=ROOT,
                        capture_output=True, timeout=120)
  assert done.returncode == -9, done.stderr.decode()[-2000:]
  with pytest.raises(FileNotFoundError, match=r'its writer died while replacing it'):
    replay.ReplayBuffer.restore(path)
  aside, = [p for p in os.listdir(tmp_path) if p.startswith('.copy.replaced-')]
  assert checkpoint.describe(str(tmp_path / aside)) == ('MemoryStorage', 24)   # Whole.
  buffer = replay.ReplayBuffer(replay.MemoryStorage(8))
  buffer.extend({'reward': np.ones([3])})
  buffer.save(path)   # The next save puts the old one back, then replaces it.
  assert len(replay.ReplayBuffer.restore(path)) == 3
  assert sorted(os.listdir(tmp_path)) == ['copy']


def test_an_empty_buffer_round_trips(tmp_path):
  empty = replay.ReplayBuffer(replay.MemmapStorage(str(tmp_path / 'live'), 8), kind=Windows(size=2))
  restored = replay.ReplayBuffer.restore(empty.save(str(tmp_path / 'ckpt')),
                                         replay.MemmapStorage(str(tmp_path / 'again'), 8))
  assert (len(restored), restored.storage.spec) == (0, None)
  restored.add_episode({'steps': replay_testing.episode(3)})
  assert restored.num_samples == 2


def test_restore_takes_a_log_again(saved):
  class Log:
    def __init__(self):
      self.added = []

    def add(self, values, episode_ids, closed):
      self.added.append((len(episode_ids), closed))

  log = Log()
  restored = replay.ReplayBuffer.restore(saved[1], log_to=log)
  restored.add({k: v[3] for k, v in replay_testing.episode(6, base=900).items()})
  assert restored.log_to is log and log.added == [(1, False)]
