"""One dataset's Octo samples through `robot_samples_dataset`: frames decoded once per segment, Octo's structure after.

Octo chunks encoded frames per step and decodes every frame once per sample
holding it. Here a trajectory becomes dense steps whose non-image fields are
chunked as Octo chunks them (cheap), the engine draws anchors and goals and
decodes each frame once per pooled segment at the output size, and a
vectorised map gives every batch Octo's element structure (`to_octo`).
"""

from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import tensorflow as tf

from rlds_lite import rlds_types
from rlds_lite import sample_kinds
from rlds_lite.images import decode as decode_lib
from rlds_lite.octo import frames as frames_lib
from rlds_lite.octo import trajectory as traj_lib

__all__ = ['Layout', 'layout_for', 'engine_episodes', 'to_octo',
           'robot_kind']

_OCTO = 'octo'          # Per-step fields kept aside for `to_octo`.
_GOAL = 'goal'
Size = Tuple[int, int]


class Layout(NamedTuple):
  """What one dataset's samples hold, and how they are shaped (the mixture's common structure).

  Attributes:
    name: the dataset's name.
    cameras: ``{name: ImageSpec}`` of its real cameras (not padding).
    all_cameras: every camera name of the mixture, in order.
    sizes: ``{camera: (h, w)}`` output sizes.
    window, horizon: Octo's ``window_size`` and ``action_horizon``.
    goal: with goal relabeling (``'uniform'``).
    language: the mixture has ``task['language_instruction']``.
    own_language: this dataset has it.
    proprio: the mixture's proprio size (None: none).
    own_proprio: this dataset has proprio.
    keep_image_prob: task augmentation's (None: none).
    action_dim: ``max_action_dim`` (None: the dataset's own).
  """
  name: str
  cameras: Dict[str, decode_lib.ImageSpec]
  all_cameras: Tuple[str, ...]
  sizes: Dict[str, Size]
  window: int
  horizon: int
  goal: bool
  language: bool
  own_language: bool
  proprio: Optional[int]
  own_proprio: bool
  keep_image_prob: Optional[float]
  action_dim: Optional[int] = None


def _image_spec(frame: tf.Tensor, name: str, camera: str
                ) -> decode_lib.ImageSpec:
  """The spec of one encoded frame (JPEG or PNG), read from its header or by decoding it once."""
  data = frame.numpy()
  if not data:
    raise ValueError(f'dataset {name!r}: camera image_{camera} has an empty '
                     'first frame; is it a padding camera (None)?')
  if data[:2] == b'\xff\xd8':
    h, w, c = (int(x) for x in tf.io.extract_jpeg_shape(frame).numpy())
    return decode_lib.ImageSpec((h, w, c), 'jpeg')
  image = tf.io.decode_image(frame, expand_animations=False)
  encoding = 'png' if data[:4] == b'\x89PNG' else None
  if encoding is None:
    raise ValueError(f'dataset {name!r}: camera image_{camera} is neither '
                     'JPEG nor PNG.')
  return decode_lib.ImageSpec(tuple(int(d) for d in image.shape), 'png')


def camera_specs(trajectories: tf.data.Dataset, name: str
                 ) -> Dict[str, decode_lib.ImageSpec]:
  """``{camera: ImageSpec}`` of the real cameras, from the first trajectory's first frames."""
  obs = trajectories.element_spec['observation']
  names = frames_lib.names_with(obs, 'image_')
  if not names:
    return {}
  first = next(iter(trajectories.take(1)))['observation']
  return {n: _image_spec(first['image_' + n][0], name, n) for n in names
          if tf.strings.length(first['image_' + n][0]) > 0}


def robot_kind(layout: Layout) -> sample_kinds.RobotSamples:
  """The engine's kind: Octo's window of observations at every step, its chunk picked at the anchor."""
  return sample_kinds.RobotSamples(
      history=layout.window, action_chunk=1, last_step='valid',
      goal='future' if layout.goal else None, goal_key=_GOAL)


def _chunked_steps(traj: Dict[str, Any], layout: Layout) -> Dict[str, Any]:
  """A trajectory as the engine's dense steps: frames per step, Octo's action chunk per step."""
  traj = traj_lib.pad_actions_and_proprio(
      traj_lib.add_pad_mask_dict(traj), layout.action_dim,
      layout.proprio if layout.own_proprio else None)
  length = tf.shape(traj['action'])[0]
  _, _, action_steps = traj_lib.chunk_indices(length, layout.window,
                                              layout.horizon)
  history, _, _ = traj_lib.chunk_indices(length, layout.window, layout.horizon)
  action = tf.gather(tf.gather(traj['action'], action_steps), history)
  obs = {k: v for k, v in traj['observation'].items()
         if not (k.startswith('image_') and k[6:] not in layout.cameras)}
  obs['pad_mask_dict'] = {k: v for k, v in obs['pad_mask_dict'].items()
                          if k in obs}
  aside = {'action_pad_mask': traj['action_pad_mask'],
           'length': tf.fill([length], length),
           'dataset_name': traj['dataset_name']}
  if layout.own_language:
    aside['language_instruction'] = traj['task']['language_instruction']
    aside['language_mask'] = traj['task']['pad_mask_dict'][
        'language_instruction']
  return {rlds_types.STEPS: {rlds_types.OBSERVATION: obs,
                             rlds_types.ACTION: action, _OCTO: aside}}


def engine_episodes(trajectories: tf.data.Dataset, layout: Layout,
                    num_parallel_calls: int) -> tf.data.Dataset:
  """Octo trajectories (images encoded) as the engine's dense episodes."""
  return trajectories.map(lambda t: _chunked_steps(t, layout),
                          num_parallel_calls)


def image_specs(layout: Layout) -> Dict[str, decode_lib.ImageSpec]:
  return {f'{rlds_types.OBSERVATION}/image_{n}': spec
          for n, spec in layout.cameras.items()}


def image_sizes(layout: Layout) -> Dict[str, Size]:
  return {f'{rlds_types.OBSERVATION}/image_{n}': layout.sizes.get(
      n, tuple(spec.shape[:2])) for n, spec in layout.cameras.items()}


# ----------------------------------------------------------- Octo structure


def _padding_image(batch: int, lead: List[int], size: Size) -> tf.Tensor:
  return tf.zeros([batch, *lead, *size, 3], tf.uint8)


def _observation(batch: Dict[str, Any], layout: Layout, n: tf.Tensor
                 ) -> Dict[str, Any]:
  obs = dict(batch[rlds_types.OBSERVATION])
  masks = dict(obs.pop('pad_mask_dict'))
  w = layout.window
  for camera in layout.all_cameras:
    key = 'image_' + camera
    if camera not in layout.cameras:
      obs[key] = _padding_image(n, [w], layout.sizes.get(camera, (1, 1)))
      masks[key] = tf.zeros([n, w], tf.bool)
  if layout.proprio is not None:
    if layout.own_proprio:
      obs['proprio'] = _pad_last(obs['proprio'], layout.proprio)
    else:
      obs['proprio'] = tf.zeros([n, w, layout.proprio], tf.float32)
      masks['proprio'] = tf.zeros([n, w], tf.bool)
  obs['timestep_pad_mask'] = batch[rlds_types.OBSERVATION + '_pad_mask']
  obs['pad_mask_dict'] = masks
  return obs


def _pad_last(x: tf.Tensor, size: int) -> tf.Tensor:
  return tf.pad(x, [[0, 0]] * (x.shape.rank - 1) + [[0, size - x.shape[-1]]])


def _task(batch: Dict[str, Any], layout: Layout, n: tf.Tensor,
          keep_draws: Optional[tf.Tensor]) -> Dict[str, Any]:
  """Octo's task: language, and the goal observation (after task augmentation); ``timestep`` the goal step."""
  aside = batch[_OCTO]
  task, masks = {}, {}
  if layout.language:
    if layout.own_language:
      task['language_instruction'] = aside['language_instruction']
      masks['language_instruction'] = aside['language_mask']
    else:
      task['language_instruction'] = tf.fill([n], '')
      masks['language_instruction'] = tf.zeros([n], tf.bool)
  goal_step = aside['length'] - 1
  if layout.goal:
    goal = dict(batch[_GOAL])
    goal_masks = dict(goal.pop('pad_mask_dict'))
    for camera in layout.all_cameras:
      if camera not in layout.cameras:
        goal['image_' + camera] = _padding_image(
            n, [], layout.sizes.get(camera, (1, 1)))
        goal_masks['image_' + camera] = tf.zeros([n], tf.bool)
    if layout.proprio is not None:
      if layout.own_proprio:
        goal['proprio'] = _pad_last(goal['proprio'], layout.proprio)
      else:
        goal['proprio'] = tf.zeros([n, layout.proprio], tf.float32)
        goal_masks['proprio'] = tf.zeros([n], tf.bool)
    task.update(goal)
    masks.update(goal_masks)
    goal_step = goal['timestep']
  task['pad_mask_dict'] = masks
  if layout.goal and layout.language and keep_draws is not None:
    task = _delete_task_conditioning(task, keep_draws, aside['length'])
  return task


def _delete_task_conditioning(task: Dict[str, Any], keep_images: tf.Tensor,
                              length: tf.Tensor) -> Dict[str, Any]:
  """Octo's ``delete_task_conditioning`` of a batch of tasks (``keep_images``: the draws)."""
  masks = dict(task['pad_mask_dict'])
  keep_images = keep_images | ~masks['language_instruction']
  task = dict(task)
  for key in [k for k in task if k.startswith(('image_', 'depth_'))] + [
      'language_instruction']:
    kept = keep_images if key != 'language_instruction' else ~keep_images
    task[key] = traj_lib._where(kept, task[key], traj_lib._to_padding(task[key]))  # pylint: disable=protected-access
    masks[key] = kept & masks[key]
  task['pad_mask_dict'] = masks
  task['timestep'] = tf.where(keep_images, task['timestep'], length - 1)
  return task


def to_octo(batch: Dict[str, Any], layout: Layout,
            keep_draws: Optional[tf.Tensor]) -> Dict[str, Any]:
  """An engine batch in Octo's element structure (frames decoded; augmentation apart)."""
  n = tf.shape(batch[_OCTO]['length'])[0]
  obs = _observation(batch, layout, n)
  task = _task(batch, layout, n, keep_draws)
  t = obs['timestep'][:, -1]
  goal = task['timestep'] if layout.goal else batch[_OCTO]['length'] - 1
  done = traj_lib.task_completed(goal, t, layout.window, layout.horizon)
  obs['task_completed'] = done
  action = batch[rlds_types.ACTION][:, 0]
  base = batch[_OCTO]['action_pad_mask'][:, None, None, :]
  return {'observation': obs, 'task': task, 'action': action,
          'action_pad_mask': tf.logical_and(base, ~done[..., tf.newaxis]),
          'dataset_name': batch[_OCTO]['dataset_name']}


def sample_seeds(seed: tf.Tensor, n: tf.Tensor) -> tf.Tensor:
  """``[n, 2]`` per-sample seeds of one batch seed."""
  return tf.random.experimental.stateless_split(seed, n)


def augment_batch(batch: Dict[str, Any], seeds: tf.Tensor, train_kwargs: Dict[str, Any]
                  ) -> Dict[str, Any]:
  """Octo's per-frame dropout and augmentation of every sample (its seed shared by its window and goal)."""
  kwargs = train_kwargs['image_augment_kwargs']
  dropout = train_kwargs['image_dropout_prob']
  keep_key = train_kwargs['image_dropout_keep_key']
  window = batch['observation']['timestep'].shape[1]

  def one(args):
    sample, seed = args
    seed = tf.cast(seed, tf.int32)
    parts = [sample['task']] + [tf.nest.map_structure(lambda x, i=i: x[i],
                                                      sample['observation'])
                                for i in range(window)]
    done = []
    for part in parts:
      part = frames_lib.image_dropout(part, seed, dropout, keep_key) if dropout else part
      done.append(frames_lib.augment(part, seed, kwargs) if kwargs else part)
    obs = tf.nest.map_structure(lambda *xs: tf.stack(xs), *done[1:])
    return {'task': done[0], 'observation': obs}

  images = {'task': batch['task'], 'observation': batch['observation']}
  spec = tf.nest.map_structure(lambda x: tf.TensorSpec(x.shape[1:], x.dtype),
                               images)
  out = tf.map_fn(one, (images, seeds), fn_output_signature=spec)
  return {**batch, **out}


def keep_images_draws(seed: tf.Tensor, n: tf.Tensor, keep_image_prob: float
                      ) -> tf.Tensor:
  """Task augmentation's per-sample draws: keep the goal images with ``keep_image_prob``."""
  return tf.random.stateless_uniform([n], seed) < keep_image_prob
