"""Episodes, NumPy references and sample bookkeeping for the pipeline tests."""

import collections
import dataclasses
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

import rlds_testing
from rlds_lite.pipeline import pools

Steps = Dict[str, Any]


def renames(caught: Sequence[Any]) -> List[str]:
  """The messages of the rename warnings among ``caught`` (TF warns too)."""
  return [str(w.message) for w in caught if ' are now ' in str(w.message)]


def objects(kind_class: Any, kind: Any, kwargs: Dict[str, Any]
            ) -> Tuple[Any, Dict[str, Any]]:
  """``(kind, kwargs)`` of flat keywords, in their objects (the new spelling).

  The kind's fields go into ``kind_class(...)`` (``kind``, if not already
  one, is its first field), `Pooling`'s into ``pooling=``.
  """
  kwargs = dict(kwargs)
  fields = [f.name for f in dataclasses.fields(kind_class)]
  kind_args = {k: kwargs.pop(k) for k in fields if k in kwargs}
  if not isinstance(kind, kind_class):
    if kind is not None:
      kind_args[fields[0]] = kind
    kind = kind_class(**kind_args)
  pool_args = {k: kwargs.pop(k) for k in pools.POOLING_FIELDS if k in kwargs}
  if pool_args:
    kwargs['pooling'] = pools.Pooling(**pool_args)
  return kind, kwargs


def make_episodes(lengths: Sequence[int], terminal: Optional[Sequence[bool]] = None,
                  nested: bool = False, half_discounts: bool = True) -> List[Steps]:
  """Columnar steps of several episodes with values unique across episodes.

  Episode i starts its values at 100 * i; with ``half_discounts`` every third
  step has discount 0.5 (exact in float32, so returns compare exactly).
  """
  episodes = []
  for i, length in enumerate(lengths):
    term = True if terminal is None else terminal[i]
    steps = rlds_testing.make_steps(length, terminal=term, nested=nested,
                                    start=100 * i)
    if half_discounts:
      steps['discount'] = np.where(np.arange(length) % 3 == 1, 0.5,
                                   1.0).astype(np.float32)
    episodes.append(steps)
  return episodes


def nested_dataset(episodes: Sequence[Steps]) -> tf.data.Dataset:
  """RLDS episodes with nested steps datasets and an ``episode_id``."""
  return tf.data.Dataset.from_tensor_slices({
      'steps': [rlds_testing.steps_dataset(s) for s in episodes],
      'episode_id': np.arange(len(episodes), dtype=np.int64),
  })


def dense_dataset(episodes: Sequence[Steps]) -> tf.data.Dataset:
  """Dense RLDS episodes (``steps`` as ``[T, ...]`` tensors) with ``episode_id``."""
  first = episodes[0]
  steps_spec = tf.nest.map_structure(
      lambda x: tf.TensorSpec([None] + list(np.shape(x)[1:]),
                              tf.as_dtype(np.asarray(x).dtype)), first)
  spec = {'steps': steps_spec, 'episode_id': tf.TensorSpec([], tf.int64)}

  def generate():
    for i, steps in enumerate(episodes):
      yield {'steps': steps, 'episode_id': np.int64(i)}

  return tf.data.Dataset.from_generator(generate, output_signature=spec)


def _take(steps: Steps, index: Any) -> Any:
  return tf.nest.map_structure(lambda x: np.asarray(x)[index], steps)


def np_windows(episodes: Sequence[Steps], size: int, shift: int = 1,
               stride: int = 1, drop_remainder: bool = True) -> List[Any]:
  """Reference windows (with ``episode_id``, and ``mask`` if padded), in order."""
  samples = []
  for episode_id, steps in enumerate(episodes):
    length = len(steps['is_last'])
    start = 0
    while start < length:
      index = start + stride * np.arange(size)
      valid = index < length
      if drop_remainder and not valid.all():
        break
      window = _take(steps, np.minimum(index, length - 1))
      if not drop_remainder:
        window = tf.nest.map_structure(
            lambda x: np.where(valid.reshape((-1,) + (1,) * (x.ndim - 1)), x,
                               np.zeros_like(x)), window)
        window['mask'] = valid
      window['episode_id'] = np.int64(episode_id)
      samples.append(window)
      start += shift
  return samples


def np_transitions(episodes: Sequence[Steps], n: int = 1,
                   gamma: float = 1.0) -> List[Any]:
  """Reference n-step transitions (the formulas of issue 3), in order."""
  samples = []
  for episode_id, steps in enumerate(episodes):
    length = len(steps['is_last'])
    reward = np.asarray(steps['reward'], np.float64)
    discount = np.asarray(steps.get('discount', np.ones(length)), np.float64)
    terminal_end = bool(length) and bool(np.asarray(steps['is_terminal'])[-1])
    for t in range(length - 1):
      m = min(n, length - 1 - t)
      ret, weight = 0.0, 1.0
      for k in range(m):
        ret += weight * reward[t + k]
        weight *= gamma * discount[t + k]
      if t + m == length - 1 and terminal_end:
        weight = 0.0
      sample = {k: v for k, v in _take(steps, t).items()}
      sample['reward'] = np.float32(ret)
      sample['discount'] = np.float32(weight)
      sample['next_observation'] = _take(steps['observation'], t + m)
      sample['episode_id'] = np.int64(episode_id)
      samples.append(sample)
  return samples


def unbatch(batches: Sequence[Any]) -> List[Any]:
  """The samples of NumPy batches, in order."""
  samples = []
  for batch in batches:
    size = len(tf.nest.flatten(batch)[0])
    samples.extend(tf.nest.map_structure(lambda x, i=i: x[i], batch)
                   for i in range(size))
  return samples


def key(sample: Any) -> tuple:
  """A hashable, exact fingerprint of a sample (values, dtypes, shapes)."""
  parts = []
  for x in tf.nest.flatten(sample):
    x = np.asarray(x)
    if x.dtype.kind in 'OSU':   # strings: compare the bytes, not pointers
      parts.append(('bytes', x.shape, tuple(bytes(v) for v in x.ravel())))
    else:
      parts.append((x.dtype.str, x.shape, x.tobytes()))
  return tuple(parts)


def assert_same_samples(actual: Sequence[Any], expected: Sequence[Any]) -> None:
  """Equal as multisets: every expected sample exactly once, nothing else."""
  assert len(actual) == len(expected), f'{len(actual)} != {len(expected)} samples'
  for a in actual[:1]:
    assert sorted(a) == sorted(expected[0]), f'{sorted(a)} != {sorted(expected[0])}'
  missing = collections.Counter(map(key, expected))
  missing.subtract(collections.Counter(map(key, actual)))
  assert not +missing and not -missing, 'samples differ from the reference'


def batch_sizes(batches: Sequence[Any]) -> List[int]:
  return [len(tf.nest.flatten(b)[0]) for b in batches]
