"""What a sample is (`Windows`, `Transitions`, `RobotSamples`), for every pipeline.

Each says which samples an episode has (``counts``, ``starts``), which steps
a sample reads (``offsets``) and how a batch is made (``assemble``).
"""

import dataclasses
from typing import Any, Callable, Dict, Optional, Union

import numpy as np
import tensorflow as tf

from rlds_lite import op_context
from rlds_lite import option_objects
from rlds_lite import rlds_types
from rlds_lite.dense import indexing
from rlds_lite.dense import last_step as last_step_lib
from rlds_lite.dense.chunking import PAD_MASK_SUFFIX
from rlds_lite.dense.goals import GOAL
from rlds_lite.dense.robot import check_knobs
from rlds_lite.dense.robot import robot_samples as dense_robot_samples
from rlds_lite.dense.transitions import NEXT_OBSERVATION
from rlds_lite.dense.transitions import transitions as dense_transitions
from rlds_lite.dense.windows import MASK
from rlds_lite.dense.windows import windows as dense_windows

__all__ = ['Windows', 'Transitions', 'RobotSamples', 'SampleKind', 'check_kind']

Flat = Dict[str, tf.Tensor]
Decode = Callable[[Flat], Flat]


def _identity(values: Flat) -> Flat:
  return values


def step_indices(offsets: Any, start: Any, length: Any, xp: Any = np) -> Any:
  """Each sample's steps ``start + offsets`` clipped into ``[0, length - 1]``.

  ``xp`` is ``np`` or ``tf`` (``start``/``length`` ``[B]``; result ``[B, K]``).

  Example:
    >>> step_indices(np.array([0, 2, 4]), np.array([1, 3]), np.array([9, 6])).tolist()
    [[1, 3, 5], [3, 5, 5]]
  """
  if xp is np:
    indices = start[:, None] + np.asarray(offsets)[None, :]
    return np.clip(indices, 0, np.maximum(length - 1, 0)[:, None])
  indices = start[:, tf.newaxis] + tf.constant(offsets, start.dtype)[tf.newaxis]
  return tf.clip_by_value(indices, tf.zeros_like(indices),
                          tf.maximum(length - 1, 0)[:, tf.newaxis])


@dataclasses.dataclass(frozen=True)
class Windows:
  """Windows of ``size`` steps, as `rlds_lite.dense.windows` makes them.

  Attributes:
    size: steps per window.
    shift: steps between the starts of consecutive windows.
    stride: steps between consecutive elements of a window.
    drop_remainder: keep only complete windows; else every start ``< T``
      makes a window, zero-padded past the end, with a ``'mask'``.

  Example:
    >>> Windows(size=4)
    Windows(size=4, shift=1, stride=1, drop_remainder=True)
  """
  size: int
  shift: int = 1
  stride: int = 1
  drop_remainder: bool = True

  @op_context.named('Windows')
  def __post_init__(self):
    for name in ('size', 'shift', 'stride'):
      indexing.check_positive_int(getattr(self, name), name)
    object.__setattr__(self, 'drop_remainder', bool(self.drop_remainder))

  @property
  def offsets(self) -> np.ndarray:
    """The steps a sample reads, relative to its start: ``j * stride``."""
    return np.arange(self.size, dtype=np.int64) * self.stride

  def counts(self, lengths: np.ndarray, terminated: np.ndarray) -> np.ndarray:
    """Samples of each episode (int64).

    Example:
      >>> Windows(size=3).counts(np.array([5, 2, 3]), np.array([True, False, True])).tolist()
      [3, 0, 1]
      >>> Transitions(n=2).counts(np.array([5, 1]), np.array([True, False])).tolist()
      [4, 0]
    """
    del terminated
    lengths = np.asarray(lengths, np.int64)
    if self.drop_remainder:
      span = int(self.offsets[-1]) + 1
      return np.maximum((lengths - span) // self.shift + 1, 0)
    return (lengths + self.shift - 1) // self.shift

  def starts(self, within: np.ndarray) -> np.ndarray:
    """The start step of each episode's ``within``-th sample."""
    return np.asarray(within, np.int64) * self.shift

  def assemble(self, steps: Flat, start: tf.Tensor, length: tf.Tensor,
               terminated: tf.Tensor, decode: Decode = _identity) -> Flat:
    """A batch of windows from ``steps`` ``[B, K, ...]`` read at `step_indices`.

    ``decode`` is applied to the values (before padding is zeroed).
    """
    del terminated
    out = decode(dict(steps))
    if self.drop_remainder:
      return out
    indices = start[:, tf.newaxis] + tf.constant(self.offsets, start.dtype)
    mask = indices < length[:, tf.newaxis]
    out = {path: tf.where(indexing.broadcast_mask(mask, value), value,
                          tf.zeros_like(value)) for path, value in out.items()}
    out[MASK] = mask
    return out

  def reference(self, steps: Dict[str, Any]) -> Dict[str, Any]:
    """`dense.windows` of one episode (the samples in order), for tests."""
    return dense_windows(steps, self.size, self.shift, self.stride,
                               self.drop_remainder)


@dataclasses.dataclass(frozen=True)
class Transitions:
  """N-step transitions, as `rlds_lite.dense.transitions` makes them.

  Attributes:
    n: rewards summed per transition at most.
    gamma: the discount factor in ``[0, 1]``.
    last_step: ``'invalid'`` (RLDS) or ``'valid'`` (see `dense.LastStep`).

  Example:
    >>> Transitions(n=3, gamma=0.9)
    Transitions(n=3, gamma=0.9, last_step='invalid')
  """
  n: int = 1
  gamma: float = 1.0
  last_step: Union[str, last_step_lib.LastStep] = 'invalid'

  @op_context.named('Transitions')
  def __post_init__(self):
    indexing.check_positive_int(self.n, 'n')
    gamma = float(self.gamma)
    if not 0.0 <= gamma <= 1.0:
      raise ValueError(f'gamma must be in [0, 1], got {gamma}.')
    object.__setattr__(self, 'gamma', gamma)
    policy = last_step_lib.as_last_step(self.last_step)
    object.__setattr__(self, 'last_step', policy.value)

  @property
  def _valid(self) -> bool:
    return self.last_step == last_step_lib.LastStep.VALID.value

  @property
  def offsets(self) -> np.ndarray:
    """Steps ``t .. t + n`` (clipped at the last step)."""
    return np.arange(self.n + 1, dtype=np.int64)

  def counts(self, lengths: np.ndarray, terminated: np.ndarray) -> np.ndarray:
    lengths = np.asarray(lengths, np.int64)
    counts = np.maximum(lengths - 1, 0)
    if self._valid:
      counts = np.where(np.asarray(terminated, bool) & (lengths > 0), lengths,
                        counts)
    return counts

  def starts(self, within: np.ndarray) -> np.ndarray:
    return np.asarray(within, np.int64)

  def assemble(self, steps: Flat, start: tf.Tensor, length: tf.Tensor,
               terminated: tf.Tensor, decode: Decode = _identity) -> Flat:
    """A batch of n-step transitions from ``steps`` ``[B, n + 1, ...]``.

    ``steps[:, k]`` is step ``min(t + k, T - 1)``; the sums are
    `dense.transitions`'s.
    """
    reward_key, discount_key = rlds_types.REWARD, rlds_types.DISCOUNT
    if reward_key not in steps:
      raise ValueError(f'Transitions needs the step field {reward_key!r}.')
    observation = {p: v for p, v in steps.items()
                   if p == rlds_types.OBSERVATION or
                   p.startswith(rlds_types.OBSERVATION + '/')}
    if not observation:
      raise ValueError("Transitions needs the step field 'observation'.")
    reward = steps[reward_key][:, :self.n]                      # [B, n, ...]
    last = length - 1                                           # [B]
    end = last
    if self._valid:
      end = last + tf.cast(terminated, last.dtype)
    k = tf.range(self.n, dtype=start.dtype)
    inside = (start[:, tf.newaxis] + k[tf.newaxis, :]) < end[:, tf.newaxis]
    if discount_key in steps:
      discount = steps[discount_key][:, :self.n]
    else:
      discount = tf.ones(tf.shape(inside), reward.dtype)
    factors = tf.cast(self.gamma, discount.dtype) * discount
    factors = tf.where(indexing.broadcast_mask(inside, factors), factors,
                       tf.ones_like(factors))
    weights = tf.math.cumprod(factors, axis=1, exclusive=True)
    rewards = tf.where(indexing.broadcast_mask(inside, reward), reward,
                       tf.zeros_like(reward))
    weights = tf.cast(indexing.broadcast_mask(weights, rewards), reward.dtype)
    n_step_reward = tf.reduce_sum(weights * rewards, axis=1)
    n_step_discount = tf.reduce_prod(factors, axis=1)
    ends = tf.minimum(start + self.n, end)
    reaches = (ends == end) & tf.cast(terminated, tf.bool)
    n_step_discount = tf.where(
        indexing.broadcast_mask(reaches, n_step_discount),
        tf.zeros_like(n_step_discount), n_step_discount)
    out = decode({p: v[:, 0] for p, v in steps.items()
                  if p not in (reward_key, discount_key)})
    out[reward_key] = n_step_reward
    out[discount_key] = n_step_discount
    following = {}
    for path, value in observation.items():
      suffix = path[len(rlds_types.OBSERVATION):]
      following[NEXT_OBSERVATION + suffix] = tf.gather(
          value, (ends - start)[:, tf.newaxis], axis=1, batch_dims=1)[:, 0]
    out.update(decode(following))
    return out

  def reference(self, steps: Dict[str, Any]) -> Dict[str, Any]:
    """`dense.transitions` of one episode, for tests."""
    return dense_transitions(steps, self.n, self.gamma,
                                       last_step=self.last_step)


def _under(path: str, key: str) -> bool:
  return path == key or path.startswith(key + '/')


_REPR_ALWAYS = 7
"""RobotSamples' fields shown in its repr even at their defaults."""


@dataclasses.dataclass(frozen=True, repr=False)
class RobotSamples:
  """Octo-shaped samples, as `rlds_lite.dense.robot_samples` makes them.

  At each anchor step ``t`` (``0, shift, ...`` with a valid action): the
  last ``history`` observations (every ``history_stride`` steps) with
  ``observation_pad_mask``, the ``action_chunk`` actions from ``t`` with
  ``action_pad_mask``, and every other step field at ``t``.

  Attributes:
    history: observations per sample.
    action_chunk: actions per sample.
    last_step: ``'invalid'`` (RLDS) or ``'valid'`` (the last action is real).
    history_stride: steps between history observations.
    shift: steps between anchors.
    history_pad: ``'first'`` (repeat the first observation, as Octo) or
      ``'zero'``.
    action_pad: ``'last'`` (repeat the last valid action, as Octo) or
      ``'zero'``.
    keep_actionless: also anchor at steps without a valid action.
    max_samples: at most this many random anchors per episode.
    goal: a goal observation per sample (``'future'``, ``'final'``,
      ``'uniform'`` or ``'geometric'``; see `rlds_lite.dense.relabel_goals`).
    goal_p: ``'geometric'``'s probability, in (0, 1].
    observation_key, action_key, goal_key: field names.
    index_key: if given, each sample's anchor step index under this key.

  Example:
    >>> kind = RobotSamples(history=2, action_chunk=4)
    >>> kind.history, kind.action_chunk
    (2, 4)
    >>> RobotSamples(goal='geometric')
    Traceback (most recent call last):
    ...
    ValueError: RobotSamples: goal 'geometric' needs goal_p in (0, 1], got None.
  """
  history: int = 1
  action_chunk: int = 1
  last_step: Union[str, last_step_lib.LastStep] = 'invalid'
  history_stride: int = 1
  shift: int = 1
  history_pad: str = 'first'
  action_pad: str = 'last'
  keep_actionless: bool = False
  max_samples: Optional[int] = None
  goal: Optional[str] = None
  goal_p: Optional[float] = None
  observation_key: str = rlds_types.OBSERVATION
  action_key: str = rlds_types.ACTION
  goal_key: str = GOAL
  index_key: Optional[str] = None

  @op_context.named('RobotSamples')
  def __post_init__(self):
    knobs = check_knobs(self.dense_kwargs())
    object.__setattr__(self, 'goal_p', knobs['goal_p'])
    object.__setattr__(self, 'last_step', knobs['last_step'])

  @property
  def _history_offsets(self) -> np.ndarray:
    return (np.arange(self.history, dtype=np.int64) - (self.history - 1)) * (
        self.history_stride)

  @property
  def offsets(self) -> np.ndarray:
    """History steps before the anchor, then the anchor and the chunk."""
    return np.union1d(self._history_offsets,
                      np.arange(self.action_chunk, dtype=np.int64))

  def _num_valid(self, lengths):
    if self.last_step == last_step_lib.LastStep.VALID.value:
      return lengths
    return lengths - 1

  def counts(self, lengths: np.ndarray, terminated: np.ndarray) -> np.ndarray:
    del terminated
    valid = np.maximum(self._num_valid(np.asarray(lengths, np.int64)), 0)
    return (valid + self.shift - 1) // self.shift

  def starts(self, within: np.ndarray) -> np.ndarray:
    return np.asarray(within, np.int64) * self.shift

  def assemble(self, steps: Flat, start: tf.Tensor, length: tf.Tensor,
               terminated: tf.Tensor, decode: Decode = _identity) -> Flat:
    """A batch of samples from ``steps`` ``[B, K, ...]`` read at `offsets`."""
    del terminated
    obs_key, action_key = self.observation_key, self.action_key
    for key in (obs_key, action_key):
      if not any(_under(p, key) for p in steps):
        raise ValueError(f'RobotSamples needs the step field {key!r}.')
    offsets = self.offsets
    column = {int(o): i for i, o in enumerate(offsets)}
    anchor = column[0]
    history_columns = [column[int(o)] for o in self._history_offsets]
    history_mask = (start[:, tf.newaxis] + tf.constant(
        self._history_offsets, start.dtype)[tf.newaxis]) >= 0
    num_valid = self._num_valid(length)
    j = tf.range(self.action_chunk, dtype=start.dtype)
    action_mask = start[:, tf.newaxis] + j[tf.newaxis] < num_valid[:, tf.newaxis]
    last_valid = tf.maximum(num_valid - 1 - start, 0)
    action_columns = tf.gather(
        tf.constant([column[i] for i in range(self.action_chunk)], tf.int64),
        tf.minimum(j[tf.newaxis], last_valid[:, tf.newaxis]))     # [B, chunk]
    out = {p: v[:, anchor] for p, v in steps.items()
           if not (_under(p, obs_key) or _under(p, action_key))}
    for path, value in steps.items():
      if _under(path, obs_key):   # Zero padding after decoding (below).
        out[path] = tf.gather(value, history_columns, axis=1)
      elif _under(path, action_key):
        values = tf.gather(value, action_columns, axis=1, batch_dims=1)
        if self.action_pad == 'zero':
          values = tf.where(indexing.broadcast_mask(action_mask, values),
                            values, tf.zeros_like(values))
        out[path] = values
    out = decode(out)
    if self.history_pad == 'zero':
      for path in [p for p in out if _under(p, obs_key)]:
        out[path] = tf.where(indexing.broadcast_mask(history_mask, out[path]),
                             out[path], tf.zeros_like(out[path]))
    out[obs_key + PAD_MASK_SUFFIX] = history_mask
    out[action_key + PAD_MASK_SUFFIX] = action_mask
    return out

  def reference(self, steps: Dict[str, Any], seed: Any = None
                ) -> Dict[str, Any]:
    """`dense.robot_samples` of one episode (``seed``: of random choices)."""
    return dense_robot_samples(steps, self, seed=seed)

  def __repr__(self) -> str:
    # The fields after action_pad only when set: a random-access state's
    # fingerprint holds this repr, and states saved before they existed
    # must still restore.
    return option_objects.short_repr(self, always=_REPR_ALWAYS)

  def dense_kwargs(self) -> Dict[str, Any]:
    """The keyword arguments of `rlds_lite.dense.robot_samples` for this kind."""
    return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

  def random_access_problem(self) -> Optional[str]:
    """Why random access cannot sample this kind, or None."""
    for name, default in (('keep_actionless', False), ('max_samples', None),
                          ('goal', None), ('index_key', None)):
      if getattr(self, name) != default:
        return (f'RobotSamples({name}=...) is not offered by random access '
                '(its sampler draws uniformly over all anchors); use '
                'rlds_lite.pipeline.robot_samples_dataset')
    return None


SampleKind = Union[Windows, Transitions, RobotSamples]
KINDS = (Windows, Transitions, RobotSamples)


def check_kind(kind: Any) -> SampleKind:
  """``kind`` if it is a sample kind (an instance), else a TypeError.

  Example:
    >>> check_kind(Windows)
    Traceback (most recent call last):
    ...
    TypeError: random access: kind must be a sample kind: Windows(...), Transitions(...) or RobotSamples(...), got the class Windows; call it: Windows(...).
  """
  problem = isinstance(kind, RobotSamples) and kind.random_access_problem()
  if problem:
    raise ValueError(f'random access: {problem}.')
  if isinstance(kind, KINDS):
    return kind
  if isinstance(kind, type) and issubclass(kind, KINDS):
    got = f'the class {kind.__name__}; call it: {kind.__name__}(...)'
  else:
    got = repr(kind)
  raise TypeError('random access: kind must be a sample kind: Windows(...), '
                  f'Transitions(...) or RobotSamples(...), got {got}.')
