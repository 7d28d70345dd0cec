"""EXPR: a small, safe boolean expression over the columns of an episode catalog.

Parsed here (no ``eval``) and evaluated on whole NumPy columns; the grammar
and typing rules are in ``docs/episodes.md``.
"""

import dataclasses
import re
from typing import Any, Callable, List, Mapping, Optional, Tuple, Union

import numpy as np

from rlds_lite import nesting

__all__ = ['ExpressionError', 'Expression', 'parse', 'evaluate', 'column_names']


class ExpressionError(ValueError):
  """A bad EXPR (a ValueError): a syntax error, an unknown column or mismatched types.

    Example:
      >>> parse('length >> 2')
      Traceback (most recent call last):
      ...
      rlds_lite.catalog.expression.ExpressionError: EXPR 'length >> 2': unexpected '>' at position 9; expected a column, a number, a string, true/false or '('.
  """


Scalar = Union[bool, int, float, str]

_TOKEN_RE = re.compile(r'''
    (?P<space>\s+)
  | (?P<number>-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
  | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<op>==|!=|<=|>=|<|>|\(|\)|\[|\]|,)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:/[A-Za-z_0-9]+)*)
''', re.VERBOSE)
_KEYWORDS = ('and', 'or', 'not', 'in', 'contains', 'true', 'false')
_COMPARISONS = ('==', '!=', '<', '<=', '>', '>=')


@dataclasses.dataclass(frozen=True)
class _Token:
  kind: str  # 'number', 'string', 'op', 'name', 'keyword', 'end'
  text: str
  position: int  # 1-based, for messages.


# The tree.
@dataclasses.dataclass(frozen=True)
class Column:
  name: str


@dataclasses.dataclass(frozen=True)
class Literal:
  value: Scalar


@dataclasses.dataclass(frozen=True)
class Compare:
  left: Any
  op: str
  right: Any


@dataclasses.dataclass(frozen=True)
class IsIn:
  operand: Any
  values: Tuple[Scalar, ...]
  negated: bool


@dataclasses.dataclass(frozen=True)
class Contains:
  operand: Any
  text: str


@dataclasses.dataclass(frozen=True)
class Not:
  operand: Any


@dataclasses.dataclass(frozen=True)
class BoolOp:
  op: str  # 'and' / 'or'
  operands: Tuple[Any, ...]


@dataclasses.dataclass(frozen=True)
class Expression:
  """A parsed EXPR: its text and tree.

  Example:
    >>> expression = parse('length > 2 and success')
    >>> expression
    Expression('length > 2 and success')
    >>> expression.tree.op, column_names(expression)
    ('and', ['length', 'success'])
  """
  text: str
  tree: Any

  def __repr__(self) -> str:
    return f'Expression({self.text!r})'


def _unquote(text: str) -> str:
  return re.sub(r'\\(.)', r'\1', text[1:-1])


def _tokens(text: str) -> List[_Token]:
  tokens, position = [], 0
  while position < len(text):
    match = _TOKEN_RE.match(text, position)
    if match is None:
      raise ExpressionError(f'EXPR {text!r}: unexpected {text[position]!r} at '
                            f'position {position + 1}.')
    kind = match.lastgroup
    if kind != 'space':
      word = match.group()
      if kind == 'name' and word.lower() in _KEYWORDS:
        kind, word = 'keyword', word.lower()
      tokens.append(_Token(kind, word, position + 1))
    position = match.end()
  tokens.append(_Token('end', '', len(text) + 1))
  return tokens


class _Parser:
  """Recursive descent over the tokens (see the module docstring)."""

  def __init__(self, text: str):
    self._text = text
    self._tokens = _tokens(text)
    self._at = 0
    self._depth = 0  # Open parentheses and nots: nesting.MAX_DEPTH at most.

  def _peek(self) -> _Token:
    return self._tokens[self._at]

  def _next(self) -> _Token:
    token = self._tokens[self._at]
    self._at += 1
    return token

  def _fail(self, token: _Token, expected: str = '') -> ExpressionError:
    where = ('end of the expression' if token.kind == 'end'
             else repr(token.text))
    found = (f'unexpected {where} at position {token.position}'
             if token.kind != 'end' else f'unexpected {where}')
    hint = ''
    if token.text == '=':
      hint = ' (compare with ==)'
    return ExpressionError(
        f'EXPR {self._text!r}: {found}{"; expected " + expected if expected else ""}'
        f'{hint}.')

  def _accept(self, kind: str, text: Optional[str] = None) -> Optional[_Token]:
    token = self._peek()
    if token.kind == kind and (text is None or token.text == text):
      return self._next()
    return None

  def _expect(self, kind: str, text: str, expected: str) -> _Token:
    token = self._accept(kind, text)
    if token is None:
      raise self._fail(self._peek(), expected)
    return token

  def parse(self) -> Any:
    if self._peek().kind == 'end':
      raise ExpressionError('EXPR is empty.')
    tree = self._or()
    if self._peek().kind != 'end':
      raise self._fail(self._peek(), "'and', 'or' or the end")
    return tree

  def _or(self) -> Any:
    operands = [self._and()]
    while self._accept('keyword', 'or'):
      operands.append(self._and())
    return operands[0] if len(operands) == 1 else BoolOp('or', tuple(operands))

  def _and(self) -> Any:
    operands = [self._not()]
    while self._accept('keyword', 'and'):
      operands.append(self._not())
    return operands[0] if len(operands) == 1 else BoolOp('and', tuple(operands))

  def _nested(self, token: _Token, parse: Callable[[], Any]) -> Any:
    """``parse()`` one level deeper (``token`` opened it), bounded."""
    self._depth += 1
    if self._depth > nesting.MAX_DEPTH:
      raise ExpressionError(f'{nesting.too_deep("EXPR")}: {token.text!r} at '
                            f'position {token.position}.')
    tree = parse()
    self._depth -= 1
    return tree

  def _not(self) -> Any:
    token = self._accept('keyword', 'not')
    if token:
      return Not(self._nested(token, self._not))
    return self._comparison()

  def _comparison(self) -> Any:
    left = self._operand()
    token = self._peek()
    if token.kind == 'op' and token.text in _COMPARISONS:
      self._next()
      return Compare(left, token.text, self._operand())
    if token.kind == 'keyword' and token.text == 'not' and (
        self._tokens[self._at + 1].text == 'in'):
      self._next()
      self._next()
      return IsIn(left, self._list(), negated=True)
    if self._accept('keyword', 'in'):
      return IsIn(left, self._list(), negated=False)
    if self._accept('keyword', 'contains'):
      text = self._accept('string')
      if text is None:
        raise self._fail(self._peek(), 'a string after contains')
      return Contains(left, _unquote(text.text))
    return left

  def _literal(self) -> Optional[Literal]:
    token = self._peek()
    if token.kind == 'number':
      self._next()
      text = token.text
      is_float = any(c in text for c in '.eE')
      return Literal(float(text) if is_float else int(text))
    if token.kind == 'string':
      self._next()
      return Literal(_unquote(token.text))
    if token.kind == 'keyword' and token.text in ('true', 'false'):
      self._next()
      return Literal(token.text == 'true')
    return None

  def _operand(self) -> Any:
    literal = self._literal()
    if literal is not None:
      return literal
    token = self._peek()
    if token.kind == 'name':
      self._next()
      return Column(token.text)
    if self._accept('op', '('):
      inner = self._nested(token, self._or)
      self._expect('op', ')', "')'")
      return inner
    raise self._fail(token, "a column, a number, a string, true/false or '('")

  def _list(self) -> Tuple[Scalar, ...]:
    self._expect('op', '[', "'[' after in")
    values = []
    while True:
      literal = self._literal()
      if literal is None:
        raise self._fail(self._peek(), 'a number, a string or true/false')
      values.append(literal.value)
      if self._accept('op', ']'):
        return tuple(values)
      self._expect('op', ',', "',' or ']'")


def parse(text: str) -> Expression:
  """Parses an EXPR (see the module docstring); raises `ExpressionError`.

  Example:
    >>> parse('not terminated or length in [1, 2]').tree  # doctest: +NORMALIZE_WHITESPACE
    BoolOp(op='or', operands=(Not(operand=Column(name='terminated')),
        IsIn(operand=Column(name='length'), values=(1, 2), negated=False)))
  """
  if isinstance(text, Expression):
    return text
  if not isinstance(text, str):
    raise TypeError(f'EXPR must be a string, got {type(text).__name__}.')
  return Expression(text, _Parser(text).parse())


def column_names(expression: Expression) -> List[str]:
  """The column names an expression uses, in order of appearance.

  Example:
    >>> column_names(parse('(a > 1 or b) and not a == 2'))
    ['a', 'b']
  """
  names: List[str] = []

  def walk(node: Any) -> None:
    if isinstance(node, Column):
      if node.name not in names:
        names.append(node.name)
    elif isinstance(node, Compare):
      walk(node.left)
      walk(node.right)
    elif isinstance(node, (IsIn, Contains, Not)):
      walk(node.operand)
    elif isinstance(node, BoolOp):
      for operand in node.operands:
        walk(operand)

  walk(expression.tree)
  return names


# Evaluation.
Lookup = Callable[[str], np.ndarray]


def _kind_of_array(array: np.ndarray) -> str:
  if array.dtype == bool:
    return 'boolean'
  if array.dtype.kind in 'iuf':
    return 'number'
  if array.dtype.kind in 'US':
    return 'string'
  if array.dtype == object:
    return 'strings'  # A tuple of strings per episode.
  return array.dtype.name


def _kind_of_value(value: Scalar) -> str:
  if isinstance(value, bool):
    return 'boolean'
  if isinstance(value, (int, float)):
    return 'number'
  return 'string'


def _same_kind(left: str, right: str) -> bool:
  return left == right or {left, right} == {'string', 'strings'}


class _Evaluator:
  """Evaluates a tree on columns of ``size`` rows, vectorised."""

  def __init__(self, expression: Expression, lookup: Lookup, size: int):
    self._text = expression.text
    self._lookup = lookup
    self._size = size

  def _error(self, message: str) -> ExpressionError:
    return ExpressionError(f'EXPR {self._text!r}: {message}')

  def _value(self, node: Any) -> Tuple[str, Any, str]:
    """(kind, value, label) of an operand: a column array or a literal."""
    if isinstance(node, Literal):
      return _kind_of_value(node.value), node.value, repr(node.value)
    if isinstance(node, Column):
      array = self._lookup(node.name)
      if array.ndim != 1:
        raise self._error(
            f'column {node.name!r} holds {list(array.shape[1:])}-vectors per '
            'episode; only columns of scalars can be compared.')
      kind = _kind_of_array(array)
      return kind, array, f'column {node.name!r} ({kind})'
    return 'boolean', self.mask(node), 'a condition'

  def mask(self, node: Any) -> np.ndarray:
    """The boolean result of ``node`` for every row."""
    if isinstance(node, BoolOp):
      masks = [self.mask(operand) for operand in node.operands]
      combine = np.logical_and if node.op == 'and' else np.logical_or
      return combine.reduce(masks)
    if isinstance(node, Not):
      return ~self.mask(node.operand)
    if isinstance(node, Compare):
      return self._compare(node)
    if isinstance(node, IsIn):
      return self._is_in(node)
    if isinstance(node, Contains):
      return self._contains(node)
    kind, value, label = self._value(node)
    if kind != 'boolean':
      raise self._error(f'{label} is not a condition; compare it (e.g. '
                        f'{getattr(node, "name", "x")} == ...).')
    return np.broadcast_to(np.asarray(value, bool), (self._size,))

  def _compare(self, node: Compare) -> np.ndarray:
    left_kind, left, left_label = self._value(node.left)
    right_kind, right, right_label = self._value(node.right)
    if isinstance(node.left, Literal) and isinstance(node.right, Literal):
      raise self._error(f'{left_label} {node.op} {right_label} compares no '
                        'column.')
    if not _same_kind(left_kind, right_kind):
      raise self._error(f'cannot compare {left_label} with {right_label}.')
    if left_kind == 'boolean' and node.op not in ('==', '!='):
      raise self._error(f'booleans compare only with == or != ({node.op} '
                        f'given).')
    if 'strings' in (left_kind, right_kind):
      return self._compare_strings(node, left, left_kind, right)
    if left_kind == 'string' and right_kind == 'string':
      left, right = np.asarray(left, str), np.asarray(right, str)
    ops = {'==': np.equal, '!=': np.not_equal, '<': np.less,
           '<=': np.less_equal, '>': np.greater, '>=': np.greater_equal}
    result = ops[node.op](left, right)
    return np.broadcast_to(np.asarray(result, bool), (self._size,))

  def _compare_strings(self, node: Compare, left: Any, left_kind: str,
                       right: Any) -> np.ndarray:
    """``==``/``!=`` of a several-strings column with a string (any match)."""
    if node.op not in ('==', '!='):
      raise self._error(f'a column of several strings per episode compares '
                        f'only with ==, !=, in or contains ({node.op} given).')
    column, other = (left, right) if left_kind == 'strings' else (right, left)
    if not isinstance(other, str):
      raise self._error('two columns of several strings cannot be compared.')
    found = np.fromiter((other in values for values in column), bool,
                        count=len(column))
    return found if node.op == '==' else ~found

  def _is_in(self, node: IsIn) -> np.ndarray:
    kind, value, label = self._value(node.operand)
    for item in node.values:
      if not _same_kind(kind, _kind_of_value(item)):
        raise self._error(f'{label} cannot be in a list holding {item!r}.')
    if kind == 'strings':
      wanted = set(node.values)
      found = np.fromiter((not wanted.isdisjoint(values) for values in value),
                          bool, count=len(value))
    else:
      found = np.isin(value, np.asarray(node.values))
      found = np.broadcast_to(found, (self._size,))
    return ~found if node.negated else found

  def _contains(self, node: Contains) -> np.ndarray:
    kind, value, label = self._value(node.operand)
    if kind == 'strings':
      return np.fromiter((any(node.text in v for v in values)
                          for values in value), bool, count=len(value))
    if kind != 'string':
      raise self._error(f'contains needs a string column; {label} is not one.')
    found = np.char.find(np.asarray(value, str), node.text) >= 0
    return np.broadcast_to(found, (self._size,))


def evaluate(expression: Union[str, Expression],
             columns: Mapping[str, np.ndarray]) -> np.ndarray:
  """The rows where ``expression`` (text or parsed) holds, as a boolean array.

    ``columns`` maps names to 1-D arrays of one length (object arrays of
    string tuples for several strings per row).

    Example:
      >>> import numpy as np
      >>> columns = {'length': np.array([5, 30, 40]),
      ...            'task': np.array(['open drawer', 'pick', 'open door'])}
      >>> evaluate("task contains 'open' and length > 20", columns).tolist()
      [False, False, True]
  """
  expression = parse(expression)

  def lookup(name: str) -> np.ndarray:
    if name not in columns:
      raise ExpressionError(
          f'EXPR {expression.text!r}: unknown column {name!r} (columns: '
          f'{", ".join(columns)}).')
    return np.asarray(columns[name])

  size = len(next(iter(columns.values()))) if columns else 0
  return np.array(_Evaluator(expression, lookup, size).mask(expression.tree),
                  dtype=bool)

