"""Map, apply and reduce over steps, and over the nested steps of episodes.

Per-step functions run vectorised (``tf.vectorized_map`` on batches of steps).
"""

from typing import Any, Callable, List, Optional

import tensorflow as tf

from rlds_lite import rlds_types
from rlds_lite.transformations import auto_batch
from rlds_lite.transformations import shape_ops

__all__ = [
    'apply_nested_steps',
    'episode_length',
    'final_step',
    'map_nested_steps',
    'map_steps',
    'sum_dataset',
    'sum_nested_steps',
]

BATCH_AUTO_TUNE = auto_batch.BATCH_AUTO_TUNE


# ---------------------------------------------------------------------------
# Argument checks.


def _check_dataset(dataset: Any, arg: str) -> None:
  if not isinstance(dataset, tf.data.Dataset):
    raise TypeError(
        f'{arg} must be a tf.data.Dataset, got {type(dataset).__name__}.')


def _check_episodes_dataset(dataset: Any, arg: str) -> None:
  """Raises unless ``dataset`` holds episodes with a nested steps dataset."""
  _check_dataset(dataset, arg)
  spec = dataset.element_spec
  if not (isinstance(spec, dict) and isinstance(
      spec.get(rlds_types.STEPS), tf.data.DatasetSpec)):
    raise TypeError(
        f'{arg} must hold episodes: dicts whose {rlds_types.STEPS!r} entry is '
        f'a nested tf.data.Dataset of steps; got elements with spec {spec}.')


def _check_callable(fn: Any, arg: str) -> None:
  if not callable(fn):
    raise TypeError(f'{arg} must be callable, got {type(fn).__name__}.')


def _resolve_batch_size(dataset: tf.data.Dataset, size: int) -> int:
  """Batch size to use; 0 means one step at a time, as in upstream RLDS."""
  if size == 0:
    return 1
  return auto_batch.get_batch_size(dataset, size)


# ---------------------------------------------------------------------------
# Vectorised application of a per-step function.


def _is_dense_and_static(spec: Any) -> bool:
  """Whether every leaf is a dense tensor of fully known shape."""
  leaves = tf.nest.flatten(spec)
  return bool(leaves) and all(
      isinstance(s, tf.TensorSpec) and s.shape.is_fully_defined()
      for s in leaves)


def _is_dense_batch(spec: Any) -> bool:
  """Whether every leaf is a dense batch of fully known per-step shape."""
  leaves = tf.nest.flatten(spec)
  return bool(leaves) and all(
      isinstance(s, tf.TensorSpec) and s.shape.rank is not None and
      s.shape.rank >= 1 and s.shape[1:].is_fully_defined() for s in leaves)


def _step_function(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
  """``fn`` applied to a copy of the step, converted by AutoGraph.

  The copy lets ``fn`` assign into the step dict it receives without
  touching the caller's structure, and ``tf.function`` lets it use Python
  control flow on tensors even inside ``tf.vectorized_map``.
  """

  def on_copy(step):
    return fn(tf.nest.map_structure(lambda x: x, step))

  return tf.function(on_copy)


def _one_argument(fn: Callable[[Any], Any],
                  spec: Any) -> Callable[..., Any]:
  """Wraps ``fn(step)`` for ``Dataset.map``, which unpacks tuple elements."""
  if isinstance(spec, tuple):
    return lambda *step: fn(tuple(step))
  return fn


def _vectorized_batches(steps_dataset: tf.data.Dataset,
                        fn: Callable[[Any], Any],
                        batch_size: int) -> Optional[tf.data.Dataset]:
  """Batches of ``fn`` outputs, or None when ``fn`` cannot be vectorised.

  ``fn`` is vectorised only when batching is safe (every step field is dense
  with a fully known shape), ``tf.vectorized_map`` can trace it, and its
  outputs are dense with fully known per-step shapes (otherwise steps could
  disagree on shapes at run time).
  """
  if batch_size <= 1 or not _is_dense_and_static(steps_dataset.element_spec):
    return None
  step_fn = _step_function(fn)
  try:
    batches = steps_dataset.batch(batch_size).map(
        lambda batch: tf.vectorized_map(step_fn, batch),
        num_parallel_calls=tf.data.AUTOTUNE)
  except Exception:  # pylint: disable=broad-except
    # Not vectorisable; the per-step map re-raises genuine errors of `fn`.
    return None
  if not _is_dense_batch(batches.element_spec):
    return None
  return batches


def _map_each_step(steps_dataset: tf.data.Dataset, fn: Callable[[Any], Any],
                   batch_size: int) -> tf.data.Dataset:
  """``fn`` applied to each step, vectorised by batches when possible."""
  batches = _vectorized_batches(steps_dataset, fn, batch_size)
  if batches is not None:
    return batches.unbatch()
  return steps_dataset.map(
      _one_argument(_step_function(fn), steps_dataset.element_spec),
      num_parallel_calls=tf.data.AUTOTUNE)


# ---------------------------------------------------------------------------
# Maps.


def map_steps(steps_dataset: tf.data.Dataset,
              transform_step: Callable[[rlds_types.Step], Any],
              optimization_batch_size: int = BATCH_AUTO_TUNE
              ) -> tf.data.Dataset:
  """Applies ``transform_step`` to every step of a dataset of steps.

    Vectorised on batches of steps, or step by step when that is impossible
    (same results). ``transform_step`` gets the whole step (a copy) as one
    argument.

    Args:
      steps_dataset: dataset of steps.
      transform_step: function of one step; its result need not be a step.
      optimization_batch_size: steps processed at once (``BATCH_AUTO_TUNE``;
        0 or 1: one at a time).

    Example:
      >>> steps = tf.data.Dataset.from_tensor_slices({'a': [1, 2, 3]})
      >>> [s['a'] for s in map_steps(steps, lambda s: {'a': s['a'] * 10})
      ...  .as_numpy_iterator()]
      [np.int32(10), np.int32(20), np.int32(30)]
  """
  _check_dataset(steps_dataset, 'steps_dataset')
  _check_callable(transform_step, 'transform_step')
  batch_size = _resolve_batch_size(steps_dataset, optimization_batch_size)
  return _map_each_step(steps_dataset, transform_step, batch_size)


def _without_steps(episode: rlds_types.Episode) -> rlds_types.Episode:
  return {k: v for k, v in episode.items() if k != rlds_types.STEPS}


def map_nested_steps(episodes_dataset: tf.data.Dataset,
                     transform_step: Callable[[rlds_types.Step], Any],
                     optimization_batch_size: int = BATCH_AUTO_TUNE
                     ) -> tf.data.Dataset:
  """Applies ``transform_step`` to every step of every episode (see ``map_steps``).

    Example:
      >>> episodes = tf.data.Dataset.from_tensors(
      ...     {'steps': tf.data.Dataset.range(3), 'id': 7})
      >>> out = map_nested_steps(episodes, lambda s: s * 2)
      >>> [list(e['steps'].as_numpy_iterator()) for e in out]
      [[np.int64(0), np.int64(2), np.int64(4)]]
  """
  _check_episodes_dataset(episodes_dataset, 'episodes_dataset')
  _check_callable(transform_step, 'transform_step')
  batch_size = _resolve_batch_size(episodes_dataset, optimization_batch_size)

  def map_episode(episode):
    steps = _map_each_step(episode[rlds_types.STEPS], transform_step,
                           batch_size)
    return rlds_types.build_episode(steps, _without_steps(episode))

  return episodes_dataset.map(
      tf.autograph.experimental.do_not_convert(map_episode))


def apply_nested_steps(
    episodes_dataset: tf.data.Dataset,
    transform_step_dataset: Callable[[tf.data.Dataset], tf.data.Dataset]
) -> tf.data.Dataset:
  """Replaces the steps of every episode by ``transform_step_dataset(steps)``.

    Example:
      >>> episodes = tf.data.Dataset.from_tensors(
      ...     {'steps': tf.data.Dataset.range(5)})
      >>> out = apply_nested_steps(episodes, lambda steps: steps.take(2))
      >>> [list(e['steps'].as_numpy_iterator()) for e in out]
      [[np.int64(0), np.int64(1)]]
  """
  _check_episodes_dataset(episodes_dataset, 'episodes_dataset')
  _check_callable(transform_step_dataset, 'transform_step_dataset')

  def apply_to_episode(episode):
    steps = transform_step_dataset(episode[rlds_types.STEPS])
    if not isinstance(steps, tf.data.Dataset):
      raise TypeError(
          'transform_step_dataset must return a tf.data.Dataset, got '
          f'{type(steps).__name__}.')
    return rlds_types.build_episode(steps, _without_steps(episode))

  return episodes_dataset.map(
      tf.autograph.experimental.do_not_convert(apply_to_episode))


# ---------------------------------------------------------------------------
# The last element of a dataset, lazily and in one pass.


def last_element(dataset: tf.data.Dataset, default: Any) -> tf.data.Dataset:
  """A one-element dataset: ``(last element, True)``, or ``(default, False)``.

    Lazy, single-pass and without ``Dataset.reduce`` (~10 ms per call inside a
    tf.data function); the building block of ``final_step``,
    ``episode_length``, ``sum_dataset`` and ``concat_if_terminal``.

    Example:
      >>> last, found = last_element(tf.data.Dataset.range(5), tf.constant(
      ...     -1, tf.int64)).get_single_element()
      >>> last.numpy().tolist(), bool(found)
      (4, True)
  """
  tail = dataset.skip(tf.maximum(dataset.cardinality() - 1, 0))
  end_marker = tf.data.Dataset.from_tensors(
      (tf.constant(-1, tf.int64), default))
  indexed = tail.enumerate().concatenate(end_marker)

  def remember(previous, index_and_element):
    # Emits the previous element, flagged when the end marker is reached.
    index, element = index_and_element
    return (element, tf.constant(True)), (previous, index < 0)

  def at_end(unused_previous, end):
    return end

  def previous_element(previous, unused_end):
    return previous

  # Named functions: AutoGraph cannot tell apart two lambdas of one line
  # with the same arguments, and warns on every call.
  return indexed.scan((default, tf.constant(False)),
                      remember).filter(at_end).map(previous_element)


# ---------------------------------------------------------------------------
# Reductions.


def _leaf_paths(structure: Any, prefix: str = '') -> List[Any]:
  """(path, leaf) pairs of a nested structure of dicts, tuples and lists."""
  if isinstance(structure, dict):
    items = [(f'{prefix}/{k}' if prefix else str(k), v)
             for k, v in sorted(structure.items())]
  elif isinstance(structure, (tuple, list)):
    items = [(f'{prefix}[{i}]', v) for i, v in enumerate(structure)]
  else:
    return [(prefix or '<value>', structure)]
  return [pair for path, value in items for pair in _leaf_paths(value, path)]


def _check_summable(spec: Any) -> None:
  for path, leaf in _leaf_paths(spec):
    if not isinstance(leaf, tf.TensorSpec):
      raise TypeError(
          f'data_to_sum must return dense tensors; {path!r} is {leaf}.')
    if leaf.dtype in (tf.bool, tf.string):
      raise TypeError(
          f'data_to_sum returned {path!r} of dtype {leaf.dtype.name}, which '
          'cannot be summed; cast it to a numeric dtype.')


def sum_dataset(steps_dataset: tf.data.Dataset,
                data_to_sum: Callable[[rlds_types.Step], Any],
                optimization_batch_size: int = BATCH_AUTO_TUNE) -> Any:
  """Sums ``data_to_sum(step)`` over all the steps of a dataset (by batches).

    The sums keep ``data_to_sum``'s dtypes; an empty dataset sums to zeros.

    Example:
      >>> steps = tf.data.Dataset.from_tensor_slices({'reward': [1.0, 2.0, 3.5]})
      >>> sum_dataset(steps, lambda s: s['reward']).numpy().tolist()
      6.5
  """
  _check_dataset(steps_dataset, 'steps_dataset')
  _check_callable(data_to_sum, 'data_to_sum')
  batch_size = _resolve_batch_size(steps_dataset, optimization_batch_size)
  batches = _vectorized_batches(steps_dataset, data_to_sum, batch_size)
  if batches is not None:
    _check_summable(batches.element_spec)
    partial_sums = batches.map(
        lambda values: tf.nest.map_structure(
            lambda x: tf.reduce_sum(x, axis=0), values),
        num_parallel_calls=tf.data.AUTOTUNE)
  else:
    partial_sums = steps_dataset.map(
        _one_argument(_step_function(data_to_sum), steps_dataset.element_spec),
        num_parallel_calls=tf.data.AUTOTUNE)
  _check_summable(partial_sums.element_spec)
  zeros = shape_ops.zeros_from_spec(partial_sums.element_spec)

  def add(total, values):
    total = tf.nest.map_structure(tf.add, total, values)
    return total, total

  running_totals = partial_sums.scan(zeros, add)
  total, _ = last_element(running_totals, zeros).get_single_element()
  return total


def _steps_of_episodes(episodes_dataset: tf.data.Dataset) -> tf.data.Dataset:
  return episodes_dataset.flat_map(lambda episode: episode[rlds_types.STEPS])


def sum_nested_steps(episodes_dataset: tf.data.Dataset,
                     data_to_sum: Callable[[rlds_types.Step], Any],
                     optimization_batch_size: int = BATCH_AUTO_TUNE) -> Any:
  """Sums ``data_to_sum(step)`` over all the steps of all episodes.

    Example:
      >>> episodes = tf.data.Dataset.from_tensor_slices(
      ...     {'steps': [tf.data.Dataset.range(3), tf.data.Dataset.range(4)]})
      >>> sum_nested_steps(episodes, lambda s: s).numpy().tolist()  # 3 + 6
      9
  """
  _check_episodes_dataset(episodes_dataset, 'episodes_dataset')
  return sum_dataset(
      _steps_of_episodes(episodes_dataset), data_to_sum,
      _resolve_batch_size(episodes_dataset, optimization_batch_size))


# ---------------------------------------------------------------------------
# Final step and length.


def _finite_guard(steps_dataset: tf.data.Dataset, caller: str) -> List[Any]:
  """Raises (eagerly) or asserts (in graphs) that the dataset is finite."""
  cardinality = steps_dataset.cardinality()
  message = f'{caller}: steps_dataset is infinite.'
  if tf.executing_eagerly():
    if cardinality == tf.data.INFINITE_CARDINALITY:
      raise ValueError(message)
    return []
  return [tf.debugging.Assert(
      cardinality != tf.data.INFINITE_CARDINALITY, [message])]


def _first_leaf(structure: Any) -> tf.Tensor:
  return tf.nest.flatten(structure)[0]


def final_step(steps_dataset: tf.data.Dataset) -> Any:
  """The last step of a non-empty, finite dataset of steps.

    Reads only the last step when the cardinality is known; cheap in graphs.

    Example:
      >>> steps = tf.data.Dataset.from_tensor_slices({'a': [1, 2, 3]})
      >>> final_step(steps)['a'].numpy().tolist()
      3
  """
  _check_dataset(steps_dataset, 'steps_dataset')
  empty_message = 'final_step: steps_dataset is empty.'
  cardinality = steps_dataset.cardinality()
  if tf.executing_eagerly() and cardinality == 0:
    raise ValueError(empty_message)
  if tf.executing_eagerly() and cardinality > 0:  # Fast path: no tracing.
    return steps_dataset.skip(cardinality - 1).get_single_element()
  default = shape_ops.zeros_from_spec(steps_dataset.element_spec)
  with tf.control_dependencies(_finite_guard(steps_dataset, 'final_step')):
    last, found = last_element(steps_dataset, default).get_single_element()
  if tf.executing_eagerly():
    if not found:
      raise ValueError(empty_message)
    return last
  not_empty = tf.debugging.Assert(found, [empty_message])
  with tf.control_dependencies([not_empty]):
    return tf.nest.map_structure(tf.identity, last)


def _count_steps(steps_dataset: tf.data.Dataset, batch_size: int) -> tf.Tensor:
  """Number of steps, counted by batches when they can be batched."""
  batched = batch_size > 1 and _is_dense_and_static(
      steps_dataset.element_spec)
  chunks = steps_dataset.batch(batch_size) if batched else steps_dataset

  def add(count, chunk):
    if batched:
      count += tf.shape(_first_leaf(chunk), out_type=tf.int64)[0]
    else:
      count += 1
    return count, count

  zero = tf.constant(0, tf.int64)
  running_counts = chunks.scan(zero, add)
  count, _ = last_element(running_counts, zero).get_single_element()
  return count


def episode_length(steps_dataset: tf.data.Dataset,
                   optimization_batch_size: int = BATCH_AUTO_TUNE) -> tf.Tensor:
  """The number of steps of a finite dataset of steps, as an int32 scalar tensor.

    The cardinality when known, else the steps are counted (by batches).

    Example:
      >>> steps = tf.data.Dataset.range(10).filter(lambda x: x % 3 == 0)
      >>> episode_length(steps).numpy().tolist()
      4
  """
  _check_dataset(steps_dataset, 'steps_dataset')
  batch_size = _resolve_batch_size(steps_dataset, optimization_batch_size)
  cardinality = steps_dataset.cardinality()
  with tf.control_dependencies(_finite_guard(steps_dataset, 'episode_length')):
    return tf.cond(
        cardinality >= 0,
        lambda: tf.cast(cardinality, tf.int32),
        lambda: tf.cast(_count_steps(steps_dataset, batch_size), tf.int32))
