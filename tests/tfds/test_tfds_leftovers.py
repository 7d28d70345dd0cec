"""rlds_lite.tfds.leftovers: readers ignore what dead writers left; the next
writer removes it (and only it).

Real killed writers are in tests/faults/test_faults_writers.py; here the
leftovers are laid out by hand, one of each kind.
"""

import os
import shutil

import numpy as np
import pytest

import rlds_lite
from rlds_lite import loading
from rlds_lite.tfds import EpisodeWriter
from rlds_lite.tfds import leftovers
from test_tfds_episode_writer import vector_episode
from test_tfds_episode_writer import vector_features


def _ids(path):
  return [int(e['episode_id']) for e in
          rlds_lite.load(path, dense=True).as_numpy_iterator()]


def _write(data_dir, name, ids, **kwargs):
  with EpisodeWriter(data_dir, name, vector_features(), **kwargs) as writer:
    writer.add_episodes([vector_episode(2, i) for i in ids])
  return writer.path


def test_an_open_writer_is_invisible_and_load_ignores_its_staging(tmp_path):
  # The case: load(data_dir/name) loaded the staging directory, and
  # after a later write failed with "holds several datasets".
  writer = EpisodeWriter(tmp_path, 'pending', vector_features())
  writer.add_episode(vector_episode(2, 0))
  with pytest.raises(ValueError, match='is not a TFDS dataset directory'):
    rlds_lite.load(tmp_path / 'pending')
  writer.close()
  assert _ids(tmp_path / 'pending') == [0]


def _lay_out_leftovers(tmp_path, path):
  """One leftover of each kind a killed writer (of any version) leaves."""
  complete = _write(tmp_path / 'elsewhere', 'kept', [9])
  name_dir = os.path.dirname(path)
  staging = {
      '.1.0.0.incomplete-999999-0123abcd',          # Staging, complete.
      '.1.0.0.incomplete-' + 'a' * 32,             # Before the lock.
      '.1.0.0.replaced-' + 'b' * 32,              # Old overwrite's trash.
  }
  for name in staging:
    shutil.copytree(complete, os.path.join(name_dir, name))
  inside = {
      '.shard-999999-abc-00000',                   # A shard being written.
      '.incomplete-' + 'c' * 32 + '-00000',        # Same, before the lock.
      '.dataset_info.json.tmp-999999-abc',         # Info being written.
      '.features.json.tmp-999999-abc',
      'kept-train.tfrecord-00007',                 # Named, never published.
      'kept-train-g0005.tfrecord-00000',           # An unpublished overwrite.
  }
  for name in inside:
    with open(os.path.join(path, name), 'wb') as f:
      f.write(b'partial')
  os.mkdir(os.path.join(path, '.info-' + 'd' * 32))   # Old append staging.
  return staging, inside


def test_readers_ignore_leftovers_and_the_next_writer_removes_them(tmp_path):
  path = _write(tmp_path, 'kept', [0, 1])
  staging, inside = _lay_out_leftovers(tmp_path, path)
  tfds_incomplete = os.path.join(tmp_path, 'kept', 'incomplete.ABC123_1.0.0')
  shutil.copytree(path, tfds_incomplete)
  foreign = os.path.join(path, 'notes.txt')
  with open(foreign, 'w') as f:
    f.write('not ours')
  for reader_path in (tmp_path / 'kept', path):
    assert _ids(reader_path) == [0, 1]
    builder = rlds_lite.open(reader_path).builder  # inspect/validate/stats.
    assert builder.info.splits['train'].num_examples == 2
  assert sorted(os.listdir(tmp_path / 'kept')) == sorted(
      ['.1.0.0.lock', '1.0.0', 'incomplete.ABC123_1.0.0', *staging])

  _write(tmp_path, 'kept', [2], if_exists='append')
  assert _ids(path) == [0, 1, 2]
  # TFDS's own incomplete dir is TFDS's to name: left (RLDSBuilder removes it).
  assert sorted(os.listdir(tmp_path / 'kept')) == [
      '.1.0.0.lock', '1.0.0', 'incomplete.ABC123_1.0.0']
  assert sorted(os.listdir(path)) == [
      'dataset_info.json', 'features.json', 'kept-train.tfrecord-00000',
      'kept-train.tfrecord-00001', 'notes.txt']


def test_an_old_overwrite_killed_between_its_renames_is_restored(tmp_path):
  # rlds_lite before the lock renamed the dataset to .replaced-*, then the
  # new one into place: killed between, the dataset was gone.
  path = _write(tmp_path, 'gone', [0, 1])
  trash = os.path.join(tmp_path, 'gone', '.1.0.0.replaced-' + 'e' * 32)
  os.rename(path, trash)
  with pytest.raises(ValueError, match='is not a TFDS dataset directory'):
    rlds_lite.load(tmp_path / 'gone')
  _write(tmp_path, 'gone', [2], if_exists='append')
  assert _ids(path) == [0, 1, 2]
  assert not os.path.exists(trash)


def test_remove_leftovers_keeps_what_readers_may_use(tmp_path):
  path = _write(tmp_path, 'gens', [0])
  for episode_id in (1, 2):
    _write(tmp_path, 'gens', [episode_id], if_exists='overwrite')
  names = sorted(n for n in os.listdir(path) if n.startswith('gens-'))
  assert names == ['gens-train-g0002.tfrecord-00000',
                   'gens-train-g0003.tfrecord-00000']
  proto = leftovers.read_info_proto(path)
  assert leftovers.remove_leftovers(path, 'gens', proto) == []
  assert _ids(path) == [2]
