"""The ``rlds-lite`` command line.

Subcommands live in ``rlds_lite.commands`` (one module each). Building the
parser imports no TensorFlow, so ``--help``, ``--version``, ``version`` and
``COMMAND --help`` answer at once; a command imports TensorFlow when it runs
(through `rlds_lite.commands.quiet`: without ``--verbose`` its C++ log lines
are hidden).

Global flags: ``--version``, ``--verbose`` (also accepted after the command).

Example:
  >>> main(['version'])
  rlds_lite 0.1.0
  0
  >>> main(['version', '--json'])
  {"version": "0.1.0"}
  0
"""

import argparse
import importlib
import sys
from typing import List, Optional

from rlds_lite import __version__
from rlds_lite import commands
from rlds_lite.commands import quiet

_VERBOSE_HELP = ("show TensorFlow's own log lines (hidden by default)")


def _command_module(name: str):
  return importlib.import_module(f'rlds_lite.commands.{name}')


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
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


def main(argv: Optional[List[str]] = None) -> int:
  """Runs the command line; returns the exit status."""
  args = _parser().parse_args(argv)
  quiet.configure(verbose=args.verbose)
  return _command_module(args.command).run(args)


if __name__ == '__main__':
  sys.exit(main())
