"""Batches drawn from several buffers at exact counts per batch (RLPD's offline + online 50/50): `mix`, `Mix`, `MixInfo`."""

import dataclasses
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from rlds_lite import nest_paths
from rlds_lite.pipeline import mixing as pipeline_mixing
from rlds_lite.replay import buffer as buffer_lib
from rlds_lite.replay import offline
from rlds_lite.replay import samplers as samplers_lib

__all__ = ['Mix', 'MixInfo', 'mix']


@dataclasses.dataclass(frozen=True)
class MixInfo(buffer_lib.SampleInfo):
  """`SampleInfo` of a mixed batch, and which buffer each sample came from.

  Attributes:
    sources: the index in `names` of each sample's buffer (``indices``,
      ``episode_ids``, ``step_ids`` are that buffer's).
    names: the buffers' names, in the batch's order.
  """
  sources: np.ndarray
  names: Tuple[str, ...]


def _flat_signature(batch: Mapping[str, Any]) -> Dict[str, Tuple[Tuple[int, ...], str]]:
  return {path: (tuple(np.shape(v)[1:]), np.asarray(v).dtype.name)
          for path, v in nest_paths.flatten_with_paths(batch)}


class Mix:
  """Draws ``counts[i]`` samples from buffer ``i`` for every batch (blocks in that order, concatenated).

  Made by `mix`. Each buffer samples with its own sampler and rate limiter;
  `update_priority` hands each buffer its own samples' priorities.
  """

  def __init__(self, buffers: Mapping[str, buffer_lib.ReplayBuffer], counts: List[int]):
    self.buffers = dict(buffers)
    self.names = tuple(self.buffers)
    self.counts = list(counts)
    self.batch_size = int(sum(counts))
    self._signature = None

  def __repr__(self) -> str:
    parts = ', '.join(f'{n!r}: {c}' for n, c in zip(self.names, self.counts))
    return f'Mix({{{parts}}} per batch of {self.batch_size})'

  def sample(self) -> Tuple[Dict[str, Any], MixInfo]:
    """One batch: ``counts`` samples of each buffer, in the order of `names`, and its `MixInfo`."""
    batches, infos = [], []
    for name, count in zip(self.names, self.counts):
      if count:
        batch, info = self.buffers[name].sample(count)
        self._check(name, batch)
        batches.append(nest_paths.flatten_with_paths(batch))
        infos.append(info)
    flat = {path: np.concatenate([dict(b)[path] for b in batches])
            for path, _ in batches[0]}
    join = lambda field: np.concatenate([getattr(i, field) for i in infos])
    sources = np.repeat(np.arange(len(self.names)), self.counts)
    info = MixInfo(join('indices'), join('episode_ids'), join('step_ids'), join('weights'),
                   sources, self.names)
    return nest_paths.nest_from_paths(flat), info

  def _check(self, name: str, batch: Mapping[str, Any]) -> None:
    signature = _flat_signature(batch)
    if self._signature is None:
      self._signature = (name, signature)
      return
    first, expected = self._signature
    for path in sorted(set(signature) | set(expected)):
      mine, theirs = signature.get(path), expected.get(path)
      if mine != theirs:
        describe = lambda s: 'absent' if s is None else f'{s[1]} {list(s[0])}'
        raise ValueError(
            f'mix: the samples of {name!r} and {first!r} differ in field {path!r}: '
            f'{describe(mine)} in {name!r}, {describe(theirs)} in {first!r}; give the '
            'buffers the same fields, dtypes and kind.')

  def update_priority(self, info: MixInfo, priorities: Any) -> None:
    """Sets the priorities of a mixed batch's samples, each in its own buffer (those with `Prioritized`)."""
    priorities = np.asarray(priorities)
    if priorities.shape != info.sources.shape:
      raise ValueError(f'update_priority: {priorities.shape[0] if priorities.ndim else 0} '
                       f'priorities for a batch of {len(info.sources)}.')
    for i, name in enumerate(info.names):
      buffer = self.buffers[name]
      mask = info.sources == i
      if mask.any() and isinstance(buffer.sampler, samplers_lib.Prioritized):
        buffer.update_priority(info.indices[mask], priorities[mask])


def _as_buffer(name: str, value: Any, kind: Any, seed: int) -> buffer_lib.ReplayBuffer:
  if isinstance(value, buffer_lib.ReplayBuffer):
    return value
  try:
    return offline.from_rlds(buffer_lib.ReplayBuffer, value, kind=kind, seed=seed)
  except (TypeError, ValueError, FileNotFoundError) as e:
    raise type(e)(f'mix: {name!r} is neither a ReplayBuffer nor a readable RLDS dataset: '
                  f'{e}') from e


def _per_batch(keys: List[Any], weights: Optional[Mapping[str, float]],
               batch_size: Optional[int], counts: Optional[Mapping[str, int]]) -> List[int]:
  """Samples per batch of each buffer: ``counts``, or ``weights`` rounded to ``batch_size``."""
  names = [str(n) for n in keys]
  if counts is not None:
    if weights is not None or batch_size is not None:
      raise ValueError('mix: give counts= or weights= with batch_size=, not both.')
    if set(counts) != set(keys):
      raise ValueError(f'mix: counts has keys {sorted(counts)}; it needs exactly {names}.')
    per_batch = [counts[n] for n in keys]
    if any(isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 0
           for c in per_batch) or not sum(per_batch):
      raise ValueError(f'mix: counts must be ints >= 0 with a positive sum, got {dict(counts)}.')
    return [int(c) for c in per_batch]
  if weights is None or batch_size is None:
    raise ValueError('mix: give weights= and batch_size= (or counts=).')
  if not isinstance(weights, Mapping) or set(weights) != set(keys):
    raise ValueError(f'mix: weights must be a dict with exactly the keys {names}, got '
                     f'{weights!r}.')
  if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
    raise ValueError(f'mix: batch_size must be a positive int, got {batch_size!r}.')
  shares = np.asarray([weights[n] for n in keys], np.float64)
  if np.any(~np.isfinite(shares)) or np.any(shares < 0):
    raise ValueError(f'mix: weights must be finite and >= 0, got {dict(weights)}.')
  if abs(shares.sum() - 1.0) > pipeline_mixing.WEIGHT_TOLERANCE:
    raise ValueError(f'mix: weights {dict(weights)} sum to {float(shares.sum())!r}, not 1.')
  per_batch = pipeline_mixing.exact_counts(shares, int(batch_size))
  pipeline_mixing.check_exact_shares([repr(n) for n in names], shares, per_batch,
                                     op='mix', other_way='larger weights')
  return per_batch


def mix(buffers: Mapping[str, Any], weights: Optional[Mapping[str, float]] = None,
        batch_size: Optional[int] = None, *, counts: Optional[Mapping[str, int]] = None,
        kind: Any = None, seed: int = 0) -> Mix:
  """A `Mix` of named buffers (or RLDS datasets) at exact counts per batch, like ``pipeline.mix(exact=True)``.

  Args:
    buffers: name -> `ReplayBuffer`, or an RLDS dataset (a `rlds_lite.Source`, path or
      name) loaded into an immutable in-memory buffer (`ReplayBuffer.from_rlds`).
    weights: name -> share of each batch (summing to 1), rounded to exact counts
      (``pipeline.mixing.exact_counts``); with ``batch_size``.
    batch_size: samples per batch.
    counts: instead of ``weights`` and ``batch_size``: name -> samples per batch.
    kind: the sample kind of buffers loaded from datasets (None: the given buffers' kind).
    seed: the sampler seed of buffers loaded from datasets.

  Example:
    >>> from rlds_lite import replay
    >>> offline = replay.ReplayBuffer(replay.MemoryStorage(8), writer=replay.Immutable())
    >>> offline.extend({'reward': np.zeros([8], np.float32)})
    >>> online = replay.ReplayBuffer(replay.MemoryStorage(8))
    >>> online.extend({'reward': np.ones([4], np.float32)})
    >>> both = mix({'offline': offline, 'online': online}, {'offline': 0.5, 'online': 0.5}, 6)
    >>> batch, info = both.sample()
    >>> batch['reward'].tolist(), info.sources.tolist()
    ([0.0, 0.0, 0.0, 1.0, 1.0, 1.0], [0, 0, 0, 1, 1, 1])
  """
  if not isinstance(buffers, Mapping) or not buffers:
    raise TypeError('mix: buffers must be a non-empty dict of name -> ReplayBuffer (or RLDS '
                    f'dataset), got {buffers!r}.')
  per_batch = _per_batch(list(buffers), weights, batch_size, counts)
  given = [b for b in buffers.values() if isinstance(b, buffer_lib.ReplayBuffer)]
  if kind is None and given:
    kind = given[0].kind
  return Mix({name: _as_buffer(name, value, kind, seed) for name, value in buffers.items()},
             per_batch)
