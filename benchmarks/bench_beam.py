"""Benchmark: a Beam build and Beam statistics on one and two workers vs the single-process path.

Not a test. On this machine (2 cores) Beam's DirectRunner with
``direct_running_mode=multi_processing`` starts its worker processes per job
(each imports TensorFlow), so small jobs measure mostly that start-up; the
numbers say what a job costs here, not what a cluster gains.

  (a) build: ``build_from_envlogger`` of ``--recordings`` CatchPixels recordings
      (one Beam work item each) without Beam, on Beam in this process
      (``in_memory``), and on 1 and 2 worker processes;
  (b) statistics: ``stats.compute`` of a dataset of ``--shards`` shard files
      (one work item each), single-process vs Beam on 1 and 2 workers.

Each Beam result is checked against the single-process one before it counts
(episodes equal; statistics' counts, min and max equal). Wall seconds of one
run each (``--repeats`` for the best of more), the load average around them.

Usage (take the lock: other jobs share the machine):
  flock /tmp/bench.lock python benchmarks/bench_beam.py [--recordings 8]
      [--episodes 25] [--shards 8] [--shard-episodes 500] [--repeats 1]
      [--write-results]
"""

import argparse
import datetime
import os
import shutil
import tempfile
import time
from typing import Any, Callable, Dict, List, Tuple

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

from absl import logging  # pylint: disable=g-import-not-at-top
import numpy as np

import rlds_lite
from rlds_lite import envlogger
from rlds_lite import envs
from rlds_lite import stats
from rlds_lite import synthetic
from rlds_lite.beam_runs import Beam
from rlds_lite.tfds import build_from_envlogger
from rlds_lite.tfds import episode_writer
from rlds_lite.tfds import FileOptions

RUNS = {
    'single process (no Beam)': None,
    'Beam, in this process (in_memory)': Beam.direct(1, 'in_memory'),
    'Beam, 1 worker process': Beam.direct(1),
    'Beam, 2 worker processes': Beam.direct(2),
}


def _load() -> str:
  return '/'.join(f'{x:.1f}' for x in os.getloadavg())


def _best(fn: Callable[[], Any], repeats: int) -> Tuple[float, Any]:
  best, result = float('inf'), None
  for _ in range(repeats):
    start = time.perf_counter()
    result = fn()
    best = min(best, time.perf_counter() - start)
  return best, result


def _recordings(root: str, count: int, episodes: int) -> None:
  for i in range(count):
    env = envs.make('catch_pixels', seed=i, height=64, width=64)
    envlogger.record(env, env.expert_policy, os.path.join(root, f'r{i}'),
                     episodes, seed=i, progress=False)


def bench_build(args: argparse.Namespace, work: str) -> List[Dict[str, Any]]:
  logs = os.path.join(work, 'logs')
  _recordings(logs, args.recordings, args.episodes)
  rows, reference = [], None
  for i, (label, beam) in enumerate(RUNS.items()):
    def build(i=i, beam=beam):
      data_dir = tempfile.mkdtemp(dir=work)
      return build_from_envlogger(logs, name=f'b{i}', data_dir=data_dir,
                                  beam=beam or False)
    load = _load()
    seconds, path = _best(build, args.repeats)
    episodes = list(rlds_lite.load(path, dense=True).as_numpy_iterator())
    if reference is None:
      reference = episodes
    steps = sum(len(e['steps']['reward']) for e in reference)
    assert len(episodes) == len(reference)
    for a, b in zip(reference, episodes):
      np.testing.assert_array_equal(a['steps']['observation'],
                                    b['steps']['observation'])
    rows.append({'what': label, 'seconds': seconds, 'steps': steps,
                 'load': f'{load} -> {_load()}'})
  return rows


def bench_stats(args: argparse.Namespace, work: str) -> List[Dict[str, Any]]:
  episodes = args.shards * args.shard_episodes
  path = episode_writer.write_dataset(
      synthetic.episodes(episodes, 10, 200, seed=0), work, 'sharded',
      options=FileOptions(max_episodes_per_file=args.shard_episodes))
  rows, reference = [], None
  for label, beam in RUNS.items():
    load = _load()
    seconds, result = _best(lambda beam=beam: stats.compute(
        path, cache=False, progress=False, beam=beam), args.repeats)
    if reference is None:
      reference = result
    assert result.num_steps == reference.num_steps
    for name, field in reference.fields.items():
      np.testing.assert_array_equal(result[name].min, field.min)
      np.testing.assert_array_equal(result[name].count, field.count)
    rows.append({'what': label, 'seconds': seconds,
                 'steps': reference.num_steps, 'load': f'{load} -> {_load()}'})
  return rows


def _table(title: str, rows: List[Dict[str, Any]], base: float) -> str:
  lines = [f'| {title} | seconds | steps/s | vs single process | load before -> after |',
           '| --- | ---: | ---: | ---: | --- |']
  for row in rows:
    lines.append(f"| {row['what']} | {row['seconds']:.1f} | "
                 f"{row['steps'] / row['seconds']:,.0f} | "
                 f"{base / row['seconds']:.2f}x | {row['load']} |")
  return '\n'.join(lines)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--recordings', type=int, default=8)
  parser.add_argument('--episodes', type=int, default=25)
  parser.add_argument('--shards', type=int, default=8)
  parser.add_argument('--shard-episodes', type=int, default=500)
  parser.add_argument('--repeats', type=int, default=1)
  parser.add_argument('--write-results', action='store_true')
  args = parser.parse_args()
  logging.set_verbosity(logging.ERROR)
  work = tempfile.mkdtemp(prefix='bench_beam_')
  try:
    started = datetime.datetime.now(datetime.timezone.utc)
    build_rows = bench_build(args, work)
    stats_rows = bench_stats(args, work)
  finally:
    shutil.rmtree(work, ignore_errors=True)
  text = '\n\n'.join([
      f'`flock /tmp/bench.lock python benchmarks/bench_beam.py '
      f'--recordings {args.recordings} --episodes {args.episodes} --shards '
      f'{args.shards} --shard-episodes {args.shard_episodes} --repeats '
      f'{args.repeats}`, '
      f'{started:%Y-%m-%d %H:%M} UTC; {os.cpu_count()} CPUs, load averages '
      '(1/5/15 min) in the tables; best of '
      f'{args.repeats}. Build: {args.recordings} CatchPixels recordings '
      f'(64x64x3 frames, PNG) of {args.episodes} episodes (one work item '
      f'each). Statistics: {args.shards * args.shard_episodes} synthetic '
      f'episodes of 10-199 steps in {args.shards} shard files (one work '
      'item each).',
      _table('build_from_envlogger', build_rows, build_rows[0]['seconds']),
      _table('stats.compute', stats_rows, stats_rows[0]['seconds'])])
  print(text)
  if args.write_results:
    results = os.path.join(os.path.dirname(__file__), 'RESULTS.md')
    with open(results, 'a') as f:
      f.write('\n## Beam on worker processes (issue 36)\n\n' + text + '\n')


if __name__ == '__main__':
  main()
