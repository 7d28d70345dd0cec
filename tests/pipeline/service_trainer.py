"""A trainer process for test_service_processes: reads pipelines through tf.data service.

``python service_trainer.py SPEC_JSON``: for each run of the spec, builds the
pipeline (endless, if the run has a ``limit``), waits at a file barrier, reads it from the dispatcher and prints
``{"run": name, "keys": [...]}`` (``{"progress": n}`` lines while reading); a run
with ``idle`` seconds ends when nothing arrived for that long (``"stalled": true``).
The test process builds the same pipelines in-process for references.
"""

import json
import os
import queue
import sys
import threading
import time
from typing import Any, Callable, Dict, List

import tensorflow as tf
import tensorflow_datasets as tfds

import rlds_lite
from rlds_lite.pipeline import service
from rlds_lite.pipeline import transitions
from rlds_lite.pipeline import windows
from rlds_lite.sample_kinds import Transitions
from rlds_lite.sample_kinds import Windows

_ONE_FILE_AT_A_TIME = tfds.ReadConfig(interleave_cycle_length=1,
                                      assert_cardinality=False)


def _episodes(path: str) -> tf.data.Dataset:
  return rlds_lite.load(path, dense=True, read_config=_ONE_FILE_AT_A_TIME)


def steps(path: str) -> tf.data.Dataset:
  """Every step of every episode: ``episode_id``, ``step`` and ``reward``."""
  def to_steps(episode):
    length = tf.shape(episode['steps']['reward'], out_type=tf.int64)[0]
    return tf.data.Dataset.from_tensor_slices({
        'episode_id': tf.fill([length], episode['episode_id']),
        'step': tf.range(length), 'reward': episode['steps']['reward']})
  return _episodes(path).flat_map(to_steps)


def windows_batches(path: str) -> tf.data.Dataset:
  return windows.windows_dataset(_episodes(path), Windows(2), 8, seed=0,
                                 episode_fields='episode_id')


def transitions_batches(path: str) -> tf.data.Dataset:
  return transitions.transitions_dataset(_episodes(path), Transitions(), 8,
                                         seed=0, episode_fields='episode_id')


PIPELINES: Dict[str, Callable[[str], tf.data.Dataset]] = {
    'steps': steps, 'windows': windows_batches,
    'transitions': transitions_batches}


def keys(name: str, element: Dict[str, Any]) -> List[List[Any]]:
  """The ids of what one element holds: ``[episode_id, step]`` per step,
  ``[episode_id, observation hex]`` per sample of a batch."""
  if name == 'steps':
    return [[int(element['episode_id']), int(element['step'])]]
  return [[int(e), o.tobytes().hex()] for e, o in
          zip(element['episode_id'], element['observation'])]


def _barrier(directory: str, me: int, count: int, timeout: float = 60) -> None:
  open(os.path.join(directory, f'ready.{me}'), 'w').close()
  deadline = time.monotonic() + timeout
  while sum(os.path.exists(os.path.join(directory, f'ready.{i}'))
            for i in range(count)) < count:
    if time.monotonic() > deadline:
      raise TimeoutError('barrier')
    time.sleep(0.05)


def main(spec: Dict[str, Any]) -> None:
  for run in spec['runs']:
    if run.get('only', spec['index']) != spec['index']:
      continue
    pipeline = PIPELINES[run['pipeline']](spec['path'])
    if run.get('limit'):  # Endless input, as training reads; take `limit`.
      pipeline = pipeline.repeat()
    ds = service.distribute(pipeline, spec['target'],
                            processing_mode=run['mode'],
                            job_name=run.get('job'),
                            **run.get('distribute', {}))
    if run.get('limit'):
      ds = ds.take(run['limit'])
    if run.get('barrier'):
      _barrier(run['barrier'], spec['index'], run['trainers'])
    got, stalled = [], False
    for count, element in enumerate(_elements(ds, run.get('idle')), 1):
      if element is None:
        stalled = True
        break
      got.extend(keys(run['pipeline'], element))
      print(json.dumps({'progress': run['name'], 'count': count}),
            flush=True)
      time.sleep(run.get('delay', 0))
    print(json.dumps({'run': run['name'], 'keys': got, 'stalled': stalled}),
          flush=True)


def _elements(ds: tf.data.Dataset, idle: Any):
  """The elements of ``ds``; with ``idle`` seconds, a None once none came for that long."""
  if not idle:
    yield from ds.as_numpy_iterator()
    return
  arrived: 'queue.Queue[Any]' = queue.Queue()
  def read():
    for element in ds.as_numpy_iterator():
      arrived.put(element)
    arrived.put(StopIteration)
  threading.Thread(target=read, daemon=True).start()
  while True:
    try:
      element = arrived.get(timeout=idle)
    except queue.Empty:
      yield None  # The reader thread stays blocked in tf.data; the test stops us.
      return
    if element is StopIteration:
      return
    yield element


if __name__ == '__main__':
  main(json.loads(sys.argv[1]))
