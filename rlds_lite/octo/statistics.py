"""Octo's dataset statistics (from `rlds_lite.stats`, no frame read) and its action/proprio normalisation.

Example:
  >>> import tensorflow as tf
  >>> meta = {'action': {'mean': np.array([1.0, 0.0]), 'std': np.array([2.0, 1.0])}}
  >>> traj = {'observation': {}, 'action': tf.constant([[3.0, 5.0]])}
  >>> out = normalize_action_and_proprio(traj, meta, 'normal')
  >>> np.round(out['action'].numpy(), 4).tolist()
  [[1.0, 5.0]]
"""

import enum
import hashlib
import json
import logging
import os
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf

from rlds_lite import atomic_output
from rlds_lite import rlds_types
from rlds_lite import stats as stats_lib
from rlds_lite.tfds import example_fields

__all__ = ['NormalizationType', 'get_dataset_statistics',
           'combine_dataset_statistics', 'normalize_action_and_proprio',
           'dataset_statistics', 'with_mask', 'check_matches']

_LOG = logging.getLogger('rlds_lite')
_EPS = 1e-8
_KEYS = {'action': 'action', 'proprio': 'observation/proprio'}


class NormalizationType(str, enum.Enum):
  """Octo's normalisations: ``'normal'`` (mean 0, std 1), ``'bounds'`` (p01..p99 to [-1, 1])."""
  NORMAL = 'normal'
  BOUNDS = 'bounds'


def tree_map(fn: Callable, tree: Dict[str, Any]) -> Dict[str, Any]:
  """``fn`` on every leaf of a nested dict."""
  return {k: tree_map(fn, v) if isinstance(v, dict) else fn(v)
          for k, v in tree.items()}


def _field(stats: Any) -> Dict[str, Any]:
  return {'mean': stats.mean.tolist(), 'std': stats.std.tolist(),
          'max': stats.max.tolist(), 'min': stats.min.tolist(),
          'p99': stats.p99.tolist(), 'p01': stats.p01.tolist()}


def _steps(traj: Dict[str, Any]) -> Dict[str, Any]:
  steps = {'action': traj['action']}
  if 'proprio' in traj['observation']:
    steps['proprio'] = traj['observation']['proprio']
  return {rlds_types.STEPS: steps}


def compute(trajectories: tf.data.Dataset) -> Dict[str, Any]:
  """Octo's statistics of a dataset of trajectories, in one `rlds_lite.stats` pass.

  Every step counts (Octo's statistics include the last one); mean, std,
  min and max are exact, p01 / p99 within the sketch's rank error.
  """
  steps = trajectories.map(_steps, tf.data.AUTOTUNE)
  keys = sorted(steps.element_spec[rlds_types.STEPS])
  summary = stats_lib.compute(steps, keys=keys, last_step='valid',
                              cache=False, progress=True)
  out = {key: _field(summary[key]) for key in keys}
  out['num_transitions'] = int(summary['action'].count)
  out['num_trajectories'] = int(summary.num_episodes)
  return out


def _cache_paths(dependencies: Sequence[str], save_dir: Optional[str]
                 ) -> Tuple[str, str]:
  digest = hashlib.sha256(''.join(dependencies).encode('utf-8'),
                          usedforsecurity=False).hexdigest()
  name = f'dataset_statistics_{digest}.json'
  local = os.path.join(os.path.expanduser('~'), '.cache', 'octo', name)
  return (os.path.join(save_dir, name) if save_dir else local), local


def _write(path: str, statistics: Dict[str, Any]) -> None:
  with atomic_output.AtomicOutput(path, replace=True) as output:
    with open(output.path, 'w') as f:
      json.dump(statistics, f)
    output.publish()


def _plain_fields(source: Any, paths: Sequence[str]) -> Optional[Dict[str, Tuple[int, ...]]]:
  """``{path: step shape}`` when every field is a plain fixed-shape number in local TFRecord files, else None."""
  if source.file_format != 'tfrecord' or '://' in source.data_dir:
    return None  # Mapped files are local.
  serialized = source.steps_feature.get_serialized_info()
  shapes = {}
  for path in paths:
    info = serialized
    for part in path.split('/'):
      info = info.get(part) if isinstance(info, dict) else None
    if (info is None or not (info.tf_dtype.is_floating or info.tf_dtype.is_integer
                             or info.tf_dtype.is_bool)
        or None in tuple(info.shape)[1:]):
      return None
    shapes[path] = tuple(info.shape)[1:]
  return shapes


def _read_stored(source: Any, shapes: Dict[str, Tuple[int, ...]]
                 ) -> Tuple[Dict[str, Any], int, int]:
  """One pass over the record files reading only ``shapes``' fields: their stats, episodes and steps."""
  fields = {p: stats_lib.FieldStats.empty(p, shape) for p, shape in shapes.items()}
  keys = {f'{rlds_types.STEPS}/{p}': p for p in shapes}
  episodes = steps = 0
  splits = [source.with_split(name) for name in sorted(source.builder.info.splits)]
  for shard in (shard for split in splits for shard in split.files):
    columns = {p: [] for p in shapes}
    for index, record in enumerate(example_fields.read(shard.path, keys)):
      lengths = set()
      for key, path in keys.items():
        values = record.get(key, np.zeros([0], np.float32))
        size = int(np.prod(shapes[path]))
        if values.size % max(size, 1):
          raise example_fields.RecordFormatError(
              f'{shard.path}: episode {shard.first + index}: step field '
              f'{path!r} holds {values.size} values, not a multiple of its '
              f'shape {list(shapes[path])}')
        columns[path].append(values.reshape((-1,) + shapes[path]))
        lengths.add(len(columns[path][-1]))
      if len(lengths) > 1:
        raise example_fields.RecordFormatError(
            f'{shard.path}: episode {shard.first + index}: the step fields '
            f'{sorted(shapes)} have different lengths {sorted(lengths)}')
      episodes += 1
      steps += lengths.pop()
    for path, column in columns.items():
      if column:
        fields[path].update(np.concatenate(column))
  return fields, episodes, steps


def compute_stored(source: Any, proprio_path: Optional[str]) -> Dict[str, Any]:
  """Octo's statistics of every split's stored ``action`` (and proprio field), read alone: no frame, no transform.

  Local TFRecord files are read field by field (`rlds_lite.tfds.example_fields`:
  the frames' bytes are never read); other formats through `rlds_lite.stats`.
  """
  paths = ['action'] + ([proprio_path] if proprio_path else [])
  shapes = _plain_fields(source, paths)
  if shapes is not None:
    fields, episodes, steps = _read_stored(source, shapes)
  else:
    every = source.every_split()
    summary = stats_lib.compute(every, keys=paths, last_step='valid',
                                cache=False, progress=True)
    fields = {p: summary[p] for p in paths}
    episodes, steps = summary.num_episodes, summary['action'].count
  out = {'action': _field(fields['action'])}
  if proprio_path:
    out['proprio'] = _field(fields[proprio_path])
  out['num_transitions'] = int(steps)
  out['num_trajectories'] = int(episodes)
  return out


def _cached(dependencies: Sequence[str], save_dir: Optional[str],
            force: bool, make: Callable[[], Dict[str, Any]]) -> Dict[str, Any]:
  """Octo's cache file of these dependencies, else ``make()`` written there (atomically)."""
  path, local = _cache_paths(dependencies, save_dir)
  if not force:
    for candidate in (path, local):
      if os.path.exists(candidate):
        _LOG.info('octo: dataset statistics from %s', candidate)
        with open(candidate) as f:
          return json.load(f)
  statistics = make()
  try:
    _write(path, statistics)
  except OSError as e:
    _LOG.warning('octo: could not write %s (%s); writing %s', path, e, local)
    os.makedirs(os.path.dirname(local), exist_ok=True)
    _write(local, statistics)
  return statistics


def get_dataset_statistics(dataset: tf.data.Dataset,
                           hash_dependencies: Sequence[str],
                           save_dir: Optional[str] = None,
                           force_recompute: bool = False) -> Dict[str, Any]:
  """Octo's ``get_dataset_statistics``: cached by a hash of ``hash_dependencies``, else computed and cached.

  The cache is Octo's file (``dataset_statistics_<sha256>.json`` in
  ``save_dir``, else ``~/.cache/octo``), published atomically.

  Example:
    >>> import tempfile
    >>> trajs = tf.data.Dataset.from_tensors(
    ...     {'observation': {}, 'action': tf.constant([[1.0], [3.0]])})
    >>> s = get_dataset_statistics(trajs, ('x',), save_dir=tempfile.mkdtemp())
    >>> s['action']['mean'], s['num_transitions']
    ([2.0], 2)
  """
  if int(dataset.cardinality()) == int(tf.data.INFINITE_CARDINALITY):
    raise ValueError('get_dataset_statistics: cannot compute the statistics '
                     'of an infinite dataset.')
  return _cached(hash_dependencies, save_dir, force_recompute,
                 lambda: compute(dataset))


def dataset_statistics(given: Union[None, dict, str], source: Any, keys: Any,
                       *, force: bool, dependencies: Sequence[str],
                       make: Callable[[], Dict[str, Any]]) -> Dict[str, Any]:
  """The statistics ``make_dataset_from_rlds`` uses: given, read from JSON, or cached / made (numpy arrays)."""
  if isinstance(given, (str, os.PathLike)):
    with tf.io.gfile.GFile(os.fspath(given)) as f:
      given = json.load(f)
  if given is None:
    hashed = (str(source.builder.info), str(keys.proprio_obs_key),
              *dependencies)
    given = _cached(hashed, os.fspath(source.builder.data_dir), force, make)
  if not isinstance(given, dict) or 'action' not in given:
    raise ValueError(f'dataset {keys.name!r}: dataset_statistics must hold '
                     "'action' statistics (mean, std, ...), got "
                     f'{type(given).__name__}.')
  return tree_map(np.array, given)


def with_mask(statistics: Dict[str, Any], mask: Optional[Sequence[bool]],
              name: str) -> Dict[str, Any]:
  """``statistics`` with ``action['mask']`` (checked against the action size)."""
  if mask is None:
    return statistics
  size = statistics['action']['mean'].shape[-1]
  if len(mask) != size:
    raise ValueError(f'dataset {name!r}: action_normalization_mask has '
                     f'{len(mask)} entries, the actions {size} dimensions.')
  return {**statistics,
          'action': {**statistics['action'], 'mask': np.array(mask, bool)}}


def check_matches(statistics: Dict[str, Any], spec: Dict[str, Any],
                  name: str) -> None:
  """A ValueError naming the dataset when the statistics do not fit its action/proprio sizes."""
  sizes = {'action': spec['action'].shape[-1]}
  if 'proprio' in spec['observation']:
    sizes['proprio'] = spec['observation']['proprio'].shape[-1]
  for key, size in sizes.items():
    if key not in statistics:
      raise ValueError(f'dataset {name!r}: dataset_statistics has no {key!r} '
                       f'statistics, but the trajectories have {key}.')
    got = np.shape(statistics[key]['mean'])[-1:]
    if size is not None and tuple(got) != (size,):
      raise ValueError(
          f'dataset {name!r}: dataset_statistics[{key!r}] has size '
          f'{got[0] if got else 0}, the trajectories\' {key} {size}; are these '
          'the statistics of another dataset?')


def _normalized(x: tf.Tensor, stats: Dict[str, Any],
                kind: NormalizationType) -> tf.Tensor:
  if kind == NormalizationType.NORMAL:
    mask = stats.get('mask', np.ones_like(stats['mean'], bool))
    return tf.where(mask, (x - stats['mean']) / (stats['std'] + _EPS), x)
  mask = stats.get('mask', np.ones_like(stats['p01'], bool))
  scaled = 2 * (x - stats['p01']) / (stats['p99'] - stats['p01'] + _EPS) - 1
  return tf.where(mask, tf.clip_by_value(scaled, -1, 1), x)


def normalize_action_and_proprio(traj: Dict[str, Any], metadata: Dict[str, Any],
                                 normalization_type: Union[str, NormalizationType]
                                 ) -> Dict[str, Any]:
  """Octo's normalisation of ``action`` and ``observation['proprio']`` (``mask``: dimensions normalised)."""
  kind = NormalizationType(normalization_type)
  out = dict(traj)
  out['action'] = _normalized(traj['action'], _float32(metadata['action']),
                              kind)
  if 'proprio' in traj['observation']:
    obs = dict(traj['observation'])
    obs['proprio'] = _normalized(obs['proprio'],
                                 _float32(metadata['proprio']), kind)
    out['observation'] = obs
  return out


def _float32(stats: Dict[str, Any]) -> Dict[str, Any]:
  return {k: (np.asarray(v, bool) if k == 'mask' else
              np.asarray(v, np.float32)) for k, v in stats.items()}


def combine_dataset_statistics(all_dataset_statistics: Sequence[Dict[str, Any]]
                               ) -> Dict[str, Any]:
  """Octo's ``combine_dataset_statistics``: the pooled mean, std, min and max of several datasets.

  Example:
    >>> a = {'action': {'mean': [0.0], 'std': [1.0], 'min': [-1.0], 'max': [1.0]},
    ...      'num_transitions': 1, 'num_trajectories': 1}
    >>> b = {'action': {'mean': [2.0], 'std': [1.0], 'min': [1.0], 'max': [3.0]},
    ...      'num_transitions': 1, 'num_trajectories': 1}
    >>> c = combine_dataset_statistics([a, b])
    >>> c['action']['mean'], c['action']['std'], c['num_transitions']
    ([1.0], [1.4142135623730951], [1, 1])
  """
  counts = np.array([s['num_transitions'] for s in all_dataset_statistics],
                    np.float64)
  weights = counts / counts.sum()
  out = {}
  for key in ('action', 'proprio'):
    if not all(key in s for s in all_dataset_statistics):
      continue
    means = np.array([np.asarray(s[key]['mean'], np.float64)
                      for s in all_dataset_statistics])
    stds = np.array([np.asarray(s[key]['std'], np.float64)
                     for s in all_dataset_statistics])
    mean = (weights[:, None] * means).sum(0)
    var = (counts[:, None] * (stds ** 2 + (means - mean) ** 2)).sum(0)
    out[key] = {
        'min': np.min([s[key]['min'] for s in all_dataset_statistics], 0).tolist(),
        'max': np.max([s[key]['max'] for s in all_dataset_statistics], 0).tolist(),
        'mean': mean.tolist(), 'std': np.sqrt(var / counts.sum()).tolist()}
  out['num_trajectories'] = [s['num_trajectories'] for s in all_dataset_statistics]
  out['num_transitions'] = [s['num_transitions'] for s in all_dataset_statistics]
  return out
