"""Tests of rlds_lite.convert.hdf5_output: a failed write, cleanly."""

import errno
import json
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

from hdf5_failures import FillingFile
from rlds_lite.convert import hdf5_output


def test_a_short_write_then_a_full_disk_is_one_oserror_naming_the_file(
    tmp_path, monkeypatch):
  monkeypatch.setattr(FillingFile, 'room', 4096)
  monkeypatch.setattr(hdf5_output.io, 'FileIO', FillingFile)
  path = str(tmp_path / 'out.h5')
  with pytest.raises(OSError) as raised:
    with hdf5_output.HDF5Output(path) as output:
      output.file.create_dataset('x', data=np.zeros(100_000))
  assert raised.value.errno == errno.ENOSPC
  assert raised.value.filename == path


def test_a_file_written_whole_reads_back(tmp_path):
  path = str(tmp_path / 'out.h5')
  with hdf5_output.HDF5Output(path) as output:
    output.file.create_dataset('x', data=np.arange(5))
    output.check()
  with h5py.File(path, 'r') as f:
    assert f['x'][()].tolist() == [0, 1, 2, 3, 4]


def _run(scenario, tmp_path):
  """`hdf5_failures.py` in a process of its own: (exit status, result)."""
  script = os.path.join(os.path.dirname(__file__), 'hdf5_failures.py')
  done = subprocess.run([sys.executable, script, scenario, str(tmp_path)],
                        capture_output=True, text=True, timeout=120,
                        check=False)
  lines = done.stdout.strip().splitlines()
  return done.returncode, (json.loads(lines[-1]) if lines else done.stderr)


def test_hdf5s_own_error_after_a_dropped_write_is_the_full_disk(tmp_path):
  """With writes dropped and no `check`, HDF5 reads back metadata that never
  reached the disk and raises its own error (it was ``ValueError: Unable to
  synchronously create group (bad symbol table node signature)``): the full
  disk is what is raised, naming the label; the process exits cleanly."""
  assert _run('writes_on_without_check', tmp_path) == (0, {
      'raised': 'OSError', 'errno': errno.ENOSPC, 'filename': '/data/out.h5',
      'str': "[Errno 28] No space left on device: '/data/out.h5'"})


def test_check_names_the_label(tmp_path):
  assert _run('checks', tmp_path) == (0, {
      'raised': 'OSError', 'errno': errno.ENOSPC, 'filename': '/data/out.h5',
      'str': "[Errno 28] No space left on device: '/data/out.h5'"})


def test_an_interrupt_is_not_replaced_by_the_full_disk(tmp_path):
  assert _run('interrupted', tmp_path) == (0, {
      'raised': 'KeyboardInterrupt', 'errno': None, 'filename': None,
      'str': ''})
