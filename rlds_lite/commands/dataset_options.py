"""Options and one-line error reporting shared by the commands that read a dataset."""

import argparse
import contextlib
import os
import re
import shlex
import sys
from typing import Callable, Iterator, List, Mapping, Optional, Tuple
import warnings

BAD_INPUT = 2
"""Exit status for bad input (argparse uses it for bad arguments too)."""

BAD_INPUT_ERRORS = (FileNotFoundError, ValueError, KeyError, IndexError,
                    TypeError, ImportError)
"""What the commands report as bad input."""


def add_dataset_arguments(
    parser: argparse.ArgumentParser, *,
    split_help: str = "the split (default: 'train', or the first split)",
    json_help: str = 'print JSON for machines instead of a table') -> None:
  """PATH, --split, --data-dir, --json and --no-progress.

  Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_dataset_arguments(parser)
    >>> args = parser.parse_args(['/data/toy/1.0.0', '--json'])
    >>> args.path, args.json, args.split
    ('/data/toy/1.0.0', True, None)
  """
  parser.add_argument('path', metavar='PATH',
                      help='a prepared TFDS dataset directory, or a registered '
                      'TFDS dataset name')
  parser.add_argument('--split', default=None, help=split_help)
  parser.add_argument('--data-dir', default=None,
                      help='where TFDS looks for prepared datasets (names '
                      'only)')
  parser.add_argument('--json', action='store_true', help=json_help)
  parser.add_argument('--no-progress', action='store_true',
                      help='hide the progress bar (shown on a terminal only)')


MAX_COUNT = 2**31 - 1
"""The largest count an option takes (steps, episodes, problems, ...)."""

MAX_SEED = 2**63 - 1
"""The largest seed (an int64)."""


def bounded_int(maximum: int = MAX_COUNT) -> Callable[[str], int]:
  """An argparse ``type``: an int from ``-maximum`` to ``maximum``, refused in one line beyond.

  Example:
    >>> bounded_int(100)('-7')
    -7
    >>> bounded_int(100)('101')
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 101 is out of range (-100..100)
  """
  def parse(text: str) -> int:
    value = int(text)  # A ValueError: argparse says "invalid int value".
    if abs(value) > maximum:
      raise argparse.ArgumentTypeError(
          f'{text} is out of range (-{maximum}..{maximum})')
    return value

  parse.__name__ = 'int'  # argparse names the type in its own message.
  return parse


integer = bounded_int()
"""The ``type`` of a count option (``--chunk-steps``, ``--episodes``, ...)."""

seed_integer = bounded_int(MAX_SEED)
"""The ``type`` of ``--seed``."""


def comma_list(text: Optional[str], flag: str, what: str,
               example: str) -> Optional[List[str]]:
  """The names in a comma-separated flag value (None: the flag not given).

  Example:
    >>> comma_list(' a, b,', '--keys', 'field', 'reward')
    ['a', 'b']
    >>> comma_list(',', '--keys', 'field', 'reward')
    Traceback (most recent call last):
    ...
    ValueError: --keys ',' names no field; give one or more, e.g. --keys reward, or leave it out for all.
  """
  if text is None:
    return None
  names = [name.strip() for name in text.split(',') if name.strip()]
  if not names:
    raise ValueError(f'{flag} {text!r} names no {what}; give one or more, '
                     f'e.g. {flag} {example}, or leave it out for all.')
  return names


PATH_PREFIXES = ('/', './', '../', '~', '.\\', '..\\')
"""How a dataset path starts (``rlds_lite.loading`` reads these as paths)."""

_ASIDE_MARK = '.replaced-'  # atomic_output.ASIDE_MARK (its import loads TF).


def missing_hint(path: str) -> str:
  """`rlds_lite.atomic_output.missing_hint` ('' if nothing to say).

  TensorFlow is imported (quietly) only when a writer's leftover beside the
  path may give a hint: a typo answers at once.
  """
  parent, base = os.path.split(os.path.abspath(os.path.expanduser(path)))
  try:
    names = os.listdir(parent)
  except OSError:
    return ''
  if not any(name.startswith(f'.{base}{_ASIDE_MARK}') for name in names):
    return ''
  quiet_logs()
  from rlds_lite import atomic_output  # pylint: disable=g-import-not-at-top
  return atomic_output.missing_hint(path)


def missing_dataset(path: str, *,
                    as_given: bool = False) -> Optional[FileNotFoundError]:
  """The error for a local dataset path that does not exist, or None (checked without TensorFlow).

  ``as_given``: also a relative path holding a separator counts, named as given.

  Example:
    >>> missing_dataset('/no/such/dataset')
    FileNotFoundError("dataset directory '/no/such/dataset' does not exist.")
    >>> missing_dataset('mnist') is None  # A TFDS name.
    True
  """
  expanded = os.path.expanduser(path)
  if as_given:
    local = expanded.startswith(('/', './', '../')) or (
        os.sep in expanded and ':' not in expanded)
  else:
    local = path.startswith(PATH_PREFIXES)
  if not local or os.path.exists(expanded):
    return None
  shown = path if as_given else expanded
  return FileNotFoundError(f'dataset directory {shown!r} does not exist'
                           f'{missing_hint(expanded)}.')


def progress_option(args: argparse.Namespace):
  """False with --no-progress, else None (a bar on a terminal only)."""
  return False if args.no_progress else None


def quiet_logs() -> None:
  """Imports TensorFlow without its log lines unless --verbose (`quiet`)."""
  from rlds_lite.commands import quiet  # pylint: disable=g-import-not-at-top
  quiet.import_tensorflow()


def one_line(error: BaseException) -> str:
  """The error's message on one line, without a ``load:`` prefix.

  Example:
    >>> one_line(KeyError("load: no field\\n  'x'."))
    "no field 'x'."
  """
  text = error.args[0] if isinstance(error, KeyError) and error.args else error
  return ' '.join(str(text).split()).removeprefix('load: ')


_PYTHON_SPELLING = re.compile(
    r"(?<![^\s(`])(\w+)(?:=('[^']*'|\"[^\"]*\"|-?\w+(?:\.\w+)*)|\(\))")
"""``name=value`` (a repr'd string, a number or a word) or ``function()``.

The name starts a word: it follows the start of the text, whitespace, ``(``
or a backquote; never ``/``, ``-``, ``.``, ``=`` or a word character (so
``/data/split=train`` and ``run-name='x'`` are not arguments).
"""


def cli_wording(message: str, flags: Mapping[str, str]) -> str:
  """``message`` with the Python arguments it names spelled as flags.

  ``flags`` maps an exact spelling (``"one_step='skip'"``) to its flag, or an
  argument name to the flag its value follows (``'repair': '--repair'``).

  Example:
    >>> flags = {"one_step='skip'": '--skip-one-step', 'repair': '--repair'}
    >>> cli_wording("pass one_step='skip' or repair='drop', not "
    ...             "repair=None (shape=(2,), name='x')", flags)
    "pass --skip-one-step or --repair drop, not repair=None (shape=(2,), name='x')"
    >>> cli_wording("no /data/repair=drop/raw.h5, no-repair='drop', "
    ...             "(repair='drop') `repair='drop'`", flags)
    "no /data/repair=drop/raw.h5, no-repair='drop', (--repair drop) `--repair drop`"
  """
  def spell(match: re.Match) -> str:
    token, name, value = match.group(0), match.group(1), match.group(2)
    if token in flags:
      return flags[token]
    if value is None or name not in flags or value in ('None', 'True',
                                                       'False'):
      return token
    if value[0] in '\'"':
      value = value[1:-1]
    return f'{flags[name]} {shlex.quote(value)}'

  return _PYTHON_SPELLING.sub(spell, message)


def error_message(command: str, error: BaseException,
                  flags: Optional[Mapping[str, str]] = None) -> str:
  """``rlds-lite COMMAND: message`` on one line, arguments spelled as flags (`cli_wording`).

  Example:
    >>> error_message('validate', FileNotFoundError("load: no such 'x'."))
    "rlds-lite validate: no such 'x'."
  """
  return f'rlds-lite {command}: {cli_wording(one_line(error), flags or {})}'


def report_error(command: str, error: BaseException,
                 flags: Optional[Mapping[str, str]] = None) -> int:
  """Prints `error_message` to stderr; returns `BAD_INPUT`."""
  print(error_message(command, error, flags), file=sys.stderr)
  return BAD_INPUT


LAST_STEP_CHOICES = ('invalid', 'valid')
"""``--last-step`` values (`rlds_lite.dense.LastStep`)."""


def add_last_step_argument(parser: argparse.ArgumentParser, what: str) -> None:
  """``--last-step {invalid,valid}``, the same everywhere."""
  parser.add_argument(
      '--last-step', choices=LAST_STEP_CHOICES, default='invalid',
      help="the last step's action, reward and discount: invalid (default, "
      f'RLDS: {what}; a warning says when non-zero ones are) or valid '
      '(real values, e.g. a success reward on the final step)')


@contextlib.contextmanager
def last_step_warnings(command: str, also: Tuple[type, ...] = ()
                       ) -> Iterator[None]:
  """Prints each `LastStepValuesWarning` (and ``also``) as one stderr line once the block succeeded.

  Enter it after `quiet_logs` (it imports TensorFlow).
  """
  from rlds_lite.dense import last_step  # pylint: disable=g-import-not-at-top
  caught = []
  succeeded = False
  try:
    with warnings.catch_warnings(record=True) as recorded:
      warnings.simplefilter('always')
      try:
        yield
        succeeded = True
      finally:
        caught.extend(recorded)
  finally:
    for warning in caught:
      if issubclass(warning.category,
                    (last_step.LastStepValuesWarning,) + tuple(also)):
        if succeeded:
          text = str(warning.message).removeprefix(f'{command}: ')
          print(f'rlds-lite {command}: warning: {text}', file=sys.stderr)
      else:
        warnings.warn_explicit(warning.message, warning.category,
                               warning.filename, warning.lineno,
                               source=warning.source)
