"""Feed Keras: batches of samples -> ``(x, y)`` or ``(x, y, sample_weight)``.

Example:
  >>> import tensorflow as tf
  >>> batches = tf.data.Dataset.from_tensors(
  ...     {'observation': {'pos': [[1.0, 2.0]]}, 'action': [3]})
  >>> ds = as_keras_dataset(batches, 'observation/pos', 'action')
  >>> x, y = next(iter(ds))
  >>> x.numpy().tolist(), y.numpy().tolist()
  ([[1.0, 2.0]], [3])
"""

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

import tensorflow as tf

from rlds_lite import nest_paths

Selector = Union[str, Callable[[Any], Any], Sequence[Any], Mapping[str, Any]]
"""A key path (``'observation/pos'``), a callable of the batch, or a tuple,
list or dict of them (the same structure comes out; a list as a tuple)."""

_OP = 'as_keras_dataset'


def _available(spec: Any) -> List[str]:
  """Every key path of ``spec``, inner ones included, sorted."""
  paths = set()
  for path, _ in nest_paths.flatten_with_paths(spec):
    parts = path.split('/')
    paths.update('/'.join(parts[:i + 1]) for i in range(len(parts)))
  paths.discard('')
  return sorted(paths)


def _check_selector(selector: Any, spec: Any, role: str) -> None:
  """Raises a clear error if a key path of ``selector`` is not in ``spec``."""
  if isinstance(selector, str):
    try:
      nest_paths.get_path(spec, selector)
    except KeyError:
      raise KeyError(
          f'{_OP}: {role} names {selector!r}, which the batches do not have; '
          f'available keys: {_available(spec)}.') from None
  elif callable(selector):
    return
  elif isinstance(selector, Mapping) and selector:
    for value in selector.values():
      _check_selector(value, spec, role)
  elif isinstance(selector, (tuple, list)) and selector:
    for value in selector:
      _check_selector(value, spec, role)
  else:
    raise TypeError(
        f'{_OP}: {role} must be a key path, a callable or a non-empty tuple, '
        f'list or dict of them, got {selector!r}.')


def _select(batch: Any, selector: Selector,
            part: Optional[Callable[[Any, str], Any]] = None,
            name: str = '') -> Any:
  """The part of ``batch`` that ``selector`` names; ``part(value, name)`` maps each pick."""
  if isinstance(selector, Mapping):
    return {k: _select(batch, v, part, f'{name}/{k}' if name else str(k))
            for k, v in selector.items()}
  if isinstance(selector, str):
    value, name = nest_paths.get_path(batch, selector), selector
  elif callable(selector):
    value, name = selector(batch), name or '<callable>'
  else:
    return tuple(_select(batch, v, part, f'{name}/{i}' if name else str(i))
                 for i, v in enumerate(selector))
  return value if part is None else part(value, name)


def _leaf_weights(value: Any, name: str) -> Any:
  """Every leaf of ``value`` as float32; a ValueError naming a non-numeric leaf."""
  def cast(path: str, leaf: Any) -> Any:
    if not isinstance(leaf, (tf.RaggedTensor, tf.SparseTensor)):
      leaf = tf.convert_to_tensor(leaf)
    dtype = leaf.dtype
    if not (dtype.is_floating or dtype.is_integer or dtype == tf.bool):
      field = '/'.join(p for p in (name, path) if p)
      raise ValueError(
          f'{_OP}: sample_weight {field!r} has dtype {dtype.name}; sample '
          'weights must be numbers or booleans (they are cast to float32).')
    return leaf if dtype == tf.float32 else tf.cast(leaf, tf.float32)

  pairs = nest_paths.flatten_with_paths(value)
  return tf.nest.pack_sequence_as(value, [cast(p, v) for p, v in pairs])


def _num_batches(batches: tf.data.Dataset,
                 num_batches: Union[None, int, str]) -> Optional[int]:
  """``num_batches`` checked against a known cardinality, ``'count'`` counted."""
  if num_batches is None:
    return None
  known = int(batches.cardinality())
  if num_batches == 'count':
    if known == tf.data.INFINITE_CARDINALITY:
      raise ValueError(f"{_OP}: num_batches='count' cannot count batches "
                       'that never end (an infinite dataset, e.g. repeat()); '
                       'pass the number of batches an epoch reads.')
    if known >= 0:
      return known
    return int(batches.reduce(tf.constant(0, tf.int64), lambda n, _: n + 1))
  if (isinstance(num_batches, bool) or not isinstance(num_batches, int) or
      num_batches < 0):
    raise ValueError(f"{_OP}: num_batches must be a non-negative int, 'count' "
                     f'or None, got {num_batches!r}.')
  if known >= 0 and num_batches != known:
    fewer = (f'; take the first {num_batches} with '
             f'batches.take({num_batches})' if num_batches < known else '')
    raise ValueError(
        f'{_OP}: num_batches is {num_batches} but batches holds {known} '
        f'batches (its cardinality); num_batches must be the number of '
        f"batches a pass reads (or 'count', or None){fewer}.")
  return num_batches


# No quotes: TF escapes them in an assertion's message.
_COUNT_HINT = ('set num_batches to the number of batches in one pass (or to '
               'count, to have them counted).')


def _checked_count(ds: tf.data.Dataset, num_batches: int) -> tf.data.Dataset:
  """``ds`` with cardinality ``num_batches``, checked in-graph with our own message.

  (``assert_cardinality`` alone fails with TF's ``FailedPreconditionError``.)
  """
  optional = tf.experimental.Optional
  end = tf.data.Dataset.from_tensors(optional.empty(ds.element_spec))
  wrapped = ds.map(lambda *element: optional.from_value(element))
  expected = tf.constant(num_batches, tf.int64)

  def check(index: tf.Tensor, element: Any) -> tf.Tensor:
    has_value = element.has_value()
    fine = tf.where(has_value, index < expected, tf.equal(index, expected))
    message = tf.where(
        has_value,
        tf.strings.format(
            _OP + ': num_batches is {} but batches holds more (batch {} '
            'came); ' + _COUNT_HINT,
            (expected, index + 1)),
        tf.strings.format(
            _OP + ': num_batches is {} but batches ran out after {} '
            'batches; ' + _COUNT_HINT,
            (expected, index)))
    check_op = tf.debugging.Assert(fine, [message], name='num_batches')
    with tf.control_dependencies([check_op]):
      return tf.identity(has_value)

  return (wrapped.concatenate(end).enumerate().filter(check)
          .map(lambda _, element: element.get_value()))


def as_keras_dataset(batches: tf.data.Dataset,
                     features: Selector,
                     labels: Selector,
                     sample_weight: Optional[Selector] = None,
                     num_batches: Union[None, int, str] = None
                     ) -> tf.data.Dataset:
  """Batches of dicts -> ``(x, y)`` or ``(x, y, w)`` for ``keras.Model.fit``.

  Checks the key paths and a known cardinality when called; errors: docs/keras_jax.md.

  Args:
    batches: a dataset of (nested) dicts, e.g. from ``rlds_lite.pipeline``.
    features, labels, sample_weight: what becomes ``x``, ``y`` and ``w`` (float32; None: no
      ``w``): each a key path (``'observation/pos'``, ``'action/0'``), a callable
      ``batch -> tensor(s)``, or a tuple, list or dict of those. ``sample_weight='mask'``
      weights a per-step loss by ``windows_dataset``'s padding mask.
    num_batches: batches per pass, set as the cardinality so Keras knows the epoch length:
      an int (checked as the batches are read), ``'count'`` (one pass now, unless the
      cardinality is known) or None (keep the cardinality of ``batches``).

  Example:
    >>> import rlds_lite as rlds
    >>> episodes = rlds.synthetic.episodes(num_episodes=2, seed=0, dense=True)
    >>> windows = rlds.pipeline.windows_dataset(
    ...     episodes, rlds.Windows(size=3, drop_remainder=False), 4,
    ...     shuffle=False)
    >>> ds = as_keras_dataset(windows, 'observation', 'action', 'mask')
    >>> x, y, w = next(iter(ds))
    >>> x.shape.as_list(), y.shape.as_list(), w.dtype.name
    ([4, 3, 4], [4, 3, 2], 'float32')
    >>> int(as_keras_dataset(windows, 'observation', 'action',
    ...                      num_batches='count').cardinality())
    13
    >>> as_keras_dataset(windows, 'obs', 'action')
    Traceback (most recent call last):
    ...
    KeyError: "as_keras_dataset: features names 'obs', which the batches do not have; available keys: [...]."
    >>> import tensorflow as tf
    >>> ds = as_keras_dataset(windows, 'observation', 'action', num_batches=20)
    >>> try:  # windows_dataset's cardinality is unknown: checked as read.
    ...   _ = list(ds)
    ... except tf.errors.InvalidArgumentError as error:
    ...   print(error.message.split('assertion failed: ')[1].split(';')[0])
    [as_keras_dataset: num_batches is 20 but batches ran out after 13 batches
    >>> known = tf.data.Dataset.from_tensor_slices([[1.0], [2.0]]).batch(1)
    >>> as_keras_dataset(known.map(lambda x: {'x': x}), 'x', 'x',
    ...                  num_batches=5)
    Traceback (most recent call last):
    ...
    ValueError: as_keras_dataset: num_batches is 5 but batches holds 2 batches (its cardinality); ...
  """
  if not isinstance(batches, tf.data.Dataset):
    raise TypeError(f'{_OP}: batches must be a tf.data.Dataset, got '
                    f'{type(batches).__name__}.')
  spec = batches.element_spec
  roles: Dict[str, Any] = {'features': features, 'labels': labels}
  if sample_weight is not None:
    roles['sample_weight'] = sample_weight
  for role, selector in roles.items():
    _check_selector(selector, spec, role)
  num_batches = _num_batches(batches, num_batches)

  def to_keras(batch: Any) -> Any:
    x = _select(batch, features)
    y = _select(batch, labels)
    if sample_weight is None:
      return x, y
    return x, y, _select(batch, sample_weight, _leaf_weights)

  out = batches.map(tf.autograph.experimental.do_not_convert(to_keras))
  if num_batches is None:
    return out
  if int(out.cardinality()) < 0:  # Unknown or infinite: checked as read.
    out = _checked_count(out, num_batches)
  return out.apply(tf.data.experimental.assert_cardinality(num_batches))
