"""Normalise step fields with dataset statistics, and undo it.

`normalize` and `denormalize` are ``Dataset -> Dataset`` transforms of steps
(single or batched), dense or nested episodes: each selected field ``x``
becomes ``(x - center) / scale`` (``mode='gaussian'``: mean and std;
``'bounds'``: ``[p01, p99]`` or ``[min, max]`` to ``[-1, 1]``, clipped). The
formulas, constants, masks and non-finite values: docs/stats.md.

Example:
  >>> import numpy as np, tensorflow as tf
  >>> from rlds_lite.stats import types
  >>> stats = types.DatasetStats(1, 3, 1, 0,
  ...     types.FieldStats.from_values('length', [3]), None,
  ...     {'action': types.FieldStats.from_values('action', [[0.0], [2.0]])})
  >>> steps = tf.data.Dataset.from_tensor_slices({'action': [[0.0], [4.0]]})
  >>> out = normalize(steps, stats)
  >>> [s['action'].numpy().tolist() for s in out]
  [[-1.0], [3.0]]
  >>> [s['action'].numpy().tolist() for s in denormalize(out, stats)]
  [[0.0], [4.0]]
"""

from typing import (Any, Callable, Dict, Mapping, NamedTuple, Optional,
                    Sequence, Tuple)

import numpy as np
import tensorflow as tf

from rlds_lite import nest_paths
from rlds_lite import rlds_types
from rlds_lite.stats import types

MODES = ('gaussian', 'bounds')
BOUNDS = ('quantiles', 'minmax')
_DEFAULT_ROOTS = (rlds_types.ACTION, rlds_types.OBSERVATION)


def _center_and_scale(field: types.FieldStats, mode: str, bounds: str,
                      eps: float) -> Tuple[np.ndarray, np.ndarray]:
  with np.errstate(over='ignore', invalid='ignore'):
    if mode == 'gaussian':
      center, scale = field.mean, field.std
    elif bounds == 'quantiles':
      low, high = field.p01, field.p99
      center, scale = (low + high) / 2, (high - low) / 2
    else:
      center, scale = (field.min + field.max) / 2, (field.max - field.min) / 2
  return np.asarray(center, np.float64), np.asarray(scale, np.float64)


def _check_finite(field: types.FieldStats, center: np.ndarray,
                  scale: np.ndarray, keep: np.ndarray) -> None:
  """A ValueError naming the element whose statistics are not numbers."""
  bad = keep & ~(np.isfinite(center) & np.isfinite(scale))
  if not bad.any():
    return
  if not field.count:
    raise ValueError(f'normalize: field {field.path!r} has no valid values '
                     '(its statistics count none).')
  index = np.unravel_index(int(np.argmax(bad.reshape(-1))), field.shape)
  element = field.path + (
      '[' + ', '.join(str(int(i)) for i in index) + ']' if field.shape else '')
  nans, infs = int(field.nan_count[index]), int(field.inf_count[index])
  if nans + infs == field.count:
    why = (f'it holds only non-finite values ({nans} NaN, {infs} inf of '
           f'{field.count})')
  else:
    why = ('its statistics are not finite (center '
           f'{float(center[index])}, scale {float(scale[index])})')
  others = int(bad.sum()) - 1
  raise ValueError(
      f'normalize: cannot normalise field {field.path!r}: element {element}: '
      f'{why}' + (f' (and {others} more elements)' if others else '') +
      '; leave it out with keys= or mask=.')


def _check_shape(path: str, field: types.FieldStats, spec: Any,
                 leading: Optional[int]) -> None:
  """A ValueError unless the data's elements have the statistics' shape.

  ``leading``: how many dimensions come before a step's (1 for dense
  episodes' time axis, 0 for single steps), or None when unknown (steps,
  perhaps batched): then the data's last dimensions must match.
  """
  shape = getattr(spec, 'shape', None)
  if shape is None or shape.rank is None:
    return
  dims = shape.as_list()
  if leading is None:
    if len(dims) < len(field.shape):
      inner = None
    else:
      inner = dims[len(dims) - len(field.shape):]
  else:
    inner = dims[leading:] if len(dims) >= leading else None
  if inner is not None and len(inner) == len(field.shape) and all(
      d is None or d == s for d, s in zip(inner, field.shape)):
    return
  step = tuple(inner) if inner is not None and leading is not None else (
      tuple(dims))
  raise ValueError(
      f'normalize: field {path!r} has statistics of shape {field.shape} but '
      f'the data holds shape {step} (element_spec {tuple(dims)}): statistics '
      'of another dataset?')


def _keys(stats: types.DatasetStats, keys: Optional[Sequence[str]],
          paths: Sequence[str]) -> Sequence[str]:
  if keys is None:
    return [p for p, f in stats.fields.items()
            if p.split('/')[0] in _DEFAULT_ROOTS and p in paths and
            np.dtype(f.dtype).kind == 'f']
  for key in keys:
    if key not in stats.fields:
      raise KeyError(f'normalize: no statistics of field {key!r} '
                     f'(fields with statistics: {sorted(stats.fields)}).')
    if key not in paths:
      raise KeyError(f'normalize: the steps have no field {key!r} '
                     f'(step fields: {sorted(paths)}).')
  return list(keys)


class _Settings(NamedTuple):
  """One call's arguments (`normalize`'s) but the dataset and statistics."""
  mode: str
  keys: Optional[Sequence[str]]
  mask: Optional[Mapping[str, Any]]
  bounds: str
  eps: float
  clip: bool
  inverse: bool


def _step_fn(step_spec: Any, stats: types.DatasetStats, settings: _Settings,
             leading: Optional[int]) -> Callable[[Any], Any]:
  """The per-step (or batch of steps) function (``leading``: `_check_shape`)."""
  mode, keys, mask, bounds, eps, clip, inverse = settings
  if mode not in MODES:
    raise ValueError(f'normalize: mode must be one of {MODES}, got {mode!r}.')
  if bounds not in BOUNDS:
    raise ValueError(
        f'normalize: bounds must be one of {BOUNDS}, got {bounds!r}.')
  specs = dict(nest_paths.flatten_with_paths(step_spec))
  params = {}
  for key in _keys(stats, keys, list(specs)):
    field = stats.fields[key]
    _check_shape(key, field, specs[key], leading)
    center, scale = _center_and_scale(field, mode, bounds, eps)
    keep = np.ones(center.shape, bool)
    if mask is not None and key in mask:
      keep = np.broadcast_to(np.asarray(mask[key], bool), center.shape)
    _check_finite(field, center, scale, keep)
    scale = np.where(scale > eps, scale, 1.0)
    params[key] = (np.where(keep, center, 0.0), np.where(keep, scale, 1.0),
                   keep)
  if mask is not None:
    unknown = sorted(set(mask) - set(params))
    if unknown:
      raise KeyError(f'normalize: mask names fields not normalised: {unknown}.')
  do_clip = clip and mode == 'bounds'

  def convert(path, x):
    if path not in params:
      return x
    center, scale, keep = params[path]
    dtype = x.dtype if x.dtype.is_floating else tf.float32
    x = tf.cast(x, dtype)
    center, scale = tf.constant(center, dtype), tf.constant(scale, dtype)
    if inverse:
      return x * scale + center
    y = (x - center) / scale
    if do_clip:
      y = tf.where(tf.constant(keep), tf.clip_by_value(y, -1.0, 1.0), y)
    return y

  @tf.autograph.experimental.do_not_convert
  def fn(step):
    pairs = nest_paths.flatten_with_paths(step)
    return tf.nest.pack_sequence_as(step, [convert(p, x) for p, x in pairs])

  return fn


def _apply(dataset: tf.data.Dataset,
           make_fn: Callable[[Any, Optional[int]], Any]) -> tf.data.Dataset:
  """Maps the step function over steps, dense or nested episodes.

  ``make_fn(spec, leading)`` runs here, at call time: its errors (bad keys,
  shapes, statistics) come before any iteration.
  """
  spec = dataset.element_spec
  if isinstance(spec, Mapping) and rlds_types.STEPS in spec:
    steps_spec = spec[rlds_types.STEPS]
    if isinstance(steps_spec, tf.data.DatasetSpec):
      fn = make_fn(steps_spec.element_spec, 0)
      return dataset.map(lambda e: {**e, rlds_types.STEPS:
                                    e[rlds_types.STEPS].map(fn)})
    fn = make_fn(steps_spec, 1)
    return dataset.map(lambda e: {**e, rlds_types.STEPS: fn(e[rlds_types.STEPS])},
                       num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  return dataset.map(make_fn(spec, None), num_parallel_calls=tf.data.AUTOTUNE,
                     deterministic=True)


def normalize(dataset: tf.data.Dataset, stats: types.DatasetStats,
              mode: str = 'gaussian', *, keys: Optional[Sequence[str]] = None,
              mask: Optional[Dict[str, Any]] = None,
              bounds: str = 'quantiles', clip: bool = True,
              eps: float = 1e-8) -> tf.data.Dataset:
  """Normalises step fields (see the module docstring for the formulas).

  Args:
    dataset: steps, dense episodes or nested episodes.
    stats: statistics from ``rlds_lite.stats.compute``.
    mode: ``'gaussian'`` or ``'bounds'``.
    keys: field paths to normalise; default: the float fields under
      ``action`` and ``observation`` that have statistics.
    mask: per key, booleans (shaped like the field) saying which elements to
      normalise; others pass through.
    bounds: ``'quantiles'`` (p01/p99) or ``'minmax'``, for ``mode='bounds'``.
    clip: clip bounds-normalised values to ``[-1, 1]``.
    eps: scales ``<= eps`` are replaced by 1.

  Returns:
    The dataset with the fields normalised.

  Bad keys, shapes and statistics are errors when called, before any
  iteration (docs/stats.md).

  Example:
    >>> from rlds_lite import stats as stats_lib, synthetic
    >>> episodes = synthetic.episodes(num_episodes=4, dense=True)
    >>> s = stats_lib.compute(episodes, progress=False)
    >>> out = normalize(episodes, s, 'bounds', keys=['action'])
    >>> a = next(iter(out))['steps']['action'].numpy()
    >>> bool(a.min() >= -1 and a.max() <= 1)
    True
  """
  settings = _Settings(mode, keys, mask, bounds, eps, clip, inverse=False)
  return _apply(dataset, lambda spec, leading: _step_fn(spec, stats, settings,
                                                        leading))


def denormalize(dataset: tf.data.Dataset, stats: types.DatasetStats,
                mode: str = 'gaussian', *,
                keys: Optional[Sequence[str]] = None,
                mask: Optional[Dict[str, Any]] = None,
                bounds: str = 'quantiles',
                eps: float = 1e-8) -> tf.data.Dataset:
  """The inverse of ``normalize`` with the same arguments (clipping aside).

  Example:
    >>> import tensorflow as tf
    >>> from rlds_lite.stats import types
    >>> s = types.DatasetStats(1, 2, 0, 1, types.FieldStats.empty('length'),
    ...     None, {'action': types.FieldStats.from_values('action', [1.0, 3.0])})
    >>> ds = tf.data.Dataset.from_tensors({'action': 0.0})
    >>> [float(x['action']) for x in denormalize(ds, s)]
    [2.0]
  """
  settings = _Settings(mode, keys, mask, bounds, eps, False, inverse=True)
  return _apply(dataset, lambda spec, leading: _step_fn(spec, stats, settings,
                                                        leading))
