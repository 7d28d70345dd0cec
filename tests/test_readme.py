"""The README's Python examples, and the docs' marked ones, run as written and print what they say.

Every ```python block of README.md runs, and every block of docs/*.md whose line before is MARK
(examples that left the README for their page stay tested there). A block written out twice,
word for word (a README example repeated on its page), runs once.
"""

import contextlib
import io
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).parent.parent
MARK = '<!-- runs in tests/test_readme.py -->'


def _blocks(page, marked):
  pattern = (re.escape(MARK) + r'\n' if marked else '') + r'```python\n(.*?)```'
  return re.findall(pattern, page.read_text(), flags=re.S)


PAGES = [(ROOT / 'README.md', False)] + [(page, True) for page in
                                         sorted((ROOT / 'docs').glob('*.md'))]
EXAMPLES = {}  # code -> where it first appears: 'docs/images.md:0'
for _page, _marked in PAGES:
  for _i, _code in enumerate(_blocks(_page, _marked)):
    EXAMPLES.setdefault(_code, f'{_page.relative_to(ROOT)}:{_i}')


@pytest.mark.parametrize('page, minimum', [('README.md', 4), ('docs/images.md', 1),
                                           ('docs/recording.md', 2)])
def test_examples_are_found(page, minimum):
  assert len(_blocks(ROOT / page, page.startswith('docs/'))) >= minimum


@pytest.mark.parametrize('code', EXAMPLES, ids=EXAMPLES.values())
def test_example_runs_and_prints_its_comment(code):
  printed = io.StringIO()
  with contextlib.redirect_stdout(printed):
    exec(compile(code, EXAMPLES[code], 'exec'), {})  # pylint: disable=exec-used
  expected = [line.split('#', 1)[1].strip() for line in code.splitlines()
              if line.startswith('print(') and '#' in line]
  # Our prints come last (TFDS may print progress lines before them).
  lines = printed.getvalue().strip().splitlines()
  assert lines[len(lines) - len(expected):] == expected
  assert expected
  assert len([l for l in code.splitlines() if l.strip()]) <= 12
