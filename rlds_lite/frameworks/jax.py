"""Feed JAX: batches -> pytrees of device arrays, a few batches in flight (optional extra).

Example:
  >>> import tensorflow as tf
  >>> ds = tf.data.Dataset.range(6).batch(3).map(lambda x: {'x': x})
  >>> [b['x'].tolist() for b in as_jax_iterator(ds)]
  [[0, 1, 2], [3, 4, 5]]
"""

import collections
import importlib
import types
import warnings
from typing import Any, Iterable, Iterator, Optional

import numpy as np

from rlds_lite import nest_paths

_OP = 'as_jax_iterator'


def import_jax() -> types.ModuleType:
  """``jax``, or an ImportError that says how to install it.

  Example:
    >>> import_jax().__name__
    'jax'
  """
  try:
    return importlib.import_module('jax')
  except ImportError as e:
    raise ImportError(
        f'{_OP} needs JAX, which is not installed ({e}); install the extra: '
        "pip install 'rlds_lite[jax]' (or see https://docs.jax.dev for "
        'GPU/TPU builds).') from e


def _numpy_batches(ds: Any) -> Iterator[Any]:
  """NumPy batches of a ``tf.data.Dataset`` (or any iterable of pytrees)."""
  if hasattr(ds, 'as_numpy_iterator'):
    return iter(ds.as_numpy_iterator())
  try:
    return iter(ds)
  except TypeError:
    raise TypeError(f'{_OP}: ds must be a tf.data.Dataset or an iterable of '
                    f'batches, got {type(ds).__name__}.') from None


def _check_leaves(batch: Any, x64: bool = True) -> None:
  """Raises naming a field JAX cannot hold (strings, objects, out-of-range int64)."""
  for path, leaf in nest_paths.flatten_with_paths(batch):
    name = path or '<batch>'
    dtype = getattr(leaf, 'dtype', None)
    kind = getattr(dtype, 'kind', None)
    if kind in ('O', 'S', 'U') or (dtype is None and
                                   isinstance(leaf, (str, bytes))):
      raise TypeError(
          f'{_OP}: field {name!r} has dtype {dtype or type(leaf).__name__}, '
          'which JAX arrays cannot hold; drop it (or encode it as numbers) '
          'first.')
    if (not x64 and kind in ('i', 'u') and dtype.itemsize == 8 and
        np.size(leaf) and not _fits_32_bits(leaf)):
      raise ValueError(
          f'{_OP}: field {name!r} holds {dtype} values outside the 32-bit '
          'range, which JAX truncates when jax_enable_x64 is off (its '
          "default); enable it (jax.config.update('jax_enable_x64', True)) "
          'or drop the field.')


def _fits_32_bits(values: np.ndarray) -> bool:
  info = np.iinfo(np.int32 if values.dtype.kind == 'i' else np.uint32)
  return bool(values.min() >= info.min and values.max() <= info.max)


def _warn_64_bit_fields(batch: Any) -> None:
  """Says once which fields JAX (x64 off) turns into 32-bit arrays."""
  wide = [path or '<batch>' for path, leaf in
          nest_paths.flatten_with_paths(batch)
          if getattr(getattr(leaf, 'dtype', None), 'itemsize', 0) == 8 and
          leaf.dtype.kind in 'iuf']
  if wide:
    warnings.warn(
        f'{_OP}: fields {wide} are 64-bit; JAX holds them as 32-bit arrays '
        '(int32, float32) because jax_enable_x64 is off (its default). '
        'Integers outside the 32-bit range are refused; enable x64 to keep '
        'every bit.', UserWarning, stacklevel=3)


def as_jax_iterator(ds: Iterable[Any],
                    prefetch: int = 2,
                    sharding: Optional[Any] = None) -> Iterator[Any]:
  """Iterates ``ds`` as pytrees of JAX arrays, ``prefetch`` batches in flight to the device.

  Refused fields and the 64-bit rule: docs/keras_jax.md. Use ``drop_last_batch=True`` so a
  ``jax.jit`` step compiles once.

  Args:
    ds: a ``tf.data.Dataset`` or any iterable of pytrees of NumPy arrays.
    prefetch: batches in flight (>= 1).
    sharding: a ``jax.sharding.Sharding`` for every leaf, or None for the default device.

  Example:
    >>> import jax, numpy as np
    >>> batches = [{'obs': np.ones((2, 3), np.float32)}] * 3
    >>> sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    >>> out = list(as_jax_iterator(batches, prefetch=1, sharding=sharding))
    >>> len(out), isinstance(out[0]['obs'], jax.Array)
    (3, True)
    >>> out[0]['obs'].sharding == sharding
    True
  """
  if isinstance(prefetch, bool) or not isinstance(prefetch, int) or prefetch < 1:
    raise ValueError(f'{_OP}: prefetch must be a positive int, got '
                     f'{prefetch!r}.')
  jax = import_jax()
  batches = _numpy_batches(ds)

  x64 = bool(jax.config.jax_enable_x64)

  def generate() -> Iterator[Any]:
    queue = collections.deque()
    warned = []

    def enqueue(n: int) -> None:
      for _ in range(n):
        try:
          batch = next(batches)
        except StopIteration:
          return
        _check_leaves(batch, x64)
        if not x64 and not warned:
          _warn_64_bit_fields(batch)
          warned.append(True)
        queue.append(jax.device_put(batch, sharding))

    enqueue(prefetch)
    while queue:
      out = queue.popleft()
      enqueue(1)
      yield out

  return generate()
