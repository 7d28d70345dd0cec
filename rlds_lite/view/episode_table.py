"""One row per episode of a split: length, return, ending, language, metadata.

`compute` makes the table in one streaming pass and caches it next to the
dataset (``<dataset_dir>/rlds_lite_view/``; the key hashes the dataset's
files as ``rlds_lite.stats.cache`` does, so rewriting or appending makes a
new table). The pass reads the steps undecoded and decodes only the fields
the table needs (the ``is_*`` flags, ``reward`` and language strings): images
are never decoded, so a camera dataset costs little more than reading it.

Columns:
- ``length``: the number of steps;
- ``return``: the sum of the rewards of all steps but the last (invalid in
  RLDS), summed over the reward's elements if it is not a scalar; None
  without a ``reward`` field;
- ``terminated``: the last step ``is_terminal`` (else the episode was
  truncated);
- ``instructions``: the distinct values, in step order, of string fields
  whose name holds ``instruction`` or ``language`` (step fields and episode
  metadata), e.g. ``language_instruction``;
- ``metadata``: the episode's scalar metadata (``episode_id``, ...).

Row ``i`` is the split's ``i``-th episode in file order: the one
``split[i:i+1]`` reads (see ``episode_reader.read_order``).

Example:
  >>> import tempfile
  >>> from rlds_lite import loading, synthetic
  >>> from rlds_lite.tfds import write_dataset
  >>> path = write_dataset(synthetic.episodes(3, seed=0), tempfile.mkdtemp(),
  ...                      'toy')
  >>> table = compute(path, 'train', progress=False)
  >>> table.num_episodes, table.length.tolist(), table.terminated.tolist()
  (3, [5, 46, 46], [True, False, False])
  >>> table.metadata['episode_id']
  [0, 1, 2]
"""

import dataclasses
import hashlib
import json
import math
import os
import tempfile
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds
import tqdm

from rlds_lite import loading
from rlds_lite import nest_paths
from rlds_lite import rlds_types
from rlds_lite.stats import cache as stats_cache
from rlds_lite.view import episode_reader
from rlds_lite.view import fields
from rlds_lite.view import jsonable

FORMAT_VERSION = 1
CACHE_SUBDIR = 'rlds_lite_view'
_SEPARATOR = '\x1f'  # Joins an episode's distinct instructions in the graph.
_BATCH = 1024


@dataclasses.dataclass(eq=False)
class EpisodeTable:
  """The per-episode columns of one split (row ``i`` = episode ``i``)."""

  split: str
  length: np.ndarray  # int64 [N]
  episode_return: Optional[np.ndarray]  # float64 [N], or None (no reward)
  terminated: np.ndarray  # bool [N]
  instructions: List[List[str]]
  metadata: Dict[str, List[Any]]  # path -> N Python scalars

  @property
  def num_episodes(self) -> int:
    return int(len(self.length))

  @property
  def truncated(self) -> np.ndarray:
    return ~self.terminated

  def to_dict(self) -> Dict[str, Any]:
    returns = None if self.episode_return is None else [
        float(r) if math.isfinite(r) else None for r in self.episode_return]
    return {'format_version': FORMAT_VERSION, 'split': self.split,
            'length': self.length.tolist(), 'return': returns,
            'terminated': self.terminated.tolist(),
            'instructions': self.instructions, 'metadata': self.metadata}

  @classmethod
  def from_dict(cls, data: Dict[str, Any]) -> 'EpisodeTable':
    if data.get('format_version') != FORMAT_VERSION:
      raise ValueError('EpisodeTable: unsupported format_version '
                       f'{data.get("format_version")!r}.')
    returns = data['return']
    return cls(data['split'], np.asarray(data['length'], np.int64),
               None if returns is None else np.asarray(
                   [np.nan if r is None else r for r in returns], np.float64),
               np.asarray(data['terminated'], bool), data['instructions'],
               data['metadata'])

  def __eq__(self, other: Any) -> bool:
    return (isinstance(other, EpisodeTable) and
            json.dumps(self.to_dict()) == json.dumps(other.to_dict()))


def _feature_at(features: Any, path: str) -> Any:
  for name in path.split('/'):
    features = features[name]
  return features


def _columns(builder: tfds.core.DatasetBuilder
             ) -> Tuple[List[str], List[str], List[str]]:
  """Step language fields, episode language fields, scalar metadata fields."""
  features = builder.info.features
  step_spec = features[rlds_types.STEPS].feature.get_tensor_spec()
  step_language = [p for p, s in nest_paths.flatten_with_paths(step_spec)
                   if fields.is_language(p, s)]
  episode_spec = {k: v for k, v in features.get_tensor_spec().items()
                  if k != rlds_types.STEPS}
  episode_language, metadata = [], []
  for path, spec in nest_paths.flatten_with_paths(episode_spec):
    if fields.is_language(path, spec):
      episode_language.append(path)
    if spec.shape.rank == 0 and (spec.dtype.is_integer or spec.dtype.is_floating
                                 or spec.dtype in (tf.bool, tf.string)):
      metadata.append(path)
  return step_language, episode_language, metadata


def _summary_fn(builder: tfds.core.DatasetBuilder, step_language: List[str],
                episode_language: List[str], metadata: List[str]):
  """Episode (undecoded steps) -> its row's values, in the graph."""
  step_feature = builder.info.features[rlds_types.STEPS].feature
  step_paths = [p for p, _ in nest_paths.flatten_with_paths(
      step_feature.get_tensor_spec())]
  has_reward = rlds_types.REWARD in step_paths

  def decoded(steps: Any, path: str) -> tf.Tensor:
    return _feature_at(step_feature, path).decode_batch_example(
        nest_paths.get_path(steps, path))

  @tf.autograph.experimental.do_not_convert
  def summary(episode):
    steps = episode[rlds_types.STEPS]
    first_leaf = tf.nest.flatten(steps)[0]
    length = tf.shape(first_leaf, out_type=tf.int64)[0]
    end = tf.equal(tf.range(length), length - 1)
    is_last = (tf.cast(decoded(steps, rlds_types.IS_LAST), tf.bool)
               if rlds_types.IS_LAST in step_paths else end)
    if rlds_types.IS_TERMINAL in step_paths:
      is_terminal = tf.cast(decoded(steps, rlds_types.IS_TERMINAL), tf.bool)
      terminated = tf.reduce_any(is_terminal & end)
    else:
      terminated = tf.constant(False)
    row = {'length': length, 'terminated': terminated}
    if has_reward:
      reward = tf.cast(decoded(steps, rlds_types.REWARD), tf.float64)
      elements = tf.reduce_prod(tf.shape(reward, out_type=tf.int64)[1:])
      reward = tf.reshape(reward, [length, elements])  # Empty episodes too.
      valid = tf.logical_not(is_last)[:, None]
      row['return'] = tf.reduce_sum(tf.where(valid, reward,
                                             tf.zeros_like(reward)))
    texts = [tf.reshape(decoded(steps, p), [-1]) for p in step_language]
    texts += [tf.reshape(nest_paths.get_path(episode, p), [-1])
              for p in episode_language]
    if texts:
      values = tf.concat(texts, axis=0)
      values = tf.boolean_mask(values, tf.strings.length(values) > 0)
      row['instructions'] = tf.strings.reduce_join(
          tf.unique(values)[0], separator=_SEPARATOR)
    row['metadata'] = {p: nest_paths.get_path(episode, p) for p in metadata}
    return row

  return summary


def _pass(builder: tfds.core.DatasetBuilder, split: str,
          progress: Optional[bool]) -> EpisodeTable:
  step_language, episode_language, metadata = _columns(builder)
  episodes = builder.as_dataset(
      split=split, decoders={rlds_types.STEPS: tfds.decode.SkipDecoding()},
      read_config=episode_reader.read_order())
  rows = episodes.map(
      _summary_fn(builder, step_language, episode_language, metadata),
      num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).batch(_BATCH)
  total = int(builder.info.splits[split].num_examples)
  lengths, returns, terminated, instructions = [], [], [], []
  columns: Dict[str, List[Any]] = {p: [] for p in metadata}
  has_return = 'return' in rows.element_spec
  with tqdm.tqdm(total=total, unit='episode', desc='episode table',
                 disable=not progress if progress is not None else None,
                 leave=False) as bar:
    for batch in rows.as_numpy_iterator():
      lengths.append(batch['length'])
      terminated.append(batch['terminated'])
      if has_return:
        returns.append(batch['return'])
      for joined in batch.get('instructions', [b''] * len(batch['length'])):
        text = joined.decode('utf-8', errors='replace')
        instructions.append(text.split(_SEPARATOR) if text else [])
      flat = dict(nest_paths.flatten_with_paths(batch['metadata']))
      for path in metadata:
        columns[path].extend(jsonable.json_scalar(v) for v in flat[path])
      bar.update(len(batch['length']))
  def joined(parts, dtype):
    return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)
  return EpisodeTable(split, joined(lengths, np.int64),
                      joined(returns, np.float64) if has_return else None,
                      joined(terminated, bool), instructions, columns)


def _cache_paths(dataset_dir: str, key: str) -> List[str]:
  digest = hashlib.sha256(os.path.realpath(dataset_dir).encode()).hexdigest()
  fallback = os.environ.get('RLDS_LITE_CACHE_DIR') or os.path.join(
      os.path.expanduser('~'), '.cache', 'rlds_lite', 'view')
  return [os.path.join(dataset_dir, CACHE_SUBDIR, f'episode_table-{key}.json'),
          os.path.join(fallback, f'episode_table-{digest[:16]}-{key}.json')]


def _read_cache(paths: List[str]) -> Optional[EpisodeTable]:
  for path in paths:
    try:
      with open(path) as f:
        return EpisodeTable.from_dict(json.load(f))
    except (OSError, ValueError, KeyError):
      continue
  return None


def _write_cache(paths: List[str], table: EpisodeTable) -> Optional[str]:
  """Writes atomically to the first writable place; its path, or None."""
  text = json.dumps(table.to_dict())
  for path in paths:
    try:
      os.makedirs(os.path.dirname(path), exist_ok=True)
      fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix='.tmp')
      try:
        with os.fdopen(fd, 'w') as f:
          f.write(text)
        os.replace(tmp, path)
      finally:
        if os.path.exists(tmp):
          os.remove(tmp)
      return path
    except OSError:
      continue
  return None


def compute(name_or_dir: Any, split: str = 'train', *,
            data_dir: Optional[str] = None, cache: bool = True,
            progress: Optional[bool] = None) -> EpisodeTable:
  """The episode table of a split of a TFDS RLDS dataset (cached).

  Args:
    name_or_dir: a prepared dataset directory or a registered TFDS name.
    split: the split (a plain name: rows are numbered within it).
    data_dir: where TFDS looks for prepared datasets (names only).
    cache: read/write the table next to the dataset (or in
      ``$RLDS_LITE_CACHE_DIR`` / ``~/.cache/rlds_lite/view`` if the dataset
      directory is read-only).
    progress: a progress bar (None: on a terminal only).

  Returns:
    An `EpisodeTable`.

  Raises:
    FileNotFoundError, ValueError: as ``rlds_lite.load`` (a missing or
      non-RLDS dataset, an unknown split).
  """
  builder, label = loading.rlds_builder(name_or_dir, data_dir)
  loading.check_split(builder, split, label)
  paths = None
  if cache:
    dataset_dir = os.fspath(builder.data_dir)
    key = stats_cache.cache_key(
        dataset_dir, {'episode_table': FORMAT_VERSION, 'split': split})
    paths = _cache_paths(dataset_dir, key)
    cached = _read_cache(paths)
    if cached is not None:
      return cached
  table = _pass(builder, split, progress)
  if paths:
    _write_cache(paths, table)
  return table
