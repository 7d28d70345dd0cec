"""Octo's trajectory transforms: pad masks, padding to a common size, goals, task augmentation, chunking.

Each takes and returns one trajectory (every tensor ``[T, ...]``), as Octo's
``traj_transforms``, ``goal_relabeling`` and ``task_augmentation`` do.

Example:
  >>> import tensorflow as tf
  >>> traj = {'observation': {'timestep': tf.range(3)}, 'task': {},
  ...         'action': tf.constant([[0.0], [1.0], [2.0]])}
  >>> traj = pad_actions_and_proprio(add_pad_mask_dict(traj), None, None)
  >>> out = chunk_act_obs(traj, window_size=2, action_horizon=2)
  >>> out['observation']['timestep'].numpy().tolist()
  [[0, 0], [0, 1], [1, 2]]
  >>> out['action'][2, 1, :, 0].numpy().tolist()   # the last action repeated
  [2.0, 2.0]
"""

import functools
from typing import Any, Callable, Dict, Optional, Sequence

import tensorflow as tf

from rlds_lite import op_context
from rlds_lite.octo import specs as specs_lib

__all__ = ['apply_trajectory_transforms', 'add_pad_mask_dict',
           'pad_actions_and_proprio', 'uniform', 'delete_task_conditioning',
           'chunk_act_obs', 'subsample', 'GOAL_RELABELING',
           'TASK_AUGMENTATION', 'task_completed']

Traj = Dict[str, Any]
_AUTOTUNE = tf.data.AUTOTUNE


def _length(traj: Traj) -> tf.Tensor:
  return tf.shape(traj['action'])[0]


def add_pad_mask_dict(traj: Traj) -> Traj:
  """``pad_mask_dict`` in ``observation`` and ``task``: False for empty strings (padding), else True."""
  length = _length(traj)
  out = dict(traj)
  for key in ('observation', 'task'):
    part = dict(traj[key])
    part['pad_mask_dict'] = {
        k: (tf.strings.length(v) != 0 if v.dtype == tf.string else
            tf.ones([length], tf.bool)) for k, v in traj[key].items()}
    out[key] = part
  return out


def _padded(x: tf.Tensor, size: int) -> tf.Tensor:
  return tf.pad(x, [[0, 0]] * (x.shape.rank - 1) + [[0, size - x.shape[-1]]])


def pad_actions_and_proprio(traj: Traj, max_action_dim: Optional[int],
                            max_proprio_dim: Optional[int]) -> Traj:
  """``action_pad_mask`` added; actions (and proprio) zero-padded to the given sizes."""
  out = dict(traj)
  out['action_pad_mask'] = tf.ones_like(traj['action'], tf.bool)
  for limit, key in ((max_action_dim, 'action'), (max_proprio_dim, 'proprio')):
    holder = out if key == 'action' else out['observation']
    if limit is None or key not in holder:
      continue
    size = holder[key].shape[-1]
    if size > limit:
      raise ValueError(f'{key}_dim ({size}) is greater than max_{key}_dim '
                       f'({limit})')
    if key == 'action':
      out['action'] = _padded(out['action'], limit)
      out['action_pad_mask'] = _padded(out['action_pad_mask'], limit)
    else:
      out['observation'] = {**out['observation'],
                            'proprio': _padded(holder['proprio'], limit)}
  return out


def _merge(a: Dict[str, Any], b: Dict[str, Any]) -> Dict[str, Any]:
  """``b`` over ``a``, nested dicts merged (Octo's ``tree_merge``)."""
  out = dict(a)
  for k, v in b.items():
    out[k] = _merge(out.get(k, {}), v) if isinstance(v, dict) else v
  return out


def goal_steps(length: tf.Tensor, max_goal_distance: Optional[int] = None,
               rand: Optional[tf.Tensor] = None) -> tf.Tensor:
  """Octo's uniform goal of each step: ``floor(u * (high - t) + t)`` in ``[t, high)``, ``high = min(t + d, T)``."""
  t = tf.range(length)
  rand = tf.random.uniform([length]) if rand is None else rand
  high = length if max_goal_distance is None else tf.minimum(
      t + max_goal_distance, length)
  low = tf.cast(t, tf.float32)
  goals = tf.cast(rand * (tf.cast(high, tf.float32) - low) + low, tf.int32)
  return tf.minimum(goals, length - 1)


def uniform(traj: Traj, max_goal_distance: Optional[int] = None) -> Traj:
  """Octo's ``goal_relabeling.uniform``: ``task`` gets the observation at a uniform future step."""
  length = tf.shape(tf.nest.flatten(traj['observation'])[0])[0]
  goals = goal_steps(length, max_goal_distance)
  goal = tf.nest.map_structure(lambda x: tf.gather(x, goals),
                               traj['observation'])
  return {**traj, 'task': _merge(traj['task'], goal)}


GOAL_RELABELING = {'uniform': uniform}
"""Octo's goal relabeling strategies by name."""


def _to_padding(x: tf.Tensor) -> tf.Tensor:
  if x.dtype == tf.string:
    return tf.fill(tf.shape(x), '')
  if x.dtype.is_numeric or x.dtype == tf.bool:
    return tf.zeros_like(x)
  raise ValueError(f'cannot make padding of a {x.dtype.name} tensor.')


def _where(keep: tf.Tensor, x: tf.Tensor, other: tf.Tensor) -> tf.Tensor:
  keep = tf.reshape(keep, tf.concat([tf.shape(keep),
                                     tf.ones([x.shape.rank - 1], tf.int32)], 0))
  return tf.where(keep, x, other)


def delete_task_conditioning(traj: Traj, keep_image_prob: float,
                             keep: Optional[tf.Tensor] = None) -> Traj:
  """Octo's task augmentation: per step, keep the goal images (p) or the language, never both.

  Only with both a language instruction and goal images; a step without
  language keeps its images. ``keep``: the draws (``[T]`` bool), for tests.
  """
  task = traj['task']
  images = {k for k in task if k.startswith(('image_', 'depth_'))}
  if 'language_instruction' not in task or not images:
    return traj
  length = _length(traj)
  keep_images = tf.random.uniform([length]) < keep_image_prob if keep is None else keep
  keep_images |= ~task['pad_mask_dict']['language_instruction']
  task = dict(task)
  masks = dict(task['pad_mask_dict'])
  for key in images | {'language_instruction'}:
    kept = keep_images if key in images else ~keep_images
    task[key] = _where(kept, task[key], _to_padding(task[key]))
    masks[key] = _where(kept, masks[key], tf.zeros_like(masks[key]))
  task['pad_mask_dict'] = masks
  task['timestep'] = tf.where(keep_images, task['timestep'], length - 1)
  return {**traj, 'task': task}


TASK_AUGMENTATION = {'delete_task_conditioning': delete_task_conditioning}
"""Octo's task augmentation strategies by name (``delete_and_rephrase`` needs its paraphrase files: not offered)."""


def task_completed(goal: tf.Tensor, steps: tf.Tensor, window_size: int,
                   action_horizon: int) -> tf.Tensor:
  """Octo's ``task_completed`` ``[N, window, horizon]`` of samples at ``steps`` ``[N]`` with goal steps ``goal``.

  Octo's formula, kept exactly: ``goal - (t - (window + 1) + w + h) <= 0``.
  """
  w = tf.range(window_size)[tf.newaxis, :, tf.newaxis]
  h = tf.range(action_horizon)[tf.newaxis, tf.newaxis, :]
  offset = steps[:, tf.newaxis, tf.newaxis] - (window_size + 1) + w + h
  return goal[:, tf.newaxis, tf.newaxis] - offset <= 0


def chunk_indices(length: tf.Tensor, window_size: int, action_horizon: int):
  """``(history [T, W] clipped at 0, its mask, action steps [T, H] clipped at T-1)``."""
  history = tf.range(length)[:, tf.newaxis] + tf.range(-window_size + 1, 1)
  actions = tf.minimum(tf.range(length)[:, tf.newaxis] +
                       tf.range(action_horizon), length - 1)
  return tf.maximum(history, 0), history >= 0, actions


def chunk_act_obs(traj: Traj, window_size: int = 1,
                  action_horizon: int = 1) -> Traj:
  """Octo's chunking: observation histories ``[T, W, ...]``, actions ``[T, W, H, A]``, ``task_completed``.

  Histories repeat the first observation before the start (``timestep_pad_mask``
  False there); chunks repeat the last action past the end.
  """
  length = _length(traj)
  history, mask, action_steps = chunk_indices(length, window_size,
                                              action_horizon)
  obs = tf.nest.map_structure(lambda x: tf.gather(x, history),
                              traj['observation'])
  obs['timestep_pad_mask'] = mask
  action = traj['action']
  if action.shape.rank == 2:
    action = tf.gather(action, action_steps)
  elif action.shape[1] < action_horizon:
    raise ValueError(f'action_horizon ({action_horizon}) is greater than the '
                     f'pre-chunked action dimension ({action.shape[1]})')
  else:
    action = action[:, :action_horizon]
  goal = traj['task'].get('timestep', tf.fill([length], length - 1))
  done = task_completed(goal, tf.range(length), window_size, action_horizon)
  obs['task_completed'] = done
  pad = traj['action_pad_mask']
  pad = pad[:, None, None, :] if pad.shape.rank == 2 else pad[:, None, :]
  out = dict(traj)
  out.update(observation=obs, action=tf.gather(action, history),
             action_pad_mask=tf.logical_and(pad, ~done[..., tf.newaxis]))
  return out


def subsample(traj: Traj, subsample_length: int) -> Traj:
  """At most ``subsample_length`` steps of the trajectory, drawn at random (Octo's order)."""
  length = _length(traj)
  keep = tf.random.shuffle(tf.range(length))[:subsample_length]
  return tf.cond(length > subsample_length,
                 lambda: tf.nest.map_structure(lambda x: tf.gather(x, keep), traj),
                 lambda: traj)


def _strategy(table: Dict[str, Callable], name: str, what: str) -> Callable:
  if name not in table:
    raise ValueError(f'{what} must be one of {sorted(table)} or None, got '
                     f'{name!r}.')
  return table[name]


def filters(dataset: tf.data.Dataset, skip_unlabeled: bool,
             max_action: Optional[float], max_proprio: Optional[float]
             ) -> tf.data.Dataset:
  spec = dataset.element_spec
  if skip_unlabeled:
    if 'language_instruction' not in spec['task']:
      raise ValueError('skip_unlabeled=True but the dataset has no language '
                       'labels (task.language_instruction).')
    dataset = dataset.filter(lambda x: tf.reduce_any(
        x['task']['language_instruction'] != ''))
  if max_action is not None:
    dataset = dataset.filter(
        lambda x: tf.reduce_all(tf.abs(x['action']) <= max_action))
  if max_proprio is not None and 'proprio' in spec['observation']:
    dataset = dataset.filter(lambda x: tf.reduce_all(
        tf.abs(x['observation']['proprio']) <= max_proprio))
  return dataset


@op_context.named('apply_trajectory_transforms')
def apply_trajectory_transforms(
    dataset: tf.data.Dataset, *, train: bool,
    goal_relabeling_strategy: Optional[str] = None,
    goal_relabeling_kwargs: Dict[str, Any] = {},  # pylint: disable=dangerous-default-value
    window_size: int = 1, action_horizon: int = 1,
    subsample_length: Optional[int] = None, skip_unlabeled: bool = False,
    max_action: Optional[float] = None, max_proprio: Optional[float] = None,
    task_augment_strategy: Optional[str] = None,
    task_augment_kwargs: Dict[str, Any] = {},  # pylint: disable=dangerous-default-value
    max_action_dim: Optional[int] = None, max_proprio_dim: Optional[int] = None,
    post_chunk_transforms: Sequence[Any] = (),
    num_parallel_calls: int = _AUTOTUNE) -> tf.data.Dataset:
  """Octo's trajectory transforms, in Octo's order (Octo's arguments, so more than ten).

  Args:
    dataset: trajectories of `make_dataset_from_rlds`.
    train: training (task augmentation and subsampling only then).
    goal_relabeling_strategy: ``'uniform'`` or None; its kwargs.
    window_size, action_horizon: observation history, action chunk.
    subsample_length: at most this many steps per trajectory (train).
    skip_unlabeled: drop trajectories without any language instruction.
    max_action, max_proprio: drop trajectories with a larger |value|.
    task_augment_strategy: ``'delete_task_conditioning'`` or None; its kwargs.
    max_action_dim, max_proprio_dim: zero-pad to these sizes.
    post_chunk_transforms: callables (or ModuleSpecs) after chunking.
    num_parallel_calls: parallelism of the maps.

  Example:
    >>> import tempfile
    >>> from rlds_lite import octo, synthetic
    >>> path = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=2,
    ...                                 length=4, cameras={'image': (8, 8)})
    >>> ds, _ = octo.make_dataset_from_rlds(path, None, train=True,
    ...     image_obs_keys={'primary': 'image'})
    >>> ds = apply_trajectory_transforms(ds, train=True, window_size=2,
    ...                                  action_horizon=3)
    >>> traj = next(iter(ds))
    >>> traj['action'].shape.as_list(), traj['observation']['task_completed'].shape.as_list()
    ([4, 2, 3, 7], [4, 2, 3])
  """
  dataset = filters(dataset, skip_unlabeled, max_action, max_proprio)
  steps = [add_pad_mask_dict,
           functools.partial(pad_actions_and_proprio,
                             max_action_dim=max_action_dim,
                             max_proprio_dim=max_proprio_dim)]
  if goal_relabeling_strategy is not None:
    steps.append(functools.partial(
        _strategy(GOAL_RELABELING, goal_relabeling_strategy,
                  'goal_relabeling_strategy'), **goal_relabeling_kwargs))
  if train and task_augment_strategy is not None:
    steps.append(functools.partial(
        _strategy(TASK_AUGMENTATION, task_augment_strategy,
                  'task_augment_strategy'), **task_augment_kwargs))
  steps.append(functools.partial(chunk_act_obs, window_size=window_size,
                                 action_horizon=action_horizon))
  if train and subsample_length is not None:
    steps.append(functools.partial(subsample,
                                   subsample_length=subsample_length))
  steps.extend(specs_lib.instantiate(s, 'post_chunk_transforms')
               for s in post_chunk_transforms)
  for step in steps:
    dataset = dataset.map(step, num_parallel_calls)
  return dataset
