"""String fields (a ``language_instruction`` per step) in every format.

In an Episode strings are object arrays of ``bytes``; readers return that
form (`canonical`), writers store what each format can (`for_npz`,
`for_hdf5`). Per format: docs/convert.md.
"""

from typing import Any, Dict, Optional, Tuple, Union

import numpy as np

from rlds_lite.convert import episodes as episodes_lib

ConversionError = episodes_lib.ConversionError


def is_strings(value: Any) -> bool:
  """Whether ``value`` is an array of strings (kinds S, U, T; str/bytes objects).

  Example:
    >>> is_strings(np.array([b'a'])), is_strings(np.array([1, 'a'], object))
    (True, False)
  """
  if not isinstance(value, np.ndarray):
    return False
  if value.dtype.kind in 'SUT':
    return True
  return value.dtype.kind == 'O' and value.size > 0 and all(
      isinstance(x, (str, bytes)) for x in value.ravel())


def _utf8(item: Union[str, bytes]) -> bytes:
  return item.encode('utf-8') if isinstance(item, str) else bytes(item)


def canonical(value: Any) -> Any:
  """``value`` with every string array as an object array of ``bytes``,
  every ``str`` as UTF-8 ``bytes``.

  Other leaves (and nests of dicts) are returned as they are.

  Example:
    >>> canonical({'a': np.array([b'x'], 'S'), 'b': np.zeros(1), 'c': 'é'})
    {'a': array([b'x'], dtype=object), 'b': array([0.]), 'c': b'\xc3\xa9'}
  """
  if isinstance(value, dict):
    return {k: canonical(v) for k, v in value.items()}
  if isinstance(value, (str, bytes)):
    return _utf8(value)
  if not is_strings(value):
    return value
  if value.dtype.kind == 'S':
    return value.astype(object)
  out = np.empty(value.shape, object)
  for index, item in np.ndenumerate(value):
    out[index] = _utf8(item)
  return out


def zero_rows(count: int, like: np.ndarray) -> np.ndarray:
  """``count`` zero rows shaped like ``like``'s rows; ``b''`` for strings.

  Example:
    >>> zero_rows(2, np.array([b'a'], object))
    array([b'', b''], dtype=object)
  """
  like = np.asarray(like)
  rows = np.zeros((count,) + like.shape[1:], like.dtype)
  if like.dtype.kind == 'O':
    rows[...] = b''
  return rows




def _first_with(values: np.ndarray, test) -> Optional[Tuple[int, ...]]:
  for index, item in np.ndenumerate(values):
    if test(item):
      return index
  return None


def for_npz(value: np.ndarray, field: str, source: Optional[str] = None,
            episode: Optional[int] = None) -> np.ndarray:
  """A string array as a fixed-width ``S`` array; a value ending in NUL is a ConversionError.

  Example:
    >>> for_npz(np.array([b'a\\x00'], object), 'note')
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: field 'note': value [0] ends with a NUL byte, which a .npz string array (fixed-width bytes) cannot keep
  """
  data = canonical(value)
  bad = _first_with(data, lambda item: item.endswith(b'\x00'))
  if bad is not None:
    raise ConversionError(
        f'value {list(bad)} ends with a NUL byte, which a .npz string array '
        '(fixed-width bytes) cannot keep', source=source, episode=episode,
        field=field)
  if not data.size:
    return np.zeros(data.shape, 'S1')
  return data.astype(bytes)


def for_hdf5(value: np.ndarray, field: str, source: Optional[str] = None,
             episode: Optional[int] = None) -> Tuple[np.ndarray, Any]:
  """``(data, dtype)`` to store a string array as HDF5 variable-length strings (no NUL bytes).

  Example:
    >>> data, dtype = for_hdf5(np.array(['pick']), 'language_instruction')
    >>> import h5py
    >>> data, h5py.check_string_dtype(dtype).encoding
    (array([b'pick'], dtype=object), 'utf-8')
  """
  import h5py  # pylint: disable=g-import-not-at-top
  data = canonical(value)
  bad = _first_with(data, lambda item: b'\x00' in item)
  if bad is not None:
    raise ConversionError(
        f'value {list(bad)} holds a NUL byte, which HDF5 strings cannot keep',
        source=source, episode=episode, field=field)
  try:
    for item in data.ravel():
      item.decode('utf-8')
    encoding = 'utf-8'
  except UnicodeDecodeError:
    encoding = 'ascii'   # h5py's tag for bytes that are not text.
  return data, h5py.string_dtype(encoding)


def create_hdf5_dataset(group: Any, key: str, value: Any, field: str,
                        source: Optional[str] = None,
                        episode: Optional[int] = None) -> None:
  """``group.create_dataset(key, data=value)``, strings as `for_hdf5` says.

  Raises:
    ConversionError: naming the field, for a string holding a NUL byte.

  Example:
    >>> import h5py, io
    >>> with h5py.File(io.BytesIO(), 'w') as f:
    ...   create_hdf5_dataset(f, 'task', np.array(['pick']), 'task')
    ...   create_hdf5_dataset(f, 'reward', np.zeros(2), 'reward')
    ...   f['task'].asstr()[()].tolist(), f['reward'].dtype.name
    (['pick'], 'float64')
  """
  array = np.asarray(value)
  if array.dtype.kind in 'OSUT':
    data, dtype = for_hdf5(array, field, source, episode)
    group.create_dataset(key, data=data, dtype=dtype)
  else:
    group.create_dataset(key, data=array)


def text_space(value: np.ndarray) -> Dict[str, Any]:
  """A gymnasium ``Text`` space (serialised as Minari does) fitting the strings of ``value``.

  Example:
    >>> text_space(np.array(['ab', 'ba', '']))
    {'type': 'Text', 'max_length': 2, 'min_length': 0, 'charset': 'ab'}
  """
  texts = [item.decode('utf-8', errors='replace')
           for item in canonical(value).ravel()] if np.size(value) else []
  return {'type': 'Text', 'max_length': max(map(len, texts), default=1) or 1,
          'min_length': 0, 'charset': ''.join(sorted(set(''.join(texts))))}
