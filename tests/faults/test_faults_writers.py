"""Writers killed at every step of publishing, at random, and run concurrently.

Real writer processes (forked from `fault_server`, which imports TensorFlow
once) are SIGKILLed at each step of `rlds_lite.tfds.publish.PUBLISH_STEPS`
(through the ``RLDS_LITE_FAULT_KILL_AT`` hook) and at random moments, run
two to four at once, and hold a dataset's lock while another writer waits.
Each case then asserts exactly what a reader finds (`writer_jobs.load`
checks every value of every episode against its id and version): the old
or the new dataset, never a mix, exact episode counts; and that the next
writer cleans up and succeeds.
"""

import os
import random
import re
import signal
import sys
import threading
import time

import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import rlds_lite
import writer_jobs
from fault_server import ForkServer
from rlds_lite.tfds import EpisodeWriter
from rlds_lite.tfds import leftovers
from rlds_lite.tfds import locking
from rlds_lite.tfds import publish
from writer_jobs import NAME, episodes_of_version

# Recordings are made by the helpers of tests/tfds.
sys.path.append(os.path.join(os.path.dirname(__file__), os.pardir, 'tfds'))
import tfds_build_testing as et  # pylint: disable=g-import-not-at-top,wrong-import-position

STEPS = publish.PUBLISH_STEPS
PUBLISHED = STEPS.index('published')
WRITE = 'writer_jobs:write'


@pytest.fixture(scope='module')
def server(tmp_path_factory):
  fork_server = ForkServer(str(tmp_path_factory.mktemp('fault_logs')))
  yield fork_server
  fork_server.close()


def _version(ids, version):
  return [(i, version) for i in ids]


def _assert_only_published_files(data_dir, kept_generations=()):
  """No leftovers: only the lock beside the dataset; only referenced shards
  (and those of ``kept_generations``) and the metadata in it."""
  name_dir = os.path.join(data_dir, NAME)
  assert sorted(os.listdir(name_dir)) == ['.1.0.0.lock', '1.0.0']
  path = os.path.join(name_dir, '1.0.0')
  proto = leftovers.read_info_proto(path)
  referenced = leftovers.referenced_files(path, proto)
  pattern = re.compile(rf'^{NAME}-train(-g(\d+))?\.tfrecord-\d{{5}}$')
  for name in os.listdir(path):
    if name in ('dataset_info.json', 'features.json') or name in referenced:
      continue
    match = pattern.match(name)
    assert match, f'leftover {name} in {sorted(os.listdir(path))}'
    assert int(match.group(2) or 1) in kept_generations, name


# ----------------------------------------------------------------------------
# A kill at every step of the publish protocol.

_IF_EXISTS = {'new': 'error', 'append': 'append', 'overwrite': 'overwrite'}


@pytest.mark.parametrize('step', STEPS)
@pytest.mark.parametrize('mode', ['new', 'append', 'overwrite'])
def test_kill_at_every_publish_step(server, tmp_path, mode, step):
  data_dir = str(tmp_path)
  old = None
  if mode != 'new':
    writer_jobs.write(data_dir, [0, 1, 2], version=1)
    old = _version([0, 1, 2], 1)
  result = server.run(WRITE, env={publish.FAULT_KILL_ENV: step},
                      data_dir=data_dir, ids=[10, 11, 12], version=2,
                      if_exists=_IF_EXISTS[mode])
  assert result['signal'] == signal.SIGKILL, result['log']

  written = _version([10, 11, 12], 2)
  new = (old or []) + written if mode == 'append' else written
  expected = new if STEPS.index(step) >= PUBLISHED else old
  if expected is None:
    with pytest.raises(ValueError, match='is not a TFDS dataset directory'):
      rlds_lite.load(os.path.join(data_dir, NAME))
    with pytest.raises(tfds.core.registered.DatasetNotFoundError):
      tfds.builder(NAME, data_dir=data_dir)
  else:
    assert writer_jobs.load(data_dir) == expected
    by_name = tfds.load(NAME, data_dir=data_dir, split='train')
    assert len(by_name) == len(expected)

  # The next writer removes what the killed one left, and succeeds.
  writer_jobs.write(data_dir, [20], version=3, if_exists='append')
  assert writer_jobs.load(data_dir) == (expected or []) + [(20, 3)]
  replaced = mode == 'overwrite' and STEPS.index(step) >= PUBLISHED
  _assert_only_published_files(data_dir, kept_generations=(1,) if replaced
                               else ())


# ----------------------------------------------------------------------------
# Kills at random moments.


@pytest.mark.parametrize('seed', range(4))
def test_random_kills_leave_whole_sessions(server, tmp_path, seed):
  rng = random.Random(seed)
  data_dir = str(tmp_path)
  writer_jobs.write(data_dir, range(4), version=1)
  if seed % 2 == 0:   # 12 appending sessions of 5 episodes (~1 s).
    pid = server.start(WRITE, data_dir=data_dir, ids=list(range(100, 160)),
                       version=2, if_exists='append', sessions=12)
  else:   # Overwrites, one version after the other (~3 s).
    pid = server.start('writer_jobs:overwrite_versions', data_dir=data_dir,
                       versions=list(range(2, 40)))
  time.sleep(rng.uniform(0.05, 0.8))
  os.kill(pid, signal.SIGKILL)
  result = server.wait(pid)
  assert result['signal'] == signal.SIGKILL or result['exit'] == 0, result

  seen = writer_jobs.load(data_dir)
  if seed % 2 == 0:
    assert seen[:4] == _version(range(4), 1)
    appended = len(seen) - 4
    assert appended % 5 == 0, seen   # Whole sessions only.
    assert seen[4:] == _version(range(100, 100 + appended), 2)
  else:
    versions = {v for _, v in seen}
    assert len(versions) == 1, seen   # One version, never a mix.
    version = versions.pop()
    expected_ids = range(4) if version == 1 else episodes_of_version(version)
    assert seen == _version(expected_ids, version)
  writer_jobs.write(data_dir, [500], version=9, if_exists='append')
  assert writer_jobs.load(data_dir) == seen + [(500, 9)]
  _assert_only_published_files(data_dir, kept_generations=range(1, 40))


# ----------------------------------------------------------------------------
# Concurrent writers.


def test_concurrent_appenders_lose_nothing(server, tmp_path):
  data_dir = str(tmp_path)
  writer_jobs.write(data_dir, range(5), version=1)
  batches = [list(range(100 * k, 100 * k + 20)) for k in (1, 2, 3)]
  pids = [server.start(WRITE, data_dir=data_dir, ids=ids, version=1,
                       if_exists='append', sessions=4) for ids in batches]
  for pid in pids:
    result = server.wait(pid)
    assert result['exit'] == 0, result['log']
  seen = writer_jobs.load(data_dir)
  assert len(seen) == 65
  assert sorted(i for i, _ in seen) == sorted(
      list(range(5)) + [i for ids in batches for i in ids])
  _assert_only_published_files(data_dir)


def test_concurrent_creators_of_a_new_dataset(server, tmp_path):
  appending = str(tmp_path / 'appending')
  pids = [server.start(WRITE, data_dir=appending, ids=[k, k + 10],
                       version=1, if_exists='append') for k in range(4)]
  for pid in pids:
    result = server.wait(pid)
    assert result['exit'] == 0, result['log']
  assert sorted(writer_jobs.load(appending)) == _version(
      sorted(k + d for k in range(4) for d in (0, 10)), 1)

  exclusive = str(tmp_path / 'exclusive')
  pids = [server.start(WRITE, data_dir=exclusive, ids=[k], version=1)
          for k in range(2)]
  results = [server.wait(pid) for pid in pids]
  assert sorted(r['exit'] for r in results) == [0, 1]
  failed = next(r for r in results if r['exit'])
  assert re.search(r"FileExistsError: EpisodeWriter: dataset 'faulty' version "
                   r"1.0.0 already exists", failed['log']), failed['log']
  assert len(writer_jobs.load(exclusive)) == 1


def test_reader_passes_during_overwrites_each_see_one_version(server,
                                                              tmp_path):
  data_dir = str(tmp_path)
  writer_jobs.write(data_dir, episodes_of_version(1), version=1)
  last = 12
  passes = tmp_path / 'passes'   # One file per reader pass that ended.
  passes.mkdir()
  pid = server.start('writer_jobs:overwrite_versions', data_dir=data_dir,
                     versions=list(range(2, last + 1)), pause=0.05,
                     passes=str(passes))
  versions_seen = []
  deadline = time.monotonic() + 120
  while time.monotonic() < deadline:
    try:
      seen = writer_jobs.load(data_dir)
    except tf.errors.NotFoundError as e:
      # A pass that outlived two overwrites: the generation it read was
      # deleted. It fails naming the shard; it never yields another version.
      assert re.search(rf'/{NAME}-train(-g\d+)?\.tfrecord-\d{{5}}; No such '
                       'file', e.message), e.message
      versions_seen.append('missing shard')
      continue
    finally:
      (passes / str(time.monotonic_ns())).touch()
    versions = {v for _, v in seen}
    assert len(versions) == 1, seen   # Never a mix.
    version = versions.pop()
    assert seen == _version(episodes_of_version(version), version)
    versions_seen.append(version)
    if version == last:
      break
  assert server.wait(pid)['exit'] == 0
  assert versions_seen[-1] == last
  versions = [v for v in versions_seen if v != 'missing shard']
  assert len(set(versions)) >= 3, versions_seen  # Passes ran meanwhile.
  _assert_only_published_files(data_dir, kept_generations=(last - 1,))


# ----------------------------------------------------------------------------
# The lock: waiting, timing out, a dead holder.


def _wait_for(path, timeout=30):
  deadline = time.monotonic() + timeout
  while not os.path.exists(path):
    assert time.monotonic() < deadline, f'{path} never appeared'
    time.sleep(0.01)


def test_second_writer_times_out_naming_the_holder_or_waits(server, tmp_path):
  data_dir = str(tmp_path)
  writer_jobs.write(data_dir, [0], version=1)
  ready, release = str(tmp_path / 'ready'), str(tmp_path / 'release')
  pid = server.start('writer_jobs:hold', data_dir=data_dir, ready=ready,
                     release=release)
  _wait_for(ready)
  start = time.monotonic()
  with pytest.raises(locking.DatasetLockedError,
                     match=rf"dataset 'faulty' version 1.0.0 at '.*' is being "
                     rf'written by another writer \(pid {pid} on host .*; '
                     r'lock file .*\.1\.0\.0\.lock\); gave up after waiting '
                     r'0.3 s \(lock_timeout\)'):
    EpisodeWriter(data_dir, NAME, None, if_exists='append', lock_timeout=0.3)
  assert 0.3 <= time.monotonic() - start < 5
  # A writer that may wait gets the lock once the holder has published.
  threading.Timer(0.3, lambda: open(release, 'w').close()).start()
  writer_jobs.write(data_dir, [1], version=1, if_exists='append',
                    lock_timeout=30)
  assert server.wait(pid)['exit'] == 0
  assert writer_jobs.load(data_dir) == _version([0, 999, 1], 1)


def test_a_killed_holder_releases_the_lock(server, tmp_path):
  data_dir = str(tmp_path)
  writer_jobs.write(data_dir, [0], version=1)
  ready = str(tmp_path / 'ready')
  pid = server.start('writer_jobs:hold', data_dir=data_dir, ready=ready,
                     release=str(tmp_path / 'never'))
  _wait_for(ready)
  os.kill(pid, signal.SIGKILL)
  assert server.wait(pid)['signal'] == signal.SIGKILL
  writer_jobs.write(data_dir, [1], version=1, if_exists='append',
                    lock_timeout=0)
  assert writer_jobs.load(data_dir) == _version([0, 1], 1)
  _assert_only_published_files(data_dir)


# ----------------------------------------------------------------------------
# Builders: build_from_envlogger at every step; a killed TFDS build.


@pytest.fixture(scope='module')
def recording(tmp_path_factory):
  logs = str(tmp_path_factory.mktemp('recording') / 'logs')
  et.record_script(logs, [et.Episode(2, et.TERMINAL), et.Episode(1, et.TRUNCATED)])
  return logs


@pytest.mark.parametrize('step', STEPS)
def test_build_from_envlogger_killed_at_every_step(server, tmp_path, recording,
                                                   step):
  data_dir = str(tmp_path)
  result = server.run('writer_jobs:build_from_recording',
                      env={publish.FAULT_KILL_ENV: step},
                      recording=recording, data_dir=data_dir)
  assert result['signal'] == signal.SIGKILL, result['log']
  name_dir = os.path.join(data_dir, 'recorded')
  if STEPS.index(step) >= PUBLISHED:
    assert len(rlds_lite.load(name_dir)) == 2
    # The next writer removes the staging directory left after publishing.
    EpisodeWriter(data_dir, 'recorded', None, if_exists='append').close()
  else:
    with pytest.raises(ValueError, match='is not a TFDS dataset directory'):
      rlds_lite.load(name_dir)
    # The next build removes the staging directory and succeeds.
    rlds_lite.tfds.build_from_envlogger(recording, name='recorded',
                                        data_dir=data_dir)
  assert len(rlds_lite.load(name_dir)) == 2
  assert sorted(os.listdir(name_dir)) == ['.1.0.0.lock', '1.0.0']


def test_a_killed_tfds_build_is_ignored_then_removed(server, tmp_path):
  data_dir = str(tmp_path)
  ready = str(tmp_path / 'ready')
  pid = server.start('writer_jobs:build_slowly', data_dir=data_dir,
                     env={'RLDS_LITE_TEST_READY': ready})
  _wait_for(ready)
  time.sleep(0.1)
  os.kill(pid, signal.SIGKILL)
  assert server.wait(pid)['signal'] == signal.SIGKILL
  name_dir = os.path.join(data_dir, 'slow_build')
  left = [n for n in os.listdir(name_dir) if n.startswith('incomplete.')]
  assert len(left) == 1, os.listdir(name_dir)   # TFDS's staging directory.
  with pytest.raises(ValueError, match='is not a TFDS dataset directory'):
    rlds_lite.load(name_dir)
  builder = writer_jobs.slow_builder_class()(data_dir=data_dir)
  builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
      max_examples_per_split=5))
  assert sorted(os.listdir(name_dir)) == ['.1.0.0.lock', '1.0.0']
  assert [i for i, _ in writer_jobs.read_episodes(
      rlds_lite.load(name_dir, dense=True))] == [0, 1, 2, 3, 4]
