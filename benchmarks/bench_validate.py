"""Speed of rlds_lite.checks.validate (every rule, every episode).

Not a test. Run from the repository root:

  .venv/bin/python benchmarks/bench_validate.py [--episodes 300] [--repeats 3]

Compared on the same synthetic episodes (nested and dense steps):
``rlds_lite.validate_episodes`` (flags and open shapes of every episode,
raises at the first problem) and upstream ``rlds.is_valid_rlds_dataset``
(looks at the spec of the first episode only; a stub ``reverb`` module lets
upstream import without dm-reverb). ``checks.validate`` does more work than
either (NaN/Inf, last-step values, a full report), so ratios > 1 are its
margin, not a like-for-like race.
"""

import argparse
import statistics
import os
import sys
import time

import rlds_lite
from rlds_lite import checks
from rlds_lite import synthetic

sys.path.insert(0, os.path.dirname(__file__))
import bench_fast_path  # pylint: disable=g-import-not-at-top,wrong-import-position


def _time(fn, repeats):
  fn()  # Warm-up (tracing).
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    fn()
    times.append(time.perf_counter() - start)
  return statistics.median(times)


def main() -> None:
  parser = argparse.ArgumentParser()
  parser.add_argument('--episodes', type=int, default=300)
  parser.add_argument('--repeats', type=int, default=3)
  args = parser.parse_args()
  rlds = bench_fast_path.import_upstream_rlds()
  print('| steps | validator | seconds | episodes/s | vs checks.validate |')
  print('| --- | --- | ---: | ---: | ---: |')
  for dense in (False, True):
    data = synthetic.episodes(args.episodes, seed=0, dense=dense).cache()
    list(data)  # Fill the cache.
    runs = {
        'checks.validate (all rules, report)':
            lambda d=data: checks.validate(d, last_step_invalid=True),
        'rlds_lite.validate_episodes (flags, shapes)':
            lambda d=data: rlds_lite.validate_episodes(d),
    }
    if not dense:
      runs['upstream is_valid_rlds_dataset (1st episode spec)'] = (
          lambda d=data: rlds.rlds_types.is_valid_rlds_dataset(d))
    base = None
    for name, fn in runs.items():
      seconds = _time(fn, args.repeats)
      base = base or seconds
      print(f'| {"dense" if dense else "nested"} | {name} | {seconds:.3f} | '
            f'{args.episodes / seconds:,.0f} | {seconds / base:.2f}x |')


if __name__ == '__main__':
  main()
