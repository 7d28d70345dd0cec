"""The replay benchmark's workloads and worker loop, shared by every contender's process (NumPy only).

A worker reads one JSON command a line on stdin and answers one JSON line on
stdout: ``{"cmd": "setup", "workload": {...}}`` (fills the buffers to capacity: ``fill_count``,
``fill_seconds``), ``{"cmd": "run", "case": name}``
(``{"count": items, "seconds": wall}``), ``{"cmd": "memory"}``, ``{"cmd": "quit"}``.
"""

import json
import os
import resource
import sys
import time
import traceback

import numpy as np

BATCH = 256
SLICES, SLICE_LEN = 32, 8

WORKLOADS = {
    # capacity in steps; each episode `episode_len` steps; `insert` steps per timed insert.
    'vectors': dict(capacity=1_000_000, obs_shape=(64,), obs_dtype='float32',
                    episode_len=500, insert=100_000, add_one=3_000),
    'images': dict(capacity=100_000, obs_shape=(84, 84, 3), obs_dtype='uint8',
                   episode_len=500, insert=20_000, add_one=2_000),
}
SECONDS = float(os.environ.get('REPLAY_BENCH_SECONDS', '1.5'))
"""How long each timed sampling loop runs."""


def scaled(name: str, scale: float) -> dict:
  """The workload ``name`` with its sizes multiplied by ``scale`` (for a quick run)."""
  w = dict(WORKLOADS[name])
  for key in ('capacity', 'insert', 'add_one'):
    w[key] = max(int(w[key] * scale), 2 * w['episode_len'])
  return w


def raw_bytes_per_step(w: dict) -> int:
  """Bytes of one RLDS step's fields: observation, action (int64), reward, discount, 3 flags."""
  return int(np.prod(w['obs_shape'])) * np.dtype(w['obs_dtype']).itemsize + 8 + 4 + 4 + 3


def episode_pool(w: dict, count: int = 4, seed: int = 0):
  """``count`` episodes of RLDS steps (dicts of ``[T, ...]`` NumPy arrays)."""
  rng = np.random.default_rng(seed)
  t = w['episode_len']
  pool = []
  for _ in range(count):
    if w['obs_dtype'] == 'uint8':
      obs = rng.integers(0, 256, (t,) + tuple(w['obs_shape']), np.uint8)
    else:
      obs = rng.standard_normal((t,) + tuple(w['obs_shape'])).astype(w['obs_dtype'])
    steps = np.arange(t)
    pool.append({
        'observation': obs, 'action': rng.integers(0, 18, t).astype(np.int64),
        'reward': rng.standard_normal(t).astype(np.float32),
        'discount': np.ones([t], np.float32), 'is_first': steps == 0,
        'is_last': steps == t - 1, 'is_terminal': steps == t - 1})
  return pool


def timed(fn, seconds: float = None, min_calls: int = 3) -> float:
  """Calls ``fn()`` for ``seconds`` (at least ``min_calls`` times); returns (calls, wall seconds)."""
  seconds = SECONDS if seconds is None else seconds
  calls, start = 0, time.perf_counter()
  while True:
    fn()
    calls += 1
    elapsed = time.perf_counter() - start
    if elapsed >= seconds and calls >= min_calls:
      return calls, elapsed


def rss_bytes() -> dict:
  """This process's resident memory now (RssAnon, RssFile) and at its peak, in bytes."""
  out = {'peak': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
  with open('/proc/self/status') as f:
    for line in f:
      if line.startswith(('RssAnon:', 'RssFile:', 'VmRSS:')):
        key, value = line.split(':')
        out[key] = int(value.split()[0]) * 1024
  return out


def serve(make_contender) -> None:
  """The worker loop: commands on stdin, JSON answers on stdout (errors as ``{"error": ...}``)."""
  out = sys.stdout
  sys.stdout = sys.stderr   # Libraries' prints must not break the protocol.
  contender = None
  for line in sys.stdin:
    command = json.loads(line)
    try:
      if command['cmd'] == 'quit':
        break
      if command['cmd'] == 'setup':
        contender = make_contender(command['workload'], command.get('config', {}))
        answer = dict(contender.setup_info, cases=sorted(contender.cases))
      elif command['cmd'] == 'run':
        count, seconds = contender.cases[command['case']]()
        answer = {'count': count, 'seconds': seconds}
      elif command['cmd'] == 'memory':
        answer = contender.memory()
      else:
        answer = {'error': f'unknown command {command!r}'}
    except Exception as e:  # pylint: disable=broad-except
      answer = {'error': f'{type(e).__name__}: {e}', 'traceback': traceback.format_exc()}
    out.write(json.dumps(answer) + '\n')
    out.flush()
