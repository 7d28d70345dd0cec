"""Training batches straight from RLDS episodes: windows, transitions, robot samples, shuffled steps.

A sample kind (`Windows`, `Transitions`, `RobotSamples`) says what a sample
is, a small dataclass how it is pooled (`Pooling`, `ShuffleKnobs`,
`FrameDecoding`); around them ``mix``, ``shard``, ``ResumableIterator`` and
the tf.data service (docs/fast_path.md, docs/pooling.md).

Example:
  >>> import tensorflow as tf
  >>> from rlds_lite import pipeline
  >>> steps = {'observation': tf.range(6), 'reward': tf.ones([6])}
  >>> episodes = tf.data.Dataset.from_tensors({'steps': steps, 'episode_id': 0})
  >>> ds = pipeline.windows_dataset(episodes, pipeline.Windows(2), 5, seed=0,
  ...                               episode_fields='episode_id')
  >>> [b['observation'].shape.as_list() for b in ds]
  [[5, 2]]
  >>> pipeline.shuffle_quality(ds).mean_distinct_episodes
  1.0
"""

from rlds_lite.pipeline.checkpointing import ResumableIterator
from rlds_lite.pipeline.mixing import dataset_size
from rlds_lite.pipeline.mixing import exact_counts
from rlds_lite.pipeline.mixing import ExactCountsWarning
from rlds_lite.pipeline.mixing import mix
from rlds_lite.pipeline.pools import pooled_batches
from rlds_lite.pipeline.pools import Pooling
from rlds_lite.pipeline.quality import shuffle_quality
from rlds_lite.pipeline.robot_memory import DecodePlan
from rlds_lite.pipeline.robot_memory import RobotMemory
from rlds_lite.pipeline.robot_samples import FrameDecoding
from rlds_lite.pipeline.robot_samples import plan_robot_samples
from rlds_lite.pipeline.robot_samples import robot_samples_dataset
from rlds_lite.pipeline.quality import ShuffleQuality
from rlds_lite.sample_kinds import RobotSamples
from rlds_lite.sample_kinds import Transitions
from rlds_lite.sample_kinds import Windows
from rlds_lite.pipeline.service import distribute
from rlds_lite.pipeline.service import LocalService
from rlds_lite.pipeline.sharding import shard
from rlds_lite.pipeline.sharding import split_slices
from rlds_lite.pipeline.memory import estimate_memory
from rlds_lite.pipeline.shuffling import ShuffleKnobs
from rlds_lite.pipeline.shuffling import ShuffleMemory
from rlds_lite.pipeline.shuffling import shuffled_episodes
from rlds_lite.pipeline.shuffling import shuffled_steps
from rlds_lite.pipeline.transitions import transitions_dataset
from rlds_lite.pipeline.windows import windows_dataset

__all__ = [
    'FrameDecoding',
    'RobotSamples',
    'dataset_size',
    'DecodePlan',
    'distribute',
    'estimate_memory',
    'exact_counts',
    'ExactCountsWarning',
    'LocalService',
    'mix',
    'plan_robot_samples',
    'pooled_batches',
    'Pooling',
    'ResumableIterator',
    'robot_samples_dataset',
    'RobotMemory',
    'shard',
    'ShuffleKnobs',
    'ShuffleMemory',
    'shuffled_episodes',
    'shuffled_steps',
    'split_slices',
    'shuffle_quality',
    'ShuffleQuality',
    'transitions_dataset',
    'Transitions',
    'windows_dataset',
    'Windows',
]
