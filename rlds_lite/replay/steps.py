"""Steps as a buffer takes them: flat ``[N, ...]`` fields, and the episode id and step of each."""

from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np
import tensorflow as tf

from rlds_lite import dense
from rlds_lite import rlds_names
from rlds_lite.replay import spec as spec_lib
from rlds_lite.replay import storage as storage_lib

__all__ = ['Stream', 'flat_batch', 'episode_steps', 'ends']

Flat = Dict[str, np.ndarray]


flat_batch = spec_lib.flat_batch


def episode_steps(episode: Mapping[str, Any]) -> Flat:
  """An episode's steps as flat ``[T, ...]`` NumPy fields.

  ``episode['steps']`` is a dict of ``[T, ...]`` fields (dense), a list of step
  dicts, or a ``tf.data.Dataset`` of steps (RLDS).

  Example:
    >>> steps = [{'reward': 1.0, 'is_first': True, 'is_last': False},
    ...          {'reward': 0.0, 'is_first': False, 'is_last': True}]
    >>> episode_steps({'steps': steps})['reward'].tolist()
    [1.0, 0.0]
  """
  if not isinstance(episode, Mapping) or rlds_names.STEPS not in episode:
    raise TypeError("add_episode: an episode is a dict with 'steps', got "
                    f'{type(episode).__name__}.')
  steps = episode[rlds_names.STEPS]
  if isinstance(steps, tf.data.Dataset):
    steps = tf.nest.map_structure(lambda t: t.numpy(), dense.dense_episode(steps))
  if isinstance(steps, (list, tuple)):
    return spec_lib.stacked(steps)
  return flat_batch(steps, 'add_episode')


def ends(columns: Mapping[str, np.ndarray], slots: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
  """``is_last`` and ``is_terminal`` of ``slots`` (a step without flags is a whole episode)."""
  count = len(slots)
  is_last = columns.get(rlds_names.IS_LAST)
  is_terminal = columns.get(rlds_names.IS_TERMINAL)
  return (np.ones([count], bool) if is_last is None else is_last[slots].astype(bool),
          np.zeros([count], bool) if is_terminal is None else is_terminal[slots].astype(bool))


class Stream:
  """The episode being added step by step: gives each new step its episode id and step index."""

  def __init__(self):
    self.episode: Optional[int] = None
    self.next_step = 0

  def ids(self, values: Flat, header: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Episode ids (new ones from ``header[NEXT_EPISODE]``) and step indices of ``values``."""
    n = len(next(iter(values.values())))
    is_first = values.get(rlds_names.IS_FIRST)
    is_first = np.ones([n], bool) if is_first is None else is_first.astype(bool)
    is_last = values.get(rlds_names.IS_LAST)
    is_last = is_first[1:].copy() if is_last is None else is_last.astype(bool)[:-1]
    orphan = np.flatnonzero(~is_first[1:] & is_last[:len(is_first) - 1]) + 1
    if (not is_first[0] and self.episode is None) or len(orphan):
      at = 0 if not is_first[0] and self.episode is None else int(orphan[0])
      raise ValueError(
          f'step {at} of these steps continues no episode: an episode starts with '
          "is_first=True (the previous step was is_last, or nothing was added yet).")
    group = np.cumsum(is_first)
    base = int(header[storage_lib.NEXT_EPISODE])
    episode_ids = np.where(group == 0, -1 if self.episode is None else self.episode,
                           base + group - 1).astype(np.int64)
    header[storage_lib.NEXT_EPISODE] = base + int(group[-1])
    last_start = np.maximum.accumulate(np.where(is_first, np.arange(n), -1))
    step_ids = np.where(last_start >= 0, np.arange(n) - last_start,
                        self.next_step + np.arange(n)).astype(np.int32)
    self.episode = int(episode_ids[-1])
    self.next_step = int(step_ids[-1]) + 1
    final = values.get(rlds_names.IS_LAST)
    if final is None or bool(final[-1]):
      self.episode = None
      self.next_step = 0
    return episode_ids, step_ids
