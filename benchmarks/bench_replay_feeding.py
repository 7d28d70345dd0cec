"""Benchmark: `ReplayBuffer.as_dataset` delivery against NumPy `sample` and an empty tf.data loop.

Not a test. A buffer of ``--capacity`` vector steps (observation float32[64], action int64,
reward, discount, the three RLDS flags; episodes of 500 steps), sampled uniformly in batches
of 256, as single steps (``steps``) and as 3-step transitions (``transitions``). Contenders,
taking turns round by round in one process:

  numpy       ``buffer.sample(256)`` in a Python loop (the target's reference rate);
  bound       a ``tf.data`` loop over one pre-made batch of the same structure
              (``from_tensors(...).repeat()``, prefetch 2): what any dataset of this
              structure costs to deliver, the ceiling of ``as_dataset``;
  as_dataset  ``buffer.as_dataset(256, prefetch=2, chunk=c)`` for each ``--chunks`` c.

Each is consumed in a Python loop (``next`` per batch, as a training loop would) and in-graph
(``Dataset.reduce`` over ``take(n)``; numpy has no in-graph form). Reported: batches/s of wall
time and µs of process CPU time (all threads) per batch, each the best of ``--repeats``
rounds, and the fractions of numpy and of the bound reached. On a shared machine the CPU
times hold better than the rates.

Usage:
  flock /tmp/bench.lock python benchmarks/bench_replay_feeding.py [--quick] [--write-results]
"""

import argparse
import datetime
import os
import subprocess
import time

import numpy as np
import tensorflow as tf

from rlds_lite import replay
from rlds_lite.sample_kinds import Transitions

BATCH = 256
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'RESULTS.md')


def make_buffer(capacity: int, kind) -> replay.ReplayBuffer:
  buffer = replay.ReplayBuffer(replay.MemoryStorage(capacity), kind=kind, seed=0)
  t = np.arange(capacity)
  rng = np.random.default_rng(0)
  buffer.extend({'observation': rng.random([capacity, 64], np.float32),
                 'action': (t % 4).astype(np.int64), 'reward': rng.random([capacity], np.float32),
                 'discount': np.ones([capacity], np.float32), 'is_first': t % 500 == 0,
                 'is_last': t % 500 == 499, 'is_terminal': t % 1000 == 999})
  return buffer


def timed(run, batches: int):
  """``(batches/s of wall time, µs of process CPU time per batch)`` of ``run()``."""
  wall, cpu = time.perf_counter(), time.process_time()
  run()
  return batches / (time.perf_counter() - wall), (time.process_time() - cpu) / batches * 1e6


def python_loop(ds: tf.data.Dataset, batches: int):
  it = iter(ds)
  next(it)

  def run():
    for _ in range(batches):
      next(it)
  return timed(run, batches)


def in_graph(ds: tf.data.Dataset, batches: int):
  count = lambda n, unused: n + 1
  ds.take(2).reduce(np.int64(0), count)   # Traced and warm.
  return timed(lambda: ds.take(batches).reduce(np.int64(0), count), batches)


def numpy_loop(buffer, batches: int):
  buffer.sample(BATCH)

  def run():
    for _ in range(batches):
      buffer.sample(BATCH)
  return timed(run, batches)


def bound_dataset(buffer) -> tf.data.Dataset:
  batch, info = buffer.sample(BATCH)
  info = {f: getattr(info, f) for f in ('indices', 'episode_ids', 'step_ids', 'weights')}
  info['step_ids'] = info['step_ids'].astype(np.int64)
  return tf.data.Dataset.from_tensors((batch, info)).repeat().prefetch(2)


def one_round(buffers, chunks, batches):
  rates = {}
  for name, buffer in buffers.items():
    rates[name, 'numpy', 'loop'] = numpy_loop(buffer, batches)
    contenders = [('bound', bound_dataset(buffer))] + [
        (f'as_dataset chunk={c}', buffer.as_dataset(BATCH, prefetch=2, chunk=c)) for c in chunks]
    for label, ds in contenders:
      rates[name, label, 'loop'] = python_loop(ds, batches)
      rates[name, label, 'graph'] = in_graph(ds, batches)
  return rates


def table(best, buffers, chunks) -> str:
  lines = ['| samples | contender | Python loop batches/s | of numpy | of bound | CPU µs/batch | '
           'in-graph batches/s | of bound | CPU µs/batch |',
           '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |']
  for name in buffers:
    numpy_rate, numpy_cpu = best[name, 'numpy', 'loop']
    bound_loop, bound_graph = best[name, 'bound', 'loop'][0], best[name, 'bound', 'graph'][0]
    lines.append(f'| {name} | numpy `sample(256)` | {numpy_rate:,.0f} | 1.00 | | '
                 f'{numpy_cpu:,.0f} | | | |')
    for label in ['bound'] + [f'as_dataset chunk={c}' for c in chunks]:
      (loop, loop_cpu), (graph, graph_cpu) = best[name, label, 'loop'], best[name, label, 'graph']
      lines.append(f'| {name} | {label} | {loop:,.0f} | {loop / numpy_rate:.2f} | '
                   f'{loop / bound_loop:.2f} | {loop_cpu:,.0f} | {graph:,.0f} | '
                   f'{graph / bound_graph:.2f} | {graph_cpu:,.0f} |')
  return '\n'.join(lines)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--capacity', type=int, default=1_000_000)
  parser.add_argument('--batches', type=int, default=1500)
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--chunks', default='1,8,32')
  parser.add_argument('--quick', action='store_true', help='100K steps, 300 batches, 1 round')
  parser.add_argument('--write-results', action='store_true')
  args = parser.parse_args()
  if args.quick:
    args.capacity, args.batches, args.repeats = 100_000, 300, 1
  chunks = [int(c) for c in args.chunks.split(',')]
  buffers = {'steps': make_buffer(args.capacity, None),
             'transitions n=3': make_buffer(args.capacity, Transitions(n=3, gamma=0.99))}
  load_before = subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()
  best = {}
  for _ in range(args.repeats):
    for key, (rate, cpu) in one_round(buffers, chunks, args.batches).items():
      old_rate, old_cpu = best.get(key, (0.0, np.inf))
      best[key] = (max(old_rate, rate), min(old_cpu, cpu))
  load_after = subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()
  text = table(best, buffers, chunks)
  print(text)
  print('load before:', load_before, '\nload after:', load_after)
  if args.write_results:
    when = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')
    load = lambda s: s.split('load average:')[-1].strip()
    with open(RESULTS, 'a') as f:
      f.write(f'\n## Replay buffer feeding training: `as_dataset` (issue 33)\n\n'
              f'`python benchmarks/bench_replay_feeding.py --capacity {args.capacity} '
              f'--batches {args.batches} --repeats {args.repeats}`, {when}; 2 CPUs shared '
              f'with other work, load averages {load(load_before)} before, '
              f'{load(load_after)} after. Best of {args.repeats} rounds, contenders taking '
              'turns; uniform samples, batches of 256 (observation float32[64] and 6 more '
              'fields, plus 4 sample-info tensors).\n\n' + text + '\n')


if __name__ == '__main__':
  main()
