"""The README's Python examples, and the docs' marked ones, run as written and print what they say.

Every ```python block of README.md runs, and every block of docs/*.md whose line before is MARK
(examples that left the README for their page stay tested there). A block written out twice,
word for word (a README example repeated on its page), runs once. No example uses a renamed
spelling: rlds_lite's DeprecationWarnings fail it.
"""

import contextlib
import io
import pathlib
import re
import sys
import warnings

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


# rlds_lite's rename warnings (an old keyword or name that still works), not TensorFlow's.
RENAMED = re.compile(r'later release|mask_last_step is deprecated')


@pytest.fixture
def fresh_warnings(monkeypatch):
  """Each rlds_lite module's warned-once registry emptied, so an old spelling warns here."""
  for name, module in list(sys.modules.items()):
    if name.startswith('rlds_lite') and isinstance(getattr(module, '_WARNED', None), set):
      monkeypatch.setattr(module, '_WARNED', set())


def renamed_warnings(caught):
  """The messages of rlds_lite's rename DeprecationWarnings among ``caught``."""
  return [str(w.message) for w in caught
          if issubclass(w.category, DeprecationWarning) and RENAMED.search(str(w.message))]


def test_renamed_warnings_are_recognized(fresh_warnings):  # pylint: disable=unused-argument
  from rlds_lite import option_objects  # pylint: disable=import-outside-toplevel
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    option_objects.warn_renamed('op', ['pool'], 'pooling=Pooling(...)')
    warnings.warn('a TensorFlow deprecation', DeprecationWarning)
  assert renamed_warnings(caught) == [
      "op: ['pool'] are now pooling=Pooling(...); the old keywords will go in a later release."]


@pytest.mark.parametrize('code', EXAMPLES, ids=EXAMPLES.values())
def test_example_runs_and_prints_its_comment(code, fresh_warnings):  # pylint: disable=unused-argument
  printed = io.StringIO()
  # Modules imported by the example have fresh registries already; imported ones are emptied.
  with contextlib.redirect_stdout(printed), warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    exec(compile(code, EXAMPLES[code], 'exec'), {})  # pylint: disable=exec-used
  assert not renamed_warnings(caught), (
      f'{EXAMPLES[code]} uses an old spelling: {renamed_warnings(caught)}')
  expected = [line.split('#', 1)[1].strip() for line in code.splitlines()
              if line.startswith('print(') and '#' in line]
  # Our prints come last (TFDS may print progress lines before them).
  lines = printed.getvalue().strip().splitlines()
  assert lines[len(lines) - len(expected):] == expected
  assert expected
  assert len([l for l in code.splitlines() if l.strip()]) <= 12
