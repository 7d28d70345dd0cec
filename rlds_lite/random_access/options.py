"""The knobs of a random-access pipeline, grouped: hosts, epochs, outputs, reading.

`sample_batches`, `plan`, `SampleIterator` and `grain_batches` take them as
``sharding=``, ``epochs=``, ``outputs=`` and ``reading=``; their flat keywords
of before (``num_hosts=2, num_epochs=1, ...``) still work and warn once.

Example:
  >>> Sharding(num_hosts=2, host=1)
  Sharding(num_hosts=2, host=1)
"""

import dataclasses
from typing import Any, Dict, NamedTuple, Optional, Tuple

import tensorflow as tf

from rlds_lite import option_objects

__all__ = ['Epochs', 'Outputs', 'ReadOptions', 'Sharding']


@dataclasses.dataclass(frozen=True)
class Sharding:
  """Hosts sharing each global batch of ``batch_size * num_hosts`` samples.

  Attributes:
    num_hosts: the hosts.
    host: this host, in ``[0, num_hosts)``.

  Example:
    >>> Sharding(num_hosts=4, host=3).host
    3
  """
  num_hosts: int = 1
  host: int = 0


@dataclasses.dataclass(frozen=True)
class Epochs:
  """How many epochs, the last batch, and the permutation of each epoch.

  Attributes:
    num_epochs: read this many epochs and stop (one source); None: forever.
    drop_remainder: with ``num_epochs``, drop a last batch smaller than the
      global batch (so all hosts give the same number of batches).
    order: ``'spread'`` (each batch holds as many episodes as it can) or
      ``'uniform'`` (a uniform permutation); see `Sampler`.

  Example:
    >>> Epochs(num_epochs=1)
    Epochs(num_epochs=1, drop_remainder=False, order='spread')
  """
  num_epochs: Optional[int] = None
  drop_remainder: bool = False
  order: str = 'spread'


@dataclasses.dataclass(frozen=True)
class Outputs:
  """What a batch holds besides the kind's fields: frames, sample info.

  Attributes:
    decode_images: decode image fields (else the encoded strings).
    image_size: ``(height, width)`` to decode frames at (None: as stored).
    sample_info: add ``episode_index`` and ``sample_id`` (and, mixing,
      ``dataset_index``) ``[B]`` int64.

  Example:
    >>> Outputs(image_size=(64, 64))
    Outputs(decode_images=True, image_size=(64, 64), sample_info=False)
  """
  decode_images: bool = True
  image_size: Optional[Tuple[int, int]] = None
  sample_info: bool = False


@dataclasses.dataclass(frozen=True)
class ReadOptions:
  """How the chunk records are read: memory-mapped or not, in parallel.

  Attributes:
    mapped_budget: a split of at most this many shard bytes is
      memory-mapped, a larger one read with ``pread`` (None: 64 MiB,
      `storage.DEFAULT_MAPPED_BUDGET`; for sources given as paths).
    num_parallel_calls: reads in parallel.
    prefetch: batches prefetched (0: none).

  Example:
    >>> ReadOptions(prefetch=4).prefetch
    4
  """
  mapped_budget: Optional[int] = None
  num_parallel_calls: Optional[int] = tf.data.AUTOTUNE
  prefetch: int = 2


GROUPS = {'sharding': Sharding, 'epochs': Epochs, 'outputs': Outputs,
          'reading': ReadOptions}
"""The keyword of each group, and its class."""
FLAT = {f.name: group for group, cls in GROUPS.items()
        for f in dataclasses.fields(cls)}
"""Each flat keyword of before the groups -> its group's keyword."""


class Options(NamedTuple):
  """One call's groups, defaults filled in."""
  sharding: Sharding
  epochs: Epochs
  outputs: Outputs
  reading: ReadOptions


def sort_options(op: str, groups: Dict[str, Any], flat: Dict[str, Any]
                 ) -> Options:
  """The `Options` of a call: its groups (None: the defaults) and flat keywords.

  Flat keywords (``num_epochs=1``) go into their group; they warn once per
  ``op`` (``DeprecationWarning``, at the first caller outside rlds_lite) and
  may not sit beside their group.

  Example:
    >>> sort_options('sample_batches', {'epochs': Epochs(num_epochs=1)},
    ...              {}).epochs.num_epochs
    1
  """
  unknown = sorted(set(flat) - set(FLAT))
  if unknown:
    raise TypeError(f'{op}() got an unexpected keyword argument '
                    f'{unknown[0]!r}')
  values, spelt = {}, []
  for name, cls in GROUPS.items():
    old = {k: v for k, v in flat.items() if FLAT[k] == name}
    given = groups.get(name)
    if old and given is not None:
      raise TypeError(f'{op}: pass {sorted(old)} in {name}={cls.__name__}'
                      '(...), not beside it.')
    if given is None:
      given = cls(**old)
    elif not isinstance(given, cls):
      raise TypeError(f'{op}: {name} must be a {cls.__name__}(...), got '
                      f'{type(given).__name__}.')
    if old:
      args = ', '.join(f'{k}={v!r}' for k, v in old.items())
      spelt.append(f'{name}={cls.__name__}({args})')
    values[name] = given
  if spelt:
    option_objects.warn_once(
        (op, 'options'), f'{op}: {", ".join(sorted(flat))} are now '
        f'{", ".join(spelt)} (rlds_lite.random_access); the old keywords will '
        'go in a later release.')
  return Options(**values)
