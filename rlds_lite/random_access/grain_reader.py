"""The same samples for JAX users: a Grain data source and ``MapDataset`` (optional extra).

Example:
  >>> from rlds_lite import synthetic
  >>> from rlds_lite.random_access import convert, Epochs, Windows
  >>> chunks = convert(synthetic.dataset(num_episodes=4, seed=0), progress=False)
  >>> batches = grain_batches(chunks, Windows(size=2), batch_size=8, seed=0,
  ...                         epochs=Epochs(num_epochs=1))
  >>> len(batches), batches[0]['observation'].shape
  (18, (8, 2, 4))
"""

import sys
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from rlds_lite.random_access import index as index_lib
from rlds_lite.random_access import reading
from rlds_lite import sample_kinds as samples_lib
from rlds_lite.random_access import storage as storage_lib
from rlds_lite.random_access import tf_data

__all__ = ['GrainSamples', 'grain_batches']


def _grain():
  try:
    import grain  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ImportError('rlds_lite.random_access: the Grain readers need grain '
                      '0.2.x: pip install rlds_lite[grain]') from None
  return grain


def _numpy(batch: Any) -> Any:
  return tf.nest.map_structure(lambda x: x.numpy(), batch)


def _read(read: Any, positions: np.ndarray,
          readers: List[reading.SampleReader]) -> Any:
  """``read(positions)`` as NumPy, raising a damaged chunk dataset's `DamagedChunksError` itself."""
  try:
    return _numpy(read(tf.constant(positions, tf.int64)))
  except tf.errors.InvalidArgumentError as error:
    damage = reading.damage_of(error, readers)
    if damage is None:
      raise
  raise damage


def _unbatch(batch: Any, size: int) -> List[Any]:
  return [tf.nest.map_structure(lambda x, i=i: x[i], batch)
          for i in range(size)]


class GrainSamples:
  """Samples of one chunk dataset (path or `ChunkStorage`) by sample id: a Grain data source.

  ``kind`` is `Windows` or `Transitions`; the other arguments are `SampleReader`'s.

  Example:
    >>> import tempfile, grain
    >>> from rlds_lite import synthetic
    >>> from rlds_lite.random_access import convert, Windows
    >>> path = synthetic.dataset(3, 4, 6, seed=0)
    >>> samples = GrainSamples(convert(path, progress=False), Windows(size=2),
    ...                        sample_info=True)
    >>> samples
    GrainSamples(SampleIndex(Windows(size=2, shift=1, stride=1, drop_remainder=True): 14 samples of 3 episodes))
    >>> int(samples[-1]['sample_id']), int(samples[-1]['episode_index'])
    (13, 2)
    >>> grain.MapDataset.source(samples).batch(4)[0]['observation'].shape
    (4, 2, 4)
  """

  def __init__(self, source: Any, kind: samples_lib.SampleKind, *,
               split: str = 'train', decode_images: bool = True,
               image_size: Optional[Sequence[int]] = None,
               sample_info: bool = False):
    kind = samples_lib.check_kind(kind)
    storage = storage_lib.open_storage(source, split)
    self._args = (storage, kind, decode_images, image_size, sample_info)
    self._reader = reading.SampleReader(
        storage, index_lib.SampleIndex.build(kind, storage),
        decode_images=decode_images, image_size=image_size,
        sample_info=sample_info)
    self._read = None

  def _reader_fn(self):
    if self._read is None:
      self._read = tf.function(
          self._reader.read,
          input_signature=[tf.TensorSpec([None], tf.int64)])
    return self._read

  def __len__(self) -> int:
    return self._reader.num_samples

  def __getitems__(self, sample_ids: Sequence[int]) -> List[Dict[str, Any]]:
    ids = np.asarray(sample_ids, np.int64).reshape(-1)
    batch = _read(self._reader_fn(), ids, [self._reader])
    return _unbatch(batch, len(ids))

  def __getitem__(self, sample_id: int) -> Dict[str, Any]:
    if not -len(self) <= int(sample_id) < len(self):
      raise IndexError(f'GrainSamples: sample {sample_id} is out of range '
                       f'({len(self)} samples).')
    return self.__getitems__([int(sample_id) % len(self)])[0]

  def __getstate__(self) -> Dict[str, Any]:
    return {'_args': self._args}

  def __setstate__(self, state: Dict[str, Any]) -> None:
    storage, kind, decode_images, image_size, sample_info = state['_args']
    self.__init__(storage, kind, decode_images=decode_images,
                  image_size=image_size, sample_info=sample_info)

  def __repr__(self) -> str:
    return f'GrainSamples({self._reader.index!r})'


class _BatchReader:
  """``k`` -> this host's ``k``-th batch of a plan (NumPy), picklable."""

  def __init__(self, plan: tf_data.Plan, position: int):
    self.plan = plan
    self.position = position
    self._read = None

  def __call__(self, batch: int) -> Dict[str, Any]:
    if self._read is None:
      self._read = tf.function(
          self.plan.read_batch,
          input_signature=[tf.TensorSpec([None], tf.int64)])
    positions = self.plan.sampler.host_positions(self.position, int(batch))
    end = self.plan.end
    if end is not None:
      positions = positions[positions < end]
    return _read(self._read, positions, self.plan.readers)

  def __getstate__(self) -> Dict[str, Any]:
    return {'plan': self.plan, 'position': self.position}

  def __setstate__(self, state: Dict[str, Any]) -> None:
    self.__init__(state['plan'], state['position'])


def grain_batches(sources: tf_data.Sources, kind: samples_lib.SampleKind,
                  batch_size: int, *, seed: int = 0, position: int = 0,
                  **options: Any):
  """This host's batches of `sample_batches` (same arguments) as a ``grain.MapDataset``.

  Without ``Epochs(num_epochs=...)`` it has ``sys.maxsize`` batches.

  Example:
    >>> from rlds_lite import synthetic
    >>> from rlds_lite import random_access as ra
    >>> path = synthetic.dataset(3, 4, 6, seed=0)
    >>> chunks = ra.convert(path, progress=False)
    >>> batches = ra.grain_batches(chunks, ra.Windows(size=2), 4, seed=0)
    >>> batches[0]['observation'].shape
    (4, 2, 4)
  """
  grain = _grain()
  p, _ = tf_data.plan_of_keywords('grain_batches', sources, kind,
                                  batch_size, seed, options)
  count = p.num_batches(int(position))
  return grain.MapDataset.range(sys.maxsize if count is None else count).map(
      _BatchReader(p, int(position)))
