"""A buffer filled from TorchRL's TED layout (`from_ted`), and its stored episodes as TED (`to_ted`), via `rlds_lite.convert.ted`."""

from typing import Any, Dict, Optional

import numpy as np

from rlds_lite import nest_paths
from rlds_lite import rlds_names
from rlds_lite.convert import ted as ted_lib
from rlds_lite.convert import transitions
from rlds_lite.replay import buffer as buffer_lib
from rlds_lite.replay import offline
from rlds_lite.replay import storage as storage_lib

__all__ = ['from_ted', 'to_ted']


def from_ted(data: ted_lib.TEDLike, storage: Optional[storage_lib.Storage] = None, *,
             batch_dims: int = 1, repair: Optional[str] = None, check_continuity: bool = True,
             last_step: transitions.LastStepLike = 'invalid',
             **buffer_args: Any) -> buffer_lib.ReplayBuffer:
  """A `ReplayBuffer` (default ``writer=Immutable()``, capacity: the steps) filled from TED rows.

  Args:
    data: a TED nest of ``[N]`` arrays (or ``[B, T]`` with ``batch_dims=2``), a CPU
      ``TensorDict``, an H5 path or group.
    storage: where the steps go (None: a `MemoryStorage` of exactly their number).
    batch_dims, repair, check_continuity, last_step: as `rlds_lite.convert.ted.from_ted`'s.
    **buffer_args: `ReplayBuffer`'s other arguments (``sampler``, ``kind``, ...).

  Example:
    >>> rows = {'observation': np.arange(3.), 'action': np.zeros(3),
    ...         'next': {'observation': np.arange(1., 4.), 'reward': np.ones(3),
    ...                  'done': np.array([False, False, True]),
    ...                  'terminated': np.array([False, False, True])}}
    >>> buffer = from_ted(rows)
    >>> len(buffer), buffer.storage.columns['observation'].tolist()
    (4, [0.0, 1.0, 2.0, 3.0])
  """
  episodes = ted_lib.from_ted(data, batch_dims=batch_dims, repair=repair,
                              check_continuity=check_continuity, last_step=last_step)
  return offline.from_rlds(buffer_lib.ReplayBuffer, episodes, storage, **buffer_args)


def to_ted(buffer: buffer_lib.ReplayBuffer, *, open_episodes: str = 'skip',
           one_step: str = 'error', last_step: transitions.LastStepLike = 'invalid'
           ) -> Dict[str, Any]:
  """The buffer's stored episodes (`offline.stored_episodes`) as a TED nest of NumPy rows.

  ``rlds_lite.convert.ted.to_ted_h5`` writes the same as an H5 file; ``one_step``
  and ``last_step`` are `rlds_lite.convert.ted.to_ted`'s.

  Example:
    >>> from rlds_lite import replay
    >>> buffer = replay.ReplayBuffer(replay.MemoryStorage(8))
    >>> buffer.extend({'observation': np.arange(3.), 'action': np.zeros(3), 'is_first': [1, 0, 0],
    ...                'is_last': [0, 0, 1], 'is_terminal': [0, 0, 1]})
    >>> rows = to_ted(buffer)
    >>> rows['next']['observation'].tolist(), rows['next']['terminated'][:, 0].tolist()
    ([1.0, 2.0], [False, True])
  """
  episodes = [{rlds_names.STEPS: nest_paths.nest_from_paths(flat)}
              for flat in offline.stored_episodes(buffer, open_episodes, op='to_ted')]
  return ted_lib.to_ted(episodes, one_step=one_step, last_step=last_step)
