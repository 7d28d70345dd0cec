"""Named pickle bombs: small pickles that ask an unpickler for a lot of memory.

Each entry of `BOMBS` builds its pickle bytes without allocating what it asks
for (the pickler only records the calls); `EXPECTED` is the start of the
reason ``rlds_lite.convert.pickles.loads`` gives for refusing it. Only NumPy
is imported, so a small subprocess can run them under a memory limit.
"""

import pickle
from typing import Any, Callable, Dict

import numpy as np

try:
  from numpy._core import multiarray as _multiarray
  from numpy._core import numeric as _numeric
except ImportError:
  from numpy.core import multiarray as _multiarray
  from numpy.core import numeric as _numeric

GIGA = 2_000_000_000
MEGA = 1 << 20


class Call:
  """Pickles as ``fn(*args)`` (then ``__setstate__(state)`` if a state is given)."""

  def __init__(self, fn: Any, args: tuple, state: Any = None):
    self.fn, self.args, self.state = fn, args, state

  def __reduce__(self):
    if self.state is None:
      return self.fn, self.args
    return self.fn, self.args, self.state


def _shared_array_states() -> bytes:
  data = bytes(MEGA)  # One memoized 1 MiB bytes object, the data of 2000 arrays.
  state = (1, (MEGA,), np.dtype('u1'), False, data)
  return pickle.dumps([Call(_multiarray._reconstruct, (np.ndarray, (0,), b'b'),
                            state) for _ in range(2000)], protocol=4)


def _shared_views() -> bytes:
  data = bytearray(MEGA)
  return pickle.dumps(
      [Call(_numeric._frombuffer, (data, np.dtype('u1'), (MEGA,), 'C'))
       for _ in range(2000)], protocol=4)


def _list_of_shared_lists() -> bytes:
  inner = list(range(100)) * 100  # 10^4 small ints.
  return pickle.dumps([inner] * 10_000, protocol=4)  # 10^8 elements as arrays.


def _padded_strings() -> bytes:
  short = 'a'
  return pickle.dumps(['x' * 100_000] + [short] * 20_000, protocol=4)


def _lists_of_shared_bytes() -> bytes:
  data = bytes(MEGA)
  return pickle.dumps([Call(list, (data,)) for _ in range(200)], protocol=4)


def _ints_from_shared_text() -> bytes:
  text = '9' * 4000
  return pickle.dumps([Call(int, (text,)) for _ in range(100_000)], protocol=4)


def _object_array_of_shared_lists() -> bytes:
  inner = [1.0] * 10_000
  state = (1, (10_000,), np.dtype(object), False, [inner] * 10_000)
  return pickle.dumps(
      Call(_multiarray._reconstruct, (np.ndarray, (0,), b'b'), state),
      protocol=4)


BOMBS: Dict[str, Callable[[], bytes]] = {
    'bytearray_of_a_size': lambda: pickle.dumps(Call(bytearray, (GIGA,))),
    'bytes_of_a_size': lambda: pickle.dumps(Call(bytes, (GIGA,))),
    'ndarray_called': lambda: pickle.dumps(
        Call(np.ndarray, ((GIGA,), np.dtype('u1')))),
    'reconstruct_huge_shape': lambda: pickle.dumps(
        Call(_multiarray._reconstruct, (np.ndarray, (GIGA,), b'b'))),
    'reconstruct_huge_subarray_dtype': lambda: pickle.dumps(
        Call(_multiarray._reconstruct,
             (np.ndarray, (1,), np.dtype(('u1', (GIGA,)))))),
    'scalar_of_huge_dtype': lambda: pickle.dumps(
        Call(_multiarray.scalar, (np.dtype(('V', GIGA)), b''))),
    'array_states_sharing_one_buffer': _shared_array_states,
    'frombuffer_views_of_one_buffer': _shared_views,
    'list_of_one_shared_list': _list_of_shared_lists,
    'one_long_string_among_short_ones': _padded_strings,
    'list_of_shared_bytes': _lists_of_shared_bytes,
    'ints_from_shared_text': _ints_from_shared_text,
    'object_array_of_shared_lists': _object_array_of_shared_lists,
}

EXPECTED: Dict[str, str] = {
    'bytearray_of_a_size': 'refuses to unpickle bytearray(2000000000): it '
                           'would allocate 2000000000 bytes',
    'bytes_of_a_size': 'refuses to unpickle bytes(2000000000): it would '
                       'allocate 2000000000 bytes',
    'ndarray_called': 'refuses to call numpy.ndarray with these arguments',
    'reconstruct_huge_shape': 'refuses to unpickle an array of shape '
                              '(2000000000,)',
    'reconstruct_huge_subarray_dtype': 'refuses to unpickle an array of shape '
                                       '(1,)',
    'scalar_of_huge_dtype': 'refuses to unpickle a scalar of dtype |V2000000000',
    'array_states_sharing_one_buffer': 'refuses to unpickle an array of shape '
                                       '(1048576,)',
    'frombuffer_views_of_one_buffer': 'refuses to unpickle an array of shape '
                                      '(1048576,)',
    'list_of_one_shared_list': 'refuses to unpickle a value that expands when '
                               'made into arrays',
    'one_long_string_among_short_ones': 'refuses to unpickle a value that '
                                        'expands when made into arrays',
    'list_of_shared_bytes': 'refuses to unpickle list(<bytes of 1048576>)',
    'ints_from_shared_text': "refuses to unpickle int(<str of 4000>)",
    'object_array_of_shared_lists': 'refuses to unpickle a value that expands '
                                    'when made into arrays',
}
