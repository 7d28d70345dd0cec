"""The ``rlds-lite`` command line: the parser and `main` (subcommands: ``rlds_lite.commands``)."""

import argparse
import importlib
import sys
from typing import List, Optional

from rlds_lite import __version__
from rlds_lite import commands
from rlds_lite.commands import io_errors
from rlds_lite.commands import quiet

_VERBOSE_HELP = ("show TensorFlow's own log lines (hidden by default)")


def _command_module(name: str):
  return importlib.import_module(f'rlds_lite.commands.{name}')


class OneLineParser(argparse.ArgumentParser):
  """An ``ArgumentParser`` whose errors are one line, then exit status 2.

  Example:
    >>> import contextlib, io
    >>> parser = OneLineParser(prog='rlds-lite video')
    >>> _ = parser.add_argument('--episode', type=int)
    >>> err = io.StringIO()
    >>> with contextlib.redirect_stderr(err):
    ...   try:
    ...     parser.parse_args(['--episode', 'two'])
    ...   except SystemExit as e:
    ...     print(e.code)
    2
    >>> print(err.getvalue(), end='')
    rlds-lite video: argument --episode: invalid int value: 'two' (see rlds-lite video --help)
  """

  def error(self, message: str):  # pylint: disable=missing-function-docstring
    text = ' '.join(message.split())
    self.exit(2, f'{self.prog}: {text} (see {self.prog} --help)\n')


def _subparser(parser: argparse.ArgumentParser,
               command: str) -> argparse.ArgumentParser:
  """The parser of ``command`` (a subcommand of ``parser``)."""
  for action in parser._actions:  # pylint: disable=protected-access
    if isinstance(action, argparse._SubParsersAction):  # pylint: disable=protected-access
      return action.choices[command]
  raise KeyError(command)


def _parse(argv: Optional[List[str]]) -> argparse.Namespace:
  """The parsed command line; unknown arguments reported by the command's own parser."""
  parser = _parser()
  args, unknown = parser.parse_known_args(argv)
  if unknown:
    _subparser(parser, args.command).error(
        f'unrecognized arguments: {" ".join(unknown)}')
  return args


def _parser() -> argparse.ArgumentParser:
  parser = OneLineParser(
      prog='rlds-lite',
      description='Fast, dependable RLDS episodic data on tf.data.')
  parser.add_argument('--version', action='version',
                      version=f'rlds_lite {__version__}')
  parser.add_argument('--verbose', action='store_true', help=_VERBOSE_HELP)
  subparsers = parser.add_subparsers(dest='command', required=True,
                                     metavar='COMMAND')
  for name in commands.COMMANDS:
    _command_module(name).register(subparsers)
  for subparser in subparsers.choices.values():
    # Also after the command; SUPPRESS keeps a --verbose given before it.
    subparser.add_argument('--verbose', action='store_true',
                           default=argparse.SUPPRESS, help=_VERBOSE_HELP)
  return parser


def _output(args: argparse.Namespace) -> Optional[str]:
  """What the command writes (``TARGET``, ``--out``), if it says."""
  return getattr(args, 'target', None) or getattr(args, 'out', None)


def main(argv: Optional[List[str]] = None) -> int:
  """Runs the command line; returns the exit status (docs/cli.md).

  Example:
    >>> main(['version'])
    rlds_lite 0.1.0
    0
    >>> main(['version', '--json'])
    {"version": "0.1.0"}
    0
  """
  args = _parse(argv)
  quiet.configure(verbose=args.verbose)
  try:
    return _command_module(args.command).run(args)
  except Exception as error:  # pylint: disable=broad-except
    message = io_errors.describe(error, _output(args))
    if message is None:
      raise
    message = message.removeprefix(f'{args.command}: ')
    print(f'rlds-lite {args.command}: {message}', file=sys.stderr)
    return io_errors.FAILED


if __name__ == '__main__':
  sys.exit(main())
