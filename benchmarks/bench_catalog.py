"""Speed of the episode catalog and of ``load(..., episodes=...)``.

Not a test. Run from the repository root:

  .venv/bin/python benchmarks/bench_catalog.py [--episodes 10000] [--repeats 3]

Writes a robot-like dataset once (``--episodes`` episodes of 10-59 steps with
a 16x16 PNG camera, a 7-D state and action, a ``language_instruction`` Text
step field, ``success``/``file_path``/``episode_id`` metadata; 500 episodes
per shard) under ``--data-dir``, then, contenders taking turns run by run
(median of ``--repeats``):

- the catalog build (one streaming pass, ``cache=False``), per 1,000 episodes,
  and reading the cached catalog;
- ``rlds_lite.load(path, dense=True, episodes=...)`` for k random episodes
  (and k contiguous ones) against a full dense read of the split, and against
  TFDS slicing (``'train[a:b]'``) for the contiguous case; each result is
  consumed in a Python loop.
"""

import argparse
import os
import statistics
import time

import numpy as np
import tensorflow_datasets as tfds

import rlds_lite
from rlds_lite import catalog
from rlds_lite.tfds import EpisodeWriter
from rlds_lite.tfds import FileOptions


def _write(data_dir: str, num_episodes: int) -> str:
  path = os.path.join(data_dir, 'robot', '1.0.0')
  if os.path.exists(os.path.join(path, 'dataset_info.json')):
    return path
  features = tfds.features.FeaturesDict({
      'steps': tfds.features.Dataset({
          'observation': {
              'image': tfds.features.Image(shape=(16, 16, 3)),
              'state': tfds.features.Tensor(shape=(7,), dtype=np.float32)},
          'action': tfds.features.Tensor(shape=(7,), dtype=np.float32),
          'reward': np.float32, 'discount': np.float32,
          'is_first': np.bool_, 'is_last': np.bool_, 'is_terminal': np.bool_,
          'language_instruction': tfds.features.Text()}),
      'episode_metadata': {'success': np.bool_,
                           'file_path': tfds.features.Text(),
                           'episode_id': np.int64}})
  tasks = ['pick up the red block', 'open the drawer', 'close the drawer']
  rng = np.random.default_rng(0)
  with EpisodeWriter(data_dir, 'robot', features,
                     options=FileOptions(max_episodes_per_file=500)) as writer:
    for i in range(num_episodes):
      t = int(rng.integers(10, 60))
      writer.add_episode({
          'steps': {
              'observation': {
                  'image': rng.integers(0, 255, (t, 16, 16, 3), np.uint8),
                  'state': rng.normal(size=(t, 7)).astype(np.float32)},
              'action': rng.normal(size=(t, 7)).astype(np.float32),
              'reward': (np.arange(t) == t - 2).astype(np.float32),
              'discount': np.ones(t, np.float32),
              'is_terminal': np.arange(t) == t - 1 if i % 3 else
                             np.zeros(t, bool),
              'language_instruction': [tasks[i % 3]] * t},
          'episode_metadata': {'success': bool(i % 2),
                               'file_path': f'/raw/ep{i}.h5',
                               'episode_id': i}})
  return writer.path


def _consume(dataset) -> int:
  count = 0
  for _ in dataset:
    count += 1
  return count


def _turns(runs, repeats):
  """Median seconds of each run, the runs taking turns."""
  times = {name: [] for name in runs}
  for name, fn in runs.items():
    fn()  # Warm-up (tracing, page cache).
  for _ in range(repeats):
    for name, fn in runs.items():
      start = time.perf_counter()
      fn()
      times[name].append(time.perf_counter() - start)
  return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
  parser = argparse.ArgumentParser()
  parser.add_argument('--episodes', type=int, default=10000)
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--data-dir', default='/tmp/rlds_lite_bench_catalog')
  args = parser.parse_args()
  path = _write(args.data_dir, args.episodes)
  n = args.episodes
  print(f'load average {os.getloadavg()[0]:.1f}; {n} episodes at {path}')
  catalog.episodes(path, progress=False)  # Make sure a cache exists.
  times = _turns({
      'build': lambda: catalog.episodes(path, progress=False, cache=False),
      'cached': lambda: catalog.episodes(path, progress=False),
  }, args.repeats)
  print('| catalog | seconds | per 1,000 episodes |')
  print('| --- | ---: | ---: |')
  for name, seconds in times.items():
    print(f'| {name} | {seconds:.3f} | {1000 * seconds / n:.3f} |')

  rng = np.random.default_rng(0)
  runs = {'full dense read': lambda: _consume(rlds_lite.load(path, dense=True))}
  for k in (1, 10, 100, 1000):
    chosen = rng.choice(n, k, replace=False)
    runs[f'{k} random'] = lambda c=chosen: _consume(
        rlds_lite.load(path, dense=True, episodes=c))
  start = n // 3
  runs['1000 contiguous'] = lambda: _consume(
      rlds_lite.load(path, dense=True, episodes=range(start, start + 1000)))
  runs['1000 contiguous, TFDS slice'] = lambda: _consume(
      rlds_lite.load(path, f'train[{start}:{start + 1000}]', dense=True))
  times = _turns(runs, args.repeats)
  full = times['full dense read']
  print('| load(dense=True) | seconds | vs full read |')
  print('| --- | ---: | ---: |')
  for name, seconds in times.items():
    print(f'| {name} | {seconds:.3f} | {seconds / full:.4f} |')


if __name__ == '__main__':
  main()
