"""``rlds-lite stats``: statistics of an RLDS dataset (see ``rlds_lite.stats``)."""

import argparse
import json
import os
import re
import sys

from rlds_lite.commands import dataset_options

_MAX_MESSAGE = 300


def register(subparsers: argparse._SubParsersAction) -> None:  # pylint: disable=protected-access
  parser = subparsers.add_parser(
      'stats',
      help='per-field statistics, episode lengths/returns of an RLDS dataset',
      description='One streaming pass over an RLDS dataset (TFDS directory or '
      'registered name): per-field count, mean, std, min, max and p01/p50/p99 '
      '(approximate, bounded memory), episode lengths and returns, terminated '
      'vs truncated episodes. Cached next to the dataset.')
  parser.add_argument('path', help='TFDS dataset directory or registered name')
  parser.add_argument('--split', default='train', help='split (default train)')
  parser.add_argument('--keys', default=None,
                      help='comma-separated field paths (e.g. '
                      'action,observation/pos); default all numeric fields')
  parser.add_argument('--data-dir', default=None,
                      help='TFDS data directory for registered names')
  parser.add_argument('--json', action='store_true',
                      help='print the statistics as JSON (no table)')
  parser.add_argument('--plot', default=None, metavar='OUT.png',
                      help='write histograms to this PNG file')
  parser.add_argument('--no-cache', action='store_true',
                      help='neither read nor write the statistics cache')
  parser.add_argument('--no-progress', action='store_true',
                      help='hide the progress bar')
  parser.add_argument('--keep-last-step', action='store_true',
                      help='count the (invalid) action/reward/discount of '
                      'last steps too')


def _one_line(error: BaseException) -> str:
  message = error.args[0] if isinstance(error, KeyError) and error.args else (
      str(error))
  message = re.sub(r'\s+', ' ', str(message)).strip()
  if len(message) > _MAX_MESSAGE:
    message = message[:_MAX_MESSAGE - 3] + '...'
  return message


def _fail(message: str) -> int:
  print(f'rlds-lite stats: {message}', file=sys.stderr)
  return dataset_options.BAD_INPUT


def _quiet() -> None:
  """Hides TensorFlow's and TFDS's start-up logs."""
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
  os.environ.setdefault('GLOG_minloglevel', '2')
  from absl import logging  # pylint: disable=g-import-not-at-top
  logging.set_verbosity(logging.ERROR)


def run(args: argparse.Namespace) -> int:
  path = os.path.expanduser(args.path)
  if (path.startswith(('/', './', '../')) or os.sep in path and
      ':' not in path) and not os.path.exists(path):
    return _fail(f'no such dataset directory: {args.path!r}')
  _quiet()
  # pylint: disable=g-import-not-at-top
  from rlds_lite import stats as stats_lib
  keys = None
  if args.keys:
    keys = [k.strip() for k in args.keys.split(',') if k.strip()]
  try:
    stats = stats_lib.compute(
        path if os.path.exists(path) else args.path, split=args.split,
        keys=keys, mask_last_step=not args.keep_last_step,
        cache=not args.no_cache, progress=not args.no_progress,
        data_dir=args.data_dir)
  except (FileNotFoundError, ValueError, KeyError, TypeError) as e:
    return _fail(_one_line(e))
  if args.json:
    print(json.dumps(stats.summary(), indent=2))
  else:
    print(stats.table())
  if args.plot:
    written = stats_lib.plot_stats(stats, args.plot)
    print(f'plot: {written}', file=sys.stderr if args.json else sys.stdout)
  return 0
