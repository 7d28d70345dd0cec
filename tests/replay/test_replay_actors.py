"""Actor processes on one MemmapStorage, one killed (SIGKILL) mid-insert, against a NumPy reference; replay.record's alignment."""

import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import rlds_lite
from rlds_lite import replay
from rlds_lite.sample_kinds import Windows
from rlds_lite.replay import storage as storage_lib

import replay_actor_process as actor_process

SCRIPT = pathlib.Path(actor_process.__file__)
ROOT = pathlib.Path(rlds_lite.__file__).parent.parent
TIMEOUT = 30.0
FIELDS = ('observation', 'action', 'reward', 'is_first', 'is_last', 'is_terminal')


class Actors:
  """Actor processes (episodes, kill_at per actor), every one reaped on exit.

  A thread kills (SIGKILL) each actor as soon as it blocks mid-write: it
  holds the storage's lock then, so the learner's sample waits for the kill.
  """

  def __init__(self, path, plan, tmp):
    self.plan = plan
    self.markers = {a: str(tmp / f'actor-{a}') for a in plan}
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    self.procs = {a: subprocess.Popen(
        [sys.executable, str(SCRIPT), str(path), str(a), str(n), str(kill_at),
         self.markers[a]], env=env, stderr=subprocess.PIPE)
                  for a, (n, kill_at) in plan.items()}
    self.torn = {}
    self._killer = threading.Thread(target=self._kill_blocked, daemon=True)
    self._killer.start()

  def running(self) -> bool:
    return any(p.poll() is None for p in self.procs.values())

  def _kill_blocked(self) -> None:
    deadline = time.monotonic() + TIMEOUT
    while self.running() and time.monotonic() < deadline:
      for a, proc in self.procs.items():
        if a not in self.torn and os.path.exists(self.markers[a]):
          proc.send_signal(signal.SIGKILL)
          proc.wait(TIMEOUT)
          self.torn[a] = int(pathlib.Path(self.markers[a]).read_text())
      time.sleep(0.002)

  def finish(self, while_running=lambda: None) -> None:
    deadline = time.monotonic() + TIMEOUT
    while self.running():
      assert time.monotonic() < deadline, 'actors did not finish in time'
      while_running()
      time.sleep(0.005)
    self._killer.join(TIMEOUT)
    for a, proc in self.procs.items():
      assert proc.returncode in (0, -signal.SIGKILL), (
          f'actor {a} failed: {proc.stderr.read().decode()}')
    for a, (_, kill_at) in self.plan.items():
      assert (a in self.torn) == (kill_at >= 0)
      if kill_at < 0:
        assert pathlib.Path(self.markers[a] + '.done').read_text() == 'False'  # No TF.

  def close(self) -> None:
    for proc in self.procs.values():
      if proc.poll() is None:
        proc.kill()
      proc.wait(TIMEOUT)
      proc.stderr.close()
    self._killer.join(TIMEOUT)


def run_actors(path, plan, tmp_path, while_running=lambda: None):
  """Runs the actors of ``plan`` to their end (or kill), ``while_running`` polled meanwhile, then once more."""
  actors = Actors(path, plan, tmp_path)
  try:
    actors.finish(while_running)
  finally:
    actors.close()
  while_running()   # Once more, in case the actors finished before it ran.
  return actors


def expected_episodes(plan):
  """(actor, episode) of every episode that must be published: the killed one's last is lost."""
  return {(a, e) for a, (n, kill_at) in plan.items()
          for e in range(n if kill_at < 0 else kill_at)}


def stored_episodes(storage):
  """The readable slots grouped by episode id, oldest first: id -> flat steps."""
  slots = storage.readable()
  ids = storage.episode_ids[slots]
  groups = {}
  for i in dict.fromkeys(ids.tolist()):
    at = slots[ids == i]
    groups[i] = {f: storage.columns[f][at] for f in FIELDS}
  return groups


def check_whole(steps, where):
  """A group of stored steps is one reference episode, whole and untorn; returns its (actor, episode)."""
  actors, episodes, _ = actor_process.decode(steps['observation'][:, 0])
  a, e = int(actors[0]), int(episodes[0])
  reference = actor_process.episode(a, e)
  for field in FIELDS:
    np.testing.assert_array_equal(steps[field], reference[field], err_msg=f'{where} {field}')
  return a, e


def check_steps(batch, info, seen):
  """Sampled steps: untorn, and each episode id always the same (actor, episode)."""
  obs = batch['observation']
  assert (obs == obs[:, :1]).all()
  actors, episodes, t = actor_process.decode(obs[:, 0])
  np.testing.assert_array_equal(info.step_ids, t)
  np.testing.assert_array_equal(batch['reward'], t)
  np.testing.assert_array_equal(batch['action'], actors)
  for i, key in zip(info.episode_ids.tolist(), zip(actors.tolist(), episodes.tolist())):
    assert seen.setdefault(i, key) == key


@pytest.fixture
def shared(tmp_path):
  path = tmp_path / 'buffer'
  replay.MemmapStorage(path, 4096)   # No spec: the first actor's episode allocates it.
  return path


def test_two_actors_one_killed_mid_insert(shared, tmp_path):
  learner = replay.ReplayBuffer(replay.MemmapStorage(shared), seed=0)
  plan = {0: (8, -1), 1: (8, 3)}   # Actor 1 dies inside the write of its episode 3.
  seen = {}

  def sample():
    if len(learner):
      check_steps(*learner.sample(16), seen)

  actors = run_actors(shared, plan, tmp_path, sample)
  expected = expected_episodes(plan)
  groups = stored_episodes(learner.storage)
  assert actors.torn[1] not in groups   # The torn episode is never readable.
  assert {check_whole(s, i) for i, s in groups.items()} == expected   # Nothing else lost.
  total = sum(actor_process.length(a, e) for a, e in expected)
  assert (len(learner), learner.num_episodes()) == (total, len(expected))
  assert seen and set(seen.values()) <= expected
  epoch = replay.ReplayBuffer(replay.MemmapStorage(shared), sampler=replay.WithoutReplacement())
  batch, info = epoch.sample(total)   # Every published step once.
  check_steps(batch, info, seen)
  reference = np.sort([c for a, e in expected for c in actor_process.code(
      a, e, np.arange(actor_process.length(a, e)))])
  np.testing.assert_array_equal(np.sort(batch['observation'][:, 0]), reference)


def test_four_actors_one_killed_while_the_ring_evicts(tmp_path):
  path = tmp_path / 'ring'
  replay.MemmapStorage(path, 24, spec={f: replay.Field(v.shape[1:], v.dtype.name)
                                       for f, v in actor_process.episode(0, 0).items()})
  learner = replay.ReplayBuffer(replay.MemmapStorage(path), kind=Windows(size=2), seed=0)
  plan = {0: (6, -1), 1: (6, -1), 2: (6, 2), 3: (6, -1)}   # Actor 2 dies in add()'s write.
  sampled = []

  def sample():
    if learner.num_samples:
      batch, info = learner.sample(8)
      a, e, t = actor_process.decode(batch['observation'][..., 0])
      assert (a[:, 0] == a[:, 1]).all() and (e[:, 0] == e[:, 1]).all()   # One episode.
      np.testing.assert_array_equal(t[:, 1], t[:, 0] + 1)
      np.testing.assert_array_equal(t[:, 0], info.step_ids)
      sampled.extend(zip(a[:, 0].tolist(), e[:, 0].tolist()))

  actors = run_actors(path, plan, tmp_path, sample)
  expected = expected_episodes(plan)
  assert sampled and set(sampled) <= expected
  storage = learner.storage
  groups = stored_episodes(storage)
  ids = list(groups)
  headless = int(not groups[ids[0]]['is_first'][0])  # The oldest, its first steps overwritten.
  whole = {i: check_whole(groups[i], i) for i in ids[headless:]}
  assert set(whole.values()) <= expected
  # The ring holds every episode published since its oldest (in publish order) but the torn one.
  next_id = int(storage.header[storage_lib.NEXT_EPISODE])
  assert ids == [i for i in range(ids[0], next_id) if i != actors.torn[2]]
  assert (2, 2) not in whole.values()
  assert learner.num_episodes() == len(whole)
  lengths = [actor_process.length(*whole[i]) for i in whole]
  assert learner.num_samples == sum(n - 1 for n in lengths)


def test_a_torn_write_stays_unreadable_until_later_writes_cover_it(shared, tmp_path):
  learner = replay.ReplayBuffer(replay.MemmapStorage(shared),
                                sampler=replay.WithoutReplacement(), seed=0)
  run_actors(shared, {1: (2, 1)}, tmp_path)   # Episode 0 (4 steps), then 1 (5) torn.
  header = learner.storage.header
  assert (int(header[storage_lib.INSERTED]), int(header[storage_lib.RESERVED])) == (4, 9)
  assert len(learner) == 4
  actor = replay.Actor(shared)
  assert actor.add_episode({'steps': actor_process.episode(5, 0)}) == 2   # Id 1 was torn.
  assert (int(header[storage_lib.INSERTED]), int(header[storage_lib.RESERVED])) == (8, 9)
  batch, _ = learner.sample(len(learner))
  assert len(learner) == 8 and sorted(set(actor_process.decode(
      batch['observation'][:, 0])[0].tolist())) == [1, 5]
  groups = stored_episodes(learner.storage)
  assert [check_whole(s, i) for i, s in groups.items()] == [(1, 0), (5, 0)]


@pytest.mark.parametrize('steps, message', [
    ([{'is_first': False, 'is_last': True}], 'needs is_first=True'),
    ([{'is_first': True, 'is_last': False}, {'is_first': True, 'is_last': True}],
     'the open episode holds 1 steps and no is_last'),
    ([{'is_first': True}], "needs an 'is_last' field"),
])
def test_actor_add_refuses_a_step_out_of_its_episode(shared, steps, message):
  actor = replay.Actor(shared)
  with pytest.raises(ValueError, match=message):
    for step in steps:
      actor.add(step)


def test_actor_refuses_bad_episodes_and_writers(shared):
  actor = replay.Actor(replay.MemmapStorage(shared))
  actor.add_episode({'steps': actor_process.episode(0, 1)})
  bad = dict(actor_process.episode(0, 1), observation=np.zeros([2, 3]))
  with pytest.raises(ValueError, match="field 'observation' has shape \\[3\\]"):
    actor.add_episode({'steps': bad})
  torn = dict(actor_process.episode(0, 1), is_last=np.array([True, True]))
  with pytest.raises(ValueError, match='is_last=True on step 1 only, got it on steps \\[0, 1\\]'):
    actor.add_episode({'steps': torn})
  with pytest.raises(TypeError, match='a steps dataset'):
    actor.add_episode({'steps': 'not steps'})
  with pytest.raises(ValueError, match='actors share RoundRobin'):
    replay.Actor(shared, writer=replay.TopK('reward'))
  small = replay.Actor(replay.MemoryStorage(3))
  with pytest.raises(ValueError, match='episode of 4 steps does not fit .* capacity 3'):
    small.add_episode({'steps': actor_process.episode(0, 3)})
  assert (actor.published_episodes, len(replay.ReplayBuffer(actor.storage))) == (1, 2)


def _dataset_episodes(tmp_path, seed):
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  from rlds_lite import envlogger, envs, tfds as rlds_tfds  # pylint: disable=g-import-not-at-top
  env = envs.make('catch', seed=0)
  envlogger.record(env, envs.random_policy(env.action_spec()), tmp_path / 'logs', 3,
                   seed=seed, progress=False)
  rlds_tfds.build_from_envlogger(tmp_path / 'logs', name='catch_random',
                                 data_dir=tmp_path / 'tfds')
  dataset = tfds.load('catch_random', data_dir=tmp_path / 'tfds', split='train')
  return [[{k: v.numpy() for k, v in step.items()} for step in episode['steps']]
          for episode in dataset]


def test_record_adds_exactly_what_build_from_envlogger_writes(tmp_path):
  from rlds_lite import envs  # pylint: disable=g-import-not-at-top
  built = _dataset_episodes(tmp_path, seed=5)
  env = envs.make('catch', seed=0)
  buffer = replay.ReplayBuffer(replay.MemoryStorage(100))
  summary = replay.record(env, envs.random_policy(env.action_spec()), buffer, 3, seed=5)
  assert summary.episode_lengths == tuple(len(e) for e in built)
  assert summary.returns == tuple(float(sum(s['reward'] for s in e)) for e in built)
  columns, slot = buffer.storage.columns, 0
  assert sorted(columns) == sorted(built[0][0])
  for e, episode in enumerate(built):
    for t, step in enumerate(episode):
      for field, value in step.items():
        np.testing.assert_array_equal(columns[field][slot].astype(value.dtype), value,
                                      err_msg=f'episode {e} step {t} {field}')
      slot += 1
  assert columns['is_terminal'][:slot].sum() == 3   # Catch ends with discount 0.
  assert len(buffer) == slot and buffer.num_episodes() == 3


def test_record_into_an_actor_and_its_bad_arguments(shared):
  from rlds_lite import envs  # pylint: disable=g-import-not-at-top
  env = envs.make('catch', seed=0)
  actor = replay.Actor(shared)
  summary = replay.record(env, env.expert_policy, actor, 2, seed=0)
  assert summary.returns == (1.0, 1.0) and actor.published_steps == 20
  with pytest.raises(TypeError, match='buffer must be a ReplayBuffer or an Actor'):
    replay.record(env, env.expert_policy, [], 1)
  with pytest.raises(ValueError, match='`num_episodes` must be a positive int'):
    replay.record(env, env.expert_policy, actor, 0)


def test_a_learner_opening_a_full_ring_never_samples_a_headless_episode(shared):
  actor = replay.Actor(replay.MemmapStorage(shared))
  for e in range(1000, 1000 + 1200):   # 4096 slots wrap: the oldest episode left is headless.
    actor.add_episode({'steps': actor_process.episode(0, e % 1000)})
  storage = replay.MemmapStorage(shared)
  oldest = storage.readable()[0]
  assert storage.step_ids[oldest] > 0
  learner = replay.ReplayBuffer(storage, kind=Windows(size=2),
                                sampler=replay.WithoutReplacement())
  groups = stored_episodes(storage)
  lengths = [len(s['reward']) for s in list(groups.values())[1:]]
  assert learner.num_episodes() == len(groups) - 1
  assert learner.num_samples == sum(n - 1 for n in lengths)
  batch, info = learner.sample(learner.num_samples)
  assert storage.episode_ids[oldest] not in info.episode_ids


def test_a_forked_child_waits_for_its_parents_lock(shared, tmp_path):
  storage = replay.MemmapStorage(shared)
  acquired = tmp_path / 'acquired'
  with storage.lock():
    pid = os.fork()
    if pid == 0:   # The child: the parent's storage object, its own lock.
      try:
        with storage.lock():
          acquired.write_text(str(time.monotonic()))
      finally:
        os._exit(0)  # pylint: disable=protected-access
    time.sleep(0.3)
    released = time.monotonic()
    assert not acquired.exists()   # Not while the parent holds it.
  _, status = os.waitpid(pid, 0)
  assert status == 0 and float(acquired.read_text()) >= released


def test_an_actor_killed_at_random_moments_leaves_only_whole_episodes(shared, tmp_path):
  code = ('import itertools, sys, numpy as np\nsys.path.insert(0, %r)\n'
          'import replay_actor_process as p\nfrom rlds_lite import replay\n'
          'episodes = []\n'
          'for e in range(6):  # 100 to 600 steps: most of the time goes to the copy\n'
          '  steps = {k: np.repeat(v, 100, axis=0) for k, v in p.episode(7, e).items()}\n'
          "  steps['is_first'][1:] = False; steps['is_last'][:-1] = False\n"
          "  episodes.append({'steps': steps})\n"
          'actor = replay.Actor(%r)\n'
          'for episode in itertools.cycle(episodes):\n'
          '  actor.add_episode(episode)\n') % (str(SCRIPT.parent), str(shared))
  env = dict(os.environ, PYTHONPATH=str(ROOT))
  storage = replay.MemmapStorage(shared)
  rng = np.random.default_rng(0)
  torn = 0
  for _ in range(4):
    before = int(storage.header[storage_lib.NEXT_EPISODE])
    proc = subprocess.Popen([sys.executable, '-c', code], env=env)
    try:
      deadline = time.monotonic() + TIMEOUT
      while int(storage.header[storage_lib.NEXT_EPISODE]) < before + 2:
        assert proc.poll() is None and time.monotonic() < deadline, 'the actor failed'
        time.sleep(0.002)
      time.sleep(rng.uniform(0.0, 0.05))
      proc.send_signal(signal.SIGKILL)
    finally:
      proc.kill()
      proc.wait(TIMEOUT)
    torn += int(storage.header[storage_lib.RESERVED] > storage.header[storage_lib.INSERTED])
  storage = replay.MemmapStorage(shared)   # Reopened: mapped with the columns the actor made.
  groups = stored_episodes(storage)
  assert len(groups) > 3
  for k, (i, steps) in enumerate(groups.items()):   # Each whole (the oldest: a tail), untorn.
    a, e, t = actor_process.decode(steps['observation'][:, 0])
    assert (a == 7).all() and (e == e[0]).all() and bool(steps['is_first'][0]) == (
        k > 0 or storage.step_ids[storage.readable()[0]] == 0), i
    whole = np.repeat(np.arange(actor_process.length(7, e[0])), 100)
    np.testing.assert_array_equal(t, whole[len(whole) - len(t):])
    assert k == 0 or len(t) == len(whole)
  assert len(storage.readable()) == storage.size > 0
  print(f'{torn} of 4 kills struck inside a write')


def test_an_actor_waits_for_the_learner_as_the_rate_limiter_says(shared):
  limiter = replay.RateLimiter(min_size=2, samples_per_insert=1.0, error_buffer=2.0, timeout=0.2)
  learner = replay.ReplayBuffer(replay.MemmapStorage(shared), rate_limiter=limiter, seed=0)
  actor = replay.Actor(shared, rate_limiter=limiter)
  steps = {'steps': actor_process.episode(0, 1)}   # 2 steps.
  actor.add_episode(steps)
  actor.add_episode(steps)   # inserts * 1 - samples = 4: the top of 2 +- 2.
  with pytest.raises(replay.RateLimitTimeout,
                     match='Actor.add_episode: publishing 2 steps: the learner has not sampled'):
    actor.add_episode(steps)
  learner.sample(2)
  actor.add_episode(steps)
  assert (len(learner), actor.published_episodes) == (6, 3)
