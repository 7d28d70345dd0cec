"""A seeded uniform-random policy for any (nested) dm_env action spec."""

from typing import Any, Optional

from dm_env import specs
import numpy as np
import tensorflow as tf

__all__ = ['RandomPolicy', 'random_policy']


def _sample(spec: specs.Array, rng: np.random.Generator) -> np.ndarray:
  """One uniform sample of a leaf spec, with the spec's shape and dtype."""
  if not isinstance(spec, specs.Array):
    raise TypeError(f'`action_spec` leaves must be dm_env specs, got {spec!r}.')
  dtype = np.dtype(spec.dtype)
  if isinstance(spec, specs.DiscreteArray):
    return rng.integers(spec.num_values, size=spec.shape).astype(dtype)
  if not isinstance(spec, specs.BoundedArray):
    raise ValueError(
        f'`action_spec` {spec!r} is unbounded: a random policy needs '
        'BoundedArray or DiscreteArray specs.')
  low = np.broadcast_to(spec.minimum, spec.shape)
  high = np.broadcast_to(spec.maximum, spec.shape)
  if dtype.kind == 'b':
    return rng.integers(2, size=spec.shape).astype(dtype)
  if dtype.kind in 'iu':
    return rng.integers(low, high, size=spec.shape, endpoint=True).astype(dtype)
  return rng.uniform(low, high, size=spec.shape).astype(dtype)


class RandomPolicy:
  """Uniform-random actions for a (nested) bounded action spec; the timestep is ignored.

  Args:
    action_spec: A dm_env spec nest of `DiscreteArray` / `BoundedArray` leaves.
    seed: Seed of the sampler; `None` for a random seed.

  Example:
    >>> from dm_env import specs
    >>> policy = RandomPolicy(specs.BoundedArray((2,), np.float32, -1, 1), 0)
    >>> action = policy(None)
    >>> action.dtype, action.shape, bool(np.all(np.abs(action) <= 1))
    (dtype('float32'), (2,), True)
  """

  def __init__(self, action_spec: Any, seed: Optional[int] = None):
    """Creates the policy (see the class for the arguments)."""
    self._action_spec = action_spec
    self._rng = np.random.default_rng(seed)
    # Fail now, not at the first step, on a spec we cannot sample.
    tf.nest.map_structure(lambda s: _sample(s, np.random.default_rng(0)),
                          action_spec)

  def seed(self, seed: Optional[int]) -> None:
    """Re-seeds the sampler (`None`: random).

    Example:
      >>> from dm_env import specs
      >>> policy = RandomPolicy(specs.DiscreteArray(10), seed=1)
      >>> first = [policy(None).item() for _ in range(3)]
      >>> policy.seed(1)
      >>> [policy(None).item() for _ in range(3)] == first
      True
    """
    self._rng = np.random.default_rng(seed)

  def __call__(self, timestep: Any) -> Any:
    """Samples one action (same nest structure as the action spec)."""
    del timestep
    return tf.nest.map_structure(lambda s: _sample(s, self._rng),
                                 self._action_spec)


def random_policy(action_spec: Any, seed: Optional[int] = None) -> RandomPolicy:
  """A `RandomPolicy` for `action_spec`, seeded with `seed`.

  Example:
    >>> from dm_env import specs
    >>> from rlds_lite import envs
    >>> env = envs.make('catch', seed=0)
    >>> policy = random_policy(env.action_spec(), seed=0)
    >>> env.action_spec().validate(policy(env.reset())).dtype
    dtype('int64')
    >>> policy = random_policy(specs.DiscreteArray(3), seed=0)
    >>> [policy(None).item() for _ in range(5)]
    [2, 1, 1, 0, 0]
  """
  return RandomPolicy(action_spec, seed)
