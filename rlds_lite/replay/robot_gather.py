"""`RobotSamples` gathered in NumPy from stored step columns: each field read only at the steps it needs."""

from typing import Dict, Mapping

import numpy as np

from rlds_lite import sample_kinds
from rlds_lite.dense.chunking import PAD_MASK_SUFFIX
from rlds_lite.dense import last_step as last_step_lib

__all__ = ['gather_robot_samples']


def _under(path: str, key: str) -> bool:
  return path == key or path.startswith(key + '/')


def _steps(kind: sample_kinds.RobotSamples, start: np.ndarray, length: np.ndarray):
  """History steps and mask ``[B, history]``, action steps and mask ``[B, chunk]``."""
  last = np.maximum(length - 1, 0)[:, np.newaxis]
  offsets = (np.arange(kind.history) - (kind.history - 1)) * kind.history_stride
  history = start[:, np.newaxis] + offsets[np.newaxis]
  history_mask = history >= 0
  history = np.clip(history, 0, last)
  valid = kind.last_step == last_step_lib.LastStep.VALID.value
  num_valid = length if valid else length - 1
  j = np.arange(kind.action_chunk)[np.newaxis]
  action_mask = start[:, np.newaxis] + j < num_valid[:, np.newaxis]
  last_valid = np.maximum(num_valid - 1 - start, 0)[:, np.newaxis]
  actions = np.clip(start[:, np.newaxis] + np.minimum(j, last_valid), 0, last)
  return history, history_mask, actions, action_mask


def gather_robot_samples(kind: sample_kinds.RobotSamples,
                         columns: Mapping[str, np.ndarray], first: np.ndarray,
                         start: np.ndarray, length: np.ndarray,
                         capacity: int) -> Dict[str, np.ndarray]:
  """The samples ``kind.assemble`` makes, flat, read from ring ``columns`` directly.

  Observations are read at the history steps only, actions at the chunk's,
  every other field at the anchor (``kind.assemble`` reads every field at
  every offset, then picks): a memory-mapped column's pages are touched only
  where a sample needs them.

  Args:
    kind: the sample kind.
    columns: flat path -> ``[capacity, ...]`` step columns (a ring).
    first: ``[B]`` slot of each sample's episode's first step.
    start: ``[B]`` the anchor step within the episode.
    length: ``[B]`` the episode's steps.
    capacity: the ring's slots.

  Returns:
    flat path -> ``[B, ...]`` values; fixed-width strings as ``object`` bytes.

  Example:
    >>> kind = sample_kinds.RobotSamples(history=2, action_chunk=2)
    >>> columns = {'observation': np.arange(4.0), 'action': np.arange(4) * 10,
    ...            'reward': np.ones(4)}
    >>> out = gather_robot_samples(kind, columns, np.array([0, 0]),
    ...                            np.array([0, 2]), np.array([4, 4]), 4)
    >>> out['observation'].tolist(), out['action'].tolist()
    ([[0.0, 0.0], [1.0, 2.0]], [[0, 10], [20, 20]])
    >>> out['observation_pad_mask'].tolist(), out['action_pad_mask'].tolist()
    ([[False, True], [True, True]], [[True, True], [True, False]])
  """
  history, history_mask, actions, action_mask = _steps(kind, start, length)
  first = first[:, np.newaxis]
  history_slots = (first + history) % capacity
  action_slots = (first + actions) % capacity
  anchor_slots = (first[:, 0] + start) % capacity
  obs_key, action_key = kind.observation_key, kind.action_key
  for key in (obs_key, action_key):
    if not any(_under(p, key) for p in columns):
      raise ValueError(f'RobotSamples needs the step field {key!r}.')
  out = {}
  for path, column in columns.items():
    if _under(path, obs_key):
      value = column[history_slots]
      if kind.history_pad == 'zero':
        value[~history_mask] = 0
    elif _under(path, action_key):
      value = column[action_slots]
      if kind.action_pad == 'zero':
        value[~action_mask] = 0
    else:
      value = column[anchor_slots]
    out[path] = value.astype(object) if value.dtype.kind == 'S' else value
  out[obs_key + PAD_MASK_SUFFIX] = history_mask
  out[action_key + PAD_MASK_SUFFIX] = action_mask
  return out
