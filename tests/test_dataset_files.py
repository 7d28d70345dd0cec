"""rlds_lite.dataset_files: checks of a dataset's files, and read errors named.

The damage of every kind on every reader is in tests/faults; here are the
pieces: the TFRecord framing scan, the open-time size check (and what it must
not reject), metadata problems, and errors that are not the files' fault.
"""

import json
import os

import pytest
import tensorflow as tf

import rlds_lite
import rlds_testing
from rlds_lite import dataset_files
from rlds_lite import loading
from rlds_lite import stats
from rlds_lite import synthetic
from rlds_lite import tfds as rlds_tfds


def _records(path, payloads):
  with tf.io.TFRecordWriter(path) as writer:
    for payload in payloads:
      writer.write(payload)
  return path


def _cut(size):
  def edit(path):
    data = open(path, 'rb').read()
    open(path, 'wb').write(data[:size])
  return edit


def _flip(at):
  def edit(path):
    data = bytearray(open(path, 'rb').read())
    data[at] ^= 0x01
    open(path, 'wb').write(bytes(data))
  return edit


# Records b'abc' (19 bytes: 12 header, 3 data, 4 CRC) and b'defg' (20 bytes).
SCAN_CASES = {
    'whole': (lambda p: None, (2, None, None)),
    'empty': (_cut(0), (0, None, None)),
    'cut_in_first_header': (
        _cut(5), (0, 'is truncated: it ends inside the header of record 0 '
                    '(5 bytes)', 0)),
    'cut_in_second_header': (
        _cut(25), (1, 'is truncated: it ends inside the header of record 1 '
                     '(25 bytes)', 1)),
    'cut_in_second_data': (
        _cut(33), (1, 'is truncated: it ends inside record 1 (33 bytes; the '
                     'record needs 39)', 1)),
    'cut_in_last_crc': (
        _cut(38), (1, 'is truncated: it ends inside record 1 (38 bytes; the '
                     'record needs 39)', 1)),
    'length_flipped': (
        _flip(19), (1, 'record 1 has a corrupted header at byte 19 (bad '
                      'length checksum)', 1)),
    'length_crc_flipped': (
        _flip(8), (0, 'record 0 has a corrupted header at byte 0 (bad length '
                     'checksum)', 0)),
    'data_flipped': (_flip(13), (2, None, None)),  # Data CRCs: TF's job.
}


@pytest.mark.parametrize('name', sorted(SCAN_CASES))
def test_scan_tfrecord(name, tmp_path):
  path = _records(str(tmp_path / 'x.tfrecord'), [b'abc', b'defg'])
  damage, expected = SCAN_CASES[name]
  damage(path)
  assert dataset_files.scan_tfrecord(path) == expected


@pytest.fixture(name='dataset')
def fixture_dataset(tmp_path):
  with rlds_tfds.EpisodeWriter(str(tmp_path), 'toy', {'steps': {
      'reward': 0.0}}, max_episodes_per_file=2) as writer:
    for length in (3, 4, 5, 6, 7):
      writer.add_episode({'steps': {'reward': [1.0] * length,
                                    'is_terminal': [False] * length}})
  return writer.path


def _edit_info(path, edit):
  file = os.path.join(path, 'dataset_info.json')
  info = json.load(open(file))
  edit(info['splits'][0])
  json.dump(info, open(file, 'w'))


def _shards(path):
  return sorted(os.path.join(path, n) for n in os.listdir(path)
                if 'tfrecord' in n)


def test_num_bytes_as_file_sizes_is_accepted(dataset):
  """Beam-written TFDS datasets count whole files in numBytes."""
  total = sum(os.path.getsize(p) for p in _shards(dataset))
  _edit_info(dataset, lambda split: split.update(numBytes=str(total)))
  assert len(list(rlds_lite.load(dataset))) == 5


def test_num_bytes_of_an_unknown_convention_is_accepted(dataset):
  """Sizes that do not add up trigger a header scan, which finds no damage."""
  _edit_info(dataset, lambda split: split.update(numBytes='12345'))
  assert len(list(rlds_lite.load(dataset))) == 5


def test_a_slice_checks_only_the_files_it_reads(dataset):
  os.remove(_shards(dataset)[2])
  assert len(list(rlds_lite.load(dataset, 'train[:4]'))) == 4
  with pytest.raises(dataset_files.CorruptDatasetError, match='is missing'):
    rlds_lite.load(dataset, 'train[3:]')


def test_split_shards_of_slices_and_sums(dataset):
  builder = dataset_files.open_builder(dataset)
  names = lambda split: [(os.path.basename(s.path), s.first, s.count)
                         for s in dataset_files.split_shards(builder, split)]
  assert names('train[2:3]') == [('toy-train.tfrecord-00001', 2, 2)]
  assert names('train[:1]+train[4:]') == [('toy-train.tfrecord-00000', 0, 2),
                                          ('toy-train.tfrecord-00002', 4, 1)]
  assert len(names(None)) == 3


def test_errors_that_are_not_the_files_are_re_raised(dataset):
  """A failing user transform is not blamed on the dataset's files."""

  def check(episode):
    reward = episode['steps']['reward']
    with tf.control_dependencies([tf.debugging.assert_less(
        reward, tf.zeros_like(reward), message='user check failed')]):
      return {**episode, 'steps': {**episode['steps'],
                                   'reward': tf.identity(reward)}}

  def transform(episodes):
    return episodes.map(check)

  with pytest.raises(tf.errors.InvalidArgumentError, match='user check failed'):
    stats.compute(dataset, transform=transform, cache=False, progress=False)


def test_named_read_errors_passes_other_exceptions(dataset):
  builder = rlds_lite.open(dataset).builder
  with pytest.raises(KeyError):
    with rlds_lite.diagnosis.named_read_errors(builder, 'train'):
      raise KeyError('not ours')


def _make_legacy(path):
  """Features only in features.json (TFDS's own layout): TFDS reads it."""
  file = os.path.join(path, 'dataset_info.json')
  info = json.load(open(file))
  del info['features']
  json.dump(info, open(file, 'w'))


def _info_features(features):
  def edit(path):
    file = os.path.join(path, 'dataset_info.json')
    info = json.load(open(file))
    info['features'] = features
    json.dump(info, open(file, 'w'))
  return edit


def _write(file, content):
  def edit(path):
    with open(os.path.join(path, file), 'wb') as f:
      f.write(content)
  return edit


# name -> (the file named, damage, message, legacy dataset?)
METADATA_CASES = {
    'info_binary': ('dataset_info.json', _write('dataset_info.json',
                                                b'\xff\xfe\x00'),
                    'is not text (not UTF-8)', False),
    'info_null': ('dataset_info.json', _write('dataset_info.json', b'null'),
                  'holds a JSON null, not an object', False),
    'info_without_splits': ('dataset_info.json', _write(
        'dataset_info.json', b'{"version": "1.0.0"}'), 'lists no splits',
                            False),
    'info_file_format': (
        'dataset_info.json', _write(
            'dataset_info.json',
            b'{"name": "toy", "version": "1.0.0", "fileFormat": "csv"}'),
        "names an unknown file format 'csv'.", False),
    'info_features_unknown_class': (
        'dataset_info.json',
        _info_features({'pythonClassName': 'x.Y', 'tensor': {}}),
        'its "features" do not describe TFDS features', False),
    'legacy_features_list': (
        'features.json', _write('features.json', b'[]'),
        'does not describe TFDS features (no "pythonClassName")', True),
    'legacy_features_unknown_class': (
        'features.json',
        _write('features.json', b'{"pythonClassName": "x.Y", "tensor": {}}'),
        'does not describe TFDS features', True),
}


@pytest.mark.parametrize('name', sorted(METADATA_CASES))
def test_metadata_problems_name_the_file(name, dataset):
  file, damage, message, legacy = METADATA_CASES[name]
  if legacy:
    _make_legacy(dataset)
  damage(dataset)
  with pytest.raises(dataset_files.CorruptDatasetError) as error:
    rlds_lite.load(dataset)
  assert str(error.value).startswith(f'{os.path.join(dataset, file)}: ')
  assert message in str(error.value)


# What features.json holds -> (features_mismatch's message when TFDS reads
# dataset_info.json's features instead, whether TFDS cannot open the dataset
# from it when dataset_info.json holds no features).
UNREAD_FEATURES_JSON = {
    'missing': (None, 'is missing; TFDS decodes with the features in '
                'dataset_info.json', True),
    'a_list': (b'[]', 'does not describe TFDS features (no "pythonClassName"); '
               'it should hold a copy of the features in dataset_info.json',
               True),
    'unknown_class': (b'{"pythonClassName": "x.Y", "tensor": {}}',
                      'does not describe TFDS features: ', True),
    'other_features': (b'{"pythonClassName": "tensorflow_datasets.core.'
                       b'features.tensor_feature.Tensor", "tensor": {"shape": '
                       b'{}, "dtype": "int32", "encoding": "none"}}',
                       'disagrees with the features in dataset_info.json, '
                       'which TFDS decodes with: int32 of shape () here, '
                       'absent there.', False),
    'other_encoding': (
        lambda f: f['featuresDict']['features']['steps']['sequence'][
            'feature']['featuresDict']['features']['reward']['tensor'].update(
                encoding='zlib'),
        'disagrees with the features in dataset_info.json (which TFDS decodes '
        'with) in an encoding or other detail.', False),
}


@pytest.mark.parametrize('name', sorted(UNREAD_FEATURES_JSON))
def test_features_json_is_checked_where_tfds_reads_it(name, dataset):
  """Features in dataset_info.json: features.json is no reader's business.

  Opening does not look at it (TFDS does not read it), `features_mismatch`
  reports it; in a legacy dataset TFDS reads it, and the error names it.
  """
  content, message, open_error = UNREAD_FEATURES_JSON[name]
  path = os.path.join(dataset, 'features.json')
  if content is None:
    os.remove(path)
  elif callable(content):  # An edit of the intact features.
    features = json.load(open(path))
    content(features)
    json.dump(features, open(path, 'w'))
  else:
    open(path, 'wb').write(content)
  assert dataset_files.metadata_problem(dataset) is None
  assert dataset_files.features_file(dataset) == os.path.join(
      dataset, 'dataset_info.json')
  assert len(list(rlds_lite.load(dataset))) == 5
  problem = dataset_files.features_mismatch(dataset)
  assert (problem.path, problem.kind, problem.episode) == (
      path, 'features_mismatch', None)
  assert message in problem.detail
  _make_legacy(dataset)
  assert dataset_files.features_file(dataset) == path
  assert dataset_files.features_mismatch(dataset) is None
  problem = dataset_files.metadata_problem(dataset)
  assert (problem.path if open_error else problem) == (
      path if open_error else None)


def test_check_open_is_cheap_per_shard(tmp_path):
  """One directory listing: no shard is opened when the sizes add up."""
  path = rlds_tfds.write_dataset(synthetic.episodes(8, seed=0),
                                 str(tmp_path), 'toy')
  builder = dataset_files.open_builder(path)
  opened = []
  real_open = dataset_files._open_binary  # pylint: disable=protected-access
  try:
    dataset_files._open_binary = lambda p: opened.append(p) or real_open(p)  # pylint: disable=protected-access
    dataset_files.check_open(builder, 'train')
  finally:
    dataset_files._open_binary = real_open  # pylint: disable=protected-access
  assert opened == []


def test_short_tf_messages():
  error = tf.errors.DataLossError(
      None, None, '{{function_node __wrapped__IteratorGetNext_output_types_7_'
      'device_/job:localhost/replica:0/task:0/device:CPU:0}} corrupted record '
      'at 417 [Op:IteratorGetNext] name: ')
  assert dataset_files._short(error) == 'corrupted record at 417'  # pylint: disable=protected-access


def test_named_read_errors_names_a_frame_that_does_not_decode(tmp_path):
  # TFDS's error ("Unknown image file format") names no field or step.
  _, bad = rlds_testing.camera_datasets_good_and_undecodable(
      tmp_path, only_at=(2, 3))
  builder = rlds_lite.open(bad).builder
  with pytest.raises(dataset_files.CorruptDatasetError) as error:
    with rlds_lite.diagnosis.named_read_errors(builder, 'train'):
      for _ in rlds_lite.load(bad, dense=True):
        pass
  assert (error.value.episode, error.value.step, error.value.field,
          error.value.kind) == (2, 3, 'observation/camera', 'undecodable')
  # The file is the shard holding the frame (it was dataset_info.json, "does
  # not fit the features declared here").
  assert error.value.path == f'{bad}/cams-train.tfrecord-00000'
  assert str(error.value) == (
      f"{bad}/cams-train.tfrecord-00000: episode 2 of split 'train', field "
      "'observation/camera': step 3 does not decode as the image its feature "
      'declares in dataset_info.json (Unknown image file format. One of JPEG, '
      "JPEG XL, PNG, GIF, BMP, WebP required); its bytes begin b'not a pn'.")
