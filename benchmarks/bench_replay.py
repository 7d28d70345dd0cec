"""Benchmark: `rlds_lite.replay` against TorchRL 0.14 (and flashbax where it applies), side by side.

Not a test. Opt-in (``make bench-replay``): TorchRL runs in its own venv
(``--torchrl-python``, torch CPU wheels), flashbax in another
(``--flashbax-python``); each contender is a worker process
(``replay_workloads.serve``) and they take turns case by case, the order
alternating each repeat. Every worker runs with ``OMP_NUM_THREADS=1`` (and
torch with ``torch.set_num_threads(1)``, TensorFlow with one intra/inter-op
thread): one core each, on a 2-core machine.

Workloads (``replay_workloads.WORKLOADS``): ``vectors``, a 1M-step capacity of
RLDS steps with a float32[64] observation; ``images``, 100K steps of uint8
84x84x3 frames; both in 500-step episodes, plus action (int64), reward,
discount and the three flags. Each contender holds one in-memory storage
per workload (rlds_lite ``MemoryStorage``, TorchRL ``LazyTensorStorage``)
shared by three buffers: uniform, prioritized (alpha 0.6, beta 0.4) and
slices (rlds_lite ``kind=Windows(size=8)``; TorchRL ``SliceSampler(slice_len=8,
traj_key='episode', strict_length=True)``, cache_values on and off).

Cases (median of ``--repeats``; sampling loops run ``REPLAY_BENCH_SECONDS``):
``insert*`` steps/s extending whole episodes into the full ring (through the
uniform, prioritized or slice buffer), ``add_one`` steps/s one step a call,
``uniform`` / ``prioritized`` (sample + priority update) / ``slices`` batches/s
of 256 steps (32 slices of 8), and memory: the storage's bytes and the
process's RSS growth over the raw bytes of the steps held.

Usage:
  python benchmarks/bench_replay.py [--workloads vectors,images] [--repeats 3]
      [--scale 1.0] [--cases uniform,prioritized] [--torchrl-python PATH]
      [--flashbax-python PATH] [--write-results]
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import replay_workloads as rw  # pylint: disable=g-import-not-at-top

TARGETS = {'insert': 1.0, 'insert_prioritized': 1.0, 'insert_slices': 1.0, 'add_one': 1.0,
           'uniform': 1.0, 'prioritized': 1.0, 'slices': 2.0}
CASE_UNITS = {'insert': 'steps/s', 'insert_prioritized': 'steps/s', 'insert_slices': 'steps/s',
              'add_one': 'steps/s', 'uniform': 'batches/s', 'prioritized': 'batches/s',
              'slices': 'batches/s', 'slices_nocache': 'batches/s',
              'slices_endkey': 'batches/s'}


class RldsLite:
  """rlds_lite.replay: one MemoryStorage, three buffers on it (they sync from its header)."""

  def __init__(self, workload: dict, config: dict):
    del config
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    from rlds_lite import replay  # pylint: disable=g-import-not-at-top
    from rlds_lite.sample_kinds import Windows  # pylint: disable=g-import-not-at-top
    self.w = w = workload
    self.pool = rw.episode_pool(w)
    self.baseline = rw.rss_bytes()   # After the episodes to insert are made.
    self.storage = replay.MemoryStorage(w['capacity'])
    self.uniform = replay.ReplayBuffer(self.storage, seed=0)
    self.prioritized = replay.ReplayBuffer(
        self.storage, sampler=replay.Prioritized(alpha=0.6, beta=0.4), seed=1)
    self.slices = replay.ReplayBuffer(self.storage, kind=Windows(size=rw.SLICE_LEN), seed=2)
    start = time.perf_counter()
    self._extend(self.prioritized, w['capacity'])
    fill = time.perf_counter() - start
    self.setup_info = {'fill_count': w['capacity'], 'fill_seconds': fill}
    self.priorities = np.random.default_rng(0).uniform(0.1, 2.0, rw.BATCH)
    first = self.pool[0]
    self.steps = [{k: v[t] for k, v in first.items()} for t in range(w['episode_len'])]
    self.cases = {
        'insert': lambda: self._timed_extend(self.uniform),
        'insert_prioritized': lambda: self._timed_extend(self.prioritized),
        'insert_slices': lambda: self._timed_extend(self.slices),
        'add_one': self._add_one,
        'uniform': lambda: self._sampling(lambda: self.uniform.sample(rw.BATCH)),
        'prioritized': lambda: self._sampling(self._prioritized_step),
        'slices': lambda: self._sampling(lambda: self.slices.sample(rw.SLICES)),
    }

  def _extend(self, buffer, steps: int) -> None:
    for i in range(steps // self.w['episode_len']):
      buffer.extend(self.pool[i % len(self.pool)])

  def _timed_extend(self, buffer):
    start = time.perf_counter()
    self._extend(buffer, self.w['insert'])
    return self.w['insert'], time.perf_counter() - start

  def _add_one(self):
    n = self.w['add_one']
    start = time.perf_counter()
    for i in range(n):
      self.uniform.add(self.steps[i % len(self.steps)])
    return n, time.perf_counter() - start

  def _prioritized_step(self):
    _, info = self.prioritized.sample(rw.BATCH)
    self.prioritized.update_priority(info.indices, self.priorities)

  def _sampling(self, step):
    step()   # Warm-up: buffers that did not insert sync their index here.
    return rw.timed(step)

  def memory(self):
    rss = rw.rss_bytes()
    extra = sum(a.nbytes for b in (self.uniform, self.prioritized, self.slices)
                for a in _arrays_of(b))
    return {'storage_bytes': self.storage.nbytes(), 'held_steps': self.storage.size,
            'raw_bytes': self.storage.size * rw.raw_bytes_per_step(self.w),
            'index_bytes': extra,
            'rss_growth': rss['RssAnon'] - self.baseline['RssAnon'], 'rss': rss}


def _arrays_of(buffer):
  """The NumPy arrays a buffer keeps beside its storage (sampler, sum trees, episode index)."""
  found = [buffer.times_sampled, buffer.sampler.ok]
  for tree in ('_sums', '_mins'):
    if hasattr(buffer.sampler, tree):
      found.append(getattr(buffer.sampler, tree).tree)
  if buffer.index is not None:
    found += [v for v in vars(buffer.index).values() if isinstance(v, np.ndarray)]
  return found


class Worker:
  """A contender's process: JSON commands in, JSON answers out."""

  def __init__(self, name, argv, env):
    self.name = name
    self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 env=env, text=True)

  def ask(self, **command):
    self.proc.stdin.write(json.dumps(command) + '\n')
    self.proc.stdin.flush()
    line = self.proc.stdout.readline()
    if not line:
      raise RuntimeError(f'{self.name}: the worker died (exit {self.proc.wait()}).')
    answer = json.loads(line)
    if 'error' in answer:
      raise RuntimeError(f"{self.name}: {answer['error']}\n{answer.get('traceback', '')}")
    return answer

  def close(self):
    try:
      self.ask(cmd='quit')
    except (RuntimeError, BrokenPipeError, json.JSONDecodeError):
      pass
    self.proc.wait(timeout=60)


def _env():
  env = dict(os.environ, OMP_NUM_THREADS='1', MKL_NUM_THREADS='1', TF_CPP_MIN_LOG_LEVEL='2',
             XLA_FLAGS='--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1',
             JAX_PLATFORMS='cpu')
  env['PYTHONPATH'] = os.pathsep.join([os.path.dirname(HERE), env.get('PYTHONPATH', '')])
  return env


def _workers(args):
  env = _env()
  specs = [('rlds_lite', [sys.executable, os.path.abspath(__file__), '--worker'])]
  if args.torchrl_python:
    specs.append(('torchrl', [args.torchrl_python, os.path.join(HERE, 'bench_replay_torchrl.py')]))
  if args.flashbax_python:
    specs.append(('flashbax', [args.flashbax_python,
                               os.path.join(HERE, 'bench_replay_flashbax.py')]))
  return [(name, argv, env) for name, argv in specs]


def run_workload(name, args):
  """Every case of workload ``name``, contenders taking turns: {contender: {case: [rates]}}."""
  w = rw.scaled(name, args.scale)
  workers = [Worker(*spec) for spec in _workers(args)]
  rates, memory = {}, {}
  try:
    cases = {}
    for worker in workers:
      info = worker.ask(cmd='setup', workload=w)
      cases[worker.name] = info['cases']
      rates[worker.name] = {'fill': [info['fill_count'] / info['fill_seconds']]}
      print(f'{name} {worker.name}: filled {info["fill_count"]} steps in '
            f'{info["fill_seconds"]:.1f} s', flush=True)
    order = sorted({c for names in cases.values() for c in names
                    if not args.cases or c in args.cases.split(',')},
                   key=lambda c: list(CASE_UNITS).index(c))
    for case in order:
      for repeat in range(args.repeats):
        turn = workers if repeat % 2 == 0 else workers[::-1]
        for worker in turn:
          if case in cases[worker.name]:
            answer = worker.ask(cmd='run', case=case)
            rate = answer['count'] / answer['seconds']
            rates[worker.name].setdefault(case, []).append(rate)
      print(f'{name} {case}: ' + ', '.join(
          f'{k} {statistics.median(v[case]):,.0f}' for k, v in rates.items() if case in v),
            flush=True)
    for worker in workers:
      memory[worker.name] = worker.ask(cmd='memory')
  finally:
    for worker in workers:
      worker.close()
  return w, rates, memory


def _cell(rates, contender, case):
  values = rates.get(contender, {}).get(case)
  return f'{statistics.median(values):,.0f}' if values else '—'


def table(results, contenders):
  """The results as markdown: one row per workload and case."""
  lines = ['| workload | case | unit | ' + ' | '.join(contenders) +
           ' | rlds_lite / TorchRL | target |',
           '| --- | --- | --- |' + ' ---: |' * len(contenders) + ' ---: | ---: |']
  for name, (w, rates, memory) in results.items():
    cases = ['fill'] + [c for c in CASE_UNITS if any(c in r for r in rates.values())]
    for case in cases:
      ratio = ''
      torch_case = case
      if case == 'slices' and 'torchrl' in rates:   # Against TorchRL's fastest slice config.
        options = [c for c in ('slices', 'slices_nocache', 'slices_endkey') if c in rates['torchrl']]
        torch_case = max(options, key=lambda c: statistics.median(rates['torchrl'][c]))
      if case in rates.get('rlds_lite', {}) and torch_case in rates.get('torchrl', {}):
        ratio = (f'{statistics.median(rates["rlds_lite"][case]) / statistics.median(rates["torchrl"][torch_case]):.2f}x')
      target = f'>= {TARGETS[case]:g}x' if case in TARGETS else ''
      lines.append(f'| {name} | {case} | {CASE_UNITS.get(case, "steps/s")} | ' + ' | '.join(
          _cell(rates, c, case) for c in contenders) + f' | {ratio} | {target} |')
    cells = []
    for c in contenders:
      m = memory.get(c)
      cells.append('—' if not m else f'{m["storage_bytes"] / m["raw_bytes"]:.3f}x '
                   f'(RSS {m["rss_growth"] / m["raw_bytes"]:.2f}x)')
    lines.append(f'| {name} | memory / raw bytes | storage (RSS growth) | ' + ' | '.join(cells)
                 + ' | | <= 1.1x |')
  return '\n'.join(lines)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--worker', action='store_true', help=argparse.SUPPRESS)
  parser.add_argument('--workloads', default='vectors,images')
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--cases', default='', help='only these cases (comma-separated)')
  parser.add_argument('--scale', type=float, default=1.0, help='multiplies the sizes')
  parser.add_argument('--torchrl-python', default=os.environ.get('RLDS_LITE_TORCHRL_PYTHON'))
  parser.add_argument('--flashbax-python', default=os.environ.get('RLDS_LITE_FLASHBAX_PYTHON'))
  parser.add_argument('--write-results', action='store_true',
                      help='append the table to benchmarks/RESULTS.md')
  args = parser.parse_args()
  if args.worker:
    rw.serve(RldsLite)
    return
  started = datetime.datetime.now(datetime.timezone.utc)
  load_before = os.getloadavg()
  results = {name: run_workload(name, args) for name in args.workloads.split(',')}
  contenders = [name for name, _, _ in _workers(args)]
  text = table(results, contenders)
  load = os.getloadavg()
  only = f' --cases {args.cases}' if args.cases else ''
  header = (f'`python benchmarks/bench_replay.py --workloads {args.workloads} --repeats '
            f'{args.repeats} --scale {args.scale:g}{only}`, '
            f'{started:%Y-%m-%d %H:%M} UTC; {os.cpu_count()} CPUs, load {load_before[0]:.1f} '
            f'before / {load[0]:.1f} after (1-min); each contender one thread; sampling loops '
            f'{rw.SECONDS:g} s; medians of {args.repeats}.')
  print(header + '\n\n' + text)
  print(json.dumps({k: {'rates': v[1], 'memory': v[2]} for k, v in results.items()}),
        file=sys.stderr)
  if args.write_results:
    with open(os.path.join(HERE, 'RESULTS.md'), 'a') as f:
      f.write('\n## Replay buffers vs TorchRL (issue 33)\n\n' + header + '\n\n' + text + '\n')


if __name__ == '__main__':
  main()
