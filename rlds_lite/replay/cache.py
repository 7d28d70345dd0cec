"""`decoded_cache`: an RLDS camera split decoded once at the training size into an immutable memory-mapped buffer."""

import dataclasses
import json
import logging
import os
import shutil
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf

from rlds_lite import atomic_output
from rlds_lite import byte_sizes
from rlds_lite import nest_paths
from rlds_lite import rlds_names
from rlds_lite import sample_kinds
from rlds_lite import source as source_lib
from rlds_lite.images import decode as decode_lib
from rlds_lite.replay import buffer as buffer_lib
from rlds_lite.replay import robot_gather
from rlds_lite.replay import spec as spec_lib
from rlds_lite.replay import storage as storage_lib
from rlds_lite.replay import writers as writers_lib

__all__ = ['CacheCost', 'DecodedCache', 'cache_cost', 'decoded_cache']

PathLike = Union[str, os.PathLike]
_LOG = logging.getLogger('rlds_lite')
_INFO = 'cache.json'
_LAYOUT = 1
_ID_BYTES = 12
"""Per slot: its episode id (int64) and step (int32)."""


@dataclasses.dataclass(frozen=True)
class CacheCost:
  """What a decoded cache of a split takes on disk, before it is filled.

  Attributes:
    steps: steps of the split (the cache's slots).
    episodes: episodes of the split.
    spec: flat field path -> `Field` as stored (frames at the output size,
      strings at their longest width).
    bytes: bytes on disk (every column, and each slot's episode id and step).
  """
  steps: int
  episodes: int
  spec: Dict[str, spec_lib.Field]
  bytes: int

  @property
  def bytes_per_step(self) -> int:
    return self.bytes // max(self.steps, 1)

  def __repr__(self) -> str:
    return (f'CacheCost({self.steps:,} steps of {self.episodes:,} episodes, '
            f'{byte_sizes.format_bytes(self.bytes_per_step)} per step, '
            f'{byte_sizes.format_bytes(self.bytes)} on disk)')


class _Plan:
  """One split's cache: image sizes, the stored spec, and the fingerprint of what it is filled from."""

  def __init__(self, source: source_lib.Source, image_size: Any,
               resize_method: str, episode_fields: Sequence[str]):
    self.source = source
    self.method = decode_lib.check_method(resize_method)
    self.images = source.image_specs
    self.sizes = _sizes(image_size, self.images)
    self.episode_fields = _episode_fields(source, episode_fields)
    self.fingerprint = _fingerprint(self)

  def cost(self) -> CacheCost:
    """The stored spec and its bytes: one pass over the split's strings and lengths (no decoding)."""
    step_spec = dict(nest_paths.flatten_with_paths(self.source.step_spec))
    strings = [p for p, s in step_spec.items() if s.dtype == tf.string]
    episode_spec = self.source.features.get_tensor_spec()
    widths, steps, episodes = _measure(self.source, strings, [
        f for f in self.episode_fields if episode_spec[f].dtype == tf.string])
    spec = {}
    for path, leaf in list(step_spec.items()) + [(f, episode_spec[f]) for f in
                                                 self.episode_fields]:
      if path in self.images:
        image = self.images[path]
        shape = decode_lib.output_shape(image, self.sizes[path])
        spec[path] = spec_lib.Field(tuple(shape), image.dtype.name)
        continue
      if not leaf.shape.is_fully_defined():
        raise ValueError(
            f'decoded_cache: field {path!r} has the variable shape {leaf.shape}; '
            'a memory-mapped cache holds fields of one shape per step.')
      dtype = f'S{max(widths.get(path, 1), 1)}' if leaf.dtype == tf.string else (
          leaf.dtype.name)
      spec[path] = spec_lib.Field(tuple(leaf.shape.as_list()), dtype)
    per_step = sum(int(np.prod(f.shape, dtype=np.int64)) * np.dtype(f.dtype).itemsize
                   for f in spec.values()) + _ID_BYTES
    return CacheCost(steps, episodes, spec, steps * per_step)

  def episodes(self) -> tf.data.Dataset:
    """Flat episodes, frames decoded at their size (one parallel map over episodes)."""
    images, sizes, method = self.images, self.sizes, self.method
    fields = self.episode_fields

    def decoded(episode):
      flat = dict(nest_paths.flatten_with_paths(episode[rlds_names.STEPS]))
      for path, spec in images.items():
        flat[path] = decode_lib.decode_frames(flat[path], spec, sizes[path],
                                              method=method, field=path)
      length = tf.shape(flat[rlds_names.IS_LAST])[0]
      for name in fields:
        value = tf.convert_to_tensor(episode[name])
        flat[name] = tf.broadcast_to(value, tf.concat([[length], tf.shape(value)], 0))
      return flat

    episodes = self.source.episodes(dense=True, encoded_images=True)
    return episodes.map(decoded, num_parallel_calls=tf.data.AUTOTUNE,
                        deterministic=True).prefetch(2)


def _sizes(image_size: Any, images: Mapping[str, Any]) -> Dict[str, Any]:
  """Each image field's output ``(h, w)`` (None: stored), as `FrameDecoding` takes ``image_size``."""
  if isinstance(image_size, Mapping):
    unknown = sorted(set(image_size) - set(images))
    if unknown:
      raise ValueError(f'decoded_cache: image_size names {unknown}, which are not '
                       f'image fields ({sorted(images)}).')
    return {p: decode_lib.check_size(image_size.get(p), 'image_size') for p in images}
  size = decode_lib.check_size(image_size, 'image_size')
  return {p: size for p in images}


def _episode_fields(source: source_lib.Source, fields: Any) -> Tuple[str, ...]:
  fields = (fields,) if isinstance(fields, str) else tuple(fields)
  top = [k for k in source.features.keys() if k != rlds_names.STEPS]
  steps = [p for p, _ in nest_paths.flatten_with_paths(source.step_spec)]
  for name in fields:
    if name not in top:
      raise ValueError(f'decoded_cache: episode_fields names {name!r}, which is not '
                       f'an episode field; the episodes have {sorted(top)}.')
    if name in steps:
      raise ValueError(f'decoded_cache: episode field {name!r} has the name of a '
                       'step field; a sample could not hold both.')
  return fields


def _measure(source: source_lib.Source, strings: Sequence[str],
             episode_strings: Sequence[str]) -> Tuple[Dict[str, int], int, int]:
  """``(longest bytes of each string field, steps, episodes)``: one pass, no frame decoded."""
  fields = list(strings) or [rlds_names.IS_LAST]

  def measured(episode):
    flat = dict(nest_paths.flatten_with_paths(episode[rlds_names.STEPS]))
    longest = lambda x: tf.reduce_max(tf.concat([tf.reshape(tf.strings.length(x), [-1]), [0]], 0))
    out = {p: longest(flat[p]) for p in strings}
    out.update({f: longest(episode[f]) for f in episode_strings})
    out['_steps'] = tf.shape(flat[fields[0]], out_type=tf.int64)[0]
    return out

  widths: Dict[str, int] = {}
  steps = episodes = 0
  ds = source.episodes(dense=True, fields=fields).map(
      measured, num_parallel_calls=tf.data.AUTOTUNE)
  for out in ds.as_numpy_iterator():
    episodes += 1
    steps += int(out.pop('_steps'))
    for path, width in out.items():
      widths[path] = max(widths.get(path, 0), int(width))
  return widths, steps, episodes


def _fingerprint(plan: _Plan) -> Dict[str, Any]:
  """What the cache holds: the dataset (its files' names, sizes and mtimes), split, sizes, fields."""
  source = plan.source
  data_dir = os.path.realpath(source.data_dir)
  files = {}
  for name in sorted(os.listdir(data_dir)):
    path = os.path.join(data_dir, name)
    if not name.startswith('.') and os.path.isfile(path):
      stat = os.stat(path)
      files[name] = [stat.st_size, stat.st_mtime_ns]
  return {
      'layout': _LAYOUT, 'data_dir': data_dir, 'name': source.builder.name,
      'version': str(source.builder.info.version), 'split': str(source.split),
      'files': files, 'resize_method': plan.method,
      'image_size': {p: (list(s) if s else None) for p, s in sorted(plan.sizes.items())},
      'episode_fields': list(plan.episode_fields),
  }


def _differences(stored: Mapping[str, Any], current: Mapping[str, Any]) -> str:
  parts = []
  for key in current:
    if stored.get(key) != current[key]:
      if key == 'files':
        old, new = stored.get(key, {}), current[key]
        changed = sorted(f for f in set(old) | set(new) if old.get(f) != new.get(f))
        parts.append(f'files changed since it was filled ({", ".join(changed[:4])})')
      else:
        parts.append(f'{key} {stored.get(key)!r} (now {current[key]!r})')
  return '; '.join(parts)


def _check_disk(parent: str, cost: CacheCost) -> None:
  free = shutil.disk_usage(parent).free
  if cost.bytes > free:
    raise OSError(
        f'decoded_cache: filling a cache in {parent} needs '
        f'{byte_sizes.format_bytes(cost.bytes)} on disk ({cost!r}), but only '
        f'{byte_sizes.format_bytes(free)} is free; give a smaller image_size or '
        'a path on another disk.')


def _fill(plan: _Plan, cost: CacheCost, directory: str) -> None:
  """Decodes the split into a `MemmapStorage` at ``directory`` and records what it holds."""
  storage = storage_lib.MemmapStorage(directory, max(cost.steps, 1), spec=cost.spec)
  writer = writers_lib.Immutable()
  header = storage.header
  with plan.source.read_errors():
    for episode in plan.episodes().as_numpy_iterator():
      number = int(header[storage_lib.NEXT_EPISODE])
      values = spec_lib.check(episode, cost.spec, 1, f'episode {number}')
      length = len(values[rlds_names.IS_LAST])
      header[storage_lib.NEXT_EPISODE] = number + 1
      if length:
        writer.write(storage, values, np.full([length], number, np.int64),
                     np.arange(length, dtype=np.int32))
  storage.flush()
  info = {'fingerprint': plan.fingerprint, 'steps': cost.steps,
          'episodes': cost.episodes, 'bytes': cost.bytes}
  with open(os.path.join(directory, _INFO), 'w') as f:
    json.dump(info, f, indent=1)


class DecodedCache(buffer_lib.ReplayBuffer):
  """A `ReplayBuffer` over a filled cache (``writer=Immutable()``): `RobotSamples` gathered without decoding.

  Made by `decoded_cache`. A `RobotSamples` sample reads each field only at
  the steps it needs (`robot_gather`), straight from the memory-mapped
  columns: the frames stay in the kernel's page cache, not in this process.

  Attributes:
    path: the cache's directory.
    cost: its `CacheCost`.
  """

  def __init__(self, storage: storage_lib.MemmapStorage, cost: CacheCost, *,
               kind: Any = None, sampler: Any = None, seed: int = 0):
    self.path = storage.path
    self.cost = cost
    super().__init__(storage, sampler=sampler, writer=writers_lib.Immutable(),
                     kind=kind, seed=seed)

  def _insert(self, values: Dict[str, np.ndarray], label: str) -> None:
    raise ValueError(f'decoded_cache {self.path} is immutable: it holds the '
                     f'{len(self)} steps it was filled with.')

  def _gather(self, slots: np.ndarray) -> Dict[str, Any]:
    if not isinstance(self.kind, sample_kinds.RobotSamples):
      return super()._gather(slots)
    rows, start, length, _ = self.index.locate(slots)
    return robot_gather.gather_robot_samples(
        self.kind, self.storage.columns, self.index.first[rows].astype(np.int64),
        start, length, self.storage.capacity)

  def _finish(self, values: Dict[str, Any]) -> Dict[str, Any]:
    if not isinstance(self.kind, sample_kinds.RobotSamples):
      return super()._finish(values)
    return values


def _source(source: Any, split: Any) -> source_lib.Source:
  if isinstance(source, tf.data.Dataset):
    raise TypeError('decoded_cache: source must be a TFDS dataset directory, name or '
                    'rlds_lite.Source (its files fingerprint the cache), not a '
                    'tf.data.Dataset.')
  return source_lib.as_source(source, split)


def cache_cost(source: Any, *, image_size: Any = None, split: Any = None,
               episode_fields: Union[str, Sequence[str]] = ()) -> CacheCost:
  """What `decoded_cache` of ``source`` would take on disk (one pass over its strings, no decoding).

  Args:
    source: a `rlds_lite.Source`, a TFDS dataset directory or name.
    image_size: ``(h, w)`` of every camera, a dict path -> size, or None (stored).
    split: the split (None: the source's own, or ``'train'``).
    episode_fields: episode fields stored with every step.

  Example:
    >>> import tempfile
    >>> from rlds_lite import synthetic
    >>> path = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=2,
    ...                                 length=5, cameras={'image': (32, 32)})
    >>> cache_cost(path, image_size=(16, 16))
    CacheCost(10 steps of 2 episodes, 872 B per step, 8.7 KB on disk)
  """
  return _Plan(_source(source, split), image_size, 'bilinear', episode_fields).cost()


class _Published(Exception):
  """Another process published the cache while this one waited for the lock."""


def _taken(target: str) -> None:
  if os.path.exists(target):
    raise _Published(target)


def _opened(path: str, plan: _Plan, **kwargs: Any) -> DecodedCache:
  info_path = os.path.join(path, _INFO)
  if not os.path.exists(info_path):
    raise ValueError(f'decoded_cache: {path} exists but is not a decoded cache (no '
                     f'{_INFO}); give another path.')
  with open(info_path) as f:
    info = json.load(f)
  differences = _differences(info['fingerprint'], plan.fingerprint)
  if differences:
    raise ValueError(
        f'decoded_cache: {path} was filled from another source or with other '
        f'settings: {differences}. It is valid only for what it was filled from: '
        'delete it to fill it again, or give another path.')
  storage = storage_lib.MemmapStorage(path)
  cost = CacheCost(info['steps'], info['episodes'], dict(storage.spec or {}), info['bytes'])
  return DecodedCache(storage, cost, **kwargs)


def decoded_cache(source: Any, path: PathLike, *, kind: Any = None,
                  image_size: Any = None, resize_method: str = 'bilinear',
                  split: Any = None, episode_fields: Union[str, Sequence[str]] = (),
                  sampler: Any = None, seed: int = 0) -> DecodedCache:
  """An immutable memory-mapped buffer of ``source``'s split, frames decoded once at ``image_size``.

  The first call fills ``path`` (each frame decoded once, episode by episode,
  as `robot_samples_dataset` decodes it, then published atomically); later
  calls open it, after checking it was filled from the same files, split,
  sizes and fields (else a ValueError). Its samples are uniform over the
  whole split (``sampler``) and decode nothing.

  Args:
    source: a `rlds_lite.Source`, a TFDS dataset directory or name.
    path: the cache's directory.
    kind: a `RobotSamples` (or any sample kind; None: single steps).
    image_size: ``(h, w)`` of every camera, a dict path -> size, or None (stored).
    resize_method: the ``tf.image.resize`` method.
    split: the split (None: the source's own, or ``'train'``).
    episode_fields: episode fields stored with (and sampled at) every step.
    sampler: `Uniform()` (default), `WithoutReplacement()` or `Prioritized()`.
    seed: the sampler's seed.

  Example:
    >>> import tempfile
    >>> from rlds_lite import synthetic
    >>> from rlds_lite.sample_kinds import RobotSamples
    >>> data = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=2,
    ...                                 length=5, cameras={'image': (32, 32)})
    >>> cache = decoded_cache(data, tempfile.mkdtemp() + '/cache', image_size=(16, 16),
    ...                       kind=RobotSamples(history=2, action_chunk=3))
    >>> batch, info = cache.sample(4)
    >>> batch['observation']['image'].shape, batch['action'].shape
    ((4, 2, 16, 16, 3), (4, 3, 7))
    >>> len(cache), cache.num_samples   # steps; anchors with a valid action
    (10, 8)
    >>> type(batch['language_instruction'][0]), batch['observation_pad_mask'].shape
    (<class 'bytes'>, (4, 2))
  """
  path = os.path.abspath(os.fspath(path))
  plan = _Plan(_source(source, split), image_size, resize_method, episode_fields)
  options = dict(kind=kind, sampler=sampler, seed=seed)
  if os.path.exists(path):
    return _opened(path, plan, **options)
  cost = plan.cost()
  parent = os.path.dirname(path)
  os.makedirs(parent, exist_ok=True)
  _check_disk(parent, cost)
  _LOG.info('decoded_cache: filling %s: %r', path, cost)
  try:
    with atomic_output.AtomicOutput(path, directory=True, check=_taken,
                                    label=f'decoded cache {path}') as output:
      _fill(plan, cost, output.path)
      output.publish()
  except _Published:
    pass
  return _opened(path, plan, **options)
