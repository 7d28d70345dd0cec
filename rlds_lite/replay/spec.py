"""What a buffer holds: each step field's shape and dtype, and the check of an item against it."""

import dataclasses
from typing import Any, Dict, Mapping, Tuple

import numpy as np


__all__ = ['Field', 'Spec', 'flat_batch', 'flat_step', 'spec_of', 'stacked']

_STRING_KINDS = ('S', 'U', 'O')


@dataclasses.dataclass(frozen=True)
class Field:
  """One step field: its per-step ``shape`` and ``dtype`` (``'object'`` for strings)."""
  shape: Tuple[int, ...]
  dtype: str

  def describe(self) -> str:
    return f'shape {list(self.shape)} {self.dtype}'


Spec = Dict[str, Field]
"""Flat field path (``'observation/image'``) -> `Field`."""


def _as_array(value: Any) -> np.ndarray:
  array = np.asarray(value)
  if array.dtype.kind in _STRING_KINDS:
    array = array.astype(object)
  return array


def flat_step(step: Mapping[str, Any]) -> Dict[str, np.ndarray]:
  """A nested step as flat path -> NumPy leaves (strings as ``object``).

  Example:
    >>> out = flat_step({'observation': {'pos': [1.0, 2.0]}, 'is_first': True})
    >>> {k: (v.shape, v.dtype.name) for k, v in out.items()}
    {'is_first': ((), 'bool'), 'observation/pos': ((2,), 'float64')}
  """
  if not isinstance(step, Mapping):
    raise TypeError(f'a step must be a dict of fields, got {type(step).__name__}.')
  out = {}
  for key in sorted(step):
    value = step[key]
    if isinstance(value, Mapping):
      out.update({f'{key}/{path}': leaf for path, leaf in flat_step(value).items()})
    else:
      out[str(key)] = _as_array(value)
  return out


def flat_batch(steps: Mapping[str, Any], label: str = 'steps') -> Dict[str, np.ndarray]:
  """Consecutive steps (nested fields of ``[N, ...]``) as flat NumPy fields of one length.

  Example:
    >>> {k: v.shape for k, v in flat_batch({'observation': {'x': np.zeros([3, 2])}}).items()}
    {'observation/x': (3, 2)}
  """
  flat = flat_step(steps)
  lengths = {path: (v.shape[0] if v.ndim else None) for path, v in flat.items()}
  if len(set(lengths.values())) > 1 or None in lengths.values():
    raise ValueError(f'{label}: every field needs the same number of steps (a leading '
                     f'axis), got {lengths}.')
  return flat


def stacked(rows) -> Dict[str, np.ndarray]:
  """Step dicts stacked into flat ``[N, ...]`` fields (``{}`` for none).

  Example:
    >>> stacked([{'reward': 1.0}, {'reward': 2.0}])['reward'].tolist()
    [1.0, 2.0]
  """
  flats = [flat_step(row) for row in rows]
  if not flats:
    return {}
  return {path: np.stack([f[path] for f in flats]) for path in flats[0]}


def spec_of(step: Mapping[str, np.ndarray], leading: int = 0) -> Spec:
  """The `Spec` of a flat step (``leading``: batch dimensions to drop).

  Example:
    >>> spec_of({'reward': np.zeros([5], np.float32)}, leading=1)
    {'reward': Field(shape=(), dtype='float32')}
  """
  return {path: Field(tuple(int(d) for d in value.shape[leading:]),
                      value.dtype.name)
          for path, value in step.items()}


def check(values: Mapping[str, np.ndarray], spec: Spec, leading: int,
          label: str) -> Dict[str, np.ndarray]:
  """``values`` cast to ``spec`` (same kind of dtype), else one error naming the field.

  Example:
    >>> spec = {'action': Field((2,), 'float32')}
    >>> check({'action': np.zeros([3])}, spec, 0, 'step')
    Traceback (most recent call last):
    ...
    ValueError: step field 'action' has shape [3] float64, but the buffer holds shape [2] float32.
  """
  missing = sorted(set(spec) - set(values))
  extra = sorted(set(values) - set(spec))
  if missing or extra:
    raise ValueError(
        f'{label} has fields {sorted(values)}, but the buffer holds '
        f'{sorted(spec)} (missing {missing}, unexpected {extra}).')
  out = {}
  for path, field in spec.items():
    value = values[path]
    if value.dtype == field.dtype and value.shape[leading:] == field.shape:
      out[path] = value   # Already what the buffer holds.
      continue
    if np.dtype(field.dtype).kind == 'S' and value.dtype.kind in _STRING_KINDS:
      value = _fixed_width(value, field, path, label)
    got = Field(tuple(value.shape[leading:]), value.dtype.name)
    same_kind = (np.dtype(field.dtype).kind == value.dtype.kind or
                 (np.dtype(field.dtype).kind == 'f' and value.dtype.kind in 'iu')
                 or (field.dtype == 'bool' and value.dtype.kind in 'iu'))
    if got.shape != field.shape or not same_kind:
      raise ValueError(
          f'{label} field {path!r} has {got.describe()}, but the buffer '
          f'holds {field.describe()}.')
    out[path] = value if value.dtype.name == field.dtype else value.astype(field.dtype)
  return out


def _fixed_width(value: np.ndarray, field: Field, path: str, label: str) -> np.ndarray:
  encoded = np.vectorize(lambda x: x.encode() if isinstance(x, str) else bytes(x),
                         otypes=[object])(value) if value.size else value.astype(object)
  width = np.dtype(field.dtype).itemsize
  longest = max((len(x) for x in encoded.reshape(-1)), default=0)
  if longest > width:
    raise ValueError(f'{label} field {path!r} holds a string of {longest} bytes, longer '
                     f"than the buffer's width {width} (Field({field.shape}, "
                     f"'{field.dtype}')).")
  return encoded.astype(field.dtype)


def to_json(spec: Spec) -> Dict[str, Any]:
  return {path: {'shape': list(f.shape), 'dtype': f.dtype} for path, f in spec.items()}


def from_json(data: Mapping[str, Any]) -> Spec:
  return {path: Field(tuple(v['shape']), v['dtype']) for path, v in data.items()}
