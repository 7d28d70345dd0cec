"""Seeds for the stateless random ops of ``rlds_lite.dense``: the same seed, the same draw.

Inside a map, fold in something per episode to vary it:
``ds.enumerate().map(lambda i, ep: op(ep['steps'], seed=tf.stack([7, i])))``.

Example:
  >>> stateless_seed(7).numpy().tolist()
  [7, 0]
"""

from typing import Any, Optional

import numpy as np
import tensorflow as tf


def stateless_seed(seed: Optional[Any]) -> tf.Tensor:
  """``seed`` as the shape-``[2]`` int64 tensor stateless ops take (an int ``s``: ``[s, 0]``; None: random).

  Example:
    >>> stateless_seed([1, 2]).numpy().tolist()
    [1, 2]
  """
  if seed is None:
    return tf.random.uniform([2], maxval=tf.int64.max, dtype=tf.int64)
  if isinstance(seed, bool):
    raise TypeError('seed must be an int or a pair of ints, got a bool.')
  if isinstance(seed, (int, np.integer)):
    return tf.constant([int(seed), 0], tf.int64)
  seed = tf.convert_to_tensor(seed)
  if not seed.dtype.is_integer or seed.shape.rank != 1 or seed.shape[0] != 2:
    raise TypeError(
        f'seed must be an int or a shape-[2] integer tensor, got '
        f'{seed.dtype.name}{seed.shape}.')
  return tf.cast(seed, tf.int64)
