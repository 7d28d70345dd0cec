"""Replay buffers on tf.data: TorchRL's composable storages, writers and samplers, Reverb's rate limiting (docs/replay.md).

Names are imported on first use, so that an actor process (`replay.Actor` on a
`MemmapStorage`) never loads TensorFlow.

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

from typing import Any, List, TYPE_CHECKING

import numpy as np

from rlds_lite import lazy_names

_NAMES = {
    'Actor': 'actors',
    'Field': 'spec',
    'from_ted': 'ted',
    'Immutable': 'writers',
    'MemmapStorage': 'storage',
    'MemoryStorage': 'storage',
    'Mix': 'mixing',
    'mix': 'mixing',
    'MixInfo': 'mixing',
    'Prioritized': 'samplers',
    'RateLimiter': 'rate_limit',
    'RateLimitTimeout': 'rate_limit',
    'record': 'recording',
    'RecordedEpisodes': 'recording',
    'ReplayBuffer': 'buffer',
    'RLDSLog': 'rlds_log',
    'RoundRobin': 'writers',
    'SampleInfo': 'buffer',
    'to_ted': 'ted',
    'TopK': 'writers',
    'Uniform': 'samplers',
    'WithoutReplacement': 'samplers',
}
"""Public names of the package and the module that defines each."""

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
  """Imports a public name (or a module of the package) on first use."""
  return lazy_names.attribute(__name__, _NAMES, name)


def __dir__() -> List[str]:
  return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # For type checkers and IDEs: the same names, eagerly.
  # pylint: disable=g-import-not-at-top,g-bad-import-order
  from rlds_lite.replay.actors import Actor
  from rlds_lite.replay.buffer import ReplayBuffer, SampleInfo
  from rlds_lite.replay.mixing import Mix, MixInfo, mix
  from rlds_lite.replay.rate_limit import RateLimiter, RateLimitTimeout
  from rlds_lite.replay.recording import record, RecordedEpisodes
  from rlds_lite.replay.rlds_log import RLDSLog
  from rlds_lite.replay.samplers import Prioritized, Uniform, WithoutReplacement
  from rlds_lite.replay.spec import Field
  from rlds_lite.replay.storage import MemmapStorage, MemoryStorage
  from rlds_lite.replay.ted import from_ted, to_ted
  from rlds_lite.replay.writers import Immutable, RoundRobin, TopK
