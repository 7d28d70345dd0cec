"""``rlds-lite version``: prints the version (no TensorFlow import)."""

import argparse
import json


def register(subparsers: argparse._SubParsersAction) -> None:  # pylint: disable=protected-access
  parser = subparsers.add_parser('version', help='print the version')
  parser.add_argument('--json', action='store_true',
                      help='print {"version": ...} for machines')


def run(args: argparse.Namespace) -> int:
  from rlds_lite import __version__  # pylint: disable=g-import-not-at-top
  if args.json:
    print(json.dumps({'version': __version__}))
  else:
    print(f'rlds_lite {__version__}')
  return 0
