"""Tests of rlds_lite.convert.hdf5_output: a failed write, cleanly."""

import errno
import io

import h5py
import numpy as np
import pytest

from rlds_lite.convert import hdf5_output


class _FillingFile(io.FileIO):
  """A file on a disk with ``room`` bytes left: short writes, then ENOSPC."""

  room = 4096

  def write(self, data):
    view = memoryview(data).cast('B')
    if not _FillingFile.room:
      raise OSError(errno.ENOSPC, 'No space left on device', self.name)
    written = super().write(view[:_FillingFile.room])
    _FillingFile.room -= written
    return written


def test_a_short_write_then_a_full_disk_is_one_oserror_naming_the_file(
    tmp_path, monkeypatch):
  monkeypatch.setattr(hdf5_output.io, 'FileIO', _FillingFile)
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
