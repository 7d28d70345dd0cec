"""Actor processes publishing to one MemmapStorage while a learner samples: steps/s in, batches/s out.

Run: ``python benchmarks/bench_replay_actors.py [--actors 4] [--seconds 8]``. Each actor
publishes episodes of ``--length`` steps (observation: 64 float32) with ``Actor.add_episode``;
the learner (this process) samples uniform batches of 256 steps at the same time. Printed:
the actors' steps/s together, the learner's batches/s, and one process adding the same
episodes to a ``ReplayBuffer`` on its own for comparison.
"""

import argparse
import multiprocessing
import os
import tempfile
import time

import numpy as np

from rlds_lite import replay

CAPACITY = 100_000
BATCH = 256


def _episode(length: int):
  t = np.arange(length)
  return {'observation': np.ones([length, 64], np.float32), 'action': t % 3,
          'reward': np.ones([length], np.float32), 'is_first': t == 0,
          'is_last': t == length - 1, 'is_terminal': t == length - 1}


def _actor(path: str, length: int, seconds: float, out) -> None:
  actor = replay.Actor(path)
  steps = {'steps': _episode(length)}
  deadline = time.monotonic() + seconds
  while time.monotonic() < deadline:
    actor.add_episode(steps)
  out.put(actor.published_steps)


def run(actors: int, length: int, seconds: float) -> None:
  path = os.path.join(tempfile.mkdtemp(), 'buffer')
  spec = {p: replay.Field(v.shape[1:], v.dtype.name) for p, v in _episode(1).items()}
  learner = replay.ReplayBuffer(replay.MemmapStorage(path, CAPACITY, spec=spec), seed=0)
  context = multiprocessing.get_context('spawn')
  out = context.Queue()
  procs = [context.Process(target=_actor, args=(path, length, seconds, out))
           for _ in range(actors)]
  for proc in procs:
    proc.start()
  while not len(learner):
    time.sleep(0.001)
  start, batches = time.monotonic(), 0
  while any(p.is_alive() for p in procs) and time.monotonic() - start < seconds:
    learner.sample(BATCH)
    batches += 1
  elapsed = time.monotonic() - start
  published = sum(out.get(timeout=60) for _ in procs)
  for proc in procs:
    proc.join(60)
  print(f'{actors} actors, episodes of {length} steps: {published / seconds:,.0f} steps/s in '
        f'together; learner {batches / elapsed:,.0f} batches of {BATCH}/s meanwhile')
  alone = replay.ReplayBuffer(replay.MemoryStorage(CAPACITY, spec=spec), seed=0)
  steps, count, start = {'steps': _episode(length)}, 0, time.monotonic()
  while time.monotonic() - start < seconds / 2:
    alone.add_episode(steps)
    count += length
  print(f'one process, ReplayBuffer.add_episode on a MemoryStorage: '
        f'{count / (time.monotonic() - start):,.0f} steps/s')


if __name__ == '__main__':
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--actors', type=int, default=4)
  parser.add_argument('--length', type=int, default=50)
  parser.add_argument('--seconds', type=float, default=8.0)
  args = parser.parse_args()
  run(args.actors, args.length, args.seconds)
