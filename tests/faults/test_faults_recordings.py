"""EnvLogger recordings killed for real: what every reader then finds.

Recorders run in child processes that SIGKILL themselves at chosen moments
(an action inside an episode, a rename of the overwrite swap) or are killed
at random moments; kills inside EnvLogger's flush (a file cut inside its
last chunk) are reproduced exactly from the sizes the files had at each
flush. Each case asserts the exact episodes every reader (EnvLogger's own,
`read_episodes`, the decoder behind `build_from_envlogger`, a TFDS build)
finds: counts, ids, values equal to an unkilled recording's, the warnings.
docs/guarantees.md (## Recordings) names the promise each test holds.
"""

import os
import random
import shutil
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
import tensorflow_datasets as tfds

import recording_faults as rf
from rlds_lite import envlogger as rlds_envlogger
from rlds_lite import envs
from rlds_lite.envlogger import RecoveredRecordingWarning
from rlds_lite.envlogger import staging
from rlds_lite.tfds import build_from_envlogger
from rlds_lite.tfds import envlogger_episodes

SEED = 3


@pytest.fixture(scope='module')
def recording_reference(tmp_path_factory):
  """An unkilled `record` of 40 Catch episodes (seed `SEED`): what a killed
  one must give, episode for episode."""
  return rf.reference(str(tmp_path_factory.mktemp('reference')), 40, SEED)


def record_killed_at(data_dir, action, seed=SEED, **args):
  """`record` of 12 Catch episodes, SIGKILLed at the given action."""
  return rf.run_child('record', dict(
      data_dir=str(data_dir), catch=rf.CATCH, episodes=12, seed=seed,
      kill_at_action=action, **args))


# ---------------------------------------------------------------------------
# A crash loses at most the episode in progress.


def test_kill_mid_episode_loses_only_that_episode(tmp_path,
                                                  recording_reference):
  data_dir = tmp_path / 'rec'
  # The second action of episode 7: episodes 0-6 are done.
  record_killed_at(data_dir, 7 * rf.ACTIONS_PER_EPISODE + 2)
  found = rf.read_all_ways(data_dir)
  rf.assert_same_episodes(found['episodes'], recording_reference[:7])
  (folder,) = rlds_envlogger.validate_recording(data_dir)
  # The reset of episode 7 was flushed with episode 6; nothing after it.
  assert found['messages'] == [rf.tail_message(folder, 1)]
  assert found['envlogger_lengths'] == [4] * 6 + [5]

  # The TFDS build holds the same 7 episodes, the last one whole and
  # terminal (it used to end with the next reset's observation).
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', RecoveredRecordingWarning)
    build_from_envlogger(str(data_dir), name='killed', data_dir=tmp_path)
  dataset = tfds.load('killed', data_dir=tmp_path, split='train')
  built = sorted(dataset, key=lambda e: int(e['episode_id']))
  specs = envlogger_episodes.recording_specs(data_dir)
  assert len(built) == 7
  for logged, episode in zip(found['episodes'], built):
    expected = envlogger_episodes.rlds_episode(logged, specs)['steps']
    steps = list(episode['steps'].as_numpy_iterator())
    for field in ('observation', 'action', 'reward', 'discount', 'is_first',
                  'is_last', 'is_terminal'):
      np.testing.assert_array_equal(np.stack([s[field] for s in steps]),
                                    expected[field])
    assert [s['is_terminal'] for s in steps] == [False] * 3 + [True]


@pytest.mark.parametrize('run', range(2))
def test_kill_at_a_random_moment(tmp_path, recording_reference, run):
  rng = random.Random()
  seed = rng.randrange(1 << 30)
  rng.seed(seed)
  data_dir = tmp_path / 'rec'
  # 40 episodes of 3 actions, 10 ms each: the kill comes before the end.
  child = rf.start_child('record', dict(
      data_dir=str(data_dir), catch=rf.CATCH, episodes=40, seed=SEED,
      action_sleep=0.01))
  first = child.stdout.readline()  # Episode 0 started: imports are done.
  assert first.strip() == '0', (first, child.stderr.read()[-3000:])
  time.sleep(rng.uniform(0, 1))
  lines = [first.strip()] + rf.kill_child(child)
  assert lines[-1] != 'done', f'run {run} (seed {seed}) ended before the kill'
  started = int(lines[-1])  # Episodes before it were flushed with its reset.
  found = rf.read_all_ways(data_dir)
  count = len(found['episodes'])
  assert count in (started, started + 1), (seed, started, count)
  rf.assert_same_episodes(found['episodes'], recording_reference[:count])
  assert rf.episode_ids(found['episodes']) == list(range(count))
  assert len(found['messages']) == 1, (seed, found['messages'])


# ---------------------------------------------------------------------------
# Every reader reads every episode EnvLogger's own reader reads, from every
# writer folder.


@pytest.mark.parametrize('flush,kill_at_step,expected', [
    # Killed in episode 4 (folder 2) before anything of folder 2 flushed:
    # folder 1 (episodes 0-2) is whole, folder 2's files are empty.
    ('never', 4 * 4 + 1, [4, 4, 4]),
    # Flushing at resets, killed in episode 5: folder 2 holds episodes 3, 4.
    ('resets', 5 * 4 + 2, [4, 4, 4, 4, 4]),
], ids=['second_folder_empty', 'second_folder_killed_mid_episode'])
def test_second_writer_folder_of_a_killed_envlogger(tmp_path, flush,
                                                    kill_at_step, expected):
  data_dir = tmp_path / 'rec'
  data_dir.mkdir()
  rf.run_child('plain', dict(data_dir=str(data_dir), flush=flush,
                             max_episodes_per_file=3,
                             kill_at_step=kill_at_step))
  first, second = rf.writer_folders(str(data_dir))
  found = rf.read_all_ways(data_dir)
  assert [len(e['step_type']) for e in found['episodes']] == expected
  for episode in found['episodes']:
    assert episode['step_type'].tolist() == [0, 1, 1, 2]
    assert episode['observation'].tolist() == [0, 1, 2, 3]
  if flush == 'never':
    assert found['messages'] == [
        f'EnvLogger writer folder {second} holds no complete step offsets '
        '(0 bytes in all): its writer was killed (or is still recording) '
        'before it first flushed. The folder was ignored.']
    with pytest.warns(RecoveredRecordingWarning, match='holds no complete'):
      assert rlds_envlogger.validate_recording(data_dir) == (first,)
  else:
    assert found['messages'] == [rf.tail_message(second, 1)]


def _flush_states(tmp_path, num_episodes):
  """A recording flushed at every reset, and its files' sizes after each
  flush (the close last): ``(folder, [sizes before flush 0, after 0, ...])``.
  """
  envlogger = rlds_envlogger.import_envlogger()
  data_dir = str(tmp_path / 'full')
  os.makedirs(data_dir)
  folder_sizes = []

  def scheduler(data):
    # Called before each timestep's flush: the sizes after the last one.
    folders = rf.writer_folders(data_dir)
    if folders:
      sizes = rf.file_sizes(folders[0])
      if not folder_sizes or folder_sizes[-1] != sizes:
        folder_sizes.append(sizes)
    return data.timestep.first()

  env = envs.make('catch', seed=SEED, **rf.CATCH)
  with envlogger.EnvLogger(env, data_directory=data_dir,
                           flush_scheduler=scheduler,
                           episode_fn=lambda t, a, e: {'n': np.int64(1)}
                           ) as logged:
    for _ in range(num_episodes):
      timestep = logged.reset()
      while not timestep.last():
        timestep = logged.step(env.expert_policy(timestep))
  (folder,) = rf.writer_folders(data_dir)
  folder_sizes.append(rf.file_sizes(folder))
  return data_dir, folder, folder_sizes


# Flush 0 (at the first reset) writes no episode metadata nor index.
KILLS_IN_FLUSH = [(flush, name) for flush in range(4)
                  for name in rlds_envlogger.SHARD_FILES
                  if flush or name in rlds_envlogger.SHARD_FILES[:2]]


@pytest.fixture(scope='module')
def recording_flush_states(tmp_path_factory):
  return _flush_states(tmp_path_factory.mktemp('flushes'), 3)


@pytest.mark.parametrize('flush,name', KILLS_IN_FLUSH,
                         ids=[f'flush{f}-{n}' for f, n in KILLS_IN_FLUSH])
def test_killed_inside_a_flush_while_writing_a_file(tmp_path,
                                                    recording_flush_states,
                                                    flush, name):
  """EnvLogger flushes steps, step offsets, episode metadata and the index
  in that order, appending whole chunks; a kill while it appends to ``name``
  leaves the files before it flushed, ``name`` cut inside its new chunk and
  the files after it as they were. Flush f happens at the reset of episode
  f (flush 3 is the close of the 3-episode recording)."""
  full, folder, sizes = recording_flush_states
  before, after = sizes[flush], sizes[flush + 1]
  assert after[name] > before[name]
  target = tmp_path / 'rec'
  shutil.copytree(full, target)
  target_folder = os.path.join(target, os.path.basename(folder))
  order = rlds_envlogger.SHARD_FILES
  position = order.index(name)
  cut = {n: after[n] if i < position else before[n]
         for i, n in enumerate(order)}
  cut[name] = (before[name] + after[name]) // 2
  rf.cut_files(target_folder, cut)

  complete = list(rlds_envlogger.read_episodes(full))
  found = rf.read_all_ways(target)
  truncated = os.path.join(target_folder, name)
  if flush == 0:  # Nothing was flushed before: the folder holds nothing.
    assert found['episodes'] == []
    assert len(found['messages']) == 1
    assert found['messages'][0].startswith(
        f'EnvLogger writer folder {target_folder} holds no complete step '
        'offsets')
    return
  rf.assert_same_episodes(found['episodes'], complete[:flush - 1])
  whole = before[name] if before[name] else 64 * (cut[name] >= 64)
  assert found['messages'][0].startswith(
      f'EnvLogger file {truncated} ends inside the ')
  assert (f'its last {cut[name] - whole} bytes (after byte {whole}) were '
          'ignored') in found['messages'][0]
  # What the index does not list is dropped: cut before the index, the
  # reset of episode flush - 1 (flushed with the episodes before it); cut in
  # the metadata or index, also that episode and the reset after it.
  if position < 2:
    dropped = (1, 1)
  else:
    dropped = (5, 2) if flush < 3 else (4, 1)
  assert found['messages'][1:] == [rf.tail_message(target_folder, *dropped)]


# ---------------------------------------------------------------------------
# record(if_exists='append') and (if_exists='overwrite') never destroy what was there.


def test_killed_append_keeps_the_recording_and_appends_again(
    tmp_path, recording_reference):
  data_dir = tmp_path / 'rec'
  env = envs.make('catch', **rf.CATCH)
  rlds_envlogger.record(env, env.expert_policy, data_dir, 5, seed=SEED,
                        progress=False)
  # Killed in the second new episode: the first new one (id 5) is done.
  record_killed_at(data_dir, rf.ACTIONS_PER_EPISODE + 2,
                   if_exists='append')
  found = rf.read_all_ways(data_dir)
  assert rf.episode_ids(found['episodes']) == list(range(6))
  rf.assert_same_episodes(found['episodes'][:5], recording_reference[:5])
  old, new = rlds_envlogger.validate_recording(data_dir)
  assert found['messages'] == [rf.tail_message(new, 1)]

  with warnings.catch_warnings():
    warnings.simplefilter('ignore', RecoveredRecordingWarning)
    summary = rlds_envlogger.record(env, env.expert_policy, data_dir, 2,
                                    seed=1, progress=False,
                                    if_exists='append')
  assert summary.episode_ids == (6, 7)
  found = rf.read_all_ways(data_dir)
  assert rf.episode_ids(found['episodes']) == list(range(8))
  assert len(rlds_envlogger.validate_recording(data_dir)) == 3
  assert rlds_envlogger.validate_recording(data_dir)[:2] == (old, new)


def test_killed_overwrite_keeps_the_old_recording(tmp_path,
                                                  recording_reference):
  data_dir = tmp_path / 'rec'
  env = envs.make('catch', **rf.CATCH)
  rlds_envlogger.record(env, env.expert_policy, data_dir, 12, seed=SEED,
                        progress=False)
  (data_dir / 'notes.txt').write_text('keep me')
  # Killed early (the first action of the new recording) and late.
  for action in (1, 10 * rf.ACTIONS_PER_EPISODE):
    record_killed_at(data_dir, action, if_exists='overwrite', seed=99)
    found = rf.read_all_ways(data_dir)
    rf.assert_same_episodes(found['episodes'], recording_reference[:12])
    assert found['messages'] == []
    assert envlogger_episodes.find_recordings(data_dir) == [str(data_dir)]
  summary = rlds_envlogger.record(env, env.expert_policy, data_dir, 2, seed=1,
                                  progress=False,
                                  if_exists='overwrite')
  assert summary.episode_ids == (0, 1)
  found = rf.read_all_ways(data_dir)
  assert rf.episode_ids(found['episodes']) == [0, 1]
  assert sorted(os.listdir(data_dir)) == sorted(
      ['.rlds_lite.lock', 'metadata.riegeli', 'notes.txt',
       os.path.basename(rlds_envlogger.validate_recording(data_dir)[0])])


def _overwritten(tmp_path, reference_seed=99):
  """A 12-episode recording and an overwrite with 3 episodes staged whole."""
  data_dir = tmp_path / 'rec'
  env = envs.make('catch', **rf.CATCH)
  rlds_envlogger.record(env, env.expert_policy, data_dir, 12, seed=SEED,
                        progress=False)
  new = rf.reference(str(tmp_path / 'new_reference'), 3, reference_seed)
  return data_dir, new


# EnvLogger's Reader, failing in __init__, then fails in __del__ too.
@pytest.mark.filterwarnings('ignore::pytest.PytestUnraisableExceptionWarning')
def test_overwrite_killed_while_swapping_in(tmp_path):
  data_dir, new = _overwritten(tmp_path)
  # The renames: the COMPLETE mark, the old metadata out, the old folder
  # out, the new folder in, the new metadata in. Killed after the second.
  rf.run_child('record', dict(data_dir=str(data_dir), catch=rf.CATCH,
                              episodes=3, seed=99, if_exists='overwrite',
                              kill_at_rename=2))
  metadata = os.path.join(data_dir, 'metadata.riegeli')
  with pytest.raises(FileNotFoundError) as error:
    rlds_envlogger.read_episodes(data_dir)
  assert str(error.value) == (
      f'EnvLogger file {metadata} is missing: a record(..., '
      "if_exists='overwrite') was interrupted while it swapped the new "
      'recording in. Call '
      f'rlds_lite.envlogger.finish_overwrite({str(data_dir)!r}) (or record '
      'into it again) to complete it.')
  with pytest.raises(RuntimeError, match='metadata.riegeli'):
    rf.envlogger_reader_lengths(str(data_dir))  # No reader reads a mix.
  assert rlds_envlogger.finish_overwrite(data_dir)
  found = rf.read_all_ways(data_dir)
  rf.assert_same_episodes(found['episodes'], new)
  assert not [n for n in os.listdir(data_dir) if n.startswith('.rlds_lite_')]


@pytest.mark.parametrize('renames', range(4))
def test_the_swap_resumes_after_any_rename(tmp_path, monkeypatch, renames):
  """The swap stopped before each of its 4 renames (an exception standing
  for the kill), then completed by `finish_overwrite`."""
  data_dir, new = _overwritten(tmp_path)
  staged = staging.staging_dir(data_dir)
  env = envs.make('catch', **rf.CATCH)
  rlds_envlogger.record(env, env.expert_policy, staged, 3, seed=99,
                        progress=False)
  staging.mark_complete(data_dir)
  done = [0]
  real_replace = os.replace

  class Killed(BaseException):
    pass

  def replace(src, dst):
    if done[0] == renames:
      raise Killed()
    real_replace(src, dst)
    done[0] += 1

  monkeypatch.setattr(staging.os, 'replace', replace)
  with pytest.raises(Killed):
    staging.clean_up(str(data_dir))
  monkeypatch.setattr(staging.os, 'replace', real_replace)
  if 0 < renames < 4:
    with pytest.raises(FileNotFoundError, match='finish_overwrite'):
      rlds_envlogger.validate_recording(data_dir)
  assert rlds_envlogger.finish_overwrite(data_dir)
  found = rf.read_all_ways(data_dir)
  rf.assert_same_episodes(found['episodes'], new)


# ---------------------------------------------------------------------------
# One recorder at a time.


def test_a_second_recorder_fails_up_front(tmp_path):
  data_dir = tmp_path / 'rec'
  data_dir.mkdir()
  holder = subprocess.Popen(
      [sys.executable, '-c',
       'import fcntl, os, sys, time\n'
       f'fd = os.open({str(data_dir / ".rlds_lite.lock")!r}, '
       'os.O_RDWR | os.O_CREAT)\n'
       'fcntl.flock(fd, fcntl.LOCK_EX)\n'
       'os.write(fd, str(os.getpid()).encode())\n'
       'print("locked", flush=True)\n'
       'time.sleep(60)\n'], stdout=subprocess.PIPE, text=True)
  try:
    assert holder.stdout.readline().strip() == 'locked'
    env = envs.make('catch', **rf.CATCH)
    with pytest.raises(rlds_envlogger.RecordingLockedError) as error:
      rlds_envlogger.record(env, env.expert_policy, data_dir, 1,
                            progress=False)
    assert str(error.value) == (
        f'Another recorder (pid {holder.pid}) is recording into {data_dir} '
        f'(it holds {data_dir / ".rlds_lite.lock"}); wait for it to finish '
        'or record into another directory.')
    assert os.listdir(data_dir) == ['.rlds_lite.lock']
  finally:
    holder.kill()
    holder.wait()
  # Killed, the holder released its lock.
  env = envs.make('catch', **rf.CATCH)
  rlds_envlogger.record(env, env.expert_policy, data_dir, 1, progress=False)
  assert len(list(rlds_envlogger.read_episodes(data_dir))) == 1
