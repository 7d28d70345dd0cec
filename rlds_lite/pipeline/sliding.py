"""Shuffled batches of steps through a sliding window of blocks of episodes.

The engine behind ``shuffled_steps``: every step once, a batch mixing a
window of ``num_blocks * block_episodes`` episodes while holding about
``(num_blocks + 3) / num_blocks`` of them (docs/pooling.md).

Example:
  >>> import tensorflow as tf
  >>> steps = tf.data.Dataset.range(6).map(
  ...     lambda e: {'episode': tf.fill([3], e), 'step': tf.range(3)})
  >>> batches = sliding_step_batches(steps, 4, block_episodes=1,
  ...                                num_blocks=3, seed=0)
  >>> rows = [(int(e), int(s)) for b in batches
  ...         for e, s in zip(b['episode'], b['step'])]
  >>> sorted(rows) == [(e, s) for e in range(6) for s in range(3)]  # once
  True
"""

from typing import Any, Dict, Optional, Tuple

import tensorflow as tf

from rlds_lite import op_context
from rlds_lite.dense import indexing
from rlds_lite.pipeline import inputs
from rlds_lite.pipeline import pools

__all__ = ['DEFAULT_NUM_BLOCKS', 'GATHER_BYTES', 'sliding_step_batches',
           'window_blocks']

DEFAULT_NUM_BLOCKS = 8
"""Blocks in the window: more means less memory per episode mixed."""
GATHER_BYTES = 1 << 18
"""About how many bytes of steps are gathered at once (they count in the
memory estimate of ``shuffling.estimate_memory``, so smaller than the
``pools.GATHER_BYTES`` of windows and transitions)."""

_graph_fn = tf.autograph.experimental.do_not_convert
Steps = Dict[str, Any]


def window_blocks(pool_episodes: int) -> Tuple[int, int]:
  """``(num_blocks, block_episodes)`` of a window mixing ``pool_episodes``.

  Example:
    >>> window_blocks(64), window_blocks(3), window_blocks(10)
    ((8, 8), (3, 1), (8, 2))
  """
  num_blocks = min(DEFAULT_NUM_BLOCKS, pool_episodes)
  return num_blocks, -(-pool_episodes // num_blocks)


def _unit_index(emitted: tf.Tensor, target: tf.Tensor,
                perms: Tuple[tf.Tensor, ...]) -> tf.Tensor:
  """``[U, 2]`` (slot, row): rows ``perms[q][emitted[q]:target[q]]`` of each."""
  pieces = []
  for slot, perm in enumerate(perms):
    rows = perm[emitted[slot]:target[slot]]
    pieces.append(tf.stack([tf.fill(tf.shape(rows), slot), rows], axis=1))
  return tf.concat(pieces, axis=0)


def _window_step(num_blocks: int):
  """The ``scan`` step: a block in, the window of blocks and a unit out."""
  done_when_full = tf.range(num_blocks, 0, -1, dtype=tf.int32)

  @_graph_fn
  def step(state, element):
    ring, perms, sizes, emitted, count = state
    (block, final), seed = element
    block_seed, unit_seed = tf.unstack(
        tf.random.experimental.stateless_split(seed, 2))
    size = indexing.episode_length(block)
    window = ring + (block,)
    window_perms = perms + (pools.random_order(size, block_seed),)
    sizes = tf.concat([sizes, [size]], axis=0)
    emitted = tf.concat([emitted, [0]], axis=0)
    # Parts of each block out after this unit: none until the window is
    # full, all of them at the end of the input.
    parts = tf.where(count < num_blocks - 1, tf.zeros_like(done_when_full),
                     done_when_full)
    parts = tf.where(final, tf.fill([num_blocks], num_blocks), parts)
    target = parts * sizes // num_blocks
    unit = _unit_index(emitted, target, window_perms)
    unit = tf.gather(unit, pools.random_order(tf.shape(unit)[0], unit_seed))
    new_state = (window[1:], window_perms[1:], sizes[1:], target[1:],
                 count + 1)
    return new_state, (window, unit)

  return step


def _stitch(num_blocks: int):
  """``(window, piece) -> steps``: rows ``piece`` ((slot, row)) in order."""

  @_graph_fn
  def stitch(window: Tuple[Steps, ...], piece: tf.Tensor) -> Steps:
    slots, rows = piece[:, 0], piece[:, 1]
    if num_blocks == 1:
      return tf.nest.map_structure(lambda x: tf.gather(x, rows), window[0])
    positions, parts = [], []
    for slot in range(num_blocks):
      where = tf.cast(tf.where(tf.equal(slots, slot))[:, 0], tf.int32)
      positions.append(where)
      parts.append(tf.nest.map_structure(
          lambda x, w=where: tf.gather(x, tf.gather(rows, w)), window[slot]))
    return tf.nest.map_structure(
        lambda *xs: tf.dynamic_stitch(positions, list(xs)), *parts)

  return stitch


def sliding_step_batches(steps: tf.data.Dataset,
                         batch_size: int,
                         *,
                         block_episodes: int,
                         num_blocks: int = DEFAULT_NUM_BLOCKS,
                         seed: Optional[int] = None,
                         drop_last_batch: bool = False,
                         prefetch: int = 2,
                         num_parallel_calls: Optional[int] = tf.data.AUTOTUNE,
                         op: Optional[str] = None) -> tf.data.Dataset:
  """Batches of the steps of ``steps``, shuffled in a sliding window.

  See the module docstring. Each step of ``steps`` comes out once per pass;
  a batch mixes about ``min(num_blocks * block_episodes, batch_size)``
  episodes; about ``num_blocks + 3`` blocks of ``block_episodes`` episodes
  are held (the window, the next unit's block, and the block being read and
  its concatenation).

  Args:
    steps: a dataset of dicts of ``[T, ...]`` tensors, one per episode (any
      per-episode values already repeated along ``T``).
    batch_size: steps per batch (positive).
    block_episodes: episodes per block (positive).
    num_blocks: blocks in the window (positive; 1: plain pools of
      ``block_episodes`` episodes).
    seed: seed of the permutations (None: random); reshuffled every pass.
    drop_last_batch: drop a last batch smaller than ``batch_size``.
    prefetch: batches to prefetch (0: none).
    num_parallel_calls: parallelism of the gathers.
    op: deprecated (errors name the public function they escape).

  Returns:
    A dataset of dicts of ``[B, ...]`` tensors.

  Example:
    >>> steps = tf.data.Dataset.from_tensors({'x': tf.range(5)}).repeat(2)
    >>> ds = sliding_step_batches(steps, 4, block_episodes=1, num_blocks=2,
    ...                           seed=1, drop_last_batch=True)
    >>> [b['x'].shape.as_list() for b in ds]
    [[4], [4]]
  """
  with op_context.deprecated_op(op, 'sliding_step_batches',
                                'sliding_step_batches'):
    batch_size = inputs.check_positive_int(batch_size, 'batch_size')
    block_episodes = inputs.check_positive_int(block_episodes,
                                               'block_episodes')
    num_blocks = inputs.check_positive_int(num_blocks, 'num_blocks')
    prefetch = inputs.check_non_negative_int(prefetch, 'prefetch')
  blocks = steps.window(block_episodes).map(
      lambda window: pools.concat_rows(tf.data.Dataset.zip(window)))
  empty = pools.zero_rows(blocks.element_spec)
  tagged = blocks.map(lambda block: (block, False)).concatenate(
      tf.data.Dataset.from_tensors((empty, True)))   # The flush.
  initial = (tuple(empty for _ in range(num_blocks - 1)),
             tuple(tf.zeros([0], tf.int32) for _ in range(num_blocks - 1)),
             tf.zeros([num_blocks - 1], tf.int32),
             tf.zeros([num_blocks - 1], tf.int32),
             tf.constant(0, tf.int64))
  units = tf.data.Dataset.zip(tagged, pools.pool_seeds(seed)).scan(
      initial, _window_step(num_blocks))
  units = units.filter(lambda window, unit: tf.shape(unit)[0] > 0)
  gather = pools.gather_size(batch_size, pools.sample_bytes(empty),
                            GATHER_BYTES)

  @_graph_fn
  def pieces(window: Tuple[Steps, ...], unit: tf.Tensor) -> tf.data.Dataset:
    return tf.data.Dataset.zip(
        tf.data.Dataset.from_tensors(window).repeat(),
        tf.data.Dataset.from_tensors(unit).rebatch(gather))

  batches = units.prefetch(1).flat_map(pieces).map(
      _stitch(num_blocks), num_parallel_calls=num_parallel_calls).rebatch(
          batch_size, drop_remainder=drop_last_batch)
  return batches.prefetch(prefetch) if prefetch else batches
