"""Read one episode of a TFDS RLDS dataset on demand, as NumPy arrays (only its shard opened).

Example:
  >>> import rlds_lite
  >>> from rlds_lite import synthetic
  >>> path = synthetic.dataset(3, seed=0)
  >>> reader = EpisodeReader(rlds_lite.open(path).builder)
  >>> episode = reader.read('train', 2)
  >>> int(episode['episode_id']), episode['steps']['reward'].dtype
  (2, dtype('float32'))
"""

import threading
from typing import Any, Callable, Dict, Optional

import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import decoding
from rlds_lite import diagnosis
from rlds_lite import rlds_types


def read_order() -> tfds.ReadConfig:
  """A ``ReadConfig`` reading a split's files in order (episode ``i``: ``split[i:i+1]``)."""
  return tfds.ReadConfig(interleave_cycle_length=1, try_autocache=False)


class EpisodeReader:
  """Reads single episodes (dense NumPy steps) of a dataset's TFDS ``builder``."""

  def __init__(self, builder: tfds.core.DatasetBuilder):
    self._builder = builder
    self._step_feature = builder.info.features[rlds_types.STEPS].feature
    self._decode: Optional[Callable[[Any], Any]] = None
    self._lock = threading.Lock()

  def num_episodes(self, split: str) -> int:
    """The number of episodes of ``split`` (KeyError if unknown)."""
    return int(self._builder.info.splits[split].num_examples)

  def _decoder(self, encoded_spec: Any) -> Callable[[Any], Any]:
    with self._lock:
      if self._decode is None:
        feature = self._step_feature
        self._decode = tf.function(
            lambda steps: decoding.decode_batch_example(feature, steps),
            input_signature=[encoded_spec])
      return self._decode

  def read(self, split: str, index: int) -> Dict[str, Any]:
    """Episode ``index`` of ``split``: ``{'steps': {...}, **metadata}`` of NumPy values.

    Damage is a ``CorruptDatasetError`` naming file, episode, field and step.
    """
    if split not in self._builder.info.splits:
      raise KeyError(f'no split {split!r} (splits: '
                     f'{sorted(self._builder.info.splits.keys())}).')
    total = self.num_episodes(split)
    if not 0 <= index < total:
      raise IndexError(f'episode {index} is out of range: split {split!r} has '
                       f'{total} episodes.')
    episodes = self._builder.as_dataset(
        split=f'{split}[{index}:{index + 1}]',
        decoders={rlds_types.STEPS: tfds.decode.SkipDecoding()},
        read_config=read_order())
    encoded_spec = episodes.element_spec[rlds_types.STEPS]
    with diagnosis.named_read_errors(self._builder, split):
      episode = next(iter(episodes))
      steps = self._decoder(encoded_spec)(episode[rlds_types.STEPS])
    episode = {**episode, rlds_types.STEPS: steps}
    return tf.nest.map_structure(lambda t: t.numpy(), episode)
