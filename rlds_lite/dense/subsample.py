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
  """At most ``length`` steps of an episode, drawn uniformly, in time order (as dlimp's).

  Args:
    steps: one episode's dense steps.
    length: steps kept (positive); a shorter episode is returned whole.
    seed: an int, a shape-``[2]`` int tensor, or None (random).

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
