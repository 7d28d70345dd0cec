"""``rlds-lite stats``: statistics of an RLDS dataset (see ``rlds_lite.stats``)."""

import argparse
import json
import os
import sys

from rlds_lite import overwriting
from rlds_lite.commands import beam_flags
from rlds_lite.commands import dataset_options

_MAX_MESSAGE = 600  # Errors naming a damaged file are longer.


def register(subparsers: argparse._SubParsersAction) -> None:  # pylint: disable=protected-access
  parser = subparsers.add_parser(
      'stats',
      help='per-field statistics, episode lengths/returns of an RLDS dataset',
      description='One streaming pass over an RLDS dataset (TFDS directory or '
      'registered name): per-field count, mean, std, min, max and p01/p50/p99 '
      '(approximate, bounded memory), episode lengths and returns, terminated '
      'vs truncated episodes. Cached next to the dataset.')
  dataset_options.add_dataset_arguments(parser)
  parser.add_argument('--keys', default=None,
                      help='comma-separated field paths (e.g. '
                      'action,observation/pos); default all numeric fields')
  parser.add_argument('--plot', default=None, metavar='OUT.png',
                      help='write a PNG: one panel per dimension (action[0], '
                      '...), bars for discrete values, wide fields grouped')
  parser.add_argument('--no-cache', action='store_true',
                      help='neither read nor write the statistics cache')
  dataset_options.add_last_step_argument(parser, 'left out of the statistics')
  parser.add_argument('--keep-last-step', action='store_true',
                      help='the same as --last-step valid')
  beam_flags.add_beam_arguments(parser, 'one shard file per work item')
  parser.set_defaults(last_step=None)  # To tell an explicit 'invalid' apart.


def _last_step(args: argparse.Namespace) -> str:
  """``--last-step`` with ``--keep-last-step``; a ValueError if they differ.

  Example:
    >>> _last_step(argparse.Namespace(last_step=None, keep_last_step=True))
    'valid'
  """
  if args.keep_last_step:
    if args.last_step == 'invalid':
      raise ValueError('--keep-last-step and --last-step invalid contradict '
                       'each other; pass one of them.')
    return 'valid'
  return args.last_step or 'invalid'


def _one_line(error: BaseException) -> str:
  """The error on one line, without the ``load:`` prefix, at most 300 chars.

  Example:
    >>> _one_line(ValueError("load: dataset 'x' has no split 'test'."))
    "dataset 'x' has no split 'test'."
  """
  message = dataset_options.one_line(error)
  if len(message) > _MAX_MESSAGE:
    message = message[:_MAX_MESSAGE - 3] + '...'
  return message


def _fail(message: str) -> int:
  print(f'rlds-lite stats: {message}', file=sys.stderr)
  return dataset_options.BAD_INPUT




def _default_split(source: str, data_dir: str) -> str:
  """``'train'``, or the dataset's first split (as the other commands)."""
  # pylint: disable=g-import-not-at-top
  from rlds_lite import source as source_lib
  return source_lib.open(source, data_dir=data_dir).split


def run(args: argparse.Namespace) -> int:
  missing = dataset_options.missing_dataset(args.path, as_given=True)
  if missing:
    return _fail(str(missing))
  path = os.path.expanduser(args.path)
  try:
    last_step = _last_step(args)
    keys = dataset_options.comma_list(args.keys, '--keys', 'field',
                                      'action,observation/pos')
    if args.plot:
      overwriting.check_creatable(args.plot, writer='--plot')
    beam = beam_flags.beam_of(args)
  except (ValueError, OSError, TypeError, ImportError) as e:
    return _fail(str(e))
  dataset_options.quiet_logs()
  # pylint: disable=g-import-not-at-top
  from rlds_lite import stats as stats_lib
  source = path if os.path.exists(path) else args.path
  try:
    split = args.split or _default_split(source, args.data_dir)
    with dataset_options.last_step_warnings(
        'stats', also=(stats_lib.NonFiniteValuesWarning,)):
      stats = stats_lib.compute(
          source, split=split, keys=keys, last_step=last_step,
          cache=not args.no_cache, progress=not args.no_progress,
          data_dir=args.data_dir, beam=beam)
  except (FileNotFoundError, ValueError, KeyError, TypeError) as e:
    return _fail(_one_line(e))
  written = None
  if args.plot:
    try:
      with dataset_options.last_step_warnings(
          'stats', also=(stats_lib.PlotWarning,)):
        written = stats_lib.plot_stats(stats, args.plot)
    except OSError as e:  # An unwritable path.
      return _fail(f'cannot write the plot {args.plot!r}: {_one_line(e)}')
  if args.json:  # Strict JSON: NaN is null, an overflow "inf" (types).
    print(json.dumps(stats.summary(), indent=2, allow_nan=False))
  else:
    print(stats.table())
  if written:
    print(f'plot: {written}', file=sys.stderr if args.json else sys.stdout)
  return 0
