"""rlds_lite.tfds.locking: one writer per dataset; released however it ends.

Locks between processes (waiting, timing out naming the holder, a killed
holder) are tested with real processes in tests/faults/test_faults_writers.py.
"""

import os
import time

import numpy as np
import pytest

from rlds_lite.tfds import EpisodeWriter
from rlds_lite.tfds import locking

FEATURES = {'steps': {'reward': np.float32}}


def _episode(n=2):
  return {'steps': {'reward': np.ones(n, np.float32),
                    'is_terminal': np.arange(n) == n - 1}}


def test_lock_file_beside_the_dataset_names_its_holder(tmp_path):
  path = tmp_path / 'toy' / '1.0.0'
  with locking.DatasetLock(path) as lock:
    assert lock.path == str(tmp_path / 'toy' / '.1.0.0.lock')
    with open(lock.path) as f:
      assert f.read().startswith(f'pid {os.getpid()} on host ')
    assert lock.held and 'held' in repr(lock)
  assert not lock.held
  assert os.path.exists(lock.path)  # Never deleted.
  assert not path.exists()


def test_second_writer_in_the_same_process_fails_at_once(tmp_path):
  first = EpisodeWriter(tmp_path, 'toy', FEATURES)
  start = time.monotonic()
  with pytest.raises(locking.DatasetLockedError,
                     match=r"dataset 'toy' version 1.0.0 at '.*' is already "
                     r'being written in this process \(pid \d+\); close\(\) '
                     r'or abort\(\) the other writer first'):
    EpisodeWriter(tmp_path, 'toy', FEATURES, if_exists='append')  # No timeout.
  assert time.monotonic() - start < 2
  first.add_episode(_episode())
  first.close()
  with EpisodeWriter(tmp_path, 'toy', None, if_exists='append',
                     lock_timeout=0) as again:
    again.add_episode(_episode())
  with EpisodeWriter(tmp_path, 'other', FEATURES, lock_timeout=0) as other:
    other.add_episode(_episode())  # Another dataset: another lock.


def _raise_inside(tmp_path):
  with EpisodeWriter(tmp_path, 'toy', FEATURES, if_exists='append'):
    raise RuntimeError('boom')


def _abort(tmp_path):
  EpisodeWriter(tmp_path, 'toy', FEATURES, if_exists='append').abort()


def _fail_in_init(tmp_path):
  EpisodeWriter(tmp_path, 'toy', {'steps': {'other': np.int32}},
                if_exists='append')  # Features differ: ValueError.


def _exists_error(tmp_path):
  EpisodeWriter(tmp_path, 'toy', FEATURES)  # FileExistsError.


def _forgotten(tmp_path):
  writer = EpisodeWriter(tmp_path, 'toy', FEATURES, if_exists='append')
  writer.add_episode(_episode())
  del writer  # Never closed: garbage collection aborts it.


@pytest.mark.parametrize('end', [_raise_inside, _abort, _fail_in_init,
                                 _exists_error, _forgotten])
def test_the_lock_is_released_however_a_writer_ends(tmp_path, end):
  with EpisodeWriter(tmp_path, 'toy', FEATURES) as writer:
    writer.add_episode(_episode())
  with pytest.raises(Exception):
    end(tmp_path)
    raise AssertionError('ended without an error')  # For _abort/_forgotten.
  with EpisodeWriter(tmp_path, 'toy', None, if_exists='append',
                     lock_timeout=0) as writer:
    writer.add_episode(_episode())
  assert writer.num_episodes == 1


def test_bad_timeout(tmp_path):
  with pytest.raises(ValueError, match=r'lock timeout must be None or >= 0'):
    locking.DatasetLock(tmp_path / 'x', timeout=-1)


def test_a_full_disk_for_the_holder_note_still_locks_and_releases(
    tmp_path, monkeypatch):
  """The pid note is informational: ENOSPC writing it must not leak the lock."""
  def full(*unused_args):
    raise OSError(28, 'No space left on device')
  monkeypatch.setattr(locking.os, 'pwrite', full)
  lock = locking.DatasetLock(str(tmp_path / 'toy' / '1.0.0'), timeout=0)
  with lock:
    assert lock.held
  assert not lock.held
  with locking.DatasetLock(str(tmp_path / 'toy' / '1.0.0'), timeout=0) as again:
    assert again.held
