"""Octo's ``make_single_dataset`` and ``make_interleaved_dataset``: a mixture's batches under a planned memory budget.

Example:
  >>> import tempfile
  >>> from rlds_lite import synthetic
  >>> path = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=4,
  ...                                 length=6, cameras={'image': (16, 16)})
  >>> kwargs = {'name': path, 'data_dir': None,
  ...           'image_obs_keys': {'primary': 'image', 'wrist': None}}
  >>> ds = make_interleaved_dataset([kwargs], train=True, shuffle_buffer_size=1000,
  ...     traj_transform_kwargs={'window_size': 2, 'action_horizon': 3},
  ...     frame_transform_kwargs={'resize_size': (8, 8)}, batch_size=4, seed=0)
  >>> batch = next(iter(ds))
  >>> batch['observation']['image_primary'].shape.as_list(), batch['action'].shape.as_list()
  ([4, 2, 8, 8, 3], [4, 2, 3, 7])
"""

import logging
import os
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from rlds_lite import byte_sizes
from rlds_lite import op_context
from rlds_lite.pipeline import mixing
from rlds_lite.pipeline import robot_memory
from rlds_lite.pipeline import robot_samples as engine
from rlds_lite.octo import augment as augment_lib
from rlds_lite.octo import frames as frames_lib
from rlds_lite.octo import reading
from rlds_lite.octo import samples as samples_lib
from rlds_lite.octo import trajectory as traj_lib

__all__ = ['make_single_dataset', 'make_interleaved_dataset', 'MixturePlan',
           'DatasetPlan', 'allocate_threads', 'default_memory_budget',
           'frame_transform_bytes']

_LOG = logging.getLogger('rlds_lite')
_AUTOTUNE = tf.data.AUTOTUNE
_UNBATCHED = 64
"""Samples per internal batch when ``batch_size`` is None (then unbatched)."""
_TRAJ_KEYS = {'window_size', 'action_horizon', 'goal_relabeling_strategy',
              'goal_relabeling_kwargs', 'task_augment_strategy',
              'task_augment_kwargs', 'max_action_dim', 'max_proprio_dim',
              'skip_unlabeled', 'max_action', 'max_proprio',
              'subsample_length', 'post_chunk_transforms',
              'num_parallel_calls'}
_FRAME_KEYS = {'resize_size', 'depth_resize_size', 'image_augment_kwargs',
               'image_dropout_prob', 'image_dropout_keep_key',
               'num_parallel_calls'}


@op_context.named('make_single_dataset')
def make_single_dataset(dataset_kwargs: Mapping[str, Any], *, train: bool,
                        traj_transform_kwargs: Mapping[str, Any] = {},  # pylint: disable=dangerous-default-value
                        frame_transform_kwargs: Mapping[str, Any] = {}  # pylint: disable=dangerous-default-value
                        ) -> tf.data.Dataset:
  """Octo's ``make_single_dataset``: one dataset's transformed trajectories, with ``.dataset_statistics``.

  Example:
    >>> import tempfile
    >>> from rlds_lite import synthetic
    >>> path = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=2,
    ...                                 length=3, cameras={'image': (8, 8)})
    >>> ds = make_single_dataset({'name': path, 'data_dir': None,
    ...                           'image_obs_keys': {'primary': 'image'}},
    ...                          train=True,
    ...                          frame_transform_kwargs={'resize_size': (4, 4)})
    >>> next(iter(ds))['observation']['image_primary'].shape.as_list()
    [3, 1, 4, 4, 3]
    >>> int(ds.dataset_statistics['num_trajectories'])
    2
  """
  dataset, statistics = reading.make_dataset_from_rlds(**dataset_kwargs,
                                                       train=train)
  dataset = traj_lib.apply_trajectory_transforms(
      dataset, **traj_transform_kwargs, train=train)
  dataset = frames_lib.apply_frame_transforms(
      dataset, **frame_transform_kwargs, train=train)
  dataset.dataset_statistics = statistics
  return dataset


def allocate_threads(n: Optional[int], weights: np.ndarray) -> np.ndarray:
  """Octo's thread allocation: ``n`` split by weight, at least 1 each (None: AUTOTUNE each).

  Example:
    >>> allocate_threads(8, np.array([0.5, 0.3, 0.2])).tolist()
    [4, 2, 2]
  """
  weights = np.asarray(weights, np.float64)
  if n is None:
    return np.full(len(weights), _AUTOTUNE)
  if len(weights) > n:
    raise ValueError(f'{n} threads cannot serve {len(weights)} datasets '
                     '(at least one each).')
  weights = weights / weights.sum()
  allocation = np.zeros(len(weights), int)
  while True:
    small = (weights * n < 1) & (weights > 0)
    if not small.any():
      break
    n -= int(small.sum())
    allocation += small
    weights[small] = 0
    weights = weights / weights.sum()
  fractional, integral = np.modf(weights * n)
  allocation += integral.astype(int)
  for i in np.argsort(fractional)[::-1][:int(n - integral.sum())]:
    allocation[i] += 1
  return allocation


def default_memory_budget() -> int:
  """An eighth of the machine's memory, at least 1 GiB (bytes).

  (A sixteenth, 1.5 GB on bench_octo's 23 GB machine, pooled one episode
  of its third dataset: 20 distinct episodes per batch against the 10K
  recipe's 48.)
  """
  total = os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE')
  return max(total // 8, 1 << 30)


AUGMENT_FLOAT_COPIES = 3
"""Float32 copies of a decoded batch the augmentation holds at once, at most
(the crop's output and XLA's temporaries; the colour ops write uint8).
Measured on bench_octo (batches of 31.5 MB of uint8 frames): 300-350 MB
more RSS with Octo's default augmentation than without."""
FRAME_COPIES = 3
"""uint8 copies of a decoded batch beside the datasets' own: the mixture's
concatenation, its prefetch, the batch the trainer holds."""


def frame_transform_bytes(layouts: Sequence[samples_lib.Layout],
                          batch_size: int, augmented: bool) -> int:
  """The memory of the mixture's batch-wide stages: concatenation, augmentation, prefetch (bytes).

  Example:
    >>> layout = samples_lib.Layout(name='a', cameras={}, all_cameras=('p',),
    ...     sizes={'p': (8, 8)}, window=2, horizon=1, goal=False, language=False,
    ...     own_language=False, proprio=None, own_proprio=False,
    ...     keep_image_prob=None, action_dim=None)
    >>> frame_transform_bytes([layout], 4, augmented=True)   # 4 x 2 x 8 x 8 x 3, 15 times
    23040
  """
  camera_bytes: Dict[str, int] = {}
  for layout in layouts:
    for camera in layout.all_cameras:
      spec = layout.cameras.get(camera)
      h, w = layout.sizes.get(camera) or (spec.shape[:2] if spec else (1, 1))
      camera_bytes[camera] = max(camera_bytes.get(camera, 0), h * w * 3)
  frames = sum(camera_bytes.values()) * max(
      (layout.window + layout.goal for layout in layouts), default=0)
  copies = FRAME_COPIES + (4 * AUGMENT_FLOAT_COPIES if augmented else 0)
  return copies * batch_size * frames


class DatasetPlan(NamedTuple):
  """One dataset's part of a mixture: its weight, samples per batch and decoding plan."""
  name: str
  weight: float
  samples_per_batch: int
  decode: robot_memory.DecodePlan


class MixturePlan(NamedTuple):
  """How ``make_interleaved_dataset`` reads a mixture, and the memory it plans (logged, returned as ``.plan``)."""
  memory_budget: int
  datasets: Tuple[DatasetPlan, ...]
  frame_transforms: int = 0
  """Bytes of the batch-wide stages (`frame_transform_bytes`)."""

  @property
  def memory(self) -> int:
    """Estimated bytes of all the datasets' pools, batches and buffers, and of the batch-wide stages."""
    return self.frame_transforms + sum(
        d.decode.memory.total for d in self.datasets
        if d.decode.memory is not None)

  def __repr__(self) -> str:
    lines = [f'MixturePlan(memory_budget={byte_sizes.format_bytes(self.memory_budget)}, '
             f'estimate={byte_sizes.format_bytes(self.memory)}, of which '
             f'{byte_sizes.format_bytes(self.frame_transforms)} batch-wide '
             '(concatenation, augmentation, prefetch):']
    for d in self.datasets:
      lines.append(f'  {d.name}: weight {d.weight:.3f}, {d.samples_per_batch} '
                   f'per batch, {d.decode!r}')
    return '\n'.join(lines) + ')'


def _checked(kwargs: Mapping[str, Any], allowed: set, what: str,
             ) -> Dict[str, Any]:
  unknown = sorted(set(kwargs) - allowed)
  if unknown:
    raise TypeError(f'{what} got unexpected keys {unknown}.')
  return dict(kwargs)


def _weights(kwargs_list: Sequence[Mapping[str, Any]],
             sample_weights: Optional[Sequence[float]], balance: bool,
             statistics: List[Dict[str, Any]]) -> np.ndarray:
  names = [_name(k) for k in kwargs_list]
  if not sample_weights:
    sample_weights = [1.0] * len(kwargs_list)
  if len(sample_weights) != len(kwargs_list):
    raise ValueError(f'sample_weights has {len(sample_weights)} weights for '
                     f'{len(kwargs_list)} datasets {names}.')
  weights = np.asarray(sample_weights, np.float64)
  if (weights < 0).any() or not weights.sum() > 0:
    raise ValueError(f'sample_weights must be non-negative with a positive '
                     f'sum, got {list(sample_weights)} for {names}.')
  if balance:
    weights = weights * np.array([float(s['num_transitions'])
                                  for s in statistics])
  return weights / weights.sum()


def _name(kwargs: Mapping[str, Any]) -> str:
  return os.fspath(getattr(kwargs.get('name'), 'label', kwargs.get('name')))


def _layouts(specs: List[Dict[str, Any]], names: List[str],
             traj: Dict[str, Any], frame: Dict[str, Any]
             ) -> List[samples_lib.Layout]:
  """Every dataset's `Layout` of the mixture's common structure (missing keys padded)."""
  cameras = sorted({c for s in specs for c in frames_lib.names_with(
      s['element']['observation'], 'image_')})
  proprio = [s['element']['observation'].get('proprio') for s in specs]
  sizes_seen = {p.shape[-1] for p in proprio if p is not None}
  proprio_size = traj.get('max_proprio_dim')
  if proprio_size is None and sizes_seen:
    if len(sizes_seen) > 1:
      raise ValueError(f'the datasets {names} have proprio of sizes '
                       f'{sorted(sizes_seen)}; give max_proprio_dim.')
    proprio_size = sizes_seen.pop()
  actions = {n: s['element']['action'].shape[-1] for n, s in zip(names, specs)}
  if traj.get('max_action_dim') is None and len(set(actions.values())) > 1:
    raise ValueError(f'the datasets have actions of sizes {actions}; give '
                     'max_action_dim.')
  language = any('language_instruction' in s['element']['task'] for s in specs)
  sizes = frames_lib.sizes_for(frame.get('resize_size', {}), cameras)
  augment = traj.get('task_augment_kwargs', {})
  return [samples_lib.Layout(
      name=name, cameras=s['cameras'], all_cameras=tuple(cameras),
      sizes=sizes, window=traj.get('window_size', 1),
      horizon=traj.get('action_horizon', 1),
      goal=traj.get('goal_relabeling_strategy') is not None,
      language=language,
      own_language='language_instruction' in s['element']['task'],
      proprio=proprio_size, own_proprio=p is not None,
      keep_image_prob=(augment.get('keep_image_prob')
                       if traj.get('task_augment_strategy') else None),
      action_dim=traj.get('max_action_dim'))
          for name, s, p in zip(names, specs, proprio)]


def _check_supported(traj: Dict[str, Any], frame: Dict[str, Any]) -> None:
  """What the planned path does not offer (make_single_dataset does)."""
  strategy = traj.get('goal_relabeling_strategy')
  if strategy not in (None, 'uniform'):
    raise ValueError(f"goal_relabeling_strategy must be 'uniform' or None, "
                     f'got {strategy!r}.')
  if traj.get('goal_relabeling_kwargs'):
    raise ValueError('make_interleaved_dataset: goal_relabeling_kwargs '
                     f'{sorted(traj["goal_relabeling_kwargs"])} are not offered '
                     '(goals are uniform over the rest of the trajectory); '
                     'use make_single_dataset.')
  augment = traj.get('task_augment_strategy')
  if augment not in (None, 'delete_task_conditioning'):
    raise ValueError("task_augment_strategy must be 'delete_task_conditioning' "
                     f'or None, got {augment!r}.')
  for key in ('post_chunk_transforms',):
    if traj.get(key):
      raise ValueError(f'make_interleaved_dataset: {key} are not offered on '
                       'the planned path (the trajectories are never chunked '
                       'whole); use make_single_dataset.')
  if frame.get('depth_resize_size'):
    raise ValueError('make_interleaved_dataset: depth cameras are not offered '
                     'on the planned path; use make_single_dataset.')


def _value_bytes(layout: samples_lib.Layout, action_dim: int) -> int:
  return 8 * layout.window * layout.horizon * action_dim + 1024


def _fitting(budget: int, sizes: robot_memory.Sizes, kind: Any, batch: int
             ) -> robot_memory.DecodePlan:
  """The first plan that fits ``budget``, pooling fewer episodes (halved) before giving up."""
  try:
    return robot_memory.pick(budget, sizes, kind, batch_size=batch, prefetch=1)
  except ValueError as error:
    pool = min(batch, robot_memory.MAX_POOL_EPISODES, sizes.num_episodes)
    while pool > 1:
      pool //= 2
      try:
        return robot_memory.pick(budget, sizes, kind, batch_size=batch,
                                 prefetch=1, pool_episodes=pool)
      except ValueError:
        continue
    raise error


def _plans(names: List[str], weights: np.ndarray, counts: List[int],
           layouts: List[samples_lib.Layout], sources: List[Any],
           statistics: List[Dict[str, Any]], budget: Optional[int],
           train: bool, augmented: bool) -> MixturePlan:
  """Each dataset's decoding plan: the budget, less the batch-wide stages, shared by what its pools hold."""
  given = budget is not None
  budget = budget if given else default_memory_budget()
  batch_wide = frame_transform_bytes(layouts, sum(counts), augmented)
  if given and budget <= batch_wide:
    raise ValueError(
        f'memory_budget {byte_sizes.format_bytes(budget)} does not hold the '
        f'batch-wide stages alone ({byte_sizes.format_bytes(batch_wide)}: '
        f'concatenating, augmenting and prefetching batches of {sum(counts)} '
        'samples); raise the budget or lower batch_size.')
  sized = []
  for layout, source, stats in zip(layouts, sources, statistics):
    split = reading.split_for(source, train)
    info = source.builder.info.splits
    examples = max(1, info[split].num_examples)
    steps = float(stats['num_transitions']) * examples / max(
        1, int(stats['num_trajectories']))
    # The base split's metadata: a sliced one ('train[:95%]') has no bytes.
    sized.append(robot_memory.dataset_sizes(
        source.builder, split.split('[')[0], int(steps), samples_lib.image_specs(layout),
        samples_lib.image_sizes(layout), layout.window,
        'future' if layout.goal else None,
        _value_bytes(layout, int(np.size(stats['action']['mean'])))))
  shares = np.array([c * s.step_bytes for c, s in zip(counts, sized)],
                    np.float64)
  shares = shares / shares.sum()
  datasets = []
  for name, w, c, layout, sizes, share in zip(names, weights, counts, layouts,
                                              sized, shares):
    kind = samples_lib.robot_kind(layout)
    try:
      plan = _fitting(int(max(budget - batch_wide, 0) * share), sizes, kind,
                      c)
    except ValueError as e:
      if given:
        raise ValueError(f'dataset {name!r}: {e}') from None
      plan = robot_memory.pick(None, sizes, kind, batch_size=c, prefetch=1)
    datasets.append(DatasetPlan(name, float(w), c, plan))
  return MixturePlan(budget, tuple(datasets), batch_wide)


def _dataset_batches(kwargs: Dict[str, Any], layout: samples_lib.Layout,
                     plan: DatasetPlan, statistics: Dict[str, Any], *,
                     train: bool, traj: Dict[str, Any], threads: int,
                     reads: int, seed: Optional[int]) -> tf.data.Dataset:
  """One dataset's Octo batches of ``plan.samples_per_batch`` samples, endless."""
  kwargs = {**kwargs, 'num_parallel_calls': threads,
            'num_parallel_reads': reads, 'dataset_statistics': statistics,
            'seed': seed}
  trajectories, _ = reading.make_dataset_from_rlds(**kwargs, train=train)
  trajectories = traj_lib.filters(
      trajectories, traj.get('skip_unlabeled', False), traj.get('max_action'),
      traj.get('max_proprio'))
  episodes = samples_lib.engine_episodes(trajectories.repeat(), layout,
                                         threads)
  kind = samples_lib.robot_kind(layout)
  if train and traj.get('subsample_length') is not None:
    kind = kind.__class__(**{**kind.dense_kwargs(),
                             'max_samples': traj['subsample_length']})
  decode = plan.decode
  return engine.robot_samples_dataset(
      episodes, kind, plan.samples_per_batch, decode=decode.decode,
      frames=engine.FrameDecoding(
          image_size=samples_lib.image_sizes(layout),
          resize_method='lanczos3',
          segment_steps=decode.segment_steps,
          pool_episodes=decode.pool_episodes, prefetch=0,
          num_parallel_calls=threads,
          image_specs=samples_lib.image_specs(layout)),
      shuffle=True, seed=seed, drop_last_batch=True)


def _octo_batches(batches: tf.data.Dataset, layout: samples_lib.Layout,
                  seeds: tf.data.Dataset, train: bool) -> tf.data.Dataset:
  def octo(batch, seed):
    n = tf.shape(batch['octo']['length'])[0]
    keep = None
    if train and layout.keep_image_prob is not None:
      keep = samples_lib.keep_images_draws(seed, n, layout.keep_image_prob)
    return samples_lib.to_octo(batch, layout, keep)
  return tf.data.Dataset.zip((batches, seeds)).map(octo, _AUTOTUNE)


def _seeds(seed: Optional[int]) -> tf.data.Dataset:
  return tf.data.Dataset.random(seed=seed).batch(2)


def _opened(kwargs_list: List[Dict[str, Any]], train: bool):
  """Each dataset opened once (its ``name`` becomes the `Source`): names, statistics, element specs, cameras."""
  sources = [reading.open_source(k['name'], k.get('data_dir'))
             for k in kwargs_list]
  for k, source in zip(kwargs_list, sources):
    k['name'], k['data_dir'] = source, None
  names = [reading.dataset_name(s) for s in sources]
  duplicates = sorted({n for n in names if names.count(n) > 1})
  if duplicates:
    raise ValueError(f'the mixture names {duplicates} more than once.')
  statistics, specs = [], []
  for k, name in zip(kwargs_list, names):
    trajectories, stats = reading.make_dataset_from_rlds(**k, train=train)
    depth = frames_lib.names_with(trajectories.element_spec['observation'],
                                  'depth_')
    if depth:
      raise ValueError(f'make_interleaved_dataset: dataset {name!r} has depth '
                       f'cameras {depth}, which the planned path does not '
                       'offer; use make_single_dataset.')
    statistics.append(stats)
    specs.append({'element': trajectories.element_spec,
                  'cameras': samples_lib.camera_specs(trajectories, name)})
    k['dataset_statistics'] = stats
  return sources, names, statistics, specs


def _augmented(dataset: tf.data.Dataset, frame: Dict[str, Any],
               seed: Optional[int]) -> tf.data.Dataset:
  """Octo's image dropout and augmentation of every batch (`octo.augment`), seeded."""
  options = {'image_augment_kwargs': frame.get('image_augment_kwargs', {}),
             'image_dropout_prob': frame.get('image_dropout_prob', 0.0),
             'image_dropout_keep_key': frame.get('image_dropout_keep_key')}
  one = options['image_augment_kwargs']
  if one:
    for camera, kw in ({'': one}.items() if 'augment_order' in one
                       else dict(one).items()):
      frames_lib.check_augment_kwargs(kw, camera)
  seeds = _seeds(None if seed is None else seed + 7)
  return tf.data.Dataset.zip((dataset, seeds)).map(
      lambda b, s: augment_lib.augment_batch(
          b, samples_lib.sample_seeds(s, tf.shape(b['dataset_name'])[0]),
          options), _AUTOTUNE)


@op_context.named('make_interleaved_dataset')
def make_interleaved_dataset(
    dataset_kwargs_list: Sequence[Mapping[str, Any]],
    sample_weights: Optional[Sequence[float]] = None, *, train: bool,
    shuffle_buffer_size: int,
    traj_transform_kwargs: Mapping[str, Any] = {},  # pylint: disable=dangerous-default-value
    frame_transform_kwargs: Mapping[str, Any] = {},  # pylint: disable=dangerous-default-value
    batch_size: Optional[int] = None, balance_weights: bool = False,
    traj_transform_threads: Optional[int] = None,
    traj_read_threads: Optional[int] = None,
    memory_budget: Any = None, seed: Optional[int] = None) -> tf.data.Dataset:
  """Octo's mixture: batches of every dataset's samples by weight, frames decoded once per pooled segment.

  Octo's arguments and element structure; what differs (docs/octo.md):
  each batch holds ``exact_counts(weights, batch_size)`` samples of each
  dataset, ``shuffle_buffer_size`` is accepted but the memory is planned
  (``memory_budget``; ``.plan``), and a ``seed`` gives the same batches.

  Args:
    dataset_kwargs_list: `make_dataset_from_rlds` keywords per dataset.
    sample_weights: per dataset (None: equal); normalised.
    train: training split, task augmentation, image augmentation.
    shuffle_buffer_size: Octo's; accepted, logged (the plan decides).
    traj_transform_kwargs: `apply_trajectory_transforms` keywords.
    frame_transform_kwargs: `apply_frame_transforms` keywords.
    batch_size: samples per batch (None: unbatched samples).
    balance_weights: weights times each dataset's transitions.
    traj_transform_threads, traj_read_threads: split by weight.
    memory_budget: bytes or '4GB' (None: `default_memory_budget`).
    seed: the seed of every draw (None: random).

  Returns:
    The batches, with ``.dataset_statistics``, ``.sample_weights``, ``.plan``.
  """
  traj = _checked(traj_transform_kwargs, _TRAJ_KEYS, 'traj_transform_kwargs')
  frame = _checked(frame_transform_kwargs, _FRAME_KEYS,
                   'frame_transform_kwargs')
  _check_supported(traj, frame)
  kwargs_list = [dict(k) for k in dataset_kwargs_list]
  if not kwargs_list:
    raise ValueError('dataset_kwargs_list is empty.')
  if sample_weights and len(sample_weights) != len(kwargs_list):
    raise ValueError(f'sample_weights has {len(sample_weights)} weights for '
                     f'{len(kwargs_list)} datasets '
                     f'{[_name(k) for k in kwargs_list]}.')
  sources, names, statistics, specs = _opened(kwargs_list, train)
  weights = _weights(kwargs_list, sample_weights, balance_weights, statistics)
  total = batch_size or _UNBATCHED
  counts = mixing.exact_counts(weights, total)
  empty = [n for n, c in zip(names, counts) if not c]
  if empty:
    raise ValueError(f'with batch size {total} the weights '
                     f'{np.round(weights, 4).tolist()} give no sample of '
                     f'{empty}; raise batch_size or their weights.')
  layouts = _layouts(specs, names, traj, frame)
  budget = robot_memory.parse_budget(memory_budget)
  plan = _plans(names, weights, counts, layouts, sources, statistics, budget,
                train, bool(train and frame.get('image_augment_kwargs')))
  _LOG.info('make_interleaved_dataset: shuffle_buffer_size %s accepted; the '
            'plan decides what is held: %r', shuffle_buffer_size, plan)
  threads = allocate_threads(traj_transform_threads, weights)
  reads = allocate_threads(traj_read_threads, weights)
  parts = []
  for i, (k, layout, part) in enumerate(zip(kwargs_list, layouts,
                                            plan.datasets)):
    part_seed = None if seed is None else seed * 1000003 + i
    batches = _dataset_batches(k, layout, part, k['dataset_statistics'],
                               train=train, traj=traj, threads=int(threads[i]),
                               reads=int(reads[i]), seed=part_seed)
    parts.append(_octo_batches(batches, layout, _seeds(part_seed), train))
  dataset = tf.data.Dataset.zip(tuple(parts)).map(
      lambda *bs: tf.nest.map_structure(lambda *x: tf.concat(x, 0), *bs),
      _AUTOTUNE)
  if train and (frame.get('image_augment_kwargs') or
                frame.get('image_dropout_prob')):
    dataset = _augmented(dataset, frame, seed)
  if batch_size is None:
    dataset = dataset.unbatch()
  dataset = dataset.prefetch(1)
  dataset.dataset_statistics = dict(zip(names, statistics))
  dataset.sample_weights = weights
  dataset.plan = plan
  return dataset
