"""Uniformly shuffled batches by random access, as a ``tf.data.Dataset``.

``sample_batches(sources, kind, batch_size, seed=...)`` is the pipeline:
``Dataset.range`` of batch numbers -> this host's positions -> sample ids
(`Sampler`: a stateless permutation per epoch, spread over the dataset by
default, weighted mixing, hosts) ->
one batched read of the chunk records per source and batch, in a parallel
``map`` (`SampleReader`) -> prefetch. Memory holds the index (a few bytes per
sample) and the batches in flight, whatever the dataset's size; a batch is a
uniform draw over the whole dataset; the pipeline's state is ``(seed,
position)``: `SampleIterator` saves and restores it exactly.

Example:
  >>> from rlds_lite import synthetic
  >>> from rlds_lite.random_access import convert, Windows
  >>> source = synthetic.dataset(num_episodes=4, seed=0)
  >>> chunks = convert(source, progress=False)
  >>> ds = sample_batches(chunks, Windows(size=4), batch_size=32, seed=0)
  >>> batch = next(iter(ds))
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

from rlds_lite.images import decode as decode_lib
from rlds_lite.random_access import index as index_lib
from rlds_lite.random_access import layout as layout_lib
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
    >>> from rlds_lite.random_access import convert, Windows
    >>> chunks = convert(synthetic.dataset(3, 4, 6, seed=0), progress=False)
    >>> p = plan(chunks, Windows(size=2), 4, num_epochs=1)
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


def plan(sources: Sources,
         kind: samples_lib.SampleKind,
         batch_size: int,
         *,
         weights: Any = None,
         seed: int = 0,
         split: str = 'train',
         num_hosts: int = 1,
         host: int = 0,
         num_epochs: Optional[int] = None,
         drop_remainder: bool = False,
         order: str = 'spread',
         decode_images: bool = True,
         image_size: Optional[Tuple[int, int]] = None,
         sample_info: bool = False,
         mapped_budget: Optional[int] = None) -> Plan:
  """The `Plan` of `sample_batches` (same arguments).

  Example:
    >>> from rlds_lite import synthetic
    >>> from rlds_lite.random_access import convert, Windows
    >>> chunks = convert(synthetic.dataset(3, 4, 6, seed=0), progress=False)
    >>> mixed = plan({'a': chunks, 'b': chunks}, Windows(size=2), 4,
    ...              weights={'a': 0.75, 'b': 0.25})
    >>> mixed.names, mixed.sampler.weights
    (['a', 'b'], (0.75, 0.25))
    >>> plan(chunks, Windows(size=7), 4)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: random access: source '0' (...) has no Windows(size=7, shift=1, stride=1, drop_remainder=True) sample: its 3 episodes are all shorter than a sample (longest: 6 steps).
  """
  kind = samples_lib.check_kind(kind)
  image_size = decode_lib.check_size(image_size, 'random access',
                                    'image_size')
  names, values = _named(sources)
  if not values:
    raise ValueError('random access: no source.')
  storages = [storage_lib.open_storage(v, split, mapped_budget)
              for v in values]
  _check_same_features(names, storages, decode_images, image_size)
  readers = []
  for name, storage in zip(names, storages):
    index = index_lib.SampleIndex.build(kind, storage)
    if not len(index):
      raise ValueError(
          f'random access: source {name!r} ({storage.path!r}) has no '
          f'{kind!r} sample: its {storage.num_episodes} episodes are all '
          f'shorter than a sample (longest: '
          f'{int(storage.lengths.max()) if storage.num_episodes else 0} '
          'steps).')
    readers.append(reading.SampleReader(storage, index,
                                        decode_images=decode_images,
                                        image_size=image_size,
                                        sample_info=sample_info))
  if len(readers) > 1 and num_epochs is not None:
    raise ValueError('random access: num_epochs needs one source; with '
                     'several, each source has its own epochs (read a '
                     'number of batches with .take(n)).')
  if num_epochs is not None and (isinstance(num_epochs, bool) or
                                 int(num_epochs) < 1):
    raise ValueError(f'random access: num_epochs must be a positive int or '
                     f'None, got {num_epochs!r}.')
  sampler = sampler_lib.Sampler(
      [len(r.index) for r in readers], _weights(names, weights), seed=seed,
      batch_size=batch_size, num_hosts=num_hosts, host=host, order=order,
      episode_counts=[r.index.counts for r in readers])
  if drop_remainder and num_epochs is not None:
    total = int(num_epochs) * len(readers[0].index)
    if total < sampler.global_batch_size:
      raise ValueError(
          f'random access: drop_remainder=True gives no batch: {num_epochs} '
          f'epoch(s) hold {total} samples, fewer than the global batch of '
          f'{sampler.global_batch_size}. Use a smaller batch, more epochs or '
          'drop_remainder=False.')
  return Plan(names, readers, sampler,
              None if num_epochs is None else int(num_epochs),
              bool(drop_remainder), sample_info)


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


def sample_batches(sources: Sources,
                   kind: samples_lib.SampleKind,
                   batch_size: int,
                   *,
                   weights: Any = None,
                   seed: int = 0,
                   position: int = 0,
                   split: str = 'train',
                   num_hosts: int = 1,
                   host: int = 0,
                   num_epochs: Optional[int] = None,
                   drop_remainder: bool = False,
                   order: str = 'spread',
                   decode_images: bool = True,
                   image_size: Optional[Tuple[int, int]] = None,
                   sample_info: bool = False,
                   mapped_budget: Optional[int] = None,
                   num_parallel_calls: Optional[int] = tf.data.AUTOTUNE,
                   prefetch: int = 2) -> tf.data.Dataset:
  """Batches of samples drawn uniformly from whole datasets, by random access.

  Args:
    sources: a chunk dataset (path or `ChunkStorage`), or a list or dict of
      them to mix (same features).
    kind: the samples: `Windows(...)`, `Transitions(...)` or
      `RobotSamples(...)`.
    batch_size: samples per batch on this host.
    weights: with several sources, their weights (a list, or a dict keyed
      like ``sources``; non-negative, summing to one): every global batch
      holds exactly ``pipeline.exact_counts(weights, batch_size *
      num_hosts)`` samples of each.
    seed: the seed of the permutations (an int).
    position: the global position to start at (a saved state's).
    split: the split of the chunk datasets.
    num_hosts: hosts sharing the global batch (``batch_size * num_hosts``).
    host: this host.
    num_epochs: read this many epochs and stop (one source); None: forever.
    drop_remainder: with ``num_epochs``, drop a last batch smaller than the
      global batch (so all hosts give the same number of batches).
    order: ``'spread'`` (every batch holds samples of as many episodes as
      it can) or ``'uniform'`` (a uniform permutation); both give every
      sample once per epoch (see `Sampler`).
    decode_images: decode image fields (else encoded strings).
    image_size: ``(height, width)`` to decode frames at (None: as stored);
      only the frames a sample holds are decoded.
    sample_info: add ``episode_index`` and ``sample_id`` (and, mixing,
      ``dataset_index``) ``[B]`` int64 to every batch.
    mapped_budget: a split whose shards hold at most this many bytes is
      memory-mapped (fastest; the pages read stay in RSS as page cache), a
      larger one read record by record with ``pread`` (None:
      `storage.DEFAULT_MAPPED_BUDGET`, 64 MiB; for sources given as paths).
    num_parallel_calls: batches read in parallel.
    prefetch: batches to prefetch (0: none).

  Returns:
    A ``tf.data.Dataset`` of nested dicts with leaves ``[B, ...]``: windows
    ``[B, size, ...]`` (+ ``mask``), transitions (+ ``next_observation``),
    or robot samples (+ pad masks).

  Raises:
    FileNotFoundError: for a missing dataset.
    NotChunkedError: for an RLDS dataset that was not converted (the
      message says how).
    DamagedChunksError: for a missing or damaged file of a chunk dataset
      (the message names it and says to convert again).
    ValueError, TypeError: for bad arguments (a kind that is not a sample
      kind, an ``image_size`` that is not ``(height, width)``, a sliced
      split, mixed sources with other step features), or a source without
      samples.
    tf.errors.InvalidArgumentError: while iterating, for a record found
      damaged when first read (checksum, framing, episode or offset) or a
      shard that ends early: ``assertion failed: [random access: <file>:
      record ...; the chunk dataset is damaged: convert the source again
      (...)]``, one line of the storage's, no Python traceback.
    tf.errors.InvalidArgumentError: while iterating, from TF's decoder, if
      a sampled camera frame does not decode (``convert`` copies frames
      encoded). It names the field through its decode op
      (``{{node observation/image/map/while/DecodeJpeg}}``), not the
      episode: ``rlds_lite.validate`` of the source dataset names its
      file, episode, step and field.

  Example:
    >>> from rlds_lite import synthetic
    >>> from rlds_lite import random_access as ra
    >>> path = synthetic.dataset(3, 4, 6, seed=0)
    >>> chunks = ra.convert(path, progress=False)
    >>> ds = ra.sample_batches(chunks, ra.Windows(size=2), 4, seed=0)
    >>> next(iter(ds))['observation'].shape.as_list()
    [4, 2, 4]
  """
  p = plan(sources, kind, batch_size, weights=weights, seed=seed, split=split,
           num_hosts=num_hosts, host=host, num_epochs=num_epochs,
           drop_remainder=drop_remainder, order=order,
           decode_images=decode_images, image_size=image_size,
           sample_info=sample_info, mapped_budget=mapped_budget)
  return dataset_of_plan(p, position, num_parallel_calls=num_parallel_calls,
                         prefetch=prefetch)
