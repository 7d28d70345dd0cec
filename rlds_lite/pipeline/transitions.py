"""Shuffled batches of n-step transitions with discounted returns.

Example:
  >>> import tensorflow as tf
  >>> steps = {'observation': tf.constant([0, 1, 2]),
  ...          'reward': tf.constant([1.0, 2.0, 0.0]),
  ...          'is_terminal': tf.constant([False, False, True])}
  >>> episodes = tf.data.Dataset.from_tensors({'steps': steps})
  >>> batch = next(iter(transitions_dataset(episodes, 8, n=2, shuffle=False)))
  >>> batch['reward'].numpy().tolist(), batch['discount'].numpy().tolist()
  ([3.0, 2.0], [0.0, 0.0])
"""

from typing import Any, Dict, Optional, Sequence, Union

import tensorflow as tf

from rlds_lite import rlds_types
from rlds_lite import sample_kinds
from rlds_lite.dense import indexing
from rlds_lite import dense
from rlds_lite.dense import last_step as last_step_lib
from rlds_lite.pipeline import inputs
from rlds_lite.pipeline import pools

_NEXT = dense.NEXT_OBSERVATION


_COMPUTED = (rlds_types.REWARD, rlds_types.DISCOUNT)
_LIGHT_FIELDS = (rlds_types.REWARD, rlds_types.DISCOUNT,
                 rlds_types.IS_TERMINAL, rlds_types.IS_LAST)


def _sampler(n: int, gamma: Any, episode_fields: Sequence[str],
             last_step: Any) -> pools.Sampler:
  """Transitions of an episode: whole (``dense.transitions``) or planned.

  The plan runs ``dense.transitions`` on the step *indices* (as the
  observation) with the episode's rewards and discounts: it gives the
  n-step returns and the start/end step of every transition, and the
  observations and other fields are gathered later, per batch.
  """

  def samples(episode: Dict[str, Any]) -> Dict[str, Any]:
    out = dense.transitions(episode[rlds_types.STEPS], n=n, gamma=gamma,
                            last_step=last_step)
    num = tf.shape(out[rlds_types.REWARD])[0]
    out.update(inputs.episode_values(episode, episode_fields, num))
    return out

  def plan(episode: Dict[str, Any]) -> pools.Plan:
    steps = episode[rlds_types.STEPS]
    light = {k: steps[k] for k in _LIGHT_FIELDS if k in steps}
    light[rlds_types.OBSERVATION] = tf.range(dense.episode_length(steps))
    out = dense.transitions(light, n=n, gamma=gamma, last_step=last_step)
    index = tf.stack([out[rlds_types.OBSERVATION], out[_NEXT]], axis=1)
    values = {k: out[k] for k in _COMPUTED}
    values.update(inputs.episode_values(episode, episode_fields,
                                       tf.shape(index)[0]))
    kept = {k: v for k, v in steps.items() if k not in _COMPUTED}
    return kept, index, values

  def assemble(steps: Dict[str, Any], index: tf.Tensor,
               values: Dict[str, Any]) -> Dict[str, Any]:
    start = dense.gather_steps(steps, index[:, 0])
    out = {rlds_types.OBSERVATION: start[rlds_types.OBSERVATION]}
    if rlds_types.ACTION in start:
      out[rlds_types.ACTION] = start[rlds_types.ACTION]
    out.update(start)   # Keys in the order dense.transitions gives them.
    for key in _COMPUTED:
      out[key] = values[key]
    out[_NEXT] = dense.gather_steps(steps[rlds_types.OBSERVATION], index[:, 1])
    out.update({k: v for k, v in values.items() if k not in _COMPUTED})
    return out

  return pools.Sampler(samples, plan, assemble, steps_per_sample=2)


def transitions_dataset(episodes: tf.data.Dataset,
                        kind: Any = None,
                        batch_size: Optional[int] = None,
                        *,
                        n: int = 1,
                        gamma: Union[float, tf.Tensor] = 1.0,
                        last_step: Union[last_step_lib.LastStep, str] = 'invalid',
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
  """Batches of n-step transitions of all episodes, shuffled across episodes.

  The samples are exactly those of ``rlds_lite.dense.transitions(steps, n,
  gamma, last_step=last_step)`` for every episode (one per non-last step,
  and one more for a terminal last step under ``last_step='valid'``:
  ``observation``,
  ``action``, n-step ``reward`` and ``discount`` (0 when the window reaches
  a terminal step; truncated episodes keep a bootstrap discount),
  ``next_observation`` and the start step's other fields), each once per
  pass over ``episodes``. Returns are computed per episode (a parallel
  ``map``); transitions are shuffled within pools (see
  ``rlds_lite.pipeline.pools``) of ``pool_episodes`` consecutive episodes
  whose steps are stored once: the transitions of a whole pool permuted
  together and gathered a few batches at a time (``pool='samples'``, memory
  about ``2 * pool_episodes * episode_bytes``), or gathered a few at a time
  from each of ``pool_episodes`` open episodes in turn (``pool='episodes'``,
  for large observations: memory about ``pool_episodes * episode_bytes``);
  ``'auto'`` picks by transition size.

  Args:
    episodes: RLDS episodes, dense or with nested steps datasets; steps need
      ``observation`` and a float ``reward``; ``discount`` (float) and
      ``is_terminal`` are used when present.
    kind: a `rlds_lite.Transitions` kind (``n``, ``gamma``, ``last_step``);
      or, as before kinds, the batch size (then ``n``, ``gamma`` and
      ``last_step`` are keywords).
    batch_size: transitions per batch (positive).
    n: the maximal number of rewards summed per transition (positive).
    gamma: the discount factor in ``[0, 1]``.
    last_step: ``'invalid'`` (default, RLDS: the last step's action and
      reward are not a transition's) or ``'valid'`` (data whose last step
      carries a real action and reward, e.g. a success reward: a terminal
      last step starts a transition too; see ``dense.transitions``). A
      ``tf.data`` graph cannot warn; ``rlds_lite.validate`` and
      ``stats.compute`` say whether last steps hold non-zero values.
    episode_fields: episode metadata fields to copy into every transition.
    shuffle: shuffle (else transitions come in episode order).
    pool: ``'auto'``, ``'samples'`` or ``'episodes'``: how to pool
      transitions for shuffling (same transitions either way).
    pool_episodes: episodes per pool (positive): more mixes more episodes
      per batch and takes more memory.
    episode_shuffle_buffer: episodes in an episode-level shuffle buffer
      before pooling (0: none).
    seed: seed for reproducible shuffling.
    num_parallel_calls: parallelism of the per-episode ``map`` (and of the
      gathers of ``pool='samples'``).
    deterministic: that ``map``'s ``deterministic``.
    drop_last_batch: drop a final batch smaller than ``batch_size``.
    prefetch: batches to prefetch (0: none).

  Returns:
    A dataset of dicts of ``[B, ...]`` tensors.

  Raises:
    TypeError: if ``episodes`` is not a dataset of episodes, or reward /
      discount are not floats.
    ValueError: if ``batch_size``, ``n`` or ``pool_episodes`` is not
      positive, ``pool`` is unknown, ``gamma`` is not in ``[0, 1]``,
      ``observation``/``reward`` is missing, a field name collides, or
      ``last_step`` is not ``'invalid'``/``'valid'``.

  Example:
    >>> steps = {'observation': tf.constant([0, 1, 2]),
    ...          'reward': tf.constant([1.0, 2.0, 0.0])}
    >>> episodes = tf.data.Dataset.from_tensors({'steps': steps})
    >>> batch = next(iter(transitions_dataset(episodes, 8, shuffle=False)))
    >>> batch['next_observation'].numpy().tolist()
    [1, 2]
    >>> from rlds_lite.sample_kinds import Transitions
    >>> batch = next(iter(transitions_dataset(episodes, Transitions(n=2), 8,
    ...                                       shuffle=False)))
    >>> batch['reward'].numpy().tolist()
    [3.0, 2.0]
  """
  op = 'transitions_dataset'
  if isinstance(kind, sample_kinds.Transitions):
    if (n, gamma, last_step) != (1, 1.0, 'invalid'):
      raise TypeError(f'{op}: pass n, gamma and last_step in the kind '
                      '(Transitions(...)), not beside it.')
    n, gamma, last_step = kind.n, kind.gamma, kind.last_step
  elif kind is not None:  # The batch size, positional as before kinds.
    if batch_size is not None:
      raise TypeError(f'{op}: kind must be a Transitions(...), got '
                      f'{type(kind).__name__}.')
    batch_size = kind
  if batch_size is None:
    raise TypeError(f"{op}() missing 1 required argument: 'batch_size'")
  inputs.check_positive_int(batch_size, 'batch_size', op)
  n = inputs.check_positive_int(n, 'n', op)
  last_step = last_step_lib.as_last_step(last_step, op)
  episodes = inputs.dense_episodes(episodes, op)
  steps_spec = episodes.element_spec[rlds_types.STEPS]
  indexing.require_fields(steps_spec,
                          [rlds_types.OBSERVATION, rlds_types.REWARD], op)
  indexing.reject_fields(steps_spec, [_NEXT], op)
  reserved = list(steps_spec) + [_NEXT]
  episode_fields = inputs.check_episode_fields(episodes, episode_fields,
                                              reserved, op)
  return pools.pooled_batches(
      episodes, _sampler(n, gamma, episode_fields, last_step), batch_size,
      shuffle=shuffle, pool=pool, pool_episodes=pool_episodes,
      episode_shuffle_buffer=episode_shuffle_buffer, seed=seed,
      num_parallel_calls=num_parallel_calls, deterministic=deterministic,
      drop_last_batch=drop_last_batch, prefetch=prefetch, op=op)
