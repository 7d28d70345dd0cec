"""Mixing several datasets with sampling weights, optionally exact per batch.

``mix`` samples each element's source with the weights
(``sample_from_datasets``) or, with ``exact=True``, puts exactly
``exact_counts(weights, batch_size)`` rows of each source in every batch
(docs/distributed.md).

Example:
  >>> import tensorflow as tf
  >>> a = tf.data.Dataset.range(0, 100)
  >>> b = tf.data.Dataset.range(1000, 1100)
  >>> ds = mix([a, b], [0.75, 0.25], exact=True, batch_size=4, seed=0)
  >>> [int((batch >= 1000).sum()) for batch in ds.take(3).as_numpy_iterator()]
  [1, 1, 1]
"""

import math
import os
import warnings
from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf

from rlds_lite import op_context
from rlds_lite import source as source_lib
from rlds_lite import rlds_types
from rlds_lite import option_objects
from rlds_lite.pipeline import inputs

WEIGHT_TOLERANCE = 1e-6
"""How far from one the sum of the weights may be."""
BALANCE = (None, 'steps', 'episodes')
"""The names ``mix``'s ``balance`` takes (or the sizes themselves)."""
UNITS = ('episodes', 'steps')
"""The units ``dataset_size`` counts."""

Datasets = Union[Sequence[tf.data.Dataset], Mapping[str, tf.data.Dataset]]
Numbers = Union[Sequence[float], Mapping[str, float]]
_OP = 'mix'

EXACT_SHARE_TOLERANCE = 0.1
"""Exact mode warns when a share differs from its weight by more than this
fraction of the weight."""


class ExactCountsWarning(UserWarning):
  """``mix(exact=True)``: the batch size rounds the weights to other shares."""


def _named(datasets: Datasets) -> Tuple[List[str], List[tf.data.Dataset]]:
  """The sources' labels for messages (``'datasets[i]'`` or their keys)."""
  if isinstance(datasets, Mapping):
    names = [f'{key!r}' for key in datasets]
    values = list(datasets.values())
  elif isinstance(datasets, (list, tuple)):
    names = [f'datasets[{i}]' for i in range(len(datasets))]
    values = list(datasets)
  else:
    raise TypeError(f'{_OP}: datasets must be a list, tuple or dict of '
                    f'tf.data.Dataset, got {type(datasets).__name__}.')
  if not values:
    raise ValueError(f'{_OP}: datasets is empty; give at least one dataset.')
  for name, ds in zip(names, values):
    if not isinstance(ds, tf.data.Dataset):
      raise TypeError(f'{_OP}: {name} is a {type(ds).__name__}, not a '
                      'tf.data.Dataset.')
  return names, values


def _numbers(values: Numbers, datasets: Datasets, names: List[str],
             what: str) -> np.ndarray:
  """``weights`` or ``sizes`` as a float64 array aligned with the datasets."""
  if isinstance(values, Mapping):
    if not isinstance(datasets, Mapping) or set(values) != set(datasets):
      keys = list(datasets) if isinstance(datasets, Mapping) else None
      raise ValueError(f'{_OP}: {what} is a dict with keys {sorted(values)}; '
                       f'it needs exactly the keys of datasets ({keys}).')
    values = [values[key] for key in datasets]
  try:
    array = np.asarray(values, np.float64)
  except (TypeError, ValueError) as e:
    raise TypeError(f'{_OP}: {what} must be numbers, got {values!r}.') from e
  if array.shape != (len(names),):
    raise ValueError(f'{_OP}: {what} has {array.size} values for '
                     f'{len(names)} datasets; give one per dataset.')
  for name, value in zip(names, array):
    if not math.isfinite(value) or value < 0:
      raise ValueError(f'{_OP}: the {what[:-1]} of {name} is {value}; '
                       f'{what} must be finite and non-negative.')
  return array


def _check_weights(weights: np.ndarray) -> None:
  total = float(weights.sum())
  if abs(total - 1.0) > WEIGHT_TOLERANCE:
    raise ValueError(
        f'{_OP}: weights {weights.tolist()} sum to {total!r}, not 1 (within '
        f'{WEIGHT_TOLERANCE}); divide them by their sum if that is meant.')


def exact_counts(weights: Sequence[float], total: int) -> List[int]:
  """Integer counts proportional to ``weights`` that sum to ``total``.

  Largest-remainder rounding: each count is ``floor(w * total)``, and the
  samples left over go to the largest fractional parts (ties to the
  earlier source), so no count is more than one away from ``w * total``.

  Args:
    weights: non-negative weights summing to one.
    total: the number to split (non-negative).

  Returns:
    One count per weight.

  Example:
    >>> exact_counts([1/3, 1/3, 1/3], 7)
    [3, 2, 2]
    >>> exact_counts([0.9, 0.1], 64)
    [58, 6]
  """
  shares = np.asarray(weights, np.float64) * total
  counts = np.floor(shares + 1e-9).astype(np.int64)
  left = total - int(counts.sum())
  order = sorted(range(len(shares)), key=lambda i: (-(shares[i] - counts[i]), i))
  for i in order[:max(left, 0)]:
    counts[i] += 1
  return counts.tolist()


def dataset_size(name_or_dir: Union[str, os.PathLike],
                 split: Optional[str] = None,
                 unit: str = 'episodes',
                 *,
                 data_dir: Optional[Union[str, os.PathLike]] = None) -> int:
  """The number of episodes (from TFDS metadata) or steps of a TFDS split.

  Episodes come from the dataset's metadata without reading it; TFDS does
  not record steps, so ``unit='steps'`` reads the split once (dense) and
  sums the episode lengths: pass known counts to ``mix(sizes=...)`` instead
  when the dataset is large.

  Args:
    name_or_dir: a TFDS name or dataset directory (as ``rlds_lite.load``).
    split: the split, slicing allowed (``'train[:10%]'``).
    unit: ``'episodes'`` or ``'steps'``.
    data_dir: where TFDS looks for named datasets.

  Returns:
    The count.

  Example:
    >>> from rlds_lite import synthetic
    >>> path = synthetic.dataset(3, min_length=2, max_length=2)
    >>> dataset_size(path), dataset_size(path, unit='steps')
    (3, 6)
  """
  if unit not in UNITS:
    raise ValueError(f'dataset_size: unit must be one of {UNITS}, got '
                     f'{unit!r}.')
  episodes = source_lib.as_source(name_or_dir, split,
                                 data_dir=data_dir).episodes(dense=True)
  if unit == 'episodes':
    count = int(episodes.cardinality())
    if count >= 0:
      return count
    return int(episodes.reduce(np.int64(0), lambda n, _: n + 1))

  def length(episode):
    first = tf.nest.flatten(episode[rlds_types.STEPS])[0]
    return tf.shape(first, out_type=tf.int64)[0]

  lengths = episodes.map(length, num_parallel_calls=tf.data.AUTOTUNE)
  return int(lengths.reduce(np.int64(0), lambda n, x: n + x))


def _known_sizes(values: List[tf.data.Dataset], names: List[str],
                 balance: str) -> np.ndarray:
  """Episode counts from cardinality, for datasets of episodes only."""
  sizes = []
  for name, ds in zip(names, values):
    spec = ds.element_spec
    is_episodes = isinstance(spec, Mapping) and rlds_types.STEPS in spec
    count = int(ds.cardinality())
    if balance != 'episodes' or not is_episodes or count < 0:
      raise ValueError(
          f"{_OP}: balance={balance!r} needs the sizes, balance=[...] (one "
          f'per dataset; {name} does not tell its size): get them with '
          f"pipeline.dataset_size(name, split, {balance!r}).")
    sizes.append(count)
  return np.asarray(sizes, np.float64)


def _check_not_empty(names: List[str], values: List[tf.data.Dataset]) -> None:
  for name, ds in zip(names, values):
    if int(ds.cardinality()) == 0:
      raise ValueError(f'{_OP}: {name} is empty (cardinality 0); a mixture '
                       'needs every dataset to have elements.')


def _check_specs(names: List[str], values: List[tf.data.Dataset]) -> None:
  """Same structure and dtypes in every source (else a ValueError naming it)."""
  first = values[0].element_spec
  for name, ds in zip(names[1:], values[1:]):
    spec = ds.element_spec
    try:
      tf.nest.assert_same_structure(first, spec)
    except (ValueError, TypeError) as e:
      raise ValueError(f'{_OP}: {name} has elements {spec}, not the '
                       f'structure of {names[0]}: {first}.') from e
    for a, b in zip(tf.nest.flatten(first), tf.nest.flatten(spec)):
      if getattr(a, 'dtype', None) != getattr(b, 'dtype', None):
        raise ValueError(f'{_OP}: {name} has elements {spec}, whose dtypes '
                         f'differ from those of {names[0]}: {first}.')


def _filler(spec: Any) -> Optional[Any]:
  """Zeros shaped like ``spec`` (unknown dims 0), or None if not plain tensors."""
  leaves = tf.nest.flatten(spec)
  if not all(isinstance(s, tf.TensorSpec) and s.shape.rank is not None
             for s in leaves):
    return None
  return tf.nest.map_structure(
      lambda s: tf.zeros([d if d is not None else 0 for d in s.shape.as_list()],
                         s.dtype), spec)


def _fail_if_empty(ds: tf.data.Dataset, name: str) -> tf.data.Dataset:
  """``ds``, raising InvalidArgumentError naming it if it turns out empty.

  A sentinel element follows the real ones; reaching it first is the error.
  """
  filler = _filler(ds.element_spec)
  if filler is None:
    return ds
  flagged = tf.data.Dataset.zip(
      (ds, tf.data.Dataset.from_tensors(False).repeat()))
  sentinel = tf.data.Dataset.from_tensors((filler, True))
  # tf.debugging.Assert escapes quotes in its message: leave them out.
  message = (f"{_OP}: {name.replace(chr(39), '')} is empty; a mixture needs "
             'every dataset to have elements.')

  @tf.autograph.experimental.do_not_convert
  def keep(i, pair):
    is_sentinel = pair[1]
    check = tf.debugging.Assert(
        tf.logical_or(tf.logical_not(is_sentinel), i > 0), [message])
    with tf.control_dependencies([check]):
      return tf.logical_not(is_sentinel)

  checked = flagged.concatenate(sentinel).enumerate().filter(keep)
  return checked.map(lambda i, pair: pair[0])


def _balanced(weights: np.ndarray, balance: Any, sizes: Any,
              datasets: Datasets, names: List[str],
              values: List[tf.data.Dataset]) -> np.ndarray:
  """``weights`` multiplied by the sizes ``balance`` gives (renormalised)."""
  unit = balance if isinstance(balance, str) or balance is None else 'sizes'
  if unit not in BALANCE + ('sizes',):
    raise ValueError(f'{_OP}: balance must be one of {BALANCE} or the '
                     f"sources' sizes, got {balance!r}.")
  if sizes is not None and unit not in ('steps', 'episodes'):
    raise ValueError(f"{_OP}: sizes are only used with balance='steps' or "
                     "'episodes'; set balance (or give balance=sizes).")
  if unit is None:
    return weights
  if unit == 'sizes':
    sizes = balance
  if sizes is None:
    size_array = _known_sizes(values, names, unit)
  else:
    size_array = _numbers(sizes, datasets, names, 'sizes')
  for name, size in zip(names, size_array):
    if size == 0:
      raise ValueError(f'{_OP}: {name} has size 0 ({unit}); a mixture '
                       'needs every dataset to have elements.')
  weights = weights * size_array
  return weights / weights.sum()


def _per_batch_seeds(seed: Optional[int]) -> tf.data.Dataset:
  return tf.data.Dataset.random(
      seed=seed, rerandomize_each_iteration=True).batch(2)


def check_exact_shares(names: Sequence[str], weights: Sequence[float],
                       counts: Sequence[int], op: str = _OP,
                       size_name: str = 'batch_size',
                       other_way: str = 'exact=False') -> None:
  """Refuses a source never drawn, warns of shares far from the weights.

  For exact mixing, where every batch (of ``sum(counts)``, called
  ``size_name`` in messages) holds ``counts`` rows of the sources: a source
  of non-zero weight with no row is a ValueError naming a size that gives
  every source a row (or ``other_way``); shares more than
  ``EXACT_SHARE_TOLERANCE`` (relative) off their weights are one
  ``ExactCountsWarning``.

  Example:
    >>> check_exact_shares(['a', 'b'], [0.9, 0.1], [2, 0])
    Traceback (most recent call last):
    ...
    ValueError: mix: batch_size 2 gives b (weight 0.1) no row in any batch (the weights round to [2, 0] rows); a batch_size of 10 or more gives every source a row, or use exact=False.
  """
  weights = np.asarray(weights, np.float64)
  total = int(sum(counts))
  starved = [i for i, (w, c) in enumerate(zip(weights, counts))
             if w > 0 and c == 0]
  if starved:
    i = starved[0]
    # From w * size >= 1 on, every source of weight w gets a row.
    enough = math.ceil(1 / weights[weights > 0].min() - 1e-9)
    advice = (f'a {size_name} of {enough} or more gives every source a row, '
              f'or use {other_way}')
    raise ValueError(
        f'{op}: {size_name} {total} gives {names[i]} (weight '
        f'{weights[i]:.3g}) no row in any batch (the weights round to '
        f'{list(counts)} rows); {advice}.')
  shares = np.asarray(counts, np.float64) / total
  if np.any(np.abs(shares - weights) > EXACT_SHARE_TOLERANCE * weights):
    warnings.warn(
        f'{op}: {size_name} {total}: every batch holds '
        f'{list(counts)} rows, shares {np.round(shares, 3).tolist()} of '
        f'weights {np.round(weights, 3).tolist()}, the same rounding in every '
        'batch; a larger batch comes closer.', ExactCountsWarning,
        stacklevel=3)


def _exact(values: List[tf.data.Dataset], counts: List[int], batched: bool,
           permute: bool, seed: Optional[int]) -> tf.data.Dataset:
  """Batches holding exactly ``counts[i]`` rows of source ``i``, permuted."""
  parts = []
  for ds, count in zip(values, counts):
    if count == 0:
      continue
    if batched:
      parts.append(ds.rebatch(count, drop_remainder=True))
    else:
      parts.append(ds.batch(count, drop_remainder=True))
  batches = tf.data.Dataset.zip(tuple(parts)).map(
      lambda *p: tf.nest.map_structure(lambda *x: tf.concat(x, 0), *p))
  if not permute:
    return batches
  size = sum(counts)

  @tf.autograph.experimental.do_not_convert
  def shuffle_rows(batch, batch_seed):
    order = tf.random.experimental.stateless_shuffle(tf.range(size),
                                                     seed=batch_seed)
    return tf.nest.map_structure(lambda x: tf.gather(x, order), batch)

  return tf.data.Dataset.zip((batches, _per_batch_seeds(seed))).map(
      shuffle_rows)


def mix(datasets: Datasets,
        weights: Optional[Numbers] = None,
        *,
        balance: Union[str, Numbers, None] = None,
        exact: bool = False,
        batch_size: Optional[int] = None,
        batched: bool = False,
        permute: bool = True,
        drop_remainder: bool = False,
        seed: Optional[int] = None,
        stop_on_empty_dataset: bool = True,
        **legacy: Any) -> tf.data.Dataset:
  """A mixture of ``datasets`` drawn with ``weights``.

  Sampled per element, or ``exact``: every batch holds
  ``exact_counts(weights, batch_size)`` rows of each source. The checks
  (weights summing to one, empty sources, rounding): docs/guarantees.md.

  Args:
    datasets: a list/tuple, or a dict (its keys name the sources; then
      ``weights`` / ``balance`` may be dicts) of datasets of one structure.
    weights: non-negative, summing to one; None: equal.
    balance: the sources' sizes (``dataset_size``) or ``'episodes'``: the
      weights times the sizes, renormalised (every step equally likely).
    exact: exact rows per batch (needs ``batch_size``).
    batch_size: batch the mixture.
    batched: the sources' elements are batches (``rebatch``-ed).
    permute: exact mode: permute each batch's rows (seeded).
    drop_remainder: sampled mode: drop a last short batch.
    seed: seed of the sampling (None: new every run).
    stop_on_empty_dataset: sampled mode: stop when a source runs out.
    **legacy: ``sizes=`` as before ``balance`` took them, warning once.

  Example:
    >>> import tensorflow as tf
    >>> a = tf.data.Dataset.from_tensors(0).repeat()
    >>> b = tf.data.Dataset.from_tensors(1).repeat()
    >>> batch = next(iter(mix({'a': a, 'b': b}, {'a': 0.5, 'b': 0.5},
    ...                       exact=True, batch_size=6, seed=0)))
    >>> sorted(batch.numpy().tolist())
    [0, 0, 0, 1, 1, 1]
    >>> mix([a, b], [0.5, 0.6])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: mix: weights [0.5, 0.6] sum to 1.1, not 1 (within 1e-06); ...
  """
  names, values = _named(datasets)
  n = len(values)
  if weights is None:
    weights_array = np.full(n, 1.0 / n)
  else:
    weights_array = _numbers(weights, datasets, names, 'weights')
    _check_weights(weights_array)
  option_objects.check_keywords(_OP, legacy, ['sizes'])
  sizes = legacy.get('sizes')
  if sizes is not None:
    option_objects.warn_renamed(_OP, ['sizes'],
                                  'balance=sizes (the sizes themselves)')
  _check_not_empty(names, values)
  _check_specs(names, values)
  weights_array = _balanced(weights_array, balance, sizes, datasets, names,
                            values)
  if batch_size is not None:
    with op_context.named(_OP):
      batch_size = inputs.check_positive_int(batch_size, 'batch_size')
  values = [ds if int(ds.cardinality()) != tf.data.UNKNOWN_CARDINALITY else
            _fail_if_empty(ds, name) for name, ds in zip(names, values)]
  if exact:
    if batch_size is None:
      raise ValueError(f'{_OP}: exact=True needs batch_size.')
    if not stop_on_empty_dataset:
      raise ValueError(
          f'{_OP}: exact=True stops when a source runs out; '
          'stop_on_empty_dataset=False would break the exact fractions '
          '(repeat() the sources instead).')
    counts = exact_counts(weights_array, batch_size)
    check_exact_shares(names, weights_array, counts)
    return _exact(values, counts, batched, permute, seed)
  mixed = tf.data.Dataset.sample_from_datasets(
      values, weights=weights_array.tolist(), seed=seed,
      stop_on_empty_dataset=stop_on_empty_dataset,
      rerandomize_each_iteration=True)
  if batch_size is None:
    return mixed
  if batched:
    return mixed.rebatch(batch_size, drop_remainder=drop_remainder)
  return mixed.batch(batch_size, drop_remainder=drop_remainder)
