"""`ReplayBuffer`: a storage, a writer, a sampler and a rate limiter composed, sampling steps or a sample kind."""

import dataclasses
from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np
import tensorflow as tf

from rlds_lite import nest_paths
from rlds_lite import rlds_names
from rlds_lite import sample_kinds
from rlds_lite.replay import checkpoint
from rlds_lite.replay import episodes as episodes_lib
from rlds_lite.replay import feeding
from rlds_lite.replay import offline
from rlds_lite.replay import rate_limit
from rlds_lite.replay import samplers as samplers_lib
from rlds_lite.replay import spec as spec_lib
from rlds_lite.replay import steps as steps_lib
from rlds_lite.replay import storage as storage_lib
from rlds_lite.replay import writers as writers_lib

__all__ = ['ReplayBuffer', 'SampleInfo']

Flat = Dict[str, np.ndarray]


@dataclasses.dataclass(frozen=True)
class SampleInfo:
  """Where each sample of a batch came from.

  Attributes:
    indices: the slot each sample starts at (give them to `update_priority`).
    episode_ids: the buffer's id of each sample's episode (in insertion order).
    step_ids: the step of its episode each sample starts at.
    weights: importance weights (1 unless the sampler is `Prioritized`).
  """
  indices: np.ndarray
  episode_ids: np.ndarray
  step_ids: np.ndarray
  weights: np.ndarray


def _check_kind(kind: Any) -> Optional[sample_kinds.SampleKind]:
  if kind is None:
    return None
  if isinstance(kind, sample_kinds.RobotSamples):
    problem = kind.random_access_problem()
    if problem:
      raise ValueError('ReplayBuffer: ' + problem.replace('random access', 'a replay buffer'))
  if not isinstance(kind, sample_kinds.KINDS):
    raise TypeError('ReplayBuffer: kind must be None (single steps) or a sample kind: '
                    f'Windows(...), Transitions(...) or RobotSamples(...), got {kind!r}.')
  return kind


def _windows_in_numpy(kind: Any, values: Dict[str, Any]) -> Optional[Flat]:
  """`Windows.assemble` in NumPy (numeric fields): no tf.function call per batch; else None."""
  steps = values['steps']
  if not isinstance(kind, sample_kinds.Windows) or any(
      v.dtype.kind not in 'biuf' for v in steps.values()):
    return None
  if kind.drop_remainder:
    return dict(steps)
  mask = (values['start'][:, np.newaxis] + kind.offsets) < values['length'][:, np.newaxis]
  out = {p: np.where(mask.reshape(mask.shape + (1,) * (v.ndim - 2)), v, np.zeros((), v.dtype))
         for p, v in steps.items()}
  out[sample_kinds.MASK] = mask
  return out


class ReplayBuffer:
  """Steps added by actors, sampled by a learner: TorchRL's composition with Reverb's rate limiting.

  Without a ``kind`` a sample is one stored step (TorchRL's items); with one,
  a sample is a `Windows`, `Transitions` or `RobotSamples` slice that never
  crosses an episode boundary, with the semantics of `rlds_lite.dense`.

  Args:
    storage: a `MemoryStorage` or `MemmapStorage` (its capacity in steps).
    sampler: `Uniform()` (default), `WithoutReplacement()` or `Prioritized(...)`.
    writer: `RoundRobin()` (default), `TopK(key)` or `Immutable()`.
    rate_limiter: a `RateLimiter`, or None (sample as soon as anything is in).
    kind: None (steps) or a sample kind.
    max_times_sampled: a sample is removed after this many draws (None: never).
    seed: the sampler's random seed.
    log_to: also log every added step to this (e.g. `replay.RLDSLog`: episodes
      kept in an RLDS dataset after the buffer evicts them).

  Example:
    >>> from rlds_lite import replay
    >>> buffer = replay.ReplayBuffer(replay.MemoryStorage(100), seed=0)
    >>> for t in range(5):
    ...   buffer.add({'observation': [t, t], 'reward': 1.0, 'is_first': t == 0,
    ...               'is_last': t == 4, 'is_terminal': t == 4})
    >>> batch, info = buffer.sample(3)
    >>> batch['observation'].shape, info.episode_ids.tolist(), len(buffer)
    ((3, 2), [0, 0, 0], 5)
    >>> buffer
    ReplayBuffer(MemoryStorage(capacity=100, 5 fields, ...), sampler=Uniform(), writer=RoundRobin(evict='episode'), 5 steps, 1 episode)
  """

  def __init__(self, storage: storage_lib.Storage, *,
               sampler: Optional[Any] = None, writer: Optional[Any] = None,
               rate_limiter: Optional[rate_limit.RateLimiter] = None,
               kind: Optional[sample_kinds.SampleKind] = None,
               max_times_sampled: Optional[int] = None, seed: int = 0,
               log_to: Optional[Any] = None):
    if not isinstance(storage, storage_lib.Storage):
      raise TypeError('ReplayBuffer: storage must be a MemoryStorage or MemmapStorage, '
                      f'got {storage!r}.')
    self.storage = storage
    self.sampler = samplers_lib.Uniform() if sampler is None else sampler
    self.writer = writers_lib.RoundRobin() if writer is None else writer
    self.rate_limiter = rate_limiter
    self.kind = _check_kind(kind)
    if self.kind is not None and not self.writer.sequential:
      raise ValueError(f'ReplayBuffer: {self.writer!r} keeps single steps; a kind '
                       '(slices of episodes) needs writer=RoundRobin() or Immutable().')
    if max_times_sampled is not None and (
        isinstance(max_times_sampled, bool) or int(max_times_sampled) < 1):
      raise ValueError('ReplayBuffer: max_times_sampled must be an int >= 1 or None, '
                       f'got {max_times_sampled!r}.')
    self.max_times_sampled = max_times_sampled
    if log_to is not None and not callable(getattr(log_to, 'add', None)):
      raise TypeError(f'ReplayBuffer: log_to must be a log such as replay.RLDSLog(...), got {log_to!r}.')
    self.log_to = log_to
    self.seed = seed
    self.rng = np.random.default_rng(seed)
    capacity = storage.capacity
    self.sampler.attach(capacity)
    evict = getattr(self.writer, 'evict', 'episode')
    self.index = (None if self.kind is None else
                  episodes_lib.EpisodeIndex(capacity, evict, self.kind))
    self.times_sampled = np.zeros([capacity], np.int32)
    self.stream = steps_lib.Stream()
    self._seen = np.zeros([2], np.int64)   # INSERTED, RESERVED applied so far.
    self._assemble_fn = None
    with storage.lock():
      self._sync()

  # Adding.
  def add(self, step: Mapping[str, Any]) -> None:
    """Adds one step (a dict of fields; ``is_first`` starts an episode)."""
    flat = spec_lib.flat_step(step)
    self._insert({p: v[np.newaxis] for p, v in flat.items()}, 'step')

  def extend(self, steps: Mapping[str, Any]) -> None:
    """Adds consecutive steps: a dict of ``[N, ...]`` fields, continuing the open episode."""
    self._insert(steps_lib.flat_batch(steps), 'steps')

  def add_episode(self, episode: Mapping[str, Any]) -> None:
    """Adds a whole episode: ``{'steps': ...}`` (dense fields, a list of steps or a steps dataset)."""
    self._insert(steps_lib.episode_steps(episode), 'episode')

  def _insert(self, values: Flat, label: str) -> None:
    n = len(next(iter(values.values()))) if values else 0
    if not n:
      return
    storage = self.storage
    with storage.lock():
      if storage.spec is None:
        storage.allocate(spec_lib.spec_of(values, leading=1))
    values = spec_lib.check(values, storage.spec, 1, label)
    if self.rate_limiter is not None:
      self._wait(lambda: self.rate_limiter.can_insert(*self._counts(), n),
                 lambda: f'inserting {n} steps: the learner has not sampled enough')
    with storage.lock():
      episode_ids, step_ids = self.stream.ids(values, storage.header)
      slots = self.writer.write(storage, values, episode_ids, step_ids)
      if not self.writer.sequential:
        self._apply(slots, slots)
      self._sync()
    if self.log_to is not None:
      self.log_to.add(values, episode_ids, closed=self.stream.episode is None)

  # Offline data (rlds_lite.replay.offline).
  def to_rlds(self, data_dir: Any, name: str, **kwargs: Any) -> str:
    """Writes the stored episodes as a TFDS RLDS dataset, atomically; its dir (`offline.to_rlds`).

    Example:
      >>> import tempfile
      >>> buffer = ReplayBuffer(storage_lib.MemoryStorage(4))
      >>> buffer.extend({'reward': [1.0, 2.0], 'is_first': [True, False], 'is_last': [False, True]})
      >>> back = ReplayBuffer.from_rlds(buffer.to_rlds(tempfile.mkdtemp(), 'toy'))
      >>> back.storage.columns['reward'].tolist(), back.writer
      ([1.0, 2.0], Immutable())
    """
    return offline.to_rlds(self, data_dir, name, **kwargs)

  @classmethod
  def from_rlds(cls, episodes: Any, storage: Optional[storage_lib.Storage] = None,
                **kwargs: Any) -> 'ReplayBuffer':
    """A buffer (default ``writer=Immutable()``) filled from an RLDS dataset (`offline.from_rlds`).

    Example:
      >>> from rlds_lite import synthetic
      >>> len(ReplayBuffer.from_rlds(synthetic.dataset(2, seed=0)))
      51
    """
    return offline.from_rlds(cls, episodes, storage, **kwargs)

  # Sampling.
  def sample(self, batch_size: int) -> Tuple[Dict[str, Any], SampleInfo]:
    """A batch of ``batch_size`` samples (nested NumPy) and its `SampleInfo`."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
      raise ValueError(f'sample: batch_size must be a positive int, got {batch_size!r}.')
    if self.rate_limiter is not None:
      self._wait(lambda: self.rate_limiter.can_sample(*self._counts(), batch_size),
                 lambda: self._starved(batch_size))
    with self.storage.lock():
      self._sync()
      if not self.sampler.count:
        raise ValueError(self._nothing_to_sample())
      slots, weights = self.sampler.sample(batch_size, self.rng)
      values = self._gather(slots)
      self.storage.header[storage_lib.SAMPLED] += batch_size
      info = SampleInfo(slots, self.storage.episode_ids[slots].copy(),
                        self.storage.step_ids[slots].astype(np.int64), weights)
      self._count_draws(slots)
    batch = self._finish(values)
    if any('/' in path for path in batch):   # Nested fields.
      batch = nest_paths.nest_from_paths(batch)
    return batch, info

  def update_priority(self, indices: Any, priorities: Any) -> None:
    """Sets the priorities of samples (``SampleInfo.indices``); needs `Prioritized`."""
    if not isinstance(self.sampler, samplers_lib.Prioritized):
      raise TypeError(f'update_priority needs sampler=Prioritized(...), not {self.sampler!r}.')
    with self.storage.lock():   # `as_dataset` samples in another thread.
      self.sampler.update(indices, priorities)

  # Feeding training and checkpoints (docs/replay_state.md).
  def as_dataset(self, batch_size: int, prefetch: int = 2, chunk: int = 8) -> tf.data.Dataset:
    """A ``tf.data.Dataset`` of ``(batch, info)`` sampled batches; see `feeding.as_dataset`."""
    return feeding.as_dataset(self, batch_size, prefetch=prefetch, chunk=chunk)

  def save(self, path: str) -> str:
    """Writes the exact state to the directory ``path`` atomically; see `checkpoint.save`."""
    return checkpoint.save(self, path)

  @classmethod
  def restore(cls, path: str, storage: Optional[storage_lib.Storage] = None,
              log_to: Optional[Any] = None) -> 'ReplayBuffer':
    """The buffer saved at ``path``, sampling exactly what it would have; see `checkpoint.restore`."""
    return checkpoint.restore(cls, path, storage, log_to)

  def _gather(self, slots: np.ndarray) -> Dict[str, Any]:
    columns = self.storage.columns
    if self.kind is None:
      return {p: c[slots] for p, c in columns.items()}
    rows, start, length, terminated = self.index.locate(slots)
    steps = sample_kinds.step_indices(self.kind.offsets, start, length)
    at = (self.index.first[rows][:, np.newaxis] + steps) % self.storage.capacity
    return {'steps': {p: c[at] for p, c in columns.items()}, 'start': start,
            'length': length, 'terminated': terminated}

  def _finish(self, values: Dict[str, Any]) -> Flat:
    if self.kind is None:
      return values
    fast = _windows_in_numpy(self.kind, values)
    if fast is not None:
      return fast
    if self._assemble_fn is None:
      self._assemble_fn = tf.function(self.kind.assemble, reduce_retracing=True)
    out = self._assemble_fn(values['steps'], tf.constant(values['start']),
                            tf.constant(values['length']),
                            tf.constant(values['terminated']))
    return {p: v.numpy() for p, v in out.items()}

  def _count_draws(self, slots: np.ndarray) -> None:
    if self.max_times_sampled is None:
      return
    np.add.at(self.times_sampled, slots, 1)
    spent = np.unique(slots[self.times_sampled[slots] >= self.max_times_sampled])
    self.sampler.set(spent, np.zeros([len(spent)], bool))

  # Keeping the index in step with the storage (other processes write too).
  def _sync(self) -> None:
    header = self.storage.header
    if not self.writer.sequential:
      self._seen[:] = header[:2]
      return
    inserted, reserved = int(header[storage_lib.INSERTED]), int(header[storage_lib.RESERVED])
    old_inserted, old_reserved = (int(x) for x in self._seen)
    if (inserted, reserved) == (old_inserted, old_reserved):
      return
    cap = self.storage.capacity
    evicted = np.arange(max(old_reserved, reserved - cap), reserved) % cap
    new = np.arange(max(old_inserted, reserved - cap), inserted) % cap
    self._seen[:] = inserted, reserved
    self._apply(evicted, new)

  def _apply(self, evicted: np.ndarray, new: np.ndarray) -> None:
    sampler, index = self.sampler, self.index
    sampler.set(evicted, np.zeros([len(evicted)], bool))
    self.times_sampled[evicted] = 0
    if index is None:
      sampler.set(new, np.ones([len(new)], bool))
      return
    touched = set(index.evict_slots(evicted).tolist())
    ends = steps_lib.ends(self.storage.columns, new)
    touched.update(index.add_slots(new, self.storage.episode_ids[new], *ends,
                                   self.storage.step_ids[new]).tolist())
    dropped = index.take_dropped()
    sampler.set(dropped, np.zeros([len(dropped)], bool))
    for row in sorted(touched):
      slots, ok = index.starts_of(row)
      sampler.set(slots, ok)

  # Rate limiting.
  def _counts(self) -> Tuple[int, int]:
    header = self.storage.header
    return int(header[storage_lib.INSERTED]), int(header[storage_lib.SAMPLED])

  def _wait(self, ready, what) -> None:
    self.rate_limiter.wait(ready, what)

  def _starved(self, batch_size: int) -> str:
    inserts, samples = self._counts()
    limiter = self.rate_limiter
    if inserts < limiter.min_size:
      return (f'sampling {batch_size}: the buffer holds {inserts} of the {limiter.min_size} '
              'steps the rate limiter needs first (RateLimiter(min_size=...))')
    return (f'sampling {batch_size}: {inserts} steps inserted and {samples} sampled '
            f'exceed samples_per_insert={limiter.samples_per_insert} plus error_buffer='
            f'{limiter.error_buffer}; more inserts are needed')

  def _nothing_to_sample(self) -> str:
    if not self.storage.size:
      return 'sample: the buffer is empty; add steps first.'
    longest = int(self.index.length.max()) if self.index is not None else 0
    return (f'sample: the buffer holds {self.storage.size} steps but no sample of '
            f'{self.kind!r} (its longest episode holds {longest} steps); add longer '
            'episodes or ask for shorter samples.')

  # Looking at it.
  def __len__(self) -> int:
    return self.storage.size

  @property
  def num_samples(self) -> int:
    """How many distinct samples the sampler can draw now."""
    with self.storage.lock():
      self._sync()
      return self.sampler.count

  def num_episodes(self) -> int:
    """How many episodes (or their remaining steps) the buffer holds."""
    with self.storage.lock():   # Maps what another process allocated, too.
      self._sync()
      if self.index is not None:
        return int(np.count_nonzero(self.index.length > 0))
      ids = self.storage.episode_ids[self.storage.readable()]
    return int(len(np.unique(ids[ids >= 0])))

  def __repr__(self) -> str:
    parts = [repr(self.storage), f'sampler={self.sampler!r}', f'writer={self.writer!r}']
    if self.kind is not None:
      parts.append(f'kind={self.kind!r}')
    if self.rate_limiter is not None:
      parts.append(f'rate_limiter={self.rate_limiter!r}')
    episodes = self.num_episodes()
    parts.append(f'{len(self)} steps, {episodes} episode{"" if episodes == 1 else "s"}')
    return f'ReplayBuffer({", ".join(parts)})'
