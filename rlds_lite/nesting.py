"""One bound on how deep user input may nest (`MAX_DEPTH`), for every parser of it."""

import json
from typing import Any, IO, Union

MAX_DEPTH = 100
"""The most levels of nesting a parser of user input accepts."""


class TooDeepError(ValueError):
  """Input nested deeper than `MAX_DEPTH` levels."""


def too_deep(what: str) -> TooDeepError:
  """The error refusing ``what`` (``'JSON'``, ``'EXPR'``) as too deep.

  Example:
    >>> str(too_deep('EXPR'))
    'EXPR nests deeper than 100 levels (refused)'
  """
  return TooDeepError(f'{what} nests deeper than {MAX_DEPTH} levels (refused)')


def _check_depth(value: Any) -> None:
  """A `TooDeepError` if lists and dicts nest deeper than `MAX_DEPTH`."""
  level = [value] if isinstance(value, (list, dict)) else []
  depth = 0
  while level:  # One level at a time: no recursion of its own.
    depth += 1
    if depth > MAX_DEPTH:
      raise too_deep('JSON')
    level = [child for node in level
             for child in (node.values() if isinstance(node, dict) else node)
             if isinstance(child, (list, dict))]


def loads(text: Union[str, bytes, bytearray]) -> Any:
  """``json.loads`` of at most `MAX_DEPTH` levels; else a `TooDeepError`.

  Example:
    >>> loads('{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> loads('[' * 101 + ']' * 101)
    Traceback (most recent call last):
    ...
    rlds_lite.nesting.TooDeepError: JSON nests deeper than 100 levels (refused)
  """
  try:
    value = json.loads(text)
  except RecursionError:  # Far deeper: the C parser gave up.
    raise too_deep('JSON') from None
  _check_depth(value)
  return value


def load(file: IO[Any]) -> Any:
  """`loads` of a file's contents (``json.load`` with the bound)."""
  return loads(file.read())
