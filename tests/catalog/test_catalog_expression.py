"""EXPR, the catalog's boolean expressions: named cases of the grammar."""

import numpy as np
import pytest

from rlds_lite.catalog import expression
from rlds_lite.catalog.expression import ExpressionError

COLUMNS = {
    'length': np.array([1, 5, 20, 40]),
    'return': np.array([0.5, -1.0, 2.5, np.nan]),
    'terminated': np.array([True, False, True, False]),
    'success': np.array([False, False, True, True]),
    'task': np.array(['open the drawer', 'pick', "it's", 'Open door']),
    'language_instruction': np.array(
        [('open',), ('pick', 'place'), (), ('place',)], dtype=object),
    'episode_metadata/scene': np.array([0, 1, 0, 1], dtype=np.int32),
}


def rows(text):
  return np.flatnonzero(expression.evaluate(text, COLUMNS)).tolist()


@pytest.mark.parametrize('text, expected', [
    # Comparisons of numbers, every operator.
    ('length > 5', [2, 3]),
    ('length >= 5', [1, 2, 3]),
    ('length < 5', [0]),
    ('length <= 5', [0, 1]),
    ('length == 20', [2]),
    ('length != 20', [0, 1, 3]),
    ('5 < length', [2, 3]),  # Literal on the left.
    ('return > -1.5', [0, 1, 2]),  # Negative float; NaN never compares.
    ('return != 0.5', [1, 2, 3]),  # NaN != x holds, as in NumPy.
    ('return < 1e1', [0, 1, 2]),  # Exponent.
    ('return >= .5', [0, 2]),
    ('length > return', [0, 1, 2]),  # Two number columns.
    # Booleans.
    ('terminated', [0, 2]),
    ('terminated == true', [0, 2]),
    ('terminated != True', [1, 3]),  # Keywords are case-insensitive.
    ('true', [0, 1, 2, 3]),
    ('terminated == success', [1, 2]),
    # Precedence: not > and > or; parentheses.
    ('terminated or success and length > 30', [0, 2, 3]),
    ('(terminated or success) and length > 30', [3]),
    ('not terminated and success', [3]),
    ('not (terminated and success)', [0, 1, 3]),
    ('not not terminated', [0, 2]),
    ('length < 2 or length > 30 or length == 20', [0, 2, 3]),
    ('terminated AND NOT success', [0]),
    # Strings.
    ("task == 'pick'", [1]),
    ('task == "it\'s"', [2]),  # Double quotes, escaped quote.
    ("task == 'it\\'s'", [2]),
    ("task contains 'pen'", [0, 3]),
    ("task contains 'Open'", [3]),  # Case-sensitive.
    ("task < 'p'", [0, 2, 3]),  # Lexicographic.
    ("task in ['pick', 'Open door']", [1, 3]),
    ("task not in ['pick', 'Open door']", [0, 2]),
    # Lists.
    ('length in [1, 40]', [0, 3]),
    ('length not in [1, 40]', [1, 2]),
    ('terminated in [true]', [0, 2]),
    # Several strings per episode: any of them.
    ("language_instruction == 'place'", [1, 3]),
    ("language_instruction != 'place'", [0, 2]),
    ("language_instruction contains 'pi'", [1]),
    ("language_instruction in ['open', 'pick']", [0, 1]),
    ("language_instruction not in ['open', 'pick']", [2, 3]),
    # Nested column names.
    ('episode_metadata/scene == 1', [1, 3]),
    # 100 levels of nesting are fine (nesting.MAX_DEPTH).
    ('(' * 100 + 'length > 5' + ')' * 100, [2, 3]),
    ('not ' * 100 + 'terminated', [0, 2]),
    ('(not ' * 50 + 'terminated' + ')' * 50, [0, 2]),
    (' or '.join(['length == 7'] * 5000 + ['success']), [2, 3]),
], ids=lambda value: (value if len(value) < 60 else f'{value[:20]}...')
   if isinstance(value, str) else None)
def test_expression_selects_the_expected_rows(text, expected):
  assert rows(text) == expected


@pytest.mark.parametrize('text, message', [
    ('', 'EXPR is empty.'),
    ('length >> 2', "EXPR 'length >> 2': unexpected '>' at position 9; "
     "expected a column, a number, a string, true/false or '('."),
    ('length = 2', "EXPR 'length = 2': unexpected '=' at position 8."),
    ('(length > 2', "EXPR '(length > 2': unexpected end of the expression; "
     "expected ')'."),
    ('length > 2 terminated', "EXPR 'length > 2 terminated': unexpected "
     "'terminated' at position 12; expected 'and', 'or' or the end."),
    ('length in 2', "EXPR 'length in 2': unexpected '2' at position 11; "
     "expected '[' after in."),
    ('length in [2 3]', "EXPR 'length in [2 3]': unexpected '3' at position "
     "14; expected ',' or ']'."),
    ("task contains pick", "EXPR 'task contains pick': unexpected 'pick' at "
     'position 15; expected a string after contains.'),
    ("task == 'open", "EXPR \"task == 'open\": unexpected \"'\" at position 9."),
    ("__import__('os').system('x')", "EXPR \"__import__('os').system('x')\": "
     "unexpected '.' at position 17."),
    ('lenght > 2', "EXPR 'lenght > 2': unknown column 'lenght' (columns: "
     'length, return, terminated, success, task, language_instruction, '
     'episode_metadata/scene).'),
    ("length > 'x'", "EXPR \"length > 'x'\": cannot compare column 'length' "
     "(number) with 'x'."),
    ('terminated > false', "EXPR 'terminated > false': booleans compare only "
     'with == or != (> given).'),
    ('terminated == 1', "EXPR 'terminated == 1': cannot compare column "
     "'terminated' (boolean) with 1."),
    ('length', "EXPR 'length': column 'length' (number) is not a condition; "
     'compare it (e.g. length == ...).'),
    ('length and terminated', "EXPR 'length and terminated': column 'length' "
     '(number) is not a condition'),
    ("length contains 'x'", "EXPR \"length contains 'x'\": contains needs a "
     "string column; column 'length' (number) is not one."),
    ("length in [1, 'x']", "EXPR \"length in [1, 'x']\": column 'length' "
     "(number) cannot be in a list holding 'x'."),
    ('1 == 1', "EXPR '1 == 1': 1 == 1 compares no column."),
    ("language_instruction < 'b'", "EXPR \"language_instruction < 'b'\": a "
     'column of several strings per episode compares only with ==, !=, in or '
     'contains (< given).'),
    ('(' * 101 + 'length > 5' + ')' * 101, 'EXPR nests deeper than 100 '
     "levels (refused): '(' at position 101."),
    ('not ' * 101 + 'terminated', 'EXPR nests deeper than 100 levels '
     "(refused): 'not' at position 401."),
    ('(not ' * 50 + '(terminated)' + ')' * 50, 'EXPR nests deeper than 100 '
     "levels (refused): '(' at position 251."),
    ('(' * 100_000, "EXPR nests deeper than 100 levels (refused): '(' at "
     'position 101.'),
    ('not ' * 100_000, 'EXPR nests deeper than 100 levels (refused): '
     "'not' at position 401."),
], ids=['empty', 'double-operator', 'single-equals', 'unclosed-parenthesis',
        'missing-operator', 'in-without-list', 'list-without-comma',
        'contains-without-string', 'unclosed-string', 'no-python-calls',
        'unknown-column', 'number-vs-string', 'boolean-ordering',
        'boolean-vs-number', 'bare-number-column', 'number-column-in-and',
        'contains-on-numbers', 'mixed-list', 'no-column',
        'ordering-several-strings', 'parentheses-101-deep',
        'not-101-deep', 'mixed-101-deep', 'open-parentheses-100000',
        'not-100000'])
def test_bad_expressions_raise_one_clear_error(text, message):
  with pytest.raises(ExpressionError) as error:
    expression.evaluate(text, COLUMNS)
  assert str(error.value).startswith(message)
  assert isinstance(error.value, ValueError)


def test_vector_columns_cannot_be_compared():
  with pytest.raises(ExpressionError, match=r"column 'return' holds \[2\]-"
                     'vectors per episode'):
    expression.evaluate('return > 0', {'return': np.zeros((3, 2))})


def test_parse_gives_a_tree_and_the_columns_it_uses():
  parsed = expression.parse("not (a > 1 or b) and c contains 'x'")
  assert parsed == expression.Expression(
      "not (a > 1 or b) and c contains 'x'",
      expression.BoolOp('and', (
          expression.Not(expression.BoolOp('or', (
              expression.Compare(expression.Column('a'), '>',
                                 expression.Literal(1)),
              expression.Column('b')))),
          expression.Contains(expression.Column('c'), 'x'))))
  assert expression.column_names(parsed) == ['a', 'b', 'c']
  assert expression.parse(parsed) is parsed


def test_integers_and_floats_are_told_apart():
  tree = expression.parse('a == 2 or a == 2.0 or a == -3e2').tree
  values = [operand.right.value for operand in tree.operands]
  assert values == [2, 2.0, -300.0]
  assert [type(v) for v in values] == [int, float, float]


def test_result_is_a_fresh_boolean_array_of_the_rows():
  mask = expression.evaluate('true', COLUMNS)
  assert mask.dtype == bool and mask.shape == (4,)
  mask[0] = False  # Writable (not a broadcast view).
