"""Read a batch of samples by sample id: one batched read, then TF ops.

Example:
  >>> from rlds_lite import synthetic
  >>> from rlds_lite.random_access import convert, ChunkStorage, SampleIndex, Windows
  >>> source = synthetic.dataset(num_episodes=3, seed=0)
  >>> storage = ChunkStorage(convert(source, chunk_steps=8, progress=False))
  >>> reader = SampleReader(storage, SampleIndex.build(Windows(size=3), storage))
  >>> batch = reader.read(tf.constant([0, 50]))
  >>> batch['observation'].shape, batch['reward'].shape
  (TensorShape([2, 3, 4]), TensorShape([2, 3]))
"""

from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from rlds_lite import images
from rlds_lite import op_context
from rlds_lite import rlds_types
from rlds_lite.dense.transitions import NEXT_OBSERVATION
from rlds_lite.images import decode as decode_lib
from rlds_lite import exit_guard
from rlds_lite.random_access import index as index_lib
from rlds_lite.random_access import layout as layout_lib
from rlds_lite import sample_kinds as samples_lib
from rlds_lite.random_access import storage as storage_lib

__all__ = ['SampleReader', 'EPISODE_INDEX', 'nest', 'damage_of']

EPISODE_INDEX = 'episode_index'
"""Key of each sample's episode (split index), with ``sample_info=True``."""
SAMPLE_ID = 'sample_id'
"""Key of each sample's id in the index, with ``sample_info=True``."""

Flat = Dict[str, tf.Tensor]
ToIds = Callable[[np.ndarray], np.ndarray]


def _same(values: np.ndarray) -> np.ndarray:
  return values


def nest(flat: Dict[str, Any]) -> Dict[str, Any]:
  """``{'a/b': x}`` -> ``{'a': {'b': x}}``.

  Example:
    >>> nest({'observation/image': 1, 'reward': 2})
    {'observation': {'image': 1}, 'reward': 2}
  """
  out: Dict[str, Any] = {}
  for path, value in flat.items():
    node = out
    parts = path.split('/')
    for part in parts[:-1]:
      node = node.setdefault(part, {})
    node[parts[-1]] = value
  return out


def chunks_per_sample(offsets: np.ndarray, chunk_steps: int) -> int:
  """Records a sample reading steps ``start + offsets`` needs at most.

  Example:
    >>> [chunks_per_sample(np.arange(s), 16) for s in (1, 16, 17, 33)]
    [1, 2, 2, 3]
  """
  span = int(np.max(offsets) - np.min(offsets)) + 1
  return (span - 1 + chunk_steps - 1) // chunk_steps + 1


def _bitcast(raw: tf.Tensor, leaf: layout_lib.Leaf, lead: tf.Tensor
             ) -> tf.Tensor:
  """Raw bytes ``[..., nbytes]`` -> values ``[*lead, m * C, ...]``."""
  dtype = tf.as_dtype(np.dtype(leaf.dtype))
  step_shape = list(leaf.shape[1:])
  itemsize = np.dtype(leaf.dtype).itemsize
  if dtype == tf.bool:
    values = tf.reshape(raw, tf.concat([lead, [-1] + step_shape], 0))
    return tf.cast(values, tf.bool)
  if itemsize == 1:
    values = tf.reshape(raw, tf.concat([lead, [-1] + step_shape], 0))
    return tf.bitcast(values, dtype) if dtype != tf.uint8 else values
  values = tf.reshape(raw, tf.concat([lead, [-1] + step_shape + [itemsize]],
                                     0))
  return tf.bitcast(values, dtype)


def _outputs_or_problem(read: Callable[[np.ndarray], List[np.ndarray]],
                        empty: List[np.ndarray],
                        problems: Dict[str, Exception]
                        ) -> Callable[[np.ndarray], List[np.ndarray]]:
  """``read`` whose outputs end with a problem: ``b''`` or a `DamagedChunksError`'s message.

  (An exception inside ``tf.data`` would reach the user with a Python traceback pasted in.)
  """

  def call(values: np.ndarray) -> List[np.ndarray]:
    try:
      return list(read(values)) + [np.array(b'', object)]
    except storage_lib.DamagedChunksError as error:
      if len(problems) >= 16:   # Keep the latest few.
        problems.pop(next(iter(problems)))
      problems[str(error)] = error
      return list(empty) + [np.array(str(error).encode(), object)]

  return call


def _raise_problem(outputs: List[tf.Tensor]) -> List[tf.Tensor]:
  """``outputs[:-1]``, once their problem ``outputs[-1]`` is checked empty."""
  problem = outputs[-1]
  check = tf.debugging.Assert(tf.equal(problem, b''), [problem],
                              name='random_access_read')
  with tf.control_dependencies([check]):
    return [tf.identity(value) for value in outputs[:-1]]


def damage_of(error: tf.errors.OpError,
              readers: List['SampleReader']) -> Optional[Exception]:
  """The `DamagedChunksError` a failed read of ``readers`` carried, or None.

  Example:
    >>> damage_of(tf.errors.InvalidArgumentError(None, None, 'x'), []) is None
    True
  """
  for reader in readers:
    for message, problem in list(reader.problems.items()):
      if message in error.message:
        return problem
  return None


def _decode_image(leaf: layout_lib.Leaf, size: Optional[Tuple[int, int]]
                  ) -> Callable[[tf.Tensor], tf.Tensor]:
  spec = images.ImageSpec(tuple(leaf.shape[1:]), leaf.encoding,
                          tf.as_dtype(np.dtype(leaf.dtype)))
  out = list(images.output_shape(spec, size))

  def decode(encoded: tf.Tensor) -> tf.Tensor:
    frames = images.decode_frames(tf.reshape(encoded, [-1]), spec, size,
                                  field=leaf.path)
    return tf.reshape(frames, tf.concat([tf.shape(encoded), out], 0))

  return decode


class SampleReader:
  """Reads batches of samples of a `SampleIndex` from a `ChunkStorage` by sample id.

  Args:
    decode_images: decode image fields (else they stay encoded strings).
    image_size: ``(height, width)`` to decode frames at (`rlds_lite.images.decode_frames`);
      None: their stored size.
    sample_info: add ``'episode_index'`` and ``'sample_id'`` ``[B]`` int64.

  Example:
    >>> from rlds_lite import synthetic
    >>> from rlds_lite import random_access as ra
    >>> path = synthetic.dataset(3, 4, 6, seed=0)
    >>> chunks = ra.convert(path, progress=False)
    >>> storage = ra.ChunkStorage(chunks)
    >>> reader = ra.SampleReader(
    ...     storage, ra.SampleIndex.build(ra.Windows(size=2), storage))
    >>> reader.read(tf.constant([0, 5]))['observation'].shape.as_list()
    [2, 2, 4]
  """

  def __init__(self, storage: storage_lib.ChunkStorage,
               index: index_lib.SampleIndex, *, decode_images: bool = True,
               image_size: Optional[Tuple[int, int]] = None,
               sample_info: bool = False):
    if index.data_fingerprint != storage.fingerprint or (
        len(index.lengths) != storage.num_episodes or
        not np.array_equal(index.lengths, storage.lengths)):
      raise ValueError(
          f'random access: the sample index ({index!r}) does not match the '
          f'data of {storage.path!r} split {storage.split!r} (built for '
          f'another dataset or split); build it with '
          'SampleIndex.build(kind, storage).')
    self.storage = storage
    self.index = index
    self.kind = index.kind
    self.decode_images = decode_images
    with op_context.named('random access'):
      self.image_size = decode_lib.check_size(image_size, 'image_size')
    self.sample_info = sample_info
    self._offsets = np.asarray(self.kind.offsets, np.int64)
    self.chunks_per_sample = chunks_per_sample(self._offsets,
                                               storage.chunk_steps)
    self._fixed = storage.layout.fixed
    self._slices = storage.payload_slices() if self._fixed else []
    self.problems: Dict[str, Exception] = {}

  @property
  def sample_bytes(self) -> int:
    """Bytes of one sample's steps as read (fixed layouts; 0 otherwise)."""
    chunk_steps = self.storage.chunk_steps
    return len(self._offsets) * sum(size // chunk_steps
                                    for _, _, size in self._slices)

  @property
  def read_bytes(self) -> int:
    """Bytes a read holds per sample at most: its steps, and records read unmapped."""
    held = 0 if self.storage.mapped else (self.chunks_per_sample *
                                          self.storage.record_bytes)
    return self.sample_bytes + held

  @property
  def num_samples(self) -> int:
    return len(self.index)

  def plan(self, sample_ids: np.ndarray) -> Dict[str, np.ndarray]:
    """Where the samples' steps are (NumPy): episode, start, length, ``rows`` to read, ``local``."""
    ids = np.asarray(sample_ids, np.int64)
    episode, start = self.index.locate(ids)
    length = self.storage.lengths[episode]
    steps = samples_lib.step_indices(self._offsets, start, length)
    chunk_steps = self.storage.chunk_steps
    first = steps.min(axis=1) // chunk_steps
    last = steps.max(axis=1) // chunk_steps
    rows = np.minimum(first[:, None] + np.arange(self.chunks_per_sample),
                      last[:, None]) + self.storage.first_chunk[episode][:, None]
    return {'ids': ids, 'episode': episode, 'start': start, 'length': length,
            'terminated': self.storage.terminated[episode], 'rows': rows,
            'local': steps - (first * chunk_steps)[:, None]}

  def read_numpy(self, sample_ids: np.ndarray) -> List[np.ndarray]:
    """Fixed layouts: ``[ids, episode, start, length, terminated, *fields ([B, K, ...])]``."""
    plan = self.plan(sample_ids)
    local = plan['local']                                     # [B, K]
    chunk_steps = self.storage.chunk_steps
    chunks = np.take_along_axis(plan['rows'], local // chunk_steps, axis=1)
    values = self.storage.gather_steps(chunks, local % chunk_steps)
    return [plan['ids'], plan['episode'], plan['start'], plan['length'],
            plan['terminated']] + [values[leaf.path] for leaf, _, _ in
                                   self._slices]

  def _records_numpy(self, sample_ids: np.ndarray) -> List[np.ndarray]:
    plan = self.plan(sample_ids)
    records = np.array(self.storage.read_records(plan['rows']), dtype=object)
    return [plan['ids'], plan['episode'], plan['start'], plan['length'],
            plan['terminated'], records.reshape(-1), plan['local']]

  def _numpy_read(self, read: Callable[[np.ndarray], List[np.ndarray]],
                  values: tf.Tensor, dtypes: List[tf.DType],
                  empty: List[np.ndarray]) -> List[tf.Tensor]:
    """``read`` in a ``tf.numpy_function``; a storage error raised eagerly, else asserted."""
    if tf.executing_eagerly():
      return tf.numpy_function(exit_guard.tracked(read), [values], dtypes,
                               stateful=False)
    outputs = tf.numpy_function(
        exit_guard.tracked(_outputs_or_problem(read, empty, self.problems)),
        [values], dtypes + [tf.string], stateful=False)
    return _raise_problem(outputs)

  def _read_fixed(self, values: tf.Tensor, to_ids: ToIds
                  ) -> Tuple[Flat, List[tf.Tensor]]:
    leaves = [leaf for leaf, _, _ in self._slices]
    k = len(self._offsets)
    dtypes = ([tf.int64, tf.int64, tf.int64, tf.int64, tf.bool] +
              [tf.as_dtype(np.dtype(leaf.dtype)) for leaf in leaves])
    empty = ([np.zeros([0], np.int64)] * 4 + [np.zeros([0], bool)] +
             [np.zeros((0, k) + leaf.shape[1:], leaf.dtype)
              for leaf in leaves])
    outputs = self._numpy_read(lambda v: self.read_numpy(to_ids(v)), values,
                               dtypes, empty)
    steps = {}
    for leaf, value in zip(leaves, outputs[5:]):
      steps[leaf.path] = tf.ensure_shape(value, [None, k] + list(leaf.shape[1:]))
    return steps, [tf.ensure_shape(v, [None]) for v in outputs[:5]]

  def _read_parsed(self, values: tf.Tensor, to_ids: ToIds
                   ) -> Tuple[Flat, List[tf.Tensor]]:
    k = len(self._offsets)
    empty = ([np.zeros([0], np.int64)] * 4 + [np.zeros([0], bool),
                                              np.zeros([0], object),
                                              np.zeros([0, k], np.int64)])
    outputs = self._numpy_read(
        lambda v: self._records_numpy(to_ids(v)), values,
        [tf.int64, tf.int64, tf.int64, tf.int64, tf.bool, tf.string,
         tf.int64], empty)
    records = tf.ensure_shape(outputs[5], [None])
    local = tf.ensure_shape(outputs[6], [None, k])
    parsed = tf.io.parse_example(records, self.storage.layout.parse_spec())
    lead = tf.shape(local)[:1]
    steps = {}
    for leaf in self.storage.layout.leaves:
      value = parsed[leaf.key]
      if leaf.kind == 'fixed':
        value = _bitcast(tf.io.decode_raw(value, tf.uint8), leaf, lead)
      else:
        value = tf.reshape(value, tf.concat([lead, [-1]], 0))
      steps[leaf.path] = tf.gather(value, local, axis=1, batch_dims=1)
    return steps, [tf.ensure_shape(v, [None]) for v in outputs[:5]]

  def _decoder(self) -> Callable[[Flat], Flat]:
    decoders = {leaf.path: _decode_image(leaf, self.image_size)
                for leaf in self.storage.layout.leaves if leaf.kind == 'image'}

    def source(path: str) -> str:
      if path.startswith(NEXT_OBSERVATION):
        return rlds_types.OBSERVATION + path[len(NEXT_OBSERVATION):]
      return path

    def decode(values: Flat) -> Flat:
      if not self.decode_images:
        return values
      return {path: (decoders[source(path)](value) if source(path) in decoders
                     else value) for path, value in values.items()}

    return decode

  def read(self, sample_ids: tf.Tensor,
           to_ids: Optional[ToIds] = None) -> Dict[str, Any]:
    """The batch of samples ``sample_ids`` ``[B]`` (first mapped by ``to_ids`` if given), nested."""
    values = tf.cast(sample_ids, tf.int64)
    to_ids = to_ids or _same
    read = self._read_fixed if self._fixed else self._read_parsed
    steps, (ids, episode, start, length, terminated) = read(values, to_ids)
    out = self.kind.assemble(steps, start, length, terminated,
                             decode=self._decoder())
    if self.sample_info:
      out[EPISODE_INDEX] = episode
      out[SAMPLE_ID] = ids
    return nest(out)
