"""JSON-ready values from NumPy for the browser: NaN and infinities null, bytes text.

Example:
  >>> json_values(np.array([1.5, np.nan, np.inf]))
  [1.5, None, None]
  >>> json_scalar(np.int64(3)), json_scalar(b'pick'), json_scalar(np.nan)
  (3, 'pick', None)
"""

import math
from typing import Any, List

import numpy as np


def json_scalar(value: Any) -> Any:
  """A Python scalar (int, float, bool, str or None) from a NumPy scalar."""
  if isinstance(value, np.ndarray) and value.ndim == 0:
    value = value.item()
  if isinstance(value, np.generic):
    value = value.item()
  if isinstance(value, bytes):
    return value.decode('utf-8', errors='replace')
  if isinstance(value, float) and not math.isfinite(value):
    return None
  return value


def json_values(values: Any) -> List[Any]:
  """The numbers of a 1-D array (bools as 0/1); NaN and infinities None."""
  values = np.asarray(values)
  if values.dtype == np.bool_:
    values = values.astype(np.int64)
  if np.issubdtype(values.dtype, np.integer):
    return values.tolist()
  values = values.astype(np.float64)
  listed = values.tolist()
  if np.all(np.isfinite(values)):
    return listed
  return [v if math.isfinite(v) else None for v in listed]
