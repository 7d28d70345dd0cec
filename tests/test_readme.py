"""The README's Python examples, and the docs' marked ones, run as written and print what they say.

Every ```python block of README.md runs; a block of docs/*.md runs when the line before it is
MARK (examples that left the README for their docs page stay tested there).
"""

import contextlib
import io
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).parent.parent
README = ROOT / 'README.md'
MARK = '<!-- runs in tests/test_readme.py -->'
BLOCKS = re.findall(r'```python\n(.*?)```', README.read_text(), flags=re.S)
DOC_BLOCKS = {f'{page.stem}{i}': (page, code) for page in sorted((ROOT / 'docs').glob('*.md'))
              for i, code in enumerate(re.findall(
                  re.escape(MARK) + r'\n```python\n(.*?)```', page.read_text(), flags=re.S))}
EXAMPLES = ([(README, code) for code in BLOCKS] + list(DOC_BLOCKS.values()))
IDS = [f'block{i}' for i in range(len(BLOCKS))] + list(DOC_BLOCKS)


@pytest.mark.parametrize('path, minimum', [(README, 4), (ROOT / 'docs', 10)])
def test_examples_are_found(path, minimum):
  assert len([p for p, _ in EXAMPLES if path in (p, p.parent)]) >= minimum


@pytest.mark.parametrize('path, code', EXAMPLES, ids=IDS)
def test_example_runs_and_prints_its_comment(path, code):
  printed = io.StringIO()
  with contextlib.redirect_stdout(printed):
    exec(compile(code, str(path), 'exec'), {})  # pylint: disable=exec-used
  expected = [line.split('#', 1)[1].strip() for line in code.splitlines()
              if line.startswith('print(') and '#' in line]
  # Our prints come last (TFDS may print progress lines before them).
  lines = printed.getvalue().strip().splitlines()
  assert lines[len(lines) - len(expected):] == expected
  assert expected
  assert len([l for l in code.splitlines() if l.strip()]) <= 12
