"""Step and episode shuffling of a TFDS RLDS split, every step read once.

``shuffled_steps`` reads disjoint slices of the split interleaved (the RLDS
FAQ recipe, without a per-step element) and mixes their steps in a sliding
window; its knobs are a `ShuffleKnobs`, ``estimate_memory`` says what they
hold and ``memory_budget`` picks them (docs/shuffling.md).
``shuffled_episodes`` gives whole episodes in a shuffled order.

Example:
  >>> from rlds_lite import synthetic
  >>> path = synthetic.dataset(6, seed=0)
  >>> ds = shuffled_steps(path, batch_size=32, knobs=ShuffleKnobs(num_slices=3),
  ...                     seed=0, episode_fields='episode_id')
  >>> sum(int(b['reward'].shape[0]) for b in ds) == count_steps(path)  # once
  True
  >>> memory = estimate_memory(path, batch_size=32)
  >>> memory.pools == (8 + 3) * 8 * memory.episode_bytes  # 8 blocks of 8
  True
"""

import dataclasses
import functools
import operator
import os
from typing import (Any, Dict, NamedTuple, Optional, Sequence,
                    Tuple, Union)

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import byte_sizes
from rlds_lite import decoding
from rlds_lite import dense
from rlds_lite import rlds_types
from rlds_lite import op_context
from rlds_lite import source as source_lib
from rlds_lite import option_objects
from rlds_lite.pipeline import inputs
from rlds_lite.pipeline import pools
from rlds_lite.pipeline import sliding

PathLike = Union[str, os.PathLike]

READ_BUFFER_BYTES = 256 << 10
"""Read buffer of each open file (``tfds.ReadConfig.override_buffer_size``)."""
DEFAULT_NUM_SLICES = 16
"""Default number of disjoint slices (at most the number of episodes)."""
DEFAULT_CYCLE_LENGTH = 4
"""Default number of slices open at once (at most ``num_slices``)."""
DEFAULT_NUM_PARALLEL_READS = 1
"""Default files read in parallel per open slice."""
DEFAULT_PREFETCH = 2
"""Batches prefetched at the end of ``shuffled_steps``."""
POOL_EXTRA_BLOCKS = 3
"""Blocks held beside the window: the next unit's, and the block being read
and its concatenation (see `rlds_lite.pipeline.sliding`)."""
MAX_POOL_EPISODES = 4096
"""``memory_budget`` never picks larger pools (first-batch latency)."""


_POSITIVE = ('num_slices', 'cycle_length', 'num_parallel_reads',
             'pool_episodes')
_NON_NEGATIVE = ('read_ahead', 'episode_shuffle_buffer', 'prefetch')
KNOB_FIELDS = _POSITIVE + _NON_NEGATIVE
"""`ShuffleKnobs`' fields: the keywords they were before it."""


@dataclasses.dataclass(frozen=True, repr=False)
class ShuffleKnobs:
  """The memory-costing knobs of ``shuffled_steps`` (None: default, or picked).

  A knob left None takes its default (docs/shuffling.md), or is picked for
  ``memory_budget`` (`pick_knobs`); ``ShuffleMemory.knobs`` holds them all
  resolved.

  Attributes:
    num_slices: disjoint slices the split is cut into (default ``min(16,
      episodes)``).
    cycle_length: slices open (read) at once (default ``min(4,
      num_slices)``).
    num_parallel_reads: files read in parallel per open slice (default 1).
    pool_episodes: episodes whose steps are mixed (the sliding window;
      default 64).
    read_ahead: episodes read ahead of the window (default one block; 0:
      none).
    episode_shuffle_buffer: episodes in the episode shuffle buffer (default
      0: none; ``shuffled_episodes``: 16).
    prefetch: batches prefetched (default 2).

  Example:
    >>> ShuffleKnobs(pool_episodes=128, cycle_length=8)
    ShuffleKnobs(cycle_length=8, pool_episodes=128)
  """
  num_slices: Optional[int] = None
  cycle_length: Optional[int] = None
  num_parallel_reads: Optional[int] = None
  pool_episodes: Optional[int] = None
  read_ahead: Optional[int] = None
  episode_shuffle_buffer: Optional[int] = None
  prefetch: Optional[int] = None

  @op_context.named('ShuffleKnobs')
  def __post_init__(self):
    for name in KNOB_FIELDS:
      value = getattr(self, name)
      if value is not None:
        check = (inputs.check_positive_int if name in _POSITIVE else
                 inputs.check_non_negative_int)
        object.__setattr__(self, name, check(value, name))

  def __repr__(self) -> str:
    return option_objects.short_repr(self)

  def _replace(self, **changes: Any) -> 'ShuffleKnobs':
    """A copy with ``changes`` (as when this was a NamedTuple)."""
    return dataclasses.replace(self, **changes)

  def _asdict(self) -> Dict[str, Optional[int]]:
    """The knobs as a dict (as when this was a NamedTuple)."""
    return dataclasses.asdict(self)


_human = byte_sizes.format_bytes


class ShuffleMemory(NamedTuple):
  """Estimated bytes held by each knob of ``shuffled_steps``.

  Attributes:
    step_bytes: bytes of one decoded step (strings count 32).
    mean_episode_steps: mean steps per episode of the split.
    episode_bytes: ``ceil(mean_episode_steps * step_bytes)``.
    episode_buffer: ``episode_shuffle_buffer * episode_bytes``.
    interleave: ``cycle_length * (READ_BUFFER_BYTES + (2 *
      num_parallel_reads - 1) * episode_bytes)``: each open slice's read
      buffer and episode being parsed, and two episodes buffered per open
      slice per extra parallel read.
    pools: ``(num_blocks + POOL_EXTRA_BLOCKS) * block_episodes *
      episode_bytes`` (`sliding.window_blocks`): the window of blocks, the next
      unit's block, the block being read and its concatenation.
    read_ahead: ``read_ahead * episode_bytes``.
    batches: ``(prefetch * batch_size + gather) * step_bytes``: prefetched
      batches and the samples gathered at once.
    knobs: the knobs the estimate is for.
  """
  step_bytes: int
  mean_episode_steps: float
  episode_bytes: int
  episode_buffer: int
  interleave: int
  pools: int
  read_ahead: int
  batches: int
  knobs: ShuffleKnobs

  @property
  def total(self) -> int:
    """The sum of the parts (bytes)."""
    return (self.episode_buffer + self.interleave + self.pools +
            self.read_ahead + self.batches)

  def __repr__(self) -> str:
    return (f'ShuffleMemory(total={_human(self.total)}: '
            f'pools={_human(self.pools)}, '
            f'read_ahead={_human(self.read_ahead)}, '
            f'interleave={_human(self.interleave)}, '
            f'episode_buffer={_human(self.episode_buffer)}, '
            f'batches={_human(self.batches)}; '
            f'episode={_human(self.episode_bytes)} '
            f'({self.mean_episode_steps:.1f} steps x {self.step_bytes} B); '
            f'{self.knobs})')


parse_bytes = byte_sizes.parse_bytes


class _Split(NamedTuple):
  """The opened split, and the step fields kept."""
  source: source_lib.Source
  step_spec: Dict[str, tf.TensorSpec]

  @property
  def label(self) -> str:
    return self.source.label

  @property
  def split(self) -> Any:
    return self.source.split

  @property
  def num_episodes(self) -> int:
    return self.source.num_episodes


def _check_fields(available: Sequence[str], fields: Optional[Sequence[str]],
                  kind: str, label: str) -> Tuple[str, ...]:
  if fields is None:
    return tuple(available)
  fields = (fields,) if isinstance(fields, str) else tuple(fields)
  for field in fields:
    if field not in available:
      raise ValueError(f'dataset {label!r} has no {kind} {field!r} '
                       f'(its {kind}s: {sorted(available)}).')
  return fields


def _split_facts(name_or_dir: Any, split: Any,
                 data_dir: Optional[PathLike], fields: Optional[Sequence[str]]
                 ) -> _Split:
  """The opened split and its (selected) step specs, from the metadata."""
  if not isinstance(name_or_dir, (str, os.PathLike, source_lib.Source)):
    raise TypeError(
        f'name_or_dir must be a TFDS name or a directory path, '
        f'got {type(name_or_dir).__name__}.')
  source = source_lib.as_source(name_or_dir, split, data_dir=data_dir)
  steps = source.step_spec
  fields = _check_fields(list(steps), fields, 'step field', source.label)
  return _Split(source, {f: steps[f] for f in fields})


def _step_bytes(step_spec: Dict[str, Any]) -> int:
  """Bytes of one decoded step (unknown dims count 1, strings 32)."""
  return pools.sample_bytes(decoding.dense_steps_spec(step_spec))


def count_steps(name_or_dir: Any, split: Optional[str] = None, *,
                data_dir: Optional[PathLike] = None) -> int:
  """Steps of a split, from one pass over its episodes (`rlds_lite.Source.num_steps`).

  Example:
    >>> from rlds_lite import synthetic
    >>> path = synthetic.dataset(4, seed=0)
    >>> count_steps(path)
    144
  """
  return source_lib.as_source(name_or_dir, split, data_dir=data_dir).num_steps


def _memory(knobs: ShuffleKnobs, batch_size: int, step_bytes: int,
            mean_steps: float) -> ShuffleMemory:
  """The estimate of the module docstring for ``knobs``."""
  episode = int(np.ceil(mean_steps * step_bytes))
  gather = pools.gather_size(batch_size, step_bytes, sliding.GATHER_BYTES)
  return ShuffleMemory(
      step_bytes=step_bytes,
      mean_episode_steps=float(mean_steps),
      episode_bytes=episode,
      episode_buffer=knobs.episode_shuffle_buffer * episode,
      interleave=knobs.cycle_length * (
          READ_BUFFER_BYTES + (2 * knobs.num_parallel_reads - 1) * episode),
      pools=_pool_bytes(knobs.pool_episodes, episode),
      read_ahead=knobs.read_ahead * episode,
      batches=(knobs.prefetch * batch_size + gather) * step_bytes,
      knobs=knobs)


def _pool_bytes(pool_episodes: int, episode_bytes: int) -> int:
  """The ``pools`` part of the estimate for a window of ``pool_episodes``."""
  num_blocks, block_episodes = sliding.window_blocks(pool_episodes)
  return (num_blocks + POOL_EXTRA_BLOCKS) * block_episodes * episode_bytes


def pick_knobs(budget: int, batch_size: int, step_bytes: int,
               mean_steps: float, num_episodes: int, num_slices: int,
               given: Union[ShuffleKnobs, Dict[str, Optional[int]]]
               ) -> ShuffleKnobs:
  """Knobs whose memory estimate fits ``budget`` bytes.

  Rule: the knobs set in ``given`` (a `ShuffleKnobs`, or a dict of its
  fields) are kept; the others start at their
  smallest (1 pool episode, 1 open slice, no episode buffer, 1 parallel read,
  ``DEFAULT_PREFETCH`` batches; ``read_ahead`` is one block of the window,
  `window_blocks`).
  What the budget leaves beyond that goes half to larger pools (at most
  ``min(num_episodes, MAX_POOL_EPISODES)`` episodes, with their read-ahead),
  a quarter to more open slices (at most ``num_slices``) and a
  quarter to the episode shuffle buffer (at most ``num_episodes``).

  Example:
    >>> pick_knobs(10**6, 32, 40, 25.0, 1000, 16, ShuffleKnobs())
    ShuffleKnobs(num_slices=16, cycle_length=1, num_parallel_reads=1, pool_episodes=152, read_ahead=19, episode_shuffle_buffer=117, prefetch=2)
  """
  if isinstance(given, ShuffleKnobs):
    given = given._asdict()

  def value(name: str, default: int) -> int:
    return default if given.get(name) is None else given[name]

  smallest = ShuffleKnobs(
      num_slices=num_slices,
      cycle_length=value('cycle_length', 1),
      num_parallel_reads=value('num_parallel_reads', 1),
      pool_episodes=value('pool_episodes', 1),
      read_ahead=value('read_ahead',
                       sliding.window_blocks(value('pool_episodes', 1))[1]),
      episode_shuffle_buffer=value('episode_shuffle_buffer', 0),
      prefetch=value('prefetch', DEFAULT_PREFETCH))
  memory = _memory(smallest, batch_size, step_bytes, mean_steps)
  if memory.total > budget:
    raise ValueError(
        f'memory_budget {_human(budget)} ({budget} bytes) is too small: '
        f'one episode takes about {_human(memory.episode_bytes)} '
        f'({memory.mean_episode_steps:.1f} steps x {memory.step_bytes} bytes) '
        f'and the smallest pipeline ({smallest}) needs about '
        f'{_human(memory.total)} ({memory.total} bytes); raise the budget or '
        'lower batch_size / select fewer fields.')
  left = budget - memory.total
  episode = memory.episode_bytes
  knobs = smallest
  if given.get('pool_episodes') is None:
    cap = min(num_episodes, MAX_POOL_EPISODES)
    follows = given.get('read_ahead') is None

    def cost(pool_episodes: int) -> int:   # Grows with pool_episodes.
      ahead = sliding.window_blocks(pool_episodes)[1] if follows else 0
      return _pool_bytes(pool_episodes, episode) + ahead * episode

    allowed = left // 2 + cost(1)
    low, high = 1, max(1, cap)   # The largest pool whose cost is allowed.
    while low < high:
      middle = (low + high + 1) // 2
      low, high = (middle, high) if cost(middle) <= allowed else (
          low, middle - 1)
    knobs = knobs._replace(pool_episodes=low)
    if follows:
      knobs = knobs._replace(read_ahead=sliding.window_blocks(low)[1])
  if given.get('cycle_length') is None:
    per_slice = READ_BUFFER_BYTES + (2 * knobs.num_parallel_reads - 1) * episode
    extra = left // 4 // per_slice
    knobs = knobs._replace(cycle_length=int(min(num_slices, 1 + extra)))
  if given.get('episode_shuffle_buffer') is None:
    extra = left // 4 // episode
    knobs = knobs._replace(episode_shuffle_buffer=int(min(num_episodes, extra)))
  return knobs


def _resolve(facts: _Split, batch_size: int, given: ShuffleKnobs,
             memory_budget: Any, num_steps: Optional[int]
             ) -> Tuple[ShuffleKnobs, Optional[ShuffleMemory]]:
  """Checks the knobs, fills the defaults (or picks them for the budget)."""
  knobs = given._asdict()
  if facts.num_episodes == 0:
    raise ValueError(f'split {facts.split!r} of dataset {facts.label!r} '
                     'has no episodes.')
  num_slices = knobs.get('num_slices')
  if num_slices is None:
    num_slices = min(DEFAULT_NUM_SLICES, facts.num_episodes)
  elif num_slices > facts.num_episodes:
    raise ValueError(
        f'num_slices={num_slices} is more than the '
        f'{facts.num_episodes} episodes of split {facts.split!r} of dataset '
        f'{facts.label!r}; every slice needs at least one episode.')
  if knobs.get('cycle_length') is not None:
    knobs['cycle_length'] = min(knobs['cycle_length'], num_slices)
  if memory_budget is not None:
    budget = parse_bytes(memory_budget, 'memory_budget')
    step_bytes = _step_bytes(facts.step_spec)
    mean_steps = num_steps / facts.num_episodes
    resolved = pick_knobs(budget, batch_size, step_bytes, mean_steps,
                          facts.num_episodes, num_slices, knobs)
    return resolved, _memory(resolved, batch_size, step_bytes, mean_steps)

  def value(name: str, default: int) -> int:
    return default if knobs.get(name) is None else knobs[name]

  return ShuffleKnobs(
      num_slices=num_slices,
      cycle_length=value('cycle_length',
                         min(DEFAULT_CYCLE_LENGTH, num_slices)),
      num_parallel_reads=value('num_parallel_reads',
                               DEFAULT_NUM_PARALLEL_READS),
      pool_episodes=value('pool_episodes', pools.DEFAULT_POOL_EPISODES),
      read_ahead=value('read_ahead', sliding.window_blocks(
          value('pool_episodes', pools.DEFAULT_POOL_EPISODES))[1]),
      episode_shuffle_buffer=value('episode_shuffle_buffer', 0),
      prefetch=value('prefetch', DEFAULT_PREFETCH)), None


def _sorted_call(op: str, knobs: Any, legacy: Dict[str, Any],
                 known: Sequence[str] = KNOB_FIELDS
                 ) -> Tuple[ShuffleKnobs, Optional[PathLike]]:
  """``(knobs, data_dir)`` of a call, from the old flat keywords too.

  ``op`` names the call where Python would (``op() got ...``) and in the
  rename warnings.
  """
  option_objects.check_keywords(op, legacy, tuple(known) + ('data_dir',))
  data_dir = legacy.pop('data_dir', None)
  if data_dir is not None:
    option_objects.warn_renamed(
        op, ['data_dir'], f'{op}(rlds_lite.open(name, data_dir=...), ...)')
  knobs = option_objects.knobs_object(ShuffleKnobs, knobs, legacy, op,
                                        'knobs=ShuffleKnobs(...)')
  if not isinstance(knobs, ShuffleKnobs):
    raise TypeError(f'knobs must be a ShuffleKnobs(...), got '
                    f'{type(knobs).__name__}.')
  return knobs, data_dir


@op_context.named('estimate_memory')
def estimate_memory(name_or_dir: Any,
                    split: Optional[str] = None,
                    *,
                    batch_size: int,
                    knobs: Optional[ShuffleKnobs] = None,
                    memory_budget: Union[int, str, None] = None,
                    fields: Optional[Sequence[str]] = None,
                    num_steps: Optional[int] = None,
                    **legacy: Any) -> ShuffleMemory:
  """The memory ``shuffled_steps`` with these arguments would hold (estimate).

  Step bytes come from the step features (images count their pixels), the
  mean episode length from ``num_steps`` or, if None, ``count_steps`` (one
  pass, cached); the formula is docs/shuffling.md's.

  Args:
    name_or_dir: a `rlds_lite.Source`, a TFDS name or a dataset directory.
    split: the split (slicing allowed).
    batch_size: steps per batch.
    knobs: a `ShuffleKnobs` (None fields: defaults, or picked for
      ``memory_budget``).
    memory_budget: bytes (or ``'512MB'``) the knobs left None are picked for.
    fields: step fields kept (default all).
    num_steps: the split's step count, if known.
    **legacy: `ShuffleKnobs`' fields and ``data_dir`` as keywords, warning
      once.

  Example:
    >>> from rlds_lite import synthetic
    >>> path = synthetic.dataset(40, seed=0)
    >>> small = estimate_memory(path, batch_size=8, memory_budget='600KB')
    >>> large = estimate_memory(path, batch_size=8, memory_budget='20MB')
    >>> small.knobs.pool_episodes < large.knobs.pool_episodes
    True
  """
  op = 'estimate_memory'
  knobs, data_dir = _sorted_call(op, knobs, legacy)
  batch_size = inputs.check_positive_int(batch_size, 'batch_size')
  facts = _split_facts(name_or_dir, split, data_dir, fields)
  if num_steps is None:
    num_steps = facts.source.num_steps
  resolved, memory = _resolve(facts, batch_size, knobs, memory_budget,
                              num_steps)
  if memory is None:
    memory = _memory(resolved, batch_size, _step_bytes(facts.step_spec),
                     num_steps / facts.num_episodes)
  return memory


def _slice_split(split: Any, splits: Any, num_slices: int
                 ) -> tfds.core.ReadInstruction:
  """``split`` cut into ``num_slices`` even, disjoint slices (absolute indices).

  Slices of several sub-splits (``'train[:10]+test'``) are cut over their
  concatenation; a slice spanning two sub-splits becomes two instructions.
  """
  spec = (tfds.core.ReadInstruction.from_spec(split) if isinstance(split, str)
          else split)
  ranges = []
  for part in spec.to_absolute(splits):
    start = part.from_ or 0
    stop = splits[part.splitname].num_examples if part.to is None else part.to
    ranges.append((part.splitname, start, stop))
  total = sum(stop - start for _, start, stop in ranges)
  bounds = [i * total // num_slices for i in range(num_slices + 1)]
  pieces, offset = [], 0
  for name, start, stop in ranges:
    for lo, hi in zip(bounds[:-1], bounds[1:]):
      lo, hi = max(lo, offset), min(hi, offset + stop - start)
      if lo < hi:
        pieces.append(tfds.core.ReadInstruction(
            name, from_=start + lo - offset, to=start + hi - offset,
            unit='abs'))
    offset += stop - start
  return functools.reduce(operator.add, pieces)


def _interleaved(facts: _Split, knobs: ShuffleKnobs, seed: Optional[int],
                 keep: Tuple[str, ...]) -> tf.data.Dataset:
  """Dense episodes of the slices, ``cycle_length`` slices read at a time.

  One TFDS pipeline: each slice is one file instruction (or two, across a
  file boundary); TFDS shuffles the instructions (seeded, again every epoch)
  and interleaves ``cycle_length`` of them one episode at a time. The
  ordering guard of ordered datasets (``disable_shuffling``) is lifted, as
  the order is shuffled on purpose.
  """
  reads = knobs.num_parallel_reads
  read_config = tfds.ReadConfig(
      interleave_cycle_length=knobs.cycle_length, interleave_block_length=1,
      num_parallel_calls_for_interleave_files=None if reads == 1 else reads,
      override_buffer_size=READ_BUFFER_BYTES, skip_prefetch=True,
      try_autocache=False, shuffle_seed=seed,
      shuffle_reshuffle_each_iteration=True, enable_ordering_guard=False)
  split = _slice_split(facts.split, facts.source.builder.info.splits,
                       knobs.num_slices)
  episodes = facts.source.with_split(split).episodes(
      dense=True, shuffle_files=True, read_config=read_config)
  step_fields = tuple(facts.step_spec)

  @tf.autograph.experimental.do_not_convert
  def select(episode: Dict[str, Any]) -> Dict[str, Any]:
    steps = episode[rlds_types.STEPS]
    return {rlds_types.STEPS: {f: steps[f] for f in step_fields},
            **{f: episode[f] for f in keep}}

  return episodes.map(select)


def _episode_fields(facts: _Split, episode_fields: Any) -> Tuple[str, ...]:
  """The checked names of the episode metadata to keep (None: all)."""
  available = [k for k in facts.source.features.keys()
               if k != rlds_types.STEPS]
  if episode_fields is None:
    return tuple(available)
  return _check_fields(available, episode_fields or (), 'episode field',
                       facts.label)


def _step_rows(fields: Tuple[str, ...]):
  """Episode -> its steps, with the episode ``fields`` repeated per step."""

  @tf.autograph.experimental.do_not_convert
  def rows(episode: Dict[str, Any]) -> Dict[str, Any]:
    steps = episode[rlds_types.STEPS]
    num = dense.episode_length(steps)
    return {**steps, **inputs.episode_values(episode, fields, num)}

  return rows


@op_context.named('shuffled_steps')
def shuffled_steps(name_or_dir: Any,
                   split: Optional[str] = None,
                   *,
                   batch_size: int,
                   knobs: Optional[ShuffleKnobs] = None,
                   memory_budget: Union[int, str, None] = None,
                   seed: Optional[int] = None,
                   drop_remainder: bool = False,
                   fields: Optional[Sequence[str]] = None,
                   episode_fields: Union[str, Sequence[str]] = (),
                   num_steps: Optional[int] = None,
                   **legacy: Any) -> tf.data.Dataset:
  """Shuffled batches of the steps of a TFDS RLDS split, each step once.

  The RLDS FAQ's "interleave disjoint split slices" recipe in one call, with
  a sliding window of shuffled blocks instead of a per-step buffer; memory
  (``estimate_memory``) is bounded by the knobs (docs/shuffling.md).

  Args:
    name_or_dir: a `rlds_lite.Source` (``rlds_lite.open``), a TFDS name or a
      prepared dataset directory.
    split: a split, TFDS slicing allowed (``'train[:80%]'``).
    batch_size: steps per batch.
    knobs: a `ShuffleKnobs` (slices, open slices, pool, read-ahead, episode
      buffer, parallel reads, prefetch; None fields take their defaults).
    memory_budget: bytes (or ``'512MB'``): the knobs left None are picked
      to fit (`pick_knobs`; needs the step count: one pass, cached).
    seed: seed of the slice order and the pools (None: random).
    drop_remainder: drop a last batch smaller than ``batch_size``.
    fields: step fields to keep (default all): fewer fields, less memory.
    episode_fields: episode metadata (e.g. ``'episode_id'``) copied into
      every step.
    num_steps: the split's step count, if known (skips ``count_steps``).
    **legacy: `ShuffleKnobs`' fields and ``data_dir`` as keywords (before
      ``knobs``), warning once.

  Returns:
    A dataset of dicts of ``[B, ...]`` step fields (plus ``episode_fields``).

  Example:
    >>> from rlds_lite import synthetic
    >>> path = synthetic.dataset(5, seed=0)
    >>> ds = shuffled_steps(path, batch_size=100, seed=1, fields=['reward'],
    ...                     knobs=ShuffleKnobs(num_slices=2),
    ...                     drop_remainder=True)
    >>> [b['reward'].shape.as_list() for b in ds]
    [[100]]
  """
  op = 'shuffled_steps'
  knobs, data_dir = _sorted_call(op, knobs, legacy)
  batch_size = inputs.check_positive_int(batch_size, 'batch_size')
  facts = _split_facts(name_or_dir, split, data_dir, fields)
  keep = _episode_fields(facts, episode_fields)
  if set(keep) & set(facts.step_spec):
    clash = sorted(set(keep) & set(facts.step_spec))
    raise ValueError(f'episode_fields {clash} have the names of step '
                     'fields; rename them first.')
  if num_steps is None and (drop_remainder or memory_budget is not None):
    num_steps = facts.source.num_steps
  if drop_remainder and batch_size > num_steps:
    raise ValueError(
        f'batch_size={batch_size} is larger than the {num_steps} steps '
        f'of split {facts.split!r} of dataset {facts.label!r}, and '
        'drop_remainder=True would drop them all.')
  knobs, _ = _resolve(facts, batch_size, knobs, memory_budget, num_steps)
  episodes = _interleaved(facts, knobs, seed, keep)
  if knobs.episode_shuffle_buffer:
    episodes = episodes.shuffle(knobs.episode_shuffle_buffer, seed=seed,
                                reshuffle_each_iteration=True)
  if knobs.read_ahead:
    episodes = episodes.prefetch(knobs.read_ahead)
  num_blocks, block_episodes = sliding.window_blocks(knobs.pool_episodes)
  return sliding.sliding_step_batches(
      episodes.map(_step_rows(keep)), batch_size,
      block_episodes=block_episodes, num_blocks=num_blocks, seed=seed,
      drop_last_batch=drop_remainder, prefetch=knobs.prefetch)


_EPISODE_KNOBS = ('num_slices', 'cycle_length', 'num_parallel_reads',
                  'episode_shuffle_buffer')
"""The knobs of ``shuffled_episodes`` (the others pool steps)."""


@op_context.named('shuffled_episodes')
def shuffled_episodes(name_or_dir: Any,
                      split: Optional[str] = None,
                      *,
                      knobs: Optional[ShuffleKnobs] = None,
                      seed: Optional[int] = None,
                      fields: Optional[Sequence[str]] = None,
                      episode_fields: Optional[Sequence[str]] = None,
                      **legacy: Any) -> tf.data.Dataset:
  """Dense episodes of a split in a shuffled order, each episode once.

  Disjoint slices in a seeded random order, ``cycle_length`` of them read
  round-robin, then a shuffle buffer of ``episode_shuffle_buffer`` episodes
  (default 16), both reshuffled every epoch.

  Args:
    name_or_dir: a `rlds_lite.Source`, a TFDS name or a dataset directory.
    split: the split (slicing allowed).
    knobs: a `ShuffleKnobs` of ``num_slices``, ``cycle_length``,
      ``num_parallel_reads`` and ``episode_shuffle_buffer`` (0: none).
    seed: seed of the slice order and the buffer (None: random).
    fields: step fields to keep (default all).
    episode_fields: episode metadata to keep (default all).
    **legacy: those knobs and ``data_dir`` as keywords, warning once.

  Returns:
    A dataset of episodes whose ``steps`` are dicts of ``[T, ...]`` tensors.

  Example:
    >>> from rlds_lite import synthetic
    >>> path = synthetic.dataset(8, seed=0)
    >>> ids = [int(e['episode_id']) for e in shuffled_episodes(path, seed=0)]
    >>> sorted(ids), ids != sorted(ids)
    ([0, 1, 2, 3, 4, 5, 6, 7], True)
  """
  op = 'shuffled_episodes'
  knobs, data_dir = _sorted_call(op, knobs, legacy, _EPISODE_KNOBS)
  pooling = [n for n in KNOB_FIELDS
             if n not in _EPISODE_KNOBS and getattr(knobs, n) is not None]
  if pooling:
    raise ValueError(f'{pooling} pool steps; whole episodes take only '
                     f'{list(_EPISODE_KNOBS)}.')
  if knobs.episode_shuffle_buffer is None:
    knobs = knobs._replace(episode_shuffle_buffer=16)
  facts = _split_facts(name_or_dir, split, data_dir, fields)
  keep = _episode_fields(facts, episode_fields)
  knobs, _ = _resolve(facts, 1, knobs, None, None)
  episodes = _interleaved(facts, knobs, seed, keep)
  if knobs.episode_shuffle_buffer:
    episodes = episodes.shuffle(knobs.episode_shuffle_buffer, seed=seed,
                                reshuffle_each_iteration=True)
  return episodes
