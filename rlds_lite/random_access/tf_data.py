"""Uniformly shuffled batches by random access, as a ``tf.data.Dataset``.

``sample_batches`` runs positions -> sample ids (`Sampler`) -> one batched
read per source (`SampleReader`) -> prefetch; `plan` is what it reads, shared
with `SampleIterator` and Grain. See docs/random_access.md.

Example:
  >>> from rlds_lite import synthetic
  >>> from rlds_lite.random_access import convert, Windows
  >>> chunks = convert(synthetic.dataset(num_episodes=4, seed=0), progress=False)
  >>> batch = next(iter(sample_batches(chunks, Windows(size=4), 32, seed=0)))
  >>> batch['observation'].shape
  TensorShape([32, 4, 4])
"""

import functools
import hashlib
import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf

from rlds_lite import op_context
from rlds_lite.images import decode as decode_lib
from rlds_lite.random_access import index as index_lib
from rlds_lite.random_access import layout as layout_lib
from rlds_lite.random_access import options as options_lib
from rlds_lite.random_access import reading
from rlds_lite.random_access import sampler as sampler_lib
from rlds_lite import sample_kinds as samples_lib
from rlds_lite.random_access import storage as storage_lib

__all__ = ['sample_batches', 'Plan', 'plan', 'DATASET_INDEX']

PathLike = Union[str, os.PathLike]
Source = Union[PathLike, storage_lib.ChunkStorage]
Sources = Union[Source, Sequence[Source], Mapping[str, Source]]

DATASET_INDEX = 'dataset_index'
"""Key of each sample's source (with several sources and ``sample_info``)."""


class Plan:
  """What a random-access pipeline reads: sources, indexes, sampler.

  Built by `plan`; shared by the tf.data and Grain readers and by
  `SampleIterator`, so that they all give the same batches.

  Attributes:
    names: the sources' names (keys of a dict, else ``'0'``, ``'1'``, ...).
    readers: one `SampleReader` per source.
    sampler: the `Sampler`.
    num_epochs: epochs to read (None: forever; one source only).
    drop_remainder: drop a last batch smaller than the global batch.

  Example:
    >>> from rlds_lite import synthetic
    >>> from rlds_lite.random_access import convert, Epochs, Windows
    >>> chunks = convert(synthetic.dataset(3, 4, 6, seed=0), progress=False)
    >>> p = plan(chunks, Windows(size=2), 4, epochs=Epochs(num_epochs=1))
    >>> p.names, p.end, p.num_batches(0), p.num_batches(12)  # 14 samples.
    (['0'], 14, 4, 1)
    >>> p.read_batch(tf.constant([0, 1]))['observation'].shape
    TensorShape([2, 2, 4])
  """

  def __init__(self, names: List[str], readers: List[reading.SampleReader],
               sampler: sampler_lib.Sampler, num_epochs: Optional[int],
               drop_remainder: bool, sample_info: bool):
    self.names = names
    self.readers = readers
    self.sampler = sampler
    self.num_epochs = num_epochs
    self.drop_remainder = drop_remainder
    self.sample_info = sample_info

  @property
  def fingerprint(self) -> str:
    """Identifies what a position means: each source's samples (split, step
    features, episode lengths and terminal flags, the digest of its step
    values that `convert` recorded, sample kind), and the sampler's sizes,
    weights, order and global batch size.

    The chunk layout (``chunk_steps``) is not part of it: it changes how
    samples are read, not which sample a position gives, so a state restores
    into the same source chunked again with other ``chunk_steps``.
    """
    parts = [_source_fingerprint(r, r.storage.data_digest)
             for r in self.readers]
    return '-'.join(parts + [self.sampler.fingerprint()])

  @property
  def fingerprint_v2(self) -> str:
    """The fingerprint of states of format 2 (the data's shape only)."""
    parts = [_source_fingerprint(r) for r in self.readers]
    return '-'.join(parts + [self.sampler.fingerprint()])

  @property
  def fingerprint_v1(self) -> str:
    """The fingerprint of states of format 1 (chunk layout included)."""
    parts = [r.index.fingerprint for r in self.readers]
    return '-'.join(parts + [self.sampler.fingerprint()])

  @property
  def end(self) -> Optional[int]:
    """The position after the last sample (None: no end)."""
    if self.num_epochs is None:
      return None
    total = self.num_epochs * self.sampler.sizes[0]
    if self.drop_remainder:
      total -= total % self.sampler.global_batch_size
    return total

  def num_batches(self, position: int) -> Optional[int]:
    """This host's batches from ``position`` on (None: forever)."""
    end = self.end
    if end is None:
      return None
    sampler = self.sampler
    remaining = max(end - position - sampler.host * sampler.batch_size, 0)
    return -(-remaining // sampler.global_batch_size)

  def with_seed(self, seed: int) -> 'Plan':
    """The same plan with another seed."""
    s = self.sampler
    sampler = sampler_lib.Sampler(
        s.sizes, s.weights, seed=seed, batch_size=s.batch_size,
        num_hosts=s.num_hosts, host=s.host, order=s.order,
        episode_counts=[r.index.counts for r in self.readers])
    return Plan(self.names, self.readers, sampler, self.num_epochs,
                self.drop_remainder, self.sample_info)

  def read_batch(self, positions: tf.Tensor) -> Dict[str, Any]:
    """The batch at ``positions`` (TF ops)."""
    if self.sampler.order == 'uniform':
      dataset, values = self.sampler.sample_ids(positions)
      to_ids = [None] * len(self.readers)
    else:   # Positions in each dataset, mapped to ids where they are read.
      dataset, values = self.sampler.local_positions(positions)
      to_ids = [functools.partial(self.sampler.spread_ids, i)
                for i in range(len(self.readers))]
    if len(self.readers) == 1:
      out = self.readers[0].read(values, to_ids[0])
    else:
      count = len(self.readers)
      parts = tf.dynamic_partition(values, dataset, count)
      slots = tf.dynamic_partition(tf.range(tf.shape(values)[0]), dataset,
                                   count)
      batches = [reader.read(part, fn) for reader, part, fn in
                 zip(self.readers, parts, to_ids)]
      out = tf.nest.map_structure(
          lambda *values: tf.dynamic_stitch(slots, list(values)), *batches)
    if self.sample_info and len(self.readers) > 1:
      out[DATASET_INDEX] = dataset
    return out

  def batch_positions(self, position: int, batch: tf.Tensor) -> tf.Tensor:
    """This host's positions of batch ``batch`` after ``position``, cut at the end."""
    positions = self.sampler.host_positions_tf(
        tf.constant(position, tf.int64), batch)
    end = self.end
    if end is not None:
      positions = positions[:tf.reduce_sum(tf.cast(positions < end, tf.int32))]
    return positions


def _source_fingerprint(reader: reading.SampleReader, data: str = '') -> str:
  """What one source's sample ids mean (see `Plan.fingerprint`); ``data`` is
  its values' digest (none in `Plan.fingerprint_v2`)."""
  storage, index = reader.storage, reader.index
  leaves = [[leaf.path, leaf.kind, leaf.dtype, list(leaf.shape[1:]),
             leaf.encoding] for leaf in storage.layout.leaves]
  digest = hashlib.sha256(
      json.dumps([storage.split, repr(index.kind), leaves]).encode())
  digest.update(np.ascontiguousarray(index.lengths, '<i8').tobytes())
  digest.update(np.ascontiguousarray(index.terminated, bool).tobytes())
  digest.update(data.encode())
  return digest.hexdigest()[:16]


def _named(sources: Sources) -> Tuple[List[str], List[Source]]:
  if isinstance(sources, Mapping):
    return [str(k) for k in sources], list(sources.values())
  if isinstance(sources, (list, tuple)):
    return [str(i) for i in range(len(sources))], list(sources)
  return ['0'], [sources]


def _weights(names: List[str], weights: Any) -> Optional[List[float]]:
  if weights is None:
    return None
  if isinstance(weights, Mapping):
    if set(weights) != set(names):
      raise ValueError(f'random access: weights has keys {sorted(weights)}; '
                       f'it needs exactly the sources {sorted(names)}.')
    return [float(weights[name]) for name in names]
  return [float(w) for w in weights]


def _feature(leaf: layout_lib.Leaf, decoded_size: bool) -> str:
  """What a step leaf gives a sample (``float32 (3,)``, ``png image ...``)."""
  if leaf.kind == 'string':
    return 'strings'
  shape = '' if decoded_size else f' {tuple(leaf.shape[1:])}'
  if leaf.kind == 'image':
    return f'{leaf.encoding} images{shape}'
  return f'{leaf.dtype}{shape}'


def _check_same_features(names: List[str],
                         storages: List[storage_lib.ChunkStorage],
                         decode_images: bool,
                         image_size: Optional[Tuple[int, int]]) -> None:
  """Raises a one-line ValueError if mixed sources give different samples.

  Frames decoded at ``image_size`` (or not decoded) may differ in size.
  """
  resized = image_size is not None or not decode_images
  features = [{leaf.path: _feature(leaf, resized and leaf.kind == 'image')
               for leaf in s.layout.leaves} for s in storages]
  label = [f'{name!r} ({s.path})' for name, s in zip(names, storages)]
  for i in range(1, len(storages)):
    first, other = features[0], features[i]
    only = [(label[0], sorted(set(first) - set(other))),
            (label[i], sorted(set(other) - set(first)))]
    parts = [f'only {who} has {", ".join(paths)}' for who, paths in only
             if paths]
    parts += [f'{path!r} is {first[path]} in {label[0]} but {other[path]} in '
              f'{label[i]}' for path in sorted(set(first) & set(other))
              if first[path] != other[path]][:1 if not parts else 0]
    if parts:
      raise ValueError('random access: the sources have different features, '
                       f'so their samples do not mix: {"; ".join(parts)}. '
                       'Mix sources with the same step features.')


def plan(sources: Sources, kind: samples_lib.SampleKind, batch_size: int, *,
         weights: Any = None, seed: int = 0, split: str = 'train',
         epochs: Optional[options_lib.Epochs] = None,
         sharding: Optional[options_lib.Sharding] = None,
         outputs: Optional[options_lib.Outputs] = None,
         reading: Optional[options_lib.ReadOptions] = None,
         **flat: Any) -> Plan:
  """The `Plan` of `sample_batches` (same arguments but ``position``).

  Example:
    >>> from rlds_lite import synthetic
    >>> from rlds_lite.random_access import convert, Windows
    >>> chunks = convert(synthetic.dataset(3, 4, 6, seed=0), progress=False)
    >>> mixed = plan({'a': chunks, 'b': chunks}, Windows(size=2), 4,
    ...              weights={'a': 0.75, 'b': 0.25})
    >>> mixed.names, mixed.sampler.weights
    (['a', 'b'], (0.75, 0.25))
  """
  options = options_lib.sort_options(
      'plan', dict(epochs=epochs, sharding=sharding, outputs=outputs,
                   reading=reading), flat)
  return plan_of(sources, kind, batch_size, weights, seed, split, options)


def plan_of_keywords(op: str, sources: Sources, kind: samples_lib.SampleKind,
                     batch_size: int, seed: int, keywords: Dict[str, Any]
                     ) -> Tuple[Plan, options_lib.Options]:
  """The plan and options of `sample_batches`' keywords (``weights``,
  ``split``, the groups, flat keywords warned once as ``op``'s).

  Example:
    >>> from rlds_lite import synthetic
    >>> from rlds_lite.random_access import convert, Windows
    >>> chunks = convert(synthetic.dataset(3, 4, 6, seed=0), progress=False)
    >>> p, options = plan_of_keywords('grain_batches', chunks, Windows(2), 4,
    ...                               0, {'split': 'train'})
    >>> options.epochs.num_epochs is None, len(p.sampler.sizes)
    (True, 1)
  """
  keywords = dict(keywords)
  weights, split = keywords.pop('weights', None), keywords.pop('split', 'train')
  groups = {name: keywords.pop(name, None) for name in options_lib.GROUPS}
  options = options_lib.sort_options(op, groups, keywords)
  return (plan_of(sources, kind, batch_size, weights, seed, split, options),
          options)


def plan_of(sources: Sources, kind: samples_lib.SampleKind, batch_size: int,
            weights: Any, seed: int, split: str,
            options: options_lib.Options) -> Plan:
  """`plan` of sorted options."""
  kind = samples_lib.check_kind(kind)
  outputs, epochs, sharding = options.outputs, options.epochs, options.sharding
  with op_context.named('random access'):
    image_size = decode_lib.check_size(outputs.image_size, 'image_size')
  names, values = _named(sources)
  if not values:
    raise ValueError('random access: no source.')
  storages = [storage_lib.open_storage(v, split, options.reading.mapped_budget)
              for v in values]
  _check_same_features(names, storages, outputs.decode_images, image_size)
  readers = [_reader(name, storage, kind, outputs, image_size)
             for name, storage in zip(names, storages)]
  num_epochs = _num_epochs(epochs.num_epochs, len(readers))
  sampler = sampler_lib.Sampler(
      [len(r.index) for r in readers], _weights(names, weights), seed=seed,
      batch_size=batch_size, num_hosts=sharding.num_hosts,
      host=sharding.host, order=epochs.order,
      episode_counts=[r.index.counts for r in readers])
  if epochs.drop_remainder and num_epochs is not None:
    total = num_epochs * len(readers[0].index)
    if total < sampler.global_batch_size:
      raise ValueError(
          f'random access: drop_remainder=True gives no batch: {num_epochs} '
          f'epoch(s) hold {total} samples, fewer than the global batch of '
          f'{sampler.global_batch_size}. Use a smaller batch, more epochs or '
          'drop_remainder=False.')
  return Plan(names, readers, sampler, num_epochs,
              bool(epochs.drop_remainder), outputs.sample_info)


def _reader(name: str, storage: storage_lib.ChunkStorage,
            kind: samples_lib.SampleKind, outputs: options_lib.Outputs,
            image_size: Optional[Tuple[int, int]]) -> reading.SampleReader:
  """The `SampleReader` of one source; a source without samples refused."""
  index = index_lib.SampleIndex.build(kind, storage)
  if not len(index):
    longest = int(storage.lengths.max()) if storage.num_episodes else 0
    raise ValueError(
        f'random access: source {name!r} ({storage.path!r}) has no '
        f'{kind!r} sample: its {storage.num_episodes} episodes are all '
        f'shorter than a sample (longest: {longest} steps).')
  return reading.SampleReader(storage, index,
                              decode_images=outputs.decode_images,
                              image_size=image_size,
                              sample_info=outputs.sample_info)


def _num_epochs(num_epochs: Any, num_sources: int) -> Optional[int]:
  if num_sources > 1 and num_epochs is not None:
    raise ValueError('random access: num_epochs needs one source; with '
                     'several, each source has its own epochs (read a '
                     'number of batches with .take(n)).')
  if num_epochs is not None and (isinstance(num_epochs, bool) or
                                 int(num_epochs) < 1):
    raise ValueError(f'random access: num_epochs must be a positive int or '
                     f'None, got {num_epochs!r}.')
  return None if num_epochs is None else int(num_epochs)


READ_BYTES = 4 << 20
"""Bytes a read holds by default (fixed layouts: the samples, and the records
read with pread when the split is not memory-mapped): a read's fixed cost (a
Python call, the conversion of its outputs) is shared by as many batches as
fit (1x vectors, 4-step windows of ~480 bytes, batches of 256, in a Python
loop: 200K samples/s at 1 batch a read, 500K at 8, 790K at 32)."""


MAX_BATCHES_PER_READ = 32


def _full_batches(p: Plan, position: int) -> Optional[int]:
  """This host's batches from ``position`` that are full (None: all)."""
  end = p.end
  if end is None:
    return None
  sampler = p.sampler
  last = position + sampler.host * sampler.batch_size + sampler.batch_size
  if end < last:
    return 0
  return (end - last) // sampler.global_batch_size + 1


def dataset_of_plan(p: Plan, position: int = 0, *,
                    num_parallel_calls: Optional[int] = tf.data.AUTOTUNE,
                    prefetch: int = 2,
                    batches_per_read: Optional[int] = None) -> tf.data.Dataset:
  """The batches of plan ``p`` from global ``position`` on.

  ``batches_per_read`` consecutive full batches are read in one call
  (default: as many as hold about ``READ_BYTES``, from 1 to
  ``MAX_BATCHES_PER_READ``, for fixed layouts; 1 with images or strings),
  then split.
  """
  if isinstance(position, bool) or int(position) < 0:
    raise ValueError(f'random access: position must be a non-negative int, '
                     f'got {position!r}.')
  position = int(position)
  size = p.sampler.batch_size
  fixed = all(r.storage.layout.fixed for r in p.readers)
  # Layouts with images read big records: one batch per read keeps the
  # bytes in flight small (grouping shares a fixed cost that decoding dwarfs).
  batch_bytes = max(1, size * max(r.read_bytes for r in p.readers))
  group = batches_per_read or (min(max(1, READ_BYTES // batch_bytes),
                                   MAX_BATCHES_PER_READ) if fixed else 1)
  count = p.num_batches(position)
  full = _full_batches(p, position)
  groups = (np.iinfo(np.int64).max // group if full is None else full // group)

  @tf.autograph.experimental.do_not_convert
  def read_group(k: tf.Tensor) -> Dict[str, Any]:
    batches = k * group + tf.range(group, dtype=tf.int64)
    positions = tf.reshape(p.sampler.host_positions_tf(
        tf.constant(position, tf.int64), batches[:, tf.newaxis]), [-1])
    out = p.read_batch(positions)
    return tf.nest.map_structure(
        lambda x: tf.reshape(x, tf.concat([[group, size], tf.shape(x)[1:]],
                                          0)), out)

  @tf.autograph.experimental.do_not_convert
  def read_one(batch: tf.Tensor) -> Dict[str, Any]:
    return p.read_batch(p.batch_positions(position, batch))

  out = tf.data.Dataset.range(groups).map(
      read_group, num_parallel_calls=num_parallel_calls, deterministic=True)
  out = out.unbatch() if group > 1 else out.map(
      lambda x: tf.nest.map_structure(lambda v: v[0], x))
  if count is not None and count > groups * group:
    tail = tf.data.Dataset.range(groups * group, count).map(
        read_one, num_parallel_calls=num_parallel_calls, deterministic=True)
    out = out.concatenate(tail)
  if prefetch:
    out = out.prefetch(prefetch)
  return out


def sample_batches(sources: Sources, kind: samples_lib.SampleKind,
                   batch_size: int, *, seed: int = 0, position: int = 0,
                   weights: Any = None, split: str = 'train',
                   epochs: Optional[options_lib.Epochs] = None,
                   sharding: Optional[options_lib.Sharding] = None,
                   outputs: Optional[options_lib.Outputs] = None,
                   reading: Optional[options_lib.ReadOptions] = None,
                   **flat: Any) -> tf.data.Dataset:
  """Batches of samples drawn uniformly from whole datasets, by random access.

  Errors (a dataset not converted, damaged chunks, bad arguments) are listed
  in docs/random_access.md, "Errors".

  Args:
    sources: a chunk dataset (path or `ChunkStorage`), or a list or dict of
      them to mix (same features).
    kind: `Windows(...)`, `Transitions(...)` or `RobotSamples(...)`.
    batch_size: samples per batch on this host.
    seed: the seed of the permutations (an int).
    position: the global position to start at (a saved state's).
    weights: with several sources, their weights (a list, or a dict keyed
      like ``sources``): each global batch holds exactly
      ``pipeline.exact_counts(weights, global batch)`` samples of each.
    split: the split of the chunk datasets.
    epochs: `Epochs(num_epochs, drop_remainder, order)` (default: forever,
      ``'spread'``).
    sharding: `Sharding(num_hosts, host)` (default: one host).
    outputs: `Outputs(decode_images, image_size, sample_info)`.
    reading: `ReadOptions(mapped_budget, num_parallel_calls, prefetch)`.

  Returns:
    A ``tf.data.Dataset`` of nested dicts with leaves ``[B, ...]``.

  Example:
    >>> from rlds_lite import synthetic
    >>> from rlds_lite import random_access as ra
    >>> chunks = ra.convert(synthetic.dataset(3, 4, 6, seed=0), progress=False)
    >>> ds = ra.sample_batches(chunks, ra.Windows(size=2), 4, seed=0,
    ...                        epochs=ra.Epochs(num_epochs=1))
    >>> next(iter(ds))['observation'].shape.as_list()
    [4, 2, 4]
  """
  options = options_lib.sort_options(
      'sample_batches', dict(epochs=epochs, sharding=sharding,
                             outputs=outputs, reading=reading), flat)
  p = plan_of(sources, kind, batch_size, weights, seed, split, options)
  return dataset_of_plan(p, position,
                         num_parallel_calls=options.reading.num_parallel_calls,
                         prefetch=options.reading.prefetch)
