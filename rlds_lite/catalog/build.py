"""Build the episode catalog of a split in one streaming pass (cached).

The columns, and what ``last_step`` does to ``return``: ``docs/episodes.md``.
"""

import dataclasses
import functools
import os
import re
from typing import Any, Dict, List, Optional, Tuple, Union

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import beam_runs
from rlds_lite import op_context
from rlds_lite import source as source_lib
from rlds_lite import dataset_files
from rlds_lite import diagnosis
from rlds_lite import decoding
from rlds_lite import nest_paths
from rlds_lite import progress as progress_lib
from rlds_lite import rlds_types
from rlds_lite.catalog import records as records_lib
from rlds_lite.catalog import storage
from rlds_lite.catalog import table
from rlds_lite.dense import last_step as last_step_lib

__all__ = ['episodes', 'catalog_of_builder', 'is_language_field',
           'is_language_name', 'left_out_last_rewards', 'warn_left_out']

PathLike = Union[str, os.PathLike]

_LANGUAGE_RE = re.compile(
    r'(instruction|language|^task$|^task_|_task$|prompt|utterance|command)',
    re.IGNORECASE)
_LENGTH_FIELDS = (rlds_types.IS_LAST, rlds_types.IS_FIRST,
                  rlds_types.IS_TERMINAL, rlds_types.REWARD,
                  rlds_types.DISCOUNT)
_BATCH = 256
_EPISODE_ID = 'episode_id'


def _leaves(feature: Any, prefix: str = '') -> List[Tuple[str, Any]]:
  """(path, leaf feature) of a feature, nested dicts flattened with '/'."""
  if isinstance(feature, tfds.features.FeaturesDict):
    found = []
    for key in feature.keys():
      found.extend(_leaves(feature[key], f'{prefix}{key}/'))
    return found
  return [(prefix.rstrip('/'), feature)]


def _dtype(feature: Any) -> tf.DType:
  return tf.as_dtype(feature.np_dtype)


def _is_scalar(feature: Any) -> bool:
  shape = getattr(feature, 'shape', None)
  return shape is not None and tuple(shape) == ()


def is_language_name(path: str) -> bool:
  """Whether a field's name is one of a language instruction (its last part).

  Example:
    >>> is_language_name('steps/natural_language_instruction')
    True
    >>> is_language_name('task'), is_language_name('file_path')
    (True, False)
  """
  return bool(_LANGUAGE_RE.search(path.split('/')[-1]))


def is_language_field(path: str, feature: Any) -> bool:
  """Whether a step feature holds a language instruction (by name and type).

  Example:
    >>> is_language_field('language_instruction', tfds.features.Text())
    True
    >>> is_language_field('observation/image', tfds.features.Image())
    False
  """
  return (_is_scalar(feature) and _dtype(feature) == tf.string and
          not isinstance(feature, tfds.features.Image) and
          is_language_name(path))


def _is_metadata_column(feature: Any) -> bool:
  if not _is_scalar(feature):
    return False
  dtype = _dtype(feature)
  return dtype == tf.string or dtype == tf.bool or dtype.is_integer or (
      dtype.is_floating)


@dataclasses.dataclass(frozen=True)
class _Plan:
  """Which features the pass parses, and what it makes of them."""
  steps: Dict[str, Any]  # step path -> leaf feature
  metadata: Dict[str, Any]  # episode path -> leaf feature
  length_field: str
  reward: Optional[str]
  is_terminal: Optional[str]
  language: Tuple[str, ...]
  episode_id: Optional[str]

  def features(self) -> tfds.features.FeaturesDict:
    """The subset of the dataset's features to parse."""
    return tfds.features.FeaturesDict({
        rlds_types.STEPS: tfds.features.Dataset(
            nest_paths.nest_from_paths(self.steps)),
        **nest_paths.nest_from_paths(self.metadata)})


def _plan(features: tfds.features.FeaturesDict) -> _Plan:
  steps_feature = features[rlds_types.STEPS].feature
  step_leaves = dict(_leaves(steps_feature))
  chosen: Dict[str, Any] = {}
  reward = rlds_types.REWARD
  if reward in step_leaves and _dtype(step_leaves[reward]) != tf.string and (
      not isinstance(step_leaves[reward], tfds.features.Image)):
    chosen[reward] = step_leaves[reward]
  else:
    reward = None
  is_terminal = rlds_types.IS_TERMINAL if (
      rlds_types.IS_TERMINAL in step_leaves) else None
  if is_terminal:
    chosen[is_terminal] = step_leaves[is_terminal]
  language = tuple(sorted(path for path, leaf in step_leaves.items()
                          if is_language_field(path, leaf)))
  chosen.update((path, step_leaves[path]) for path in language)
  length_field = next((f for f in _LENGTH_FIELDS if f in step_leaves), None)
  if length_field is None:  # Odd steps: the first scalar, else any field.
    scalars = [p for p, leaf in step_leaves.items() if _is_scalar(leaf)]
    length_field = (scalars or list(step_leaves))[0]
  chosen.setdefault(length_field, step_leaves[length_field])
  metadata = {path: leaf for path, leaf in sorted(_leaves(features),
                                                 key=lambda item: item[0])
              if path.split('/')[0] != rlds_types.STEPS and
              _is_metadata_column(leaf)}
  ids = [p for p in metadata if p.split('/')[-1] == _EPISODE_ID]
  episode_id = _EPISODE_ID if _EPISODE_ID in ids else (
      ids[0] if len(ids) == 1 else None)
  return _Plan(chosen, metadata, length_field, reward, is_terminal, language,
               episode_id)


def _row_fn(plan: _Plan, policy: last_step_lib.LastStep):
  """Serialized episode -> the catalog values of that episode (tensors)."""
  parse_features = plan.features()

  @tf.autograph.experimental.do_not_convert
  def row(record):
    episode = parse_features.deserialize_example(
        record, decoders={rlds_types.STEPS: tfds.decode.SkipDecoding()})
    flat = {path: _decoded(plan.steps[path], value) for path, value in
            _leaves_of_values(episode[rlds_types.STEPS])}
    length = tf.shape(flat[plan.length_field], out_type=tf.int64)[0]
    out = {'length': length}
    if plan.reward:
      reward = tf.cast(flat[plan.reward], tf.float64)
      counted = last_step_lib.num_valid_actions(length, policy)
      out['return'] = tf.reduce_sum(reward[:counted], axis=0)
      nan = tf.fill(tf.concat([[1], tf.shape(reward)[1:]], 0),
                    tf.constant(np.nan, tf.float64))
      out['last_reward'] = tf.concat([nan, reward], 0)[length]
    if plan.is_terminal:
      flags = tf.cast(flat[plan.is_terminal], tf.bool)
      terminated = tf.concat([[False], flags], 0)[length]
      out['terminated'] = terminated
      out['truncated'] = tf.logical_and(length > 0,
                                        tf.logical_not(terminated))
    for path in plan.language:
      out['language:' + path] = tf.unique(tf.reshape(flat[path], [-1]))[0]
    for path in plan.metadata:
      out['metadata:' + path] = _lookup(episode, path)
    return out

  return row


def _decoded(feature: Any, encoded: tf.Tensor) -> tf.Tensor:
  """A skip-decoded ``[T, ...]`` step column, decoded if it is encoded.

  Only encoded tensors (``encoding='bytes'``/``'zlib'``) differ from their
  parsed form; decoding every column (``decode_batch_example`` of the steps)
  would cost ~5x the pass.
  """
  if encoded.dtype == _dtype(feature):
    return encoded
  return decoding.decode_batch_example(feature, encoded)


def _leaves_of_values(values: Any, prefix: str = '') -> List[Tuple[str, Any]]:
  if isinstance(values, dict):
    found = []
    for key, value in values.items():
      found.extend(_leaves_of_values(value, f'{prefix}{key}/'))
    return found
  return [(prefix.rstrip('/'), values)]


def _lookup(values: Dict[str, Any], path: str) -> Any:
  for part in path.split('/'):
    values = values[part]
  return values


def _text(value: bytes) -> str:
  return value.decode('utf-8', 'backslashreplace')


def _numpy_batch(batch: Dict[str, Any]) -> Dict[str, Any]:
  return {key: (value.to_list() if isinstance(value, tf.RaggedTensor)
                else value.numpy()) for key, value in batch.items()}


def _column(parts: List[Any], feature: Any) -> np.ndarray:
  values = np.concatenate(parts) if parts else np.zeros(
      [0], _dtype(feature).as_numpy_dtype if _dtype(feature) != tf.string
      else object)
  if _dtype(feature) == tf.string:
    return np.array([_text(v) for v in values], dtype=str) if len(
        values) else np.array([], dtype=str)
  return values


def _pass(plan: _Plan, files: records_lib.SplitFiles,
          policy: last_step_lib.LastStep, progress: Optional[bool]
          ) -> Tuple[Dict[str, Any], int]:
  """The one streaming pass: per-episode values, concatenated in order.

  Returns the parts and the number of episodes read. TF's read errors pass
  through (`_named_pass` names the file).
  """
  rows = records_lib.read_records(files).map(
      _row_fn(plan, policy), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  batches = rows.ragged_batch(_BATCH).prefetch(2)
  parts: Dict[str, List[Any]] = {}
  done = 0
  with progress_lib.bar(progress, total=files.num_episodes, unit=' episodes',
                        desc='catalog') as bar:
    for batch in batches:
      batch = _numpy_batch(batch)
      for key, value in batch.items():
        parts.setdefault(key, []).append(value)
      count = len(batch['length'])
      done += count
      bar.update(count)
  return parts, done


def _named_pass(builder: tfds.core.DatasetBuilder, split: str, plan: _Plan,
                files: records_lib.SplitFiles, policy: last_step_lib.LastStep,
                progress: Optional[bool]) -> Dict[str, Any]:
  """`_pass`, with a damaged file named as the other readers name it (docs/guarantees.md)."""
  try:
    with diagnosis.named_read_errors(builder, split):
      parts, done = _pass(plan, files, policy, progress)
  except tf.errors.OpError as e:
    raise ValueError(
        f'catalog: cannot read the episodes of {files.label}: '
        f'{dataset_files.short_message(e)}') from None
  dataset_files.check_all_read(builder, split, done)
  return parts


def _shard_parts(shard: int, dataset_dir: str, split: str, last_step: str
                 ) -> Dict[int, Tuple[Dict[str, Any], int]]:
  """``{shard: (parts, episodes read)}`` of one shard file (a Beam work item)."""
  builder = tfds.builder_from_directory(dataset_dir)
  files = records_lib.split_files(builder, split)
  one = records_lib.SplitFiles(
      (files.paths[shard],), (files.lengths[shard],), files.file_format,
      f'{files.paths[shard]!r} (shard {shard} of {files.label})')
  try:
    with diagnosis.named_read_errors(builder, split):
      parts_and_count = _pass(_plan(builder.info.features), one,
                    last_step_lib.as_last_step(last_step), False)
  except tf.errors.OpError as e:
    raise ValueError(f'catalog: cannot read the episodes of {one.label}: '
                     f'{dataset_files.short_message(e)}') from None
  return {shard: parts_and_count}


def _union(a: Dict[int, Any], b: Dict[int, Any]) -> Dict[int, Any]:
  return {**a, **b}


def _beam_parts(beam: beam_runs.Beam, builder: tfds.core.DatasetBuilder,
                split: str, files: records_lib.SplitFiles,
                policy: last_step_lib.LastStep) -> Dict[str, List[Any]]:
  """`_named_pass` as a Beam job: each shard's parts, joined in shard order."""
  shard_parts = functools.partial(_shard_parts,
                                  dataset_dir=os.fspath(builder.data_dir),
                                  split=split, last_step=policy.value)
  merged = beam_runs.map_merge(beam, range(len(files.paths)), shard_parts,
                               _union, 'Catalog')
  by_shard = merged[0] if merged else {}
  parts: Dict[str, List[Any]] = {}
  done = 0
  for shard in sorted(by_shard):
    shard_parts_, count = by_shard[shard]
    for key, values in shard_parts_.items():
      parts.setdefault(key, []).extend(values)
    done += count
  dataset_files.check_all_read(builder, split, done)
  return parts


def _assemble(plan: _Plan, files: records_lib.SplitFiles,
              parts: Dict[str, List[Any]]) -> Dict[str, np.ndarray]:
  num = files.num_episodes
  columns: Dict[str, np.ndarray] = {'index': np.arange(num, dtype=np.int64)}
  metadata = {path: _column(parts.get('metadata:' + path, []), leaf)
              for path, leaf in plan.metadata.items()}
  if plan.episode_id:
    columns[_EPISODE_ID] = metadata.pop(plan.episode_id)
  length = np.concatenate(parts['length']) if num else np.zeros(0, np.int64)
  columns['length'] = length.astype(np.int64)
  if plan.reward:
    columns['return'] = np.concatenate(parts['return']) if num else np.zeros(0)
    columns['last_reward'] = (np.concatenate(parts['last_reward']) if num
                              else np.zeros(0))
  if plan.is_terminal:
    for name in ('terminated', 'truncated'):
      columns[name] = (np.concatenate(parts[name]) if num
                       else np.zeros(0, bool)).astype(bool)
  for path in plan.language:
    values = [tuple(_text(v) for v in episode)
              for part in parts.get('language:' + path, []) for episode in part]
    column = np.empty(num, dtype=object)
    column[:] = values if num else []
    columns[path] = column
  columns.update(metadata)
  shards, records = files.locate(np.arange(num))
  names = np.array(files.shard_names, dtype=str)
  columns['shard'] = names[shards] if num else np.array([], dtype=str)
  columns['record'] = records
  return columns


_RETURN_RULES = {
    last_step_lib.LastStep.INVALID:
        'sum of reward over every step but the last (RLDS)',
    last_step_lib.LastStep.VALID: 'sum of reward over every step',
}
_LEFT_OUT_WHY = ("RLDS says a last step's reward is invalid, so return leaves "
                 'it out (last_reward keeps it)')


def catalog_of_builder(builder: tfds.core.DatasetBuilder, split: str,
                       *, last_step: Union[last_step_lib.LastStep,
                                           str] = 'invalid',
                       cache: bool = True,
                       progress: Optional[bool] = None,
                       beam: Optional[beam_runs.Beam] = None
                       ) -> table.Catalog:
  """`episodes` for a TFDS builder, without the left-out last rewards warning.

    Example:
      >>> import rlds_lite
      >>> from rlds_lite import synthetic
      >>> path = synthetic.dataset(num_episodes=3, seed=0)
      >>> builder = rlds_lite.open(path).builder
      >>> catalog_of_builder(builder, 'train', progress=False)['length'].tolist()
      [5, 46, 46]
  """
  with op_context.named('catalog'):
    policy = last_step_lib.as_last_step(last_step)
  if beam is not None:
    beam.options()  # Options that do not parse: refused, cached or not.
  files = records_lib.split_files(builder, split)
  dataset_files.check_open(builder, split)  # Named, as rlds_lite.load does.
  dataset_dir = os.fspath(builder.data_dir)
  key = storage.catalog_key(dataset_dir, split, policy.value) if cache else None
  if key is not None:
    cached = storage.read(dataset_dir, split, key, policy.value)
    if cached is not None:
      return cached
  plan = _plan(builder.info.features)
  if beam is None:
    parts = _named_pass(builder, split, plan, files, policy, progress)
  else:
    parts = _beam_parts(beam, builder, split, files, policy)
  columns = _assemble(plan, files, parts)
  info = {
      'dataset': dataset_dir, 'split': split,
      'name': builder.info.name, 'version': str(builder.info.version),
      'num_episodes': files.num_episodes,
      'file_format': files.file_format,
      'language': list(plan.language),
      'episode_id': plan.episode_id,
      'reward': plan.reward, 'is_terminal': plan.is_terminal,
      'last_step': policy.value,
      'return': _RETURN_RULES[policy],
  }
  catalog = table.Catalog(columns, info)
  if key is not None:
    try:
      storage.write(dataset_dir, split, key, catalog, policy.value)
    except OSError as e:  # The catalog is still good: warn, go on.
      logging.warning('catalog: not cached: %s', e)
  return catalog


def left_out_last_rewards(catalog: table.Catalog) -> int:
  """How many episodes have a non-zero last reward that ``return`` leaves out.

  0 for a catalog built with ``last_step='valid'`` or without rewards.

  Example:
    >>> import numpy as np
    >>> left_out_last_rewards(table.Catalog(
    ...     {'last_reward': [0.0, 1.0, np.nan, -2.0]}, {'last_step': 'invalid'}))
    2
  """
  if (catalog.info.get('last_step', 'invalid') != 'invalid' or
      'last_reward' not in catalog.columns):
    return 0
  last = np.nan_to_num(np.asarray(catalog['last_reward'], np.float64))
  return int((last != 0).reshape(len(last), -1).any(axis=1).sum())


def warn_left_out(catalog: table.Catalog, where: str,
                  stacklevel: int = 3) -> None:
  """One `rlds_lite.LastStepValuesWarning` if `left_out_last_rewards` > 0.

    ``where`` (``'episodes'``, ``'load'``, ``'filter'``) starts the message.

    Example:
      >>> import warnings
      >>> c = table.Catalog({'last_reward': [0.0, 1.0]}, {'last_step': 'invalid'})
      >>> with warnings.catch_warnings(record=True) as caught:
      ...   warnings.simplefilter('always')
      ...   warn_left_out(c, 'episodes')
      >>> print(caught[0].message)
      episodes: left out non-zero last-step values of reward (1 of 2 episodes): RLDS says a last step's reward is invalid, so return leaves it out (last_reward keeps it); pass last_step='valid' (command line: --last-step valid) to keep them.
  """
  last_step_lib.warn_last_step_values(
      where, {rlds_types.REWARD: left_out_last_rewards(catalog)}, len(catalog),
      stacklevel=stacklevel + 1, why=_LEFT_OUT_WHY)


def episodes(name_or_dir: PathLike,
             split: str = 'train',
             *,
             data_dir: Optional[PathLike] = None,
             last_step: Union[last_step_lib.LastStep, str] = 'invalid',
             cache: bool = True,
             progress: Optional[bool] = None,
             beam: Optional[beam_runs.Beam] = None) -> table.Catalog:
  """The episode catalog of a split: one row per episode (docs/episodes.md).

    Args:
      name_or_dir: a `rlds_lite.Source`, a dataset directory or a TFDS name.
      split: a plain split name (no slicing).
      data_dir: where TFDS looks for prepared datasets (names only).
      last_step: ``'invalid'`` (default, RLDS: ``return`` leaves out the last
        reward, warning if it is not zero) or ``'valid'``.
      cache: read/write the catalog next to the dataset.
      progress: the progress bar (None: on a terminal only).
      beam: a `rlds_lite.beam_runs.Beam` to read the shard files on Apache
        Beam, one per work item (the same catalog; docs/distributed.md).

    Example:
      >>> from rlds_lite import synthetic
      >>> catalog = episodes(synthetic.dataset(num_episodes=4, seed=0),
      ...                    progress=False)
      >>> catalog.columns  # doctest: +NORMALIZE_WHITESPACE
      ('index', 'episode_id', 'length', 'return', 'last_reward', 'terminated',
       'truncated', 'shard', 'record')
      >>> catalog.select('terminated')['index'].tolist()
      [0]
  """
  with op_context.named('catalog.episodes'):
    policy = last_step_lib.as_last_step(last_step)
  builder = source_lib.as_source(name_or_dir, split, data_dir=data_dir).builder
  catalog = catalog_of_builder(builder, split, last_step=policy, cache=cache,
                               progress=progress, beam=beam)
  warn_left_out(catalog, 'episodes')
  return catalog
