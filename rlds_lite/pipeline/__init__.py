"""Training batches straight from RLDS episodes: windows or n-step transitions.

``windows_dataset`` and ``transitions_dataset`` take a dataset of episodes
(dense, or nested and converted) and return shuffled batches: a parallel
per-episode ``map`` makes each episode's samples with one vectorised
``rlds_lite.dense`` op, ``rebatch`` collects them into pools that span many
episodes, each pool is permuted once, and ``rebatch`` cuts the batches. No
per-step ``tf.data`` element, no per-sample shuffle buffer; memory is
bounded by the pool size. ``shuffle_quality`` reports how many distinct
episodes a batch mixes.

``shuffled_steps`` reads a TFDS split as disjoint slices interleaved (each
step once per epoch), pools episodes and permutes their steps, with every
memory-costing knob an argument, ``estimate_memory`` and ``memory_budget``
(docs/shuffling.md); ``shuffled_episodes`` shuffles whole episodes.
Around them: ``mix`` (weighted mixtures, exact per-batch counts on request),
``shard`` / ``split_slices`` (per-host sharding, disjoint slices),
``ResumableIterator`` (save and restore an iterator's position) and
``distribute`` / ``LocalService`` (tf.data service). See docs/distributed.md.

Example:
  >>> import tensorflow as tf
  >>> from rlds_lite import pipeline
  >>> steps = {'observation': tf.range(6), 'reward': tf.ones([6])}
  >>> episodes = tf.data.Dataset.from_tensors({'steps': steps, 'episode_id': 0})
  >>> ds = pipeline.windows_dataset(episodes, size=2, batch_size=5, seed=0,
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
from rlds_lite.pipeline.quality import shuffle_quality
from rlds_lite.pipeline.robot_memory import DecodePlan
from rlds_lite.pipeline.robot_memory import RobotMemory
from rlds_lite.pipeline.robot_samples import FrameDecoding
from rlds_lite.pipeline.robot_samples import plan_robot_samples
from rlds_lite.pipeline.robot_samples import robot_samples_dataset
from rlds_lite.pipeline.quality import ShuffleQuality
from rlds_lite.sample_kinds import RobotSamples
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
    'windows_dataset',
]
