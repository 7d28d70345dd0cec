"""Benchmark: step shuffling, rlds_lite vs the RLDS FAQ recipes, at equal quality.

Not a test. Writes one synthetic RLDS dataset in the TFDS format (random
vector steps: observation float32[``--obs-dim``], action float32[2], reward,
discount and the RLDS flags; default 1000 episodes of 50-250 steps, half
terminal, in 3 shard files) and runs four pipelines that produce shuffled
batches of 256 steps, each in its own subprocess (for its peak RSS):

  (1) ``rlds_lite``: ``pipeline.shuffled_steps`` with its defaults
      (16 disjoint slices, 4 read at a time, a sliding window of 8 blocks of
      8 episodes, one block read ahead);
  (2) ``faq_interleave``: the RLDS FAQ recipe with disjoint split slices:
      ``tfds`` ``as_dataset`` of ``N`` even slices (``tfds.even_splits``),
      each ``flat_map(lambda e: e['steps'])``, interleaved round-robin
      (``choose_from_datasets``, i.e. ``interleave(cycle_length=N,
      block_length=1)``), then ``batch``. ``N`` (``--faq-slices``, default
      60) was tuned on the default dataset so that a batch mixes as many
      episodes as rlds_lite's (about 60; both are printed);
  (3) ``shuffle_same_steps``: one ``as_dataset`` of the split, ``flat_map``
      to steps, ``shuffle(H)``, ``batch``, where ``H`` is the number of steps
      rlds_lite's window and read-ahead hold at most (12 blocks of 8
      episodes: the window, the next unit's block, the block being read and
      its concatenation, and the block read ahead): it mixes more episodes
      per batch than rlds_lite;
  (4) ``shuffle_same_quality``: the same with the smallest ``H`` (found by
      bisection on the measured quality, in the parent process) whose batches
      mix at least as many episodes as rlds_lite's.

Every pipeline reads every step once per epoch. Throughput is steps per
second of wall time of the median of ``--epochs`` epochs consumed by a
Python loop (after the pipeline is built; build time is reported apart),
and CPU seconds of the subprocess over all epochs (steadier than wall time
on a loaded machine). Shuffle quality is ``pipeline.shuffle_quality`` (distinct
episodes per batch) over the first ``--quality-batches`` batches of the
same pipeline with ``episode_id`` added to every step (separately, so the
timed run of the baselines pays no per-step ``map`` for it). Peak RSS is
the process's high-water mark (``VmHWM``) and its growth over the RSS after
``import tensorflow`` and building the pipeline (what the pipeline's own
buffers add on top of the TF runtime).

Usage:
  python benchmarks/bench_shuffle.py [--episodes N] [--obs-dim D]
      [--faq-slices N] [--epochs N] [--data-dir DIR]
      [--write-results | --append-results]
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from typing import Any, Dict

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

BATCH = 256
PIPELINES = ('rlds_lite', 'faq_interleave', 'shuffle_same_steps',
             'shuffle_same_quality')


def _status_kb(field: str) -> int:
  """A ``/proc/self/status`` memory field (``VmRSS``, ``VmHWM``) in KB."""
  with open('/proc/self/status') as f:
    for line in f:
      if line.startswith(field + ':'):
        return int(line.split()[1])
  return 0


def _episode(rng: Any, length: int, obs_dim: int, terminal: bool
             ) -> Dict[str, Any]:
  """Random vector steps of one episode (RLDS flags, invalid last action)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  index = np.arange(length)
  action = rng.normal(size=(length, 2)).astype(np.float32)
  action[-1] = 0
  reward = rng.normal(size=length).astype(np.float32)
  reward[-1] = 0
  discount = np.ones(length, np.float32)
  discount[-1] = 0
  return {
      'observation': rng.normal(size=(length, obs_dim)).astype(np.float32),
      'action': action, 'reward': reward, 'discount': discount,
      'is_first': index == 0, 'is_last': index == length - 1,
      'is_terminal': (index == length - 1) & terminal,
  }


def write_dataset(args: Any) -> str:
  """Writes (once) the synthetic dataset; returns its directory."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from rlds_lite.tfds import EpisodeWriter, FileOptions  # pylint: disable=g-import-not-at-top
  name = (f'shuffle_bench_{args.episodes}_{args.min_length}_'
          f'{args.max_length}_{args.obs_dim}')
  path = os.path.join(args.data_dir, name, '1.0.0')
  if os.path.exists(os.path.join(path, 'dataset_info.json')):
    return path
  features = {
      'steps': {
          'observation': tf.TensorSpec([args.obs_dim], tf.float32),
          'action': tf.TensorSpec([2], tf.float32),
          'reward': tf.TensorSpec([], tf.float32),
          'discount': tf.TensorSpec([], tf.float32),
          'is_first': tf.TensorSpec([], tf.bool),
          'is_last': tf.TensorSpec([], tf.bool),
          'is_terminal': tf.TensorSpec([], tf.bool),
      },
      'episode_id': tf.TensorSpec([], tf.int64),
  }
  rng = np.random.default_rng(0)
  options = FileOptions(max_episodes_per_file=-(-args.episodes // 3))
  with EpisodeWriter(args.data_dir, name, features, options=options) as writer:
    for i in range(args.episodes):
      length = int(rng.integers(args.min_length, args.max_length + 1))
      steps = _episode(rng, length, args.obs_dim, terminal=bool(i % 2))
      writer.add_episode({'steps': steps, 'episode_id': np.int64(i)})
  return writer.path


def _pipeline(name: str, path: str, with_ids: bool, args: Any):
  """The tf.data pipeline ``name`` (batches of steps)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  if name == 'rlds_lite':
    from rlds_lite.pipeline import shuffling  # pylint: disable=g-import-not-at-top
    return shuffling.shuffled_steps(
        path, batch_size=BATCH, seed=0,
        episode_fields='episode_id' if with_ids else ())
  builder = tfds.builder_from_directory(path)

  def steps(episode):
    out = episode['steps']
    if with_ids:
      out = out.map(lambda s: {**s, 'episode_id': episode['episode_id']})
    return out

  if name == 'faq_interleave':
    slices = [builder.as_dataset(split=s).flat_map(steps)
              for s in tfds.even_splits('train', args.faq_slices)]
    mixed = tf.data.Dataset.choose_from_datasets(
        slices, tf.data.Dataset.range(len(slices)).repeat(),
        stop_on_empty_dataset=False)
    return mixed.batch(BATCH).prefetch(2)
  if name.startswith('shuffle_'):
    buffer = (args.buffer_steps if name == 'shuffle_same_steps' else
              args.matched_buffer_steps)
    ds = builder.as_dataset(split='train').flat_map(steps)
    return ds.shuffle(buffer, seed=0).batch(BATCH).prefetch(2)
  raise ValueError(name)


def run_one(name: str, path: str, args: Any) -> Dict[str, Any]:
  """Runs pipeline ``name`` once (in this process) and returns its numbers."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from rlds_lite import pipeline  # pylint: disable=g-import-not-at-top
  del tf
  start = time.perf_counter()
  ds = _pipeline(name, path, False, args)
  build = time.perf_counter() - start
  rss_before = _status_kb('VmRSS')
  cpu = os.times()
  steps, walls = 0, []
  for _ in range(args.epochs):
    start = time.perf_counter()
    for batch in ds.as_numpy_iterator():
      steps += len(batch['reward'])
    walls.append(time.perf_counter() - start)
  wall = sorted(walls)[len(walls) // 2]   # the median epoch
  cpu_end = os.times()
  peak = _status_kb('VmHWM')
  quality = pipeline.shuffle_quality(_pipeline(name, path, True, args),
                                     max_batches=args.quality_batches)
  return {
      'pipeline': name, 'steps': steps, 'build_s': build, 'wall_s': wall,
      'cpu_s': (cpu_end.user + cpu_end.system) - (cpu.user + cpu.system),
      'steps_per_s': steps / args.epochs / wall, 'peak_rss_mb': peak / 1024,
      'rss_growth_mb': (peak - rss_before) / 1024,
      'distinct_episodes': quality.mean_distinct_episodes,
  }


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--episodes', type=int, default=1000)
  parser.add_argument('--min-length', type=int, default=50)
  parser.add_argument('--max-length', type=int, default=250)
  parser.add_argument('--epochs', type=int, default=3)
  parser.add_argument('--obs-dim', type=int, default=64)
  parser.add_argument('--faq-slices', type=int, default=60)
  parser.add_argument('--buffer-steps', type=int, default=0,
                      help='shuffle buffer (steps); 0: what rlds_lite holds')
  parser.add_argument('--matched-buffer-steps', type=int, default=0,
                      help='buffer of shuffle_same_quality; 0: calibrate')
  parser.add_argument('--quality-batches', type=int, default=30)
  parser.add_argument('--data-dir', default='/tmp/rlds_lite_bench_shuffle')
  parser.add_argument('--only', default=','.join(PIPELINES))
  parser.add_argument('--run', help=argparse.SUPPRESS)
  parser.add_argument('--path', help=argparse.SUPPRESS)
  parser.add_argument('--write-results', action='store_true',
                      help='write benchmarks/results_shuffle.md')
  parser.add_argument('--append-results', action='store_true',
                      help='append to benchmarks/results_shuffle.md')
  args = parser.parse_args()
  if args.run:
    print(json.dumps(run_one(args.run, args.path, args)))
    return
  path = write_dataset(args)
  from rlds_lite.pipeline import shuffling  # pylint: disable=g-import-not-at-top
  memory = shuffling.estimate_memory(path, batch_size=BATCH)
  num_steps = shuffling.count_steps(path)
  if not args.buffer_steps:
    args.buffer_steps = int(round((memory.pools + memory.read_ahead) /
                                  memory.step_bytes))
  results = {}
  for name in args.only.split(','):
    if (name == 'shuffle_same_quality' and not args.matched_buffer_steps and
        'rlds_lite' in results):
      args.matched_buffer_steps = _matched_buffer(
          path, args, results['rlds_lite']['distinct_episodes'])
    elif name == 'shuffle_same_quality' and not args.matched_buffer_steps:
      args.matched_buffer_steps = args.buffer_steps
    cmd = [sys.executable, os.path.abspath(__file__), '--run', name,
           '--path', path, '--faq-slices', str(args.faq_slices),
           '--buffer-steps', str(args.buffer_steps),
           '--matched-buffer-steps', str(args.matched_buffer_steps),
           '--quality-batches', str(args.quality_batches),
           '--epochs', str(args.epochs)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    results[name] = json.loads(out.stdout.strip().splitlines()[-1])
    assert results[name]['steps'] == args.epochs * num_steps, results[name]
    print(f'{name}: {results[name]}', file=sys.stderr)
  report = _table(results, args, memory, num_steps)
  print(report)
  if args.write_results or args.append_results:
    mode = 'a' if args.append_results else 'w'
    if args.append_results:   # A section of the file, not a new document.
      report = '\n## Run: `' + ' '.join(sys.argv[1:]) + '`' + report[
          report.index('\n'):]
    with open(os.path.join(HERE, 'results_shuffle.md'), mode) as f:
      f.write(report)


def _matched_buffer(path: str, args: Any, target: float) -> int:
  """The smallest shuffle buffer whose batches mix ``target`` episodes."""
  import argparse as ap  # pylint: disable=g-import-not-at-top
  from rlds_lite import pipeline  # pylint: disable=g-import-not-at-top
  low, high = 1, args.buffer_steps
  while high - low > max(8, high // 20):
    mid = (low + high) // 2
    trial = ap.Namespace(**{**vars(args), 'matched_buffer_steps': mid})
    quality = pipeline.shuffle_quality(
        _pipeline('shuffle_same_quality', path, True, trial),
        max_batches=args.quality_batches).mean_distinct_episodes
    low, high = (low, mid) if quality >= target else (mid, high)
  return high


def _table(results: Dict[str, Any], args: Any, memory: Any,
           num_steps: int) -> str:
  """The markdown report: a row per pipeline, ratios of rlds_lite to each."""
  ours = results.get('rlds_lite')
  lines = [
      '# Step shuffling: rlds_lite vs the RLDS FAQ recipes',
      '',
      f'{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; '
      f'`uptime`: {subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()}',
      '',
      f'Dataset: {args.episodes} episodes of random vectors, {num_steps} '
      f'steps '
      f'({memory.mean_episode_steps:.1f} per episode), step '
      f'{memory.step_bytes} B (observation float32[{args.obs_dim}]), 3 shard '
      f'files; batches of {BATCH} steps, {args.epochs} epochs (each step '
      'once per epoch). '
      f'Baselines: FAQ interleave of {args.faq_slices} disjoint slices; '
      f'shuffle buffers of {args.buffer_steps} steps (what the rlds_lite window '
      f'holds) and {args.matched_buffer_steps} steps (same quality).',
      '',
      f'rlds_lite estimate: `{memory!r}`',
      '',
      '| pipeline | steps/s | CPU s | build s | distinct episodes / batch '
      '| peak RSS MB | RSS growth MB | throughput vs | steps per CPU s vs '
      '| peak RSS vs | RSS growth vs |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for name, r in results.items():
    ratios = ['', '', '', '']
    if ours and name != 'rlds_lite':
      ratios = [f'{ours["steps_per_s"] / r["steps_per_s"]:.2f}x',
                f'{r["cpu_s"] / max(ours["cpu_s"], 1e-9):.2f}x',
                f'{ours["peak_rss_mb"] / r["peak_rss_mb"]:.2f}x',
                f'{ours["rss_growth_mb"] / max(r["rss_growth_mb"], 1e-9):.2f}x']
    lines.append(
        f'| {name} | {r["steps_per_s"]:,.0f} | {r["cpu_s"]:.1f} | '
        f'{r["build_s"]:.1f} | {r["distinct_episodes"]:.1f} | '
        f'{r["peak_rss_mb"]:.0f} | {r["rss_growth_mb"]:.0f} | '
        + ' | '.join(ratios) + ' |')
  lines += ['', '(ratios: rlds_lite / that baseline; target: throughput '
            '>= 2x, peak RSS <= 0.5x)', '']
  return '\n'.join(lines)


if __name__ == '__main__':
  main()
