"""tf.data service across processes: `rlds-lite serve` servers, trainer processes, faults.

One dispatcher (fault-tolerant, with a work dir) and two workers serve the
whole module; trainers are processes of ``service_trainer.py``. Every process
is stopped at the end (SIGTERM, then SIGKILL) and every wait is bounded.
"""

import collections
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional

import pytest
import tensorflow as tf

from rlds_lite import synthetic
from rlds_lite.pipeline import servers
from rlds_lite.pipeline import service
from rlds_lite.tfds import episode_writer
import service_trainer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TRAINER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       'service_trainer.py')
NUM_EPISODES, EPISODES_PER_FILE = 12, 2
STEPS = 68
"""Steps in the dataset (checked against the reference)."""
WAIT = 120.0
"""Seconds any one wait may take (a process starting, a run ending)."""


class Process:
  """A child process whose stdout lines are collected by a thread."""

  def __init__(self, name: str, argv: List[str], log: str):
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join(
        [ROOT, os.path.dirname(TRAINER)]), 'TF_CPP_MIN_LOG_LEVEL': '0'}
    self.name, self.log = name, log
    with open(log, 'w') as stderr:
      self.popen = subprocess.Popen(
          [sys.executable, *argv, *(['--verbose'] if '-m' in argv else [])],
          cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=stderr)
    self.lines: 'queue.Queue[str]' = queue.Queue()
    self.seen: List[str] = []
    self.results: Dict[str, List[Any]] = {}
    threading.Thread(target=self._read, daemon=True).start()

  def _read(self) -> None:
    for line in self.popen.stdout:
      self.lines.put(line.rstrip())

  def line(self, starts: str, timeout: float = WAIT) -> str:
    """The next stdout line starting with ``starts`` (skipping others)."""
    deadline = time.monotonic() + timeout
    while True:
      try:
        line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
      except queue.Empty:
        raise AssertionError(
            f'{self.name}: no line {starts!r} in {timeout} s (exit '
            f'{self.popen.poll()}); last lines {self.seen[-3:]}; its log: '
            f'{self.log}') from None
      self.seen.append(line)
      if line.startswith(starts):
        return line

  def result(self, run: str) -> List[Any]:
    """The keys a trainer printed for ``run`` (in any order of runs)."""
    while run not in self.results:
      message = json.loads(self.line('{"run"'))
      self.results[message['run']] = [tuple(k) for k in message['keys']]
    return self.results[run]

  def stop(self, sig: int = signal.SIGTERM) -> Optional[int]:
    """Sends ``sig`` (if still running) and waits; SIGKILL after WAIT s."""
    if self.popen.poll() is None:
      self.popen.send_signal(sig)
      try:
        self.popen.wait(WAIT)
      except subprocess.TimeoutExpired:
        self.popen.kill()
        self.popen.wait(WAIT)
    return self.popen.returncode


class Cluster:
  """The module's servers and the processes the tests start."""

  def __init__(self, root: str, path: str):
    self.root, self.path = root, path
    self.port = servers.free_port()
    self.target = f'grpc://localhost:{self.port}'
    self.processes: List[Process] = []
    self.runs = 0

  def start(self, name: str, argv: List[str]) -> Process:
    process = Process(name, argv, os.path.join(
        self.root, f'{len(self.processes)}.{name}.log'))
    self.processes.append(process)
    return process

  def dispatcher(self) -> Process:
    """A dispatcher process on ``port`` (not waited for)."""
    return self.start('dispatcher', [
        '-m', 'rlds_lite.cli', 'serve', 'dispatcher', '--port', str(self.port),
        '--work-dir', os.path.join(self.root, 'journal'),
        '--worker-timeout', '5'])

  def worker(self) -> Process:
    """A worker process (not waited for; it waits for the dispatcher)."""
    return self.start('worker', [
        '-m', 'rlds_lite.cli', 'serve', 'worker', '--dispatcher',
        f'localhost:{self.port}', '--heartbeat', '0.5',
        '--connect-timeout', str(WAIT)])

  def trainers(self, *runs: Dict[str, Any], count: int = 1) -> List[Process]:
    """``count`` trainer processes running ``runs`` (a barrier each)."""
    self.runs += 1
    barrier = os.path.join(self.root, f'barrier{self.runs}')
    os.makedirs(barrier)
    runs = [{'barrier': barrier, 'trainers': count, **run} for run in runs]
    for index, run in enumerate(runs):  # One barrier directory per run.
      if run['barrier']:
        run['barrier'] = os.path.join(barrier, str(index))
        os.makedirs(run['barrier'])
    return [self.start(f'trainer{i}', [TRAINER, json.dumps(
        {'path': self.path, 'target': self.target, 'index': i, 'runs': runs})])
            for i in range(count)]


@pytest.fixture(name='cluster', scope='module')
def _cluster(tmp_path_factory):
  root = os.fspath(tmp_path_factory.mktemp('service_processes'))
  cluster = Cluster(root, os.path.join(root, 'svc', '1.0.0'))
  try:  # The servers start while the dataset is written.
    cluster.servers = [cluster.dispatcher(), cluster.worker(), cluster.worker()]
    path = episode_writer.write_dataset(
        synthetic.episodes(NUM_EPISODES, min_length=2, max_length=9, seed=0),
        root, 'svc', options=episode_writer.FileOptions(
            max_episodes_per_file=EPISODES_PER_FILE))
    assert path == cluster.path
    for server in cluster.servers:
      server.line(f'{server.name} ready on ')
    yield cluster
  finally:
    for process in reversed(cluster.processes):
      process.stop(signal.SIGKILL)


@pytest.fixture(name='reference', scope='module')
def _reference(cluster):
  """The keys of each pipeline read in this process, counted."""
  return {name: collections.Counter(
      tuple(key) for element in make(cluster.path).as_numpy_iterator()
      for key in service_trainer.keys(name, element))
          for name, make in service_trainer.PIPELINES.items()}


@pytest.fixture(name='trainers', scope='module')
def _trainers(cluster):
  """Two trainers: one shared distributed_epoch job of steps; then each its
  own parallel_epochs jobs of windows and transitions, and a slow
  distributed_epoch job of steps (a worker is killed in it); then trainer 0
  reads endless steps (the dispatcher is restarted meanwhile)."""
  slow = {'pipeline': 'steps', 'mode': 'distributed_epoch', 'delay': 0.05}
  return cluster.trainers(
      {'name': 'epoch', 'pipeline': 'steps', 'mode': 'distributed_epoch',
       'job': 'shared', 'delay': 0.01},
      {'name': 'windows', 'pipeline': 'windows', 'mode': 'parallel_epochs'},
      {'name': 'transitions', 'pipeline': 'transitions',
       'mode': 'parallel_epochs'},
      # After the kill the job may deliver all it will and never end (TF
      # 2.21): the trainer stops once nothing arrived for 20 s.
      {**slow, 'name': 'kill', 'idle': 20},
      # Three epochs' worth of endless input: the worker needs new splits
      # from the restarted dispatcher to give them.
      {**slow, 'name': 'restart', 'limit': 3 * STEPS, 'only': 0,
       'barrier': None},
      count=2)


def test_two_trainers_sharing_a_distributed_epoch_get_every_step_once(
    trainers, reference):
  epoch = [trainer.result('epoch') for trainer in trainers]
  assert all(epoch)  # Both took part...
  assert collections.Counter(epoch[0] + epoch[1]) == reference['steps']
  assert sum(reference['steps'].values()) == STEPS  # ...in a real epoch.


@pytest.mark.parametrize('pipeline', ['windows', 'transitions'])
def test_parallel_epochs_deliver_every_sample_once_per_worker(
    trainers, reference, pipeline):
  for trainer in trainers:
    assert collections.Counter(trainer.result(pipeline)) == (
        collections.Counter({key: 2 * n for key, n in
                             reference[pipeline].items()}))
    assert len(trainer.result(pipeline)) > 100


def test_a_pipeline_that_calls_python_is_refused_before_any_process():
  from rlds_lite import random_access  # pylint: disable=g-import-not-at-top
  chunks = random_access.convert(synthetic.dataset(num_episodes=3, seed=0),
                                 progress=False)
  batches = random_access.sample_batches(chunks, random_access.Windows(2), 4,
                                         seed=0)
  with pytest.raises(ValueError, match=(
      r'distribute: the pipeline calls Python \(tf.numpy_function\), which '
      r'tf.data service workers in other processes cannot run')):
    service.distribute(batches, 'grpc://localhost:1')


def test_a_dispatcher_that_does_not_answer_is_an_error_within_the_timeout():
  port = servers.free_port()
  start = time.monotonic()
  with pytest.raises(ConnectionError, match=(
      f'distribute: no tf.data service dispatcher answers at localhost:{port}'
      r' \(waited 3 s: .*\)\. Start one with `rlds-lite serve dispatcher '
      f'--port {port}`')):
    service.distribute(tf.data.Dataset.range(3), f'grpc://localhost:{port}',
                       timeout=3)
  assert time.monotonic() - start < 5


SERVE_BAD = {
    'no_port': (['dispatcher'], 'rlds-lite serve dispatcher: the following '
                'arguments are required: --port (see rlds-lite serve '
                'dispatcher --help)'),
    'bad_port': (['worker', '--dispatcher', 'h:1', '--port', '70000'],
                 "rlds-lite serve worker: argument --port: a port is 0 to "
                 "65535, got '70000' (see rlds-lite serve worker --help)"),
    'bad_address': (['worker', '--dispatcher', 'localhost'],
                    "rlds-lite serve worker: dispatcher address 'localhost' "
                    'must be HOST:PORT or grpc://HOST:PORT (a port from 1 to '
                    '65535).'),
    'nobody_answers': (['worker', '--dispatcher', 'localhost:{free}',
                        '--connect-timeout', '1'],
                       'rlds-lite serve worker: no tf.data service dispatcher '
                       'answers at localhost:{free} (waited 1 s: [Errno 111] '
                       'Connection refused). Start one with `rlds-lite serve '
                       'dispatcher --port {free}` on that host, or check the '
                       'address and the firewall.'),
    'port_in_use': (['dispatcher', '--port', '{taken}'],
                    'rlds-lite serve dispatcher: port {taken} is in use by '
                    'another process; give another --port (0: a free one).'),
}


@pytest.mark.parametrize('argv,message', list(SERVE_BAD.values()),
                         ids=list(SERVE_BAD))
def test_serve_bad_input_is_one_line_and_exit_2(capsys, argv, message):
  from rlds_lite import cli  # pylint: disable=g-import-not-at-top
  with socket.socket() as taken:
    taken.bind(('', 0))
    taken.listen()
    ports = {'free': servers.free_port(), 'taken': taken.getsockname()[1]}
    argv = [arg.format(**ports) for arg in argv]
    try:
      status = cli.main(['serve', *argv])
    except SystemExit as exit_info:
      status = exit_info.code
  assert status == 2
  assert capsys.readouterr().err == message.format(**ports) + '\n'


def _files_of(keys, num_files: int) -> List[List[Any]]:
  """The keys of each file, in file order (episodes are written in order)."""
  by_file = [[] for _ in range(num_files)]
  for episode, step in keys:
    by_file[episode // EPISODES_PER_FILE].append((episode, step))
  return by_file


def test_a_worker_killed_mid_epoch_loses_at_most_its_splits_in_flight(
    cluster, trainers, reference):
  trainers[0].line('{"progress": "kill", "count": 10}')
  cluster.servers.pop().stop(signal.SIGKILL)
  num_files = NUM_EPISODES // EPISODES_PER_FILE
  expected = _files_of(sorted(reference['steps']), num_files)
  for trainer in trainers:  # Each read a job of its own.
    got = collections.Counter(trainer.result('kill'))
    assert max(got.values()) == 1  # At most once: nothing repeats.
    assert set(got) <= set(reference['steps'])
    # What is lost is the unread rest of the files the killed worker held.
    arrived = _files_of(sorted(got), num_files)
    for want, have in zip(expected, arrived):
      assert have == want[:len(have)]  # Each file: a prefix of its steps.
    incomplete = sum(have != want for want, have in zip(expected, arrived))
    print(f'killed worker: {sum(got.values())} of {STEPS} steps arrived, '
          f'{incomplete} files incomplete')
    # How many files the killed worker held depends on how far its pipeline
    # had read ahead (2 on a quiet machine, 3 of 6 under a full test run);
    # the other worker's files all arrive whole.
    assert incomplete < num_files


def test_a_restarted_dispatcher_recovers_from_its_work_dir(
    cluster, trainers, reference):
  trainers[0].line('{"progress": "restart", "count": 10}')
  cluster.servers[0].stop(signal.SIGKILL)
  cluster.servers[0] = cluster.dispatcher()  # Same port, same work dir.
  cluster.servers[0].line('dispatcher ready on ')
  got = collections.Counter(trainers[0].result('restart'))
  assert sum(got.values()) == 3 * STEPS  # The trainer carried on...
  assert set(got) <= set(reference['steps'])
  # Which steps those are is not promised, and varies: usually every file
  # whole; under full test runs 3 of the 6 files short, and once files 3
  # and 4 never reached while files 0-2 came round ~5 times (docs/
  # distributed.md). Printed, not asserted.
  num_files = NUM_EPISODES // EPISODES_PER_FILE
  arrived = _files_of(sorted(got), num_files)
  expected = _files_of(sorted(reference['steps']), num_files)
  print('restarted dispatcher: distinct steps of each file',
        [f'{len(have)}/{len(want)}' for want, have in zip(expected, arrived)])


def test_sigterm_stops_every_server_cleanly(cluster):
  for server in reversed(cluster.servers):
    assert server.stop(signal.SIGTERM) == 0
    assert server.line(f'{server.name} stopped', timeout=1)  # Or 'stopped (...'.
