"""`as_dataset`: a buffer's sampled batches as an endless ``tf.data.Dataset`` for Keras, JAX or a Python loop."""

from typing import Any, Dict, List, Tuple

import numpy as np
import tensorflow as tf

from rlds_lite import nest_paths
from rlds_lite import exit_guard
from rlds_lite.replay import rate_limit
from rlds_lite.replay import storage as storage_lib

__all__ = ['as_dataset', 'INFO_FIELDS']

INFO_FIELDS = ('indices', 'episode_ids', 'step_ids', 'weights')
"""The keys of each element's sample-info dict (`SampleInfo`'s fields)."""

_STOPS = (rate_limit.RateLimitTimeout, ValueError, TypeError)
"""What ends the dataset with one clear error instead of a traceback."""


def _check_int(value: Any, name: str, least: int) -> int:
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
    raise ValueError(f'as_dataset: {name} must be an int >= {least}, got {value!r}.')
  return int(value)


def _tensor_spec(shape, dtype) -> tf.TensorSpec:
  dtype = tf.string if np.dtype(dtype).kind in 'OSU' else tf.as_dtype(dtype)
  return tf.TensorSpec([None] + list(shape), dtype)


def _inputs(buffer) -> Dict[str, tf.TensorSpec]:
  """Flat name -> spec of what the Python call returns per sample (nothing is sampled)."""
  spec = buffer.storage.spec
  if not spec:
    raise ValueError('as_dataset: the buffer holds no steps and its storage no spec yet; '
                     'add steps first, or give the storage a spec.')
  if buffer.kind is None:
    return {p: _tensor_spec(f.shape, f.dtype) for p, f in spec.items()}
  width = len(buffer.kind.offsets)
  out = {f'steps/{p}': _tensor_spec((width,) + f.shape, f.dtype) for p, f in spec.items()}
  out.update(start=_tensor_spec((), 'int64'), length=_tensor_spec((), 'int64'),
             terminated=_tensor_spec((), 'bool'))
  return out


def _draw(buffer, batch_size: int, chunk: int) -> Tuple[Dict[str, Any], List[np.ndarray]]:
  """Up to ``chunk`` batches, drawn as ``chunk`` calls of `ReplayBuffer.sample` would draw them.

  Waits (outside the lock) for the first batch only; stops early where the
  rate limiter would make the next one wait. One gather serves all batches;
  a kind's samples are left to assemble (in the dataset's graph).
  """
  limiter = buffer.rate_limiter
  if limiter is not None:
    buffer._wait(lambda: limiter.can_sample(*buffer._counts(), batch_size),
                 lambda: buffer._starved(batch_size))
  storage, sampler = buffer.storage, buffer.sampler
  slots, weights = [], []
  with storage.lock():
    buffer._sync()
    while len(slots) < chunk and (not slots or limiter is None or
                                  limiter.can_sample(*buffer._counts(), batch_size)):
      if not sampler.count:
        raise ValueError(buffer._nothing_to_sample())
      picked, weight = sampler.sample(batch_size, buffer.rng)
      storage.header[storage_lib.SAMPLED] += batch_size
      buffer._count_draws(picked)
      slots.append(picked)
      weights.append(weight)
    slots = np.concatenate(slots)
    values = dict(nest_paths.flatten_with_paths(buffer._gather(slots)))
    info = [slots, storage.episode_ids[slots], storage.step_ids[slots].astype(np.int64),
            np.concatenate(weights)]
  return values, info


def _producer(buffer, batch_size: int, chunk: int, names: List[str],
              specs: List[tf.TensorSpec]):
  """The Python call: a chunk's arrays (exactly the dtypes of ``specs``) and a problem ('' if none)."""
  def produce(unused_tick):
    try:
      values, info = _draw(buffer, batch_size, chunk)
    except _STOPS as e:
      empty = [np.zeros([0] + s.shape.as_list()[1:], object if s.dtype == tf.string
                        else s.dtype.as_numpy_dtype) for s in specs]
      return empty + [np.bytes_(f'as_dataset stopped: {type(e).__name__}: {e}'.encode())]
    return [values[n] for n in names] + info + [np.bytes_(b'')]
  return exit_guard.tracked(produce)   # Python exits only once no call is in flight.


def _draw_fn(buffer, batch_size: int, chunk: int):
  """The dataset's map: a chunk of batches from one Python call, assembled, checked, in batches."""
  inputs = _inputs(buffer)
  names = sorted(inputs)
  specs = [inputs[n] for n in names] + [tf.TensorSpec([None], d)
                                         for d in (tf.int64, tf.int64, tf.int64, tf.float32)]
  produce = _producer(buffer, batch_size, chunk, names, specs)

  def assemble(flat):
    if buffer.kind is None:
      return flat
    steps = {n[len('steps/'):]: v for n, v in flat.items() if n.startswith('steps/')}
    return buffer.kind.assemble(steps, flat['start'], flat['length'], flat['terminated'])

  def in_batches(t):
    return tf.reshape(t, tf.concat([[-1, batch_size], tf.shape(t)[1:]], 0))

  def draw(tick):
    *out, problem = tf.numpy_function(produce, [tick], [s.dtype for s in specs] + [tf.string],
                                      stateful=True)
    check = tf.debugging.Assert(tf.equal(problem, ''), [problem])
    with tf.control_dependencies([check]):
      out = [tf.identity(t) for t in out]
    for tensor, spec in zip(out, specs):
      tensor.set_shape(spec.shape)
    values = {p: in_batches(v) for p, v in assemble(dict(zip(names, out))).items()}
    info = {f: in_batches(t) for f, t in zip(INFO_FIELDS, out[len(names):])}
    return nest_paths.nest_from_paths(values), info
  return draw


def as_dataset(buffer, batch_size: int, prefetch: int = 2, chunk: int = 8) -> tf.data.Dataset:
  """An endless ``tf.data.Dataset`` of ``(batch, info)``: what `ReplayBuffer.sample` returns, as tensors.

  ``batch`` is the nested dict of a sample; ``info`` a dict of `INFO_FIELDS`.
  Batches are drawn ``chunk`` at a time in one Python call (fewer when the
  rate limiter would wait) and ``prefetch`` of them wait ready: an
  ``update_priority`` made after you receive batch ``j`` affects every batch
  from ``j + prefetch + chunk`` on (``prefetch=0, chunk=1``: from ``j + 1``).
  A rate-limiter timeout or an empty buffer stops the dataset with one
  ``tf.errors.InvalidArgumentError`` whose message starts ``as_dataset stopped:``.

  Args:
    buffer: a `ReplayBuffer`.
    batch_size: samples per batch.
    prefetch: batches kept ready ahead of the consumer (0: none).
    chunk: batches drawn per Python call (more: faster, staler priorities).

  Returns:
    A ``tf.data.Dataset`` of ``(dict of [batch_size, ...] tensors, info dict)``.

  Example:
    >>> from rlds_lite import replay
    >>> buffer = replay.ReplayBuffer(replay.MemoryStorage(16), seed=0)
    >>> buffer.extend({'observation': np.zeros([10, 3], np.float32), 'reward': np.ones([10])})
    >>> batch, info = next(iter(as_dataset(buffer, 4)))
    >>> batch['observation'].shape, sorted(info), info['weights'].numpy().tolist()
    (TensorShape([4, 3]), ['episode_ids', 'indices', 'step_ids', 'weights'], [1.0, 1.0, 1.0, 1.0])
  """
  batch_size = _check_int(batch_size, 'batch_size', 1)
  prefetch = _check_int(prefetch, 'prefetch', 0)
  chunk = _check_int(chunk, 'chunk', 1)
  draw = _draw_fn(buffer, batch_size, chunk)
  ds = tf.data.Dataset.from_tensors(np.int64(0)).repeat().map(draw).unbatch()
  if prefetch:
    ds = ds.prefetch(prefetch)
  options = tf.data.Options()   # No buffer but `prefetch`: the update lag stays exact.
  options.experimental_optimization.inject_prefetch = False
  options.experimental_optimization.map_parallelization = False
  return ds.with_options(options)
