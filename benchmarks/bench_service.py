"""tf.data service across processes: windows and robot samples through 1 and 2 worker processes vs in-process.

``python benchmarks/bench_service.py`` (run under ``flock /tmp/bench.lock``).
Starts ``rlds-lite serve`` processes on free ports, reads endless
``distributed_epoch`` input per configuration in a Python loop (as a trainer
does; `WARM` batches, then `TIMED` timed), and a pre-made batch repeated
through the service for the transport cost.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

import rlds_lite
from rlds_lite import pipeline
from rlds_lite import synthetic
from rlds_lite.pipeline import servers
from rlds_lite.tfds import EpisodeWriter
from rlds_lite.tfds import episode_writer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READ = tfds.ReadConfig(assert_cardinality=False)
CAMERAS = {'image_primary': (64, 64), 'image_wrist': (32, 32)}


def _vectors(root):
  return episode_writer.write_dataset(
      synthetic.episodes(200, min_length=40, max_length=60, seed=0), root,
      'vectors', options=episode_writer.FileOptions(max_episodes_per_file=10))


def _cameras(root):
  options = episode_writer.FileOptions(max_episodes_per_file=4)
  with EpisodeWriter(root, 'cameras', synthetic.camera_features(CAMERAS),
                     options=options) as writer:
    for i in range(32):
      episode = next(synthetic.camera_episodes(1, 40, CAMERAS, seed=i))
      episode['episode_id'] = np.int64(i)
      writer.add_episode(episode)
  return writer.path


WARM, TIMED = 10, 100
"""Batches read before timing (job start-up, pools filling), then timed."""


def _episodes(path):
  return rlds_lite.load(path, dense=True, read_config=READ).repeat()


def windows(path):
  return pipeline.windows_dataset(_episodes(path), rlds_lite.Windows(4), 256,
                                  seed=0)


def robot(path):
  return pipeline.robot_samples_dataset(
      _episodes(path), rlds_lite.RobotSamples(history=2, action_chunk=4), 64,
      seed=0)


def _samples(batch):
  return int(tf.nest.flatten(batch)[0].shape[0])


def _epoch(ds, warm=WARM, timed=TIMED):
  """(samples, batches, seconds) of ``timed`` batches after ``warm``, in a
  Python loop (as a trainer reads)."""
  it = iter(ds)
  for _ in range(warm):
    next(it)
  start, samples = time.perf_counter(), 0
  for _ in range(timed):
    samples += _samples(next(it))
  return samples, timed, time.perf_counter() - start


def _serve(port, workers):
  env = {**os.environ, 'PYTHONPATH': ROOT}
  cli = [sys.executable, '-m', 'rlds_lite.cli', 'serve']
  procs = [subprocess.Popen(cli + ['dispatcher', '--port', str(port)],
                            env=env, stdout=subprocess.PIPE, text=True)]
  procs[0].stdout.readline()
  for _ in range(workers):
    procs.append(subprocess.Popen(
        cli + ['worker', '--dispatcher', f'localhost:{port}'], env=env,
        stdout=subprocess.PIPE, text=True))
    procs[-1].stdout.readline()
  return procs


def main():
  root = tempfile.mkdtemp()
  paths = {'windows': _vectors(root), 'robot samples': _cameras(root)}
  makers = {'windows': windows, 'robot samples': robot}
  rows = []
  for name, make in makers.items():
    samples, batches, seconds = _epoch(make(paths[name]))
    rows.append((name, 'in-process', samples, batches, seconds))
  for workers in (1, 2):
    port = servers.free_port()
    procs = _serve(port, workers)
    try:
      target = f'grpc://localhost:{port}'
      for name, make in makers.items():
        ds = pipeline.distribute(make(paths[name]), target)
        samples, batches, seconds = _epoch(ds)
        rows.append((name, f'{workers} worker process'
                     f'{"es" if workers > 1 else ""}', samples, batches,
                     seconds))
      if workers == 1:
        batch = next(iter(windows(paths['windows'])))
        fixed = tf.data.Dataset.from_tensors(batch).repeat()
        local = _epoch(fixed, timed=200)[2]
        remote = _epoch(pipeline.distribute(fixed, target,
                                            processing_mode='parallel_epochs'),
                        timed=200)[2]
        nbytes = sum(x.numpy().nbytes for x in tf.nest.flatten(batch))
        transport = (remote - local) / 200
    finally:
      for proc in procs[::-1]:
        proc.terminate()
        try:
          proc.wait(30)
        except subprocess.TimeoutExpired:
          print(f'{proc.args[4]} did not stop on SIGTERM in 30 s: killed',
                file=sys.stderr)
          proc.kill()
          proc.wait(30)
  print(json.dumps({'rows': rows, 'transport_ms': transport * 1e3,
                    'batch_bytes': nbytes, 'load': os.getloadavg()}))
  print('| pipeline | where | samples | batches | seconds | samples/s |')
  print('| --- | --- | ---: | ---: | ---: | ---: |')
  for name, where, samples, batches, seconds in rows:
    print(f'| {name} | {where} | {samples} | {batches} | {seconds:.2f} | '
          f'{samples / seconds:,.0f} |')
  print(f'transport: {transport * 1e3:.2f} ms per windows batch of '
        f'{nbytes / 1e6:.2f} MB (through 1 worker, minus in-process)')


if __name__ == '__main__':
  main()
