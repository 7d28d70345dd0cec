"""Unpickle untrusted data (`loads`): NumPy arrays and builtin values only, memory bounded.

What is refused and what is not bounded: docs/guarantees.md ("Untrusted
pickles").
"""

import contextvars
import io
import pickle
import sys
from typing import Any, Callable, Dict, Tuple

import numpy as np

try:
  from numpy._core import multiarray as _multiarray  # NumPy 2.
  from numpy._core import numeric as _numeric
except ImportError:  # NumPy 1.
  from numpy.core import multiarray as _multiarray  # pylint: disable=g-import-not-at-top
  from numpy.core import numeric as _numeric  # pylint: disable=g-import-not-at-top

MAX_EXPANSION = 16
"""Bytes a pickle may allocate per byte of pickle data."""
MIN_BUDGET = 4096
"""Bytes any pickle may allocate (a small value's pickle is smaller still)."""

_ARRAY_MODULES = ('numpy._core.multiarray', 'numpy.core.multiarray')
_NUMERIC_MODULES = ('numpy._core.numeric', 'numpy.core.numeric')
_BUILTIN_MODULES = ('builtins', '__builtin__')
_BUILTIN_NAMES = ('bool', 'bytearray', 'bytes', 'complex', 'dict', 'float',
                  'frozenset', 'int', 'list', 'set', 'slice', 'str', 'tuple')
SAFE_GLOBALS = frozenset(
    [(m, n) for m in _ARRAY_MODULES for n in ('_reconstruct', 'scalar')] +
    [(m, '_frombuffer') for m in _NUMERIC_MODULES] +
    [('numpy', 'ndarray'), ('numpy', 'dtype'), ('_codecs', 'encode')] +
    [(m, n) for m in _BUILTIN_MODULES for n in _BUILTIN_NAMES])
"""The only globals an untrusted pickle may name."""


class RefusedPickle(pickle.UnpicklingError):
  """An untrusted pickle names a global not allowed, or would allocate too much.

  Example:
    >>> class Bomb:  # Pickles as bytearray(2_000_000_000): 46 bytes.
    ...   def __reduce__(self):
    ...     return bytearray, (2_000_000_000,)
    >>> loads(pickle.dumps(Bomb()))
    Traceback (most recent call last):
    ...
    rlds_lite.convert.pickles.RefusedPickle: refuses to unpickle bytearray(2000000000): it would allocate 2000000000 bytes, more than the bound of 4096 bytes (16 times the 46-byte pickle, 4096 at least)
  """


class _Budget:
  """Bytes the pickle may still allocate; `charge` raises past the bound."""

  def __init__(self, pickle_size: int):
    self.size = pickle_size
    self.limit = max(MIN_BUDGET, MAX_EXPANSION * pickle_size)
    self.used = 0

  def refuse(self, what: str, total: int) -> RefusedPickle:
    return RefusedPickle(
        f'refuses to unpickle {what}: it would allocate {total} bytes, more '
        f'than the bound of {self.limit} bytes ({MAX_EXPANSION} times the '
        f'{self.size}-byte pickle, {MIN_BUDGET} at least)')

  def charge(self, nbytes: int, what: Callable[[], str]) -> None:
    if nbytes < 0 or self.used + nbytes > self.limit:
      raise self.refuse(what(), self.used + max(nbytes, 0))
    self.used += nbytes


_BUDGET: contextvars.ContextVar = contextvars.ContextVar('pickle_budget')


def _call_text(name: str, args: Tuple[Any, ...]) -> Callable[[], str]:
  def text():
    shown = ', '.join(_short_repr(a) for a in args)
    return f'{name}({shown})'
  return text


def _short_repr(value: Any) -> str:
  if isinstance(value, (list, tuple, set, frozenset, dict)):
    return f'<{type(value).__name__} of {len(value)}>'
  if isinstance(value, (str, bytes, bytearray)) and len(value) > 20:
    return f'<{type(value).__name__} of {len(value)}>'
  return repr(value)


def _refuse_call(name: str) -> RefusedPickle:
  return RefusedPickle(
      f'refuses to call {name} with these arguments: NumPy arrays and builtin '
      'values never need it (pass allow_pickle=True only for files you trust)')


def _num_bytes(shape: Any, dtype: Any, name: str) -> int:
  """Bytes of an array of ``shape`` and ``dtype``; refuses odd shapes."""
  dims = (shape,) if isinstance(shape, int) else shape
  if not isinstance(dims, tuple):
    raise _refuse_call(name)
  count = 1
  for dim in dims:
    if type(dim) is not int or dim < 0:  # pylint: disable=unidiomatic-typecheck
      raise _refuse_call(name)
    count *= dim
  dtype = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
  return count * (max(dtype.itemsize, 8) if dtype.hasobject else dtype.itemsize)


def _make_bytes(cls: type) -> Callable[..., Any]:
  """``bytes``/``bytearray``, from bytes or text only (never from a size)."""
  name = cls.__name__

  def make(*args):
    budget = _BUDGET.get()
    if not args:
      return cls()
    source = args[0]
    if isinstance(source, str):
      size = 4 * len(source)
    elif isinstance(source, (bytes, bytearray, list, tuple)):
      size = len(source)
    else:  # bytearray(2_000_000_000): zeros from a size.
      raise budget.refuse(_call_text(name, args)(), _size_hint(source))
    budget.charge(size + 64, _call_text(name, args))
    return cls(*args)

  return make


def _size_hint(value: Any) -> int:
  return value if isinstance(value, int) and value > 0 else 0


def _make_str(*args):
  """``str()``, ``str(text)`` or ``str(data, encoding[, errors])``."""
  if not args:
    return ''
  if len(args) == 1 and isinstance(args[0], str):
    return args[0]
  if len(args) in (2, 3) and isinstance(args[0], (bytes, bytearray)):
    _BUDGET.get().charge(4 * len(args[0]) + 64, _call_text('str', args))
    return str(*args)
  raise _refuse_call('str')  # str(big_list) would build its repr.


def _make_collection(cls: type) -> Callable[..., Any]:
  """``list``/``tuple``/``set``/``frozenset``/``dict`` of a sized value."""
  name = cls.__name__
  sized = (list, tuple, set, frozenset, dict, str, bytes, bytearray)

  def make(*args):
    if not args:
      return cls()
    if len(args) != 1 or not isinstance(args[0], sized):
      raise _refuse_call(name)
    per_item = 100 if cls in (dict, set, frozenset) else 8
    _BUDGET.get().charge(64 + per_item * len(args[0]),
                         _call_text(name, args))
    return cls(args[0])

  return make


def _make_small(cls: type) -> Callable[..., Any]:
  """``int``/``float``/``bool``/``complex``/``slice``: charged after the fact.

  Their results are no larger than their (already unpickled) arguments; the
  charge stops one memoized argument from being rebuilt a million times.
  """

  def make(*args):
    value = cls(*args)
    _BUDGET.get().charge(sys.getsizeof(value),
                         _call_text(cls.__name__, args))
    return value

  return make


class _NdarrayName:
  """Stands for ``numpy.ndarray`` in a pickle: an argument, never called."""

  def __call__(self, *args, **kwargs):
    raise _refuse_call('numpy.ndarray')


_NDARRAY = _NdarrayName()


class _BoundedArray(np.ndarray):
  """The array `_reconstruct` makes: its state (the data) is charged first."""

  def __setstate__(self, state):
    if not isinstance(state, tuple) or len(state) not in (4, 5):
      raise _refuse_call('numpy.ndarray.__setstate__')
    shape, dtype = state[-4], state[-3]
    nbytes = _num_bytes(tuple(shape) if isinstance(shape, list) else shape,
                        dtype, 'numpy.ndarray.__setstate__')
    _BUDGET.get().charge(
        nbytes, lambda: f'an array of shape {shape} and dtype {dtype}')
    super().__setstate__(state)


def _reconstruct(subtype, shape, dtype):
  """NumPy's ``_reconstruct``, with the array's size charged first."""
  if subtype is not _NDARRAY:
    raise _refuse_call('numpy _reconstruct')
  nbytes = _num_bytes(shape, dtype, 'numpy _reconstruct')
  _BUDGET.get().charge(
      nbytes, lambda: f'an array of shape {shape} and dtype {dtype}')
  return np.ndarray.__new__(_BoundedArray, shape, dtype)


def _scalar(dtype, *args):
  """NumPy's ``scalar(dtype, data)``."""
  _BUDGET.get().charge(np.dtype(dtype).itemsize + 64,
                       lambda: f'a scalar of dtype {dtype}')
  return _multiarray.scalar(dtype, *args)


def _frombuffer(buffer, dtype, shape, order):
  """NumPy's ``_frombuffer``: a view, charged as what it will be copied into."""
  nbytes = _num_bytes(shape, dtype, 'numpy _frombuffer')
  _BUDGET.get().charge(
      nbytes, lambda: f'an array of shape {shape} and dtype {dtype}')
  return _numeric._frombuffer(buffer, dtype, shape, order)  # pylint: disable=protected-access


def _encode(obj, encoding='utf-8', errors='strict'):
  """``_codecs.encode`` (protocol 2 spells bytes as latin-1 text)."""
  import codecs  # pylint: disable=g-import-not-at-top
  if not isinstance(obj, str):
    raise _refuse_call('_codecs.encode')
  _BUDGET.get().charge(4 * len(obj) + 64, lambda: 'encoded text')
  return codecs.encode(obj, encoding, errors)


def _dtype(*args):
  return np.dtype(*args)


_BUILTINS: Dict[str, Callable[..., Any]] = {
    'bytes': _make_bytes(bytes),
    'bytearray': _make_bytes(bytearray),
    'str': _make_str,
    **{name: _make_collection(cls) for name, cls in (
        ('list', list), ('tuple', tuple), ('set', set),
        ('frozenset', frozenset), ('dict', dict))},
    **{name: _make_small(cls) for name, cls in (
        ('int', int), ('float', float), ('bool', bool), ('complex', complex),
        ('slice', slice))},
}


_RESOLVED: Dict[Tuple[str, str], Any] = {
    **{(m, n): _BUILTINS[n] for m in _BUILTIN_MODULES for n in _BUILTIN_NAMES},
    **{(m, '_reconstruct'): _reconstruct for m in _ARRAY_MODULES},
    **{(m, 'scalar'): _scalar for m in _ARRAY_MODULES},
    **{(m, '_frombuffer'): _frombuffer for m in _NUMERIC_MODULES},
    ('numpy', 'ndarray'): _NDARRAY,
    ('numpy', 'dtype'): _dtype,
    ('_codecs', 'encode'): _encode,
}
assert set(_RESOLVED) == SAFE_GLOBALS


class _Unpickler(pickle.Unpickler):
  """Resolves only `SAFE_GLOBALS`, to their bounded stand-ins."""

  def find_class(self, module: str, name: str) -> Any:
    resolved = _RESOLVED.get((module, name))
    if resolved is None:
      raise RefusedPickle(
          f'refuses to load global {module}.{name}: without '
          'allow_pickle=True only NumPy arrays and builtin values are '
          'unpickled (pass allow_pickle=True only for files you trust)')
    return resolved


# Estimated bytes of a value once turned into arrays (``np.asarray``):
# (leaves, largest leaf, other bytes). A sequence's leaves are padded to the
# largest; a dict's values are converted one by one.
_Estimate = Tuple[int, int, int]


def _plain(value: Any, memo: Dict[int, Tuple[Any, _Estimate]]
           ) -> Tuple[Any, _Estimate]:
  """``value`` with `_BoundedArray` made plain ``ndarray``, and its estimate."""
  key = id(value)
  if key in memo:
    return memo[key]
  if isinstance(value, np.ndarray):
    array = value.view(np.ndarray) if type(value) is not np.ndarray else value
    if array.dtype.hasobject:
      items = [_plain(v, memo) for v in array.flat]
      plain = np.empty(array.shape, object)
      for index, (item, _) in enumerate(items):
        plain.flat[index] = item
      extra = sum(_total(e) for _, e in items)
      result = (plain, (array.size, 8, extra))
    else:
      result = (array, (array.size, array.dtype.itemsize, 0))
  elif isinstance(value, (list, tuple, set, frozenset)):
    items = [_plain(v, memo) for v in value]
    plain = type(value)(item for item, _ in items)
    leaves = sum(e[0] for _, e in items)
    largest = max((e[1] for _, e in items), default=0)
    extra = sum(e[2] for _, e in items) + 8 * len(items)
    result = (plain, (leaves, largest, extra))
  elif isinstance(value, dict):
    pairs = [(_plain(k, memo), _plain(v, memo)) for k, v in value.items()]
    plain = {k: v for (k, _), (v, _) in pairs}
    extra = sum(_total(ke) + _total(ve) for (_, ke), (_, ve) in pairs)
    result = (plain, (1, 8, extra + 64))
  elif isinstance(value, str):
    result = (value, (1, 4 * len(value), 0))
  elif isinstance(value, (bytes, bytearray)):
    result = (value, (1, len(value), 0))
  else:  # As NumPy stores it: bool 1 byte, complex 16, other numbers 8.
    itemsize = 1 if isinstance(value, bool) else (
        16 if isinstance(value, complex) else 8)
    result = (value, (1, itemsize, 0))
  memo[key] = result
  return result


def _total(estimate: _Estimate) -> int:
  leaves, largest, extra = estimate
  return leaves * largest + extra


def loads(data: bytes) -> Any:
  """Unpickles untrusted ``data``: NumPy arrays and builtin values, bounded.

  Anything else, or a pickle that would allocate more than ``MAX_EXPANSION``
  times its size, is a `RefusedPickle`.

  Example:
    >>> import pickle
    >>> loads(pickle.dumps([1, (2.5, 'x')], protocol=2))
    [1, (2.5, 'x')]
  """
  budget = _Budget(len(data))
  token = _BUDGET.set(budget)
  try:
    value = _Unpickler(io.BytesIO(data)).load()
    try:
      value, estimate = _plain(value, {})
    except RecursionError:
      raise RefusedPickle('refuses to unpickle a value nested more deeply '
                          'than Python can walk') from None
    total = _total(estimate)
    if total > budget.limit:
      raise budget.refuse('a value that expands when made into arrays',
                          total)
    return value
  finally:
    _BUDGET.reset(token)
