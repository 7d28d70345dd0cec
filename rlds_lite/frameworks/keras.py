"""Feed Keras: batches of samples -> ``(x, y)`` or ``(x, y, sample_weight)``.

``model.fit`` takes a dataset of ``(features, labels)`` or ``(features,
labels, sample_weight)`` tuples; ``rlds_lite.pipeline`` makes batches as
dicts (``{'observation': ..., 'action': ..., 'mask': ...}``).
``as_keras_dataset`` picks the parts by key path, with one ``map`` per
batch (no per-sample work), and checks the paths against the element spec
before anything runs, so a typo fails at once with the available keys.

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


def _select(batch: Any, selector: Selector) -> Any:
  """The part of ``batch`` that ``selector`` names (same structure)."""
  if isinstance(selector, str):
    return nest_paths.get_path(batch, selector)
  if callable(selector):
    return selector(batch)
  if isinstance(selector, Mapping):
    return {k: _select(batch, v) for k, v in selector.items()}
  return tuple(_select(batch, v) for v in selector)


def _as_weight(value: Any) -> tf.Tensor:
  """Sample weights as float32 (a boolean mask becomes 1.0 / 0.0)."""
  value = tf.convert_to_tensor(value)
  return value if value.dtype == tf.float32 else tf.cast(value, tf.float32)


def _num_batches(batches: tf.data.Dataset,
                 num_batches: Union[None, int, str]) -> Optional[int]:
  """``num_batches`` checked, with ``'count'`` replaced by the count."""
  if num_batches is None:
    return None
  if num_batches == 'count':
    return int(batches.reduce(tf.constant(0, tf.int64), lambda n, _: n + 1))
  if (isinstance(num_batches, bool) or not isinstance(num_batches, int) or
      num_batches < 0):
    raise ValueError(f"{_OP}: num_batches must be a non-negative int, 'count' "
                     f'or None, got {num_batches!r}.')
  return num_batches


def as_keras_dataset(batches: tf.data.Dataset,
                     features: Selector,
                     labels: Selector,
                     sample_weight: Optional[Selector] = None,
                     num_batches: Union[None, int, str] = None
                     ) -> tf.data.Dataset:
  """Batches of dicts -> ``(x, y)`` or ``(x, y, w)`` for ``keras.Model.fit``.

  Each of ``features``, ``labels`` and ``sample_weight`` is a key path into
  the batch (``'observation'``, ``'observation/pos'``; a number indexes a
  tuple: ``'action/0'``), a callable ``batch -> tensor(s)``, or a tuple,
  list or dict of those (a dict suits a functional model with named
  inputs). ``sample_weight`` is cast to float32, so a padding mask works
  as is: ``windows_dataset(..., drop_remainder=False)`` adds ``'mask'``
  (``[B, size]`` bool), and ``sample_weight='mask'`` makes padded steps
  count zero in a per-step loss.

  Args:
    batches: a dataset of (nested) dicts, e.g. from
      ``rlds_lite.pipeline.transitions_dataset`` or ``windows_dataset``.
    features: what becomes ``x``.
    labels: what becomes ``y``.
    sample_weight: what becomes ``w`` (float32), or None for ``(x, y)``.
    num_batches: batches per pass, set as the dataset's cardinality so
      that Keras knows the epoch length (else it warns "Your input ran out
      of data" at the end of each epoch and cannot show progress); an int,
      ``'count'`` (count them now, with one pass over ``batches``) or None
      (keep the cardinality of ``batches``, often unknown).

  Returns:
    A dataset of ``(x, y)`` or ``(x, y, w)`` tuples, one per batch.

  Raises:
    TypeError: if ``batches`` is not a dataset or a selector is malformed.
    KeyError: if a key path is not in the batches, naming it and listing
      the available keys.
    ValueError: if ``num_batches`` is not a non-negative int, ``'count'``
      or None.

  Example:
    >>> import rlds_lite as rlds
    >>> episodes = rlds.synthetic.episodes(num_episodes=2, seed=0, dense=True)
    >>> windows = rlds.pipeline.windows_dataset(
    ...     episodes, size=3, batch_size=4, drop_remainder=False,
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
    w = tf.nest.map_structure(_as_weight, _select(batch, sample_weight))
    return x, y, w

  out = batches.map(tf.autograph.experimental.do_not_convert(to_keras))
  if num_batches is not None:
    out = out.apply(tf.data.experimental.assert_cardinality(num_batches))
  return out
