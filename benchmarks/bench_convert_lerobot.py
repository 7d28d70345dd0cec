"""Conversion throughput RLDS <-> LeRobotDataset v3.0, against lerobot itself.

Not a test. Run from the repository root:

  .venv/bin/python benchmarks/bench_convert_lerobot.py [--episodes 20]
      [--steps 200] [--scale 4] [--repeats 2]
      [--lerobot-python .venv-lerobot/bin/python]

Episodes: ``--steps`` steps each, two cameras (96x96 and 64x64 RGB: a
moving gradient scene with sensor-like noise), an 8-dim state, a 7-dim
action, reward, discount and a language instruction (4 tasks). Every
conversion runs in a fresh process (its own peak RSS), the contenders taking
turns, ``--repeats`` rounds; the table shows the best round:

* rlds_lite ``to_lerobot`` from NumPy Episodes (AV1 video, as lerobot) and
  ``from_lerobot`` back to NumPy Episodes (frames decoded);
* the same through TFDS, as ``rlds-lite convert`` runs them: a TFDS dataset
  (PNG frames) -> LeRobot, and LeRobot -> a TFDS dataset;
* with ``--lerobot-python`` (a Python with lerobot 0.4.4): lerobot's own
  writer on the same frames (``LeRobotDataset.create`` / ``add_frame`` /
  ``save_episode``: its default PNG-then-encode path, and
  ``streaming_encoding=True``), and lerobot's reader (``dataset[i]`` for
  every frame, ``video_backend='pyav'``).

Memory: rlds_lite's conversions run again on ``--scale`` times as many
episodes; bounded memory shows as the same peak RSS.
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, Iterator, List

import numpy as np

CAMERAS = {'front': (96, 96), 'wrist': (64, 64)}
TASKS = ['pick up the red block', 'open the drawer', 'push the button',
         'stack the cups']
FPS = 10
_POOL = 4  # Distinct episodes, reused: generating frames costs nothing.


def _frames(length: int, height: int, width: int, seed: int) -> np.ndarray:
  rng = np.random.default_rng(seed)
  y, x = np.mgrid[0:height, 0:width]
  t = np.arange(length)[:, None, None]
  frames = np.empty((length, height, width, 3), np.uint8)
  frames[..., 0] = (x[None] * 2 + t * 3) % 256
  frames[..., 1] = (y[None] * 2 + 40) % 256
  frames[..., 2] = ((x[None] + y[None]) + t * 5) % 256
  box = (slice(None), slice(height // 4, height // 2),
         slice(width // 4, width // 2))
  frames[box] = 220
  noise = rng.integers(0, 6, size=frames.shape, dtype=np.uint8)
  return frames + noise


def _episode(index: int, steps: int) -> Dict[str, Any]:
  seed = index % _POOL
  rng = np.random.default_rng(seed)
  length = steps
  flags_last = np.arange(length) == length - 1
  return {
      'steps': {
          'observation': {
              'images': {name: _frames(length, h, w, seed + i)
                         for i, (name, (h, w)) in enumerate(CAMERAS.items())},
              'state': rng.normal(size=(length, 8)).astype(np.float32)},
          'action': rng.normal(size=(length, 7)).astype(np.float32),
          'reward': rng.normal(size=length).astype(np.float32),
          'discount': np.ones(length, np.float32),
          'language_instruction': np.array(
              [TASKS[seed].encode()] * length, object),
          'is_first': np.arange(length) == 0,
          'is_last': flags_last,
          'is_terminal': flags_last & (seed % 2 == 0)},
      'episode_id': np.int64(index)}


def episodes(count: int, steps: int) -> Iterator[Dict[str, Any]]:
  pool = [_episode(i, steps) for i in range(min(count, _POOL))]
  for index in range(count):
    episode = dict(pool[index % _POOL])
    episode['episode_id'] = np.int64(index)
    yield episode


# Workers (one process each) ---------------------------------------------------


def _peak_rss_mb() -> float:
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_seconds() -> float:
  """CPU time of this process's threads and of its finished children
  (lerobot encodes videos in a process pool)."""
  total = 0.0
  for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
    usage = resource.getrusage(who)
    total += usage.ru_utime + usage.ru_stime
  return total


def _timed(fn) -> Dict[str, float]:
  baseline = _peak_rss_mb()
  wall, cpu = time.perf_counter(), _cpu_seconds()
  frames = fn()
  return {'wall': time.perf_counter() - wall,
          'cpu': _cpu_seconds() - cpu, 'frames': frames,
          'rss_mb': _peak_rss_mb(), 'import_rss_mb': baseline}


def worker(mode: str, root: str, count: int, steps: int) -> Dict[str, float]:
  if mode.startswith('lerobot-'):
    return _lerobot_worker(mode, root, count, steps)
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
  from rlds_lite.convert import episodes as episodes_lib  # pylint: disable=g-import-not-at-top
  from rlds_lite.convert import files  # pylint: disable=g-import-not-at-top
  from rlds_lite.convert import lerobot  # pylint: disable=g-import-not-at-top
  if mode == 'write':
    return _timed(lambda: (lerobot.to_lerobot(
        episodes(count, steps), root, fps=FPS), count * steps)[1])
  if mode == 'read':
    def read():
      frames = 0
      for episode in lerobot.from_lerobot(root):
        frames += len(episode['steps']['is_last'])
      return frames
    return _timed(read)
  if mode == 'tfds-source':  # Preparation, not timed in the table.
    return _timed(lambda: (episodes_lib.write_tfds(
        episodes(count, steps), os.path.dirname(root),
        os.path.basename(root)), count * steps)[1])
  if mode == 'cli-to-lerobot':
    source, target = root.split('|')
    return _timed(lambda: files.convert(
        source, target, from_format='rlds', to_format='lerobot',
        fps=FPS).steps)
  if mode == 'cli-from-lerobot':
    source, target = root.split('|')
    return _timed(lambda: files.convert(
        source, target, from_format='lerobot', to_format='rlds').steps)
  raise ValueError(mode)


def _lerobot_worker(mode: str, root: str, count: int,
                    steps: int) -> Dict[str, float]:
  os.environ['HF_HUB_OFFLINE'] = '1'
  from lerobot.datasets import lerobot_dataset  # pylint: disable=g-import-not-at-top
  if mode == 'lerobot-read':
    def read():
      dataset = lerobot_dataset.LeRobotDataset('bench/rlds', root=root,
                                               video_backend='pyav')
      for i in range(len(dataset)):
        dataset[i]  # pylint: disable=pointless-statement
      return len(dataset)
    return _timed(read)
  features = {
      f'observation.images.{name}': {
          'dtype': 'video', 'shape': (h, w, 3),
          'names': ['height', 'width', 'channels']}
      for name, (h, w) in CAMERAS.items()}
  features.update({
      'observation.state': {'dtype': 'float32', 'shape': (8,),
                            'names': None},
      'action': {'dtype': 'float32', 'shape': (7,), 'names': None},
      'next.reward': {'dtype': 'float32', 'shape': (1,), 'names': None},
      'next.done': {'dtype': 'bool', 'shape': (1,), 'names': None},
      'discount': {'dtype': 'float32', 'shape': (1,), 'names': None}})

  def write():
    dataset = lerobot_dataset.LeRobotDataset.create(
        'bench/lerobot', fps=FPS, features=features, root=root,
        use_videos=True, image_writer_threads=4,
        streaming_encoding=mode == 'lerobot-write-streaming')
    for episode in episodes(count, steps):
      s = episode['steps']
      for t in range(steps):
        frame = {f'observation.images.{k}': v[t]
                 for k, v in s['observation']['images'].items()}
        frame.update({
            'observation.state': s['observation']['state'][t],
            'action': s['action'][t],
            'next.reward': s['reward'][t:t + 1],
            'next.done': s['is_last'][t:t + 1],
            'discount': s['discount'][t:t + 1],
            'task': s['language_instruction'][t].decode()})
        dataset.add_frame(frame)
      dataset.save_episode()
    dataset.finalize()
    dataset.stop_image_writer()
    return count * steps
  return _timed(write)


# Driver ----------------------------------------------------------------------


def run(python: str, mode: str, root: str, count: int,
        steps: int) -> Dict[str, float]:
  env = {**os.environ, 'SVT_LOG': '1', 'TF_CPP_MIN_LOG_LEVEL': '3',
         'PYTHONPATH': os.getcwd()}
  result = subprocess.run(
      [python, os.path.abspath(__file__), '--worker', mode, '--root', root,
       '--episodes', str(count), '--steps', str(steps)],
      capture_output=True, text=True, env=env, check=False)
  if result.returncode:
    raise RuntimeError(f'{mode} failed:\n{result.stderr[-4000:]}')
  return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--episodes', type=int, default=20)
  parser.add_argument('--steps', type=int, default=200)
  parser.add_argument('--scale', type=int, default=4)
  parser.add_argument('--repeats', type=int, default=2)
  parser.add_argument('--lerobot-python',
                      default=os.environ.get('RLDS_LITE_LEROBOT_PYTHON'))
  parser.add_argument('--worker')
  parser.add_argument('--root')
  args = parser.parse_args()
  if args.worker:
    print(json.dumps(worker(args.worker, args.root, args.episodes,
                            args.steps)))
    return
  me = sys.executable
  n, steps = args.episodes, args.steps
  work = tempfile.mkdtemp(prefix='bench_lerobot_')
  try:
    path = lambda name: os.path.join(work, name)
    run(me, 'tfds-source', path('tfds/src'), n, steps)
    run(me, 'tfds-source', path('tfds/big'), n * args.scale, steps)
    plan = [
        ('rlds_lite to_lerobot (NumPy Episodes -> LeRobot)', me, 'write',
         lambda r: path(f'ours{r}'), n),
        ('rlds_lite from_lerobot (LeRobot -> NumPy Episodes)', me, 'read',
         lambda r: path(f'ours{r}'), n),
        ('rlds-lite convert --from rlds --to lerobot (TFDS PNG -> LeRobot)',
         me, 'cli-to-lerobot',
         lambda r: f'{path("tfds/src/1.0.0")}|{path(f"cli{r}")}', n),
        ('rlds-lite convert --from lerobot --to rlds (LeRobot -> TFDS)', me,
         'cli-from-lerobot', lambda r: f'{path(f"ours{r}")}|{path(f"back{r}")}',
         n),
    ]
    if args.lerobot_python:
      plan += [
          ('lerobot LeRobotDataset.create + add_frame + save_episode '
           '(PNG, then encode)', args.lerobot_python, 'lerobot-write',
           lambda r: path(f'lr{r}'), n),
          ('lerobot ... streaming_encoding=True', args.lerobot_python,
           'lerobot-write-streaming', lambda r: path(f'lrs{r}'), n),
          ('lerobot LeRobotDataset[i], every frame (pyav), of our dataset',
           args.lerobot_python, 'lerobot-read', lambda r: path(f'ours{r}'),
           n),
      ]
    plan += [
        (f'rlds_lite to_lerobot, {args.scale}x episodes', me, 'write',
         lambda r: path(f'big{r}'), n * args.scale),
        (f'rlds_lite from_lerobot, {args.scale}x episodes', me, 'read',
         lambda r: path(f'big{r}'), n * args.scale),
        (f'rlds-lite convert --from rlds --to lerobot, {args.scale}x episodes',
         me, 'cli-to-lerobot',
         lambda r: f'{path("tfds/big/1.0.0")}|{path(f"bigcli{r}")}',
         n * args.scale),
        (f'rlds-lite convert --from lerobot --to rlds, {args.scale}x episodes',
         me, 'cli-from-lerobot',
         lambda r: f'{path(f"big{r}")}|{path(f"bigback{r}")}', n * args.scale),
    ]
    results: Dict[str, List[Dict[str, float]]] = {}
    loads = []
    for round_index in range(args.repeats):
      order = plan if round_index % 2 == 0 else _alternate(plan)
      for name, python, mode, root_of, count in order:
        loads.append(os.getloadavg()[0])
        results.setdefault(name, []).append(
            run(python, mode, root_of(round_index), count, steps))
      for name in os.listdir(work):  # Keep the TFDS source only.
        if name != 'tfds':
          shutil.rmtree(path(name), ignore_errors=True)
    print(f'{n} episodes x {steps} steps, cameras '
          f'{", ".join(f"{h}x{w}" for h, w in CAMERAS.values())}, fps {FPS}; '
          f'best of {args.repeats} rounds (contenders taking turns); load '
          f'{min(loads):.2f}-{max(loads):.2f}; {os.cpu_count()} cores\n')
    print('| conversion | frames | frames/s (wall) | CPU s / wall s | '
          'peak RSS MB | RSS growth over imports MB |')
    print('| --- | ---: | ---: | ---: | ---: | ---: |')
    for name, *_ in plan:
      best = min(results[name], key=lambda r: r['wall'])
      print(f'| {name} | {best["frames"]:,} | '
            f'{best["frames"] / best["wall"]:,.0f} | '
            f'{best["cpu"] / best["wall"]:.2f} | {best["rss_mb"]:,.0f} | '
            f'{best["rss_mb"] - best["import_rss_mb"]:,.0f} |')
  finally:
    shutil.rmtree(work, ignore_errors=True)


def _alternate(plan: List[Any]) -> List[Any]:
  """The second round: the lerobot writers before ours (taking turns)."""
  lerobot_rows = [p for p in plan if p[2].startswith('lerobot-write')]
  return lerobot_rows + [p for p in plan if p not in lerobot_rows]


if __name__ == '__main__':
  main()
