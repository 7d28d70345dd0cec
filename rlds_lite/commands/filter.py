"""``rlds-lite filter PATH --where EXPR --out DIR``: a new dataset of the matches."""

import argparse

from rlds_lite import overwriting
from rlds_lite.commands import dataset_options
from rlds_lite.commands import rewrite_options


def register(subparsers: argparse._SubParsersAction) -> None:  # pylint: disable=protected-access
  parser = subparsers.add_parser(
      'filter', help='write a new dataset of the episodes matching EXPR '
      '(optionally split into train/validation)',
      description='Writes the episodes of a split that match EXPR (see '
      '`rlds-lite episodes --help`) as a new dataset in --out, copying their '
      'records as they are. With --val-fraction, writes train and validation '
      'splits chosen by episode (seeded). An unknown column, no match or an '
      'existing --out is an error (exit 2) and nothing is written.')
  dataset_options.add_dataset_arguments(
      parser, json_help='print what was written as JSON for machines')
  parser.add_argument('--where', metavar='EXPR', default=None,
                      help='the episodes to keep (default: all)')
  dataset_options.add_last_step_argument(parser, "return in EXPR leaves the "
                                         "last step's reward out")
  rewrite_options.add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
  problem = rewrite_options.out_dir_error(args.out, args.val_fraction)
  if problem:
    return dataset_options.report_error('filter', ValueError(problem))
  overwriting.check_creatable(args.out, writer='filter')
  missing = dataset_options.missing_dataset(args.path)
  if missing:
    return dataset_options.report_error('filter', missing)
  dataset_options.quiet_logs()
  # pylint: disable=g-import-not-at-top
  from rlds_lite.catalog import rewrite
  try:
    with dataset_options.last_step_warnings('filter'):
      path = rewrite.filter_dataset(
          args.path, args.out, args.where, split=args.split,
          val_fraction=args.val_fraction, seed=args.seed, name=args.name,
          data_dir=args.data_dir, last_step=args.last_step,
          progress=dataset_options.progress_option(args))
  except dataset_options.BAD_INPUT_ERRORS + (FileExistsError,) as e:
    return rewrite_options.report_error('filter', e)
  rewrite_options.report(path, args.json)
  return 0
