"""Shuffled batches of fixed-size windows of steps (`rlds_lite.Windows`), straight from episodes.

Example:
  >>> import tensorflow as tf
  >>> steps = {'observation': tf.range(4)}
  >>> episodes = tf.data.Dataset.from_tensors({'steps': steps})
  >>> ds = windows_dataset(episodes, Windows(size=2), 3, shuffle=False)
  >>> [b['observation'].numpy().tolist() for b in ds]
  [[[0, 1], [1, 2], [2, 3]]]
"""

import dataclasses
from typing import Any, Dict, Optional, Sequence, Union

import tensorflow as tf

from rlds_lite import dense
from rlds_lite import rlds_types
from rlds_lite import op_context
from rlds_lite import option_objects
from rlds_lite.sample_kinds import Windows
from rlds_lite.pipeline import inputs
from rlds_lite.pipeline import pools

_KIND_FIELDS = tuple(f.name for f in dataclasses.fields(Windows))
_OP = 'windows_dataset'


@op_context.named(_OP)
def windows_dataset(episodes: tf.data.Dataset,
                    kind: Any = None,
                    batch_size: Optional[int] = None,
                    *,
                    episode_fields: Union[str, Sequence[str]] = (),
                    shuffle: bool = True,
                    seed: Optional[int] = None,
                    drop_last_batch: bool = False,
                    pooling: Optional[pools.Pooling] = None,
                    **legacy: Any) -> tf.data.Dataset:
  """Batches of windows of steps of all episodes, shuffled across episodes.

  The samples are exactly those of ``rlds_lite.dense.windows`` (never across
  episodes), each once per pass over ``episodes``, shuffled within pools of
  consecutive episodes whose steps are stored once (`rlds_lite.pipeline.pools`):
  a batch mixes about ``min(pool_episodes, batch_size)`` episodes.

  Args:
    episodes: RLDS episodes, dense (``rlds_lite.load(..., dense=True)``) or
      with nested steps datasets.
    kind: a `rlds_lite.Windows` (size, shift, stride, drop_remainder; with
      ``drop_remainder=False`` a ``'mask'`` ``[B, size]`` is added).
    batch_size: windows per batch.
    episode_fields: episode metadata (e.g. ``'episode_id'``) copied into
      every window as ``[B, ...]``.
    shuffle: shuffle (else windows come in episode order).
    seed: seed of the shuffling.
    drop_last_batch: drop a last batch smaller than ``batch_size``.
    pooling: a `Pooling` (pool mode and size, episode shuffle buffer,
      parallelism, prefetch).
    **legacy: the keywords of before kinds (``size=``, ``shift=``,
      ``stride=``, ``drop_remainder=``, or an int ``size`` as ``kind``) and
      `Pooling`'s fields, still taken, warning once.

  Returns:
    A dataset of dicts shaped like the steps with leaves ``[B, size, ...]``
    (plus ``'mask'`` and the ``episode_fields``).

  Example:
    >>> steps = {'observation': tf.range(3)}
    >>> episodes = tf.data.Dataset.from_tensors({'steps': steps, 'id': 9})
    >>> ds = windows_dataset(episodes, Windows(2, drop_remainder=False), 4,
    ...                      episode_fields='id', shuffle=False)
    >>> batch = next(iter(ds))
    >>> batch['mask'].numpy().tolist(), batch['id'].numpy().tolist()
    ([[True, True], [True, True], [True, False]], [9, 9, 9])
  """
  kind, pooling, batch_size = _sorted_call(kind, batch_size, pooling,
                                           legacy)
  size, shift, stride, drop_remainder = (kind.size, kind.shift, kind.stride,
                                         kind.drop_remainder)
  episodes = inputs.dense_episodes(episodes)
  step_fields = list(episodes.element_spec[rlds_types.STEPS])
  if not drop_remainder and dense.MASK in step_fields:
    raise ValueError(f'adds the field {dense.MASK!r} (because '
                     'drop_remainder=False) but steps already has it; rename '
                     'it first.')
  episode_fields = inputs.check_episode_fields(
      episodes, episode_fields, step_fields + [dense.MASK])

  def samples(episode: Dict[str, Any]) -> Dict[str, Any]:
    out = dense.windows(episode[rlds_types.STEPS], size, shift, stride,
                        bool(drop_remainder))
    num = tf.shape(tf.nest.flatten(out)[0])[0]
    out.update(inputs.episode_values(episode, episode_fields, num))
    return out

  def plan(episode: Dict[str, Any]) -> pools.Plan:
    steps = episode[rlds_types.STEPS]
    length = dense.episode_length(steps)
    index = dense.window_indices(length, size, shift, stride,
                                 bool(drop_remainder))
    values = inputs.episode_values(episode, episode_fields, tf.shape(index)[0])
    if not drop_remainder:
      values[dense.MASK] = index < length
      index = tf.minimum(index, length - 1)
    return steps, index, values

  def assemble(steps: Dict[str, Any], index: tf.Tensor,
               values: Dict[str, Any]) -> Dict[str, Any]:
    out = dense.gather_steps(steps, index, values.get(dense.MASK))
    out.update(values)
    return out

  sampler = pools.Sampler(samples, plan, assemble, steps_per_sample=size)
  return pools.pooled_batches(
      episodes, sampler, batch_size, shuffle=shuffle, seed=seed,
      drop_last_batch=drop_last_batch, pooling=pooling)


def _sorted_call(kind: Any, batch_size: Any, pooling: Any,
                 legacy: Dict[str, Any]):
  """``(Windows, Pooling, batch_size)`` of a call, old keywords too."""
  option_objects.check_keywords(_OP, legacy,
                                  _KIND_FIELDS + pools.POOLING_FIELDS)
  kind_args = {k: v for k, v in legacy.items() if k in _KIND_FIELDS}
  pool_args = {k: v for k, v in legacy.items() if k not in kind_args}
  if isinstance(kind, Windows) and kind_args:
    raise TypeError(f'pass shift, stride and drop_remainder in the '
                    'kind (Windows(...)), not beside it.')
  if kind is not None and not isinstance(kind, Windows):
    if 'size' in kind_args or not inputs.is_int(kind):
      raise TypeError(f'kind must be a Windows(...), got '
                      f'{type(kind).__name__}.')
    kind_args['size'] = kind   # The size, positional as before kinds.
    kind = None
  if kind is None and 'size' not in kind_args:
    raise TypeError(f"{_OP}() missing 1 required argument: 'kind' (a "
                    'Windows(...))')
  kind = option_objects.knobs_object(Windows, kind, kind_args, _OP,
                                       'Windows(...)')
  pooling = option_objects.knobs_object(pools.Pooling, pooling, pool_args,
                                          _OP, 'pooling=Pooling(...)')
  if batch_size is None:
    raise TypeError(f"{_OP}() missing 1 required argument: 'batch_size'")
  return kind, pooling, inputs.check_positive_int(batch_size, 'batch_size')
