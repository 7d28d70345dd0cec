"""Tests of rlds_lite.envlogger.record (with read_episodes to check the files)."""

import os
import re
import warnings

import dm_env
import numpy as np
import pytest

import envlogger_testing
from envlogger_testing import NestedEnv
from rlds_lite import envlogger as rlds_envlogger
from rlds_lite import envs
from rlds_lite.envlogger import read_episodes
from rlds_lite.envlogger import record
from rlds_lite.envlogger import RecordingOptions
from rlds_lite.envlogger import recording
from rlds_lite.envlogger import riegeli_files
from rlds_lite.envlogger import staging
from rlds_lite.tfds import envlogger_decode
from rlds_lite import option_objects


def expert(env):
  return env.expert_policy


def random(env):
  return envs.random_policy(env.action_spec())


def nested_policy(env):
  del env
  policy = envs.random_policy(NestedEnv().action_spec())
  return policy


RECORD_CASES = {
    'catch_expert': dict(make=lambda: envs.make('catch'), policy=expert, n=3),
    'catch_random': dict(make=lambda: envs.make('catch'), policy=random, n=3),
    'catch_pixels_expert': dict(make=lambda: envs.make('catch_pixels'),
                                policy=expert, n=2),
    'catch_pixels_64_random': dict(
        make=lambda: envs.make('catch_pixels', height=64, width=64),
        policy=random, n=2),
    'reach_expert_terminal_ending': dict(make=lambda: envs.make('reach'),
                                         policy=expert, n=3),
    'reach_random_truncated_ending': dict(
        make=lambda: envs.make('reach', time_limit=15), policy=random, n=3),
    'one_step_catch_rows2': dict(make=lambda: envs.make('catch', rows=2),
                                 policy=expert, n=3),
    'one_step_nested_truncated': dict(
        make=lambda: NestedEnv(length=1, terminal=False), policy=nested_policy,
        n=2),
    'two_step_nested_terminal': dict(make=lambda: NestedEnv(length=2),
                                     policy=nested_policy, n=2),
    'nested_dict_tuple_observations': dict(make=lambda: NestedEnv(length=5),
                                           policy=nested_policy, n=3),
}


@pytest.mark.parametrize('case', RECORD_CASES.values(), ids=list(RECORD_CASES))
def test_record_then_read_equals_a_replay(case, tmp_path):
  env = case['make']()
  summary = record(env, case['policy'](env), tmp_path, case['n'], seed=5,
                   progress=False)
  episodes = list(read_episodes(tmp_path))
  replay_env = case['make']()
  expected = envlogger_testing.replay(replay_env, case['policy'](replay_env),
                                      case['n'], seed=5)
  envlogger_testing.assert_episodes_match(episodes, expected)
  # Termination vs truncation survive: discount of the LAST timestep.
  for episode, exp in zip(episodes, expected):
    assert episode['step_type'][-1] == dm_env.StepType.LAST
    assert episode['discount'][-1] == exp['discount'][-1]
  assert [e['episode_metadata'] for e in episodes] == [
      {'episode_id': i} for i in range(case['n'])]
  assert {type(e['episode_metadata']['episode_id']) for e in episodes} == {
      np.int64}
  assert summary == rlds_envlogger.RecordingSummary(
      data_dir=str(tmp_path), num_episodes=case['n'],
      num_steps=sum(len(e['step_type']) for e in expected),
      episode_ids=tuple(range(case['n'])),
      episode_lengths=tuple(len(e['step_type']) for e in expected),
      returns=tuple(float(sum(np.sum(r) for r in e['reward'][1:]))
                    for e in expected))


def test_expert_and_random_returns_differ_on_catch(tmp_path):
  env = envs.make('catch')
  expert_summary = record(env, env.expert_policy, tmp_path / 'e', 10, seed=0,
                          progress=False)
  random_summary = record(env, envs.random_policy(env.action_spec()),
                          tmp_path / 'r', 10, seed=0, progress=False)
  assert expert_summary.returns == (1.0,) * 10
  assert expert_summary.mean_return == 1.0
  assert random_summary.mean_return < 1.0


def test_same_seed_same_recording_other_seed_differs(tmp_path):
  def recorded(seed, name):
    env = envs.make('reach')
    record(env, envs.random_policy(env.action_spec()), tmp_path / name, 2,
           seed=seed, progress=False)
    return list(read_episodes(tmp_path / name))

  a, b, c = recorded(1, 'a'), recorded(1, 'b'), recorded(2, 'c')
  envlogger_testing.assert_episodes_match(a, b, ignore=())
  assert not np.array_equal(a[0]['observation'][0], c[0]['observation'][0])
  assert not np.array_equal(a[0]['action'][1], c[0]['action'][1])


def test_same_seed_gives_byte_identical_files(tmp_path):
  """Flushing is deterministic too (EnvLogger's default flushes at random)."""
  for name in 'ab':
    env = envs.make('catch_pixels')
    record(env, envs.random_policy(env.action_spec()), tmp_path / name, 3,
           seed=0, progress=False)
  assert _shard_files(tmp_path / 'a') == _shard_files(tmp_path / 'b')
  # metadata.riegeli holds protobuf maps, whose byte order may vary.


def _shard_files(recording):
  """``{name: bytes}`` of the files of a one-shard recording (not metadata)."""
  shard, = rlds_envlogger.validate_recording(recording)
  files = {}
  for name in rlds_envlogger.SHARD_FILES:
    with open(os.path.join(shard, name), 'rb') as f:
      files[name] = f.read()
  return files




def test_each_compression_reads_back_the_same_episodes(tmp_path):
  # Same seed, each compression: the same episodes come back (through the
  # EnvLogger reader and the fast decoder of the TFDS build), and the files
  # are compressed as asked (raw 64x64x3 frames are ~12 KB per timestep).
  recordings = {}
  for compression in sorted(rlds_envlogger.COMPRESSIONS):
    env = envs.make('catch_pixels', height=64, width=64)
    recordings[compression] = tmp_path / compression
    record(env, env.expert_policy, recordings[compression], 3, seed=0,
           progress=False,
           options=RecordingOptions(compression=compression))
  episodes = {c: list(read_episodes(path)) for c, path in recordings.items()}
  for compression, got in episodes.items():
    envlogger_testing.assert_episodes_match(got, episodes['none'], ignore=())
    fast = [e for _, e in envlogger_decode.read_logged_episodes(
        recordings[compression], {})]
    for episode, want in zip(fast, got, strict=True):
      np.testing.assert_array_equal(episode['observation'],
                                    want['observation'])
  sizes = {c: len(_shard_files(path)[rlds_envlogger.SHARD_FILES[0]])
           for c, path in recordings.items()}
  timesteps = sum(len(e['step_type']) for e in episodes['none'])
  assert sizes['none'] > timesteps * 64 * 64 * 3
  for compression in ('zstd', 'brotli', 'snappy'):
    assert sizes[compression] < sizes['none'] / 10, (compression, sizes)


def test_default_compression_is_zstd(tmp_path):
  for name, kwargs in (('default', {}), ('zstd', {'compression': 'zstd'})):
    env = envs.make('catch_pixels')
    record(env, env.expert_policy, tmp_path / name, 2, seed=0,
           progress=False, **kwargs)
  assert _shard_files(tmp_path / 'default') == _shard_files(tmp_path / 'zstd')


def test_seed_calls_env_seed_and_policy_seed_plus_one(tmp_path):
  calls = []

  class SeededPolicy:

    def seed(self, seed):
      calls.append(('policy', seed))

    def __call__(self, timestep):
      return np.int64(1)

  class SeededCatch(envs.Catch):

    def seed(self, seed):
      calls.append(('env', seed))
      super().seed(seed)

  record(SeededCatch(), SeededPolicy(), tmp_path, 1, seed=42, progress=False)
  assert calls == [('env', 42), ('policy', 43)]


def test_env_is_not_closed_and_callbacks_get_the_users_env(tmp_path):
  env = NestedEnv(length=2)
  seen = []

  def step_metadata_fn(timestep, action, env_arg):
    seen.append(env_arg)
    return {'t': np.int32(timestep.observation['id'])}

  record(env, nested_policy(env), tmp_path, 2, progress=False,
         step_metadata_fn=step_metadata_fn,
         episode_metadata_fn=lambda t, a, e: seen.append(e))
  assert env.closed == 0
  assert seen and all(e is env for e in seen)
  env.reset()  # Still usable.


def test_episode_metadata_callback_is_merged_over_the_episode(tmp_path):
  env = envs.make('catch', rows=4)

  def episode_metadata_fn(timestep, action, unused_env):
    if timestep.first():
      return {'start_column': np.int64(np.argmax(timestep.observation[0]))}
    if timestep.last():
      return {'caught': np.bool_(timestep.reward > 0), 'note': 'done'}
    return None  # Does not erase what was returned before.

  record(env, env.expert_policy, tmp_path, 3, seed=0, progress=False,
         episode_metadata_fn=episode_metadata_fn)
  episodes = list(read_episodes(tmp_path))
  for i, episode in enumerate(episodes):
    assert episode['episode_metadata'] == {
        'episode_id': i,
        'start_column': int(np.argmax(episode['observation'][0][0])),
        'caught': True, 'note': 'done'}


def test_episode_metadata_callback_can_override_episode_id(tmp_path):
  env = envs.make('catch', rows=3)
  record(env, env.expert_policy, tmp_path, 2, seed=0, progress=False,
         episode_metadata_fn=lambda t, a, e: {'episode_id': 'run7'})
  assert [e['episode_metadata'] for e in read_episodes(tmp_path)] == [
      {'episode_id': 'run7'}, {'episode_id': 'run7'}]


def test_step_metadata_is_stored_per_timestep(tmp_path):
  env = envs.make('reach', time_limit=6)

  def step_metadata_fn(timestep, action, unused_env):
    return {'x_plus_y': np.float32(timestep.observation[0] +
                                   timestep.observation[1]),
            'has_action': np.bool_(action is not None)}

  record(env, envs.random_policy(env.action_spec()), tmp_path, 2, seed=3,
         progress=False, step_metadata_fn=step_metadata_fn)
  episodes = list(read_episodes(tmp_path))
  replay_env = envs.make('reach', time_limit=6)
  expected = envlogger_testing.replay(
      replay_env, envs.random_policy(replay_env.action_spec()), 2, seed=3,
      step_metadata_fn=step_metadata_fn)
  envlogger_testing.assert_episodes_match(episodes, expected)
  assert episodes[0]['step_metadata']['has_action'].tolist()[:2] == [False,
                                                                    True]


def test_actions_are_converted_to_the_spec_dtype(tmp_path):
  catch_env = envs.make('catch', rows=3)
  record(catch_env, lambda t: 1, tmp_path / 'catch', 1, progress=False)
  (episode,) = read_episodes(tmp_path / 'catch')
  assert episode['action'].dtype == np.int64
  assert episode['action'].tolist() == [0, 1, 1]
  reach_env = envs.make('reach', time_limit=2)
  record(reach_env, lambda t: [0.5, -0.25], tmp_path / 'reach', 1,
         progress=False)
  (episode,) = read_episodes(tmp_path / 'reach')
  assert episode['action'].dtype == np.float32
  assert episode['action'].tolist() == [[0, 0], [0.5, -0.25], [0.5, -0.25]]


def test_dataset_metadata_is_stored(tmp_path):
  env = envs.make('catch', rows=2)
  record(env, env.expert_policy, tmp_path, 1, progress=False,
         metadata={'agent': 'expert', 'version': np.int64(3)})
  envlogger = rlds_envlogger.import_envlogger()
  with envlogger.Reader(str(tmp_path)) as reader:
    metadata = reader.metadata()
    assert reader.observation_spec() == env.observation_spec()
  assert metadata['agent'] == 'expert' and metadata['version'] == 3
  assert metadata[rlds_envlogger.RECORDER_KEY] == 'rlds_lite.envlogger.record'


def test_progress_bar(tmp_path, capsys):
  env = envs.make('catch', rows=2, columns=3)  # The expert always catches.
  record(env, env.expert_policy, tmp_path / 'on', 3, progress=True)
  err = capsys.readouterr().err
  assert 'Recording' in err and '3/3' in err and 'mean_return=1' in err
  record(env, env.expert_policy, tmp_path / 'off', 3, progress=False)
  assert 'Recording' not in capsys.readouterr().err


def test_progress_bar_is_not_redrawn_every_episode(tmp_path, capsys):
  # 300 short episodes take well under a second (flushed once: a flush per
  # episode costs fsyncs): tqdm redraws every 0.1 s, not once per episode,
  # and its last line shows the mean of all returns.
  env = envs.make('catch', rows=2, columns=3)
  record(env, env.expert_policy, tmp_path, 300, progress=True,
         options=RecordingOptions(flush_every_episodes=300))
  err = capsys.readouterr().err
  assert err.count('\r') < 60, err.count('\r')
  assert '300/300' in err and 'mean_return=1]' in err.splitlines()[-1]


def test_creates_missing_nested_data_dir(tmp_path):
  env = envs.make('catch', rows=2)
  target = tmp_path / 'a' / 'b' / 'c'
  summary = record(env, env.expert_policy, str(target), 1, progress=False)
  assert summary.data_dir == str(target)
  assert len(rlds_envlogger.validate_recording(target)) == 1


# ---------------------------------------------------------------------------
# Existing recordings: refuse, overwrite, append.


def test_refuses_an_existing_recording_and_keeps_it(tmp_path):
  env = envs.make('catch', rows=3)
  record(env, env.expert_policy, tmp_path, 2, seed=0, progress=False)
  before = list(read_episodes(tmp_path))
  with pytest.raises(FileExistsError,
                     match=r'already holds an EnvLogger recording\. Pass '
                     r"if_exists='overwrite' to replace it, "
                     r"if_exists='append'"):
    record(env, env.expert_policy, tmp_path, 1, progress=False)
  envlogger_testing.assert_episodes_match(list(read_episodes(tmp_path)), before,
                                          ignore=())


def test_overwrite_replaces_only_envlogger_files(tmp_path):
  env = envs.make('catch', rows=3)
  record(env, env.expert_policy, tmp_path, 3, progress=False)
  (tmp_path / 'notes.txt').write_text('keep me')
  summary = record(env, env.expert_policy, tmp_path, 1, seed=1,
                   progress=False, if_exists='overwrite')
  assert summary.episode_ids == (0,)
  assert len(list(read_episodes(tmp_path))) == 1
  assert len(rlds_envlogger.validate_recording(tmp_path)) == 1
  assert (tmp_path / 'notes.txt').read_text() == 'keep me'


def test_append_continues_episode_ids(tmp_path):
  env = envs.make('catch', rows=3)
  record(env, env.expert_policy, tmp_path, 2, seed=0, progress=False)
  summary = record(env, env.expert_policy, tmp_path, 3, seed=1,
                   progress=False, if_exists='append')
  assert summary.episode_ids == (2, 3, 4)
  episodes = list(read_episodes(tmp_path))
  assert [e['episode_metadata']['episode_id'] for e in episodes] == list(
      range(5))
  assert len(rlds_envlogger.validate_recording(tmp_path)) == 2


def test_append_refuses_other_specs_and_keeps_the_recording(tmp_path):
  env = envs.make('catch', rows=3)
  record(env, env.expert_policy, tmp_path, 2, progress=False)
  before = list(read_episodes(tmp_path))
  other = envs.make('catch', rows=4)
  with pytest.raises(ValueError,
                     match=r'Cannot append to .*: the recorded observation_spec '
                     r'.*differs from env\.observation_spec\(\)'):
    record(other, other.expert_policy, tmp_path, 1, progress=False,
           if_exists='append')
  envlogger_testing.assert_episodes_match(list(read_episodes(tmp_path)), before,
                                          ignore=())
  assert len(rlds_envlogger.validate_recording(tmp_path)) == 1


def test_append_to_a_plain_envlogger_recording(tmp_path):
  """A recording without episode ids: appending must not make it 'corrupt'."""
  envlogger = rlds_envlogger.import_envlogger()
  env = envs.make('catch', rows=3, seed=0)
  with envlogger.EnvLogger(env, data_directory=str(tmp_path)) as logged:
    timestep = logged.reset()
    while not timestep.last():
      timestep = logged.step(env.expert_policy(timestep))
  env = envs.make('catch', rows=3)
  summary = record(env, env.expert_policy, tmp_path, 1, progress=False,
                   if_exists='append')
  assert summary.episode_ids == (1,)
  assert [e['episode_metadata'] for e in read_episodes(tmp_path)] == [
      {}, {'episode_id': 1}]


@pytest.mark.parametrize('every,flushes', [(1, 6), (2, 3), (10, 1)])
def test_flushes_at_every_nth_reset(tmp_path, every, flushes):
  # Each flush (and the close) appends one step-offsets record.
  env = envs.make('catch', rows=2)
  record(env, env.expert_policy, tmp_path, 6, progress=False,
         options=RecordingOptions(flush_every_episodes=every))
  (folder,) = rlds_envlogger.validate_recording(tmp_path)
  offsets = riegeli_files.scan(os.path.join(folder, 'step_offsets.riegeli'))
  assert offsets.records == flushes + 1


def test_append_refuses_other_dataset_metadata(tmp_path):
  env = envs.make('catch', rows=2)
  record(env, env.expert_policy, tmp_path, 1, progress=False,
         metadata={'agent': 'expert'})
  # The stored metadata (or none) is fine: EnvLogger keeps what is stored.
  for metadata in ({'agent': 'expert'}, None):
    record(env, env.expert_policy, tmp_path, 1, progress=False,
           if_exists='append', metadata=metadata)
  with pytest.raises(ValueError,
                     match=r"Cannot append to .* with metadata 'agent'="
                     r"'random': the recording stores 'expert', and EnvLogger "
                     r"never rewrites its metadata\.riegeli"):
    record(env, env.expert_policy, tmp_path, 1, progress=False,
           if_exists='append', metadata={'agent': 'random'})
  assert len(list(read_episodes(tmp_path))) == 3


def test_a_failed_overwrite_keeps_the_old_recording(tmp_path):
  env = envs.make('catch', rows=3)
  record(env, env.expert_policy, tmp_path, 2, seed=0, progress=False)
  before = list(read_episodes(tmp_path))

  def failing(timestep):
    raise RuntimeError('policy crashed')

  with pytest.raises(RuntimeError, match='policy crashed'):
    record(env, failing, tmp_path, 3, progress=False, if_exists='overwrite')
  envlogger_testing.assert_episodes_match(list(read_episodes(tmp_path)),
                                          before, ignore=())
  assert sorted(os.listdir(tmp_path)) == sorted(
      ['.rlds_lite.lock', 'metadata.riegeli',
       os.path.basename(rlds_envlogger.validate_recording(tmp_path)[0])])


def test_a_recorder_in_the_same_process_is_refused(tmp_path):
  env = envs.make('catch', rows=2)
  with staging.recorder_lock(tmp_path):
    with pytest.raises(rlds_envlogger.RecordingLockedError,
                       match=rf'Another recorder \(pid {os.getpid()}\) is '
                       'recording into'):
      record(env, env.expert_policy, tmp_path, 1, progress=False)


def test_an_error_mid_recording_keeps_what_was_recorded(tmp_path):
  env = envs.make('catch', rows=4)
  calls = [0]

  def flaky_policy(timestep):
    calls[0] += 1
    if calls[0] == 5:  # The second action of the second episode.
      raise RuntimeError('policy crashed')
    return env.expert_policy(timestep)

  with pytest.raises(RuntimeError, match='policy crashed'):
    record(env, flaky_policy, tmp_path, 3, seed=0, progress=False)
  episodes = list(read_episodes(tmp_path))
  assert [e['step_type'].tolist() for e in episodes] == [[0, 1, 1, 2], [0, 1]]
  assert [e['episode_metadata']['episode_id'] for e in episodes] == [0, 1]


# ---------------------------------------------------------------------------
# Bad input.


class NoSeedEnv(dm_env.Environment):

  def reset(self):
    return dm_env.restart(np.float32(0))

  def step(self, action):
    return dm_env.termination(np.float64(0), np.float32(0))

  def observation_spec(self):
    return dm_env.specs.Array((), np.float32)

  def action_spec(self):
    return dm_env.specs.DiscreteArray(2, dtype=np.int64)


def CATCH():  # pylint: disable=invalid-name
  return envs.make('catch', rows=2)

RECORD_ERRORS = {
    'env_not_dm_env': (dict(env=lambda: 'catch'), TypeError,
                       r'`env` must be a dm_env\.Environment, got str'),
    'policy_not_callable': (dict(policy=lambda env: 1), TypeError,
                            r'`policy` must be callable as policy\(timestep\)'),
    'zero_episodes': (dict(num_episodes=0), ValueError,
                      r'`num_episodes` must be a positive int, got 0'),
    'negative_episodes': (dict(num_episodes=-2), ValueError,
                          r'`num_episodes` must be a positive int, got -2'),
    'float_episodes': (dict(num_episodes=1.5), ValueError,
                       r'`num_episodes` must be a positive int, got 1\.5'),
    'bool_episodes': (dict(num_episodes=True), ValueError,
                      r'`num_episodes` must be a positive int, got True'),
    'episode_fn_not_callable': (dict(episode_metadata_fn=3), TypeError,
                                r'`episode_metadata_fn` must be callable or '
                                r'None, got 3'),
    'step_fn_not_callable': (dict(step_metadata_fn='x'), TypeError,
                             r"`step_metadata_fn` must be callable or None, "
                             r"got 'x'"),
    'episode_fn_returns_list': (
        dict(episode_metadata_fn=lambda t, a, e: [1]), TypeError,
        r'`episode_metadata_fn` must return a dict of str keys \(or None\), '
        r'got list'),
    'step_fn_non_str_key': (dict(step_metadata_fn=lambda t, a, e: {1: 2}),
                            TypeError,
                            r'`step_metadata_fn` returned a non-str key 1'),
    'step_fn_unstorable_value': (
        dict(step_metadata_fn=lambda t, a, e: {'obj': object()}), TypeError,
        r"`step_metadata_fn` returned 'obj'=<object .*>, which EnvLogger "
        r'cannot store'),
    'step_fn_changing_keys': (
        dict(step_metadata_fn=lambda t, a, e: (
            {'a': np.int64(1)} if t.first() else {'b': np.int64(1)})),
        ValueError,
        r"`step_metadata_fn` returned keys \['b'\] for a LAST timestep of "
        r"episode 0 but \['a'\] before"),
    'metadata_not_dict': (dict(metadata=[1]), TypeError,
                          r'`metadata` must be a dict or None, got \[1\]'),
    'metadata_reserved_specs': (
        dict(metadata={'environment_specs': 1}), ValueError,
        r"`metadata` key 'environment_specs' is reserved"),
    'metadata_reserved_marker': (
        dict(metadata={'rlds_lite_recorder': 1}), ValueError,
        r"`metadata` key 'rlds_lite_recorder' is reserved"),
    'overwrite_and_append': (dict(overwrite=True, append=True), ValueError,
                             r'Pass at most one of `overwrite` and `append`'),
    'if_exists_unknown': (dict(if_exists='replace'), ValueError,
                          r"`if_exists` must be one of \['error', 'append', "
                          r"'overwrite'\], got 'replace'"),
    'seed_not_int': (dict(seed='0'), TypeError,
                     r"`seed` must be an int or None, got '0'"),
    'seed_negative': (dict(seed=-1), ValueError, r'`seed` must be >= 0, got -1'),
    'seed_env_without_seed_method': (
        dict(env=NoSeedEnv, seed=0), TypeError,
        r'`seed` was given but the environment NoSeedEnv has no seed\(int\) '
        r'method'),
    'action_float_for_int_spec': (
        dict(policy=lambda env: (lambda t: 1.0)), TypeError,
        r'The policy returned action of dtype float64 for the action spec '
        r'.*expected int64'),
    'action_wrong_shape': (
        dict(policy=lambda env: (lambda t: (np.int64(1), np.int64(2)))),
        ValueError,
        r'The policy returned action of shape \(2,\) for the action spec '
        r'.*expected shape \(\)'),
    'nested_action_too_short': (
        dict(env=NestedEnv, policy=lambda env: (lambda t: (np.int64(1),))),
        ValueError,
        r'The policy returned action=\(np\.int64\(1\),\); env\.action_spec\(\) '
        r'expects a sequence of 2 values'),
    'nested_action_leaf_dtype': (
        dict(env=NestedEnv,
             policy=lambda env: (lambda t: (np.int64(1), np.array(['a', 'b'])))),
        TypeError,
        r'The policy returned action\[1\] of dtype <U1 for the action spec'),
    'dict_action_for_tuple_spec': (
        dict(env=NestedEnv, policy=lambda env: (lambda t: {'a': 1})),
        ValueError, r"The policy returned action=\{'a': 1\}; env\.action_spec"),
    'action_rejected_by_env': (
        dict(policy=lambda env: (lambda t: np.int64(7))), ValueError,
        r'Catch `action` must be an integer 0 \(left\), 1 \(stay\) or 2'),
}


@pytest.mark.parametrize('overrides,error,match', RECORD_ERRORS.values(),
                         ids=list(RECORD_ERRORS))
def test_record_errors(overrides, error, match, tmp_path):
  overrides = dict(overrides)
  env = overrides.pop('env', CATCH)()
  policy = overrides.pop('policy', lambda env: (lambda t: np.int64(1)))(env)
  num_episodes = overrides.pop('num_episodes', 1)
  with pytest.raises(error, match=match):
    record(env, policy, tmp_path / 'rec', num_episodes, progress=False,
           **overrides)


OPTION_ERRORS = {
    'flush_every_zero': (dict(flush_every_episodes=0),
                         r'`flush_every_episodes` must be a positive int, '
                         r'got 0'),
    'flush_every_float': (dict(flush_every_episodes=2.0),
                          r'`flush_every_episodes` must be a positive int, '
                          r'got 2\.0'),
    'compression_unknown': (dict(compression='gzip'),
                            r"`compression` must be one of \['brotli', 'none', "
                            r"'snappy', 'zstd'\], got 'gzip'"),
    'compression_riegeli_options': (
        dict(compression='transpose,zstd:3'),
        r"`compression` must be one of .*got 'transpose,zstd:3'"),
}


@pytest.mark.parametrize('fields,match', OPTION_ERRORS.values(),
                         ids=list(OPTION_ERRORS))
def test_recording_options_errors(fields, match):
  with pytest.raises(ValueError, match=match):
    RecordingOptions(**fields)


OLD_KEYWORDS = {
    'overwrite': (dict(overwrite=True), "if_exists='overwrite'", (0,)),
    'append': (dict(append=True), "if_exists='append'", (1,)),
    'compression': (dict(compression='brotli'),
                    r'options=RecordingOptions\(compression=\.\.\.\)', (0,)),
    'flush_every_episodes': (
        dict(flush_every_episodes=2),
        r'options=RecordingOptions\(flush_every_episodes=\.\.\.\)', (0,)),
}


@pytest.mark.parametrize('old,new,ids', OLD_KEYWORDS.values(),
                         ids=list(OLD_KEYWORDS))
def test_old_keywords_still_work_and_warn_once(old, new, ids, tmp_path,
                                               monkeypatch):
  monkeypatch.setattr(option_objects, '_WARNED', set())
  env = envs.make('catch', rows=2)
  existing = 'overwrite' in old or 'append' in old
  if existing:
    record(env, env.expert_policy, tmp_path, 1, progress=False)
  for call in range(2):
    with warnings.catch_warnings(record=True) as caught:
      warnings.simplefilter('always')
      target = tmp_path if existing else tmp_path / str(call)
      summary = record(env, env.expert_policy, target, 1, progress=False,
                       **old)
    warned = [str(w.message) for w in caught
              if issubclass(w.category, DeprecationWarning)]
    if call == 0:
      assert summary.episode_ids == ids
      assert len(warned) == 1 and re.match(
          rf'record: {list(old)[0]}= is now {new}; the old keyword will go',
          warned[0]), warned
    else:
      assert not warned, warned  # Once.


def test_data_dir_that_is_a_file(tmp_path):
  path = tmp_path / 'file'
  path.write_text('x')
  env = CATCH()
  with pytest.raises(NotADirectoryError,
                     match=r'`data_dir` .*file is a file, not a directory'):
    record(env, env.expert_policy, path, 1, progress=False)


def test_validation_errors_write_nothing(tmp_path):
  env = CATCH()
  with pytest.raises(ValueError):
    record(env, env.expert_policy, tmp_path / 'rec', 0, progress=False)
  assert not os.path.exists(tmp_path / 'rec')
