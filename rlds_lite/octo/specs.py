"""Octo's ``ModuleSpec`` dicts (``{'module', 'name', 'args', 'kwargs'}``) as callables, and as the strings its cache keys hash."""

import functools
import importlib
import inspect
from typing import Any, Callable, Optional

__all__ = ['instantiate', 'to_string']

_SPEC_KEYS = {'module', 'name', 'args', 'kwargs'}


def instantiate(spec: Any, what: str = 'standardize_fn') -> Callable:
  """A callable as it is; a ModuleSpec dict imported and bound to its arguments.

  Example:
    >>> fn = instantiate({'module': 'operator', 'name': 'add', 'args': (1,),
    ...                   'kwargs': {}})
    >>> fn(2)
    3
    >>> instantiate(3)
    Traceback (most recent call last):
    ...
    TypeError: standardize_fn must be a callable or a ModuleSpec dict {'module', 'name', 'args', 'kwargs'}, got int.
  """
  if callable(spec):
    return spec
  if not (isinstance(spec, dict) and {'module', 'name'} <= set(spec) <=
          _SPEC_KEYS):
    raise TypeError(f"{what} must be a callable or a ModuleSpec dict "
                    f"{{'module', 'name', 'args', 'kwargs'}}, got "
                    f'{type(spec).__name__}.')
  fn = getattr(importlib.import_module(spec['module']), spec['name'])
  args, kwargs = tuple(spec.get('args', ())), dict(spec.get('kwargs', {}))
  return functools.partial(fn, *args, **kwargs) if args or kwargs else fn


def to_string(spec: Optional[Any]) -> str:
  """Octo's ``ModuleSpec.to_string`` of a spec dict; a callable's ``module:name`` and arguments.

  Example:
    >>> to_string({'module': 'm', 'name': 'f', 'args': (), 'kwargs': {'a': 1}})
    'm:f(a=1)'
    >>> import json
    >>> to_string(functools.partial(json.dumps, indent=1))
    'json:dumps(indent=1)'
  """
  if spec is None:
    return ''
  if isinstance(spec, dict):
    module, name = spec['module'], spec['name']
    args, kwargs = spec.get('args', ()), spec.get('kwargs', {})
  else:
    args, kwargs = (), {}
    fn = spec
    if isinstance(fn, functools.partial):
      args, kwargs, fn = fn.args, fn.keywords, fn.func
    module = getattr(fn, '__module__', None) or type(fn).__module__
    name = getattr(fn, '__qualname__', None) or type(fn).__qualname__
    if name == '<lambda>':   # No name to tell two lambdas apart: their source.
      try:
        name += inspect.getsource(fn).strip()
      except (OSError, TypeError):
        pass
  words = [repr(a) for a in args] + [f'{k}={v!r}' for k, v in kwargs.items()]
  return f'{module}:{name}({", ".join(words)})'
