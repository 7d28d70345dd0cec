"""Conversion throughput: Minari and D4RL <-> RLDS, against the minari package.

Not a test. Run from the repository root:

  .venv/bin/python benchmarks/bench_convert_minari.py [--episodes 2000]
      [--steps 100] [--repeats 2]

Writes one Minari dataset of vector episodes (``--steps`` transitions each,
17-dim float32 observations, 6-dim float32 actions) with
`rlds_lite.convert.minari.to_minari`, then times, in transitions per second
(best of ``--repeats`` interleaved runs, wall and CPU time):

* ``minari.load_dataset(id).iterate_episodes()`` (the reference reader),
* ``from_minari`` to NumPy Episodes, and on to a dense ``tf.data`` dataset,
* ``to_minari`` (RLDS -> Minari),
* ``to_d4rl`` and ``from_d4rl`` (RLDS <-> D4RL rows, in memory).

Every reader touches every array of every episode (sums it), so lazy reads
cannot win by skipping work. Prints a markdown table with the ratio to the
minari package's reader.
"""

import argparse
import os
import shutil
import tempfile
import time
from typing import Callable, Dict, List, Tuple

import numpy as np

from rlds_lite.convert import d4rl
from rlds_lite.convert import episodes as episodes_lib
from rlds_lite.convert import minari as minari_lib


def make_episodes(num_episodes: int, num_steps: int) -> List[dict]:
  """RLDS Episodes of ``num_steps + 1`` steps, every third one terminated."""
  rng = np.random.default_rng(0)
  out = []
  for index in range(num_episodes):
    length = num_steps + 1
    action = rng.normal(size=(length, 6)).astype(np.float32)
    reward = rng.normal(size=length).astype(np.float32)
    action[-1] = 0
    reward[-1] = 0
    terminated = index % 3 == 0
    steps = {
        'observation': rng.normal(size=(length, 17)).astype(np.float32),
        'action': action, 'reward': reward,
        'discount': _discount(length, terminated),
        **episodes_lib.rlds_flags(length, terminated)}
    out.append({'steps': steps, 'episode_id': np.int64(index)})
  return out


def _discount(length: int, terminated: bool) -> np.ndarray:
  discount = np.ones(length, np.float32)
  discount[-1] = 0
  if terminated:
    discount[-2] = 0
  return discount


def run_interleaved(fns: Dict[str, Callable[[], object]],
                    repeats: int) -> Dict[str, Tuple[float, float]]:
  """Best (wall, CPU) seconds of each function, the runs interleaved.

  The machine is shared: interleaving spreads load changes over all rows, and
  the CPU time of this process is less sensitive to other processes.
  """
  best = {name: (float('inf'), float('inf')) for name in fns}
  for _ in range(repeats):
    for name, fn in fns.items():
      wall, cpu = time.perf_counter(), time.process_time()
      fn()
      wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
      best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
  return best


def _touch_steps(episodes) -> float:
  total = 0.0
  for episode in episodes:
    steps = episode['steps']
    total += float(steps['observation'][-1, 0]) + float(steps['reward'].sum())
    total += float(steps['action'][0, 0])
  return total


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--episodes', type=int, default=2000)
  parser.add_argument('--steps', type=int, default=100)
  parser.add_argument('--repeats', type=int, default=2)
  args = parser.parse_args()

  episodes = make_episodes(args.episodes, args.steps)
  transitions = args.episodes * args.steps
  root = tempfile.mkdtemp(prefix='bench_minari_')
  try:
    run(args, episodes, transitions, root)
  finally:
    shutil.rmtree(root, ignore_errors=True)


def run(args: argparse.Namespace, episodes: List[dict], transitions: int,
        root: str) -> None:
  """Writes the dataset under ``root``, times every conversion, prints."""
  os.environ['MINARI_DATASETS_PATH'] = root
  import minari  # pylint: disable=g-import-not-at-top

  dataset_id = 'bench/vectors-v0'
  def write_minari():
    minari_lib.to_minari(episodes, root, dataset_id, if_exists='overwrite')

  def read_minari_package():
    total = 0.0
    for episode in minari.load_dataset(dataset_id).iterate_episodes():
      total += float(episode.observations[-1, 0]) + float(episode.rewards.sum())
      total += float(episode.actions[0, 0])
    return total

  def read_from_minari():
    return _touch_steps(minari_lib.from_minari(os.path.join(root, dataset_id)))

  def read_from_minari_tf():
    ds = episodes_lib.to_dataset(
        minari_lib.from_minari(os.path.join(root, dataset_id)), dense=True)
    return _touch_steps(ds.as_numpy_iterator())

  data = {}

  def write_d4rl():
    data['rows'] = d4rl.to_d4rl(episodes)

  def read_d4rl():
    return _touch_steps(d4rl.from_d4rl(data['rows']))

  write_minari()
  write_d4rl()
  assert read_from_minari() == read_minari_package()
  reference = 'minari package: load_dataset().iterate_episodes()'
  rows = run_interleaved({
      'to_minari (RLDS -> Minari HDF5)': write_minari,
      reference: read_minari_package,
      'from_minari -> NumPy Episodes': read_from_minari,
      'from_minari -> dense tf.data (to_dataset)': read_from_minari_tf,
      'to_d4rl (RLDS -> D4RL rows)': write_d4rl,
      'from_d4rl (D4RL rows -> NumPy Episodes)': read_d4rl,
  }, args.repeats)
  print(f'{args.episodes} episodes x {args.steps} transitions '
        f'({transitions} transitions), obs 17 float32, action 6 float32; '
        f'best of {args.repeats} interleaved runs\n')
  print('| conversion | wall s | transitions/s (wall) | CPU s | '
        'vs minari reader (wall) | vs minari reader (CPU) |')
  print('| --- | ---: | ---: | ---: | ---: | ---: |')
  for name, (wall, cpu) in rows.items():
    print(f'| {name} | {wall:.3f} | {transitions / wall:,.0f} | {cpu:.3f} | '
          f'{rows[reference][0] / wall:.2f}x | {rows[reference][1] / cpu:.2f}x |')


if __name__ == '__main__':
  main()
