"""``rlds-lite version``: prints the version."""

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:  # pylint: disable=protected-access
  subparsers.add_parser('version', help='print the version')


def run(args: argparse.Namespace) -> int:
  del args
  from rlds_lite import __version__  # pylint: disable=g-import-not-at-top
  print(f'rlds_lite {__version__}')
  return 0
