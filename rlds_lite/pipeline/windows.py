"""Shuffled batches of fixed-size windows of steps, straight from episodes.

Example:
  >>> import tensorflow as tf
  >>> steps = {'observation': tf.range(4)}
  >>> episodes = tf.data.Dataset.from_tensors({'steps': steps})
  >>> ds = windows_dataset(episodes, size=2, batch_size=3, shuffle=False)
  >>> [b['observation'].numpy().tolist() for b in ds]
  [[[0, 1], [1, 2], [2, 3]]]
"""

from typing import Any, Dict, Optional, Sequence, Union

import tensorflow as tf

from rlds_lite import dense
from rlds_lite import rlds_types
from rlds_lite import sample_kinds
from rlds_lite.pipeline import inputs
from rlds_lite.pipeline import pools


def windows_dataset(episodes: tf.data.Dataset,
                    size: int,
                    batch_size: int,
                    *,
                    shift: int = 1,
                    stride: int = 1,
                    drop_remainder: bool = True,
                    episode_fields: Union[str, Sequence[str]] = (),
                    shuffle: bool = True,
                    pool: str = 'auto',
                    pool_episodes: int = pools.DEFAULT_POOL_EPISODES,
                    episode_shuffle_buffer: int = 0,
                    seed: Optional[int] = None,
                    num_parallel_calls: Optional[int] = tf.data.AUTOTUNE,
                    deterministic: Optional[bool] = None,
                    drop_last_batch: bool = False,
                    prefetch: int = 2) -> tf.data.Dataset:
  """Batches of ``size``-step windows of all episodes, shuffled across episodes.

  The samples are exactly the windows ``rlds_lite.dense.windows`` (and
  ``transformations.batch`` per episode) makes, never across episodes; each
  appears once per pass over ``episodes`` (repeat ``episodes`` for more
  epochs). Windows are shuffled within pools of ``pool_episodes``
  consecutive episodes whose steps are stored once (see
  ``rlds_lite.pipeline.pools``): the window indices of a whole pool are
  permuted and windows gathered a few batches at a time (``pool='samples'``,
  memory about ``2 * pool_episodes * episode_bytes``), or windows are
  gathered a few at a time from each of ``pool_episodes`` open episodes in
  turn (``pool='episodes'``, for large steps such as images: memory about
  ``pool_episodes * episode_bytes``); ``'auto'`` picks by window size.
  Either way a batch mixes about ``min(pool_episodes, batch_size)``
  episodes.
  Unlike the RLDS recipe ``flat_map(batch) + shuffle(buffer) + batch``,
  there is no per-step ``tf.data`` element and no per-window shuffle buffer.

  Args:
    episodes: RLDS episodes, dense (``rlds_lite.load(..., dense=True)``) or
      with nested steps datasets (converted with ``dense.to_dense``).
    size: steps per window (positive), or a `rlds_lite.Windows` kind (which
      then holds ``shift``, ``stride`` and ``drop_remainder``).
    batch_size: windows per batch (positive).
    shift: steps between the starts of consecutive windows (positive).
    stride: steps between consecutive elements of a window (positive).
    drop_remainder: drop the windows that would run past an episode's end;
      if False they are zero-padded and a ``'mask'`` ``[B, size]`` is added,
      as ``dense.windows`` does.
    episode_fields: episode metadata fields (e.g. ``'episode_id'``) to copy
      into every window as ``[B, ...]``.
    shuffle: shuffle (else windows come in episode order, deterministic).
    pool: ``'auto'``, ``'samples'`` or ``'episodes'``: how to pool windows
      for shuffling (same windows either way).
    pool_episodes: episodes per pool (positive): more mixes more episodes
      per batch and takes more memory.
    episode_shuffle_buffer: episodes in an episode-level shuffle buffer
      before pooling (0: none; consider ``load(..., shuffle_files=True)``).
    seed: seed for reproducible shuffling.
    num_parallel_calls: parallelism of the per-episode ``map`` (and of the
      gathers of ``pool='samples'``).
    deterministic: that ``map``'s ``deterministic`` (False may be faster but
      makes the order irreproducible).
    drop_last_batch: drop a final batch smaller than ``batch_size`` (then
      the batch dimension is static).
    prefetch: batches to prefetch (0: none).

  Returns:
    A dataset of dicts shaped like the steps with leaves ``[B, size, ...]``,
    plus ``'mask'`` (if ``drop_remainder`` is False) and the
    ``episode_fields`` (``[B, ...]``).

  Raises:
    TypeError: if ``episodes`` is not a dataset of episodes or an argument
      has the wrong type.
    ValueError: if ``size``, ``batch_size``, ``shift``, ``stride`` or
      ``pool_episodes`` is not positive, ``pool`` is unknown, or a field
      name collides.

  Example:
    >>> steps = {'observation': tf.range(3)}
    >>> episodes = tf.data.Dataset.from_tensors({'steps': steps, 'id': 9})
    >>> ds = windows_dataset(episodes, 2, 4, drop_remainder=False,
    ...                      episode_fields='id', shuffle=False)
    >>> batch = next(iter(ds))
    >>> batch['mask'].numpy().tolist(), batch['id'].numpy().tolist()
    ([[True, True], [True, True], [True, False]], [9, 9, 9])
  """
  op = 'windows_dataset'
  if isinstance(size, sample_kinds.Windows):
    if (shift, stride, drop_remainder) != (1, 1, True):
      raise TypeError(f'{op}: pass shift, stride and drop_remainder in the '
                      'kind (Windows(...)), not beside it.')
    size, shift, stride, drop_remainder = (size.size, size.shift, size.stride,
                                           size.drop_remainder)
  size = inputs.check_positive_int(size, 'size', op)
  shift = inputs.check_positive_int(shift, 'shift', op)
  stride = inputs.check_positive_int(stride, 'stride', op)
  inputs.check_positive_int(batch_size, 'batch_size', op)
  episodes = inputs.dense_episodes(episodes, op)
  step_fields = list(episodes.element_spec[rlds_types.STEPS])
  if not drop_remainder and dense.MASK in step_fields:
    raise ValueError(f'{op} adds the field {dense.MASK!r} (because '
                     'drop_remainder=False) but steps already has it; rename '
                     'it first.')
  episode_fields = inputs.check_episode_fields(
      episodes, episode_fields, step_fields + [dense.MASK], op)

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
      episodes, sampler, batch_size, shuffle=shuffle, pool=pool,
      pool_episodes=pool_episodes,
      episode_shuffle_buffer=episode_shuffle_buffer, seed=seed,
      num_parallel_calls=num_parallel_calls, deterministic=deterministic,
      drop_last_batch=drop_last_batch, prefetch=prefetch, op=op)
