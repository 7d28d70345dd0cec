"""Built-in environments by name: `make('catch', seed=0)`."""

from typing import Callable, Dict, Optional, Tuple

import dm_env

from rlds_lite.envs import catch
from rlds_lite.envs import reach

__all__ = ['make', 'names']

_REGISTRY: Dict[str, Callable[..., dm_env.Environment]] = {
    'catch': catch.Catch,
    'catch_pixels': catch.CatchPixels,
    'reach': reach.Reach,
}


def names() -> Tuple[str, ...]:
  """Names accepted by `make`, sorted.

  Example:
    >>> from rlds_lite.envs import registry
    >>> registry.names()
    ('catch', 'catch_pixels', 'reach')
  """
  return tuple(sorted(_REGISTRY))


def make(name: str, seed: Optional[int] = None,
         **kwargs) -> dm_env.Environment:
  """Creates the built-in environment `name` (one of `names()`), seeded with `seed`.

  `**kwargs` go to its constructor, e.g. `rows=6` (Catch), `height=64` (CatchPixels),
  `time_limit=100` (Reach).

  Example:
    >>> env = make('catch_pixels', seed=0, height=64, width=64)
    >>> env.observation_spec().shape
    (64, 64, 3)
    >>> type(make('reach', seed=0, time_limit=20)).__name__
    'Reach'
  """
  if name not in _REGISTRY:
    raise ValueError(
        f'Unknown environment `name` {name!r}; choose one of {list(names())}.')
  return _REGISTRY[name](seed=seed, **kwargs)
