"""Benchmark: rlds_lite.stats.compute vs upstream mean_and_std vs Octo-style.

Not a test. Run from the repository root:

  .venv/bin/python benchmarks/bench_dataset_stats.py [--episodes 40]
      [--steps 200] [--obs-dim 512] [--scales 1,4] [--no-upstream]

A synthetic RLDS dataset (float32 observations of ``--obs-dim``, 8-D actions,
rewards) is written with ``rlds_lite.tfds.write_dataset`` at each scale
(``--episodes * scale`` episodes; kept in ``--data-dir`` for the next run).
Each method then runs in its own subprocess, which reports the pass's wall
and CPU time and its peak RSS (VmHWM) before and after the pass:

- ``rlds_lite.stats``: ``compute(path, cache=False)``: count, mean, std, min,
  max, p01/p50/p99 of every field, episode lengths and returns, one streaming
  pass in bounded memory.
- ``upstream mean_and_std``: rlds 0.1.8 ``mean_and_std(episodes,
  sar_fields_mask)`` on nested steps (mean and std only; two passes).
- ``octo-style``: every episode's observation/action/reward loaded into NumPy
  (``rlds_lite.load(dense=True)``), concatenated, then ``np.mean``/``np.std``/
  ``np.min``/``np.max``/``np.quantile`` (as Octo's ``get_dataset_statistics``).

Memory: ours stays flat as the dataset grows; octo-style grows with it.
"RSS growth in pass" is the peak RSS during the pass minus the peak after the
imports. Wall times are noisy on a shared machine: CPU times (``steps/CPU-s``)
hold better. Upstream reads with TFDS's defaults, which cache datasets under
250 MiB in memory (part of its growth); ours and octo-style read without.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import types
from typing import Any, Dict

import numpy as np

METHODS = ('rlds_lite.stats', 'upstream mean_and_std', 'octo-style')


def peak_rss_mb() -> float:
  with open('/proc/self/status') as f:
    for line in f:
      if line.startswith('VmHWM:'):
        return int(line.split()[1]) / 1024
  return float('nan')


def write(data_dir: str, episodes: int, steps: int, obs_dim: int) -> str:
  """Writes (once) the dataset; returns its directory."""
  name = f'stats_bench_e{episodes}_t{steps}_o{obs_dim}'
  path = os.path.join(data_dir, name, '1.0.0')
  if os.path.exists(os.path.join(path, 'dataset_info.json')):
    return path
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from rlds_lite.tfds import write_dataset  # pylint: disable=g-import-not-at-top

  def episode(i):
    seed = tf.stack([i, tf.constant(7, tf.int64)])
    index = tf.range(steps)
    last = tf.equal(index, steps - 1)
    valid = tf.cast(tf.logical_not(last), tf.float32)
    return {'steps': {
        'observation': tf.random.stateless_normal([steps, obs_dim], seed),
        'action': tf.random.stateless_uniform([steps, 8], seed, -1, 1) *
                  valid[:, None],
        'reward': tf.random.stateless_normal([steps], seed + 1) * valid,
        'discount': valid,
        'is_first': tf.equal(index, 0), 'is_last': last,
        'is_terminal': tf.logical_and(last, tf.equal(i % 2, 0))}}

  ds = tf.data.Dataset.range(episodes).map(episode)
  return write_dataset(ds, data_dir, name)


def run_child(method: str, path: str) -> Dict[str, Any]:
  """Runs one method on ``path`` (in this process); its measurements."""
  # pylint: disable=g-import-not-at-top
  import tensorflow as tf
  import rlds_lite
  from rlds_lite import stats
  if method == 'upstream mean_and_std':
    stub = types.ModuleType('reverb')
    writer = types.ModuleType('reverb.structured_writer')
    writer.__getattr__ = lambda name: object
    stub.structured_writer = writer
    sys.modules.setdefault('reverb', stub)
    import rlds as upstream
    import tensorflow_datasets as tfds
  before = peak_rss_mb()
  start, cpu = time.perf_counter(), time.process_time()
  if method == 'rlds_lite.stats':
    result = stats.compute(path, cache=False, progress=False)
    steps = result.num_steps
    check = float(result['observation'].mean[0])
  elif method == 'upstream mean_and_std':
    episodes = tfds.builder_from_directory(path).as_dataset(split='train')
    mean, _ = upstream.transformations.mean_and_std(
        episodes, upstream.transformations.sar_fields_mask)
    steps = None
    check = float(mean['observation'][0])
  else:
    columns = {'observation': [], 'action': [], 'reward': []}
    steps = 0
    import tensorflow_datasets as tfds
    no_cache = tfds.ReadConfig(try_autocache=False)  # As ours: no TFDS cache.
    for episode in rlds_lite.load(path, dense=True,
                                  read_config=no_cache).as_numpy_iterator():
      s = episode['steps']
      valid = ~s['is_last']
      steps += len(valid)
      columns['observation'].append(s['observation'])
      columns['action'].append(s['action'][valid])
      columns['reward'].append(s['reward'][valid])
    out = {}
    for key, parts in columns.items():
      values = np.concatenate(parts)
      out[key] = {'mean': values.mean(0), 'std': values.std(0),
                  'min': values.min(0), 'max': values.max(0),
                  'q': np.quantile(values, [0.01, 0.5, 0.99], axis=0)}
    check = float(out['observation']['mean'][0])
  del tf
  return {'seconds': time.perf_counter() - start,
          'cpu': time.process_time() - cpu, 'steps': steps,
          'rss_before_mb': before, 'rss_mb': peak_rss_mb(), 'check': check}


def spawn(method: str, path: str) -> Dict[str, Any]:
  env = {**os.environ, 'TF_CPP_MIN_LOG_LEVEL': '3'}
  cmd = [sys.executable, os.path.abspath(__file__), '--child', method,
         '--path', path]
  out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                       env=env)
  return json.loads([l for l in out.stdout.splitlines()
                     if l.startswith('{')][-1])


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--episodes', type=int, default=40)
  parser.add_argument('--steps', type=int, default=200)
  parser.add_argument('--obs-dim', type=int, default=512)
  parser.add_argument('--scales', default='1,4')
  parser.add_argument('--data-dir', default='/tmp/rlds_lite_bench_stats')
  parser.add_argument('--no-upstream', action='store_true')
  parser.add_argument('--child', default=None, help=argparse.SUPPRESS)
  parser.add_argument('--path', default=None, help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.child:
    print(json.dumps(run_child(args.child, args.path)))
    return
  scales = [int(s) for s in args.scales.split(',')]
  methods = [m for m in METHODS
             if not (args.no_upstream and m.startswith('upstream'))]
  rows = []
  for scale in scales:
    episodes = args.episodes * scale
    path = write(args.data_dir, episodes, args.steps, args.obs_dim)
    mb = sum(
        os.path.getsize(os.path.join(path, f)) for f in os.listdir(path)
        if os.path.isfile(os.path.join(path, f))) / 2**20
    for method in methods:
      r = spawn(method, path)
      r['steps'] = r['steps'] or episodes * args.steps
      rows.append({'scale': scale, 'method': method, 'mb': mb, **r})
      print(f'  {scale}x {method:22s} {r["steps"] / r["seconds"]:10,.0f} '
            f'steps/s  {r["rss_mb"]:6.0f} MB peak', flush=True)
  ours = {r['scale']: r for r in rows if r['method'] == METHODS[0]}
  print(f'\n{args.episodes} x scale episodes of {args.steps} steps, '
        f'observation float32[{args.obs_dim}], action float32[8]; '
        f'load: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs\n')
  print('| scale | data MB | method | steps/s (wall) | steps/CPU-s | '
        'ours faster (wall) | ours faster (CPU) | peak RSS MB | '
        'RSS growth in pass MB |')
  print('|---|---|---|---|---|---|---|---|---|')
  for r in rows:
    base = ours[r['scale']]
    print(f'| {r["scale"]}x | {r["mb"]:.0f} | {r["method"]} | '
          f'{r["steps"] / r["seconds"]:,.0f} | {r["steps"] / r["cpu"]:,.0f} | '
          f'{r["seconds"] / base["seconds"]:.2f}x | '
          f'{r["cpu"] / base["cpu"]:.2f}x | {r["rss_mb"]:.0f} | '
          f'{r["rss_mb"] - r["rss_before_mb"]:.0f} |')
  checks = {r['method']: r['check'] for r in rows if r['scale'] == scales[0]}
  print('\nmean(observation[0]) at 1x: ' + ', '.join(
      f'{m}: {v:.6f}' for m, v in checks.items()))


if __name__ == '__main__':
  main()
