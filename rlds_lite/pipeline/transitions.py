"""Shuffled batches of n-step transitions (`rlds_lite.Transitions`) with discounted returns.

Example:
  >>> import tensorflow as tf
  >>> steps = {'observation': tf.constant([0, 1, 2]),
  ...          'reward': tf.constant([1.0, 2.0, 0.0]),
  ...          'is_terminal': tf.constant([False, False, True])}
  >>> episodes = tf.data.Dataset.from_tensors({'steps': steps})
  >>> ds = transitions_dataset(episodes, Transitions(n=2), 8, shuffle=False)
  >>> batch = next(iter(ds))
  >>> batch['reward'].numpy().tolist(), batch['discount'].numpy().tolist()
  ([3.0, 2.0], [0.0, 0.0])
"""

import dataclasses
from typing import Any, Dict, Optional, Sequence, Union

import tensorflow as tf

from rlds_lite import rlds_types
from rlds_lite.sample_kinds import Transitions
from rlds_lite.dense import indexing
from rlds_lite import dense
from rlds_lite import op_context
from rlds_lite import option_objects
from rlds_lite.dense import last_step as last_step_lib
from rlds_lite.pipeline import inputs
from rlds_lite.pipeline import pools

_NEXT = dense.NEXT_OBSERVATION
_OP = 'transitions_dataset'
_KIND_FIELDS = tuple(f.name for f in dataclasses.fields(Transitions))

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


@op_context.named(_OP)
def transitions_dataset(episodes: tf.data.Dataset,
                        kind: Any = None,
                        batch_size: Optional[int] = None,
                        *,
                        episode_fields: Union[str, Sequence[str]] = (),
                        shuffle: bool = True,
                        seed: Optional[int] = None,
                        drop_last_batch: bool = False,
                        pooling: Optional[pools.Pooling] = None,
                        **legacy: Any) -> tf.data.Dataset:
  """Batches of n-step transitions of all episodes, shuffled across episodes.

  The samples are exactly those of ``rlds_lite.dense.transitions`` for every
  episode (``observation``, ``action``, n-step ``reward`` and ``discount``,
  ``next_observation`` and the start step's other fields), each once per
  pass over ``episodes``; returns are computed per episode and the
  transitions shuffled within pools (`rlds_lite.pipeline.pools`).

  Args:
    episodes: RLDS episodes, dense or with nested steps datasets; steps need
      ``observation`` and a float ``reward`` (``discount`` and
      ``is_terminal`` are used when present).
    kind: a `rlds_lite.Transitions` (``n``, ``gamma``, ``last_step``).
    batch_size: transitions per batch.
    episode_fields: episode metadata copied into every transition.
    shuffle: shuffle (else transitions come in episode order).
    seed: seed of the shuffling.
    drop_last_batch: drop a last batch smaller than ``batch_size``.
    pooling: a `Pooling` (pool mode and size, episode shuffle buffer,
      parallelism, prefetch).
    **legacy: the keywords of before kinds (``n=``, ``gamma=``,
      ``last_step=``, or the batch size as ``kind``) and `Pooling`'s fields,
      still taken, warning once.

  Returns:
    A dataset of dicts of ``[B, ...]`` tensors.

  Example:
    >>> from rlds_lite.sample_kinds import Transitions
    >>> steps = {'observation': tf.constant([0, 1, 2]),
    ...          'reward': tf.constant([1.0, 2.0, 0.0])}
    >>> episodes = tf.data.Dataset.from_tensors({'steps': steps})
    >>> batch = next(iter(transitions_dataset(episodes, Transitions(n=2), 8,
    ...                                       shuffle=False)))
    >>> batch['reward'].numpy().tolist(), batch['next_observation'].numpy().tolist()
    ([3.0, 2.0], [2, 2])
  """
  kind, pooling, batch_size = _sorted_call(kind, batch_size, pooling,
                                           legacy)
  last_step = last_step_lib.as_last_step(kind.last_step)
  episodes = inputs.dense_episodes(episodes)
  steps_spec = episodes.element_spec[rlds_types.STEPS]
  indexing.require_fields(steps_spec,
                          [rlds_types.OBSERVATION, rlds_types.REWARD])
  indexing.reject_fields(steps_spec, [_NEXT])
  reserved = list(steps_spec) + [_NEXT]
  episode_fields = inputs.check_episode_fields(episodes, episode_fields,
                                              reserved)
  return pools.pooled_batches(
      episodes, _sampler(kind.n, kind.gamma, episode_fields, last_step),
      batch_size, shuffle=shuffle, seed=seed, drop_last_batch=drop_last_batch,
      pooling=pooling)


def _sorted_call(kind: Any, batch_size: Any, pooling: Any,
                 legacy: Dict[str, Any]):
  """``(Transitions, Pooling, batch_size)`` of a call, old keywords too."""
  option_objects.check_keywords(_OP, legacy,
                                  _KIND_FIELDS + pools.POOLING_FIELDS)
  kind_args = {k: v for k, v in legacy.items() if k in _KIND_FIELDS}
  pool_args = {k: v for k, v in legacy.items() if k not in kind_args}
  if isinstance(kind, Transitions) and kind_args:
    raise TypeError(f'pass n, gamma and last_step in the kind '
                    '(Transitions(...)), not beside it.')
  if kind is not None and not isinstance(kind, Transitions):
    if batch_size is not None or not inputs.is_int(kind):
      raise TypeError(f'kind must be a Transitions(...), got '
                      f'{type(kind).__name__}.')
    batch_size, kind = kind, None   # Positional as before kinds.
    option_objects.warn_renamed(
        _OP, ['batch_size as the second argument'],
        f'{_OP}(episodes, Transitions(...), batch_size)')
  kind = option_objects.knobs_object(Transitions, kind, kind_args, _OP,
                                       'Transitions(...)')
  pooling = option_objects.knobs_object(pools.Pooling, pooling, pool_args,
                                          _OP, 'pooling=Pooling(...)')
  if batch_size is None:
    raise TypeError(f"{_OP}() missing 1 required argument: 'batch_size'")
  return kind, pooling, inputs.check_positive_int(batch_size, 'batch_size')
