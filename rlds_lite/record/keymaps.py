"""Key maps of the browser recorder: keys (browser ``KeyboardEvent.key`` names) to actions.

Built in for ``catch``, ``catch_pixels`` and ``reach``; derived for a discrete or small
continuous dm_env action spec; read from a JSON (or YAML) file otherwise. Held keys make
one action: a discrete space takes the last key pressed, a continuous one the clipped sum.
"""

import dataclasses
import json
import os
from typing import Any, Dict, Optional, Sequence

from dm_env import specs as dm_specs
import numpy as np

__all__ = ['KeyMap', 'builtin', 'derive', 'load', 'for_env']

_DIGITS = '1234567890'
_AXIS_KEYS = (('ArrowLeft', 'ArrowRight'), ('ArrowDown', 'ArrowUp'),
              ('q', 'e'))


@dataclasses.dataclass(frozen=True)
class KeyMap:
  """Keys to actions of one action spec, and the no-op (no key held).

  Attributes:
    keys: ``{key: action}`` (an int, or a list for a continuous spec).
    noop: the action when no mapped key is held.
    discrete: True: the last held key wins; False: held actions are summed.

  Example:
    >>> km = builtin('catch')
    >>> km.action(['ArrowLeft']), km.action([]), km.action(['x', 'ArrowRight'])
    (0, 1, 2)
    >>> builtin('reach').action(['ArrowRight', 'ArrowUp']).tolist()
    [1.0, 1.0]
  """
  keys: Dict[str, Any]
  noop: Any
  discrete: bool

  def action(self, held: Sequence[str]) -> Any:
    """The action of the held keys (in the order pressed)."""
    mapped = [k for k in held if k in self.keys]
    if self.discrete:
      return self.noop if not mapped else self.keys[mapped[-1]]
    total = np.asarray(self.noop, np.float64).copy()
    for key in mapped:
      total += np.asarray(self.keys[key], np.float64)
    return np.clip(total, -1.0, 1.0)

  def describe(self) -> Dict[str, Any]:
    """JSON for the page: keys, their actions and the no-op."""
    def plain(a):
      return np.asarray(a).tolist()
    return {'keys': {k: plain(v) for k, v in self.keys.items()},
            'noop': plain(self.noop)}


def builtin(name: str) -> Optional[KeyMap]:
  """The key map of a built-in environment (None for others).

  Example:
    >>> sorted(builtin('catch_pixels').keys), builtin('pong') is None
    (['ArrowLeft', 'ArrowRight'], True)
  """
  if name in ('catch', 'catch_pixels'):
    return KeyMap({'ArrowLeft': 0, 'ArrowRight': 2}, 1, True)
  if name == 'reach':
    return KeyMap({'ArrowLeft': [-1.0, 0.0], 'ArrowRight': [1.0, 0.0],
                   'ArrowDown': [0.0, -1.0], 'ArrowUp': [0.0, 1.0]},
                  [0.0, 0.0], False)
  return None


def _is_discrete(spec: Any) -> bool:
  return (isinstance(spec, dm_specs.DiscreteArray) or
          (isinstance(spec, dm_specs.BoundedArray) and spec.shape == () and
           np.dtype(spec.dtype).kind in 'iu'))


def _discrete_size(spec: Any) -> int:
  if isinstance(spec, dm_specs.DiscreteArray):
    return int(spec.num_values)
  return int(spec.maximum) - int(spec.minimum) + 1


def derive(spec: Any) -> KeyMap:
  """A key map for a discrete spec (digits 1..9, 0) or a continuous ``[<=3]`` one (arrows, q/e).

  Example:
    >>> derive(dm_specs.DiscreteArray(3)).keys
    {'1': 0, '2': 1, '3': 2}
    >>> derive(dm_specs.BoundedArray((1,), np.float32, -1, 1)).keys
    {'ArrowLeft': [-1.0], 'ArrowRight': [1.0]}
  """
  if _is_discrete(spec):
    size = _discrete_size(spec)
    if size > len(_DIGITS):
      raise ValueError(f'record: the action space has {size} discrete actions, '
                       f'more than the {len(_DIGITS)} digit keys; give a key '
                       'map file (--keys).')
    low = int(getattr(spec, 'minimum', 0))
    return KeyMap({_DIGITS[i]: low + i for i in range(size)}, low, True)
  shape = tuple(getattr(spec, 'shape', ()))
  if (isinstance(spec, dm_specs.Array) and len(shape) == 1 and
      1 <= shape[0] <= len(_AXIS_KEYS) and np.dtype(spec.dtype).kind == 'f'):
    keys = {}
    for axis in range(shape[0]):
      for sign, key in zip((-1.0, 1.0), _AXIS_KEYS[axis]):
        keys[key] = [sign if i == axis else 0.0 for i in range(shape[0])]
    return KeyMap(keys, [0.0] * shape[0], False)
  raise ValueError(f'record: no key map can be derived for the action spec '
                   f'{spec!r} (only a discrete one of <= 10 actions or a float '
                   'vector of <= 3); give a key map file (--keys).')


def _check(keymap: KeyMap, spec: Any, where: str) -> KeyMap:
  """Refuses any action (or the no-op) the spec does not hold."""
  for key, value in [('(no key)', keymap.noop)] + list(keymap.keys.items()):
    array = np.asarray(value)
    if keymap.discrete:
      try:
        spec.validate(np.asarray(value, spec.dtype))
        ok = array.shape == () and array.dtype.kind in 'iu'
      except ValueError:
        ok = False
    else:
      ok = array.shape == tuple(spec.shape) and array.dtype.kind in 'iuf'
    if not ok:
      raise ValueError(f'record: {where} maps key {key!r} to action '
                       f'{array.tolist()!r}, which the action space {spec!r} '
                       'does not have.')
  return keymap


def load(path: str, spec: Any) -> KeyMap:
  """Reads ``{"keys": {key: action}, "noop": action}`` (JSON, or YAML by extension).

  Example:
    >>> import tempfile
    >>> path = tempfile.mktemp(suffix='.json')
    >>> with open(path, 'w') as f:
    ...   _ = f.write('{"keys": {"a": 0, "d": 2}, "noop": 1}')
    >>> load(path, dm_specs.DiscreteArray(3)).action(['d'])
    2
    >>> with open(path, 'w') as f:
    ...   _ = f.write('{"keys": {"a": 5}, "noop": 1}')
    >>> load(path, dm_specs.DiscreteArray(3))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: record: key map ... maps key 'a' to action 5, which the action space ... does not have.
  """
  where = f'key map {os.fspath(path)}'
  with open(path, encoding='utf-8') as f:
    text = f.read()
  try:
    if str(path).endswith(('.yaml', '.yml')):
      import yaml  # pylint: disable=g-import-not-at-top
      data = yaml.safe_load(text)
    else:
      data = json.loads(text)
  except ValueError as e:  # json and yaml errors.
    raise ValueError(f'record: {where} is not valid JSON/YAML: {e}') from None
  if (not isinstance(data, dict) or not isinstance(data.get('keys'), dict) or
      'noop' not in data):
    raise ValueError(f'record: {where} must be {{"keys": {{key: action}}, '
                     '"noop": action}.')
  return _check(KeyMap(dict(data['keys']), data['noop'], _is_discrete(spec)),
                spec, where)


def for_env(name: Optional[str], spec: Any,
            path: Optional[str] = None) -> KeyMap:
  """The key map of an environment: from ``path``, built in, or derived, checked against ``spec``.

  Example:
    >>> for_env('catch', dm_specs.DiscreteArray(3)).noop
    1
  """
  if path is not None:
    return load(path, spec)
  keymap = builtin(name) if name else None
  if keymap is None:
    return _check(derive(spec), spec, 'the derived key map')
  return _check(keymap, spec, f'the key map of {name}')
