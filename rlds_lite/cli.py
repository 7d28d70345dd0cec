"""The ``rlds-lite`` command line.

Subcommands live in ``rlds_lite.commands`` (one module each).

Example:
  >>> main(['version'])
  rlds_lite 0.1.0
  0
"""

import argparse
import importlib
import sys
from typing import List, Optional

from rlds_lite import commands


def _command_module(name: str):
  return importlib.import_module(f'rlds_lite.commands.{name}')


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
      prog='rlds-lite',
      description='Fast, dependable RLDS episodic data on tf.data.')
  subparsers = parser.add_subparsers(dest='command', required=True)
  for name in commands.COMMANDS:
    _command_module(name).register(subparsers)
  return parser


def main(argv: Optional[List[str]] = None) -> int:
  """Runs the command line; returns the exit status."""
  args = _parser().parse_args(argv)
  return _command_module(args.command).run(args)


if __name__ == '__main__':
  sys.exit(main())
