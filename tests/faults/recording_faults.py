"""Recorders killed for real: the child programs and what every reader finds.

`run_child` starts a recorder in a fresh Python process (rlds_lite's
`record`, or a bare EnvLogger without TensorFlow), which SIGKILLs itself at a
chosen moment (an action, a rename) or is killed by the test at a random
one. `read_all_ways` then reads the recording with every reader: EnvLogger's
own, `read_episodes`, the fast decoder behind `build_from_envlogger`, and
`validate_recording`, and checks that they agree.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import warnings
from typing import Any, Dict, List, Sequence

import numpy as np

from rlds_lite import envlogger as rlds_envlogger
from rlds_lite import envs
from rlds_lite.tfds import envlogger_decode
from rlds_lite.tfds import envlogger_episodes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
CATCH = {'rows': 4}
"""Catch with 4 rows: every episode is a reset and 3 actions (4 timesteps)."""
ACTIONS_PER_EPISODE = 3

# `record` into args['data_dir'], SIGKILLing itself at action
# args['kill_at_action'] (1-based; None: never) or after args['kill_at_rename']
# renames of the overwrite swap; prints the episode index at each reset seen
# by the policy (all episodes before it are then on disk).
_RECORD_CHILD = '''
import json, os, signal, sys, time
sys.path.insert(0, ROOT)
args = json.loads(sys.argv[1])
from rlds_lite import envlogger, envs
from rlds_lite.envlogger import staging
env = envs.make('catch', **args['catch'])
actions = [0]
episodes = [0]
def policy(timestep):
  if timestep.first():
    print(episodes[0], flush=True)
    episodes[0] += 1
  actions[0] += 1
  time.sleep(args.get('action_sleep', 0))
  if actions[0] == args.get('kill_at_action'):
    os.kill(os.getpid(), signal.SIGKILL)
  return env.expert_policy(timestep)
if args.get('kill_at_rename'):
  renames = [0]
  real_replace = os.replace
  def replace(src, dst):
    real_replace(src, dst)
    renames[0] += 1
    if renames[0] == args['kill_at_rename']:
      os.kill(os.getpid(), signal.SIGKILL)
  staging.os.replace = replace
envlogger.record(env, policy, args['data_dir'], args['episodes'],
                 seed=args['seed'], progress=False,
                 if_exists=args.get('if_exists', 'error'))
print('done', flush=True)
'''

# A bare EnvLogger 1.2 (no TensorFlow, no rlds_lite: starts in ~0.5 s) over
# a counting environment, max_episodes_per_file episodes per writer folder,
# flushing at every reset ('resets') or as EnvLogger does by default
# ('never': as EnvLogger's default, which flushes at random, 1 in 5000
# timesteps, in a short run); SIGKILLs itself at timestep
# args['kill_at_step'] (0-based, counted over the whole run).
_PLAIN_CHILD = '''
import json, os, signal, sys
import numpy as np
np.unicode_, np.string_ = np.str_, np.bytes_  # EnvLogger 1.2 on NumPy 2.
import dm_env
from dm_env import specs
import envlogger
args = json.loads(sys.argv[1])

class Counter(dm_env.Environment):
  def reset(self):
    self.t = 0
    return dm_env.restart(np.float32(0))
  def step(self, action):
    self.t += 1
    if self.t == 3:
      return dm_env.termination(np.float64(1), np.float32(self.t))
    return dm_env.transition(np.float64(0), np.float32(self.t))
  def observation_spec(self):
    return specs.Array((), np.float32)
  def action_spec(self):
    return specs.DiscreteArray(2)

if args['flush'] == 'resets':
  scheduler = lambda data: data.timestep.first()
else:
  scheduler = lambda data: False
steps = [0]
def tick():
  if steps[0] == args['kill_at_step']:
    os.kill(os.getpid(), signal.SIGKILL)
  steps[0] += 1
with envlogger.EnvLogger(
    Counter(), data_directory=args['data_dir'],
    max_episodes_per_file=args['max_episodes_per_file'],
    flush_scheduler=scheduler, episode_fn=lambda t, a, e: {'n': steps[0]}) as env:
  while True:
    tick()
    timestep = env.reset()
    while not timestep.last():
      tick()
      timestep = env.step(np.int64(1))
'''


def _child_env() -> Dict[str, str]:
  env = dict(os.environ)
  env['TF_CPP_MIN_LOG_LEVEL'] = '3'
  env.pop('PYTHONPATH', None)
  return env


def start_child(kind: str, args: Dict[str, Any]) -> subprocess.Popen:
  """Starts the ``'record'`` or ``'plain'`` child with ``args``."""
  code = {'record': _RECORD_CHILD, 'plain': _PLAIN_CHILD}[kind]
  code = code.replace('ROOT', repr(ROOT))
  return subprocess.Popen(
      [sys.executable, '-c', textwrap.dedent(code), json.dumps(args)],
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_child_env(),
      cwd=ROOT, text=True)


def run_child(kind: str, args: Dict[str, Any], killed: bool = True,
              timeout: float = 120) -> List[str]:
  """Runs a child to its end; returns its stdout lines.

  Asserts that it was SIGKILLed (``killed``) or exited normally.
  """
  child = start_child(kind, args)
  out, err = child.communicate(timeout=timeout)
  expected = -signal.SIGKILL if killed else 0
  assert child.returncode == expected, (child.returncode, err[-3000:])
  return out.split()


def kill_child(child: subprocess.Popen) -> List[str]:
  """SIGKILLs a running child; returns its stdout lines."""
  child.kill()
  out, _ = child.communicate(timeout=60)
  assert child.returncode == -signal.SIGKILL, child.returncode
  return out.split()


def recovered_messages(caught: Sequence[warnings.WarningMessage]) -> List[str]:
  return [str(w.message) for w in caught
          if issubclass(w.category, rlds_envlogger.RecoveredRecordingWarning)]


def envlogger_reader_lengths(data_dir: str) -> List[int]:
  """Episode lengths as EnvLogger's own reader reads the recording."""
  envlogger = rlds_envlogger.import_envlogger()
  with envlogger.Reader(data_dir) as reader:
    return [len(episode) for episode in reader.episodes]


def read_all_ways(data_dir: str) -> Dict[str, Any]:
  """Reads a recording with every reader; asserts that they agree.

  Returns:
    ``{'episodes': read_episodes' list, 'messages': the
    RecoveredRecordingWarning messages of one read_episodes call,
    'envlogger_lengths': EnvLogger's own reader's episode lengths}``.
  """
  data_dir = os.fspath(data_dir)
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    episodes = list(rlds_envlogger.read_episodes(data_dir))
  messages = recovered_messages(caught)
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', rlds_envlogger.RecoveredRecordingWarning)
    folders = rlds_envlogger.validate_recording(data_dir)
    specs = envlogger_episodes.recording_specs(data_dir)
    decoded = [e for _, e in
               envlogger_decode.read_logged_episodes(data_dir, specs)]
  assert_same_episodes(decoded, episodes)
  lengths = envlogger_reader_lengths(data_dir)
  ours = [len(e['step_type']) for e in episodes]
  # EnvLogger's reader lists the same episodes; the last one of a folder
  # whose writer was killed also holds the unfinished timesteps after it.
  assert len(lengths) == len(ours), (lengths, ours)
  assert all(a >= b for a, b in zip(lengths, ours)), (lengths, ours)
  assert sum(a != b for a, b in zip(lengths, ours)) <= len(folders)
  return {'episodes': episodes, 'messages': messages,
          'envlogger_lengths': lengths}


def assert_same_episodes(actual: List[Dict[str, Any]],
                         expected: List[Dict[str, Any]]) -> None:
  """Exact equality (values and dtypes) of read_episodes-style episodes."""
  assert len(actual) == len(expected), (len(actual), len(expected))
  for i, (a, e) in enumerate(zip(actual, expected)):
    assert _equal(a, e), f'episode {i} differs'


def _equal(a: Any, b: Any) -> bool:
  if isinstance(a, dict):
    return (isinstance(b, dict) and set(a) == set(b) and
            all(_equal(a[k], b[k]) for k in a))
  if isinstance(a, (tuple, list)):
    return (isinstance(b, (tuple, list)) and len(a) == len(b) and
            all(_equal(x, y) for x, y in zip(a, b)))
  a, b = np.asarray(a), np.asarray(b)
  return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def reference(data_dir: str, num_episodes: int, seed: int,
              first_id: int = 0) -> List[Dict[str, Any]]:
  """The episodes an unkilled `record` of Catch (`CATCH`) gives."""
  env = envs.make('catch', **CATCH)
  rlds_envlogger.record(env, env.expert_policy, data_dir, num_episodes,
                        seed=seed, progress=False)
  episodes = list(rlds_envlogger.read_episodes(data_dir))
  for i, episode in enumerate(episodes):
    episode['episode_metadata'] = {'episode_id': np.int64(first_id + i)}
  return episodes


def episode_ids(episodes: Sequence[Dict[str, Any]]) -> List[int]:
  return [int(e['episode_metadata']['episode_id']) for e in episodes]


def tail_message(folder: str, timesteps: int, episodes: int = 1) -> str:
  """The warning for the unfinished episode(s) at the end of a folder."""
  return (f'EnvLogger writer folder {folder} ends with {timesteps} '
          f'timestep(s) of {episodes} episode(s) after the last episode its '
          'index lists (its writer was killed, or is still recording, before '
          'it listed them): they were dropped.')


def writer_folders(data_dir: str) -> List[str]:
  """Every writer folder, the ones holding nothing included."""
  return [os.path.join(data_dir, n) for n in sorted(os.listdir(data_dir))
          if not n.startswith('.') and
          os.path.isdir(os.path.join(data_dir, n))]


def file_sizes(folder: str) -> Dict[str, int]:
  return {name: os.path.getsize(os.path.join(folder, name))
          for name in rlds_envlogger.SHARD_FILES}


def cut_files(folder: str, sizes: Dict[str, int]) -> None:
  """Truncates each file of a writer folder to ``sizes[name]`` bytes."""
  for name, size in sizes.items():
    os.truncate(os.path.join(folder, name), size)
