"""as_dataset: the batches `sample` would draw, the documented priority-update lag, rate limiting, Keras and JAX."""

import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite import replay
from rlds_lite.replay import storage as storage_lib
from rlds_lite.sample_kinds import Transitions
from rlds_lite.sample_kinds import Windows
from tests.replay import replay_testing


def _episodes(buffer, language=False):
  for i, length in enumerate([6, 1, 9, 4]):
    steps = replay_testing.episode(length, terminal=i % 2 == 0, base=100 * i)
    if language:
      steps['language'] = np.array([f'pick {i}'] * length, object)
    buffer.add_episode({'steps': steps})
  return buffer


@pytest.mark.parametrize('sampler,kind,language', [
    (replay.Prioritized(alpha=0.8), Transitions(n=2, gamma=0.5), False),
    (replay.WithoutReplacement(), None, True),
    (replay.Uniform(), Windows(size=3, drop_remainder=False), False),
])
def test_the_dataset_draws_what_sample_would(sampler, kind, language, tmp_path):
  buffer = _episodes(replay.ReplayBuffer(replay.MemoryStorage(16), sampler=sampler,
                                         kind=kind, seed=5), language)
  twin = replay.ReplayBuffer.restore(buffer.save(str(tmp_path / 'ckpt')))
  got = list(buffer.as_dataset(5, prefetch=2, chunk=3).take(7))
  for batch, info in got:
    want, want_info = twin.sample(5)
    assert sorted(batch) == sorted(want)
    for key, value in want.items():
      expected = value.astype(bytes) if value.dtype == object else value
      np.testing.assert_array_equal(batch[key].numpy(), expected, err_msg=key)
    for field in ('indices', 'episode_ids', 'step_ids', 'weights'):
      np.testing.assert_array_equal(info[field].numpy(), getattr(want_info, field))
  assert info['weights'].dtype == tf.float32 and info['indices'].dtype == tf.int64


def _poll(condition, seconds=20.0):
  deadline = time.monotonic() + seconds
  while not condition():
    assert time.monotonic() < deadline, 'the pipeline did not fill'
    time.sleep(0.01)


@pytest.mark.parametrize('prefetch,chunk,received', [(0, 1, 0), (2, 3, 0), (2, 3, 1)])
def test_an_update_affects_the_documented_batch(prefetch, chunk, received):
  """After batch ``j``, a full pipeline has drawn through the chunk holding ``j + prefetch``."""
  buffer = replay.ReplayBuffer(replay.MemoryStorage(64),
                               sampler=replay.Prioritized(alpha=1.0, beta=0.0, eps=0.0))
  buffer.extend({'reward': np.arange(64, dtype=np.float32)})
  batches = iter(buffer.as_dataset(8, prefetch=prefetch, chunk=chunk))
  for _ in range(received + 1):
    next(batches)
  first_fresh = chunk * ((received + prefetch) // chunk + 1)
  _poll(lambda: buffer.storage.header[storage_lib.SAMPLED] == 8 * first_fresh)
  time.sleep(0.05)
  assert buffer.storage.header[storage_lib.SAMPLED] == 8 * first_fresh  # Waits, drawing nothing.
  buffer.update_priority(np.arange(64), (np.arange(64) == 5).astype(float))
  assert first_fresh <= received + prefetch + chunk   # The documented bound.
  for j in range(received + 1, first_fresh + 3):
    slots = next(batches)[1]['indices'].numpy()
    assert (slots == 5).all() == (j >= first_fresh), (j, slots)


def test_the_rate_limiter_blocks_politely_then_times_out_clearly():
  limiter = replay.RateLimiter(min_size=10, timeout=20.0)
  buffer = replay.ReplayBuffer(replay.MemoryStorage(32), rate_limiter=limiter)
  buffer.extend({'reward': np.ones([4], np.float32)})
  batches = iter(buffer.as_dataset(4, prefetch=0, chunk=1))
  adder = threading.Timer(0.6, lambda: buffer.extend({'reward': np.ones([6], np.float32)}))
  start, cpu = time.monotonic(), time.process_time()
  adder.start()
  batch, _ = next(batches)
  assert time.monotonic() - start >= 0.6 and batch['reward'].shape == [4]
  assert time.process_time() - cpu < 0.4   # Slept, did not spin.
  starved = replay.ReplayBuffer(replay.MemoryStorage(32), rate_limiter=replay.RateLimiter(
      min_size=10, timeout=0.1))
  starved.extend({'reward': np.ones([4], np.float32)})
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'as_dataset stopped: RateLimitTimeout: sampling 4: the buffer '
                     r'holds 4 of the 10 steps') as raised:
    next(iter(starved.as_dataset(4)))
  assert 'Traceback' not in str(raised.value)


def test_bad_requests():
  buffer = replay.ReplayBuffer(replay.MemoryStorage(8))
  with pytest.raises(ValueError, match=r'holds no steps and its storage no spec yet'):
    buffer.as_dataset(4)
  empty = replay.ReplayBuffer(replay.MemoryStorage(8, spec={'reward': replay.Field((), 'float32')}))
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'as_dataset stopped: ValueError: sample: the buffer is empty'):
    next(iter(empty.as_dataset(4)))
  for bad in ({'batch_size': 0}, {'batch_size': 2, 'prefetch': -1},
              {'batch_size': 2, 'chunk': True}):
    with pytest.raises(ValueError, match=r'as_dataset: \w+ must be an int >= '):
      empty.as_dataset(**bad)


@pytest.fixture(scope='module')
def transitions():
  return _episodes(replay.ReplayBuffer(replay.MemoryStorage(32), kind=Transitions(n=1),
                                       sampler=replay.Prioritized(), seed=0))


def test_keras_fit(transitions):
  model = tf.keras.Sequential([tf.keras.Input([2]), tf.keras.layers.Dense(1)])
  model.compile(optimizer='sgd', loss='mse')
  ds = transitions.as_dataset(8).map(
      lambda batch, info: (batch['observation'], batch['reward'], info['weights']))
  history = model.fit(ds, steps_per_epoch=3, epochs=1, verbose=0)
  assert np.isfinite(history.history['loss'][0])


def test_jax_iterator(transitions):
  jax = pytest.importorskip('jax')
  from rlds_lite.frameworks import as_jax_iterator  # pylint: disable=g-import-not-at-top
  ds = transitions.as_dataset(8).map(lambda b, i: {'obs': b['next_observation'],
                                                  'weights': i['weights']})
  out = list(as_jax_iterator(ds.take(2), prefetch=1))
  assert len(out) == 2 and isinstance(out[0]['obs'], jax.Array)
  assert out[0]['obs'].shape == (8, 2) and out[1]['weights'].dtype == np.float32


def test_python_exits_with_an_iterator_alive():
  import os, subprocess, sys  # pylint: disable=g-import-not-at-top,multiple-imports
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  script = ('import numpy as np\nfrom rlds_lite import replay\n'
            'buffer = replay.ReplayBuffer(replay.MemoryStorage(64))\n'
            "buffer.extend({'observation': np.zeros([64, 8], np.float32)})\n"
            'it = iter(buffer.as_dataset(4, chunk=4))\n'
            'for _ in range(3):\n  next(it)\nprint("done")\n')
  done = subprocess.run([sys.executable, '-c', script], cwd=root, capture_output=True,
                        env=dict(os.environ, PYTHONPATH=root, TF_CPP_MIN_LOG_LEVEL='3'),
                        timeout=120)
  assert (done.returncode, done.stdout.strip()) == (0, b'done'), done.stderr[-2000:]
