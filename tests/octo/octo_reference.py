"""A plain NumPy reference of Octo's trajectory semantics (octo/data), image fields as the step indices they come from.

Read from Octo's source: ``dataset.make_dataset_from_rlds``'s restructure,
``data_utils.normalize_action_and_proprio``, ``traj_transforms``
(``add_pad_mask_dict``, ``pad_actions_and_proprio``, ``chunk_act_obs``),
``goal_relabeling.uniform`` and ``task_augmentation.delete_task_conditioning``,
with their random draws given (the goal index, the keep-images decision, the
language key). An image or depth field is an int array of step indices, ``-1``
for a padding image (Octo's ``''``).

Example:
  >>> traj = {'observation': {'cam': np.zeros(3), 'state': np.ones((3, 2))},
  ...         'action': np.arange(6, dtype=np.float32).reshape(3, 2)}
  >>> frame = expected_sample(traj, 0, window_size=2, action_horizon=2,
  ...                         image_obs_keys={'primary': 'cam'})
  >>> frame['observation']['image_primary'].tolist()
  [0, 0]
  >>> frame['observation']['timestep_pad_mask'].tolist()
  [False, True]
  >>> frame['action'][1].tolist()
  [[0.0, 1.0], [2.0, 3.0]]
"""

import fnmatch
from typing import Any, Dict, Mapping, Optional, Sequence

import numpy as np

__all__ = ['restructure', 'normalize', 'add_pad_mask_dict',
           'pad_actions_and_proprio', 'relabel_goal_uniform',
           'delete_task_conditioning', 'chunk_act_obs', 'expected_trajectory',
           'expected_sample', 'frame', 'is_image_key']


def is_image_key(key: str) -> bool:
  """Whether ``key`` is an image or depth field (held as step indices here)."""
  return key.startswith('image_') or key.startswith('depth_')


def restructure(traj: Mapping[str, Any], *, name: str = 'ds',
                image_obs_keys: Mapping[str, Optional[str]] = {},  # pylint: disable=dangerous-default-value
                depth_obs_keys: Mapping[str, Optional[str]] = {},  # pylint: disable=dangerous-default-value
                proprio_obs_key: Optional[str] = None,
                language_key: Optional[str] = None,
                language_pick: int = 0) -> Dict[str, Any]:
  """Octo's restructure of a standardized trajectory (``language_pick``: which fnmatching key, in key order).

  Example:
    >>> out = restructure({'observation': {}, 'action': np.zeros((2, 1)),
    ...                    'lang': np.array([b'a', b'a'])},
    ...                   image_obs_keys={'wrist': None}, language_key='lang')
    >>> out['observation']['image_wrist'].tolist(), out['task']['language_instruction'].tolist()
    ([-1, -1], [b'a', b'a'])
  """
  length = len(traj['action'])
  old_obs = traj['observation']
  obs = {}
  for prefix, mapping in (('image_', image_obs_keys), ('depth_', depth_obs_keys)):
    for new, old in mapping.items():
      if old is not None and old not in old_obs:
        raise KeyError(old)
      obs[prefix + new] = (np.full(length, -1) if old is None
                           else np.arange(length))
  if proprio_obs_key is not None:
    obs['proprio'] = np.asarray(old_obs[proprio_obs_key]).astype(np.float32)
  obs['timestep'] = np.arange(length, dtype=np.int32)
  task = {}
  if language_key is not None:
    matches = [k for k in traj if fnmatch.fnmatch(k, language_key)]
    task['language_instruction'] = np.asarray(traj[matches[language_pick]],
                                              object)
  return {'observation': obs, 'task': task,
          'action': np.asarray(traj['action']).astype(np.float32),
          'dataset_name': np.array([name.encode()] * length, object)}


def _normalized(x: np.ndarray, stats: Mapping[str, Any], kind: str) -> np.ndarray:
  """As Octo in TF: the float64 statistics cast to float32 after ``+ 1e-8``."""
  f32 = lambda v: np.asarray(v, np.float64).astype(np.float32)
  mask = np.asarray(stats.get('mask', np.ones(np.shape(x)[-1], bool)), bool)
  if kind == 'normal':
    out = (x - f32(stats['mean'])) / f32(np.asarray(stats['std'], np.float64) + 1e-8)
  elif kind == 'bounds':
    p01, p99 = np.asarray(stats['p01'], np.float64), np.asarray(stats['p99'], np.float64)
    out = np.clip(np.float32(2) * (x - f32(p01)) / f32(p99 - p01 + 1e-8)
                  - np.float32(1), -1, 1)
  else:
    raise ValueError(kind)
  return np.where(mask, out, x).astype(np.float32)


def normalize(traj: Dict[str, Any], statistics: Mapping[str, Any],
              kind: str = 'normal') -> Dict[str, Any]:
  """``normalize_action_and_proprio`` (``kind`` 'normal' or 'bounds'; ``statistics['action']['mask']`` optional)."""
  traj = dict(traj, observation=dict(traj['observation']))
  traj['action'] = _normalized(traj['action'], statistics['action'], kind)
  if 'proprio' in traj['observation']:
    traj['observation']['proprio'] = _normalized(
        traj['observation']['proprio'], statistics['proprio'], kind)
  return traj


def _not_padding(value: np.ndarray, key: str) -> np.ndarray:
  if is_image_key(key):
    return value >= 0
  if value.dtype == object:
    return np.array([len(v) != 0 for v in value], bool)
  return np.ones(len(value), bool)


def add_pad_mask_dict(traj: Dict[str, Any]) -> Dict[str, Any]:
  """``pad_mask_dict`` of observation and task: strings (and images) padding when empty, the rest never."""
  traj = dict(traj)
  for part in ('observation', 'task'):
    fields = dict(traj[part])
    fields['pad_mask_dict'] = {k: _not_padding(v, k) for k, v in traj[part].items()}
    traj[part] = fields
  return traj


def pad_actions_and_proprio(traj: Dict[str, Any], max_action_dim: Optional[int],
                            max_proprio_dim: Optional[int]) -> Dict[str, Any]:
  """``action_pad_mask``, and action / proprio zero-padded to the maxima."""
  traj = dict(traj, observation=dict(traj['observation']))
  traj['action_pad_mask'] = np.ones(traj['action'].shape, bool)
  pad = lambda x, n: np.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, n - x.shape[-1])])
  if max_action_dim is not None:
    traj['action'] = pad(traj['action'], max_action_dim)
    traj['action_pad_mask'] = pad(traj['action_pad_mask'], max_action_dim)
  if max_proprio_dim is not None and 'proprio' in traj['observation']:
    traj['observation']['proprio'] = pad(traj['observation']['proprio'],
                                         max_proprio_dim)
  return traj


def relabel_goal_uniform(traj: Dict[str, Any], goal_idxs: Sequence[int]) -> Dict[str, Any]:
  """``goal_relabeling.uniform`` with its draw given: the task gets the observation at ``goal_idxs`` (tree-merged)."""
  idx = np.asarray(goal_idxs)
  task = dict(traj['task'])
  pad_masks = dict(task.get('pad_mask_dict', {}))
  for key, value in traj['observation'].items():
    if key == 'pad_mask_dict':
      pad_masks.update({k: v[idx] for k, v in value.items()})
    else:
      task[key] = value[idx]
  if 'pad_mask_dict' in traj['observation'] or pad_masks:
    task['pad_mask_dict'] = pad_masks
  return dict(traj, task=task)


def delete_task_conditioning(traj: Dict[str, Any], keep_images: Sequence[bool]) -> Dict[str, Any]:
  """``delete_task_conditioning`` with its draw given (``keep_images`` [T]); a no-op without language or goal images."""
  task = dict(traj['task'])
  if 'language_instruction' not in task:
    return traj
  image_keys = [k for k in task if is_image_key(k)]
  if not image_keys:
    return traj
  pad_masks = dict(task['pad_mask_dict'])
  keep = np.asarray(keep_images, bool) | ~pad_masks['language_instruction']
  for key in image_keys + ['language_instruction']:
    should_keep = keep if key in image_keys else ~keep
    padding = (np.full_like(task[key], -1) if key in image_keys else
               np.array([b''] * len(keep), object))
    task[key] = np.where(should_keep, task[key], padding)
    pad_masks[key] = np.where(should_keep, pad_masks[key], False)
  task['pad_mask_dict'] = pad_masks
  length = len(traj['action'])
  task['timestep'] = np.where(keep, task['timestep'], length - 1).astype(np.int32)
  return dict(traj, task=task)


def _gather(tree: Any, index: np.ndarray) -> Any:
  if isinstance(tree, dict):
    return {k: _gather(v, index) for k, v in tree.items()}
  return np.asarray(tree)[index]


def chunk_act_obs(traj: Dict[str, Any], window_size: int, action_horizon: int) -> Dict[str, Any]:
  """``chunk_act_obs``: history (first frame repeated), action chunks (last action repeated), task_completed.

  ``task_completed[t, w, h] = goal_t - (t - (window_size + 1) + w + h) <= 0``,
  goal_t the task's timestep, else the last step.
  """
  length = len(traj['action'])
  history = np.arange(length)[:, None] + np.arange(-window_size + 1, 1)
  obs = _gather(traj['observation'], np.maximum(history, 0))
  obs['timestep_pad_mask'] = history >= 0
  chunks = np.minimum(np.arange(length)[:, None] + np.arange(action_horizon), length - 1)
  action = traj['action'][chunks][np.maximum(history, 0)]
  goal_t = (np.asarray(traj['task']['timestep']) if 'timestep' in traj['task']
            else np.full(length, length - 1))
  t, w, h = np.meshgrid(np.arange(length), np.arange(window_size),
                        np.arange(action_horizon), indexing='ij')
  completed = goal_t[:, None, None] - (t - (window_size + 1) + w + h) <= 0
  obs['task_completed'] = completed
  pad_mask = traj['action_pad_mask'][:, None, None, :] & ~completed[..., None]
  return dict(traj, observation=obs, action=action, action_pad_mask=pad_mask)


def expected_trajectory(traj: Mapping[str, Any], *, window_size: int = 1,
                        action_horizon: int = 1,
                        goal_idxs: Optional[Sequence[int]] = None,
                        keep_images: Any = None,
                        statistics: Optional[Mapping[str, Any]] = None,
                        normalization_type: str = 'normal',
                        max_action_dim: Optional[int] = None,
                        max_proprio_dim: Optional[int] = None,
                        **keys: Any) -> Dict[str, Any]:
  """Octo's whole pipeline on one trajectory: restructure (``**keys``), normalise, pad masks, pad, goal, task augmentation, chunk.

  ``goal_idxs`` None: no goal relabeling; ``keep_images`` None: no task
  augmentation, else a bool or [T] bools (the draw); ``statistics`` None: skip_norm.
  """
  out = restructure(traj, **keys)
  if statistics is not None:
    out = normalize(out, statistics, normalization_type)
  out = add_pad_mask_dict(out)
  out = pad_actions_and_proprio(out, max_action_dim, max_proprio_dim)
  length = len(out['action'])
  if goal_idxs is not None:
    out = relabel_goal_uniform(out, np.broadcast_to(goal_idxs, (length,)))
  if keep_images is not None:
    out = delete_task_conditioning(out, np.broadcast_to(keep_images, (length,)))
  return chunk_act_obs(out, window_size, action_horizon)


def frame(traj: Dict[str, Any], t: int) -> Dict[str, Any]:
  """Step ``t`` of every field (Octo's ``flatten``)."""
  return _gather(traj, t)


def expected_sample(traj: Mapping[str, Any], t: int, *, window_size: int,
                    action_horizon: int, goal_t: Optional[int] = None,
                    keep_images: Any = None, **options: Any) -> Dict[str, Any]:
  """The Octo frame at step ``t`` (``goal_t``: its goal index, None: no goal relabeling; ``options``: `expected_trajectory`'s).

  ``keep_images``: None without task augmentation, else the draw of
  ``delete_task_conditioning`` at ``t`` (True: goal images kept, language deleted).

  Example:
    >>> traj = {'observation': {'s': np.zeros((4, 1))},
    ...         'action': np.zeros((4, 1), np.float32)}
    >>> f = expected_sample(traj, 1, window_size=1, action_horizon=3, goal_t=2)
    >>> f['observation']['task_completed'].tolist(), int(f['task']['timestep'])
    ([[False, False, False]], 2)
  """
  length = len(traj['action'])
  goals = None if goal_t is None else np.full(length, goal_t)
  return frame(expected_trajectory(traj, window_size=window_size,
                                   action_horizon=action_horizon,
                                   goal_idxs=goals, keep_images=keep_images,
                                   **options), t)
