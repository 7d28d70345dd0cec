"""Corrupt files: every reader gives one clear error naming the file (and episode).

Every kind of damage in `corrupt_files` (shards truncated, flipped, deleted,
emptied; ``dataset_info.json`` garbled, cut, edited, its features too) is
tried on every reader entry point: ``rlds_lite.load`` (opening, and a user's
own loop), ``rlds-lite validate`` (exit 1, the problem names the file),
``rlds-lite inspect``, ``rlds-lite stats`` and ``rlds-lite convert --from
rlds`` (exit 2, one line on stderr naming the file and episode). Datasets as
rlds_lite writes them hold the features in ``dataset_info.json``: damage to
``features.json`` there is a ``validate`` problem while every reader reads
the intact data; legacy datasets (features only in ``features.json``) give
the errors naming ``features.json``. The CLI runs in-process (``cli.main``)
but for two real runs; array_record datasets and the other formats
``convert`` reads follow.
"""

import contextlib
import io
import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import corrupt_files
import rlds_lite
from rlds_lite import cli
from rlds_lite import dataset_files
from rlds_lite.convert import files as convert_files

TFRECORD = corrupt_files.TFRECORD_CASES
LEGACY = corrupt_files.LEGACY_CASES
UNREAD = corrupt_files.UNREAD_FEATURES_JSON_CASES
ARRAY_RECORD = corrupt_files.ARRAY_RECORD_CASES

# Cases whose readers fail: (legacy dataset?, case name) by test id.
FAILING = {**{name: (False, name) for name in TFRECORD},
           **{f'legacy_{name}': (True, name) for name in LEGACY}}


@pytest.fixture(scope='module')
def corrupt_intact(tmp_path_factory):
  """The intact tfrecord dataset (copied, then damaged, by each test)."""
  return corrupt_files.write_dataset(str(tmp_path_factory.mktemp('intact')))


@pytest.fixture(scope='module')
def corrupt_intact_legacy(corrupt_intact, tmp_path_factory):
  """The same dataset with its features in features.json only."""
  target = tmp_path_factory.mktemp('intact_legacy') / corrupt_files.NAME
  return corrupt_files.make_legacy(corrupt_files.copy_dataset(
      corrupt_intact, str(target / '1.0.0')))


@pytest.fixture(scope='module')
def corrupt_intact_array_record(tmp_path_factory):
  return corrupt_files.write_dataset(
      str(tmp_path_factory.mktemp('intact_ar')), 'array_record')


def damaged(intact: str, tmp_path, cases, name: str) -> str:
  path = corrupt_files.copy_dataset(
      intact, str(tmp_path / corrupt_files.NAME / '1.0.0'))
  damage, _ = cases[name]
  damage(path)
  return path


@pytest.fixture(name='failing')
def fixture_failing(request, corrupt_intact, corrupt_intact_legacy, tmp_path):
  """``(path, Expect)`` of the damaged copy for the test's ``case`` id."""
  legacy, name = FAILING[request.node.callspec.params['case']]
  if legacy:
    path = damaged(corrupt_intact_legacy, tmp_path, LEGACY, name)
    return path, LEGACY[name][1]
  return damaged(corrupt_intact, tmp_path, TFRECORD, name), TFRECORD[name][1]


def assert_names(message: str, path: str, expect: corrupt_files.Expect):
  """One line naming the file (its full path), the episode and the text."""
  assert '\n' not in message and 'Traceback' not in message, message
  assert message.startswith(os.path.join(path, expect.file) + ': '), message
  if expect.episode is not None:
    assert f"episode {expect.episode} of split 'train'" in message, message
  if expect.field is not None:
    assert f'field {expect.field!r}' in message, message
  assert expect.text in message, message


@pytest.mark.parametrize('case', sorted(FAILING))
def test_load(case, failing):
  path, expect = failing
  if expect.at_open:
    for dense in (False, True):
      with pytest.raises(dataset_files.CorruptDatasetError) as error:
        rlds_lite.load(path, dense=dense)
      assert_names(str(error.value), path, expect)
      assert error.value.path == os.path.join(path, expect.file)
      assert error.value.episode == expect.episode
    return
  # Damage inside the data shows only when read: a user's own loop gets TF's
  # error (no file named; `rlds-lite validate` names it, see below).
  with pytest.raises(getattr(tf.errors, expect.load_error)):
    for _ in rlds_lite.load(path, dense=True):
      pass
  with pytest.raises(tf.errors.OpError):
    for episode in rlds_lite.load(path):
      for _ in episode['steps']:
        pass


@pytest.mark.parametrize('case', sorted(FAILING))
def test_validate_reports_the_file_as_a_problem(case, failing, capsys):
  path, expect = failing
  assert cli.main(['validate', path, '--json', '--no-progress']) == 1
  out, err = capsys.readouterr()
  assert err == ''
  report = json.loads(out)
  assert not report['ok'] and not report['complete']
  named = [p for p in report['problems']
           if p.get('file') == os.path.join(path, expect.file)]
  assert named, report['problems']
  problem = named[0]
  assert (problem['episode'], problem['field'], problem['kind']) == (
      expect.episode, expect.field, expect.kind)
  assert_names(problem['message'], path, expect)


@pytest.mark.parametrize('command', ['inspect', 'stats', 'convert'])
@pytest.mark.parametrize('case', sorted(FAILING))
def test_readers_exit_2_with_one_line(case, command, failing, tmp_path,
                                      capsys):
  path, expect = failing
  target = str(tmp_path / 'out.h5')
  args = {'inspect': ['inspect', path, '--no-progress'],
          'stats': ['stats', path, '--no-cache', '--no-progress'],
          'convert': ['convert', '--from', 'rlds', '--to', 'ted', path, target,
                      '--no-progress']}[command]
  assert cli.main(args) == 2
  out, err = capsys.readouterr()
  assert out == ''
  [line] = err.splitlines()
  prefix = f'rlds-lite {command}: '
  assert line.startswith(prefix), line
  assert_names(line[len(prefix):], path, expect)
  assert not os.path.exists(target)


def test_real_cli_runs_print_no_traceback(corrupt_intact, tmp_path):
  flipped = damaged(corrupt_intact, tmp_path / 'a', TFRECORD,
                    'shard_byte_flipped')
  run = corrupt_files.run_cli('validate', flipped, '--no-progress')
  assert run.returncode == 1, run.stderr[-2000:]
  assert corrupt_files.own_lines(run.stderr) == []
  shard = os.path.join(flipped, corrupt_files.SHARD_1)
  assert f"{shard}: episode 3 of split 'train': record 1 is corrupted" in (
      run.stdout)
  assert run.stdout.splitlines()[0].endswith(
      '1 problem in 3 episodes (18 steps); stopped early (a damaged file)')
  truncated = damaged(corrupt_intact, tmp_path / 'b', TFRECORD,
                      'shard_truncated_inside_a_record')
  run = corrupt_files.run_cli('inspect', truncated)
  assert run.returncode == 2
  [line] = corrupt_files.own_lines(run.stderr)
  shard = os.path.join(truncated, corrupt_files.SHARD_1)
  assert line.startswith(
      f"rlds-lite inspect: {shard}: episode 3 of split 'train': is truncated")
  assert run.stdout == ''


def test_every_damaged_shard_is_listed(corrupt_intact, tmp_path):
  path = damaged(corrupt_intact, tmp_path, TFRECORD, 'shard_byte_flipped')
  for index in (0, 2):  # Two more shards, one record each.
    file = corrupt_files.shard(path, index)
    data = bytearray(open(file, 'rb').read())
    data[-10] ^= 0xFF
    open(file, 'wb').write(bytes(data))
  builder = dataset_files.open_builder(path)
  found = dataset_files.find_damage(builder, 'train', records=True)
  assert [(os.path.basename(e.path), e.episode) for e in found] == [
      (f'{corrupt_files.NAME}-train.tfrecord-00000', 1),
      (corrupt_files.SHARD_1, 3),
      (f'{corrupt_files.NAME}-train.tfrecord-00002', 5)]


def test_intact_dataset_reads_and_validates(corrupt_intact, capsys):
  assert dataset_files.find_damage(dataset_files.open_builder(corrupt_intact),
                                   records=True) == []
  assert sum(1 for _ in rlds_lite.load(corrupt_intact, dense=True)) == 6
  assert cli.main(['validate', corrupt_intact, '--no-progress']) == 0
  assert 'OK in 6 episodes' in capsys.readouterr().out


def test_legacy_fixture_reads_features_json(corrupt_intact_legacy):
  """The legacy copy is what the cases need: TFDS decodes with features.json."""
  with open(os.path.join(corrupt_intact_legacy, 'dataset_info.json')) as f:
    assert 'features' not in json.load(f)
  assert dataset_files.features_file(corrupt_intact_legacy) == os.path.join(
      corrupt_intact_legacy, 'features.json')
  assert sum(1 for _ in rlds_lite.load(corrupt_intact_legacy, dense=True)) == 6


# ---------------------------------------------------------------------------
# features.json that readers do not read (features in dataset_info.json).


def _cli_out(args):
  """(exit code, stdout) of an in-process CLI run."""
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    code = cli.main(args)
  return code, out.getvalue()


def _reader_outputs(path, target):
  """What inspect, stats and convert give for a dataset (its path as '<d>')."""
  inspected = _cli_out(['inspect', path, '--json', '--no-progress'])
  computed = _cli_out(['stats', path, '--no-cache', '--json', '--no-progress'])
  converted = _cli_out(['convert', '--from', 'rlds', '--to', 'ted', path,
                        target, '--no-progress'])
  episodes = list(convert_files.read_episodes('ted', target))
  return ([(code, out.replace(path, '<d>').replace(target, '<t>'))
           for code, out in (inspected, computed, converted)], episodes)


@pytest.fixture(scope='module')
def intact_reads(corrupt_intact, tmp_path_factory):
  """The intact dataset's dense episodes, and what the CLI readers give."""
  episodes = list(
      rlds_lite.load(corrupt_intact, dense=True).as_numpy_iterator())
  target = str(tmp_path_factory.mktemp('intact_reads') / 'out.h5')
  return episodes, _reader_outputs(corrupt_intact, target)


def _assert_same_episodes(actual, expected):
  assert len(actual) == len(expected)
  for got, want in zip(actual, expected):
    tf.nest.map_structure(np.testing.assert_array_equal, got, want)


@pytest.mark.parametrize('name', sorted(UNREAD))
def test_unread_features_json_load_reads_the_data(name, corrupt_intact,
                                                  intact_reads, tmp_path):
  path = damaged(corrupt_intact, tmp_path, UNREAD, name)
  expected, _ = intact_reads
  _assert_same_episodes(
      list(rlds_lite.load(path, dense=True).as_numpy_iterator()), expected)
  # By name too (TFDS's lookup by name skips a dataset without features.json).
  _assert_same_episodes(list(rlds_lite.load(
      corrupt_files.NAME, data_dir=str(tmp_path),
      dense=True).as_numpy_iterator()), expected)
  steps = rlds_lite.load(path).element_spec['steps'].element_spec
  assert steps['observation'] == tf.TensorSpec((3,), tf.float32)


@pytest.mark.parametrize('name', sorted(UNREAD))
def test_unread_features_json_is_one_validate_problem(name, corrupt_intact,
                                                      tmp_path, capsys):
  path = damaged(corrupt_intact, tmp_path, UNREAD, name)
  expect = UNREAD[name][1]
  assert cli.main(['validate', path, '--json', '--no-progress']) == 1
  out, err = capsys.readouterr()
  assert err == ''
  report = json.loads(out)
  assert (report['ok'], report['complete'], report['episodes']) == (
      False, True, 6)
  [problem] = report['problems']
  assert (problem['file'], problem['episode'], problem['field'],
          problem['kind']) == (os.path.join(path, 'features.json'), None,
                               expect.field, 'features_mismatch')
  assert_names(problem['message'], path, expect)


# One case of each kind for the CLI readers (load and validate take them
# all): the file gone, unreadable, readable but wrong. No reader opens it
# (TFDS does not read it), so the others take the same path.
READER_CASES = ('features_deleted', 'features_garbage',
                'features_shape_made_scalar')


@pytest.mark.parametrize('name', READER_CASES)
def test_unread_features_json_readers_read_the_data(name, corrupt_intact,
                                                    intact_reads, tmp_path):
  path = damaged(corrupt_intact, tmp_path, UNREAD, name)
  _, (intact_outputs, intact_converted) = intact_reads
  outputs, converted = _reader_outputs(path, str(tmp_path / 'out.h5'))
  assert [code for code, _ in outputs] == [0, 0, 0]
  assert outputs == intact_outputs
  _assert_same_episodes(converted, intact_converted)


def test_same_size_edit_of_the_features_read_is_seen_only_by_comparison(
    corrupt_intact, corrupt_intact_legacy, tmp_path):
  """A limit (docs/guarantees.md): a shape edit that keeps the value count.

  (3,) -> (1, 3) in the features TFDS decodes with reads reshaped. With the
  features in dataset_info.json, validate sees features.json disagree (and
  names it, though the edit was in dataset_info.json); in a legacy dataset
  nothing on disk says otherwise.
  """
  path = corrupt_files.copy_dataset(corrupt_intact, str(tmp_path / 'a'))
  reshape = corrupt_files._shape  # pylint: disable=protected-access
  reshape('1', '3', name='dataset_info.json')(path)
  legacy = corrupt_files.copy_dataset(corrupt_intact_legacy,
                                      str(tmp_path / 'b'))
  reshape('1', '3')(legacy)
  for edited in (path, legacy):
    shapes = {e['steps']['observation'].shape[1:]
              for e in rlds_lite.load(edited, dense=True)}
    assert shapes == {(1, 3)}
  report = rlds_lite.validate(path)
  assert [(p.kind, p.file) for p in report.problems] == [
      ('features_mismatch', os.path.join(path, 'features.json'))]
  assert report.problems[0].message.endswith(
      'float32 of shape (3,) here, float32 of shape (1, 3) there.')
  assert rlds_lite.validate(legacy).ok


# ---------------------------------------------------------------------------
# array_record: read with tfds.data_source (rlds_lite.load reads tfrecord).


@pytest.mark.parametrize('name', sorted(ARRAY_RECORD))
def test_array_record_validate_and_inspect_name_the_file(
    name, corrupt_intact_array_record, tmp_path, capsys):
  path = damaged(corrupt_intact_array_record, tmp_path, ARRAY_RECORD, name)
  expect = ARRAY_RECORD[name][1]
  assert cli.main(['validate', path, '--json', '--no-progress']) == 1
  report = json.loads(capsys.readouterr().out)
  [problem] = [p for p in report['problems']
               if p.get('file') == os.path.join(path, expect.file)]
  assert problem['episode'] == expect.episode
  assert_names(problem['message'], path, expect)
  # Shard 1 holds episodes 2-3: it loses them from the damaged one on, and
  # every other episode is checked.
  unread = 4 - (2 if expect.episode is None else expect.episode)
  assert (report['episodes'], report['unread'], report['complete']) == (
      corrupt_files.NUM_EPISODES - unread, unread, False)
  assert cli.main(['inspect', path, '--no-progress']) == 2
  [line] = capsys.readouterr().err.splitlines()
  assert_names(line[len('rlds-lite inspect: '):], path, expect)


@pytest.mark.parametrize('name', sorted(ARRAY_RECORD))
def test_array_record_load(name, corrupt_intact_array_record, tmp_path):
  path = damaged(corrupt_intact_array_record, tmp_path, ARRAY_RECORD, name)
  expect = ARRAY_RECORD[name][1]
  if expect.at_open:
    with pytest.raises(dataset_files.CorruptDatasetError) as error:
      rlds_lite.load(path)
    assert_names(str(error.value), path, expect)
  else:
    with pytest.raises(ValueError, match='is stored as array_record, which '
                       'TFDS reads only by random access'):
      rlds_lite.load(path)


def test_array_record_data_source_alone_is_unsafe(corrupt_intact_array_record,
                                                  tmp_path):
  """What tfds.data_source itself gives: why `rlds-lite validate` matters."""
  path = damaged(corrupt_intact_array_record, tmp_path / 'a', ARRAY_RECORD,
                 'shard_truncated')
  builder = tfds.builder_from_directory(path)
  with pytest.raises(TypeError, match="object of type 'NoneType' has no len"):
    builder.as_data_source('train')[2]  # pylint: disable=expression-not-assigned
  dense = builder.as_data_source(
      'train', decoders={'steps': tfds.decode.SkipDecoding()})
  assert set(dense[2]['steps'].values()) == {None}  # Silently empty.
  path = damaged(corrupt_intact_array_record, tmp_path / 'b', ARRAY_RECORD,
                 'shard_chunk_flipped')
  source = tfds.builder_from_directory(path).as_data_source('train')
  with pytest.raises(RuntimeError, match='Corrupted Riegeli/records file'):
    source[2]  # pylint: disable=pointless-statement
  intact = tfds.builder_from_directory(
      corrupt_intact_array_record).as_data_source('train')
  assert len(intact) == 6


# ---------------------------------------------------------------------------
# The other formats `rlds-lite convert` reads.


def _episodes():
  return rlds_lite.synthetic.episode_arrays(num_episodes=3, seed=0)


def _files_in(path):
  if os.path.isfile(path):
    return [path]
  return sorted(os.path.join(root, f) for root, _, names in os.walk(path)
                for f in names)


def _cut(path):
  for file in _files_in(path):
    data = open(file, 'rb').read()
    open(file, 'wb').write(data[:len(data) // 2])


def _cut_hdf5(path):
  for file in _files_in(path):
    if file.endswith('.hdf5'):
      data = open(file, 'rb').read()
      open(file, 'wb').write(data[:len(data) // 2])


def _garble(path):
  for file in _files_in(path):
    open(file, 'wb').write(b'garbage' * 100)


_NOT_NPZ = ('is not a .npz file (a zip archive of .npy arrays, as numpy.savez '
            'writes)')  # No zip end record: cut short, or not a zip at all.

SOURCES = {  # format -> (file name, damage, the message)
    'il truncated': ('il', 'x.npz', _cut, _NOT_NPZ),
    'alf garbage': ('alf', 'x.npz', _garble, _NOT_NPZ),
    'ted truncated': ('ted', 'x.h5', _cut,
                      'is not a readable HDF5 file: Unable to synchronously '
                      'open file (truncated file'),
    'd4rl garbage': ('d4rl', 'x.h5', _garble,
                     'is not a readable HDF5 file: Unable to synchronously '
                     'open file (file signature not found)'),
    'webdataset truncated': ('webdataset', 'shards', _cut,
                             'is truncated: it ends'),
    'webdataset garbage': ('webdataset', 'shards', _garble,
                           'is not a readable tar file'),
    'minari truncated': ('minari', 'minari', _cut_hdf5,
                         'is not a readable HDF5 file: Unable to synchronously '
                         'open file (truncated file'),
}
WRITE_OPTIONS = {'minari': {'dataset_id': 'demo/point-v0'}}


@pytest.mark.parametrize('case', sorted(SOURCES))
def test_convert_sources_name_the_damaged_file(case, tmp_path, capsys):
  fmt, file_name, damage, message = SOURCES[case]
  source = convert_files.write_episodes(
      fmt, [{'steps': e} for e in _episodes()], str(tmp_path / file_name),
      **WRITE_OPTIONS.get(fmt, {}))
  damage(source)
  target = str(tmp_path / 'out.npz')
  assert cli.main(['convert', '--from', fmt, '--to', 'alf', source, target,
                   '--no-progress']) == 2
  [line] = capsys.readouterr().err.splitlines()
  named = _files_in(source)[0]
  assert line.startswith(f'rlds-lite convert: {named}: {message}'), line
  assert not os.path.exists(target)


def test_npz_byte_flip_is_caught_by_zip_checksums(tmp_path):
  source = convert_files.write_episodes(
      'il', [{'steps': e} for e in _episodes()], str(tmp_path / 'x.npz'))
  data = bytearray(open(source, 'rb').read())
  data[len(data) // 3] ^= 0xFF
  open(source, 'wb').write(bytes(data))
  with pytest.raises(rlds_lite.convert.ConversionError,
                     match=f'{source}: is not a readable .npz file: Bad CRC-32'):
    list(convert_files.read_episodes('il', source))


def test_webdataset_value_flip_is_not_detectable(tmp_path):
  """Tar and pickle hold no checksums: a flipped data byte reads silently.

  Documented in docs/guarantees.md; HDF5 (TED, D4RL, Minari) is the same
  unless written with checksums.
  """
  episodes = [{'steps': e} for e in _episodes()]
  [shard] = rlds_lite.convert.il_representations.to_webdataset(
      episodes, str(tmp_path / 'shards'))
  value = episodes[0]['steps']['observation'][0]
  data = bytearray(open(shard, 'rb').read())
  at = bytes(data).index(np.asarray(value).tobytes())
  data[at] ^= 0x01
  open(shard, 'wb').write(bytes(data))
  [first, *_] = list(convert_files.read_episodes('webdataset', shard))
  got = first['steps']['observation'][0]
  assert not np.array_equal(got, value)
  assert np.array_equal(got[1:], value[1:])

