"""Replay buffers on tf.data: TorchRL's composable storages, writers and samplers, Reverb's rate limiting (docs/replay.md).

Example:
  >>> from rlds_lite import replay
  >>> buffer = replay.ReplayBuffer(replay.MemoryStorage(1000),
  ...                              sampler=replay.Prioritized(alpha=0.6, beta=0.4))
  >>> buffer.extend({'observation': np.zeros([8, 3]), 'reward': np.ones([8])})
  >>> batch, info = buffer.sample(4)
  >>> buffer.update_priority(info.indices, np.full([4], 2.0))
  >>> batch['observation'].shape, info.weights.shape
  ((4, 3), (4,))
"""

import numpy as np

from rlds_lite.replay.buffer import ReplayBuffer
from rlds_lite.replay.buffer import SampleInfo
from rlds_lite.replay.cache import CacheCost
from rlds_lite.replay.cache import DecodedCache
from rlds_lite.replay.cache import cache_cost
from rlds_lite.replay.cache import decoded_cache
from rlds_lite.replay.rate_limit import RateLimiter
from rlds_lite.replay.rate_limit import RateLimitTimeout
from rlds_lite.replay.samplers import Prioritized
from rlds_lite.replay.samplers import Uniform
from rlds_lite.replay.samplers import WithoutReplacement
from rlds_lite.replay.spec import Field
from rlds_lite.replay.storage import MemmapStorage
from rlds_lite.replay.storage import MemoryStorage
from rlds_lite.replay.writers import Immutable
from rlds_lite.replay.writers import RoundRobin
from rlds_lite.replay.writers import TopK

__all__ = [
    'Field', 'Immutable', 'MemmapStorage', 'MemoryStorage', 'Prioritized', 'RateLimiter',
    'RateLimitTimeout', 'ReplayBuffer', 'RoundRobin', 'SampleInfo', 'TopK', 'Uniform',
    'WithoutReplacement',
    'CacheCost', 'DecodedCache', 'cache_cost', 'decoded_cache',
]
