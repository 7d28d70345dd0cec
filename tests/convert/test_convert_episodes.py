"""The converters' common form: Episode checks, slices, datasets, TFDS."""

import os

from hypothesis import given
from hypothesis import settings
import numpy as np
import pytest
import tensorflow as tf

import convert_testing
import rlds_lite
from rlds_lite import convert


def _flags(is_first, is_last, is_terminal):
  return {'is_first': np.array(is_first, bool), 'is_last': np.array(is_last, bool),
          'is_terminal': np.array(is_terminal, bool)}


@pytest.mark.parametrize('steps, field, message', [
    ({'reward': np.zeros(2), **_flags([1, 0], [0, 0], [0, 0])}, 'is_last',
     'must be True on the last step (step 1) only'),
    ({'reward': np.zeros(2), **_flags([1, 1], [0, 1], [0, 0])}, 'is_first',
     'must be True on step 0 only'),
    ({'reward': np.zeros(3), **_flags([1, 0, 0], [0, 0, 1], [0, 1, 0])},
     'is_terminal', 'may only be True on the last step'),
    ({'reward': np.zeros(3), 'action': np.zeros((2, 1)),
      **_flags([1, 0, 0], [0, 0, 1], [0, 0, 0])}, 'action',
     'has 2 steps, other fields have 3'),
    ({'reward': np.zeros(0), **_flags([], [], [])}, 'steps', 'has no steps'),
    ({'reward': np.float32(1), 'is_first': [True], 'is_last': [True]}, 'reward',
     'is a scalar, not a [T, ...] array'),
    ({'reward': np.zeros(1), 'is_first': [True]}, 'is_last', 'is missing'),
    ({'reward': np.zeros(3), **_flags([1, 0, 0], [0, 0, 1], [0, 0, 0]),
      'is_terminal': np.array([0, np.nan, 0])}, 'is_terminal',
     'holds nan at index 1; a flag stored as numbers must be 0 or 1'),
    ({'reward': np.zeros(2), 'is_first': np.array([1.0, 0.5]),
      'is_last': [False, True]}, 'is_first',
     'holds 0.5 at index 1; a flag stored as numbers must be 0 or 1'),
    ({'reward': np.zeros(1), 'is_first': ['yes'], 'is_last': [True]},
     'is_first', 'has dtype <U3; a flag must be bool or numbers 0 and 1'),
], ids=['is-last-missing', 'two-firsts', 'terminal-not-last',
        'lengths-disagree', 'empty', 'scalar-field', 'no-is-last',
        'nan-flag', 'half-flag', 'text-flag'])
def test_check_episode_names_source_episode_and_field(steps, field, message):
  with pytest.raises(convert.ConversionError) as error:
    convert.check_episode({'steps': steps}, source='d.h5', index=3)
  assert str(error.value) == f"d.h5: episode 3, field '{field}': {message}"
  assert (error.value.source, error.value.episode, error.value.field) == (
      'd.h5', 3, field)


def test_check_episode_defaults_is_terminal_to_truncated():
  episode = convert.check_episode(
      {'steps': {'reward': np.zeros(2), 'is_first': [1, 0], 'is_last': [0, 1]}})
  assert episode['steps']['is_terminal'].tolist() == [False, False]
  assert episode['steps']['is_first'].dtype == bool


def _reshaped(episode, **steps):
  return {**episode, 'steps': {**episode['steps'], **steps}}


@pytest.mark.parametrize('change, field, message', [
    (lambda s: {'observation': s['observation'][:, :2]}, 'observation',
     'has steps of shape (2,); episode 0 has (3,)'),
    (lambda s: {'reward': s['reward'].astype(np.float64)}, 'reward',
     'has dtype float64; episode 0 has float32'),
    (lambda s: {'observation': {'pos': s['observation']}}, 'observation',
     'is in some episodes only'),
    (lambda s: {'infos': np.zeros(len(s['reward']))}, 'infos',
     'is in some episodes only'),
], ids=['shape', 'dtype', 'structure', 'extra-field'])
def test_checked_episodes_names_the_episode_unlike_the_first(change, field,
                                                             message,
                                                             tmp_path):
  from rlds_lite.convert import alf, d4rl, il_representations, minari, ted  # pylint: disable=g-import-not-at-top
  first, second = convert_testing.NAMED_EPISODES['mixed-ends'][2:]
  episodes = [first, _reshaped(second, **change(second['steps']))]
  writers = {
      'checked_episodes': lambda e: list(convert.checked_episodes(e)),
      'to_minari': lambda e: minari.to_minari(e, tmp_path / 'm', 'x-v0'),
      'to_d4rl': d4rl.to_d4rl,
      'to_il_dict': il_representations.to_il_dict,
      'to_webdataset': lambda e: il_representations.to_webdataset(
          e, tmp_path / 'w'),
      'to_ted': ted.to_ted,
      'to_alf': alf.to_alf,
  }
  for name, write in writers.items():
    with pytest.raises(convert.ConversionError) as error:
      write(episodes)
    assert str(error.value) == (
        f"<episodes>: episode 1, field '{field}': {message}"), name
  # Strings compare by kind: lengths of fixed-width strings may differ.
  words = [_reshaped(first, note=np.array(['a'] * 7)),
           _reshaped(second, note=np.array(['bcd'] * 2))]
  assert len(list(convert.checked_episodes(words))) == 2


def _hdf5_readers():
  from rlds_lite.convert import d4rl, episodes as episodes_lib, ted  # pylint: disable=g-import-not-at-top
  return {'open_hdf5': episodes_lib.open_hdf5, 'from_d4rl': d4rl.from_d4rl,
          'from_ted': ted.from_ted}


@pytest.mark.parametrize('reader', ['open_hdf5', 'from_d4rl', 'from_ted'])
def test_hdf5_readers_name_a_file_that_is_not_hdf5(tmp_path, reader):
  read = _hdf5_readers()[reader]
  path = tmp_path / 'x.h5'
  path.write_bytes(b'not HDF5')
  with pytest.raises(convert.ConversionError) as error:
    read(path)
  assert str(error.value) == (
      f'{path}: is not a readable HDF5 file: Unable to synchronously open '
      'file (file signature not found)')
  assert (error.value.source, error.value.episode) == (str(path), None)
  with pytest.raises(FileNotFoundError):
    read(tmp_path / 'missing.h5')


@pytest.mark.parametrize('ends, expected', [
    ([], []),
    ([True], [(0, 1)]),
    ([False, True], [(0, 2)]),
    ([True, True, False, False, True], [(0, 1), (1, 2), (2, 5)]),
], ids=['empty', 'one-step', 'short', 'mixed'])
def test_episode_slices(ends, expected):
  assert [(s.start, s.stop) for s in convert.episode_slices(ends)] == expected


@pytest.mark.parametrize('ends, message', [
    ([False, False], "src: episode 0, field 'dones': is never set after row -1: "
     'rows 0..1 do not end an episode'),
    ([True, False], "src: episode 1, field 'dones': is never set after row 0: "
     'rows 1..1 do not end an episode'),
], ids=['never-set', 'unfinished-tail'])
def test_episode_slices_rejects_unfinished_episodes(ends, message):
  with pytest.raises(convert.ConversionError, match='^') as error:
    convert.episode_slices(ends, source='src', field='dones')
  assert str(error.value) == message


@pytest.mark.parametrize('case', sorted(set(convert_testing.NAMED_EPISODES) - {'empty'}))
@pytest.mark.parametrize('dense', [False, True], ids=['nested', 'dense'])
def test_dataset_round_trip_is_exact(case, dense):
  episodes = convert_testing.NAMED_EPISODES[case]
  ds = convert.to_dataset(episodes, dense=dense)
  assert rlds_lite.is_valid_rlds_dataset(ds)
  convert_testing.assert_episodes_equal(list(convert.numpy_episodes(ds)),
                                        episodes)


def test_to_dataset_of_no_episodes_is_an_error():
  with pytest.raises(ValueError, match='to_dataset: no episodes'):
    convert.to_dataset([])


def _unlike_episodes():
  first, second = convert_testing.NAMED_EPISODES['mixed-ends'][2:]
  return [first, _reshaped(second,
                           observation=second['steps']['observation'][:, :2])]


def test_to_dataset_checks_a_list_of_unlike_episodes_at_once():
  with pytest.raises(convert.ConversionError) as error:
    convert.to_dataset(_unlike_episodes(), dense=True)
  assert str(error.value) == ("<episodes>: episode 1, field 'observation': "
                              'has steps of shape (2,); episode 0 has (3,)')


def test_to_dataset_names_an_unlike_episode_of_an_iterator_when_read():
  ds = convert.to_dataset(iter(_unlike_episodes()), dense=True)
  with pytest.raises(tf.errors.OpError) as error:
    list(ds)
  assert ("<episodes>: episode 1, field 'observation': has steps of shape "
          '(2,); episode 0 has (3,)') in str(error.value)


def test_to_dataset_reiterates_a_list():
  ds = convert.to_dataset(convert_testing.NAMED_EPISODES['mixed-ends'])
  assert ds.reduce(0, lambda n, _: n + 1).numpy() == 4
  assert ds.reduce(0, lambda n, _: n + 1).numpy() == 4


@settings(max_examples=15, deadline=None)
@given(convert_testing.rlds_episodes())
def test_tfds_round_trip_is_exact(tmp_path_factory, episodes):
  path = convert.write_tfds(episodes, tmp_path_factory.mktemp('tfds'), 'toy')
  loaded = list(convert.numpy_episodes(rlds_lite.load(path, dense=True)))
  convert_testing.assert_episodes_equal(loaded, episodes)


def test_write_tfds_accepts_an_rlds_dataset(tmp_path):
  ds = rlds_lite.synthetic.episodes(num_episodes=3, seed=2)
  path = convert.write_tfds(ds, tmp_path, 'synthetic')
  expected = list(convert.numpy_episodes(ds))
  loaded = list(convert.numpy_episodes(rlds_lite.load(path, dense=True)))
  convert_testing.assert_episodes_equal(loaded, expected)
  assert tf.io.gfile.exists(path)


@pytest.mark.parametrize('chunk_steps', [1, 3, 1 << 16],
                         ids=['per-episode', 'three', 'default'])
def test_to_dataset_chunks_do_not_change_episodes(monkeypatch, chunk_steps):
  from rlds_lite.convert import episodes as episodes_lib  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(episodes_lib, '_CHUNK_STEPS', chunk_steps)
  episodes = convert_testing.NAMED_EPISODES['mixed-ends']
  ds = convert.to_dataset(iter(episodes), dense=True)
  convert_testing.assert_episodes_equal(list(convert.numpy_episodes(ds)),
                                        episodes)


def test_write_tfds_names_the_episode_unlike_the_first(tmp_path):
  with pytest.raises(ValueError) as error:
    convert.write_tfds(_unlike_episodes(), tmp_path, 'unlike')
  assert str(error.value) == (
      'episode 1: steps/observation: shape (2,) does not match the feature '
      'shape (3,).')
  # No dataset: only the dataset's lock file (never deleted).
  assert [p.name for p in (tmp_path / 'unlike').iterdir()] == ['.1.0.0.lock']


def test_write_tfds_keeps_string_step_fields(tmp_path):
  steps = {'language_instruction': np.array([b'pick', b'place'], object),
           **convert.rlds_flags(2, terminated=True)}
  path = convert.write_tfds([{'steps': steps}], tmp_path, 'strings')
  back = next(convert.numpy_episodes(rlds_lite.load(path, dense=True)))
  assert back['steps']['language_instruction'].tolist() == [b'pick',
                                                            b'place']


def test_write_tfds_stores_uint8_frames_as_png_images(tmp_path):
  frames = np.random.default_rng(0).integers(0, 256, (3, 8, 6, 3), np.uint8)
  steps = {'observation': {'images': {'front': frames}},
           **convert.rlds_flags(3, terminated=False)}
  path = convert.write_tfds([{'steps': steps}], tmp_path, 'frames')
  feature = tfds_builder_features(path)['steps']['observation']['images'][
      'front']
  assert type(feature).__name__ == 'Image'
  assert feature.encoding_format == 'png'
  back = next(convert.numpy_episodes(rlds_lite.load(path, dense=True)))
  np.testing.assert_array_equal(
      back['steps']['observation']['images']['front'], frames)


def tfds_builder_features(path):
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  return tfds.builder_from_directory(path).info.features


@pytest.mark.parametrize('reward, message', [
    (np.zeros((2, 2)), 'has per-step shape (2,) and dtype float64'),
    (np.array([b'a', b'b'], object), 'has per-step shape () and dtype object'),
    ({'r': np.zeros(2)}, 'is a dict'),
], ids=['a-vector', 'strings', 'a-dict'])
@pytest.mark.parametrize('kind', ['d4rl', 'minari'])
def test_formats_of_one_reward_per_step_refuse_others_at_write(
    tmp_path, kind, reward, message):
  episode = {'steps': {'observation': np.zeros((2, 1), np.float32),
                       'action': np.zeros(2, np.float32), 'reward': reward,
                       **convert.rlds_flags(2, True)}}
  out = str(tmp_path / ('x.h5' if kind == 'd4rl' else 'out'))
  options = {'dataset_id': 'demo/x-v0'} if kind == 'minari' else {}
  with pytest.raises(convert.ConversionError) as error:
    rlds_lite.convert.files.write_episodes(kind, [episode], out, **options)
  assert str(error.value) == (f"<episodes>: episode 0, field 'reward': "
                              f'{message}; this format stores one number per '
                              'step')
  # Nothing published (Minari's root may be made; the dataset is not).
  assert not os.path.exists(out if kind == 'd4rl' else f'{out}/demo/x-v0')
