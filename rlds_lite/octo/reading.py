"""Octo's ``make_dataset_from_rlds``: an RLDS split as Octo's standardized, normalised trajectories.

Example:
  >>> import tempfile
  >>> from rlds_lite import synthetic
  >>> path = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=4,
  ...                                 length=5, cameras={'image': (8, 8)})
  >>> ds, stats = make_dataset_from_rlds(path, None, train=True,
  ...     image_obs_keys={'primary': 'image', 'wrist': None})
  >>> traj = next(iter(ds))
  >>> sorted(traj['observation']), traj['action'].shape.as_list()
  (['image_primary', 'image_wrist', 'timestep'], [5, 7])
  >>> int(stats['num_trajectories']), int(stats['num_transitions'])
  (4, 20)
"""

import fnmatch
import os
import functools
import logging
from typing import Any, Callable, Dict, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import tensorflow as tf

from rlds_lite import nest_paths
from rlds_lite import op_context
from rlds_lite import rlds_types
from rlds_lite import source as source_lib
from rlds_lite.octo import specs as specs_lib
from rlds_lite.octo import statistics as stats_lib

__all__ = ['make_dataset_from_rlds', 'Keys', 'from_rlds', 'open_source',
           'split_for']

_LOG = logging.getLogger('rlds_lite')
_REQUIRED = ('observation', 'action')
_AUTOTUNE = tf.data.AUTOTUNE


class Keys(NamedTuple):
  """What ``restructure`` keeps of a standardized trajectory (Octo's ``*_key(s)`` arguments)."""
  name: str
  image_obs_keys: Mapping[str, Optional[str]]
  depth_obs_keys: Mapping[str, Optional[str]]
  proprio_obs_key: Optional[str]
  language_key: Optional[str]


def open_source(name: Any, data_dir: Any) -> source_lib.Source:
  """A `rlds_lite.Source` as given, else ``name`` ('name' or 'name:1.0.0') opened in ``data_dir`` (or a directory).

  Example:
    >>> open_source('/no/such', None)
    Traceback (most recent call last):
    ...
    FileNotFoundError: load: dataset directory '/no/such' does not exist.
  """
  if isinstance(name, source_lib.Source):
    return name
  return source_lib.open(name, 'train', data_dir=data_dir)


def dataset_name(source: source_lib.Source) -> str:
  """The trajectories' ``dataset_name``: the TFDS name it was opened by (Octo's), else the builder's name.

  Example:
    >>> from rlds_lite import synthetic
    >>> dataset_name(source_lib.open(synthetic.dataset(2, seed=0)))   # a directory
    'toy'
  """
  label = source.label
  if '/' not in label and not os.path.exists(label):
    return label
  return source.builder.name


def split_for(source: source_lib.Source, train: bool) -> str:
  """Octo's split: 'train'/'val', or 'train[:95%]'/'train[95%:]' without a 'val' split.

  Example:
    >>> from rlds_lite import synthetic
    >>> split_for(source_lib.open(synthetic.dataset(2, seed=0)), False)
    'train[95%:]'
  """
  if 'val' in source.builder.info.splits:
    return 'train' if train else 'val'
  return 'train[:95%]' if train else 'train[95%:]'


def _split(source: source_lib.Source, train: bool, name: str
           ) -> source_lib.Source:
  """``source`` on Octo's split, or a ValueError naming the dataset when it is empty."""
  split = split_for(source, train)
  try:
    return source.with_split(split)
  except (ValueError, AssertionError) as e:
    raise ValueError(f'dataset {name!r}: its {"training" if train else "validation"} '
                     f'split {split!r} holds no trajectories '
                     f'({source.num_episodes} in all): {e}') from None


def _read_config(shuffle: bool, seed: Optional[int], reads: int) -> Any:
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  # One episode at a time per open file: TFDS's blocks of 16 would buffer
  # up to 32 serialized episodes per file (tfds_read_config).
  return tfds.ReadConfig(
      shuffle_seed=seed if shuffle else None, interleave_block_length=1,
      interleave_cycle_length=reads, enable_ordering_guard=False,
      num_parallel_calls_for_interleave_files=reads, try_autocache=False,
      shuffle_reshuffle_each_iteration=True)


def _broadcast(index: tf.Tensor, episode: Dict[str, Any]) -> Dict[str, Any]:
  """dlimp's trajectory: the steps at the top level, the metadata as ``[T, ...]``."""
  episode = dict(episode)
  steps = episode.pop(rlds_types.STEPS)
  length = tf.shape(tf.nest.flatten(steps)[0])[0]
  traj = dict(steps)
  traj['traj_metadata'] = tf.nest.map_structure(
      lambda x: tf.broadcast_to(x, tf.concat([[length], tf.shape(x)], 0)),
      episode)
  traj['_len'] = tf.fill([length], length)
  traj['_traj_index'] = tf.fill([length], index)
  traj['_frame_index'] = tf.range(length)
  return traj


def from_rlds(source: source_lib.Source, *, shuffle: bool,
              seed: Optional[int] = None,
              num_parallel_reads: int = _AUTOTUNE,
              blank_images: bool = False) -> tf.data.Dataset:
  """dlimp's ``from_rlds``: a dataset of trajectories, images left encoded.

  ``blank_images``: the image fields are not read; each is ``''`` (for
  statistics, which never look at frames).
  """
  paths = [p for p, _ in nest_paths.flatten_with_paths(source.step_spec)]
  images = set(source.image_specs)
  fields = [p for p in paths if p not in images] if blank_images else None
  shuffle = shuffle and not source.builder.info.disable_shuffling
  episodes = source.episodes(
      dense=True, fields=fields or None, encoded_images=True,
      shuffle_files=shuffle,
      read_config=_read_config(shuffle, seed, num_parallel_reads))
  if blank_images and fields:
    episodes = episodes.map(functools.partial(_blanks, sorted(images)))
  return episodes.enumerate().map(_broadcast, _AUTOTUNE)


def _blanks(images: Sequence[str], episode: Dict[str, Any]) -> Dict[str, Any]:
  steps = episode[rlds_types.STEPS]
  length = tf.shape(tf.nest.flatten(steps)[0])[0]
  flat = dict(nest_paths.flatten_with_paths(steps))
  flat.update({path: tf.fill([length], '') for path in images})
  return {**episode, rlds_types.STEPS: nest_paths.nest_from_paths(flat)}


def _language(traj: Dict[str, Any], template: str, name: str) -> tf.Tensor:
  """The ``template`` key's instruction, or one of the keys it fnmatches, drawn uniformly per trajectory.

  (Octo's draw never picks the last of several matches; this one does.)
  """
  matches = [k for k in traj if fnmatch.fnmatch(k, template)]
  if not matches:
    raise ValueError(f'dataset {name!r}: language_key {template!r} matches no '
                     f'key of the trajectory; it has {sorted(traj)}.')
  for key in matches:
    if traj[key].dtype != tf.string:
      raise ValueError(f'dataset {name!r}: language key {key!r} has dtype '
                       f'{traj[key].dtype.name}, but it must be tf.string.')
  if len(matches) == 1:
    return traj[matches[0]]
  pick = tf.random.uniform((), 0, len(matches), dtype=tf.int32)
  return tf.gather(tf.stack([traj[k] for k in matches]), pick)


def _camera(old_obs: Dict[str, Any], old: Optional[str], new: str,
            length: tf.Tensor, name: str, what: str) -> tf.Tensor:
  if old is None:
    return tf.fill([length], '')   # A padding image.
  if old not in old_obs:
    raise ValueError(f'dataset {name!r}: {what} maps {new!r} to observation '
                     f'key {old!r}, which the trajectory does not have; '
                     f'its observation has {sorted(old_obs)}.')
  return old_obs[old]


def restructure(traj: Dict[str, Any], keys: Keys,
                standardize: Optional[Callable]) -> Dict[str, Any]:
  """Octo's ``restructure``: standardize, then images, depth, proprio, timestep, language, action."""
  name = keys.name
  if standardize is not None:
    traj = standardize(traj)
  missing = [k for k in _REQUIRED if k not in traj]
  if missing:
    raise ValueError(f'dataset {name!r}: the trajectory is missing keys '
                     f'{missing}; did you write a standardize_fn? It has '
                     f'{sorted(traj)}.')
  length = tf.shape(traj['action'])[0]
  old_obs = traj['observation']
  obs = {}
  for prefix, mapping, what in (('image_', keys.image_obs_keys, 'image_obs_keys'),
                                ('depth_', keys.depth_obs_keys, 'depth_obs_keys')):
    for new, old in mapping.items():
      obs[prefix + new] = _camera(old_obs, old, new, length, name, what)
  if keys.proprio_obs_key is not None:
    if keys.proprio_obs_key not in old_obs:
      raise ValueError(f'dataset {name!r}: proprio_obs_key '
                       f'{keys.proprio_obs_key!r} is not an observation key; '
                       f'the observation has {sorted(old_obs)}.')
    obs['proprio'] = tf.cast(old_obs[keys.proprio_obs_key], tf.float32)
  obs['timestep'] = tf.range(length)
  task = {}
  if keys.language_key is not None:
    task['language_instruction'] = _language(traj, keys.language_key, name)
  return {'observation': obs, 'task': task,
          'action': tf.cast(traj['action'], tf.float32),
          'dataset_name': tf.fill([length], name)}


def _nonzero_length(traj: Dict[str, Any]) -> tf.Tensor:
  return tf.shape(traj['action'])[0] > 0


def trajectories(source: source_lib.Source, keys: Keys, *,
                 standardize: Optional[Callable],
                 filters: Sequence[Callable] = (), ignore_errors: bool = False,
                 num_parallel_calls: int = _AUTOTUNE,
                 **reading: Any) -> tf.data.Dataset:
  """Standardized trajectories of ``source`` (`from_rlds` ``**reading``), not normalised."""
  dataset = from_rlds(source, **reading)
  for keep in filters:
    dataset = dataset.filter(keep)
  if ignore_errors:
    dataset = dataset.ignore_errors()
  dataset = dataset.map(
      lambda traj: restructure(traj, keys, standardize), num_parallel_calls)
  return dataset.filter(_nonzero_length)


def _statistics(source: source_lib.Source, keys: Keys,
                standardize: Optional[Callable], filters: Sequence[Callable],
                ignore_errors: bool) -> Dict[str, Any]:
  """Octo's statistics of every split: the stored fields read alone when no function changes them."""
  proprio = keys.proprio_obs_key
  if standardize is None and not filters and not ignore_errors:
    return stats_lib.compute_stored(
        source, None if proprio is None else f'{rlds_types.OBSERVATION}/{proprio}')
  every = source.every_split()
  return stats_lib.compute(trajectories(
      every, keys, standardize=standardize, filters=filters,
      ignore_errors=ignore_errors, shuffle=False, blank_images=True))


@op_context.named('make_dataset_from_rlds')
def make_dataset_from_rlds(
    name: Any, data_dir: Any, *, train: bool,
    standardize_fn: Any = None, shuffle: bool = True,
    image_obs_keys: Mapping[str, Optional[str]] = {},  # pylint: disable=dangerous-default-value
    depth_obs_keys: Mapping[str, Optional[str]] = {},  # pylint: disable=dangerous-default-value
    proprio_obs_key: Optional[str] = None, language_key: Optional[str] = None,
    action_proprio_normalization_type: Union[str, stats_lib.NormalizationType] = 'normal',
    dataset_statistics: Union[None, dict, str] = None,
    force_recompute_dataset_statistics: bool = False,
    action_normalization_mask: Optional[Sequence[bool]] = None,
    filter_functions: Sequence[Any] = (), skip_norm: bool = False,
    ignore_errors: bool = False, num_parallel_reads: int = _AUTOTUNE,
    num_parallel_calls: int = _AUTOTUNE, seed: Optional[int] = None
) -> Tuple[tf.data.Dataset, Dict[str, Any]]:
  """Octo's trajectories of one dataset, and its statistics (docs/octo.md).

  Octo's arguments, with Octo's meaning (its docstring); a ``name`` may also
  be an opened `rlds_lite.Source` or a dataset directory (then ``data_dir``
  is None). The arguments outnumber ten because they are Octo's own.

  Args:
    name: a TFDS name in ``data_dir``, a dataset directory, or a `Source`.
    data_dir: the TFDS data directory (names only).
    train: the training split, else the validation split.
    standardize_fn: a callable on a trajectory, or a ModuleSpec dict.
    shuffle: shuffle the order of the files.
    image_obs_keys, depth_obs_keys: ``{new: old or None}`` (None: padding).
    proprio_obs_key: the observation key of ``observation['proprio']``.
    language_key: the key (fnmatch) of ``task['language_instruction']``.
    action_proprio_normalization_type: ``'normal'`` or ``'bounds'``.
    dataset_statistics: a dict, a JSON path, or None (computed, cached).
    force_recompute_dataset_statistics: ignore cached statistics.
    action_normalization_mask: the action dimensions to normalise.
    filter_functions: predicates (or ModuleSpecs) on raw trajectories.
    skip_norm: leave actions and proprio as they are.
    ignore_errors: skip trajectories that fail to read.
    num_parallel_reads, num_parallel_calls: parallelism.
    seed: the seed of the file order (None: random).

  Returns:
    ``(trajectories, statistics)``.

  Example:
    >>> import tempfile
    >>> from rlds_lite import synthetic
    >>> path = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=2,
    ...                                 length=3, cameras={'image': (8, 8)})
    >>> ds, stats = make_dataset_from_rlds(path, None, train=True,
    ...                                    skip_norm=True)
    >>> sorted(next(iter(ds)))
    ['action', 'dataset_name', 'observation', 'task']
  """
  source = open_source(name, data_dir)
  keys = Keys(dataset_name(source), dict(image_obs_keys),
              dict(depth_obs_keys), proprio_obs_key, language_key)
  standardize = (None if standardize_fn is None else
                 specs_lib.instantiate(standardize_fn))
  filters = [specs_lib.instantiate(f, 'filter_functions')
             for f in filter_functions]
  norm = stats_lib.NormalizationType(action_proprio_normalization_type)
  statistics = stats_lib.dataset_statistics(
      dataset_statistics, source, keys, force=force_recompute_dataset_statistics,
      dependencies=(specs_lib.to_string(standardize_fn),
                    *map(specs_lib.to_string, filter_functions)),
      make=functools.partial(_statistics, source, keys, standardize, filters,
                             ignore_errors))
  statistics = stats_lib.with_mask(statistics, action_normalization_mask,
                                   keys.name)
  dataset = trajectories(
      _split(source, train, keys.name), keys,
      standardize=standardize, filters=filters, ignore_errors=ignore_errors,
      num_parallel_calls=num_parallel_calls, shuffle=shuffle, seed=seed,
      num_parallel_reads=num_parallel_reads)
  stats_lib.check_matches(statistics, dataset.element_spec, keys.name)
  if skip_norm:
    _LOG.warning('make_dataset_from_rlds: dataset %r is not normalised '
                 '(skip_norm=True).', keys.name)
  else:
    dataset = dataset.map(functools.partial(
        stats_lib.normalize_action_and_proprio, metadata=statistics,
        normalization_type=norm), num_parallel_calls)
  return dataset, statistics
