"""Random subsets of an episode's steps, in their original order (as dlimp's).

Example:
  >>> import tensorflow as tf
  >>> subsample({'observation': tf.range(3)}, 5)['observation'].numpy().tolist()
  [0, 1, 2]
"""

from typing import Any, Dict, Mapping, Optional

import tensorflow as tf

from rlds_lite import op_context
from rlds_lite.dense import indexing
from rlds_lite.dense import seeding


@op_context.named('subsample')
def subsample(steps: Mapping[str, Any], length: int, *,
              seed: Optional[Any] = None) -> Dict[str, Any]:
  """At most ``length`` steps of an episode, drawn uniformly, order kept.

  Like dlimp's ``subsample``: an episode of ``T <= length`` steps is returned
  whole; a longer one gives a uniformly random subset of exactly ``length``
  distinct steps, sorted by time. Every field is subsampled the same way and
  copied verbatim (``is_first``/``is_last`` are not recomputed), so apply it
  after ``frame_stack``/``chunk_actions`` to sample training steps with
  full-episode context. Deterministic for a given ``seed`` (stateless ops).
  For a strided subsample use ``windows(steps, 1, shift=k)`` instead.

  Args:
    steps: one episode's dense steps.
    length: maximal number of steps kept (positive).
    seed: an int, a shape-``[2]`` int tensor, or None (random).

  Returns:
    ``steps`` with leaves ``[min(T, length), ...]``.

  Example:
    >>> out = subsample({'observation': tf.range(10)}, 3, seed=1)['observation']
    >>> out.shape, bool(tf.reduce_all(out[1:] > out[:-1]))
    (TensorShape([3]), True)
  """
  steps = indexing.as_dense_steps(steps)
  length = indexing.check_positive_int(length, 'length')
  seed = seeding.stateless_seed(seed)
  total = indexing.episode_length(steps)
  keys = tf.random.stateless_uniform([total], seed)
  _, chosen = tf.math.top_k(keys, k=tf.minimum(total, length), sorted=False)
  return indexing.gather_steps(steps, tf.sort(chosen))
