"""Structures of stacked rows (``[N, ...]`` leaves): the state of chunked scans."""

from typing import Any

import tensorflow as tf


def leading_dim(structure: Any) -> tf.Tensor:
  """The number of rows (int64) of a structure of stacked rows."""
  return tf.shape(tf.nest.flatten(structure)[0], out_type=tf.int64)[0]


def zero_rows(spec: Any, rows: int) -> Any:
  """``rows`` zero elements of ``spec`` stacked (unknown dimensions are 0).

  Example:
    >>> zero_rows(tf.TensorSpec([None, 2], tf.float32), 3).shape
    TensorShape([3, 0, 2])
  """
  def zeros(s: tf.TensorSpec) -> tf.Tensor:
    if s.shape.rank is None:  # Never concatenated (see `extend_history`).
      return tf.zeros([rows], s.dtype)
    return tf.zeros([rows] + [0 if d is None else d for d in s.shape.as_list()],
                    s.dtype)
  return tf.nest.map_structure(zeros, spec)


def gather_rows(structure: Any, indices: tf.Tensor) -> Any:
  """Every leaf's rows at ``indices``.

    Example:
      >>> rows = {'x': tf.constant([1, 2, 3])}
      >>> int(leading_dim(rows)), gather_rows(rows, tf.constant([2, 0]))['x'].numpy().tolist()
      (3, [3, 1])
  """
  return tf.nest.map_structure(lambda x: tf.gather(x, indices), structure)


def extend_history(history: Any, kept: tf.Tensor, block: Any, spec: Any) -> Any:
  """``history`` (fixed length, last ``kept`` rows real) followed by ``block``.

  With fully known element shapes this is a plain concatenation. Otherwise
  the zero history made by ``zero_rows`` has 0 in the unknown dimensions, so
  when none of it is real it is replaced by copies of the block's first row,
  and an empty block (e.g. an end-of-input marker) is not appended.
  ``tf.cond`` is slow to trace, hence only then.
  """
  def concat(head):
    return tf.nest.map_structure(lambda h, b: tf.concat([h, b], 0),
                                 head, block)
  if all(s.shape.is_fully_defined() for s in tf.nest.flatten(spec)):
    return concat(history)
  rows = leading_dim(history)
  padding = lambda: concat(gather_rows(block, tf.zeros([rows], tf.int64)))
  return tf.cond(
      leading_dim(block) == 0, lambda: history,
      lambda: tf.cond(kept > 0, lambda: concat(history), padding))
