"""filter_dataset, split_dataset, merge_datasets: exact copies, metadata, errors."""

import os

import numpy as np
import pytest
import tensorflow_datasets as tfds

import rlds_lite
from rlds_lite import catalog as catalog_lib
from rlds_lite.catalog import ExpressionError
from rlds_lite.catalog import records as records_lib
from rlds_lite.catalog import rewrite
from rlds_lite.tfds import EpisodeWriter
import catalog_testing


@pytest.fixture(name='robot', scope='module')
def _robot(tmp_path_factory):
  data = catalog_testing.episodes()
  path = catalog_testing.write(str(tmp_path_factory.mktemp('robot')),
                               data=data, per_file=5)
  return path, data


def _records(path, split='train'):
  builder = tfds.builder_from_directory(path)
  return list(records_lib.iterate_records(
      records_lib.split_files(builder, split)))


def _ids(path, split='train'):
  return [int(e['episode_metadata']['episode_id'])
          for e in rlds_lite.load(path, split, dense=True)]


def test_filter_copies_the_matching_records_byte_for_byte(robot, tmp_path):
  path, data = robot
  out = rewrite.filter_dataset(path, tmp_path / 'out', 'success or length == 0',
                               progress=False)
  assert out == str(tmp_path / 'out' / 'robot' / '1.0.0')
  expected = [i for i, e in enumerate(data)
              if e['episode_metadata']['success'] or
              not len(e['steps']['reward'])]
  assert expected == [0, 3, 6, 9]
  source = _records(path)
  assert _records(out) == [source[i] for i in expected]
  assert tfds.builder_from_directory(out).info.features.to_json() == (
      tfds.builder_from_directory(path).info.features.to_json())
  metadata = tfds.builder_from_directory(out).info.metadata['rlds_lite']
  assert metadata == {
      'operation': 'filter',
      'sources': [{'dataset': path, 'name': 'robot', 'version': '1.0.0',
                   'split': 'train', 'num_episodes': 12, 'metadata': {}}],
      'where': 'success or length == 0', 'last_step': 'invalid',
      'val_fraction': None, 'seed': None,
      'episode_id': {'field': None, 'policy': 'kept'},
      'episodes': {'train': [[0, 0, 1], [0, 3, 1], [0, 6, 1], [0, 9, 1]]}}
  # The new dataset has its own catalog; the episodes keep their ids.
  assert catalog_lib.episodes(out, progress=False)['episode_id'].tolist() == (
      expected)


@pytest.mark.parametrize('fraction, seed, num_val', [
    (0.25, 0, 3),
    (0.25, 1, 3),
    (0.5, 0, 6),
    (0.125, 0, 2),  # 1.5 rounds up.
    (0.95, 0, 11),
], ids=['quarter', 'quarter-other-seed', 'half', 'half-rounds-up', 'most'])
def test_split_counts_are_exact_and_seeded(robot, tmp_path, fraction, seed,
                                           num_val):
  path, _ = robot
  out = rewrite.split_dataset(path, tmp_path / 'out', fraction, seed=seed,
                              progress=False)
  train, val = _ids(out, 'train'), _ids(out, 'validation')
  assert len(val) == num_val and len(train) == 12 - num_val
  assert sorted(train + val) == list(range(12))
  assert train == sorted(train) and val == sorted(val)  # Source order kept.
  mask = np.zeros(12, bool)
  mask[np.random.default_rng(seed).choice(12, num_val, replace=False)] = True
  assert val == np.flatnonzero(mask).tolist()
  runs = tfds.builder_from_directory(out).info.metadata['rlds_lite']['episodes']
  assert [i for _, first, n in runs['validation']
          for i in range(first, first + n)] == val


def test_split_is_reproducible_and_differs_by_seed(robot, tmp_path):
  path, _ = robot
  runs = [rewrite.split_dataset(path, tmp_path / f'out{i}', 0.25, seed=seed,
                                progress=False)
          for i, seed in enumerate([7, 7, 8])]
  vals = [_ids(out, 'validation') for out in runs]
  assert vals[0] == vals[1] != vals[2]


def test_filter_with_validation_split(robot, tmp_path):
  path, _ = robot
  out = rewrite.filter_dataset(path, tmp_path / 'out', 'length > 0',
                               val_fraction=0.2, seed=3, progress=False)
  train, val = _ids(out, 'train'), _ids(out, 'validation')
  assert len(val) == 2 and len(train) == 9 and 3 not in train + val


def test_merge_keeps_unique_ids_and_records_the_sources(tmp_path):
  a = catalog_testing.write(str(tmp_path / 'a'),
                            data=catalog_testing.episodes(3, seed=1))
  b = catalog_testing.write(str(tmp_path / 'b'), data=catalog_testing.episodes(
      2, seed=2, first_id=100))
  out = rewrite.merge_datasets([a, b], tmp_path / 'out', progress=False)
  assert _ids(out) == [0, 1, 2, 100, 101]
  assert _records(out) == _records(a) + _records(b)
  metadata = tfds.builder_from_directory(out).info.metadata['rlds_lite']
  assert [s['dataset'] for s in metadata['sources']] == [a, b]
  assert metadata['episode_id'] == {'field': 'episode_metadata/episode_id',
                                    'policy': 'kept'}
  assert metadata['episodes'] == {'train': [[0, 0, 3], [1, 0, 2]]}


def test_merge_renumbers_colliding_integer_ids(robot, tmp_path):
  path, data = robot
  out = rewrite.merge_datasets([path, path], tmp_path / 'out', val_fraction=0.5,
                               seed=0, progress=False)
  merged = list(rlds_lite.load(out, 'train', dense=True)) + list(
      rlds_lite.load(out, 'validation', dense=True))
  ids = sorted(int(e['episode_metadata']['episode_id']) for e in merged)
  assert ids == list(range(24))
  metadata = tfds.builder_from_directory(out).info.metadata['rlds_lite']
  assert metadata['episode_id'] == {'field': 'episode_metadata/episode_id',
                                    'policy': 'renumbered'}
  # Apart from the id, each episode is its source episode, exactly.
  for episode in merged:
    new_id = int(episode['episode_metadata']['episode_id'])
    source = data[new_id % 12]
    np.testing.assert_array_equal(episode['steps']['observation']['image'],
                                  source['steps']['observation']['image'])
    assert episode['episode_metadata']['file_path'].numpy().decode() == (
        source['episode_metadata']['file_path'])


def test_merge_prefixes_colliding_string_ids(tmp_path):
  features = {'steps': {'reward': np.float32}, 'episode_id': tfds.features.Text()}
  paths = []
  for name in ('a', 'b'):
    with EpisodeWriter(str(tmp_path / name), 'strings', features) as writer:
      for i in range(2):
        writer.add_episode({'steps': {'reward': [1.0], 'is_terminal': [True]},
                            'episode_id': f'ep{i}'})
    paths.append(writer.path)
  out = rewrite.merge_datasets(paths, tmp_path / 'out', progress=False)
  assert [e['episode_id'].numpy().decode() for e in rlds_lite.load(out)] == [
      '0:ep0', '0:ep1', '1:ep0', '1:ep1']


def _assert_nothing_written(out_dir):
  assert not os.path.exists(out_dir)


@pytest.mark.parametrize('call, error, message', [
    (lambda p, o: rewrite.filter_dataset(p, o, 'lenght > 3', progress=False),
     ExpressionError, "EXPR 'lenght > 3': no column 'lenght' (columns: index,"),
    (lambda p, o: rewrite.filter_dataset(p, o, 'length > 100', progress=False),
     ValueError, "filter: no episode matches 'length > 100'; nothing was "
     'written.'),
    (lambda p, o: rewrite.split_dataset(p, o, 0.01, progress=False),
     ValueError, "val_fraction=0.01 of 12 episodes leaves the 'validation' "
     'split empty.'),
    (lambda p, o: rewrite.split_dataset(p, o, 1.0, progress=False),
     ValueError, 'val_fraction must be between 0 and 1 (exclusive), got 1.0.'),
    (lambda p, o: rewrite.filter_dataset(p, o, 'length >', progress=False),
     ExpressionError, "EXPR 'length >': unexpected end of the expression"),
], ids=['unknown-column', 'empty-result', 'empty-validation',
        'fraction-out-of-range', 'syntax-error'])
def test_bad_input_writes_nothing(robot, tmp_path, call, error, message):
  path, _ = robot
  with pytest.raises(error) as raised:
    call(path, tmp_path / 'out')
  assert str(raised.value).startswith(message)
  _assert_nothing_written(tmp_path / 'out')


def test_merge_of_different_features_writes_nothing(robot, tmp_path):
  path, _ = robot
  other = catalog_testing.write(str(tmp_path / 'other'), image=6,
                                data=catalog_testing.episodes(2, image=6))
  with pytest.raises(ValueError) as raised:
    rewrite.merge_datasets([path, other], tmp_path / 'out', progress=False)
  assert str(raised.value) == (
      'merge: the datasets have different features: steps/observation/image '
      f"is Image(shape=(4, 4, 3), dtype=uint8) in '{path}' but "
      f"Image(shape=(6, 6, 3), dtype=uint8) in '{other}'.")
  _assert_nothing_written(tmp_path / 'out')
  bare = rlds_lite.tfds.write_dataset(
      rlds_lite.synthetic.episodes(2), str(tmp_path / 'bare'), 'bare')
  with pytest.raises(ValueError, match=r"different features: only '.*robot.*' "
                     'has episode_metadata/episode_id, '):
    rewrite.merge_datasets([path, bare], tmp_path / 'out', progress=False)
  _assert_nothing_written(tmp_path / 'out')


def test_an_existing_output_directory_is_an_error(robot, tmp_path):
  path, _ = robot
  (tmp_path / 'out').mkdir()
  with pytest.raises(FileExistsError, match="already exists; choose a new "
                     r'output directory \(nothing was written\).'):
    rewrite.filter_dataset(path, tmp_path / 'out', progress=False)
  assert os.listdir(tmp_path / 'out') == []


def test_a_failure_while_writing_leaves_nothing(robot, tmp_path, monkeypatch):
  path, _ = robot
  added = []

  def failing_add(self, record, split=None):
    if len(added) == 3:
      raise OSError('disk full')
    added.append(record)

  monkeypatch.setattr(EpisodeWriter, 'add_serialized_episode', failing_add)
  with pytest.raises(OSError, match='disk full'):
    rewrite.filter_dataset(path, tmp_path / 'out', progress=False)
  _assert_nothing_written(tmp_path / 'out')


def test_array_record_sources_copy_into_array_record(tmp_path):
  data = catalog_testing.episodes(num_episodes=5)
  path = catalog_testing.write(str(tmp_path / 'a'), data=data, per_file=2,
                               file_format='array_record')
  out = rewrite.filter_dataset(path, tmp_path / 'out', 'length >= 2',
                               progress=False)
  assert tfds.builder_from_directory(out).info.file_format.value == (
      'array_record')
  source = _records(path)
  assert _records(out) == [source[i] for i in (1, 2, 4)]


def test_an_output_directory_made_meanwhile_is_left_alone(robot, tmp_path,
                                                          monkeypatch):
  # Another run creates out_dir after our check: we fail, and remove nothing.
  path, _ = robot
  out_dir = tmp_path / 'out'
  real_check = rewrite._check_out_dir  # pylint: disable=protected-access

  def check_then_taken(directory):
    checked = real_check(directory)
    out_dir.mkdir()
    (out_dir / 'theirs').write_text('data')
    return checked

  monkeypatch.setattr(rewrite, '_check_out_dir', check_then_taken)
  with pytest.raises(FileExistsError, match='already exists'):
    rewrite.filter_dataset(path, out_dir, progress=False)
  assert (out_dir / 'theirs').read_text() == 'data'
