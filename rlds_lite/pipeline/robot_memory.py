"""Where ``robot_samples_dataset`` decodes frames, and the memory that takes.

``pick`` plans (a ``DecodePlan``: ``'per_episode'`` segments or
``'after_sampling'``, pools) for a budget; ``estimate`` is the calibrated
formula of docs/pooling.md (a ``RobotMemory``).

Example:
  >>> plan = DecodePlan('per_episode', 16, 32, 40, None)
  >>> plan
  DecodePlan(decode='per_episode', segments of 16 samples, 32 episodes pooled, 40 open)
"""

import logging
import math
import os
from typing import Any, Callable, Dict, NamedTuple, Optional, Union

from rlds_lite import byte_sizes
from rlds_lite import op_context
from rlds_lite.images import decode as decode_lib
from rlds_lite.sample_kinds import RobotSamples

DECODES = ('auto', 'per_episode', 'after_sampling')
"""The values of ``decode``."""
_LOG = logging.getLogger('rlds_lite')
DEFAULT_MEMORY_BUDGET = 1 << 30
"""The budget ``decode='auto'`` plans for when none is given (1 GiB)."""
MAX_POOL_EPISODES = 64
"""Default episodes mixed per batch (at most ``batch_size``)."""
MIN_SEGMENT_STEPS = 2
"""``'auto'`` never decodes segments of fewer samples per episode."""
MIN_POOL_FRACTION = 0.75
"""``'auto'`` shrinks the pool down to this fraction of ``pool_episodes``'
default before it takes segments smaller than ``CHEAP_SEGMENT_STEPS``.
Measured (``benchmarks/bench_images.py``): a plan pooling 33 of 48 episodes
(segments of 16) mixed 29 episodes per batch, fewer than the Octo recipe's
32; 36 pooled mixed 35."""
SEGMENT_CHOICES = (64, 32, 16, 8, 4, 2)
"""Segment sizes ``'auto'`` tries after whole episodes, largest first."""
CHEAP_SEGMENT_STEPS = 4
"""Segments of at least this many samples cost about the same CPU per
sample, so ``'auto'`` takes them with the whole pool before it shrinks the
pool; smaller ones cost more (more ``tf.data`` elements per sample), so it
shrinks the pool first. Measured on ``benchmarks/bench_images.py``'s
dataset, three passes after one, 36-48 pooled episodes, us of CPU per
sample: segments of 16 541-579, of 8 560-628, of 4 594-650, of 2 713-768,
decoding after sampling 855-871. A smaller pool of larger segments saved
no CPU over the whole pool of the next smaller ones (8 of 37 episodes
581-628, 4 of 48 594-616) and grew no less RSS (634-849 MB against
635-660)."""
POOL_COPIES = 2
"""Pools held at once: the one being served and the next one's segments
(or, at a pool boundary, their concatenation). Measured: 1.2-2.7 times a
pool beside the rest, larger pools nearer the top (allocator regions)."""
OPEN_EPISODE_COPIES = 1.5
"""An open episode's bytes as multiples of ``E``: its encoded frames, its
parsed fields and its cut segments' rows, with the allocator's slack
(measured 1.5-1.8 on 48 open episodes)."""
DECODES_IN_FLIGHT = 2
"""Batches (or segments) being decoded or gathered at once (one per core
here). ``'after_sampling'`` counts a batch being decoded twice: its frames
decoded one by one, then stacked (measured: 438-610 MB for pools of 16-48
camera episodes, which one copy underestimated by up to ~40%)."""
RUNTIME_FRACTION = 0.25
"""Memory beside the parts that grows with them, as a fraction of them:
tf.data iterators' buffers, allocator slack."""
RUNTIME_EPISODES = 32
"""Memory beside the parts that grows with the episode size, in encoded
episodes ``E``: TFDS's read and parse buffers and autotuned prefetches.
Measured: a plan of 2 open episodes grew 214-309 MB on the benchmark's
3 MB episodes, of which its other parts explain ~130 MB."""
OPEN_EPISODES_FACTOR = 1.25
"""Segments are drawn from this many times ``pool_episodes`` open episodes:
a pool then still holds ``pool_episodes`` distinct episodes when some of
the open ones run out of segments before the others."""


human_bytes = byte_sizes.format_bytes


class RobotMemory(NamedTuple):
  """Estimated bytes held by ``robot_samples_dataset`` (see the module doc).

  Attributes:
    open_episodes: encoded episodes read and being cut into segments.
    pools: pooled segments (decoded) or episodes (encoded).
    batches: batches being decoded or gathered, and prefetched.
    runtime: the rest (``RUNTIME_FRACTION`` of the others plus
      ``RUNTIME_EPISODES`` encoded episodes): read buffers, iterators,
      allocator slack.
    step_bytes: one step's frames decoded at the output size (``D``).
    episode_bytes: one encoded episode (``E``).
    mean_episode_steps: mean steps per episode.
  """
  open_episodes: int
  pools: int
  batches: int
  runtime: int
  step_bytes: int
  episode_bytes: int
  mean_episode_steps: float

  @property
  def total(self) -> int:
    """The sum of the parts (bytes)."""
    return self.open_episodes + self.pools + self.batches + self.runtime

  def __repr__(self) -> str:
    return (f'RobotMemory(total={human_bytes(self.total)}: '
            f'pools={human_bytes(self.pools)}, '
            f'open_episodes={human_bytes(self.open_episodes)}, '
            f'batches={human_bytes(self.batches)}, '
            f'runtime={human_bytes(self.runtime)}; decoded step '
            f'{human_bytes(self.step_bytes)}, encoded episode '
            f'{human_bytes(self.episode_bytes)} '
            f'({self.mean_episode_steps:.1f} steps))')


class DecodePlan(NamedTuple):
  """Where ``robot_samples_dataset`` decodes frames (see the module doc).

  Attributes:
    decode: ``'per_episode'`` or ``'after_sampling'``.
    segment_steps: ``'per_episode'``: samples of an episode decoded together
      (None: the whole episode).
    pool_episodes: episodes (segments) pooled and mixed.
    open_episodes: encoded episodes open at once (segments are drawn from
      them in turn).
    memory: the estimate (None when the sizes are unknown).
  """
  decode: str
  segment_steps: Optional[int]
  pool_episodes: int
  open_episodes: int
  memory: Optional[RobotMemory]

  def __repr__(self) -> str:
    if self.decode == 'per_episode':
      what = ('whole episodes' if self.segment_steps is None else
              f'segments of {self.segment_steps} samples')
      text = (f"DecodePlan(decode='per_episode', {what}, "
              f'{self.pool_episodes} episodes pooled, {self.open_episodes} '
              'open')
    else:
      text = (f"DecodePlan(decode='after_sampling', {self.pool_episodes} "
              'encoded episodes pooled')
    if self.memory is not None:
      text += f'; {self.memory!r}'
    return text + ')'


class Sizes(NamedTuple):
  """What the estimate needs to know of a dataset and the samples."""
  step_bytes: int              # D: one step's frames, decoded, output size.
  episode_bytes: int           # E: one encoded episode.
  mean_episode_steps: float
  num_episodes: int
  sample_bytes: int            # S: one decoded sample.
  frames_per_sample: float     # Frames a sample decodes after sampling.


def segment_frames(segment_steps: Optional[int], sizes: Sizes, history: int,
                   history_stride: int, goal: Optional[str]) -> float:
  """Frames one segment decodes (about): its samples' histories and goals."""
  steps = sizes.mean_episode_steps
  samples = steps if segment_steps is None else min(segment_steps, steps)
  reach = (history - 1) * history_stride
  frames = min(samples + reach, steps) if segment_steps else steps
  if goal == 'final':
    frames += 1
  elif goal is not None:
    frames += samples
  return max(frames, 1.0)


def estimate(plan: DecodePlan, sizes: Sizes, kind: RobotSamples, *,
             batch_size: int, prefetch: int) -> RobotMemory:
  """The memory of ``plan`` (its ``memory`` unused) for ``kind``'s samples.

  Example:
    >>> sizes = Sizes(step_bytes=1000, episode_bytes=10**4, num_episodes=9,
    ...               mean_episode_steps=100.0, sample_bytes=2000,
    ...               frames_per_sample=2.0)
    >>> estimate(DecodePlan('per_episode', 10, 4, 4, None), sizes,
    ...          RobotSamples(history=2), batch_size=8, prefetch=2).pools
    88000
  """
  decode, segment_steps = plan.decode, plan.segment_steps
  pool_episodes, open_episodes = plan.pool_episodes, plan.open_episodes
  if decode == 'per_episode':
    frames = segment_frames(segment_steps, sizes, kind.history,
                            kind.history_stride, kind.goal)
    pools = POOL_COPIES * pool_episodes * frames * sizes.step_bytes
  else:
    pools = POOL_COPIES * pool_episodes * sizes.episode_bytes
  in_flight = DECODES_IN_FLIGHT * (1 if decode == 'per_episode' else 2)
  batches = (prefetch + in_flight) * batch_size * sizes.sample_bytes
  opened = OPEN_EPISODE_COPIES * open_episodes * sizes.episode_bytes
  return RobotMemory(
      open_episodes=int(opened), pools=int(math.ceil(pools)),
      batches=int(batches),
      runtime=int(RUNTIME_FRACTION * (opened + math.ceil(pools) + batches) +
                  RUNTIME_EPISODES * sizes.episode_bytes),
      step_bytes=sizes.step_bytes, episode_bytes=sizes.episode_bytes,
      mean_episode_steps=sizes.mean_episode_steps)


def _fewer_pooled(plan: Callable[..., DecodePlan], budget: int, smallest: int
                  ) -> DecodePlan:
  """The default budget's plan when even ``smallest`` pooled episodes do not
  fit: fewer, down to one, decoded after sampling; logged with what it trades."""
  for pool_size in range(smallest - 1, 0, -1):
    candidate = plan('after_sampling', None, pool_size)
    if candidate.memory.total <= budget:
      break
  fits = candidate.memory.total <= budget
  _LOG.warning(
      '%s: the default memory_budget (%s) %s; a batch mixes fewer episodes '
      '(shuffle_quality tells how many). Pass memory_budget= to plan for '
      'more.', op_context.current() or 'robot_samples_dataset',
      human_bytes(budget),
      f'holds {candidate.pool_episodes} pooled episodes, not {smallest}'
      if fits else f'holds no plan: the smallest needs about '
      f'{human_bytes(candidate.memory.total)} ({candidate.pool_episodes} '
      'pooled episode)')
  return candidate


def pick(budget: Optional[int], sizes: Sizes, kind: RobotSamples, *,
         batch_size: int, prefetch: int, decode: str = 'auto',
         segment_steps: Optional[int] = None,
         pool_episodes: Optional[int] = None) -> DecodePlan:
  """The plan for ``budget`` bytes (arguments given are kept).

  Rule: ``pool_episodes`` defaults to ``min(batch_size, MAX_POOL_EPISODES,
  episodes)``. The first plan that fits, in this order:

  1. ``'per_episode'`` with whole episodes, then segments of
     ``SEGMENT_CHOICES`` samples down to ``CHEAP_SEGMENT_STEPS``, with the
     whole pool;
  2. the same segments, largest first, each with the largest pool that
     fits down to ``MIN_POOL_FRACTION`` of it;
  3. smaller segments (down to ``MIN_SEGMENT_STEPS``), then
     ``'after_sampling'``, each with the largest pool that fits.

  A given ``pool_episodes`` is not shrunk. A given ``decode`` or
  ``segment_steps`` is kept (the estimate is then only reported).

  Example:
    >>> sizes = Sizes(step_bytes=245 << 10, episode_bytes=3 << 20,
    ...               num_episodes=48, mean_episode_steps=120.0,
    ...               sample_bytes=490 << 10, frames_per_sample=2.0)
    >>> kind = RobotSamples(history=2)
    >>> pick(1 << 30, sizes, kind, batch_size=64, prefetch=2)[:4]
    ('per_episode', 16, 48, 48)
  """
  default_pool = max(1, min(batch_size, MAX_POOL_EPISODES, sizes.num_episodes))
  pool = pool_episodes or default_pool
  def plan(mode: str, segments: Optional[int],
           pool_size: Optional[int] = None) -> DecodePlan:
    pool_size = pool_size or pool
    segmented = mode == 'per_episode' and segments is not None
    open_episodes = (min(sizes.num_episodes,
                         math.ceil(OPEN_EPISODES_FACTOR * pool_size))
                     if segmented else 1)
    open_episodes = max(open_episodes, pool_size) if segmented else 1
    planned = DecodePlan(mode, segments, pool_size, open_episodes, None)
    return planned._replace(memory=estimate(
        planned, sizes, kind, batch_size=batch_size, prefetch=prefetch))

  if decode != 'auto' or segment_steps is not None:
    mode = 'per_episode' if decode == 'auto' else decode
    return plan(mode, segment_steps if mode == 'per_episode' else None)
  given = budget is not None
  if budget is None:
    budget = DEFAULT_MEMORY_BUDGET
  smallest = (pool if pool_episodes is not None else
              max(1, math.ceil(MIN_POOL_FRACTION * pool)))
  pools = range(pool, smallest - 1, -1)   # Largest first.
  segment_sizes = [None] + [
      s for s in SEGMENT_CHOICES
      if MIN_SEGMENT_STEPS <= s < sizes.mean_episode_steps]
  cheap = [s for s in segment_sizes if s is None or s >= CHEAP_SEGMENT_STEPS]
  small = [s for s in segment_sizes if s not in cheap]
  candidates = ([('per_episode', s, pool) for s in cheap] +
                [('per_episode', s, p) for s in cheap for p in pools[1:]] +
                [('per_episode', s, p) for s in small for p in pools] +
                [('after_sampling', None, p) for p in pools])
  for mode, segments, pool_size in candidates:
    candidate = plan(mode, segments, pool_size)
    if candidate.memory.total <= budget:
      return candidate
  if not given and pool_episodes is None:
    return _fewer_pooled(plan, budget, smallest)
  raise ValueError(
      f'memory_budget {human_bytes(budget)} ({budget} bytes) is too '
      f'small for {smallest} pooled episodes: decoding after sampling needs '
      f'about {human_bytes(candidate.memory.total)} ({candidate!r}); raise '
      'the budget, or lower pool_episodes / batch_size.')


def parse_budget(value: Any) -> Optional[int]:
  """``memory_budget`` in bytes (an int or a string like ``'512MB'``), or None.

  Example:
    >>> parse_budget('1 GiB')
    1073741824
  """
  if value is None:
    return None
  return byte_sizes.parse_bytes(value, 'memory_budget')


def dataset_sizes(builder: Any, split: str, num_steps: int,
                  specs: Dict[str, decode_lib.ImageSpec],
                  image_size: Any, history: int, goal: Optional[str],
                  value_bytes: int) -> Sizes:
  """The ``Sizes`` of a TFDS split for the estimate.

  ``E`` is the split's bytes (TFDS metadata) per episode; ``D`` the decoded
  bytes of one step's frames at the output size; a sample holds ``history``
  frames of each camera (plus a goal frame) and ``value_bytes`` of the
  other fields.
  """
  info = builder.info.splits[split]
  episodes = max(1, info.num_examples)
  step_bytes = 0
  for path, spec in specs.items():
    size = image_size.get(path) if isinstance(image_size, dict) else image_size
    h, w, c = decode_lib.output_shape(spec, size)
    step_bytes += h * w * c * spec.dtype.size
  frames = history + (1 if goal is not None else 0)
  return Sizes(
      step_bytes=max(step_bytes, 1),
      episode_bytes=max(1, int(info.num_bytes) // episodes),
      mean_episode_steps=max(num_steps / episodes, 1.0),
      num_episodes=int(info.num_examples),
      sample_bytes=frames * step_bytes + value_bytes,
      frames_per_sample=float(frames))


PathLike = Union[str, os.PathLike]
