"""``rlds-lite view``: bad input in-process, a real start-up in a subprocess."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

from rlds_lite import cli
from rlds_lite import synthetic
import tfds_fixtures
import view_testing

PREFIX = 'rlds-lite view: '


@pytest.fixture(name='dataset', scope='module')
def _dataset(tmp_path_factory):
  return view_testing.write_camera_dataset(
      str(tmp_path_factory.mktemp('view_cli')), num_episodes=3, max_length=5,
      size=8)


def _bad_input(capsys, argv):
  capsys.readouterr()  # What fixtures printed.
  assert cli.main(argv) == 2
  out, err = capsys.readouterr()
  assert out == '' and err.count('\n') == 1 and err.startswith(PREFIX), err
  return err[len(PREFIX):].strip()


def test_missing_path(capsys, tmp_path):
  missing = str(tmp_path / 'nope')
  assert _bad_input(capsys, ['view', missing, '--port', '0']) == (
      f'dataset directory {missing!r} does not exist.')


def test_not_a_dataset(capsys, tmp_path):
  assert 'is not a TFDS dataset directory' in _bad_input(
      capsys, ['view', str(tmp_path), '--port', '0'])


def test_not_rlds(capsys, tmp_path):
  path = tfds_fixtures.write_dataset(
      str(tmp_path), 'flat', tfds_fixtures.tfds.features.FeaturesDict(
          {'x': np.float32}), {'train': [{'x': np.float32(1)}]})
  assert 'is not an RLDS dataset' in _bad_input(capsys, ['view', path])


def test_unknown_split(capsys, dataset):
  assert _bad_input(capsys, ['view', dataset, '--split', 'test']) == (
      "no split 'test' (splits: ['train']).")


def test_damaged_dataset_is_refused_before_serving(capsys, tmp_path):
  """A shard cut short is named in one line, as the other commands do."""
  path = synthetic.dataset(3, 2, 6, seed=0, data_dir=tmp_path)
  shard = os.path.join(path, 'toy-train.tfrecord-00000')
  with open(shard, 'r+b') as f:
    f.truncate(os.path.getsize(shard) - 100)
  assert re.fullmatch(
      rf"{re.escape(shard)}: episode 2 of split 'train': is truncated: it "
      r'ends inside record 2 \(\d+ bytes; the record needs \d+\); the file '
      r'holds episodes 0-2\.',
      _bad_input(capsys, ['view', path, '--port', '0']))


def test_port_out_of_range(capsys, dataset):
  assert _bad_input(capsys, ['view', dataset, '--port', '70000']) == (
      '--port must be in 0..65535, got 70000.')


def test_fps_not_positive(capsys, dataset):
  assert _bad_input(capsys, ['view', dataset, '--fps', '0']) == (
      '--fps must be positive, got 0.')


def test_port_in_use(capsys, dataset):
  with socket.socket() as taken:
    taken.bind(('127.0.0.1', 0))
    taken.listen()
    port = taken.getsockname()[1]
    assert _bad_input(capsys, ['view', dataset, '--port', str(port)]) == (
        f'[Errno 98] cannot listen on 127.0.0.1:{port}: Address already in '
        'use; pass another port (0 picks a free one)')


def test_serves_until_interrupted(dataset):
  """The command as a user runs it: URL printed, pages served, Ctrl-C."""
  env = {key: value for key, value in os.environ.items()
         if key not in ('TF_CPP_MIN_LOG_LEVEL', 'GLOG_minloglevel')}
  start = time.monotonic()
  with subprocess.Popen(
      [sys.executable, '-m', 'rlds_lite.cli', 'view', dataset, '--port', '0'],
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
      env=env) as process:
    try:
      line = process.stdout.readline()
      match = re.fullmatch(rf'Serving {re.escape(dataset)} at '
                           r'(http://127\.0\.0\.1:(\d+)/)\n', line)
      assert match, (line, process.stderr.read() if process.poll() else '')
      url = match.group(1)
      with urllib.request.urlopen(url, timeout=30) as response:
        assert response.status == 200
        assert b'rlds-lite view' in response.read()
      first_page = time.monotonic() - start
      with urllib.request.urlopen(url + 'api/episode/train/1',
                                  timeout=60) as response:
        assert json.load(response)['index'] == 1
      assert first_page < 60  # Seconds: TensorFlow's import dominates.
    finally:
      process.send_signal(signal.SIGINT)
      try:
        # Ctrl-C ends the server and TensorFlow's threads: seconds, but
        # over 30 on a loaded 2-core machine.
        assert process.wait(timeout=120) == 0
      finally:
        if process.poll() is None:
          process.kill()
    assert process.stdout.read() == ''
    # Quiet: none of TensorFlow's C++ start-up lines (rlds-lite --verbose
    # keeps them).
    assert not re.search(r'^[IWEF]\d{4} |absl::InitializeLog|oneDNN|cuda',
                         process.stderr.read(), re.M)


def test_array_record_is_refused(capsys, tmp_path):
  from rlds_lite.tfds import episode_writer  # pylint: disable=g-import-not-at-top
  with episode_writer.EpisodeWriter(
      str(tmp_path), 'records', {'steps': {'reward': np.float32}},
      file_format='array_record') as writer:
    writer.add_episode({'steps': {'reward': [1.0, 0.0],
                                  'is_terminal': [False, True]}})
  assert _bad_input(capsys, ['view', writer.path]) == (
      f'dataset {writer.path!r} is stored as array_record; the viewer reads '
      'tfrecord datasets.')
