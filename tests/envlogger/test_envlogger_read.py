"""Tests of rlds_lite.envlogger.read_episodes / validate_recording.

Covers episodes cut off by reset() (EnvLogger's reset-only episodes), nested
structures, and every kind of missing, empty, truncated or corrupt file.
"""

import os
import re
import shutil
import warnings

import dm_env
import numpy as np
import pytest

import envlogger_testing
from envlogger_testing import NestedEnv
from rlds_lite import envlogger as rlds_envlogger
from rlds_lite import envs
from rlds_lite.envlogger import CorruptRecordingError
from rlds_lite.envlogger import RecoveredRecordingWarning
from rlds_lite.envlogger import riegeli_files
from rlds_lite.envlogger import read_episodes
from rlds_lite.envlogger import record
from rlds_lite.envlogger import validate_recording

FIRST, MID, LAST = 0, 1, 2


def log_script(data_dir, env, script):
  """Drives a plain EnvLogger: 'R' = reset(), 'S' = step(expert action)."""
  envlogger = rlds_envlogger.import_envlogger()
  with envlogger.EnvLogger(env, data_directory=str(data_dir)) as logged:
    timestep = None
    for op in script:
      if op == 'R':
        timestep = logged.reset()
      else:
        timestep = logged.step(env.expert_policy(timestep))


# Catch with rows=4: a full episode is R + 3 steps.
RESET_SCRIPTS = {
    'cut_off_after_two_steps': ('RSS' + 'RSSS',
                                [[FIRST, MID, MID], [FIRST, MID, MID, LAST]]),
    'reset_only_then_full': ('R' + 'RSSS',
                             [[FIRST], [FIRST, MID, MID, LAST]]),
    'reset_only_at_the_end': ('RSSS' + 'R',
                              [[FIRST, MID, MID, LAST], [FIRST]]),
    'three_reset_only': ('RRR', [[FIRST], [FIRST], [FIRST]]),
    'one_step_cut_off': ('RS' + 'RSSS', [[FIRST, MID], [FIRST, MID, MID, LAST]]),
}


@pytest.mark.parametrize('script,expected', RESET_SCRIPTS.values(),
                         ids=list(RESET_SCRIPTS))
def test_episodes_cut_off_by_reset(script, expected, tmp_path):
  log_script(tmp_path, envs.Catch(rows=4, seed=0), script)
  episodes = list(read_episodes(tmp_path))
  assert [e['step_type'].tolist() for e in episodes] == expected
  replay_env = envs.Catch(rows=4, seed=0)
  for episode in episodes:
    length = len(episode['step_type'])
    assert episode['observation'].shape == (length, 4, 5)
    assert episode['observation'].dtype == np.float32
    assert episode['action'].shape == (length,)
    assert episode['action'].dtype == np.int64
    assert episode['reward'].dtype == np.float64
    assert episode['discount'].dtype == np.float64
    # Row 0 (the reset) has no action/reward/discount: zeros.
    assert (episode['action'][0], episode['reward'][0],
            episode['discount'][0]) == (0, 0.0, 0.0)
    assert episode['step_metadata'] == {} and episode['episode_metadata'] == {}
    # Observations are the env's: replay the same resets and steps.
    timestep = replay_env.reset()
    np.testing.assert_array_equal(episode['observation'][0],
                                  timestep.observation)
    for t in range(1, length):
      timestep = replay_env.step(replay_env.expert_policy(timestep))
      np.testing.assert_array_equal(episode['observation'][t],
                                    timestep.observation)
      assert episode['reward'][t] == timestep.reward
      assert episode['discount'][t] == timestep.discount


def test_reset_only_episode_of_a_nested_env_has_zeros_of_the_specs(tmp_path):
  envlogger = rlds_envlogger.import_envlogger()
  env = NestedEnv(length=2, seed=0)
  with envlogger.EnvLogger(env, data_directory=str(tmp_path)) as logged:
    logged.reset()
  (episode,) = read_episodes(tmp_path)
  assert episode['step_type'].tolist() == [FIRST]
  obs = episode['observation']
  assert obs['pos'].shape == (1, 2) and obs['pos'].dtype == np.float32
  assert obs['id'].tolist() == [0] and obs['id'].dtype == np.int32
  assert obs['flags'][0].tolist() == [True] and obs['flags'][0].dtype == bool
  assert obs['flags'][1].tolist() == [[0, 0, 0]]
  assert obs['flags'][1].dtype == np.uint8
  discrete, force = episode['action']
  assert discrete.tolist() == [0] and discrete.dtype == np.int64
  assert force.tolist() == [[0.0, 0.0]] and force.dtype == np.float32
  assert episode['reward'].tolist() == [0.0]
  assert episode['discount'].tolist() == [0.0]


def test_nested_recording_reads_back_exactly(tmp_path):
  env = NestedEnv(length=4, terminal=False)
  policy = envs.random_policy(env.action_spec())
  record(env, policy, tmp_path, 3, seed=0, progress=False)
  replay_env = NestedEnv(length=4, terminal=False)
  expected = envlogger_testing.replay(
      replay_env, envs.random_policy(replay_env.action_spec()), 3, seed=0)
  episodes = list(read_episodes(tmp_path))
  envlogger_testing.assert_episodes_match(episodes, expected)
  assert isinstance(episodes[0]['action'], tuple)
  assert isinstance(episodes[0]['observation']['flags'], tuple)


def test_read_episodes_reads_several_writer_folders_in_order(tmp_path):
  env = envs.make('catch', rows=3)
  for seed in range(3):
    record(env, env.expert_policy, tmp_path, 2, seed=seed, progress=False,
           append=seed > 0)
  assert len(validate_recording(tmp_path)) == 3
  episodes = list(read_episodes(tmp_path))
  assert [e['episode_metadata']['episode_id'] for e in episodes] == list(
      range(6))
  expected = []
  for seed in range(3):
    replay_env = envs.make('catch', rows=3)
    expected += envlogger_testing.replay(replay_env, replay_env.expert_policy,
                                         2, seed=seed)
  envlogger_testing.assert_episodes_match(episodes, expected)


def test_non_dict_custom_data_is_kept_under_custom_data(tmp_path):
  envlogger = rlds_envlogger.import_envlogger()
  env = envs.Catch(rows=3, seed=0)
  with envlogger.EnvLogger(
      env, data_directory=str(tmp_path),
      step_fn=lambda t, a, e: np.float32(0.5),
      episode_fn=lambda t, a, e: np.int64(9)) as logged:
    timestep = logged.reset()
    while not timestep.last():
      timestep = logged.step(env.expert_policy(timestep))
  (episode,) = read_episodes(tmp_path)
  assert episode['step_metadata']['custom_data'].tolist() == [0.5, 0.5, 0.5]
  assert episode['episode_metadata'] == {'custom_data': 9}


def test_stray_folders_and_files_are_ignored(tmp_path):
  env = envs.make('catch', rows=2)
  record(env, env.expert_policy, tmp_path, 2, progress=False)
  (tmp_path / '.ipynb_checkpoints').mkdir()
  (tmp_path / 'README.txt').write_text('notes')
  assert len(list(read_episodes(tmp_path))) == 2


# ---------------------------------------------------------------------------
# Bad recordings.


@pytest.fixture(scope='module')
def recording(tmp_path_factory):
  """A 3-episode Catch recording made by `record`; copy it before damaging."""
  path = tmp_path_factory.mktemp('recording')
  env = envs.make('catch', rows=4)
  record(env, env.expert_policy, path, 3, seed=0, progress=False)
  return path


def damaged_copy(recording, tmp_path, name, damage):
  """Copies the recording and applies `damage(bytes) -> bytes` to one file."""
  target = tmp_path / 'rec'
  shutil.copytree(recording, target)
  if name == rlds_envlogger.METADATA_FILE:
    path = target / name
  else:
    path = target / os.path.basename(validate_recording(target)[0]) / name
  if damage is None:
    os.remove(path)
  else:
    path.write_bytes(damage(path.read_bytes()))
  return target, str(path)


ALL_FILES = (rlds_envlogger.METADATA_FILE,) + rlds_envlogger.SHARD_FILES


def test_directory_errors(tmp_path):
  with pytest.raises(FileNotFoundError,
                     match=r'EnvLogger directory .*missing does not exist'):
    read_episodes(tmp_path / 'missing')
  (tmp_path / 'file').write_text('x')
  with pytest.raises(NotADirectoryError, match=r'file is a file'):
    read_episodes(tmp_path / 'file')
  (tmp_path / 'empty').mkdir()
  with pytest.raises(FileNotFoundError,
                     match=r'empty is empty: no EnvLogger recording'):
    read_episodes(tmp_path / 'empty')
  (tmp_path / 'other').mkdir()
  (tmp_path / 'other' / 'data.csv').write_text('x')
  with pytest.raises(FileNotFoundError,
                     match=r'EnvLogger file .*other/metadata\.riegeli is '
                     r'missing'):
    read_episodes(tmp_path / 'other')


def test_metadata_without_episodes(tmp_path):
  envlogger = rlds_envlogger.import_envlogger()
  with envlogger.EnvLogger(envs.make('catch'), data_directory=str(tmp_path)):
    pass
  with pytest.raises(FileNotFoundError,
                     match=r'holds no episodes: it has metadata\.riegeli but no '
                     r'writer folder'):
    read_episodes(tmp_path)


def test_a_folder_killed_before_its_first_flush_is_ignored(recording,
                                                           tmp_path):
  target, path = damaged_copy(recording, tmp_path, 'steps.riegeli',
                              lambda b: b'')
  for name in rlds_envlogger.SHARD_FILES:
    open(os.path.join(os.path.dirname(path), name), 'wb').close()
  with pytest.warns(RecoveredRecordingWarning) as caught:
    assert validate_recording(target) == ()
    assert not list(read_episodes(target))
  assert len(caught) == 2  # One per call.
  assert str(caught[0].message) == (
      f'EnvLogger writer folder {os.path.dirname(path)} holds no complete '
      'step offsets (0 bytes in all): its writer was killed (or is still '
      'recording) before it first flushed. The folder was ignored.')


@pytest.mark.parametrize('name', rlds_envlogger.SHARD_FILES)
def test_missing_shard_file(recording, tmp_path, name):
  target, path = damaged_copy(recording, tmp_path, name, None)
  with pytest.raises(FileNotFoundError,
                     match=f'EnvLogger file {path} is missing'):
    read_episodes(target)


# Damage no killed writer leaves: an error naming the file, raised before any
# episode is read.
DAMAGES = {
    'garbage': (ALL_FILES, lambda b: bytes(range(256)) * 2,
                r'is corrupt: it does not start with the riegeli file '
                r'signature'),
    'bad_chunk_type': (ALL_FILES, lambda b: b[:88] + b'\xee' + b[89:],
                       r'is corrupt: the chunk at byte 64 has an unknown '
                       r'type'),
    'bad_chunk_size': (ALL_FILES,
                       lambda b: b[:72] + b'\x00\x00\x01' + b[75:],
                       r'is corrupt: the header of the chunk at byte 64 does '
                       r'not match its hash'),
    'metadata_empty': ((rlds_envlogger.METADATA_FILE,), lambda b: b'',
                       r'is empty'),
    'metadata_truncated_in_chunk_header': (
        (rlds_envlogger.METADATA_FILE,), lambda b: b[:80],
        r'is truncated: it ends inside the chunk header at byte 64'),
    'metadata_truncated_in_chunk_data': (
        (rlds_envlogger.METADATA_FILE,), lambda b: b[:-10],
        r'is truncated: it ends inside the chunk at byte 64 \(which ends at '
        r'byte \d+\)'),
    'metadata_signature_only': ((rlds_envlogger.METADATA_FILE,),
                                lambda b: b[:64], r'holds no records'),
}
DAMAGE_CASES = [(name, damage, match) for damage, (names, _, match) in
                DAMAGES.items() for name in names]


@pytest.mark.parametrize(
    'name,damage,match', DAMAGE_CASES,
    ids=[f'{n}-{d}' for n, d, _ in DAMAGE_CASES])
def test_structurally_damaged_files_are_named(recording, tmp_path, name,
                                              damage, match):
  target, path = damaged_copy(recording, tmp_path, name, DAMAGES[damage][1])
  with pytest.raises(CorruptRecordingError,
                     match=f'EnvLogger file {path} {match}'):
    read_episodes(target)  # Raised before any episode is read.
  with pytest.raises(CorruptRecordingError, match=path):
    validate_recording(target)


# A shard file cut short, as a writer killed while writing it (at its close)
# leaves it: the file's truncated tail is ignored with a warning, then either
# the episodes before the cut are read (the index) or the cut is an error
# (what is missing was referenced: no kill leaves that).
CUTS = {'empty': lambda b: b'', 'in_chunk_header': lambda b: b[:80],
        'signature_only': lambda b: b[:64], 'in_chunk_data': lambda b: b[:-10]}
STEPS_LOST = (CorruptRecordingError,
              r'Cannot read timestep \d of episode 2 from .*steps\.riegeli \(or '
              r'its step_offsets\.riegeli\): the file is truncated or corrupt')
NO_OFFSETS = (CorruptRecordingError,
              r'step_offsets\.riegeli is corrupt: it holds no step offsets but '
              r'episode_index\.riegeli lists episodes')
CUT_OUTCOMES = {
    ('steps.riegeli', 'empty'): STEPS_LOST,
    ('steps.riegeli', 'in_chunk_header'): STEPS_LOST,
    ('steps.riegeli', 'signature_only'): STEPS_LOST,
    ('steps.riegeli', 'in_chunk_data'): STEPS_LOST,
    ('step_offsets.riegeli', 'empty'): NO_OFFSETS,
    ('step_offsets.riegeli', 'in_chunk_header'): NO_OFFSETS,
    ('step_offsets.riegeli', 'signature_only'): NO_OFFSETS,
    ('step_offsets.riegeli', 'in_chunk_data'): (
        CorruptRecordingError,
        r'episode_index\.riegeli and step_offsets\.riegeli disagree: the '
        r'index lists episode 2 as the last one, which the truncated step '
        r'offsets may not cover'),
    # The episodes keep no metadata: record's episode_id is missing.
    ('episode_metadata.riegeli', 'empty'): (
        CorruptRecordingError, r"episode 0 has no 'episode_id'"),
    ('episode_metadata.riegeli', 'in_chunk_header'): (
        CorruptRecordingError, r"episode 0 has no 'episode_id'"),
    ('episode_metadata.riegeli', 'signature_only'): (
        CorruptRecordingError, r"episode 0 has no 'episode_id'"),
    ('episode_metadata.riegeli', 'in_chunk_data'): (
        CorruptRecordingError, r"episode 2 has no 'episode_id'"),
    # Episodes the index no longer lists are dropped (3 x 4 timesteps).
    ('episode_index.riegeli', 'empty'): (12, 3),
    ('episode_index.riegeli', 'in_chunk_header'): (12, 3),
    ('episode_index.riegeli', 'signature_only'): (12, 3),
    ('episode_index.riegeli', 'in_chunk_data'): (4, 1),
}


@pytest.mark.parametrize('name,cut', CUT_OUTCOMES, ids=[
    f'{n}-{c}' for n, c in CUT_OUTCOMES])
def test_shard_files_cut_short(recording, tmp_path, name, cut):
  target, path = damaged_copy(recording, tmp_path, name, CUTS[cut])
  outcome = CUT_OUTCOMES[name, cut]
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    if isinstance(outcome[0], int):
      episodes = list(read_episodes(target))
    else:
      with pytest.raises(outcome[0], match=outcome[1]):
        list(read_episodes(target))
  messages = [str(w.message) for w in caught
              if issubclass(w.category, RecoveredRecordingWarning)]
  truncated = [m for m in messages if m.startswith(f'EnvLogger file {path} ')]
  if not isinstance(outcome[0], int):
    return  # An error: warnings before it do not matter.
  if cut in ('in_chunk_header', 'in_chunk_data'):
    assert len(truncated) == 1, messages
    assert re.fullmatch(
        rf'EnvLogger file {re.escape(path)} ends inside the chunk (header )?'
        r'at byte \d+( \(which ends at byte \d+\))?: its last \d+ bytes '
        r'\(after byte \d+\) were ignored\. A writer killed while writing '
        r'leaves such a truncated tail\.', truncated[0])
  else:
    assert not truncated, messages
  dropped, unfinished = outcome
  assert messages[-1] == (
      f'EnvLogger writer folder {os.path.dirname(path)} ends with {dropped} '
      f'timestep(s) of {unfinished} episode(s) after the last episode its '
      'index lists (its writer was killed, or is still recording, before it '
      'listed them): they were dropped.')
  assert [e['episode_metadata']['episode_id'] for e in episodes] == list(
      range(3 - unfinished))


def flip(offset):
  def damage(data):
    data = bytearray(data)
    data[offset] ^= 0xFF
    return bytes(data)
  return damage


# `record` flushes as each reset is recorded, so each shard file has a chunk
# per flush: offset 100 damages the first chunk's header, offset -20 the last
# chunk's data. Damaged chunks of the step offsets and index are found by
# their hashes (a kill never damages a whole chunk); of the other files, when
# read.
FLIPS = {
    'steps_first_chunk': ('steps.riegeli', 100, True,
                          r'Cannot read timestep \d+ of episode \d+ from '
                          r'.*steps\.riegeli \(or its step_offsets\.riegeli\): '
                          r'the file is truncated or corrupt'),
    'steps_last_chunk': ('steps.riegeli', -20, True,
                         r'Cannot read timestep 1 of episode 2 from '
                         r'.*steps\.riegeli'),
    'step_offsets_first_chunk': ('step_offsets.riegeli', 100, True,
                                 r'EnvLogger file .*step_offsets\.riegeli is '
                                 r'corrupt: EnvLogger cannot read its step '
                                 r'offsets'),
    'step_offsets_last_chunk': ('step_offsets.riegeli', -20, False,
                                r'EnvLogger file .*step_offsets\.riegeli is '
                                r'corrupt: the chunk at byte \d+ does not match '
                                r'its hash'),
    'episode_metadata': ('episode_metadata.riegeli', -20, True,
                         r"EnvLogger file .*episode_metadata\.riegeli is "
                         r"corrupt: episode 2 has no 'episode_id'"),
    'episode_index': ('episode_index.riegeli', -20, False,
                      r'EnvLogger file .*episode_index\.riegeli is corrupt: '
                      r'the chunk at byte \d+ does not match its hash'),
    'metadata': ('metadata.riegeli', -20, True,
                 r'Cannot read EnvLogger data .*/rec/metadata\.riegeli: '
                 r'INTERNAL: Failed to parse riegeli record'),
}


@pytest.mark.parametrize('name,offset,structure_intact,match', FLIPS.values(),
                         ids=list(FLIPS))
def test_damaged_chunk_data_is_named(recording, tmp_path, name, offset,
                                     structure_intact, match):
  target, _ = damaged_copy(recording, tmp_path, name, flip(offset))
  if structure_intact:
    validate_recording(target)  # Only reading finds it.
  with pytest.raises(CorruptRecordingError, match=match):
    list(read_episodes(target))


def test_mixed_up_index_is_detected(recording, tmp_path):
  """An index from another recording (same step count, other boundaries)."""
  other = tmp_path / 'other'
  env = envs.make('catch', rows=3)  # 4 episodes x 3 timesteps = 12 = 3 x 4.
  record(env, env.expert_policy, other, 4, seed=0, progress=False)
  target, path = damaged_copy(recording, tmp_path, 'episode_index.riegeli',
                              lambda b: b)
  shutil.copy(os.path.join(validate_recording(other)[0],
                           'episode_index.riegeli'), path)
  with pytest.raises(CorruptRecordingError,
                     match=r'episode_index\.riegeli is corrupt: episode 3 does '
                     r'not start with a reset \(FIRST\) timestep'):
    list(read_episodes(target))


@pytest.mark.parametrize(
    'episodes,match',
    [(2, r'is corrupt: episode 1 does not start with a reset \(FIRST\)'),
     (6, r'and step_offsets\.riegeli disagree: the 6 indexed episodes do not '
      r'cover the 12 listed timesteps')],
    ids=['fewer_steps_indexed', 'more_steps_indexed'])
def test_index_with_another_step_count_is_detected(recording, tmp_path,
                                                   episodes, match):
  other = tmp_path / 'other'
  env = envs.make('catch', rows=3)  # 3 timesteps per episode.
  record(env, env.expert_policy, other, episodes, seed=0, progress=False)
  target, path = damaged_copy(recording, tmp_path, 'episode_index.riegeli',
                              lambda b: b)
  shutil.copy(os.path.join(validate_recording(other)[0],
                           'episode_index.riegeli'), path)
  with pytest.raises(CorruptRecordingError,
                     match=r'episode_index\.riegeli ' + match):
    list(read_episodes(target))


def _chunk_begins(path):
  """Where each chunk of a riegeli file begins (after the signature)."""
  begins, size = [], os.path.getsize(path)
  with open(path, 'rb') as f:
    pos = 64
    while pos < size:
      begins.append(pos)
      f.seek(pos)
      header = f.read(40)
      pos = riegeli_files._chunk_end(  # pylint: disable=protected-access
          pos, int.from_bytes(header[8:16], 'little'),
          int.from_bytes(header[25:32], 'little'))
  return begins


def test_good_folder_is_read_before_a_damaged_one(recording, tmp_path):
  target = tmp_path / 'rec'
  shutil.copytree(recording, target)
  env = envs.make('catch', rows=4)
  record(env, env.expert_policy, target, 3, seed=1, progress=False,
         append=True)
  second = validate_recording(target)[1]
  path = os.path.join(second, 'steps.riegeli')
  # The data of the second chunk: timesteps 1-3 of the folder's episode 0
  # (and the reset of its episode 1).
  damage = flip(_chunk_begins(path)[1] + 60)
  with open(path, 'rb') as f:
    data = damage(f.read())
  with open(path, 'wb') as f:
    f.write(data)
  episodes = read_episodes(target)
  assert [next(episodes)['episode_metadata']['episode_id'] for _ in range(3)
         ] == [0, 1, 2]
  with pytest.raises(CorruptRecordingError,
                     match=r'Cannot read timestep 1 of episode 0 from '
                     + re.escape(path)):
    next(episodes)


def test_inconsistent_step_values_are_reported(tmp_path):
  """A dm_env that breaks its contract (reward None mid-episode)."""

  class BadEnv(NestedEnv):

    def step(self, action):
      timestep = super().step(action)
      return timestep._replace(reward=None) if timestep.mid() else timestep

  env = BadEnv(length=3)
  record(env, envs.random_policy(env.action_spec()), tmp_path, 1,
         progress=False)
  with pytest.raises(ValueError,
                     match=r'Episode 0 of .*: timestep 1 \(MID\) has no reward; '
                     r'only a reset \(FIRST\) timestep may lack it'):
    list(read_episodes(tmp_path))


def test_observation_shapes_changing_within_an_episode(tmp_path):

  class GrowingEnv(envs.Catch):

    def step(self, action):
      timestep = super().step(action)
      return timestep._replace(observation=np.zeros(3, np.float32))

  env = GrowingEnv(rows=3, seed=0)
  record(env, lambda t: np.int64(1), tmp_path, 1, progress=False)
  with pytest.raises(ValueError,
                     match=r'Episode 0 of .*: the observation of its timesteps '
                     r'differ in structure or shape'):
    list(read_episodes(tmp_path))


def log_step_metadata(data_dir, step_fn):
  """One Catch (rows=3) episode logged by a plain EnvLogger with ``step_fn``."""
  envlogger = rlds_envlogger.import_envlogger()
  env = envs.Catch(rows=3, seed=0)
  with envlogger.EnvLogger(env, data_directory=str(data_dir),
                           step_fn=step_fn) as logged:
    timestep = logged.reset()
    while not timestep.last():
      timestep = logged.step(env.expert_policy(timestep))


def test_step_metadata_keys_changing_within_an_episode(tmp_path):
  # EnvLogger stores whatever step_fn returns; rlds_lite's record refuses it.
  log_step_metadata(tmp_path, lambda t, a, e: (
      {'t': np.int64(0)} if t.first() else {'t': np.int64(1), 'u': 1.0}))
  with pytest.raises(ValueError,
                     match=r"Episode 0 of .*: step metadata keys differ between "
                     r"timestep 0 \['t'\] and timestep 1 \['t', 'u'\]"):
    list(read_episodes(tmp_path))


def test_step_metadata_shapes_changing_within_an_episode(tmp_path):
  log_step_metadata(tmp_path, lambda t, a, e: {
      'v': np.zeros(1 if t.first() else 2, np.float32)})
  with pytest.raises(ValueError,
                     match=r"Episode 0 of .*: the step metadata 'v' of its "
                     r"timesteps differ in structure or shape"):
    list(read_episodes(tmp_path))


def test_step_type_values(recording):
  (first, *_) = read_episodes(recording)
  assert first['step_type'].dtype == np.uint8
  assert first['step_type'].tolist() == [
      dm_env.StepType.FIRST, dm_env.StepType.MID, dm_env.StepType.MID,
      dm_env.StepType.LAST]
