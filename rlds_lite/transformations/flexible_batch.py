"""Sliding-window batching: ``tf.data.Dataset.window``'s windows as stacked tensors.

Windows are cut from large chunks of the input with one ``tf.gather`` each.
"""

import sys
from typing import Any, Callable, Optional, Tuple

import tensorflow as tf

from rlds_lite.transformations import shape_ops
from rlds_lite.transformations import stacked_rows
from rlds_lite.transformations.auto_batch import BATCH_AUTO_TUNE
from rlds_lite.transformations.auto_batch import DEFAULT_BATCH_SIZE_IN_BYTES
from rlds_lite.transformations.auto_batch import get_batch_size

__all__ = ['batch', 'BATCH_AUTO_TUNE', 'get_batch_size']

_CHUNK_BYTES = 4 * DEFAULT_BATCH_SIZE_IN_BYTES
"""Target size of the windows gathered from one chunk of the input."""

_ASSUMED_ELEMENT_BYTES = 1024
"""Element size assumed when the spec does not tell it (unknown rank)."""


def _positive_int(value: Any, name: str) -> int:
  """``value`` as an int, or a ValueError/TypeError naming ``name``."""
  if isinstance(value, bool) or not hasattr(value, '__index__'):
    raise TypeError(f'{name} must be a positive int, got {value!r}.')
  if int(value) < 1:
    raise ValueError(f'{name} must be a positive int, got {int(value)}.')
  return int(value)


def num_windows(n: Any, size: int, shift: int, stride: int,
                drop_remainder: bool) -> Any:
  """How many windows ``batch`` makes from ``n`` elements (ints or tensors).

    Example:
      >>> num_windows(4, size=2, shift=1, stride=1, drop_remainder=False)
      4
      >>> num_windows(4, size=2, shift=1, stride=1, drop_remainder=True)
      3
  """
  if not drop_remainder:
    return (n + shift - 1) // shift
  span = (size - 1) * stride + 1
  full = (n - span) // shift + 1
  if isinstance(full, int):
    return max(full, 0)
  return tf.maximum(full, 0)


@tf.autograph.experimental.do_not_convert  # Graph-building code: no AutoGraph.
def _with_cardinality(windows: tf.data.Dataset, source: tf.data.Dataset,
                      count_fn: Callable[[Any], Any]) -> tf.data.Dataset:
  """``windows`` with cardinality ``count_fn(n)``, ``n`` that of ``source``.

  Infinite stays infinite and unknown stays unknown. Inside a traced
  function (e.g. ``flat_map`` over episodes) the source cardinality is only
  known when the graph runs, so the choice is made with ``tf.cond``.
  """
  n = source.cardinality()
  static_n = tf.get_static_value(n)
  if static_n is not None:
    static_n = int(static_n)
    if static_n == tf.data.UNKNOWN_CARDINALITY:
      return windows
    expected = (static_n if static_n == tf.data.INFINITE_CARDINALITY
                else count_fn(static_n))
    return windows.apply(tf.data.experimental.assert_cardinality(expected))
  expected = tf.where(n >= 0, count_fn(tf.maximum(n, 0)), n)
  return tf.cond(
      n != tf.data.UNKNOWN_CARDINALITY,
      lambda: windows.apply(tf.data.experimental.assert_cardinality(expected)),
      lambda: windows)


def _on_elements(fn: Callable[[Any], Any], spec: Any) -> Callable[..., Any]:
  """``fn`` taking one element, for ``map``/``flat_map`` over ``spec``.

  tf.data passes the parts of a tuple element as separate arguments.
  """
  if isinstance(spec, tuple):
    return lambda *parts: fn(parts)
  return fn










def _element_bytes(spec: Any) -> int:
  size = shape_ops.size_from_spec(spec)
  return _ASSUMED_ELEMENT_BYTES if size == sys.maxsize else size


def _chunk_length(spec: Any, size: int, shift: int) -> int:
  """Input elements per chunk: about ``_CHUNK_BYTES`` of windows, or input."""
  element_bytes = _element_bytes(spec)
  windows = max(1, _CHUNK_BYTES // max(1, size * element_bytes))
  inputs = max(1, _CHUNK_BYTES // max(1, element_bytes))
  return max(1, min(windows * shift, inputs))


@tf.autograph.experimental.do_not_convert  # Graph-building code: no AutoGraph.
def _sliding_windows(dataset: tf.data.Dataset, size: int, shift: int,
                     stride: int, drop_remainder: bool) -> tf.data.Dataset:
  """Overlapping windows in one pass: chunks, a history, a gather per chunk.

  A ``scan`` over chunks of the input keeps the last ``span - 1`` elements
  (all a window begun earlier can still need; a fixed length keeps the state
  shape static), how many of them are still needed, and how many input
  elements to skip when ``shift`` leaves gaps between windows. With
  ``drop_remainder`` False an empty end-of-input chunk flushes the partial
  windows.
  """
  spec = dataset.element_spec
  span = (size - 1) * stride + 1
  rows = span - 1
  chunks = dataset.batch(_chunk_length(spec, size, shift))
  if not drop_remainder:
    not_end = tf.data.Dataset.from_tensors(False).repeat()
    end = tf.data.Dataset.from_tensors((stacked_rows.zero_rows(spec, 0), True))
    chunks = tf.data.Dataset.zip((chunks, not_end)).concatenate(end)
  offsets = tf.range(size, dtype=tf.int64) * stride

  # Plain graph code: skipping AutoGraph conversion makes tracing faster.
  @tf.autograph.experimental.do_not_convert
  def step(state, chunk):  # scan passes a tuple element as one argument.
    history, kept, pending = state
    block, is_end = (chunk, False) if drop_remainder else chunk
    added = stacked_rows.leading_dim(block)
    buf = stacked_rows.extend_history(history, kept, block, spec)
    length = rows + added
    first = rows - kept + pending  # Where the next window starts in `buf`.
    available = length - first
    full = tf.maximum((available - span) // shift + 1, 0)
    total = full
    if not drop_remainder:
      total = tf.where(is_end, tf.maximum((available + shift - 1) // shift, 0),
                       full)
    next_start = first + total * shift
    state = (stacked_rows.gather_rows(
                 buf, tf.range(rows, dtype=tf.int64) + added),
             tf.clip_by_value(length - next_start, 0, rows),
             tf.maximum(next_start - length, 0))
    starts = first + tf.range(total, dtype=tf.int64) * shift
    indices = starts[:, None] + offsets[None, :]
    if drop_remainder:
      return state, stacked_rows.gather_rows(buf, indices)
    # Partial windows repeat their last element; `lengths` trims them.
    partial = tf.minimum(indices[full:], length - 1)
    lengths = tf.minimum((length - starts[full:] + stride - 1) // stride, size)
    return state, (stacked_rows.gather_rows(buf, indices[:full]),
                   stacked_rows.gather_rows(buf, partial),
                   lengths)

  initial = (stacked_rows.zero_rows(spec, rows), tf.constant(0, tf.int64),
             tf.constant(0, tf.int64))
  gathered = chunks.scan(initial, step)
  if drop_remainder:
    return gathered.unbatch()

  @tf.autograph.experimental.do_not_convert
  def flatten(whole, partial, lengths):
    tail = tf.data.Dataset.from_tensor_slices((partial, lengths)).map(
        lambda w, n: tf.nest.map_structure(lambda x: x[:n], w))
    return tf.data.Dataset.from_tensor_slices(whole).concatenate(tail)

  return gathered.flat_map(flatten)


def _nested_windows(dataset: tf.data.Dataset, size: int, shift: int,
                    stride: int, drop_remainder: bool) -> tf.data.Dataset:
  """``Dataset.window`` flattened: slow, but handles ragged/sparse fields."""
  windowed = dataset.window(size, shift, stride, drop_remainder)
  return windowed.flat_map(_on_elements(
      lambda w: tf.data.Dataset.zip(
          tf.nest.map_structure(lambda d: d.batch(size), w)),
      dataset.element_spec))


def batch(dataset: tf.data.Dataset,
          size: int = BATCH_AUTO_TUNE,
          shift: Optional[int] = None,
          stride: int = 1,
          drop_remainder: bool = False) -> tf.data.Dataset:
  """Batches elements into (possibly overlapping) windows of stacked tensors.

    The windows of ``tf.data.Dataset.window`` (and upstream RLDS): window
    ``k`` holds elements ``k * shift + j * stride`` for ``j < size`` that
    exist. The input is read once; elements a window spans must share a shape.

    Args:
      dataset: the dataset to batch.
      size: elements per window (``BATCH_AUTO_TUNE``: from the element size).
      shift: distance between window starts (default ``size``).
      stride: distance between the elements of a window.
      drop_remainder: drop windows with fewer than ``size`` elements.

    Example:
      >>> ds = tf.data.Dataset.from_tensor_slices({'x': [1, 2, 3, 4]})
      >>> windows = batch(ds, size=2, shift=1)
      >>> [w['x'].numpy().tolist() for w in windows]
      [[1, 2], [2, 3], [3, 4], [4]]
      >>> [w['x'].numpy().tolist() for w in batch(ds, 2, shift=1, stride=2)]
      [[1, 3], [2, 4], [3], [4]]
  """
  if isinstance(size, bool) or not hasattr(size, '__index__'):
    raise TypeError(f'size must be a positive int or BATCH_AUTO_TUNE, got '
                    f'{size!r}.')
  if int(size) != BATCH_AUTO_TUNE:
    _positive_int(size, 'size')
  size = get_batch_size(dataset, int(size))
  shift = size if shift is None else _positive_int(shift, 'shift')
  stride = _positive_int(stride, 'stride')
  drop_remainder = bool(drop_remainder)
  if size == 1:
    stride = 1  # One-element windows do not depend on the stride.
  span = (size - 1) * stride + 1

  if shift == size and stride == 1:
    return dataset.batch(size, drop_remainder=drop_remainder)
  spec = dataset.element_spec
  leaves = tf.nest.flatten(spec)
  if any(isinstance(s, tf.data.DatasetSpec) for s in leaves):
    raise TypeError('batch cannot batch elements that contain datasets.')
  if not leaves or not all(isinstance(s, tf.TensorSpec) for s in leaves):
    windows = _nested_windows(dataset, size, shift, stride, drop_remainder)
  elif (span <= shift and not drop_remainder and
        shift * _element_bytes(spec) <= _CHUNK_BYTES):
    # Disjoint windows: each batch of `shift` elements starts one window
    # (batch and map keep the cardinality).
    return dataset.batch(shift).map(_on_elements(
        lambda chunk: tf.nest.map_structure(lambda x: x[:span:stride], chunk),
        spec))
  else:
    windows = _sliding_windows(dataset, size, shift, stride, drop_remainder)
  return _with_cardinality(
      windows, dataset,
      lambda n: num_windows(n, size, shift, stride, drop_remainder))
