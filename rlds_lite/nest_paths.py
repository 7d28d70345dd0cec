"""Name the leaves of nested step structures with paths (``'observation/image'``), and back."""

from typing import Any, List, Mapping, Optional, Sequence, Tuple


def flatten_with_paths(structure: Any, prefix: str = '') -> List[Tuple[str, Any]]:
  """(path, leaf) pairs of a nested dict/tuple/list, in ``tf.nest.flatten`` order.

  Example:
    >>> flatten_with_paths({'observation': {'pos': 1, 'vel': 2}, 'action': (3, 4)})
    [('action/0', 3), ('action/1', 4), ('observation/pos', 1), ('observation/vel', 2)]
  """
  if isinstance(structure, Mapping):
    items = [(str(k), structure[k]) for k in sorted(structure)]
  elif isinstance(structure, (tuple, list)):
    items = [(str(i), v) for i, v in enumerate(structure)]
  else:
    return [(prefix, structure)]
  pairs = []
  for name, value in items:
    pairs.extend(flatten_with_paths(value, f'{prefix}/{name}' if prefix else name))
  return pairs


def nest_from_paths(flat: Mapping[Any, Any]) -> dict:
  """Nested dicts from ``'a/b'`` or tuple path keys: the inverse of `flatten_with_paths`.

  Example:
    >>> nest_from_paths({'observation/pos': 1, ('next', 'done'): 2, 'a': {'b': 3}})
    {'observation': {'pos': 1}, 'next': {'done': 2}, 'a': {'b': 3}}
  """
  out: dict = {}
  for key, value in flat.items():
    path = ([str(k) for k in key] if isinstance(key, tuple)
            else str(key).split('/'))
    node = out
    for parent in path[:-1]:
      node = node.setdefault(parent, {})
    if isinstance(value, Mapping):
      node.setdefault(path[-1], {}).update(nest_from_paths(value))
    else:
      node[path[-1]] = value
  return out


def _child(value: Any, key: str) -> Any:
  """``value[key]`` (a digit indexes tuples/lists); KeyError if missing."""
  if isinstance(value, Mapping):
    if key in value:
      return value[key]
  elif isinstance(value, (tuple, list)) and key.isdigit():
    if int(key) < len(value):
      return value[int(key)]
  raise KeyError(key)


def get_path(structure: Any, path: str) -> Any:
  """The part of a nested value or spec at ``path``; a KeyError naming the missing part.

  Example:
    >>> get_path({'observation': {'pos': 1, 'vel': 2}}, 'observation/vel')
    2
    >>> get_path({'action': (5, 6)}, 'action/1')
    6
  """
  value = structure
  for i, key in enumerate(path.split('/')):
    try:
      value = _child(value, key)
    except KeyError:
      missing = '/'.join(path.split('/')[:i + 1])
      raise KeyError(f'no key {missing!r}') from None
  return value


def paths_under(paths: Sequence[str], path: str) -> List[str]:
  """The ``paths`` that are ``path`` or below it, in order; a KeyError listing them if none.

  Example:
    >>> paths_under(['action', 'observation/image', 'observation/x'], 'observation/')
    ['observation/image', 'observation/x']
  """
  path = path.strip('/')
  matches = [p for p in paths if p == path or p.startswith(path + '/')]
  if not matches:
    raise KeyError(f'no step field {path!r} (step fields: '
                   f'{", ".join(sorted(paths))}).')
  return matches


def slash_key(structure: Any, prefix: str = '') -> Optional[str]:
  """The path of the first dict key holding a ``/`` (it reads as nesting), or None.

  Example:
    >>> slash_key({'observation': {'a/b': 1}}), slash_key({'a': {'b': 1}})
    ('observation/a/b', None)
  """
  if not isinstance(structure, Mapping):
    return None
  for key in sorted(structure):
    path = f'{prefix}/{key}' if prefix else str(key)
    if '/' in str(key):
      return path
    found = slash_key(structure[key], path)
    if found:
      return found
  return None


def slash_key_problem(path: str) -> str:
  """The message for a key holding a ``/`` at ``path`` (see `slash_key`).

  Example:
    >>> slash_key_problem('steps/a/b')
    "key 'steps/a/b' holds a '/', which rlds_lite reads as nesting (fields are named by paths such as 'observation/image'); rename it or nest it"
  """
  return (f"key {path!r} holds a '/', which rlds_lite reads as nesting "
          "(fields are named by paths such as 'observation/image'); rename "
          'it or nest it')
