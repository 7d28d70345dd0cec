"""Conversion throughput: il-representations, TED and ALF <-> RLDS Episodes.

Not a test. Run from the repository root:

  .venv/bin/python benchmarks/bench_convert_formats.py [--episodes 2000]
      [--steps 50] [--wds-episodes 200] [--repeats 2]

No reference package for these formats is installed (il-representations,
webdataset, torchrl/tensordict and ALF all need torch), so the baseline is a
naive per-step Python loop doing the same conversion (the NumPy reference
implementations of the tests, written the obvious way). Times, in RLDS steps
per second (best of ``--repeats``), both directions for each format on
vector episodes (``--steps`` transitions each, 17-dim float32 observations,
6-dim float32 actions, every third episode terminated), checks that the
fast and the naive conversions agree, and prints a markdown table.
"""

import argparse
import os
import tempfile
import time
from typing import Any, Callable, Dict, List

import numpy as np

from rlds_lite.convert import alf
from rlds_lite.convert import episodes as episodes_lib
from rlds_lite.convert import il_representations as il
from rlds_lite.convert import ted


def make_episodes(num_episodes: int, num_steps: int) -> List[dict]:
  """RLDS Episodes of ``num_steps + 1`` steps, every third one terminated."""
  rng = np.random.default_rng(0)
  out = []
  for index in range(num_episodes):
    length = num_steps + 1
    terminated = index % 3 == 0
    action = rng.normal(size=(length, 6)).astype(np.float32)
    reward = rng.normal(size=length).astype(np.float32)
    discount = np.ones(length, np.float32)
    action[-1], reward[-1], discount[-1] = 0, 0, 0
    if terminated:
      discount[-2] = 0
    out.append({'steps': {
        'observation': rng.normal(size=(length, 17)).astype(np.float32),
        'action': action, 'reward': reward, 'discount': discount,
        **episodes_lib.rlds_flags(length, terminated)}})
  return out


# Naive per-step baselines ----------------------------------------------------


def naive_to_rows(episodes: List[dict]) -> Dict[str, np.ndarray]:
  obs, next_obs, acts, rews, dones, truncated = [], [], [], [], [], []
  for episode in episodes:
    steps = episode['steps']
    length = len(steps['is_last'])
    for t in range(length - 1):
      obs.append(steps['observation'][t])
      next_obs.append(steps['observation'][t + 1])
      acts.append(steps['action'][t])
      rews.append(steps['reward'][t])
      dones.append(t == length - 2)
      truncated.append(t == length - 2 and not steps['is_terminal'][-1])
  return {'obs': np.array(obs), 'next_obs': np.array(next_obs),
          'acts': np.array(acts), 'rews': np.array(rews),
          'dones': np.array(dones), 'truncated': np.array(truncated)}


def naive_from_rows(data: Dict[str, np.ndarray]) -> List[dict]:
  out, current = [], None
  for row in range(len(data['dones'])):
    if current is None:
      current = {'observation': [], 'action': [], 'reward': [],
                 'discount': []}
    terminal = bool(data['dones'][row] and not data['truncated'][row])
    current['observation'].append(data['obs'][row])
    current['action'].append(data['acts'][row])
    current['reward'].append(data['rews'][row])
    current['discount'].append(np.float32(0 if terminal else 1))
    if data['dones'][row]:
      current['observation'].append(data['next_obs'][row])
      current['action'].append(np.zeros_like(data['acts'][row]))
      current['reward'].append(np.zeros_like(data['rews'][row]))
      current['discount'].append(np.float32(0))
      steps = {k: np.array(v) for k, v in current.items()}
      steps.update(episodes_lib.rlds_flags(len(steps['reward']), terminal))
      out.append({'steps': steps})
      current = None
  return out


def naive_to_ted(episodes: List[dict]) -> Dict[str, Any]:
  rows = naive_to_rows(episodes)
  dones = rows['dones'][:, None]
  truncated = rows['truncated'][:, None]
  return {'observation': rows['obs'], 'action': rows['acts'],
          'next': {'observation': rows['next_obs'],
                   'reward': rows['rews'][:, None], 'done': dones,
                   'terminated': dones & ~truncated, 'truncated': truncated}}


def naive_from_ted(data: Dict[str, Any]) -> List[dict]:
  return naive_from_rows({
      'obs': data['observation'], 'next_obs': data['next']['observation'],
      'acts': data['action'], 'rews': data['next']['reward'][:, 0],
      'dones': data['next']['done'][:, 0],
      'truncated': data['next']['truncated'][:, 0]})


def naive_to_alf(episodes: List[dict]) -> Dict[str, np.ndarray]:
  columns = {k: [] for k in ('step_type', 'observation', 'prev_action',
                             'reward', 'discount')}
  for episode in episodes:
    steps = episode['steps']
    length = len(steps['is_last'])
    for t in range(length):
      first = t == 0
      columns['step_type'].append(0 if first else 2 if t == length - 1
                                  else 1)
      columns['observation'].append(steps['observation'][t])
      columns['prev_action'].append(
          np.zeros(6, np.float32) if first else steps['action'][t - 1])
      columns['reward'].append(0 if first else steps['reward'][t - 1])
      columns['discount'].append(1 if first else steps['discount'][t - 1])
  out = {k: np.array(v) for k, v in columns.items()}
  out['step_type'] = out['step_type'].astype(np.int32)
  out['reward'] = out['reward'].astype(np.float32)
  out['discount'] = out['discount'].astype(np.float32)
  return out


def naive_from_alf(data: Dict[str, np.ndarray]) -> List[dict]:
  out, current = [], None
  for row in range(len(data['step_type'])):
    step_type = data['step_type'][row]
    if step_type == 0:
      current = {'observation': [], 'action': [], 'reward': [],
                 'discount': []}
    else:
      current['action'].append(data['prev_action'][row])
      current['reward'].append(data['reward'][row])
      current['discount'].append(data['discount'][row])
    current['observation'].append(data['observation'][row])
    if step_type == 2:
      current['action'].append(np.zeros_like(data['prev_action'][row]))
      current['reward'].append(np.float32(0))
      current['discount'].append(np.float32(0))
      steps = {k: np.array(v) for k, v in current.items()}
      steps.update(episodes_lib.rlds_flags(
          len(steps['reward']), bool(data['discount'][row] == 0)))
      out.append({'steps': steps})
  return out


# Timing ----------------------------------------------------------------------


def best_time(fn: Callable[[], Any], repeats: int) -> float:
  best = float('inf')
  for _ in range(repeats):
    start = time.perf_counter()
    fn()
    best = min(best, time.perf_counter() - start)
  return best


def assert_same(a: List[dict], b: List[dict]) -> None:
  assert len(a) == len(b)
  for x, y in zip(a, b):
    for key in ('observation', 'action', 'reward', 'discount', 'is_terminal'):
      np.testing.assert_array_equal(x['steps'][key], y['steps'][key])


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--episodes', type=int, default=2000)
  parser.add_argument('--steps', type=int, default=50)
  parser.add_argument('--wds-episodes', type=int, default=200)
  parser.add_argument('--repeats', type=int, default=2)
  args = parser.parse_args()
  episodes = make_episodes(args.episodes, args.steps)
  steps = args.episodes * (args.steps + 1)
  rows: List[List[str]] = []

  def add(fmt, direction, fast, naive, count):
    fast_time = best_time(fast, args.repeats)
    naive_time = best_time(naive, args.repeats) if naive else None
    rows.append([fmt, direction, f'{count / fast_time:,.0f}',
                 f'{count / naive_time:,.0f}' if naive else 'n/a',
                 f'{naive_time / fast_time:.1f}x' if naive else 'n/a'])

  data = il.to_il_dict(episodes)
  assert_same(il.from_il_dict(data), naive_from_rows(naive_to_rows(episodes)))
  add('il-representations dict', 'RLDS -> X', lambda: il.to_il_dict(episodes),
      lambda: naive_to_rows(episodes), steps)
  add('il-representations dict', 'X -> RLDS', lambda: il.from_il_dict(data),
      lambda: naive_from_rows(data), steps)

  nest = ted.to_ted(episodes)
  assert_same(ted.from_ted(nest), naive_from_ted(naive_to_ted(episodes)))
  add('TED (NumPy nest)', 'RLDS -> X', lambda: ted.to_ted(episodes),
      lambda: naive_to_ted(episodes), steps)
  add('TED (NumPy nest)', 'X -> RLDS', lambda: ted.from_ted(nest),
      lambda: naive_from_ted(nest), steps)
  with tempfile.TemporaryDirectory() as out:
    path = os.path.join(out, 'ted.h5')
    add('TED (H5 file)', 'RLDS -> X', lambda: ted.to_ted_h5(episodes, path),
        None, steps)
    add('TED (H5 file)', 'X -> RLDS', lambda: ted.from_ted(path), None, steps)

  time_steps = alf.to_alf(episodes)
  assert_same(alf.from_alf(time_steps),
              naive_from_alf(naive_to_alf(episodes)))
  add('ALF TimeSteps', 'RLDS -> X', lambda: alf.to_alf(episodes),
      lambda: naive_to_alf(episodes), steps)
  add('ALF TimeSteps', 'X -> RLDS', lambda: alf.from_alf(time_steps),
      lambda: naive_from_alf(time_steps), steps)

  small = episodes[:args.wds_episodes]
  small_steps = len(small) * (args.steps + 1)
  with tempfile.TemporaryDirectory() as out:
    counter = iter(range(10**6))
    write = lambda: il.to_webdataset(
        small, os.path.join(out, str(next(counter))), frames_per_shard=2000)
    add('webdataset shards', 'RLDS -> X', write, None, small_steps)
    shards = os.path.join(out, '0')
    assert_same(il.from_webdataset(shards), small)
    add('webdataset shards', 'X -> RLDS (safe unpickler)',
        lambda: il.from_webdataset(shards), None, small_steps)
    add('webdataset shards', 'X -> RLDS (allow_pickle=True)',
        lambda: il.from_webdataset(shards, allow_pickle=True), None,
        small_steps)

  print(f'{args.episodes} episodes x {args.steps + 1} steps (webdataset: '
        f'{len(small)} episodes); best of {args.repeats}; load: '
        f'{os.getloadavg()[0]:.2f}\n')
  print('| format | direction | rlds_lite steps/s | naive per-step loop '
        'steps/s | ratio |')
  print('|---|---|---:|---:|---:|')
  for row in rows:
    print('| ' + ' | '.join(row) + ' |')


if __name__ == '__main__':
  main()
