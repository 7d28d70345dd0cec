"""Failed HDF5 writes, each in a process of its own (run by
``test_convert_hdf5_output``): HDF5 left with metadata that never reached
the disk may crash at exit, which must not take the test run with it.

  python hdf5_failures.py SCENARIO DIR   prints {"raised": ..., ...} as JSON

``hdf5_output`` is loaded from its file, without TensorFlow.
"""

import errno
import importlib.util
import io
import json
import os
import sys

import numpy as np

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                     'rlds_lite', 'convert', 'hdf5_output.py')
_SPEC = importlib.util.spec_from_file_location('hdf5_output', _PATH)
hdf5_output = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(hdf5_output)


class FillingFile(io.FileIO):
  """A file on a disk with ``room`` bytes left: short writes, then ENOSPC."""

  room = 0

  def write(self, data):
    view = memoryview(data).cast('B')
    if not FillingFile.room:
      raise OSError(errno.ENOSPC, 'No space left on device', self.name)
    written = super().write(view[:FillingFile.room])
    FillingFile.room -= written
    return written


def writes_on_without_check(output):
  """2,000 groups with no `check`: HDF5 reads back metadata it never wrote
  and raises its own error (``bad symbol table node signature``)."""
  for i in range(2000):
    group = output.file.create_group(f'episode_{i}')
    group.create_dataset('obs', data=np.full((50, 4), i, np.float64))
    group.create_dataset('act', data=np.zeros((50, 2)), chunks=True,
                         maxshape=(None, 2))


def checks(output):
  output.file.create_dataset('x', data=np.zeros(100_000))
  output.file.flush()
  output.check()


def interrupted(output):
  output.file.create_dataset('x', data=np.zeros(100_000))
  output.file.flush()
  raise KeyboardInterrupt


SCENARIOS = {'writes_on_without_check': (4096, writes_on_without_check),
             'checks': (0, checks), 'interrupted': (0, interrupted)}


def main(scenario: str, directory: str) -> None:
  room, write = SCENARIOS[scenario]
  FillingFile.room = room
  hdf5_output.io.FileIO = FillingFile
  result = {'raised': None}
  try:
    with hdf5_output.HDF5Output(os.path.join(directory, '.out.h5.staging'),
                                label='/data/out.h5') as output:
      write(output)
  except BaseException as error:  # pylint: disable=broad-except
    result = {'raised': type(error).__name__, 'str': str(error),
              'errno': getattr(error, 'errno', None),
              'filename': getattr(error, 'filename', None)}
  print(json.dumps(result))


if __name__ == '__main__':
  main(*sys.argv[1:])
