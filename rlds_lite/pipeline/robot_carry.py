"""Frames a segment hands to the next segment of its episode, not decoded twice.

An episode's segments come out in a random rotation of their time order
(``rotation_order``), so each but the first follows its predecessor;
``plan_carry`` splits a segment's frames into imports (from its predecessor)
and its own, and ``pool_link`` carries the exported frames from pool to pool.
Each used frame is decoded about once per pass (docs/pooling.md).

Example:
  >>> import tensorflow as tf
  >>> rotation_order(5, tf.constant([2, 0])).numpy().tolist()
  [2, 3, 4, 0, 1]
"""

from typing import Any, Callable, Dict, Tuple

import tensorflow as tf

from rlds_lite.dense import indexing
from rlds_lite.pipeline import pools

Frames = Dict[str, tf.Tensor]
KEY, PRED = 'key', 'pred'
NUM_IMPORTS, IMPORTS = 'num_imports', 'imports'
NUM_EXPORTS, EXPORTS = 'num_exports', 'exports'
_SLOT, _FRAMES = 'slot', 'frames'
_KEY_SHIFT = 32
"""A segment's key: its episode's number in the pass ``<< _KEY_SHIFT`` plus
its time index in the episode."""


def rotation_order(num: Any, seed: tf.Tensor) -> tf.Tensor:
  """``range(num)`` rotated to start at a seeded random index.

  Example:
    >>> rotation_order(4, tf.constant([1, 0])).numpy().tolist()
    [1, 2, 3, 0]
  """
  num = tf.cast(num, tf.int32)
  start = tf.random.stateless_uniform([], seed, 0, tf.maximum(num, 1),
                                      dtype=tf.int32)
  return (start + tf.range(num)) % tf.maximum(num, 1)


def plan_carry(steps: tf.Tensor, num_frames: tf.Tensor, positions: tf.Tensor,
               order: tf.Tensor, width: int) -> Dict[str, tf.Tensor]:
  """Which frames each segment imports from its predecessor (time order).

  Args:
    steps: ``[num, max_frames]`` each segment's distinct frame steps
      (``robot_samples.cut_segments``), ``num_frames`` ``[num]`` of them.
    num_frames: ``[num]``.
    positions: ``[num, size, F]`` its samples' frames, as positions in
      ``steps``.
    order: the order the segments come out in (a rotation): segment ``k``
      imports only if ``k - 1`` comes out before it.
    width: imports per segment at most (the history's reach back,
      ``(history - 1) * history_stride``).

  Returns:
    Per segment, in time order: ``own_steps`` ``[num, max_frames]`` (the
    frames it decodes, first ``num_own``), ``num_own``, ``import_steps``
    ``[num, width]`` (first ``num_imports``), ``num_imports``, ``exports``
    ``[num, width]`` (codes of the frames its successor imports, first
    ``num_exports``), ``num_exports`` and ``positions`` as codes (own frame
    ``j`` -> ``j``, import slot ``i`` -> ``i - num_imports``).

  Example:
    >>> # History 2, segments of 2 samples: segment 1 needs frame 1 again.
    >>> plan = plan_carry(tf.constant([[0, 1], [1, 2]]), tf.constant([2, 2]),
    ...                   tf.constant([[[0, 0], [0, 1]], [[0, 1], [1, 1]]]),
    ...                   order=tf.constant([0, 1]), width=1)
    >>> plan['num_own'].numpy().tolist(), plan['import_steps'].numpy().tolist()
    ([2, 1], [[0], [1]])
    >>> plan['exports'].numpy().tolist(), plan['num_exports'].numpy().tolist()
    ([[1], [0]], [1, 0])
    >>> plan['positions'][1].numpy().tolist()   # import, then own frame 0
    [[-1, 0], [0, 0]]
  """
  num = tf.shape(steps)[0]
  max_frames = tf.shape(steps)[1]
  valid = tf.range(max_frames)[tf.newaxis, :] < num_frames[:, tf.newaxis]
  rank = tf.math.invert_permutation(order)
  segment = tf.range(num)
  follows = (segment > 0) & (tf.roll(rank, 1, 0) < rank)
  prev_steps, prev_valid = tf.roll(steps, 1, 0), tf.roll(valid, 1, 0)
  same = ((steps[:, :, tf.newaxis] == prev_steps[:, tf.newaxis, :]) &
          valid[:, :, tf.newaxis] & prev_valid[:, tf.newaxis, :])
  shared = tf.reduce_any(same, 2) & follows[:, tf.newaxis]
  slot = tf.cumsum(tf.cast(shared, tf.int32), 1, exclusive=True)
  take = shared & (slot < width)
  num_imports = tf.reduce_sum(tf.cast(take, tf.int32), 1)
  own = valid & ~take
  own_rank = tf.cumsum(tf.cast(own, tf.int32), 1, exclusive=True)
  code = tf.where(take, slot - num_imports[:, tf.newaxis], own_rank)
  own_first = tf.argsort(tf.cast(~own, tf.int32), 1, stable=True)
  take_first = tf.argsort(tf.cast(~take, tf.int32), 1, stable=True)
  pad = tf.maximum(width - max_frames, 0)
  take_first = tf.pad(take_first, [[0, 0], [0, pad]])[:, :width]
  source = tf.minimum(tf.gather(_first_true(same), take_first, batch_dims=1),
                      tf.maximum(max_frames - 1, 0))   # Unused slots: any.
  import_codes = tf.gather(tf.roll(code, 1, 0), source, batch_dims=1)
  is_last = segment == num - 1
  return {
      'own_steps': tf.gather(steps, own_first, batch_dims=1),
      'num_own': num_frames - num_imports,
      'import_steps': tf.gather(steps, take_first, batch_dims=1),
      NUM_IMPORTS: num_imports,
      EXPORTS: tf.roll(import_codes, -1, 0),
      NUM_EXPORTS: tf.where(is_last, 0, tf.roll(num_imports, -1, 0)),
      'positions': tf.gather(code, positions, batch_dims=1),
  }


def segment_keys(episode_number: tf.Tensor, num: tf.Tensor,
                 num_imports: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
  """``(key, pred)`` ``[num]`` int64: each segment's and its predecessor's.

  ``pred`` is -1 for a segment that imports nothing.

  Example:
    >>> key, pred = segment_keys(tf.constant(1), 2, tf.constant([0, 1]))
    >>> key.numpy().tolist(), pred.numpy().tolist()   # episode 1 << 32
    ([4294967296, 4294967297], [-1, 4294967296])
  """
  key = tf.cast(episode_number, tf.int64) * (1 << _KEY_SHIFT) + tf.cast(
      tf.range(num), tf.int64)
  return key, tf.where(num_imports > 0, key - 1, tf.constant(-1, tf.int64))


def initial_state(frame_spec: Dict[str, tf.TensorSpec]) -> Dict[str, Any]:
  """The link's state before the first pool: no exported frames.

  Example:
    >>> state = initial_state({'image': tf.TensorSpec([None, 4, 4, 3],
    ...                                               tf.uint8)})
    >>> state['frames']['image'].shape.as_list()
    [0, 4, 4, 3]
  """
  return {KEY: tf.zeros([0], tf.int64), _SLOT: tf.zeros([0], tf.int32),
          _FRAMES: pools.zero_rows(frame_spec)}


def _first_true(mask: tf.Tensor) -> tf.Tensor:
  """Index of the first True along the last axis (its size if none)."""
  size = tf.shape(mask)[-1]
  return tf.reduce_min(tf.where(mask, tf.range(size), size), -1)


def pool_link(extras: Callable[[Dict[str, Any]], Dict[str, Any]],
              decode: Callable[[Frames], Frames],
              frame_spec: Dict[str, tf.TensorSpec]) -> pools.PoolLink:
  """The ``pools.PoolLink`` of segments planned by ``plan_carry``.

  ``extras`` gives a segment's rows (one each): ``KEY``, ``PRED``,
  ``NUM_IMPORTS``, ``NUM_EXPORTS``, ``IMPORTS`` (``{path: [1, width]}``
  encoded frames, first ``NUM_IMPORTS``) and ``EXPORTS`` (``[1, width]``
  codes, first ``NUM_EXPORTS``); ``decode`` decodes ``{path: [n]}`` encoded
  frames like the segments' own, of ``frame_spec``.

  A pool's steps are its segments' own frames, then the state's frames,
  then the imports no state row holds, decoded: no frame is copied out of
  the state, and the next state is one gather from the pool's steps.
  """

  def imports(state: Dict[str, Any], extras: Dict[str, Any]
              ) -> Tuple[Frames, Dict[str, Any]]:
    """Rows appended to the pool: the state's frames, the missing decoded."""
    importer, slot = pools.row_slots(extras[NUM_IMPORTS])
    wanted = tf.gather(extras[PRED], importer)
    match = ((wanted[:, tf.newaxis] == state[KEY][tf.newaxis, :]) &
             (slot[:, tf.newaxis] == state[_SLOT][tf.newaxis, :]))
    found = tf.reduce_any(match, 1)
    held = tf.shape(state[KEY])[0]
    missing = {path: tf.boolean_mask(tf.gather_nd(
                   frames, tf.stack([importer, slot], 1)), ~found)
               for path, frames in extras[IMPORTS].items()}
    decoded = tf.cond(tf.reduce_all(found),
                      lambda: pools.zero_rows(frame_spec),
                      lambda: decode(missing))
    rows = {path: tf.concat([state[_FRAMES][path], decoded[path]], 0)
            for path in decoded}
    pending = {
        # Each import's row among the appended ones.
        'source': tf.where(found, _first_true(match),
                           held + tf.cumsum(tf.cast(~found, tf.int32)) - 1),
        'kept': tf.where(~tf.reduce_any(match, 0)),   # State rows still held.
        KEY: state[KEY], _SLOT: state[_SLOT]}
    return rows, pending

  def finish(pending: Dict[str, Any], steps: Frames, index: tf.Tensor,
             extras: Dict[str, Any], num_steps: tf.Tensor,
             num_samples: tf.Tensor) -> Tuple[Dict[str, Any], tf.Tensor]:
    """Codes -> pool positions; the next state: kept rows and the exports."""
    num_imports = extras[NUM_IMPORTS]
    own_total = tf.reduce_sum(num_steps)
    own_start = tf.cumsum(num_steps, exclusive=True)
    import_start = tf.cumsum(num_imports, exclusive=True)
    source = tf.concat([pending['source'], [0]], 0)   # [0]: for own codes.
    last = tf.size(source) - 1

    def positions(shifted: tf.Tensor, element: tf.Tensor) -> tf.Tensor:
      """Pool positions of codes shifted by their element's own offset."""
      start = indexing.broadcast_mask(tf.gather(own_start, element), shifted)
      first = indexing.broadcast_mask(
          tf.gather(import_start + num_imports, element), shifted)
      code = shifted - start   # Own frames >= 0; import slots < 0.
      imported = tf.gather(source, tf.clip_by_value(first + code, 0, last))
      return tf.where(code >= 0, shifted, own_total + imported)

    index = positions(index, pools.row_slots(num_samples)[0])
    exporter, slot = pools.row_slots(extras[NUM_EXPORTS])
    codes = tf.gather_nd(extras[EXPORTS], tf.stack([exporter, slot], 1))
    at = positions(codes + tf.gather(own_start, exporter), exporter)
    key = tf.gather(extras[KEY], exporter)
    # An importer in this pool already decoded what it needed.
    later = tf.where(~tf.reduce_any(
        key[:, tf.newaxis] == extras[PRED][tf.newaxis, :], 1))[:, 0]
    kept = tf.cast(pending['kept'][:, 0], tf.int32)
    rows = tf.concat([own_total + kept, tf.gather(at, later)], 0)
    state = {KEY: tf.concat([tf.gather(pending[KEY], kept),
                             tf.gather(key, later)], 0),
             _SLOT: tf.concat([tf.gather(pending[_SLOT], kept),
                               tf.gather(slot, later)], 0),
             _FRAMES: {path: tf.gather(frames, rows)
                       for path, frames in steps.items()}}
    return state, index

  return pools.PoolLink(extras=extras, initial=initial_state(frame_spec),
                        imports=imports, finish=finish)
