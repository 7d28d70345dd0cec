"""build_from_envlogger: exact RLDS alignment, formats, Beam, and bad input."""

import json
import os
import warnings

import dm_env
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import rlds_testing
import tfds_build_testing as et
import rlds_lite
from rlds_lite import envlogger as envlogger_compat
from rlds_lite.tfds import build_from_envlogger
from rlds_lite.tfds import Beam
from rlds_lite.tfds import DatasetCard
from rlds_lite.tfds import envlogger_build
from rlds_lite.tfds import envlogger_decode
from rlds_lite.tfds import envlogger_episodes
from rlds_lite.tfds import episode_writer
from rlds_lite.tfds import FileOptions
from rlds_lite import option_objects

E = et.Episode

# name -> (episode scripts, observation kind, discrete actions)
ALIGNMENT_CASES = {
    'reset_only': ([E(0, et.RESET_ONLY)], 'vector', True),
    'one_action_terminal': ([E(1, et.TERMINAL)], 'vector', True),
    'two_step_terminal': ([E(2, et.TERMINAL)], 'vector', True),
    'terminal': ([E(5, et.TERMINAL)], 'vector', True),
    'truncated_time_limit': ([E(4, et.TRUNCATED)], 'vector', False),
    'cut_by_reset': ([E(3, et.RESET_CUT)], 'vector', True),
    'mixed_endings': ([E(3, et.TERMINAL), E(0, et.RESET_ONLY), E(2, et.RESET_CUT),
                       E(2, et.TRUNCATED)], 'vector', True),
    'nested_dict_observation': ([E(3, et.TERMINAL), E(1, et.RESET_CUT)], 'dict',
                                False),
    'image_observation': ([E(2, et.TERMINAL), E(0, et.RESET_ONLY)], 'image', True),
    'float64_observation': ([E(3, et.TRUNCATED)], 'float64', True),
    'squeezed_observation': ([E(2, et.TERMINAL)], 'squeezed', True),
}


def _dense_episodes(path):
  return list(rlds_lite.load(path, dense=True).as_numpy_iterator())


def _expected(raw_episodes, discrete):
  dtype = np.int64 if discrete else np.float32
  shape = () if discrete else (2,)
  return [et.stack_steps(et.reference_rlds_steps(raw, dtype, shape))
          for raw in raw_episodes]


@pytest.mark.parametrize('scripts,kind,discrete', ALIGNMENT_CASES.values(),
                         ids=ALIGNMENT_CASES.keys())
def test_alignment_matches_numpy_reference(tmp_path, scripts, kind, discrete):
  raw = et.record_script(str(tmp_path / 'logs'), scripts, kind, discrete)
  path = build_from_envlogger(tmp_path / 'logs', name='aligned',
                              data_dir=tmp_path / 'tfds')
  episodes = _dense_episodes(path)
  expected = _expected(raw, discrete)
  assert len(episodes) == len(expected)
  for i, (episode, want) in enumerate(zip(episodes, expected)):
    assert episode['episode_id'] == i
    if kind == 'squeezed':  # A (1,) spec is a scalar feature: data squeezed.
      want['observation'] = want['observation'][:, 0]
    rlds_testing.assert_structures_equal(episode['steps'], want,
                                         string_dtypes=True)


@pytest.mark.parametrize('scripts,kind,discrete', ALIGNMENT_CASES.values(),
                         ids=ALIGNMENT_CASES.keys())
def test_fast_decoder_equals_envlogger_reader(tmp_path, scripts, kind,
                                              discrete):
  logs = str(tmp_path / 'logs')
  et.record_script(logs, scripts, kind, discrete)
  specs = envlogger_episodes.recording_specs(logs)
  reference = list(envlogger_compat.read_episodes(logs))
  fast = [e for _, e in envlogger_decode.read_logged_episodes(logs, specs)]
  assert len(fast) == len(reference) == len(scripts)

  def check(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert (a.dtype, a.shape) == (b.dtype, b.shape)
    np.testing.assert_array_equal(a, b)

  for a, b in zip(fast, reference):
    tf.nest.map_structure(check, a, b)


def test_fast_decoder_falls_back_for_strings_and_python_ints(tmp_path):
  logs = str(tmp_path / 'logs')
  os.makedirs(logs)
  envlogger = envlogger_compat.import_envlogger()
  env = et.ScriptedEnv('vector')

  def step_fn(unused_timestep, unused_action, env_):
    return {'note': f'step {env_.t}', 'big': 2**70 + env_.t, 'small': env_.t}

  with envlogger.EnvLogger(env, data_directory=logs, step_fn=step_fn) as logged:
    env.start(E(2, et.TERMINAL))
    logged.reset()
    logged.step(1)  # A Python int action.
    logged.step(2)
  specs = envlogger_episodes.recording_specs(logs)
  fast = next(envlogger_decode.read_logged_episodes(logs, specs))[1]
  reference = next(envlogger_compat.read_episodes(logs))
  assert fast['step_metadata']['note'].tolist() == ['step 0', 'step 1',
                                                    'step 2']
  assert fast['step_metadata']['big'].tolist() == [2**70, 2**70 + 1, 2**70 + 2]
  assert fast['step_metadata']['small'].dtype == np.int64
  for key in ('note', 'big', 'small'):
    np.testing.assert_array_equal(fast['step_metadata'][key],
                                  reference['step_metadata'][key])
  np.testing.assert_array_equal(fast['action'], reference['action'])
  assert fast['action'].tolist() == [0, 1, 2]


def test_float64_values_round_trip_exactly(tmp_path):
  raw = et.record_script(str(tmp_path / 'logs'), [E(3, et.TRUNCATED)],
                         'float64')
  path = build_from_envlogger(tmp_path / 'logs', name='exact',
                              data_dir=tmp_path / 'tfds')
  steps = _dense_episodes(path)[0]['steps']
  for field in ('observation', 'reward', 'discount', 'score'):
    assert steps[field].dtype == np.float64, field
  # 1/3, 0.1 + k, 0.51...: none of these is a float32 value.
  np.testing.assert_array_equal(
      steps['observation'], np.stack([s.observation for s in raw[0]]))
  assert steps['reward'][0] == 1.0 and steps['reward'][1] == 2.0
  assert steps['discount'][0] == 0.51
  assert steps['score'][1] == 1 / 3
  nested = next(iter(tfds.builder_from_directory(path).as_dataset(
      split='train')))
  rewards = [s['reward'].numpy() for s in nested['steps']]
  assert rewards == [1.0, 2.0, 3.0, 0.0]
  assert list(nested['steps'])[0]['discount'].numpy() == 0.51


def test_nested_steps_equal_dense_steps(tmp_path):
  et.record_script(str(tmp_path / 'logs'), [E(3, et.TERMINAL), E(1, et.RESET_CUT)],
                   'dict', discrete=False)
  path = build_from_envlogger(tmp_path / 'logs', name='nested',
                              data_dir=tmp_path / 'tfds')
  dense = _dense_episodes(path)
  nested = tfds.as_numpy(tfds.builder_from_directory(path).as_dataset(
      split='train'))
  for d, n in zip(dense, nested):
    steps = list(n['steps'])
    assert len(steps) == len(d['steps']['is_first'])
    for t, step in enumerate(steps):
      for key in ('action', 'reward', 'is_terminal'):
        np.testing.assert_array_equal(step[key], d['steps'][key][t])
      np.testing.assert_array_equal(step['observation']['camera_image'],
                                    d['steps']['observation']['camera_image'][t])


def test_features_inferred_from_specs(tmp_path):
  et.record_script(str(tmp_path / 'logs'), [E(2, et.TERMINAL)], 'dict', False)
  path = build_from_envlogger(tmp_path / 'logs', name='inferred',
                              data_dir=tmp_path / 'tfds')
  # dataset_info.json alone describes the dataset (features.json: a copy).
  with open(os.path.join(path, 'dataset_info.json')) as f:
    in_info = json.load(f)['features']
  with open(os.path.join(path, 'features.json')) as f:
    assert in_info == json.load(f)
  step = tfds.builder_from_directory(path).info.features['steps'].feature
  assert isinstance(step['observation']['camera_image'], tfds.features.Image)
  assert step['observation']['camera_image'].shape == (6, 5, 3)
  assert step['observation']['pos'].shape == (2,)
  assert step['observation']['count'].dtype == tf.int32
  assert step['action'].shape == (2,) and step['action'].dtype == tf.float32
  assert step['reward'].dtype == tf.float64
  assert step['step_index'].dtype == tf.int32


def test_several_recordings_in_order_with_unique_keys(tmp_path):
  raw_a = et.record_script(str(tmp_path / 'a'), [E(2, et.TERMINAL)])
  raw_b = et.record_script(str(tmp_path / 'b'), [E(1, et.TERMINAL),
                                                 E(3, et.TRUNCATED)],
                           first_episode=1)
  path = build_from_envlogger([tmp_path / 'a', tmp_path / 'b'], name='many',
                              data_dir=tmp_path / 'tfds', split='test')
  episodes = list(rlds_lite.load(path, split='test', dense=True)
                  .as_numpy_iterator())
  assert [int(e['episode_id']) for e in episodes] == [0, 1, 2]
  for episode, want in zip(episodes, _expected(raw_a + raw_b, True)):
    rlds_testing.assert_structures_equal(episode['steps'], want,
                                         string_dtypes=True)


def test_directory_of_recordings_is_searched(tmp_path):
  et.record_script(str(tmp_path / 'runs' / 'x'), [E(1, et.TERMINAL)])
  et.record_script(str(tmp_path / 'runs' / 'y'), [E(2, et.TERMINAL)])
  assert envlogger_episodes.find_recordings(tmp_path / 'runs') == [
      str(tmp_path / 'runs' / 'x'), str(tmp_path / 'runs' / 'y')]


def test_array_record_format(tmp_path):
  raw = et.record_script(str(tmp_path / 'logs'), [E(2, et.TERMINAL),
                                                  E(1, et.RESET_CUT)])
  path = build_from_envlogger(tmp_path / 'logs', name='random_access',
                              data_dir=tmp_path / 'tfds',
                              options=FileOptions(file_format='array_record'))
  source = tfds.data_source('random_access', data_dir=tmp_path / 'tfds',
                            split='train')
  assert len(source) == 2
  assert os.path.basename(path) == '1.0.0'
  second = source[1]
  want = _expected(raw, True)[1]
  assert [s['action'] for s in second['steps']] == want['action'].tolist()
  assert [s['is_terminal'] for s in second['steps']] == [False, False]


def test_tfds_load_by_name(tmp_path):
  et.record_script(str(tmp_path / 'logs'), [E(2, et.TERMINAL)])
  build_from_envlogger(tmp_path / 'logs', name='by_name',
                       data_dir=tmp_path / 'tfds', version='2.0.1')
  episodes = tfds.load('by_name', data_dir=str(tmp_path / 'tfds'),
                       split='train')
  assert [len(list(e['steps'])) for e in episodes] == [3]


def test_printed_path_is_where_the_dataset_is(tmp_path, capsys):
  # TFDS prints where it prepares the dataset (the hidden staging directory);
  # the user reads the dataset's own path.
  et.record_script(str(tmp_path / 'logs'), [E(2, et.TERMINAL)])
  path = build_from_envlogger(tmp_path / 'logs', name='printed',
                              data_dir=tmp_path / 'tfds')
  out = capsys.readouterr().out
  assert f'Dataset printed downloaded and prepared to {path}.' in out
  assert f'to {path}...' in out and '.incomplete' not in out


def test_beam_build_equals_plain_build(tmp_path):
  et.record_script(str(tmp_path / 'logs' / 'a'), [E(2, et.TERMINAL),
                                                  E(0, et.RESET_ONLY)], 'dict',
                   False)
  et.record_script(str(tmp_path / 'logs' / 'b'), [E(1, et.RESET_CUT)], 'dict',
                   False, first_episode=2)
  plain = build_from_envlogger(tmp_path / 'logs', name='plain',
                               data_dir=tmp_path / 'tfds')
  beam = build_from_envlogger(tmp_path / 'logs', name='beamed',
                              data_dir=tmp_path / 'tfds', beam=True)
  plain_info = tfds.builder_from_directory(plain).info
  beam_info = tfds.builder_from_directory(beam).info
  assert plain_info.features.to_json() == beam_info.features.to_json()
  assert beam_info.splits['train'].num_examples == 3
  plain_episodes, beam_episodes = _dense_episodes(plain), _dense_episodes(beam)
  assert [int(e['episode_id']) for e in beam_episodes] == [0, 1, 2]
  for a, b in zip(plain_episodes, beam_episodes):
    tf.nest.map_structure(np.testing.assert_array_equal, a, b)


# ----------------------------------------------------------------------------
# Bad input.


def _corrupt(path):
  with open(path, 'r+b') as f:
    f.seek(0)
    f.write(b'garbage!' * 8)


def _first_shard_dir(recording):
  return next(os.path.join(recording, d) for d in sorted(os.listdir(recording))
              if os.path.isdir(os.path.join(recording, d)))


def _missing_steps(tmp_path):
  et.record_script(str(tmp_path / 'logs'), [E(1, et.TERMINAL)])
  os.remove(os.path.join(_first_shard_dir(tmp_path / 'logs'), 'steps.riegeli'))
  return tmp_path / 'logs', FileNotFoundError, r'steps\.riegeli is missing'


def _corrupt_index(tmp_path):
  et.record_script(str(tmp_path / 'logs'), [E(1, et.TERMINAL)])
  _corrupt(os.path.join(_first_shard_dir(tmp_path / 'logs'),
                        'episode_index.riegeli'))
  return (tmp_path / 'logs', envlogger_compat.CorruptRecordingError,
          r'episode_index\.riegeli is corrupt')


def _corrupt_steps_content(tmp_path):
  et.record_script(str(tmp_path / 'logs'), [E(30, et.TERMINAL)] * 2, 'image')
  path = os.path.join(_first_shard_dir(tmp_path / 'logs'), 'steps.riegeli')
  with open(path, 'r+b') as f:  # Keeps the signature, damages the records.
    f.seek(os.path.getsize(path) // 2)
    f.write(b'\0' * 200)
  return (tmp_path / 'logs', envlogger_compat.CorruptRecordingError,
          r'Cannot read timestep \d+ of episode \d+ from .*logs/\d{8}T\d+/'
          r'steps\.riegeli .*truncated or corrupt')


def _missing_metadata(tmp_path):
  et.record_script(str(tmp_path / 'logs'), [E(1, et.TERMINAL)])
  os.remove(tmp_path / 'logs' / 'metadata.riegeli')
  return tmp_path / 'logs', FileNotFoundError, r'metadata\.riegeli is missing'


def _empty_directory(tmp_path):
  os.makedirs(tmp_path / 'logs')
  return tmp_path / 'logs', FileNotFoundError, r'logs is empty: no EnvLogger'


def _no_such_directory(tmp_path):
  return (tmp_path / 'nope', FileNotFoundError,
          r'EnvLogger directory .*nope does not exist')


def _mixed_specs(tmp_path):
  et.record_script(str(tmp_path / 'logs' / 'a'), [E(1, et.TERMINAL)], 'vector')
  et.record_script(str(tmp_path / 'logs' / 'b'), [E(1, et.TERMINAL)], 'float64')
  return (tmp_path / 'logs', ValueError,
          r"different specs for 'observation'.*logs/a.*shape \(3,\) dtype "
          r'float32.*logs/b has shape \(2,\) dtype float64')


def _mixed_action_structure(tmp_path):
  et.record_script(str(tmp_path / 'logs' / 'a'), [E(1, et.TERMINAL)],
                   discrete=True)
  et.record_script(str(tmp_path / 'logs' / 'b'), [E(1, et.TERMINAL)],
                   discrete=False)
  return (tmp_path / 'logs', ValueError,
          r"different specs for 'action'.*logs/b has shape \(2,\)")


def _step_metadata_keys_change(tmp_path):
  # EnvLogger stores whatever step_fn returns; episode 1 adds a key mid-way.
  logs = str(tmp_path / 'logs')
  os.makedirs(logs)
  envlogger = envlogger_compat.import_envlogger()
  env = et.ScriptedEnv('vector')
  keys = iter([('a',), ('a',), ('a',), ('a', 'b')])

  def step_fn(unused_timestep, unused_action, unused_env):
    return {k: np.float32(1) for k in next(keys)}

  with envlogger.EnvLogger(env, data_directory=logs, step_fn=step_fn) as logged:
    for _ in range(2):
      env.start(E(1, et.TERMINAL))
      logged.reset()
      logged.step(np.int64(1))
  return (tmp_path / 'logs', ValueError,
          r"Episode 1 of EnvLogger recording .*logs: step metadata keys differ "
          r"between timestep 0 \['a'\] and timestep 1 \['a', 'b'\]")


BAD_INPUT_CASES = {
    'missing_steps_file': _missing_steps,
    'corrupt_episode_index': _corrupt_index,
    'corrupt_steps_content': _corrupt_steps_content,
    'missing_metadata_file': _missing_metadata,
    'empty_directory': _empty_directory,
    'no_such_directory': _no_such_directory,
    'mixed_observation_specs': _mixed_specs,
    'mixed_action_specs': _mixed_action_structure,
    'step_metadata_keys_change': _step_metadata_keys_change,
}


@pytest.mark.parametrize('make_case', BAD_INPUT_CASES.values(),
                         ids=BAD_INPUT_CASES.keys())
def test_bad_input_is_one_clear_error_and_writes_nothing(tmp_path, make_case):
  logs, error, message = make_case(tmp_path)
  with pytest.raises(error, match=message):
    build_from_envlogger(logs, name='bad', data_dir=tmp_path / 'tfds')
  assert not os.path.exists(tmp_path / 'tfds' / 'bad' / '1.0.0')


def test_existing_dataset_is_an_error_and_is_untouched(tmp_path):
  et.record_script(str(tmp_path / 'logs'), [E(2, et.TERMINAL)])
  path = build_from_envlogger(tmp_path / 'logs', name='taken',
                              data_dir=tmp_path / 'tfds')
  before = {f: os.path.getmtime(os.path.join(path, f)) for f in os.listdir(path)}
  with pytest.raises(FileExistsError,
                     match=r"dataset 'taken' version 1.0.0 already exists"):
    build_from_envlogger(tmp_path / 'logs', name='taken',
                         data_dir=tmp_path / 'tfds')
  after = {f: os.path.getmtime(os.path.join(path, f)) for f in os.listdir(path)}
  assert before == after
  assert len(_dense_episodes(path)) == 1


def test_bad_episode_mid_way_names_it_and_leaves_no_dataset(tmp_path):
  # Episode 1 (of 3) holds a step metadata value of another shape.
  logs = str(tmp_path / 'logs')
  os.makedirs(logs)
  envlogger = envlogger_compat.import_envlogger()
  env = et.ScriptedEnv('vector')
  shapes = iter([(), (), (2,), (2,), (), (), ()])

  def step_fn(unused_timestep, unused_action, unused_env):
    return {'extra': np.zeros(next(shapes), np.float32)}

  with envlogger.EnvLogger(env, data_directory=logs, step_fn=step_fn) as logged:
    for _ in range(3):
      env.start(E(1, et.TERMINAL))
      logged.reset()
      logged.step(np.int64(1))
    logged.reset()
  with pytest.raises(ValueError, match=r'episode 1 of EnvLogger recording .*'
                     r'logs.*steps/extra: shape \(2,\) does not match'):
    build_from_envlogger(logs, name='half', data_dir=tmp_path / 'tfds')
  assert not os.path.exists(tmp_path / 'tfds' / 'half' / '1.0.0')
  leftovers = (os.listdir(tmp_path / 'tfds' / 'half')
               if os.path.exists(tmp_path / 'tfds' / 'half') else [])
  assert not [f for f in leftovers if not f.startswith('.')], leftovers


@pytest.mark.parametrize('kwargs,error,message', [
    (dict(name='Bad-Name'), ValueError, 'snake_case TFDS dataset name'),
    (dict(name='ok', split='tr ain'), ValueError, 'split must be a name'),
    (dict(name='ok', options=FileOptions(file_format='parquet')), ValueError,
     r"file_format must be one of \['tfrecord', 'array_record'\]"),
], ids=['bad_name', 'bad_split', 'bad_file_format'])
def test_bad_arguments(tmp_path, kwargs, error, message):
  et.record_script(str(tmp_path / 'logs'), [E(1, et.TERMINAL)])
  with pytest.raises(error, match=message):
    build_from_envlogger(tmp_path / 'logs', data_dir=tmp_path / 'tfds',
                         **kwargs)


@pytest.mark.parametrize('chunk_steps', [1, 3, 7, 4096],
                         ids=['per-episode', 'three', 'seven', 'default'])
def test_chunked_decoding_equals_episode_by_episode(tmp_path, monkeypatch,
                                                     chunk_steps):
  # Chunks of several episodes are decoded and aligned at once; the result
  # must not depend on where chunks start and end.
  logs = str(tmp_path / 'logs')
  scripts, kind, discrete = ALIGNMENT_CASES['mixed_endings']
  raw = et.record_script(logs, scripts * 3, kind, discrete)
  monkeypatch.setattr(envlogger_decode, '_CHUNK_STEPS', chunk_steps)
  specs = envlogger_episodes.recording_specs(logs)
  chunks = list(envlogger_decode.read_logged_chunks(logs, specs))
  assert sum(len(c.indices) for c in chunks) == 12
  if chunk_steps == 4096:
    assert len(chunks) == 1
  episodes = [e for _, e in envlogger_episodes.read_rlds_episodes(logs, specs)]
  expected = _expected(raw, discrete)
  assert len(episodes) == len(expected) == 12
  for i, (episode, want) in enumerate(zip(episodes, expected)):
    assert episode['episode_id'] == i
    rlds_testing.assert_structures_equal(episode['steps'], want,
                                         string_dtypes=True)


BATCH_CASES = {
    # episode record sizes (bytes of each timestep), max_steps, max_bytes ->
    # the episodes of each chunk.
    'steps_bound': ([[1] * 3] * 4, 6, 10**6, [[0, 1], [2, 3]]),
    'bytes_bound': ([[100] * 3] * 4, 100, 450, [[0, 1], [2, 3]]),
    'large_episode_closes_its_chunk': ([[10], [1000] * 2, [10]], 100, 500,
                                [[0, 1], [2]]),
    'nothing_reached': ([[1]] * 3, 100, 10**6, [[0, 1, 2]]),
    'every_episode': ([[5]] * 3, 1, 10**6, [[0], [1], [2]]),
}


@pytest.mark.parametrize('sizes, max_steps, max_bytes, expected',
                         BATCH_CASES.values(), ids=BATCH_CASES.keys())
def test_chunks_end_at_steps_or_bytes(sizes, max_steps, max_bytes, expected):
  records = [(i, [b'x' * n for n in episode], None, f'Episode {i}')
             for i, episode in enumerate(sizes)]
  batches = envlogger_decode._batches(iter(records), max_steps, max_bytes)  # pylint: disable=protected-access
  assert [[r[0] for r in batch] for batch in batches] == expected


def test_chunks_bounded_in_bytes_decode_the_same(tmp_path, monkeypatch):
  logs = str(tmp_path / 'logs')
  raw = et.record_script(logs, [E(3, et.TERMINAL)] * 4, 'image')
  specs = envlogger_episodes.recording_specs(logs)
  assert [c.indices for c in envlogger_decode.read_logged_chunks(
      logs, specs)] == [[0, 1, 2, 3]]
  monkeypatch.setattr(envlogger_decode, '_CHUNK_BYTES', 1)
  assert [c.indices for c in envlogger_decode.read_logged_chunks(
      logs, specs)] == [[0], [1], [2], [3]]
  episodes = [e for _, e in envlogger_episodes.read_rlds_episodes(logs, specs)]
  assert len(episodes) == 4
  for episode, want in zip(episodes, _expected(raw, True)):
    rlds_testing.assert_structures_equal(episode['steps'], want,
                                         string_dtypes=True)


def test_chunk_with_a_bad_episode_names_that_episode(tmp_path, monkeypatch):
  logs = str(tmp_path / 'logs')
  et.record_script(logs, [E(2, et.TERMINAL), E(3, et.TERMINAL)], 'vector',
                   True)
  specs = envlogger_episodes.recording_specs(logs)
  # A spec the recorded observations do not fit: the chunk fails as a whole,
  # then episode 0 (decoded alone) gives the precise error.
  bad = dict(specs, observation=dm_env.specs.Array((4,), np.float32))
  with pytest.raises(ValueError) as error:
    list(envlogger_episodes.read_rlds_episodes(logs, bad))
  assert str(error.value).startswith(f'Episode 0 of EnvLogger recording {logs}: '
                                     "'observation' has shape (3,)")


@pytest.mark.parametrize('case', ['reset_only', 'mixed_endings',
                                  'nested_dict_observation',
                                  'image_observation', 'float64_observation',
                                  'squeezed_observation',
                                  'truncated_time_limit'])
def test_batched_proto_decoding_equals_python_decoding(tmp_path, case):
  # The batched path (tf.io.decode_proto) must handle these recordings (no
  # silent fallback) and give exactly what per-timestep Python decoding gives.
  from rlds_lite.tfds import envlogger_protos  # pylint: disable=g-import-not-at-top
  scripts, kind, discrete = ALIGNMENT_CASES[case]
  logs = str(tmp_path / 'logs')
  et.record_script(logs, scripts, kind, discrete)
  specs = envlogger_episodes.recording_specs(logs)
  envlogger_compat.import_envlogger()
  from envlogger.backends.python import riegeli_dataset_reader  # pylint: disable=g-import-not-at-top
  reader = riegeli_dataset_reader.RiegeliDatasetReader()
  reader.init(logs)
  serialized = []
  for i in range(reader.num_episodes):
    info = reader.episode(i, True)
    serialized += [reader.serialized_step(info.start + j)
                   for j in range(info.num_steps)]
  reader.close()
  columns = envlogger_protos.decode_timesteps(serialized)
  fast = envlogger_decode._logged_from_columns(columns, specs, 'x')  # pylint: disable=protected-access
  slow = envlogger_decode._logged_episode(  # pylint: disable=protected-access
      envlogger_decode._parse(serialized, logs, 0), specs, None, 'x')  # pylint: disable=protected-access
  slow.pop('episode_metadata')
  assert fast['step_metadata'].keys() == slow['step_metadata'].keys() == {
      'score', 'step_index'}

  def check(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert (a.dtype, a.shape) == (b.dtype, b.shape)
    np.testing.assert_array_equal(a, b)

  tf.nest.map_structure(check, fast, slow)


def test_batched_proto_decoding_hands_python_ints_beyond_int64_back(tmp_path):
  from rlds_lite.tfds import envlogger_protos  # pylint: disable=g-import-not-at-top
  envlogger_compat.import_envlogger()
  from envlogger.converters import codec  # pylint: disable=g-import-not-at-top
  step = codec.encode((( 1, 0.0, 1.0, np.zeros(2, np.float32)), 1,
                       {'big': 2**70}))
  with pytest.raises(envlogger_protos.Unsupported):
    envlogger_protos.decode_timesteps([step.SerializeToString()] * 2)
  small = codec.encode(((1, 0.0, 1.0, np.zeros(2, np.float32)), 1,
                        {'small': -5}))
  columns = envlogger_protos.decode_timesteps([small.SerializeToString()] * 2)
  assert columns['custom']['small'].tolist() == [-5, -5]
  assert columns['action'].tolist() == [1, 1]
  assert columns['step_type'].tolist() == [1, 1]


@pytest.mark.parametrize('max_step_bytes,tf_tier', [(0, False), (1 << 30, True)],
                         ids=['large_timesteps_python_tier',
                              'small_timesteps_tf_tier'])
def test_timestep_size_picks_the_decoding_tier(tmp_path, monkeypatch,
                                               max_step_bytes, tf_tier):
  # Chunks of timesteps larger than TF_DECODE_MAX_STEP_BYTES on average skip
  # tf.io.decode_proto (it copies payloads once per tree level) for Python's
  # protobuf parsing; the episodes are the same either way.
  from rlds_lite.tfds import envlogger_protos  # pylint: disable=g-import-not-at-top
  scripts, kind, discrete = ALIGNMENT_CASES['image_observation']
  logs = str(tmp_path / 'logs')
  raw = et.record_script(logs, scripts, kind, discrete)
  calls = []
  decode = envlogger_protos.decode_timesteps
  monkeypatch.setattr(envlogger_protos, 'decode_timesteps',
                      lambda s: calls.append(len(s)) or decode(s))
  monkeypatch.setattr(envlogger_decode, 'TF_DECODE_MAX_STEP_BYTES',
                      max_step_bytes)
  specs = envlogger_episodes.recording_specs(logs)
  episodes = [e for _, e in envlogger_episodes.read_rlds_episodes(logs, specs)]
  assert bool(calls) == tf_tier
  expected = _expected(raw, discrete)
  assert len(episodes) == len(expected) == len(scripts)
  for episode, want in zip(episodes, expected):
    rlds_testing.assert_structures_equal(episode['steps'], want,
                                         string_dtypes=True)


# Byte-buffer columns (tier 2): rows under _ROW_COPY_MIN_BYTES are joined,
# larger ones copied row by row into one array; both as EnvLogger stores
# them (big-endian buffers) and decoded back exactly.
BUFFER_COLUMN_CASES = {
    'small_uint8_rows_joined': ((6,), np.uint8),
    'small_float32_rows_joined': ((2,), np.float32),
    'image_rows_copied': ((32, 32, 3), np.uint8),
    'large_float32_rows_copied': ((600,), np.float32),
    'large_uint16_rows_copied': ((700,), np.uint16),
}


def _encoded_rows(shape, dtype):
  values = (np.arange(3 * int(np.prod(shape))).reshape((3,) + shape) % 250
            ).astype(dtype)
  codec = envlogger_decode._codec()  # pylint: disable=protected-access
  return values, [codec.encode(row) for row in values]


@pytest.mark.parametrize('shape,dtype', BUFFER_COLUMN_CASES.values(),
                         ids=BUFFER_COLUMN_CASES.keys())
def test_buffer_columns_decode_exactly(shape, dtype):
  values, datas = _encoded_rows(shape, dtype)
  decoded = envlogger_decode._column(datas, 'observation', 'Episode 0')  # pylint: disable=protected-access
  assert decoded.dtype == dtype and decoded.shape == (3,) + shape
  np.testing.assert_array_equal(decoded, values)


@pytest.mark.parametrize('shape,dtype', BUFFER_COLUMN_CASES.values(),
                         ids=BUFFER_COLUMN_CASES.keys())
def test_buffer_rows_of_wrong_length_are_an_error(shape, dtype):
  # Row 0 one value short and row 1 one value long: the total is right, so
  # only a per-row check sees it (before, the rows were silently shifted).
  _, datas = _encoded_rows(shape, dtype)
  values = [d.datum.values for d in datas]
  name = values[0].ListFields()[0][0].name
  first, second = getattr(values[0], name), getattr(values[1], name)
  size = np.dtype(dtype).itemsize
  setattr(values[0], name, first[:-size])
  setattr(values[1], name, second + first[-size:])
  with pytest.raises(envlogger_compat.CorruptRecordingError,
                     match=r'^Episode 0: cannot decode observation value 0 '
                     r'of 3 \(its values do not match its shape\?\)'):
    envlogger_decode._column(datas, 'observation', 'Episode 0')  # pylint: disable=protected-access


def test_options_card_and_old_keywords(tmp_path, monkeypatch):
  monkeypatch.setattr(option_objects, '_WARNED', set())
  et.record_script(str(tmp_path / 'logs'), [E(1, et.TERMINAL)] * 3)
  path = build_from_envlogger(
      tmp_path / 'logs', name='carded', data_dir=tmp_path / 'tfds',
      options=FileOptions(max_episodes_per_file=2),
      card=DatasetCard(description='three', citation='@misc{c}'))
  info = tfds.builder_from_directory(path).info
  assert (info.description, info.citation) == ('three', '@misc{c}')
  assert info.splits['train'].shard_lengths == [2, 1]
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    path = build_from_envlogger(tmp_path / 'logs', name='old',
                                data_dir=tmp_path / 'tfds',
                                description='old style')
  assert [str(w.message) for w in caught
          if issubclass(w.category, DeprecationWarning)] == [
              'build_from_envlogger: description= is now card=DatasetCard('
              'description=...); the old keyword will go in a later release.']
  assert tfds.builder_from_directory(path).info.description == 'old style'


@pytest.mark.parametrize('kwargs,message', [
    (dict(options=FileOptions(max_bytes_per_file=1 << 20)),
     r'FileOptions\.max_bytes_per_file is not supported'),
    (dict(card=DatasetCard(metadata={'a': 1})),
     r'DatasetCard\.metadata is not written by a TFDS build'),
], ids=['max_bytes', 'metadata'])
def test_what_a_build_cannot_write_is_refused(tmp_path, kwargs, message):
  et.record_script(str(tmp_path / 'logs'), [E(1, et.TERMINAL)])
  with pytest.raises(ValueError, match=message):
    build_from_envlogger(tmp_path / 'logs', name='ok',
                         data_dir=tmp_path / 'tfds', **kwargs)
  assert not os.path.exists(tmp_path / 'tfds' / 'ok')


def test_beam_runner_keyword_still_works_and_warns(monkeypatch):
  monkeypatch.setattr(option_objects, '_WARNED', set())
  with pytest.warns(DeprecationWarning, match=r'build_from_envlogger: '
                    r'beam_runner= is now beam=Beam\(runner=\.\.\.\)'):
    beam = envlogger_build._beam_of(True, {'beam_runner': 'MyRunner'})
  assert beam == Beam(runner='MyRunner')
  assert envlogger_build._beam_of(False, {}) is None
  assert envlogger_build._beam_of(True, {}) == Beam()
