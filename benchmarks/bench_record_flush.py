"""Benchmark: what flushing at every episode costs `rlds_lite.envlogger.record`.

Not a test. `record` flushes EnvLogger's files as each reset is recorded
(``flush_every_episodes=1``), so that a crash loses at most the episode in
progress; each flush ends a riegeli chunk in each of the four files of the
writer folder and fsyncs them. This records the built-in environments with
the expert policy both ways, the two settings taking turns (best of
``--repeats``), and reports:

  - recording throughput (EnvLogger timesteps per second of wall time and of
    process CPU time: fsync waits show in the first only);
  - the recording's size on disk;
  - decoding throughput of the recording (``rlds_lite.tfds.read_rlds_episodes``,
    the reader behind ``build_from_envlogger``), timesteps per second.

``flush_every_episodes`` of a million stands for EnvLogger's own default
(which flushes at random, one timestep in 5000).

Usage:
  python benchmarks/bench_record_flush.py [--repeats 2] [--scale 1.0]
"""

import argparse
import datetime
import os
import platform
import shutil
import tempfile
import time
from typing import Any, Dict, Tuple

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
os.environ.setdefault('GLOG_minloglevel', '1')

from rlds_lite import envlogger  # pylint: disable=g-import-not-at-top
from rlds_lite import envs
from rlds_lite.tfds import read_rlds_episodes

ENVS = {
    # name: (make kwargs, episodes at scale 1)
    'catch (10x5 float32 boards, 10 timesteps/episode)': (
        ('catch', {}), 400),
    'catch_pixels (64x64x3 uint8, 10 timesteps/episode)': (
        ('catch_pixels', {'height': 64, 'width': 64}), 100),
    'reach (6 float32, <= 51 timesteps/episode)': (('reach', {}), 100),
}
SETTINGS = {'every episode (default)': 1, 'rarely (1e6 episodes)': 10**6}


def _size(path: str) -> int:
  return sum(os.path.getsize(os.path.join(root, f))
             for root, _, files in os.walk(path) for f in files)


def run_once(env_name: str, kwargs: Dict[str, Any], episodes: int,
             flush_every: int, base: str) -> Tuple[float, float, float, float]:
  """(record steps/s wall, record steps/s CPU, bytes per step, decode
  steps/s wall)."""
  env = envs.make(env_name, seed=0, **kwargs)
  path = tempfile.mkdtemp(dir=base)
  wall, cpu = time.perf_counter(), time.process_time()
  summary = envlogger.record(env, env.expert_policy, path, episodes, seed=0,
                             progress=False, options=envlogger.RecordingOptions(
                                 flush_every_episodes=flush_every))
  wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
  size = _size(path)
  sum(1 for _ in read_rlds_episodes(path))  # Warm (TF traces, file cache).
  start = time.perf_counter()
  decoded = sum(len(e['steps']['is_first']) for _, e in
                read_rlds_episodes(path))
  decode = time.perf_counter() - start
  assert decoded == summary.num_steps
  shutil.rmtree(path)
  return (summary.num_steps / wall, summary.num_steps / cpu,
          size / summary.num_steps, summary.num_steps / decode)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--repeats', type=int, default=2)
  parser.add_argument('--scale', type=float, default=1.0)
  args = parser.parse_args()
  print(f'{datetime.date.today()}  {platform.node()}  {os.cpu_count()} CPUs  '
        f'load {os.getloadavg()[0]:.1f}', flush=True)
  base = tempfile.mkdtemp(prefix='bench_record_flush_')
  try:
    for label, ((env_name, kwargs), episodes) in ENVS.items():
      episodes = max(1, int(episodes * args.scale))
      best = {name: None for name in SETTINGS}
      for _ in range(args.repeats):  # The settings take turns.
        for name, flush_every in SETTINGS.items():
          result = run_once(env_name, kwargs, episodes, flush_every, base)
          # Best of each: throughputs the highest, the size the same.
          best[name] = result if best[name] is None else tuple(
              max(a, b) for a, b in zip(result, best[name]))
      print(f'\n{label}, {episodes} episodes', flush=True)
      print(f'  {"flush":26s} {"record/s wall":>14s} {"record/s CPU":>13s} '
            f'{"bytes/step":>11s} {"decode/s":>9s}')
      for name, (wall, cpu, size, decode) in best.items():
        print(f'  {name:26s} {wall:14,.0f} {cpu:13,.0f} {size:11,.1f} '
              f'{decode:9,.0f}', flush=True)
  finally:
    shutil.rmtree(base)


if __name__ == '__main__':
  main()
