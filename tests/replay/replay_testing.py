"""Episodes with known contents and a NumPy reference of what a buffer must sample."""

from typing import Dict, List

import numpy as np

from rlds_lite import replay

Steps = Dict[str, np.ndarray]


def episode(length: int, terminal: bool = True, base: int = 0) -> Steps:
  """Steps whose observation is ``base + t`` (float32 [T, 2]) and action ``base + t``."""
  t = np.arange(length)
  return {
      'observation': np.stack([base + t, -(base + t)], axis=1).astype(np.float32),
      'action': (base + t).astype(np.int64),
      'reward': (1.0 + 0.5 * t).astype(np.float32),
      'discount': np.ones([length], np.float32),
      'is_first': t == 0,
      'is_last': t == length - 1,
      'is_terminal': (t == length - 1) & terminal,
  }


def buffer_of(episodes: List[Steps], capacity: int = 64, **kwargs) -> replay.ReplayBuffer:
  buffer = replay.ReplayBuffer(replay.MemoryStorage(capacity), **kwargs)
  for steps in episodes:
    buffer.add_episode({'steps': steps})
  return buffer


def one_epoch(buffer: replay.ReplayBuffer):
  """Every sample the buffer holds, once: (batch, info) of a `WithoutReplacement` epoch."""
  assert isinstance(buffer.sampler, replay.WithoutReplacement)
  return buffer.sample(buffer.num_samples)


def flat(batch, prefix=''):
  """A nested batch as ``{'a/b': array}``."""
  out = {}
  for key, value in batch.items():
    if isinstance(value, dict):
      out.update(flat(value, f'{prefix}{key}/'))
    else:
      out[prefix + key] = np.asarray(value)
  return out
