"""Dataset -> Dataset transformations of RLDS episodes and steps.

The public names and semantics of upstream ``rlds.transformations``, on public
tf.data APIs only (no reverb); where they differ: ``docs/upstream.md``.

Example:
  >>> import tensorflow as tf
  >>> from rlds_lite import transformations
  >>> ds = tf.data.Dataset.range(4)
  >>> [w.numpy().tolist() for w in transformations.batch(ds, size=2, shift=1)]
  [[0, 1], [1, 2], [2, 3], [3]]
"""

from rlds_lite.transformations.auto_batch import BATCH_AUTO_TUNE
from rlds_lite.transformations.shape_ops import size_from_spec
from rlds_lite.transformations.shape_ops import uniform_from_spec
from rlds_lite.transformations.shape_ops import zero_dataset_like
from rlds_lite.transformations.shape_ops import zeros_from_spec
# Each module below lists its public names in __all__.
from rlds_lite.transformations.flexible_batch import *  # pylint: disable=wildcard-import
from rlds_lite.transformations.alignment import *  # pylint: disable=wildcard-import
from rlds_lite.transformations.nested_ops import *  # pylint: disable=wildcard-import
from rlds_lite.transformations.dataset_stats import *  # pylint: disable=wildcard-import
from rlds_lite.transformations.dataset_concat import *  # pylint: disable=wildcard-import
from rlds_lite.transformations.dataset_truncate import *  # pylint: disable=wildcard-import
from rlds_lite.transformations.pattern import *  # pylint: disable=wildcard-import
