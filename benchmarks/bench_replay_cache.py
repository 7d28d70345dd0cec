"""Benchmark: the decoded cache (issue 33) against the Octo recipe and robot_samples_dataset, epochs after the first.

Not a test. The camera dataset of ``benchmarks/bench_images.py`` (a 256x256
and a 128x128 JPEG camera, 8-d state, 7-d action, a language instruction)
at ``--episodes`` x ``--steps``, and the same at ``--scale`` times the
episodes. Samples: a 2-frame history and a 4-action chunk
(``RobotSamples(history=2, action_chunk=4, last_step='valid')``), batches of
64. Contenders, taking turns run by run, each run in its own process:

  octo      the Octo recipe of bench_images.py (decodes every frame of every
            sample), in-graph (``Dataset.reduce``) and in a Python loop;
  ours      ``rlds_lite.pipeline.robot_samples_dataset`` (each frame decoded
            about once per epoch), both ways;
  cache     ``replay.decoded_cache(...)``: ``sample(64)`` in a Python loop
            (NumPy batches, uniform over the whole split), the cache filled
            once beforehand (the fill is timed on its own);
  cache_tf  the same, each batch's fields made ``tf.Tensor``s (what feeding
            a TF step costs on top).

Each run: one untimed epoch (for the cache: its first epoch, which maps the
file's pages), then ``--passes`` timed epochs. Reported: samples/s,
CPU-seconds per sample (process CPU, all threads), peak RSS, and at the end
of the run RssAnon (the process's own memory) and RssFile (file pages it
maps: the cache's frames in the kernel's page cache) from /proc/self/status.
The cache also runs on the dataset ``--scale`` times larger: RssAnon should
stay flat while RssFile grows with it.

Usage:
  flock /tmp/bench.lock python benchmarks/bench_replay_cache.py [--quick]
      [--image-sizes 0,128] [--repeats N] [--passes N] [--write-results]
"""

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import time
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, 'tests'))
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

import bench_images  # pylint: disable=g-import-not-at-top,wrong-import-position

BATCH = bench_images.BATCH
CONTENDERS = ('octo', 'ours', 'cache', 'cache_tf')
TARGET = 5.0
"""Issue 33: the cache at >= 5x the Octo recipe per CPU-second, stored size."""


def _status() -> Dict[str, float]:
  """RssAnon, RssFile and VmHWM of this process, in MB."""
  out = {}
  with open('/proc/self/status') as f:
    for line in f:
      key = line.split(':')[0]
      if key in ('RssAnon', 'RssFile', 'VmHWM'):
        out[key] = int(line.split()[1]) / 1024
  return out


def _base() -> Dict[str, float]:
  """RssAnon and RssFile once TF ran a trivial pipeline (the runtime's own)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.data.Dataset.range(10).map(lambda x: x + 1, num_parallel_calls=2).reduce(
      tf.constant(0, tf.int64), lambda a, b: a + b)
  return {'base_' + k: v for k, v in _status().items() if k != 'VmHWM'}


def _kind():
  import rlds_lite  # pylint: disable=g-import-not-at-top
  return rlds_lite.RobotSamples(history=bench_images.HISTORY,
                                action_chunk=bench_images.HORIZON, last_step='valid')


def cache_dir(data_dir: str, path: str, image_size) -> str:
  return os.path.join(data_dir, 'decoded_caches',
                      f'{os.path.basename(os.path.dirname(path))}_{image_size or "stored"}')


def open_cache(path: str, args: Dict[str, Any]):
  from rlds_lite import replay  # pylint: disable=g-import-not-at-top
  return replay.decoded_cache(
      path, cache_dir(args['data_dir'], path, args['image_size']), kind=_kind(),
      image_size=bench_images._sizes(args['image_size']),  # pylint: disable=protected-access
      episode_fields='episode_id', seed=0)


def fill_child(path: str, args: Dict[str, Any]) -> Dict[str, Any]:
  """Fills the cache (if missing): seconds, CPU, bytes."""
  existed = os.path.exists(cache_dir(args['data_dir'], path, args['image_size']))
  start, cpu = time.perf_counter(), time.process_time()
  cache = open_cache(path, args)
  return {'seconds': time.perf_counter() - start, 'cpu': time.process_time() - cpu,
          'bytes': cache.cost.bytes, 'steps': cache.cost.steps, 'reused': existed,
          'cost': repr(cache.cost)}


def _cache_run(path: str, args: Dict[str, Any], to_tf: bool) -> Dict[str, Any]:
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  base = _base()
  cache = open_cache(path, args)
  batches = math.ceil(cache.num_samples / BATCH)
  distinct = []

  def epoch() -> int:
    for _ in range(batches):
      batch, info = cache.sample(BATCH)
      if to_tf:
        batch = tf.nest.map_structure(tf.convert_to_tensor, batch)
      distinct.append(len(np.unique(info.episode_ids)))
    return batches * BATCH

  first = time.perf_counter()
  epoch()
  first = time.perf_counter() - first
  start, cpu = time.perf_counter(), time.process_time()
  samples = sum(epoch() for _ in range(args['passes']))
  return {'samples': samples, 'seconds': time.perf_counter() - start,
          'cpu': time.process_time() - cpu, 'first_epoch_s': first,
          'distinct': float(np.mean(distinct)), **_status(), **base}


def _dataset_run(name: str, mode: str, path: str, args: Dict[str, Any]) -> Dict[str, Any]:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  size = args['image_size']
  base = _base()
  if name == 'octo':
    ds = bench_images.octo_pipeline(path, args['shuffle_buffer'], size)
  else:
    ds = bench_images.ours_pipeline(path, size)
  count = lambda n, b: n + tf.shape(b['action'])[0]
  ds.reduce(tf.constant(0, tf.int32), count)   # The untimed first epoch.
  ds = ds.repeat(args['passes'])
  start, cpu = time.perf_counter(), time.process_time()
  if mode == 'graph':
    samples = int(ds.reduce(tf.constant(0, tf.int32), count))
  else:
    samples = sum(int(batch['action'].shape[0]) for batch in ds)
  return {'samples': samples, 'seconds': time.perf_counter() - start,
          'cpu': time.process_time() - cpu, **_status(), **base}


def run_child(name: str, mode: str, path: str, args: Dict[str, Any]) -> Dict[str, Any]:
  if name == 'fill':
    return fill_child(path, args)
  if name.startswith('cache'):
    return _cache_run(path, args, name == 'cache_tf')
  return _dataset_run(name, mode, path, args)


def spawn(name: str, mode: str, path: str, args: Dict[str, Any], label: str = ''
          ) -> Dict[str, Any]:
  cmd = [sys.executable, os.path.abspath(__file__), '--child', name, '--mode', mode,
         '--path', path, '--child-args', json.dumps(args)]
  out = subprocess.run(cmd, check=False, capture_output=True, text=True)
  if out.returncode:
    sys.exit(f'{name} ({mode}) failed:\n{out.stderr[-3000:]}')
  result = json.loads([l for l in out.stdout.splitlines() if l.startswith('{')][-1])
  if name == 'fill':
    print(f'  fill {label}: {result["cost"]}, {result["seconds"]:.1f} s '
          f'({result["cpu"]:.1f} CPU-s){" (reused)" if result["reused"] else ""}',
          flush=True)
    return result
  print(f'  {name + label:14s} {mode:5s} {result["samples"] / result["seconds"]:9,.0f} /s '
        f'{1e6 * result["cpu"] / result["samples"]:7,.0f} us CPU/sample  peak '
        f'{result["VmHWM"]:6.0f} MB  RssAnon {result["RssAnon"]:6.0f} MB  RssFile '
        f'{result["RssFile"]:6.0f} MB', flush=True)
  return result


def _best(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
  best = dict(max(runs, key=lambda r: r['samples'] / r['seconds']))
  best['min_cpu_us'] = min(1e6 * r['cpu'] / r['samples'] for r in runs)
  for key in ('RssAnon', 'RssFile', 'VmHWM'):
    best[key] = max(r[key] for r in runs)
  for key in ('base_RssAnon', 'base_RssFile'):
    best[key] = min(r[key] for r in runs)
  return best


def _over(r: Dict[str, Any], key: str) -> str:
  return f'{r[key]:,.0f} ({r[key] - r["base_" + key]:+,.0f})'


def _distinct(r: Dict[str, Any]) -> str:
  return f'{r["distinct"]:.1f}' if 'distinct' in r else '-'


def report(results: Dict[str, Dict[str, Any]], fills: Dict[str, Any]) -> List[str]:
  octo = min([r['min_cpu_us'] for (name, _, _), r in results.items() if name == 'octo'] or
             [float('nan')])
  lines = ['| contender | data | consumed | samples/s | CPU us/sample | x Octo per CPU-s '
           '| peak RSS MB | RssAnon MB (over TF) | RssFile MB (over TF) | episodes/batch |',
           '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |']
  for (name, scale, mode), r in results.items():
    lines.append(
        f'| {name} | {scale} | {"in-graph" if mode == "graph" else "Python loop"} | '
        f'{r["samples"] / r["seconds"]:,.0f} | {r["min_cpu_us"]:,.0f} | '
        f'{octo / r["min_cpu_us"]:.1f} | {r["VmHWM"]:,.0f} | {_over(r, "RssAnon")} | '
        f'{_over(r, "RssFile")} | {_distinct(r)} |')
  fill_text = ' '.join(
      f'Fill ({scale}): {fill["cost"]}; {fill["seconds"]:.0f} s, {fill["cpu"]:.0f} CPU-s'
      f'{" (reused: filled earlier)" if fill["reused"] else ""}.'
      for scale, fill in fills.items())
  lines += ['', fill_text]
  return lines


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--data-dir', default='/tmp/rlds_lite_bench')
  parser.add_argument('--episodes', type=int, default=48)
  parser.add_argument('--steps', type=int, default=120)
  parser.add_argument('--scale', type=int, default=4)
  parser.add_argument('--shuffle-buffer', type=int, default=3000)
  parser.add_argument('--image-sizes', default='0,128',
                      help='primary camera sizes run in turn (wrist: half); 0: stored')
  parser.add_argument('--repeats', type=int, default=2)
  parser.add_argument('--passes', type=int, default=2)
  parser.add_argument('--quick', action='store_true', help='12 x 40 steps, 1 repeat')
  parser.add_argument('--only', default='')
  parser.add_argument('--write-results', action='store_true')
  parser.add_argument('--build-only', action='store_true',
                      help='write the datasets, time nothing (outside the bench lock)')
  parser.add_argument('--child', default='')
  parser.add_argument('--mode', default='graph')
  parser.add_argument('--path', default='')
  parser.add_argument('--child-args', default='{}')
  args = parser.parse_args()
  if args.child:
    print(json.dumps(run_child(args.child, args.mode, args.path,
                               json.loads(args.child_args))))
    return
  if args.quick:
    args.episodes, args.steps, args.repeats, args.passes = 12, 40, 1, 1
    args.shuffle_buffer = min(args.shuffle_buffer, 1000)
  started = time.perf_counter()
  args.load_at_start = '{:.2f}/{:.2f}/{:.2f}'.format(*os.getloadavg())
  print(f'load at the start {args.load_at_start}', flush=True)
  paths = {'1x': bench_images.build_dataset(args.data_dir, args.episodes, args.steps),
           f'{args.scale}x': bench_images.build_dataset(
               args.data_dir, args.episodes * args.scale, args.steps)}
  if args.build_only:
    return
  for size in [int(s) for s in args.image_sizes.split(',')]:
    run_size(args, paths, size or None, started)


def run_size(args, paths: Dict[str, str], size: Any, started: float) -> None:
  """Every contender at one image size: fills, turns, the table (and RESULTS.md)."""
  print(f'image size {size or "stored"}:', flush=True)
  child = {'shuffle_buffer': args.shuffle_buffer, 'passes': args.passes,
           'image_size': size, 'data_dir': args.data_dir}
  fills = {scale: spawn('fill', '', path, child, scale) for scale, path in paths.items()}
  names = [n for n in CONTENDERS if not args.only or n in args.only.split(',')]
  runs: Dict[Any, List[Dict[str, Any]]] = {}
  for _ in range(args.repeats):
    for name in names:
      scales = list(paths) if name == 'cache' else ['1x']
      for scale in scales:
        modes = ('loop',) if name.startswith('cache') else ('graph', 'loop')
        for mode in modes:
          result = spawn(name, mode, paths[scale], child, f' {scale}')
          runs.setdefault((name, scale, mode), []).append(result)
  results = {key: _best(r) for key, r in runs.items()}
  lines = report(results, fills)
  load = os.getloadavg()
  notes = [
      f'Dataset: bench_images.py\'s, {args.episodes} episodes x {args.steps} steps (1x) '
      f'and {args.episodes * args.scale} x {args.steps} ({args.scale}x); image size '
      f'{"stored (256, 128)" if not size else f"{size} (primary), {size // 2} (wrist)"}. '
      'Samples: RobotSamples(history=2, action_chunk=4, last_step=\'valid\'), '
      f'batches of {BATCH}; the cache samples uniformly (with replacement) over every '
      'anchor of the split, an "epoch" being as many samples as the split has anchors.',
      f'Method: each run in its own process, one untimed epoch, then {args.passes} '
      f'timed; {args.repeats} runs each, taking turns. samples/s: the fastest run; '
      'CPU us/sample: the least process CPU (all threads) per sample; x Octo per CPU-s: '
      "the Octo recipe's least CPU per sample (either way) over this row's; RssAnon and "
      'RssFile at the end of the run (the largest), peak RSS = VmHWM.',
      f'Total time {time.perf_counter() - started:.0f}s; load average at the end '
      f'{load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}.']
  print('\n'.join([''] + lines + [''] + notes))
  if args.write_results:
    write_results(lines, notes, args, size)


def write_results(lines: List[str], notes: List[str], args, image_size) -> None:
  import bench_fast_path  # pylint: disable=g-import-not-at-top
  path = os.path.join(HERE, 'RESULTS.md')
  size = f'image size {image_size}' if image_size else 'stored size'
  header = f'## Decoded replay cache, {size} (issue 33)'
  section = [header, '',
             f'`python benchmarks/bench_replay_cache.py --image-sizes {args.image_sizes}`, '
             f'{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; '
             f'{bench_fast_path.machine_info()}; `uptime` load at the start '
             f'{args.load_at_start}.', ''] + lines + [''] + notes + ['']
  text = open(path).read()
  if header in text:
    start = text.index(header)
    rest = text.find('\n## ', start + len(header))
    text = text[:start] + '\n'.join(section) + (text[rest + 1:] if rest >= 0 else '')
  else:
    text = text.rstrip('\n') + '\n\n' + '\n'.join(section)
  with open(path, 'w') as f:
    f.write(text)


if __name__ == '__main__':
  main()
