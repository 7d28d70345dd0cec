"""Shuffled training batches from dense episodes, through pools of episodes whose steps are stored once.

The engine behind ``windows_dataset`` and ``transitions_dataset``: a
``Sampler`` says how an episode becomes samples, a `Pooling` how they are
pooled (``'samples'`` or ``'episodes'`` mode; docs/pooling.md).

Example:
  >>> import tensorflow as tf
  >>> episodes = tf.data.Dataset.from_tensors({'steps': {'x': tf.range(3)}})
  >>> sampler = Sampler(
  ...     samples=lambda e: e['steps'],
  ...     plan=lambda e: (e['steps'], tf.range(3)[:, None], {}),
  ...     assemble=lambda steps, index, values: {
  ...         'x': tf.gather(steps['x'], index[:, 0])})
  >>> for pool in ('samples', 'episodes'):
  ...   ds = pooled_batches(episodes.repeat(2), sampler, 4, shuffle=False,
  ...                       pooling=Pooling(pool=pool))
  ...   print([b['x'].numpy().tolist() for b in ds])
  [[0, 1, 2, 0], [1, 2]]
  [[0, 1, 2, 0], [1, 2]]
"""

import dataclasses
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple

import tensorflow as tf

from rlds_lite import rlds_types
from rlds_lite import op_context
from rlds_lite import option_objects
from rlds_lite.dense import indexing
from rlds_lite.pipeline import inputs

Plan = Tuple[Dict[str, Any], tf.Tensor, Dict[str, Any]]


class Sampler(NamedTuple):
  """How one dense episode becomes samples (see the module docstring).

  Attributes:
    samples: episode -> its samples, a dict of ``[N, ...]`` tensors.
    plan: episode -> ``(steps, index, values)``: the step fields to keep
      (``[T, ...]``), int32 step indices of the samples (``[N, ...]``) and
      per-sample tensors (a dict of ``[N, ...]``).
    assemble: ``(steps, index, values) -> samples`` for rows of a plan;
      ``assemble(*plan(e))`` must equal ``samples(e)``.
    steps_per_sample: about how many steps' worth of data a sample holds
      (for ``pool='auto'`` and the gather size of ``'samples'`` mode).
    gather_size: samples ``'samples'`` mode gathers at once (a multiple of
      the batch size; None: about ``GATHER_BYTES`` of them, sized from the
      step spec, where a string counts 32 bytes). Give it when the spec
      says too little, e.g. for encoded images held as strings.
    link: state handed from each pool to the next (``PoolLink``; shuffled
      ``'samples'`` mode only), or None.
  """
  samples: Callable[[Dict[str, Any]], Dict[str, Any]]
  plan: Callable[[Dict[str, Any]], Plan]
  assemble: Callable[[Dict[str, Any], tf.Tensor, Dict[str, Any]],
                     Dict[str, Any]]
  steps_per_sample: int = 1
  gather_size: Optional[int] = None
  link: Optional['PoolLink'] = None


class PoolLink(NamedTuple):
  """State handed from each pool to the next (``'samples'`` mode, shuffled).

  ``robot_samples_dataset`` uses it to hand a segment's last decoded frames
  to the next segment of its episode, which sits in a later pool.

  Attributes:
    extras: element -> a dict of tensors with a leading row axis, the same
      number of rows in each; a pool's are concatenated along it, in
      element order.
    initial: the state before the first pool.
    imports: ``(state, extras) -> (rows, pending)``: step rows appended
      after the pool's own steps (in the same copy), and what ``finish``
      needs of the state.
    finish: ``(pending, steps, index, extras, num_steps, num_samples) ->
      (state, index)``, called before the pool's samples are permuted:
      ``steps`` are the pool's steps (its elements', then the rows),
      ``index`` its samples' step indices shifted by their element's offset
      (in element order), ``num_steps`` and ``num_samples`` ``[elements]``.
  """
  extras: Callable[[Dict[str, Any]], Dict[str, Any]]
  initial: Any
  imports: Callable[[Any, Dict[str, Any]], Tuple[Dict[str, Any], Any]]
  finish: Callable[..., Tuple[Any, tf.Tensor]]


POOLS = ('auto', 'samples', 'episodes')
"""The pooling modes of ``pooled_batches``."""
DEFAULT_POOL_EPISODES = 64
"""Default episodes per pool (``'samples'``) or open (``'episodes'``)."""
AUTO_EPISODES_ABOVE = 16 << 10
"""``pool='auto'`` uses ``'episodes'`` for samples larger than this (bytes)."""
GATHER_BYTES = 1 << 22
"""About how many bytes of samples ``'samples'`` mode gathers at once.

Large enough that the per-gather costs of ``tf.data`` (a ``map`` call, a
``flat_map`` element, nine ops for nine fields) are small next to the copy
itself: for windows of vector steps 4 MiB gathers cost ~30% less CPU per
batch than 256 KiB ones (``benchmarks/RESULTS.md``, Fast path).
"""
_STEPS = 'steps'
_INDEX = 'index'
_VALUES = 'values'
_NUM_STEPS = 'num_steps'
_NUM_SAMPLES = 'num_samples'
_EXTRAS = 'extras'

# The functions given to tf.data run as plain graph code: no autograph
# conversion (they have no Python control flow on tensors).
_graph_fn = tf.autograph.experimental.do_not_convert
_OP = 'pooled_batches'


def sample_bytes(spec: Any) -> int:
  """Approximate bytes of one sample (or step) of a spec; strings count 32.

  Example:
    >>> sample_bytes({'x': tf.TensorSpec([None, 4, 2], tf.float32)})
    32
  """
  total = 0
  for leaf in tf.nest.flatten(spec):
    count = 1
    for d in leaf.shape.as_list()[1:]:
      count *= d or 1
    total += count * (32 if leaf.dtype == tf.string else leaf.dtype.size)
  return max(total, 1)


def gather_size(batch_size: int, sample_size: int,
                max_bytes: int = GATHER_BYTES) -> int:
  """Samples gathered at once: a multiple of ``batch_size``, ~``max_bytes``.

  Example:
    >>> gather_size(256, 444), gather_size(256, 84 * 84 * 3 * 4)
    (9216, 256)
    >>> gather_size(256, 444, max_bytes=1 << 18)
    512
  """
  return batch_size * max(1, max_bytes // (batch_size * sample_size))


def pool_seeds(seed: Optional[int]) -> tf.data.Dataset:
  """Per-pool stateless seeds: reproducible with ``seed``, new every epoch."""
  return tf.data.Dataset.random(
      seed=seed, rerandomize_each_iteration=True).batch(2)


def random_order(n: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
  """A seeded (stateless) random permutation of ``range(n)``."""
  return tf.random.experimental.stateless_shuffle(tf.range(n), seed=seed)


_ALL_ROWS = tf.int64.max
"""A ``rebatch`` size no pool reaches: rebatching by it concatenates all."""


def zero_rows(spec: Any) -> Any:
  """Tensors of ``spec`` with no rows (unknown inner dims -> 0)."""
  return tf.nest.map_structure(
      lambda s: tf.zeros([0] + [d or 0 for d in s.shape.as_list()[1:]],
                         s.dtype), spec)


def concat_rows(rows: tf.data.Dataset) -> Any:
  """The elements of ``rows`` (leaves ``[n, ...]``) concatenated along rows."""
  empty = tf.data.Dataset.from_tensors(zero_rows(rows.element_spec))
  all_rows = rows.rebatch(_ALL_ROWS).concatenate(empty).take(1)
  return all_rows.get_single_element()


def own_rows(rows: tf.Tensor) -> tf.Tensor:
  """``rows`` copied into a buffer of their own (a few bytes per sample).

  A slice of a larger tensor along its first axis (an element of
  ``from_tensor_slices``, a part of ``rebatch``, ``x[:n]``) shares that
  tensor's buffer (a TF ``SubBuffer``); when ``rebatch`` meets one that it
  would pass on whole, TF logs ``Tensor RefCount not reliable if buf_ points
  to a SubBuffer`` at ERROR level, in the user's console (the camera
  pipeline's segments did, several lines a segment: its samplers copy the
  rows they pass on with this).

  Example:
    >>> own_rows(tf.constant([[1, 2], [3, 4]])[:1]).numpy().tolist()
    [[1, 2]]
  """
  return tf.gather(rows, tf.range(tf.shape(rows)[0]))


def row_slots(counts: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
  """``(element, slot)`` of each row when element ``e`` has ``counts[e]`` rows.

  The rows are consecutive per element; ``slot`` is a row's place in its
  element's rows.

  Example:
    >>> element, slot = row_slots(tf.constant([2, 0, 3]))
    >>> element.numpy().tolist(), slot.numpy().tolist()
    ([0, 0, 2, 2, 2], [0, 1, 0, 1, 2])
  """
  counts = tf.cast(counts, tf.int32)
  element = tf.repeat(tf.range(tf.shape(counts)[0]), counts)
  start = tf.cumsum(counts, exclusive=True)
  return element, tf.range(tf.shape(element)[0]) - tf.gather(start, element)


def spread_order(num_samples: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
  """A random order of a pool's samples that deals them out episode by episode.

  ``num_samples[e]`` samples belong to episode ``e`` (consecutive). Each
  episode's samples are shuffled, the episodes put in a random order, and
  the samples dealt round-robin: every episode's first sample, then every
  episode's second one, ... So any ``k`` consecutive samples of the order
  come from ``min(k, episodes)`` distinct episodes (while they last).

  Example:
    >>> order = spread_order(tf.constant([3, 1, 2]), tf.constant([0, 1]))
    >>> sorted(order.numpy().tolist())
    [0, 1, 2, 3, 4, 5]
    >>> episode = [0, 0, 0, 1, 2, 2]
    >>> len({episode[i] for i in order.numpy()[:3]})
    3
  """
  # The i-th sample of the grouped order (episodes kept in place, each
  # shuffled within) has episode ``episode[i]`` and rank ``rank[i]`` in it.
  episode, rank = row_slots(num_samples)
  episodes = tf.shape(num_samples)[0]
  within_seed, episode_seed = tf.unstack(
      tf.random.experimental.stateless_split(seed, 2))
  jitter = tf.random.stateless_uniform(tf.shape(episode), within_seed,
                                       dtype=tf.float64)
  grouped = tf.argsort(tf.cast(episode, tf.float64) + jitter, stable=True)
  slot = tf.gather(random_order(episodes, episode_seed), episode)
  key = tf.cast(rank, tf.int64) * tf.cast(episodes, tf.int64) + tf.cast(
      slot, tf.int64)
  return tf.gather(grouped, tf.argsort(key, stable=True))


def _pool(plans: Dict[str, Any], seed: tf.Tensor, spread: bool = False,
          link: Optional[PoolLink] = None, carried: Any = ()
          ) -> Tuple[Dict[str, Any], Any]:
  """One pool: the plans of a window of episodes, concatenated and permuted.

  The steps of the pool's episodes are concatenated (each step once, not
  once per sample), each episode's sample indices shifted by the episode's
  offset in them, ``link`` applied (with its state ``carried``), and the
  samples (indices and values) permuted together (``spread``: in a
  ``spread_order``). Returns the pool and the link's new state.
  """
  steps = tf.data.Dataset.zip(plans[_STEPS])
  if link is not None:
    extras = concat_rows(tf.data.Dataset.zip(plans[_EXTRAS]))
    rows, carried = link.imports(carried, extras)
    steps = steps.concatenate(tf.data.Dataset.from_tensors(rows))
  steps = concat_rows(steps)
  index, values = concat_rows(
      tf.data.Dataset.zip((plans[_INDEX], plans[_VALUES])))
  num_steps, num_samples = tf.data.Dataset.zip(
      (plans[_NUM_STEPS], plans[_NUM_SAMPLES])).batch(
          _ALL_ROWS).get_single_element()
  shift = tf.repeat(tf.cumsum(num_steps, exclusive=True), num_samples)
  index += indexing.broadcast_mask(shift, index)
  if link is not None:
    carried, index = link.finish(carried, steps, index, extras, num_steps,
                                 num_samples)
  if spread:
    order = spread_order(num_samples, seed)
  else:
    order = random_order(tf.shape(index)[0], seed)
  index, values = tf.nest.map_structure(lambda x: tf.gather(x, order),
                                        (index, values))
  return {_STEPS: steps, _INDEX: index, _VALUES: values}, carried


def _pooler(batch_size: int, spread: bool = False,
            link: Optional[PoolLink] = None) -> Callable[..., Any]:
  """``scan`` step: a window of plans -> its pool and the size of its head.

  The state is the number of samples in the last, incomplete batch so far
  (and the ``link``'s state); a pool's head (its first samples) completes
  it, so that the later parts (multiples of ``batch_size``) fall on batch
  boundaries and ``rebatch`` passes them on as slices, without copies.
  """

  @_graph_fn
  def pool_step(state: Tuple[tf.Tensor, Any],
                window: Tuple[Dict[str, Any], tf.Tensor]) -> Any:
    pending, carried = state
    pool, carried = _pool(*window, spread=spread, link=link, carried=carried)
    num = tf.shape(pool[_INDEX], out_type=tf.int64)[0]
    head = tf.minimum((batch_size - pending) % batch_size, num)
    return ((pending + num) % batch_size, carried), (pool, head)

  return pool_step


def _parts(gather: int) -> Callable[[Dict[str, Any], tf.Tensor],
                                    tf.data.Dataset]:
  """A pool -> ``(steps, (index, values))``: its head, then ``gather`` each."""

  @_graph_fn
  def parts(pool: Dict[str, Any], head: tf.Tensor) -> tf.data.Dataset:
    samples = (pool[_INDEX], pool[_VALUES])
    first = tf.data.Dataset.from_tensors(
        tf.nest.map_structure(lambda x: x[:head], samples)).take(
            tf.minimum(head, 1))
    rest = tf.data.Dataset.from_tensors(
        tf.nest.map_structure(lambda x: x[head:], samples)).rebatch(gather)
    return tf.data.Dataset.zip(
        tf.data.Dataset.from_tensors(pool[_STEPS]).repeat(),
        first.concatenate(rest))

  return parts


def _step_pools(episodes: tf.data.Dataset, sampler: Sampler,
                batch_size: int, pool_episodes: int, gather: int,
                seed: Optional[int], num_parallel_calls: Optional[int],
                deterministic: Optional[bool], spread: bool = False
                ) -> tf.data.Dataset:
  """``'samples'`` mode: pools of ``pool_episodes`` episodes' steps, permuted.

  Each pool holds the steps of ``pool_episodes`` consecutive episodes once
  and the step indices of all their samples in a random order; a parallel
  ``map`` gathers the samples ``gather`` at a time (a multiple of
  ``batch_size``, aligned on batch boundaries).
  """

  @_graph_fn
  def plan(episode: Dict[str, Any]) -> Dict[str, Any]:
    steps, index, values = sampler.plan(episode)
    index = tf.cast(index, tf.int32)
    plan = {_STEPS: steps, _INDEX: index, _VALUES: values,
            _NUM_STEPS: indexing.episode_length(steps),
            _NUM_SAMPLES: tf.shape(index)[0]}
    if sampler.link is not None:
      plan[_EXTRAS] = sampler.link.extras(episode)
    return plan

  @_graph_fn
  def assemble(steps: Dict[str, Any], part: Tuple[tf.Tensor, Dict[str, Any]]
               ) -> Dict[str, Any]:
    return sampler.assemble(steps, *part)

  plans = episodes.map(plan, num_parallel_calls=num_parallel_calls,
                       deterministic=deterministic)
  windows = tf.data.Dataset.zip(plans.window(pool_episodes), pool_seeds(seed))
  link = sampler.link
  initial = (tf.constant(0, tf.int64), link.initial if link else ())
  pools = windows.scan(initial, _pooler(batch_size, spread, link))
  return pools.flat_map(_parts(gather)).map(
      assemble, num_parallel_calls=num_parallel_calls,
      deterministic=deterministic)


def _chunk_size(batch_size: int, pool_episodes: int) -> int:
  """Samples taken from one episode in turn: ``ceil(batch / episodes)``."""
  return -(-batch_size // pool_episodes)


def _episode_interleave(planned: tf.data.Dataset, sampler: Sampler,
                        batch_size: int, shuffle: bool, pool_episodes: int,
                        seed: Optional[int], deterministic: Optional[bool]
                        ) -> tf.data.Dataset:
  """``'episodes'`` mode: ``pool_episodes`` open episodes, chunks in turn."""
  if shuffle:
    planned = tf.data.Dataset.zip(planned, pool_seeds(seed)).map(_permute_plan)
  else:
    pool_episodes = 1   # Episode order.
  chunk = _chunk_size(batch_size, pool_episodes)

  @_graph_fn
  def chunks(plan: Dict[str, Any]) -> tf.data.Dataset:
    steps, index, values = plan[_STEPS], plan[_INDEX], plan[_VALUES]
    num = tf.shape(index, out_type=tf.int64)[0]

    @_graph_fn
    def gather(i: tf.Tensor) -> Dict[str, Any]:
      start = i * chunk
      stop = tf.minimum(start + chunk, num)
      return sampler.assemble(
          steps, index[start:stop],
          tf.nest.map_structure(lambda v: v[start:stop], values))

    return tf.data.Dataset.range((num + chunk - 1) // chunk).map(gather)

  return planned.interleave(chunks, cycle_length=pool_episodes,
                            block_length=1, deterministic=deterministic)


@_graph_fn
def _permute_plan(plan: Dict[str, Any], seed: tf.Tensor) -> Dict[str, Any]:
  """An episode plan with its samples (indices and values) in random order."""
  order = random_order(tf.shape(plan[_INDEX])[0], seed)
  index, values = tf.nest.map_structure(lambda x: tf.gather(x, order),
                                        (plan[_INDEX], plan[_VALUES]))
  return {_STEPS: plan[_STEPS], _INDEX: index, _VALUES: values}


POOLING_FIELDS = ('pool', 'pool_episodes', 'episode_shuffle_buffer',
                   'spread_episodes', 'num_parallel_calls', 'deterministic',
                   'prefetch')
"""`Pooling`'s fields: the keywords they were before it."""


@dataclasses.dataclass(frozen=True, repr=False)
class Pooling:
  """How ``pooled_batches`` (and windows, transitions) pools and shuffles samples.

  Attributes:
    pool: ``'auto'``, ``'samples'`` or ``'episodes'`` (module docstring).
    pool_episodes: episodes per pool (``'samples'``) or open (``'episodes'``):
      more mixes more episodes per batch and takes more memory.
    episode_shuffle_buffer: episodes in a shuffle buffer before pooling (0:
      none).
    spread_episodes: ``'samples'`` mode: deal each pool's samples out
      episode by episode (``spread_order``: a batch mixes ``min(batch_size,
      pool_episodes)`` episodes) instead of a uniform permutation.
    num_parallel_calls: parallelism of the per-episode ``map`` and gathers.
    deterministic: their ``deterministic`` (None: the tf.data default).
    prefetch: batches prefetched (0: none).

  Example:
    >>> Pooling(pool_episodes=128, prefetch=0)
    Pooling(pool_episodes=128, prefetch=0)
  """
  pool: str = 'auto'
  pool_episodes: int = DEFAULT_POOL_EPISODES
  episode_shuffle_buffer: int = 0
  spread_episodes: bool = False
  num_parallel_calls: Optional[int] = tf.data.AUTOTUNE
  deterministic: Optional[bool] = None
  prefetch: int = 2

  @op_context.named('Pooling')
  def __post_init__(self):
    if self.pool not in POOLS:
      raise ValueError(f'pool must be one of {POOLS}, got '
                       f'{self.pool!r}.')
    object.__setattr__(self, 'pool_episodes', inputs.check_positive_int(
        self.pool_episodes, 'pool_episodes'))
    for name in ('episode_shuffle_buffer', 'prefetch'):
      object.__setattr__(self, name, inputs.check_non_negative_int(
          getattr(self, name), name))

  def __repr__(self) -> str:
    return option_objects.short_repr(self)


def pooled_batches(episodes: tf.data.Dataset,
                   sampler: Sampler,
                   batch_size: int,
                   *,
                   shuffle: bool = True,
                   seed: Optional[int] = None,
                   drop_last_batch: bool = False,
                   pooling: Optional[Pooling] = None,
                   op: Optional[str] = None,
                   **legacy: Any) -> tf.data.Dataset:
  """Batches of per-episode samples, shuffled within pools.

  Args:
    episodes: a dataset of dense episodes.
    sampler: how an episode becomes samples.
    batch_size: samples per batch (positive).
    shuffle: shuffle episodes and samples within each pool; else samples
      come in episode order.
    seed: seed of the shuffling (None: different every run).
    drop_last_batch: drop a last batch smaller than ``batch_size`` (then the
      batch axis is static).
    pooling: a `Pooling` (pools, parallelism, prefetch; default
      ``Pooling()``).
    op: deprecated (errors name the public function they escape).
    **legacy: `Pooling`'s fields as keywords (before ``Pooling``), warning
      once.

  Returns:
    A dataset of batches (dicts whose leaves have a leading batch axis).

  Example:
    >>> episodes = tf.data.Dataset.from_tensors({'steps': {'x': tf.range(5)}})
    >>> sampler = Sampler(
    ...     samples=lambda e: e['steps'],
    ...     plan=lambda e: (e['steps'], tf.range(5), {}),
    ...     assemble=lambda steps, index, values: {
    ...         'x': tf.gather(steps['x'], index)})
    >>> ds = pooled_batches(episodes, sampler, 2, seed=0, drop_last_batch=True,
    ...                     pooling=Pooling(pool='samples'))
    >>> [b['x'].shape.as_list() for b in ds]
    [[2], [2]]
  """
  with op_context.deprecated_op(op, _OP, _OP):
    option_objects.check_keywords(_OP, legacy, POOLING_FIELDS)
    pooling = option_objects.knobs_object(Pooling, pooling, legacy, _OP,
                                          'pooling=Pooling(...)')
    batch_size = inputs.check_positive_int(batch_size, 'batch_size')
    inputs.check_step_shapes(episodes)
    pool = pooling.pool
    if pool == 'auto':
      step_bytes = sample_bytes(episodes.element_spec[rlds_types.STEPS])
      big = step_bytes * sampler.steps_per_sample > AUTO_EPISODES_ABOVE
      pool = 'episodes' if big else 'samples'
    if sampler.link is not None and (pool != 'samples' or not shuffle):
      raise ValueError(f"a Sampler with a link needs pool='samples' and "
                       'shuffle=True.')
    if shuffle and pooling.episode_shuffle_buffer > 0:
      episodes = episodes.shuffle(pooling.episode_shuffle_buffer, seed=seed,
                                  reshuffle_each_iteration=True)
    calls, deterministic = pooling.num_parallel_calls, pooling.deterministic
    if pool == 'samples' and not shuffle:
      samples = episodes.map(_graph_fn(sampler.samples),
                             num_parallel_calls=calls,
                             deterministic=deterministic)
    elif pool == 'samples':
      gather = sampler.gather_size or gather_size(
          batch_size, sampler.steps_per_sample * sample_bytes(
              episodes.element_spec[rlds_types.STEPS]))
      samples = _step_pools(episodes, sampler, batch_size,
                            pooling.pool_episodes, gather, seed, calls,
                            deterministic, pooling.spread_episodes)
    else:

      @_graph_fn
      def plan(episode: Dict[str, Any]) -> Dict[str, Any]:
        steps, index, values = sampler.plan(episode)
        return {_STEPS: steps, _INDEX: tf.cast(index, tf.int32),
                _VALUES: values}

      planned = episodes.map(plan, num_parallel_calls=calls,
                             deterministic=deterministic)
      samples = _episode_interleave(planned, sampler, batch_size, shuffle,
                                    pooling.pool_episodes, seed, deterministic)
    batches = samples.rebatch(batch_size, drop_remainder=drop_last_batch)
    if pooling.prefetch:
      batches = batches.prefetch(pooling.prefetch)
    return batches
