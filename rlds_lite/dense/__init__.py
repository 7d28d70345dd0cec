"""Dense episodes: vectorised per-episode trajectory ops inside tf.data graphs.

Each op takes one episode's dense steps (a dict of ``[T, ...]`` tensors;
``to_dense`` / ``to_nested`` convert) and returns its samples with one
``tf.gather`` per leaf, eagerly or in ``tf.data.Dataset.map``.

Example:
  >>> import tensorflow as tf
  >>> from rlds_lite import dense
  >>> steps = {'observation': tf.range(4), 'reward': tf.ones([4]),
  ...          'is_terminal': tf.constant([False, False, False, True])}
  >>> dense.windows(steps, 3)['observation'].numpy().tolist()
  [[0, 1, 2], [1, 2, 3]]
  >>> dense.transitions(steps, n=2)['discount'].numpy().tolist()
  [1.0, 0.0, 0.0]
"""

from rlds_lite.dense.chunking import chunk_actions
from rlds_lite.dense.chunking import frame_stack
from rlds_lite.dense.chunking import PAD_MASK_SUFFIX
from rlds_lite.dense.conversion import dense_episode
from rlds_lite.dense.conversion import to_dense
from rlds_lite.dense.conversion import to_nested
from rlds_lite.dense.goals import GOAL
from rlds_lite.dense.goals import relabel_goals
from rlds_lite.dense.goals import STRATEGIES
from rlds_lite.dense.indexing import episode_length
from rlds_lite.dense.indexing import gather_steps
from rlds_lite.dense.last_step import LastStep
from rlds_lite.dense.last_step import LastStepValuesWarning
from rlds_lite.dense.last_step import num_valid_actions
from rlds_lite.dense.robot import GOAL_INDEX
from rlds_lite.dense.robot import robot_sample_indices
from rlds_lite.dense.robot import robot_samples
from rlds_lite.dense.robot import SampleIndices
from rlds_lite.dense.subsample import subsample
from rlds_lite.dense.transitions import NEXT_OBSERVATION
from rlds_lite.dense.transitions import transitions
from rlds_lite.dense.windows import MASK
from rlds_lite.dense.windows import window_indices
from rlds_lite.dense.windows import windows

__all__ = [
    'chunk_actions',
    'dense_episode',
    'episode_length',
    'frame_stack',
    'gather_steps',
    'GOAL',
    'GOAL_INDEX',
    'LastStep',
    'LastStepValuesWarning',
    'MASK',
    'NEXT_OBSERVATION',
    'num_valid_actions',
    'PAD_MASK_SUFFIX',
    'relabel_goals',
    'robot_sample_indices',
    'robot_samples',
    'SampleIndices',
    'STRATEGIES',
    'subsample',
    'to_dense',
    'to_nested',
    'transitions',
    'window_indices',
    'windows',
]
