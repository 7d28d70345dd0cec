"""``rlds-lite inspect PATH``: features, splits, sizes, episode/step counts."""

import argparse

from rlds_lite.commands import dataset_options


def register(subparsers: argparse._SubParsersAction) -> None:  # pylint: disable=protected-access
  parser = subparsers.add_parser(
      'inspect', help='show the features, splits, sizes, episode and step '
      'counts of an RLDS dataset',
      description='Shows what an RLDS dataset in the TFDS format holds: its '
      'step and episode features, and per split the episodes, steps (counted '
      'in one pass that decodes nothing), size and files. Without --split, '
      'every split is shown.')
  dataset_options.add_dataset_arguments(
      parser, split_help='the split to show (default: every split)')
  parser.add_argument('--no-steps', action='store_true',
                      help='skip counting steps (no pass over the data)')


def run(args: argparse.Namespace) -> int:
  missing = dataset_options.missing_dataset(args.path)
  if missing:
    return dataset_options.report_error('inspect', missing)
  dataset_options.quiet_logs()
  from rlds_lite import checks  # pylint: disable=g-import-not-at-top
  try:
    overview = checks.describe(args.path, split=args.split,
                               data_dir=args.data_dir,
                               steps=not args.no_steps,
                               progress=dataset_options.progress_option(args))
  except dataset_options.BAD_INPUT_ERRORS as e:
    return dataset_options.report_error('inspect', e)
  print(overview.to_json() if args.json else overview.table())
  return 0
