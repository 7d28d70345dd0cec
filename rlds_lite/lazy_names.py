"""A package's public names imported on first use (PEP 562)."""

import importlib
import importlib.util
import sys
from typing import Any, Mapping

__all__ = ['attribute']


def attribute(package: str, names: Mapping[str, str], name: str) -> Any:
  """``package.name`` from its module (``names``: name -> submodule) or a submodule; kept.

  Example:
    >>> import sys
    >>> attribute('rlds_lite', {'STEPS': 'rlds_types'}, 'STEPS')
    'steps'
    >>> attribute('rlds_lite', {}, 'no_such_name')
    Traceback (most recent call last):
    ...
    AttributeError: module 'rlds_lite' has no attribute 'no_such_name'
  """
  if name in names:
    value = getattr(importlib.import_module(f'{package}.{names[name]}'), name)
  elif not name.startswith('_') and importlib.util.find_spec(
      f'{package}.{name}'):
    value = importlib.import_module(f'{package}.{name}')
  else:
    raise AttributeError(f'module {package!r} has no attribute {name!r}')
  setattr(sys.modules[package], name, value)
  return value
