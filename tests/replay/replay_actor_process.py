"""An actor process for test_replay_actors.py: publishes known episodes to a `MemmapStorage` path.

Run as ``python replay_actor_process.py PATH ACTOR EPISODES KILL_AT MARKER``:
actor ``ACTOR`` publishes episodes ``0..EPISODES-1`` (`episode` below; even
actors step by step with ``add``, odd ones with ``add_episode``). At episode
``KILL_AT`` (-1: never) it blocks inside the write, half the slots written,
after writing its episode id to ``MARKER``: the test then kills it with
SIGKILL. At the end it writes ``MARKER.done`` saying whether TensorFlow was
imported.
"""

import os
import sys
import time

import numpy as np

CODE_WIDTH = 4


def code(actor: int, episode: int, t: np.ndarray) -> np.ndarray:
  """The number each step's observation holds: (actor, episode, t) in decimal digits."""
  return actor * 1_000_000 + episode * 1_000 + t


def decode(codes: np.ndarray):
  """(actor, episode, t) of observation codes."""
  codes = np.asarray(codes, np.int64)
  return codes // 1_000_000, (codes // 1_000) % 1_000, codes % 1_000


def length(actor: int, episode: int) -> int:
  """1 to 6 steps: one-step episodes included."""
  return 1 + (3 * actor + episode) % 6


def episode(actor: int, e: int):
  """The steps of actor ``actor``'s episode ``e``: every field says where it comes from."""
  t = np.arange(length(actor, e))
  last = t == len(t) - 1
  return {
      'observation': np.repeat(code(actor, e, t)[:, None], CODE_WIDTH, axis=1).astype(np.int64),
      'action': np.full(len(t), actor, np.int32),
      'reward': t.astype(np.float32),
      'is_first': t == 0,
      'is_last': last,
      'is_terminal': last & (e % 2 == 0),
  }


def _block_mid_write(marker: str) -> None:
  """Makes the next write stop halfway (slots, ids and all), say so, and hang until killed."""
  from rlds_lite.replay import writers  # pylint: disable=g-import-not-at-top
  write = writers._write_slots  # pylint: disable=protected-access

  def torn(storage, slots, values, episode_ids, step_ids):
    half = max(1, len(slots) // 2)
    write(storage, slots[:half], {p: v[:half] for p, v in values.items()},
          episode_ids[:half], step_ids[:half])
    with open(marker + '.tmp', 'w') as f:
      f.write(str(int(episode_ids[0])))
    os.replace(marker + '.tmp', marker)
    time.sleep(120)

  writers._write_slots = torn  # pylint: disable=protected-access


def main(path: str, actor_id: int, num_episodes: int, kill_at: int, marker: str) -> None:
  from rlds_lite import replay  # pylint: disable=g-import-not-at-top
  actor = replay.Actor(path)
  for e in range(num_episodes):
    if e == kill_at:
      _block_mid_write(marker)
    steps = episode(actor_id, e)
    if actor_id % 2:
      actor.add_episode({'steps': steps})
    else:
      for t in range(len(steps['reward'])):
        actor.add({k: v[t] for k, v in steps.items()})
    time.sleep(0.01)   # The learner samples in between.
  with open(marker + '.done', 'w') as f:
    f.write(str('tensorflow' in sys.modules))


if __name__ == '__main__':
  main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
