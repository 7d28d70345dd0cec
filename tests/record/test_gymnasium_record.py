"""rlds_lite.record against Minari's own DataCollector: same env, seeds and policy, same data."""

import itertools
import os
import signal
import subprocess
import sys

import gymnasium
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
import numpy as np
import pytest

from rlds_lite.convert import minari as minari_lib
from rlds_lite.convert import rlds_dirs
from rlds_lite import record as record_lib

minari = pytest.importorskip('minari')
# Minari's advice on metadata, and its checks of the references' actions.
pytestmark = pytest.mark.filterwarnings('ignore::UserWarning:minari')

_RUNS = itertools.count()
STEP_FIELDS = ('observation', 'action', 'reward', 'discount', 'is_first',
               'is_last', 'is_terminal', 'infos')


class Walk(gymnasium.Env):
  """``o_t = [t, x]``; reset options set the length and whether the end is terminal."""

  observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float32)
  action_space = spaces.Discrete(3)

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    options = options or {}
    self._length = options.get('length', 3)
    self._terminal = options.get('terminal', True)
    self._t, self._x = 0, float(self.np_random.uniform(-1, 1))
    return self._obs(), self._info()

  def _obs(self):
    return np.array([self._t, self._x], np.float32)

  def _info(self):
    return {'t': self._t, 'stats': {'x2': self._x * 2}}

  def step(self, action):
    self._t += 1
    self._x += int(action) - 1
    end = self._t >= self._length
    return (self._obs(), 0.5 * int(action), end and self._terminal,
            end and not self._terminal, self._info())


class _Sampled(gymnasium.Env):
  """Observations drawn from the observation space, seeded by reset; ``_t`` counts the actions."""

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    self.observation_space.seed(seed)
    self._t = 0
    return self.observation_space.sample(), {}


class Composite(_Sampled):
  """Every space kind: a Dict observation holding a Tuple, a Tuple action."""

  observation_space = spaces.Dict({
      'pos': spaces.Box(-1, 1, (2,), np.float64),
      'speed': spaces.Box(0, 1, (1,), np.float32),  # (1,) is not squeezed.
      'grid': spaces.MultiBinary(3),
      'mode': spaces.Discrete(4),
      'pair': spaces.Tuple((spaces.Discrete(2), spaces.MultiDiscrete([3, 5]))),
  })
  action_space = spaces.Tuple((spaces.Box(-1, 1, (2,), np.float32),
                               spaces.Discrete(3)))

  def step(self, action):
    self._t += 1
    return (self.observation_space.sample(), float(action[1]), self._t >= 4,
            False, {})


def walk_policy(obs):
  return int(obs[1] > 0) + 1


def cartpole_policy(obs):
  return int(obs[2] > 0)


def composite_policy(obs):
  return (np.array([obs['pos'][0], 0.5], np.float32), int(obs['mode']) % 3)


@pytest.fixture(autouse=True)
def minari_root(tmp_path, monkeypatch):
  root = tmp_path / 'minari'
  root.mkdir()
  monkeypatch.setenv('MINARI_DATASETS_PATH', str(root))
  return root


def minari_episodes(env, policy, resets, root, record_infos=True):
  """Minari's DataCollector run through ``resets`` [(seed, options)], read back as RLDS."""
  collector = minari.DataCollector(env, record_infos=record_infos)
  for seed, options in resets:
    if seed is None:
      options = {**(options or {}), 'minari_autoseed': False}
    obs, _ = collector.reset(seed=seed, options=options)
    done = False
    while not done:
      obs, _, terminated, truncated, _ = collector.step(policy(obs))
      done = terminated or truncated
  name = f'ref/run{next(_RUNS)}-v0'
  collector.create_dataset(name)
  collector.close()
  return list(minari_lib.from_minari(os.path.join(root, name)))


def ours(path):
  return list(rlds_dirs.from_rlds(path))


def assert_same_steps(mine, reference):
  assert len(mine) == len(reference)
  for a, b in zip(mine, reference):
    for key in STEP_FIELDS:
      if _empty(b['steps'].get(key)):
        assert _empty(a['steps'].get(key)), key
        continue
      flat_a = dict(_flat(a['steps'][key], key))
      flat_b = dict(_flat(b['steps'][key], key))
      assert sorted(flat_a) == sorted(flat_b)
      for path, value in flat_a.items():
        np.testing.assert_array_equal(value, flat_b[path], err_msg=path)
        assert value.dtype == flat_b[path].dtype, path


def _empty(value):
  return value is None or (isinstance(value, dict) and not value)


def _flat(value, path):
  if isinstance(value, dict):
    for key, sub in value.items():
      yield from _flat(sub, f'{path}/{key}')
  else:
    yield path, np.asarray(value)


def test_terminated_cartpole_matches_minari(tmp_path, minari_root):
  env = gymnasium.make('CartPole-v1')
  summary = record_lib.record(env, cartpole_policy, tmp_path / 'cartpole',
                              num_episodes=2, seed=5)
  mine = ours(tmp_path / 'cartpole')
  reference = minari_episodes(gymnasium.make('CartPole-v1'), cartpole_policy,
                              [(5, None), (6, None)], minari_root)
  assert_same_steps(mine, reference)
  assert [int(e['seed']) for e in mine] == [5, 6]
  assert [int(e['episode_id']) for e in mine] == [0, 1]
  for episode, length in zip(mine, summary.episode_lengths):
    steps = episode['steps']
    assert len(steps['reward']) == length > 2
    assert steps['is_terminal'].tolist() == [False] * (length - 1) + [True]
    assert steps['discount'][-2:].tolist() == [0.0, 0.0]
    assert steps['reward'][-1] == 0 and steps['action'][-1] == 0
  assert summary.returns == tuple(float(n - 1) for n in summary.episode_lengths)


def test_truncated_and_one_step_episodes_with_infos_and_options(
    tmp_path, minari_root):
  resets = [(3, {'length': 3, 'terminal': False}),  # truncated
            (4, {'length': 1, 'terminal': True})]  # one step, terminated
  out = tmp_path / 'walk'
  with record_lib.DataCollector(Walk(), out, record_infos=True) as env:
    for seed, options in resets:
      obs, _ = env.reset(seed=seed, options=options)
      done = False
      while not done:
        obs, _, terminated, truncated, _ = env.step(walk_policy(obs))
        done = terminated or truncated
  mine = ours(out)
  assert_same_steps(mine, minari_episodes(Walk(), walk_policy, resets,
                                          minari_root))
  truncated, one_step = (e['steps'] for e in mine)
  assert truncated['is_last'].tolist() == [False, False, False, True]
  assert truncated['is_terminal'].tolist() == [False] * 4
  assert truncated['discount'].tolist() == [1.0, 1.0, 1.0, 0.0]
  assert truncated['observation'][:, 0].tolist() == [0, 1, 2, 3]  # o_T kept.
  assert truncated['infos']['t'].tolist() == [0, 1, 2, 3]
  assert truncated['infos']['stats']['x2'].dtype == np.float64
  assert one_step['is_terminal'].tolist() == [False, True]
  assert one_step['discount'].tolist() == [0.0, 0.0]
  assert [e['options'] for e in mine] == [
      b'{"length": 3, "terminal": false}', b'{"length": 1, "terminal": true}']


def test_reset_mid_episode_writes_it_truncated_with_a_drawn_seed(tmp_path):
  out = tmp_path / 'walk'
  with record_lib.DataCollector(Walk(), out) as env:
    env.reset(options={'length': 10})
    env.step(0)
    env.step(2)
    env.reset()  # The open episode (2 actions) is written truncated.
    env.reset()  # An episode of no action is dropped.
    env.step(1)
  first, second = ours(out)  # close() wrote the last one, truncated.
  assert first['steps']['is_last'].tolist() == [False, False, True]
  assert not first['steps']['is_terminal'].any()
  assert first['steps']['action'].tolist() == [0, 2, 0]
  assert len(second['steps']['reward']) == 2
  assert 0 <= int(first['seed']) < 2 ** 63 and first['seed'] != second['seed']
  env = Walk()
  obs, _ = env.reset(seed=int(first['seed']), options={'length': 10})
  assert obs.tolist() == first['steps']['observation'][0].tolist()


@pytest.mark.parametrize('mode', [AutoresetMode.NEXT_STEP,
                                  AutoresetMode.SAME_STEP,
                                  AutoresetMode.DISABLED])
def test_vector_env_episodes_ending_at_different_steps(tmp_path, minari_root,
                                                      mode):
  num_envs = 3
  env = gymnasium.vector.SyncVectorEnv(
      [lambda: gymnasium.make('CartPole-v1')] * num_envs, autoreset_mode=mode)
  if mode == AutoresetMode.NEXT_STEP:  # A wrapped vector env seeds the same.
    env = gymnasium.wrappers.vector.RecordEpisodeStatistics(env)
  policy = lambda obs: (obs[:, 2] > 0).astype(np.int64)
  summary = record_lib.record(env, policy, tmp_path / 'vec', num_episodes=5,
                              seed=10)
  mine = ours(tmp_path / 'vec')
  assert len(mine) == 5 and len(set(summary.episode_lengths)) > 1
  assert sorted(int(e['episode_id']) for e in mine) == list(range(5))
  # Written as they end: not in the order they started.
  assert [int(e['episode_id']) for e in mine] != list(range(5))
  for index in range(num_envs):
    episodes = sorted((e for e in mine if e['env_index'] == index),
                      key=lambda e: int(e['episode_id']))
    seeds = [int(e['seed']) for e in episodes]
    assert seeds[0] == 10 + index
    if mode != AutoresetMode.DISABLED:
      assert seeds[1:] == [record_lib.NO_SEED] * (len(seeds) - 1)
    resets = [(None if s == record_lib.NO_SEED else s, None) for s in seeds]
    reference = minari_episodes(gymnasium.make('CartPole-v1'),
                                cartpole_policy, resets, minari_root)
    assert_same_steps(episodes, reference)


def test_every_space_kind_matches_minari(tmp_path, minari_root):
  record_lib.record(Composite(), composite_policy, tmp_path / 'composite',
                    num_episodes=2, seed=0)
  mine = ours(tmp_path / 'composite')
  reference = minari_episodes(Composite(), composite_policy,
                              [(0, None), (1, None)], minari_root,
                              record_infos=False)
  assert_same_steps(mine, reference)
  steps = mine[0]['steps']
  assert {k: v.dtype for k, v in steps['observation'].items()
          if k != 'pair'} == {'pos': np.float64, 'grid': np.int8,
                              'mode': np.int64, 'speed': np.float32}
  assert steps['observation']['pair']['_index_1'].shape == (5, 2)
  assert steps['observation']['speed'].shape == (5, 1)
  assert steps['action']['_index_0'].shape == (5, 2)


def test_a_crash_loses_only_the_episodes_since_the_last_publish(tmp_path):
  calls = []

  def failing(obs):
    calls.append(obs)
    if len(calls) == 7:  # In the fourth episode (two actions each).
      raise RuntimeError('policy crashed')
    return 1

  out = tmp_path / 'walk'
  with pytest.raises(RuntimeError, match='policy crashed'):
    record_lib.record(Walk(), failing, out, num_episodes=5, seed=0,
                      reset_options={'length': 2}, publish_every=2)
  assert [int(e['episode_id']) for e in ours(out)] == [0, 1]


def test_bad_out_dirs_and_spaces_say_so_in_one_line(tmp_path, minari_root):
  env = Walk()
  minari_lib.to_minari(ours_walk(tmp_path), str(tmp_path), 'walk-v0')
  cases = {
      tmp_path / 'walk-v0': 'holds another dataset, a Minari dataset',
      tmp_path / 'walk': 'already holds a dataset (1.0.0)',
  }
  (tmp_path / 'notes').mkdir()
  (tmp_path / 'notes' / 'todo.txt').write_text('x')
  cases[tmp_path / 'notes'] = "holds files that are not this dataset's"
  for out, message in cases.items():
    with pytest.raises(FileExistsError) as error:
      record_lib.record(env, walk_policy, out, num_episodes=1)
    assert message in str(error.value) and '\n' not in str(error.value)
  graph = gymnasium.make('CartPole-v1')
  graph.observation_space = spaces.Sequence(spaces.Discrete(2))
  with pytest.raises(record_lib.UnsupportedSpaceError,
                     match=r'^record: observation_space is a Sequence space, '
                     'which has no fixed-shape TFDS feature'):
    record_lib.record(graph, None, tmp_path / 'seq', num_episodes=1)
  with pytest.raises(TypeError, match='not a gymnasium.Env'):
    record_lib.record(object(), None, tmp_path / 'x', num_episodes=1)
  with pytest.raises(TypeError, match=r'^DataCollector wraps one env; record '
                     'a vector env with rlds_lite.record.record'):
    record_lib.DataCollector(gymnasium.make_vec('CartPole-v1', 2),
                             tmp_path / 'y')
  with pytest.raises(ValueError, match=r'^DataCollector: step\(\) without an '
                     r'episode: call reset\(\) first'):
    record_lib.DataCollector(Walk(), tmp_path / 'z').step(0)
  with pytest.raises(ValueError, match=r'^record: num_episodes must be a '
                     'positive int, got 0'):
    record_lib.record(env, walk_policy, tmp_path / 'w', num_episodes=0)


def ours_walk(tmp_path):
  record_lib.record(Walk(), walk_policy, tmp_path / 'walk', num_episodes=1,
                    seed=0)
  return ours(tmp_path / 'walk')


def test_append_and_infos_that_change_shape(tmp_path):
  out = tmp_path / 'walk'
  record_lib.record(Walk(), walk_policy, out, num_episodes=1, seed=0)
  record_lib.record(Walk(), walk_policy, out, num_episodes=2, seed=1,
                    if_exists='append')
  assert [int(e['seed']) for e in ours(out)] == [0, 1, 2]
  with pytest.raises(ValueError, match=r'^record: cannot append to .*: its '
                     "features differ from this environment's"):
    record_lib.record(Walk(), walk_policy, out, num_episodes=1,
                      if_exists='append', record_infos=True)

  class Changing(Walk):
    def _info(self):
      return {'t': np.zeros(self._t)}

  with pytest.raises(ValueError, match=r"^record: step 1: info entry 't' is "
                     r'float64\[1\], but float64\[0\] in the first info\.$'):
    record_lib.record(Changing(), walk_policy, tmp_path / 'changing',
                      num_episodes=1, record_infos=['t'])
  with pytest.raises(ValueError, match=r"^record: the reset info: info has "
                     r"no 'z' \(it has \['stats', 't'\]\)"):
    record_lib.record(Walk(), walk_policy, tmp_path / 'missing',
                      num_episodes=1, record_infos=['z'])
  assert not os.path.exists(tmp_path / 'changing' / '1.0.0')


class Frames(_Sampled):
  """Camera frames and text; truncated after two actions."""

  observation_space = spaces.Dict({
      'pixels': spaces.Box(0, 255, (32, 32, 3), np.uint8),
      'text': spaces.Text(5)})
  action_space = spaces.Box(-1, 1, (), np.float32)

  def step(self, action):
    self._t += 1
    return self.observation_space.sample(), float(action), False, self._t >= 2, {}


def test_frames_are_lossless_text_is_bytes_and_a_batched_vector_env_records(
    tmp_path):
  import rlds_lite  # pylint: disable=g-import-not-at-top
  record_lib.record(Frames(), lambda obs: 0.5, tmp_path / 'frames',
                    num_episodes=1, seed=3)
  source = rlds_lite.open(tmp_path / 'frames')
  observation = source.features['steps'].feature['observation']
  assert type(observation['pixels']).__name__ == 'Image'
  env = Frames()
  expected = [env.reset(seed=3)[0]] + [env.step(0.5)[0] for _ in range(2)]
  steps = ours(tmp_path / 'frames')[0]['steps']
  np.testing.assert_array_equal(steps['observation']['pixels'],
                                np.stack([o['pixels'] for o in expected]))
  assert steps['observation']['text'].tolist() == [
      o['text'].encode() for o in expected]
  assert steps['action'].tolist() == [0.5, 0.5, 0.0]
  # CartPole's own batched vector env takes one seed for all sub-envs.
  batched = gymnasium.make_vec('CartPole-v1', 2)
  record_lib.record(batched, None, tmp_path / 'batched', num_episodes=3,
                    seed=4)
  episodes = sorted(ours(tmp_path / 'batched'),
                    key=lambda e: int(e['episode_id']))
  assert [(int(e['env_index']), int(e['seed'])) for e in episodes][:2] == [
      (0, 4), (1, 4)]
  assert [int(e['seed']) for e in episodes[2:]] == [record_lib.NO_SEED]


KILLED_CHILD = r'''
import os, signal, sys
import gymnasium
from rlds_lite import record
out, kill_at = sys.argv[1], int(sys.argv[2])
actions = []
def policy(obs):
  actions.append(obs)
  if len(actions) == kill_at:
    os.kill(os.getpid(), signal.SIGKILL)
  return int(obs[2] > 0)
record.record(gymnasium.make('CartPole-v1'), policy, out, num_episodes=6,
              seed=7, publish_every=2)
'''


def test_sigkill_mid_episode_keeps_every_published_episode(tmp_path):
  reference = tmp_path / 'reference'
  summary = record_lib.record(gymnasium.make('CartPole-v1'), cartpole_policy,
                              reference, num_episodes=5, seed=7)
  # Killed at the third action of episode 4: episodes 0-3 were published.
  kill_at = sum(n - 1 for n in summary.episode_lengths[:4]) + 3
  out = tmp_path / 'killed'
  child = subprocess.run(
      [sys.executable, '-c', KILLED_CHILD, str(out), str(kill_at)],
      env={**os.environ, 'PYTHONPATH': os.pathsep.join(sys.path)},
      capture_output=True, timeout=300, check=False)
  assert child.returncode == -signal.SIGKILL, child.stderr.decode()[-2000:]
  assert_same_steps(ours(out), ours(reference)[:4])
  assert [int(e['seed']) for e in ours(out)] == [7, 8, 9, 10]
