"""``rlds-lite episodes PATH``: list a split's episodes (see ``rlds_lite.catalog``)."""

import argparse
import json
from typing import Any

from rlds_lite.commands import beam_flags
from rlds_lite.commands import dataset_options


def register(subparsers: argparse._SubParsersAction) -> None:  # pylint: disable=protected-access
  parser = subparsers.add_parser(
      'episodes', help='list the episodes of an RLDS dataset (index, length, '
      'return, language, metadata), select and sort them',
      description='Lists the episodes of a split from its episode catalog: '
      'index, episode_id, length, return (over every step but the last, as '
      'RLDS; every step with --last-step valid), last_reward, '
      'terminated/truncated, language instructions, scalar episode '
      'metadata, shard and record. The catalog is built in one streaming '
      'pass and cached next to the dataset.',
      epilog="EXPR: comparisons (== != < <= > >=) of columns with numbers, "
      "'strings' or true/false, 'in [..]', 'contains', combined with and, "
      "or, not and parentheses; e.g. \"length > 20 and terminated\", "
      "\"language_instruction contains 'drawer'\". See docs/episodes.md.")
  dataset_options.add_dataset_arguments(parser)
  parser.add_argument('--where', metavar='EXPR', default=None,
                      help='only the episodes matching EXPR')
  parser.add_argument('--sort', metavar='KEY', default=None,
                      help='sort by this column')
  parser.add_argument('--descending', action='store_true',
                      help='sort in descending order')
  parser.add_argument('--limit', type=dataset_options.integer,
                      default=None, metavar='N',
                      help='show at most N episodes')
  parser.add_argument('--columns', default=None, metavar='A,B,...',
                      help='the columns to show (default: all)')
  parser.add_argument('--no-cache', action='store_true',
                      help='neither read nor write the catalog cache')
  dataset_options.add_last_step_argument(parser, 'return leaves the last '
                                         "step's reward out")
  beam_flags.add_beam_arguments(parser, 'one shard file per work item')


def _chosen(args: argparse.Namespace, beam: Any = None):
  """The catalog's chosen rows, the split's episode count, the columns."""
  # pylint: disable=g-import-not-at-top
  from rlds_lite import source as source_lib
  from rlds_lite.catalog import build
  opened = source_lib.open(args.path, args.split, data_dir=args.data_dir)
  builder, split = opened.builder, opened.split
  catalog = build.catalog_of_builder(
      builder, split, last_step=args.last_step, cache=not args.no_cache,
      progress=dataset_options.progress_option(args), beam=beam)
  build.warn_left_out(catalog, 'episodes')
  total = len(catalog)
  if args.where:
    catalog = catalog.select(args.where)
  if args.sort:
    try:
      catalog = catalog.sort(args.sort, descending=args.descending)
    except (KeyError, ValueError) as error:  # Named by its flag, not method.
      message = dataset_options.one_line(error).removeprefix('Catalog.sort: ')
      raise ValueError(f'--sort {args.sort}: {message}') from None
  if args.limit is not None:
    catalog = catalog.head(args.limit)
  names = dataset_options.comma_list(args.columns, '--columns', 'column',
                                     'length,return')
  columns = None if names is None else [catalog.resolve(n) for n in names]
  return catalog, total, columns


def run(args: argparse.Namespace) -> int:
  if args.limit is not None and args.limit < 0:
    return dataset_options.report_error(
        'episodes', ValueError('--limit must be at least 0.'))
  missing = dataset_options.missing_dataset(args.path)
  if missing:
    return dataset_options.report_error('episodes', missing)
  try:
    beam = beam_flags.beam_of(args)
  except (ValueError, TypeError, ImportError) as e:
    return dataset_options.report_error('episodes', e)
  dataset_options.quiet_logs()
  try:
    with dataset_options.last_step_warnings('episodes'):
      catalog, total, columns = _chosen(args, beam)
  except dataset_options.BAD_INPUT_ERRORS as e:
    return dataset_options.report_error('episodes', e)
  if args.json:
    records = catalog.to_records()
    if columns:
      records = [{c: r[c] for c in columns} for r in records]
    print(json.dumps(records, indent=1))
  else:
    print(catalog.table(columns))
    print(f'{len(catalog)} of {total} episodes')
  return 0
