"""Minari, D4RL and TED files read with another's reader: named, not misread."""

import os

import pytest

import convert_testing
from rlds_lite import convert
from rlds_lite.convert import files

WRITTEN = {'minari': 'm/walk-v0', 'd4rl': 'd4rl.h5', 'ted': 'ted.h5'}
"""Where each format is written (a Minari dataset is a directory)."""

FOUND = {
    'minari': 'looks like a Minari dataset (episode_<i> groups)',
    'd4rl': 'looks like a D4RL file (observations, actions, rewards and '
            'terminals rows at the top)',
    'ted': 'looks like a TorchRL TED file (a next group and action rows)',
}

CASES = {
    # name: (format written, what is given, read as, message)
    'd4rl-as-minari': ('d4rl', 'file', 'minari',
                       f"{FOUND['d4rl']}, not a Minari dataset; read it with "
                       'from_d4rl()'),
    'ted-as-minari': ('ted', 'file', 'minari',
                      f"{FOUND['ted']}, not a Minari dataset; read it with "
                      'from_ted()'),
    'minari-file-as-d4rl': ('minari', 'file', 'd4rl',
                            f"{FOUND['minari']}, not a D4RL file; read it "
                            'with from_minari()'),
    'minari-dir-as-d4rl': ('minari', 'dir', 'd4rl',
                           'is a Minari dataset directory, not a D4RL file; '
                           'read it with from_minari()'),
    'minari-root-as-d4rl': ('minari', 'root', 'd4rl',
                            'is a Minari dataset directory, not a D4RL file; '
                            'read it with from_minari()'),
    'ted-as-d4rl': ('ted', 'file', 'd4rl',
                    f"{FOUND['ted']}, not a D4RL file; read it with "
                    'from_ted()'),
    'minari-file-as-ted': ('minari', 'file', 'ted',
                           f"{FOUND['minari']}, not a TorchRL TED file; read "
                           'it with from_minari()'),
    'minari-dir-as-ted': ('minari', 'dir', 'ted',
                          'is a Minari dataset directory, not a TorchRL TED '
                          'file; read it with from_minari()'),
    'd4rl-as-ted': ('d4rl', 'file', 'ted',
                    f"{FOUND['d4rl']}, not a TorchRL TED file; read it with "
                    'from_d4rl()'),
    'other-dir-as-d4rl': (None, 'dir', 'd4rl',
                          'is a directory, not an HDF5 file'),
}


@pytest.mark.parametrize('case', list(CASES))
def test_a_file_of_another_format_is_named(tmp_path, case):
  written, given, read_as, message = CASES[case]
  episodes = [e for e in convert_testing.NAMED_EPISODES['mixed-ends']
              if len(e['steps']['is_last']) > 1]
  if written is None:
    path = str(tmp_path / 'some_dir')
    os.mkdir(path)
  else:
    path = files.write_episodes(written, episodes,
                                tmp_path / WRITTEN[written])
  if given == 'file' and written == 'minari':
    path = os.path.join(path, 'data', 'main_data.hdf5')
  elif given == 'root':
    path = str(tmp_path / 'm')
  with pytest.raises(convert.ConversionError) as error:
    list(files.read_episodes(read_as, path))
  assert str(error.value) == f'{path}: {message}'


@pytest.mark.parametrize('fmt', list(WRITTEN))
def test_each_format_reads_its_own_files(tmp_path, fmt):
  episodes = convert_testing.NAMED_EPISODES['terminal']
  path = files.write_episodes(fmt, episodes, tmp_path / WRITTEN[fmt])
  assert len(list(files.read_episodes(fmt, path))) == 1
