"""Statistics of an RLDS dataset in one streaming pass (bounded memory).

`compute` reads dense episodes inside ``tf.data`` (from a path, only the
fields it summarises), cuts them into batches of steps and reduces each in
NumPy into small mergeable summaries (count/mean/M2, min, max, a
`QuantileSketch`). Which values count, and what is skipped: docs/stats.md.

Example:
  >>> from rlds_lite import synthetic
  >>> stats = compute(synthetic.episodes(num_episodes=3, seed=0),
  ...                 progress=False)
  >>> stats.num_episodes, sorted(stats.fields)
  (3, ['action', 'discount', 'observation', 'reward'])
"""

import contextlib
import dataclasses
import functools
import os
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union
import warnings

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import beam_runs
from rlds_lite import op_context
from rlds_lite import option_objects
from rlds_lite import dense
from rlds_lite import source as source_lib
from rlds_lite import diagnosis
from rlds_lite import decoding
from rlds_lite import nest_paths
from rlds_lite import progress as progress_lib
from rlds_lite import rlds_types
from rlds_lite.stats import cache as cache_lib
from rlds_lite.dense import last_step as last_step_lib
from rlds_lite.stats import sketch as sketch_lib
from rlds_lite.stats import strings as strings_lib
from rlds_lite.stats import types
from rlds_lite.tfds import features as features_lib

_FLAGS = (rlds_types.IS_FIRST, rlds_types.IS_LAST, rlds_types.IS_TERMINAL)
_INVALID_ON_LAST = (rlds_types.ACTION, rlds_types.REWARD, rlds_types.DISCOUNT)
_VALID, _END, _LENGTH, _TERMINAL, _RETURN, _LAST = (
    '__valid', '__end', '__length', '__terminal', '__return', '__last')
_BATCH_BYTES = 4 << 20

PathLike = Union[str, os.PathLike]
TransformFn = Callable[[tf.data.Dataset], tf.data.Dataset]


@dataclasses.dataclass(frozen=True)
class Transform:
  """A ``Dataset -> Dataset`` function applied before the pass, and its name.

  Attributes:
    fn: the function of the dense episodes dataset.
    key: names it in the cache key; None: a hash of its source (no caching
      when the source is unavailable).

  Example:
    >>> Transform(lambda episodes: episodes.take(2), key='first-two').key
    'first-two'
  """
  fn: TransformFn
  key: Optional[str] = None

  def __call__(self, episodes: tf.data.Dataset) -> tf.data.Dataset:
    return self.fn(episodes)

  def cache_key(self) -> Optional[str]:
    """``key``, else a hash of the function's source (None if unavailable)."""
    return self.key or cache_lib.transform_key(self.fn)


def _skip_reason(spec: tf.TensorSpec) -> Optional[str]:
  """Why a step field (``[T, ...]`` spec) gets no statistics, or None."""
  if not (spec.dtype.is_floating or spec.dtype.is_integer or
          spec.dtype == tf.bool or spec.dtype == tf.string):
    return f'not numeric ({spec.dtype.name})'
  if not spec.shape[1:].is_fully_defined():
    return f'shape varies ({spec.shape[1:]})'
  if spec.dtype == tf.uint8 and spec.shape.rank >= 3:
    return f'image ({spec.dtype.name}{spec.shape[1:].as_list()})'
  return None


def _select(steps_spec: Any, keys: Optional[Sequence[str]]
            ) -> Tuple[Dict[str, tf.TensorSpec], Dict[str, str]]:
  """The step fields to summarise (path -> spec) and those skipped."""
  flat = dict(nest_paths.flatten_with_paths(steps_spec))
  if keys is None:
    candidates = [p for p in flat if p not in _FLAGS]
  else:
    candidates = []
    for key in keys:
      matches = nest_paths.paths_under(list(flat), key)
      candidates.extend(m for m in matches if m not in candidates)
  selected, skipped = {}, {}
  for path in sorted(candidates):
    reason = _skip_reason(flat[path])
    if reason is None:
      selected[path] = flat[path]
    elif keys is not None and path in [k.strip('/') for k in keys]:
      raise KeyError(f'step field {path!r} has no statistics: '
                     f'{reason}.')
    else:
      skipped[path] = reason
  return selected, skipped


def _is_masked(path: str) -> bool:
  return path.split('/')[0] in _INVALID_ON_LAST


def _rows_fn(selected: Dict[str, tf.TensorSpec], mask_last_step: bool,
             has_reward: bool) -> Callable[[Any], Dict[str, tf.Tensor]]:
  """Episode -> rows of the selected fields plus validity/episode columns."""

  @tf.autograph.experimental.do_not_convert
  def rows(episode):
    flat = dict(nest_paths.flatten_with_paths(episode[rlds_types.STEPS]))
    length = tf.shape(next(iter(flat.values())), out_type=tf.int64)[0]
    index = tf.range(length)
    end = tf.equal(index, length - 1)
    is_last = (tf.cast(flat[rlds_types.IS_LAST], tf.bool)
               if rlds_types.IS_LAST in flat else end)
    valid = (tf.logical_not(is_last) if mask_last_step
             else tf.ones_like(is_last))
    out = {path: flat[path] for path in selected}
    out[_VALID] = valid
    out[_LAST] = is_last
    out[_END] = end
    out[_LENGTH] = tf.fill([length], length)
    out[_TERMINAL] = (tf.cast(flat[rlds_types.IS_TERMINAL], tf.bool)
                      if rlds_types.IS_TERMINAL in flat
                      else tf.zeros_like(end))
    if has_reward:
      reward = tf.cast(flat[rlds_types.REWARD], tf.float64)
      row_mask = tf.reshape(valid, [-1] + [1] * (reward.shape.rank - 1))
      total = tf.reduce_sum(
          tf.where(row_mask, reward, tf.zeros_like(reward)), axis=0)
      out[_RETURN] = tf.broadcast_to(total, tf.shape(reward))
    return out

  return rows


def _needed_fields(steps_spec: Any, selected: Dict[str, tf.TensorSpec]
                   ) -> list:
  """The step fields the pass reads: the selected ones and the flags it uses.

  Never empty: without flags or selected fields, one field gives the length
  (the first, preferring fields that are not images).
  """
  paths = [p for p, _ in nest_paths.flatten_with_paths(steps_spec)]
  needed = [p for p in paths if p in selected or
            p in (rlds_types.IS_LAST, rlds_types.IS_TERMINAL)]
  if not needed:
    flat = dict(nest_paths.flatten_with_paths(steps_spec))
    cheap = [p for p in paths if _skip_reason(flat[p]) is None]
    needed = (cheap or paths)[:1]
  return needed


def _decoded_steps_spec(builder: tfds.core.DatasetBuilder) -> Any:
  """The ``[T, ...]`` spec of a dataset's decoded dense steps."""
  return decoding.dense_steps_spec(
      builder.info.features[rlds_types.STEPS].feature.get_tensor_spec())


def _dense_episodes(dataset_or_path: Any, split: str,
                    data_dir: Optional[PathLike],
                    step_fields: Optional[Sequence[str]] = None
                    ) -> tf.data.Dataset:
  if isinstance(dataset_or_path, tf.data.Dataset):
    spec = dataset_or_path.element_spec
    if not (isinstance(spec, dict) and rlds_types.STEPS in spec):
      raise TypeError('stats: the dataset must hold episodes (dicts with a '
                      f'{rlds_types.STEPS!r} entry), got {spec}.')
    if isinstance(spec[rlds_types.STEPS], tf.data.DatasetSpec):
      return dense.to_dense(dataset_or_path)
    return dataset_or_path
  _check_path_type(dataset_or_path)
  # TFDS caches datasets under 250 MiB in memory by default ("autocache"): a
  # one-pass reduction must not, or memory grows with the dataset.
  source = source_lib.as_source(dataset_or_path, split, data_dir=data_dir)
  return source.episodes(dense=True, fields=step_fields,
                         read_config=tfds.ReadConfig(try_autocache=False))


def _check_path_type(dataset_or_path: Any) -> None:
  """A TypeError unless it is a dataset of episodes, a path or a name."""
  if not isinstance(dataset_or_path, (tf.data.Dataset, str, os.PathLike,
                                      source_lib.Source)):
    raise TypeError('stats: expected a tf.data.Dataset of episodes, a dataset '
                    f'directory or a TFDS name, got '
                    f'{type(dataset_or_path).__name__}.')


def _num_episodes(dataset: tf.data.Dataset) -> Optional[int]:
  n = int(dataset.cardinality())
  return n if n >= 0 else None


def _batch_size(selected: Dict[str, tf.TensorSpec]) -> int:
  row_bytes = 64 + sum(  # A string: about 64 bytes.
      spec.shape[1:].num_elements() * (
          64 if spec.dtype == tf.string else spec.dtype.size)
      for spec in selected.values())
  return int(np.clip(_BATCH_BYTES // row_bytes, 256, 16384))


class _Accumulator:
  """The running summaries of the pass (Python per batch, NumPy inside)."""

  def __init__(self, selected: Dict[str, tf.TensorSpec],
               reward_shape: Optional[Sequence[int]], k: int):
    self.fields = {
        path: types.FieldStats.empty(path, spec.shape[1:], spec.dtype.name, k)
        for path, spec in selected.items() if spec.dtype != tf.string}
    self.strings = {
        path: strings_lib.StringStats.empty(path, spec.shape[1:])
        for path, spec in selected.items() if spec.dtype == tf.string}
    self.last_step_values = {
        path: 0 for path, spec in selected.items()
        if _is_masked(path) and spec.dtype != tf.string}
    self.length = types.FieldStats.empty('episode_length', (), 'int64', k)
    self.returns = (None if reward_shape is None else types.FieldStats.empty(
        'episode_return', reward_shape, 'float64', k))
    self.num_steps = self.num_episodes = self.num_terminated = 0

  def add(self, batch: Dict[str, np.ndarray]) -> int:
    """Adds a batch of rows; returns how many episodes ended in it."""
    end = batch[_END]
    self.num_steps += len(end)
    ended = int(end.sum())
    self.num_episodes += ended
    self.num_terminated += int(batch[_TERMINAL][end].sum())
    self.length.update(batch[_LENGTH][end])
    if self.returns is not None:
      self.returns.update(batch[_RETURN][end])
    valid = batch[_VALID]
    for path, field in self.fields.items():
      field.update(batch[path][valid] if _is_masked(path) else batch[path])
    for path, field in self.strings.items():
      field.update(batch[path][valid] if _is_masked(path) else batch[path])
    last = batch[_LAST]
    for path in self.last_step_values:
      values = batch[path][last]
      nonzero = (values != 0).reshape(len(values), -1).any(axis=1)
      self.last_step_values[path] += int(nonzero.sum())
    return ended

  def result(self, skipped: Dict[str, str],
             source: Dict[str, Any]) -> types.DatasetStats:
    return types.DatasetStats(
        self.num_episodes, self.num_steps, self.num_terminated,
        self.num_episodes - self.num_terminated, self.length, self.returns,
        self.fields, skipped, source, self.strings,
        {k: v for k, v in self.last_step_values.items() if v})


def _pass(episodes: tf.data.Dataset, selected: Dict[str, tf.TensorSpec],
          skipped: Dict[str, str], mask_last_step: bool, k: int,
          progress: bool, source: Dict[str, Any]) -> types.DatasetStats:
  """The one streaming pass over the episodes."""
  steps_spec = dict(nest_paths.flatten_with_paths(
      episodes.element_spec[rlds_types.STEPS]))
  reward = steps_spec.get(rlds_types.REWARD)
  has_reward = reward is not None and rlds_types.REWARD in selected
  acc = _Accumulator(selected, reward.shape[1:] if has_reward else None, k)
  rows = episodes.map(_rows_fn(selected, mask_last_step, has_reward),
                      num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  batches = rows.rebatch(_batch_size(selected)).prefetch(2)
  # progress=True means "on a terminal" here (its documented default).
  with progress_lib.bar(None if progress else False,
                        total=_num_episodes(episodes), unit=' episodes',
                        desc='stats') as bar:
    for batch in batches.as_numpy_iterator():
      bar.update(acc.add(batch))
  return acc.result(skipped, source)


def _check_no_slash_keys(builder: Optional[tfds.core.DatasetBuilder],
                         episodes: Optional[tf.data.Dataset]) -> None:
  """Raises a ValueError naming a key with a ``/``: fields are summarised
  and reported by their ``/`` path, which such a key would make ambiguous."""
  problem = (features_lib.slash_key_problem(builder.info.features)
             if builder is not None else None)
  if episodes is not None and not problem:
    found = nest_paths.slash_key(episodes.element_spec)
    problem = found and nest_paths.slash_key_problem(found)
  if problem:
    raise ValueError(f'stats.compute: {problem}.')




def _legacy(transform: Any, last_step: Any, legacy: Dict[str, Any]
            ) -> Tuple[Optional[Transform], Any]:
  """``transform`` as a `Transform`, and ``last_step``, old keywords too."""
  unknown = sorted(set(legacy) - {'transform_key', 'mask_last_step'})
  if unknown:
    raise TypeError(f'compute() got an unexpected keyword argument '
                    f'{unknown[0]!r}')
  if legacy.get('mask_last_step') is not None:
    warnings.warn("stats.compute: mask_last_step is deprecated; use "
                  "last_step='invalid' (mask) or 'valid' (keep).",
                  DeprecationWarning, stacklevel=3)
    last_step = 'invalid' if legacy['mask_last_step'] else 'valid'
  key = legacy.get('transform_key')
  if key is not None:
    option_objects.warn_once(
        ('stats.compute', 'transform_key'), 'stats.compute: transform_key= is '
        'now transform=Transform(fn, key=...); the old keyword will go in a '
        'later release.')
  if transform is not None and not isinstance(transform, Transform):
    transform = Transform(transform, key)
  elif transform is not None and key is not None:
    raise TypeError('stats.compute: pass the key in transform=Transform(fn, '
                    'key=...), not beside it.')
  return transform, last_step


def compute(dataset_or_path: Union[tf.data.Dataset, PathLike,
                                   source_lib.Source],
            *,
            split: Optional[str] = None,
            keys: Optional[Sequence[str]] = None,
            last_step: Union[last_step_lib.LastStep, str] = 'invalid',
            transform: Union[None, Transform, TransformFn] = None,
            cache: bool = True,
            progress: bool = True,
            data_dir: Optional[PathLike] = None,
            sketch_k: int = sketch_lib.DEFAULT_K,
            beam: Optional[beam_runs.Beam] = None,
            **legacy: Any) -> types.DatasetStats:
  """Statistics of an RLDS dataset, in one streaming pass (bounded memory).

  Args:
    dataset_or_path: a TFDS dataset directory, registered name or
      `rlds_lite.open` source, or a ``tf.data.Dataset`` of episodes (nested
      or dense steps).
    split: the split to read (paths and names: default ``'train'``; an
      opened source: its own).
    keys: step fields to summarise, as paths (``'observation/pos'``; a path
      selects everything below it). Default: every numeric and string field
      but the ``is_*`` flags, images skipped.
    last_step: ``'invalid'`` (default, RLDS): leave out the action, reward
      and discount of last steps; ``'valid'``: count them.
    transform: a `Transform` (or a bare ``Dataset -> Dataset`` function) of
      the dense episodes, applied before the pass.
    cache: read/write the result next to the dataset (paths and names only).
    progress: show a progress bar on a terminal (stderr).
    data_dir: TFDS data directory for registered names.
    sketch_k: quantile sketch capacity (accuracy vs memory).
    beam: a `rlds_lite.beam_runs.Beam` to run on Apache Beam, one shard
      file per work item, the shards' statistics merged (paths and names
      only; the same result within the sketches' rank error, counts, sums,
      min and max exact: docs/distributed.md).
    **legacy: ``transform_key=`` (now ``Transform(fn, key=)``) and
      ``mask_last_step=`` (now ``last_step=``), still taken, warning.

  Returns:
    A ``DatasetStats``.

  Example:
    >>> import tensorflow as tf
    >>> steps = {'action': [[1.0], [3.0], [0.0]], 'reward': [1.0, 2.0, 0.0],
    ...          'is_last': [False, False, True],
    ...          'is_terminal': [False, False, True]}
    >>> ds = tf.data.Dataset.from_tensors({'steps': steps})
    >>> s = compute(ds, progress=False)
    >>> s['action'].count, s['action'].mean.tolist(), s.num_terminated
    (2, [2.0], 1)
  """
  transform, last_step = _legacy(transform, last_step, legacy)
  with op_context.named('stats.compute'):
    policy = last_step_lib.as_last_step(last_step)
  mask = policy is last_step_lib.LastStep.INVALID
  if split is None and not isinstance(dataset_or_path, source_lib.Source):
    split = 'train'
  described = {'split': split, 'keys': _listed(keys),
               'last_step': policy.value, 'sketch_k': sketch_k}
  if isinstance(dataset_or_path, tf.data.Dataset):
    if beam is not None:
      raise TypeError('stats.compute: beam= needs a dataset directory or name '
                      '(its shard files are the work items), not a '
                      'tf.data.Dataset.')
    stats = _compute_episodes(dataset_or_path, keys, mask, transform,
                              (sketch_k, progress), described)
  else:
    _check_path_type(dataset_or_path)
    opened = source_lib.as_source(dataset_or_path, split, data_dir=data_dir)
    described['split'] = opened.split
    described['dataset'] = os.fspath(_label(dataset_or_path))
    stats = _compute_source(opened, keys, mask, transform, cache,
                            (sketch_k, progress), described, beam)
  _warn_left_out(stats, mask)
  _warn_nonfinite(stats)
  return stats


def _listed(keys: Optional[Sequence[str]]) -> Optional[list]:
  return None if keys is None else list(keys)


def _label(dataset_or_path: Any) -> Any:
  if isinstance(dataset_or_path, source_lib.Source):
    return dataset_or_path.label
  return dataset_or_path


def _compute_episodes(episodes: tf.data.Dataset,
                      keys: Optional[Sequence[str]], mask: bool,
                      transform: Optional[Transform],
                      pass_options: Tuple[int, bool],
                      described: Dict[str, Any]) -> types.DatasetStats:
  """`compute` of a ``tf.data.Dataset`` of episodes (never cached)."""
  episodes = _dense_episodes(episodes, None, None)
  if transform is not None:
    episodes = transform(episodes)
    described['transform'] = transform.cache_key()
  _check_no_slash_keys(None, episodes)
  selected, skipped = _select(episodes.element_spec[rlds_types.STEPS], keys)
  return _pass(episodes, selected, skipped, mask, *pass_options, described)


def _compute_source(opened: source_lib.Source,
                    keys: Optional[Sequence[str]], mask: bool,
                    transform: Optional[Transform], cache: bool,
                    pass_options: Tuple[int, bool],
                    described: Dict[str, Any],
                    beam: Optional[beam_runs.Beam] = None
                    ) -> types.DatasetStats:
  """`compute` of an opened split: cached next to it, read errors named."""
  builder, split = opened.builder, opened.split
  if beam is not None:
    _check_plain_split(builder, split)
    beam.options()  # Options that do not parse: refused before any pass.
  episodes = None
  if transform is not None:
    episodes = transform(_dense_episodes(opened, split, None))
    described['transform'] = transform.cache_key()
  _check_no_slash_keys(builder, episodes)
  dataset_dir = key = None
  if cache and (transform is None or described['transform']):
    dataset_dir = os.fspath(builder.data_dir)
    key = cache_lib.cache_key(dataset_dir, {**described, 'dataset': None})
    cached = cache_lib.read(dataset_dir, key)
    if cached is not None:
      return cached
  if beam is not None:
    stats = _beam_pass(beam, builder, split, keys, mask, transform,
                       pass_options[0], described)
  elif episodes is None:
    # Without a transform, only the fields summarised are read (and
    # decoded): the pass never decodes the images it skips.
    steps_spec = _decoded_steps_spec(builder)
    selected, skipped = _select(steps_spec, keys)
    episodes = _dense_episodes(opened, split, None,
                               _needed_fields(steps_spec, selected))
    with diagnosis.named_read_errors(builder, split):
      stats = _pass(episodes, selected, skipped, mask, *pass_options,
                    described)
  else:
    selected, skipped = _select(episodes.element_spec[rlds_types.STEPS], keys)
    with diagnosis.named_read_errors(builder, split):
      stats = _pass(episodes, selected, skipped, mask, *pass_options,
                    described)
  if key is not None:
    try:
      cache_lib.write(dataset_dir, key, stats)
    except OSError as e:  # The statistics are still good: warn, go on.
      logging.warning('stats: not cached: %s', e)
  return stats


def _check_plain_split(builder: tfds.core.DatasetBuilder, split: str) -> None:
  if split not in builder.info.splits:
    raise ValueError(f'stats.compute: beam= reads whole splits (their shard '
                     f'files); pass a plain split name, got {split!r} (splits: '
                     f'{sorted(builder.info.splits.keys())}).')


def _shard_stats(shard: int, path: str, split: str,
                 keys: Optional[Sequence[str]], last_step: str,
                 transform: Optional[Transform],
                 sketch_k: int) -> types.DatasetStats:
  """The statistics of one shard file of a split (a Beam work item)."""
  with warnings.catch_warnings():  # Warned once, of the merged result.
    warnings.simplefilter('ignore')
    stats = compute(path, split=f'{split}[{shard}shard:{shard + 1}shard]',
                    keys=keys, last_step=last_step, transform=transform,
                    cache=False, progress=False, sketch_k=sketch_k)
  return dataclasses.replace(stats, source={})


def _merge_two(a: types.DatasetStats,
               b: types.DatasetStats) -> types.DatasetStats:
  return dataclasses.replace(types.merge(a, b), source={})


def _beam_pass(beam: beam_runs.Beam, builder: tfds.core.DatasetBuilder,
               split: str, keys: Optional[Sequence[str]], mask: bool,
               transform: Optional[Transform], sketch_k: int,
               described: Dict[str, Any]) -> types.DatasetStats:
  """`_pass` as a Beam job: each shard's statistics, merged."""
  shard_stats = functools.partial(
      _shard_stats, path=os.fspath(builder.data_dir), split=split,
      keys=_listed(keys), last_step='invalid' if mask else 'valid',
      transform=transform, sketch_k=sketch_k)
  num_shards = builder.info.splits[split].num_shards
  merged = beam_runs.map_merge(beam, range(num_shards), shard_stats,
                               _merge_two, 'Stats')
  if not merged:
    raise ValueError(f'stats.compute: split {split!r} of '
                     f'{os.fspath(builder.data_dir)!r} has no shard files.')
  return dataclasses.replace(merged[0], source=described)


def _warn_left_out(stats: types.DatasetStats, masked: bool) -> None:
  """The one `LastStepValuesWarning` of a call that left values out."""
  if masked:
    last_step_lib.warn_last_step_values('stats', stats.last_step_values,
                                        stats.num_episodes, stacklevel=4)


def _warn_nonfinite(stats: types.DatasetStats) -> None:
  """The one `NonFiniteValuesWarning` of a call, naming the fields."""
  message = stats.nonfinite_message()
  if message:
    warnings.warn(f'stats: {message}', types.NonFiniteValuesWarning,
                  stacklevel=3)
