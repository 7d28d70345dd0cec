"""The browser recorder's player: a dm_env on a fixed clock, an EnvLogger recording per episode.

Each episode is recorded by `rlds_lite.envlogger.record` into ``OUT/pending/episode_N``;
when it ends the player waits for the person's decision, stored as the episode's
metadata (``instruction``, ``success``, ``note``) before EnvLogger closes the files. A kept
episode's recording is then renamed (atomically) to ``OUT/kept/episode_N``, a discarded one
deleted. Killing the process loses at most the episode being played (``pending/``).
"""

import fcntl
import json
import os
import shutil
import threading
import time
from typing import Any, Callable, Dict, List, Optional

import dm_env
import numpy as np

from rlds_lite import envlogger
from rlds_lite.record import frames as frames_lib
from rlds_lite.record import keymaps
from rlds_lite.tfds import publish

__all__ = ['Player', 'check_out_dir', 'kept_episodes', 'lock_out_dir', 'MARKER',
           'KEPT', 'PENDING']

MARKER = 'rlds_lite_record.json'
"""The file marking ``OUT`` as a browser recording (and naming its env)."""
KEPT, PENDING, SUMMARY = 'kept', 'pending', 'summary.json'
_LOCK = '.rlds_lite_record.lock'


class _Restart(Exception):
  """The person reset the episode: it is thrown away."""


class _Stopped(Exception):
  """The server is stopping: the episode being played is lost."""


def check_out_dir(out_dir: str, env_label: str) -> None:
  """Creates ``out_dir`` (marked), or refuses one holding anything but a recording of ``env_label``.

  Example:
    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> check_out_dir(out, 'catch')
    >>> check_out_dir(out, 'reach')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: record: ... holds a recording of 'catch', not of 'reach'; choose another --out.
  """
  marker = os.path.join(out_dir, MARKER)
  if os.path.exists(marker):
    with open(marker, encoding='utf-8') as f:
      recorded = json.load(f).get('env')
    if recorded != env_label:
      raise ValueError(f'record: {out_dir} holds a recording of {recorded!r}, '
                       f'not of {env_label!r}; choose another --out.')
    return
  if os.path.isdir(out_dir) and os.listdir(out_dir):
    raise ValueError(f'record: {out_dir} is not empty and holds no browser '
                     'recording (another dataset?); choose another --out.')
  if os.path.exists(out_dir) and not os.path.isdir(out_dir):
    raise ValueError(f'record: {out_dir} is a file; choose a directory --out.')
  os.makedirs(os.path.join(out_dir, KEPT), exist_ok=True)
  temporary = marker + '.tmp'
  with open(temporary, 'w', encoding='utf-8') as f:
    json.dump({'env': env_label, 'recorder': 'rlds_lite.record.serve'}, f)
  os.replace(temporary, marker)


def lock_out_dir(out_dir: str) -> Any:
  """Holds ``out_dir``'s recorder lock (until the returned file is closed); one recorder at a time.

  Example:
    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> held = lock_out_dir(out)
    >>> lock_out_dir(out)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: record: another rlds-lite record (pid ...) is recording into ...; stop it or choose another --out.
    >>> held.close()
  """
  handle = open(os.path.join(out_dir, _LOCK), 'a+', encoding='utf-8')
  try:
    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
  except OSError:
    handle.seek(0)
    pid = handle.read().strip() or '?'
    handle.close()
    raise ValueError(f'record: another rlds-lite record (pid {pid}) is '
                     f'recording into {out_dir}; stop it or choose another '
                     '--out.') from None
  handle.truncate(0)
  handle.write(str(os.getpid()))
  handle.flush()
  return handle


def kept_episodes(out_dir: str) -> List[Dict[str, Any]]:
  """The summaries of the kept episodes (id, length, return, instruction, ...), by id.

  Example:
    >>> import tempfile
    >>> kept_episodes(tempfile.mkdtemp())
    []
  """
  kept = os.path.join(out_dir, KEPT)
  rows = []
  for name in sorted(os.listdir(kept)) if os.path.isdir(kept) else []:
    path = os.path.join(kept, name, SUMMARY)
    if os.path.exists(path):
      with open(path, encoding='utf-8') as f:
        rows.append(json.load(f))
  return rows


class _Played(dm_env.Environment):
  """The env as the player steps it: every timestep shown; the last one waits for the decision."""

  def __init__(self, env: dm_env.Environment, player: 'Player'):
    self._env = env
    self._player = player

  def reset(self) -> dm_env.TimeStep:
    timestep = self._env.reset()
    self._player.show(timestep)
    return timestep

  def step(self, action) -> dm_env.TimeStep:
    timestep = self._env.step(action)
    self._player.show(timestep)
    if timestep.last():
      self._player.await_decision()
    return timestep

  def observation_spec(self):
    return self._env.observation_spec()

  def action_spec(self):
    return self._env.action_spec()

  def reward_spec(self):
    return self._env.reward_spec()

  def discount_spec(self):
    return self._env.discount_spec()


class Player:
  """Plays a dm_env on a clock for a person, recording each episode (see the module docstring).

  Args:
    env: the dm_env environment.
    out_dir: the recording directory (checked by `check_out_dir` first).
    keymap: a `keymaps.KeyMap` for the env's action spec.
    steps_per_second: the clock.
    render: the env's ``render()`` if it has one (Gymnasium).

  Example:
    >>> import tempfile
    >>> from rlds_lite import envs
    >>> out = tempfile.mkdtemp()
    >>> check_out_dir(out, 'catch')
    >>> player = Player(envs.make('catch', seed=0), out,
    ...                 keymaps.builtin('catch')).start()
    >>> for _ in range(9):
    ...   player.request_step(['ArrowLeft'])
    >>> player.wait_for('deciding')
    >>> player.decide(True, instruction='catch the ball')
    >>> player.wait_for('paused')
    >>> player.stop()
    >>> [(e['length'], e['instruction']) for e in kept_episodes(out)]
    [(10, 'catch the ball')]
  """

  def __init__(self, env: dm_env.Environment, out_dir: str,
               keymap: keymaps.KeyMap, steps_per_second: float = 10.0,
               render: Optional[Callable[[], Any]] = None):
    self.env = env
    self.out_dir = out_dir
    self.keymap = keymap
    self.steps_per_second = float(steps_per_second)
    self._render = render
    self._cond = threading.Condition()
    self._held: List[str] = []
    self._steps: List[List[str]] = []
    self._paused = True
    self._stop = self._restart = False
    self._decision: Optional[Dict[str, Any]] = None
    self.status = 'paused'
    self.error: Optional[str] = None
    self.frames: Optional[frames_lib.FrameSource] = None
    self._frame = (0, None)
    self._episode = {'id': 0, 'steps': 0, 'return': 0.0}
    self._deadline = 0.0
    self._thread: Optional[threading.Thread] = None
    self._lock = lock_out_dir(out_dir)
    shutil.rmtree(os.path.join(out_dir, PENDING), ignore_errors=True)

  # The person's controls (any thread).
  def set_keys(self, held: List[str]) -> None:
    """The keys held now, in the order pressed."""
    with self._cond:
      self._held = [str(k) for k in held][:16]
      self._cond.notify_all()

  def request_step(self, held: List[str]) -> None:
    """One step with ``held`` (works paused: frame by frame)."""
    with self._cond:
      self._steps.append([str(k) for k in held][:16])
      self._cond.notify_all()

  def set_paused(self, paused: bool) -> None:
    with self._cond:
      self._paused = bool(paused)
      self._deadline = time.monotonic()
      self._update_status()
      self._cond.notify_all()

  def set_speed(self, steps_per_second: float) -> None:
    if not 0.5 <= float(steps_per_second) <= 240:
      raise ValueError(f'speed must be 0.5..240 steps/s, got {steps_per_second}.')
    with self._cond:
      self.steps_per_second = float(steps_per_second)
      self._cond.notify_all()

  def reset(self) -> None:
    """Throws the episode being played away and starts another."""
    with self._cond:
      if self.status == 'deciding':
        raise ValueError('record: the episode has ended: keep or discard it.')
      self._restart = True
      self._steps.clear()
      self._cond.notify_all()

  def decide(self, keep: bool, instruction: str = '', success: bool = False,
             note: str = '') -> None:
    """Keeps (with its metadata) or discards the episode that just ended."""
    with self._cond:
      if self.status != 'deciding':
        raise ValueError('record: no episode is waiting for keep or discard.')
      self._decision = {'keep': bool(keep), 'instruction': str(instruction),
                        'success': bool(success), 'note': str(note)}
      self._cond.notify_all()

  def state(self) -> Dict[str, Any]:
    """What the page shows (JSON)."""
    with self._cond:
      return {'status': self.status, 'error': self.error,
              'paused': self._paused, 'speed': self.steps_per_second,
              'held': list(self._held),
              'episode': dict(self._episode), 'frame': self._frame[0],
              'frame_kind': self.frames.kind if self.frames else None}

  def frame(self):
    """``(version, [H, W, 3] uint8 frame)`` of the last timestep."""
    with self._cond:
      version, timestep = self._frame
    if timestep is None:
      return version, None
    return version, self.frames.frame(timestep.observation)

  def wait_frame(self, after: int, timeout: float = 1.0) -> int:
    """Blocks until a frame newer than ``after`` is shown (or ``timeout``); its version."""
    deadline = time.monotonic() + timeout
    with self._cond:
      while self._frame[0] <= after and not self._stop:
        left = deadline - time.monotonic()
        if left <= 0:
          break
        self._cond.wait(left)
      return self._frame[0]

  def wait_for(self, status: str, timeout: float = 30.0) -> None:
    """Blocks until the player's status is ``status`` (tests, scripts)."""
    deadline = time.monotonic() + timeout
    with self._cond:
      while self.status != status:
        if self.error or not self._cond.wait(max(0.0, deadline - time.monotonic())):
          raise TimeoutError(f'record: still {self.status!r} (error: '
                             f'{self.error}), not {status!r}.')

  # The player's side (its thread).
  def _update_status(self) -> None:
    if self.status not in ('deciding', 'stopped', 'failed'):
      self.status = 'paused' if self._paused else 'playing'

  def show(self, timestep: dm_env.TimeStep) -> None:
    with self._cond:
      if self.frames is None:
        self.frames = frames_lib.FrameSource(timestep.observation, self._render)
      self._frame = (self._frame[0] + 1, timestep)
      self._cond.notify_all()
      if not timestep.first():
        self._episode['steps'] += 1
        reward = timestep.reward
        self._episode['return'] += 0.0 if reward is None else float(np.sum(reward))

  def _next_action(self, unused_timestep: dm_env.TimeStep) -> Any:
    with self._cond:
      while True:
        if self._stop:
          raise _Stopped()
        if self._restart:
          self._restart = False
          raise _Restart()
        if self._steps:
          return self.keymap.action(self._steps.pop(0))
        now = time.monotonic()
        if not self._paused and now >= self._deadline:
          period = 1.0 / self.steps_per_second
          self._deadline = max(self._deadline + period, now - period)
          return self.keymap.action(self._held)
        self._cond.wait(None if self._paused else self._deadline - now)

  def await_decision(self) -> None:
    with self._cond:
      self.status = 'deciding'
      self._decision = None
      self._steps.clear()  # Steps asked for after the end are not the next episode's.
      self._cond.notify_all()
      while self._decision is None:
        if self._stop:
          raise _Stopped()
        self._cond.wait()

  def _episode_metadata(self, timestep, unused_action, unused_env):
    decision = (self._decision if timestep.last() and self._decision
                else {'instruction': '', 'success': False, 'note': ''})
    return {'episode_id': np.int64(self._episode['id']),
            'instruction': decision['instruction'],
            'success': np.bool_(decision['success']),
            'note': decision['note']}

  def _next_id(self) -> int:
    ids = [row['episode_id'] for row in kept_episodes(self.out_dir)]
    return max(ids) + 1 if ids else 0

  def _play_one(self) -> None:
    """Records one episode into ``pending/`` and keeps or deletes it."""
    episode_id = self._next_id()
    name = f'episode_{episode_id:06d}'
    pending = os.path.join(self.out_dir, PENDING, name)
    shutil.rmtree(pending, ignore_errors=True)
    os.makedirs(pending)
    with self._cond:
      self._episode = {'id': episode_id, 'steps': 0, 'return': 0.0}
    try:
      envlogger.record(_Played(self.env, self), self._next_action, pending, 1,
                       episode_metadata_fn=self._episode_metadata,
                       progress=False)
    except (_Restart, _Stopped):
      shutil.rmtree(pending, ignore_errors=True)
      raise
    with self._cond:
      decision, episode = self._decision, dict(self._episode)
      self.status = 'saving'
    if decision['keep']:
      summary = {'episode_id': episode_id, 'length': episode['steps'] + 1,
                 'return': episode['return'], **decision}
      del summary['keep']
      with open(os.path.join(pending, SUMMARY), 'w', encoding='utf-8') as f:
        json.dump(summary, f)
        f.flush()
        os.fsync(f.fileno())
      os.rename(pending, os.path.join(self.out_dir, KEPT, name))
      publish.fsync_dir(os.path.join(self.out_dir, KEPT))
    else:
      shutil.rmtree(pending)
    with self._cond:
      self.status = 'playing'
      self._update_status()
      self._cond.notify_all()

  def _run(self) -> None:
    try:
      while True:
        try:
          self._play_one()
        except _Restart:
          continue
    except _Stopped:
      pass
    except Exception as e:  # pylint: disable=broad-except
      with self._cond:
        self.error = f'{type(e).__name__}: {e}'
        self.status = 'failed'
        self._cond.notify_all()
      return
    with self._cond:
      self.status = 'stopped'
      self._cond.notify_all()

  def start(self) -> 'Player':
    """Starts playing (paused) in a daemon thread; returns self."""
    self._thread = threading.Thread(target=self._run, daemon=True,
                                    name='rlds-lite-record-player')
    self._thread.start()
    return self

  def stop(self) -> None:
    """Stops: the episode being played (not yet kept) is lost."""
    with self._cond:
      self._stop = True
      self._cond.notify_all()
    if self._thread is not None:
      self._thread.join()
    self._lock.close()

