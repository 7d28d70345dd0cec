"""``rlds-lite merge A B ... --out DIR``: one dataset of several with the same features."""

import argparse

from rlds_lite import overwriting
from rlds_lite.commands import dataset_options
from rlds_lite.commands import rewrite_options


def register(subparsers: argparse._SubParsersAction) -> None:  # pylint: disable=protected-access
  parser = subparsers.add_parser(
      'merge', help='combine RLDS datasets with the same features into a new '
      'one (optionally split into train/validation)',
      description='Writes the episodes of several datasets with the same '
      'features, in order, as a new dataset in --out, copying their records '
      'as they are. Episode ids are kept if unique, else renumbered; the '
      "sources are recorded in the new dataset's metadata. Different "
      'features or an existing --out are errors (exit 2); nothing is written.')
  parser.add_argument('paths', nargs='+', metavar='PATH',
                      help='prepared TFDS dataset directories or registered '
                      'names')
  parser.add_argument('--split', default=None,
                      help="the split read from each (default: 'train', or "
                      'the first split)')
  parser.add_argument('--data-dir', default=None,
                      help='where TFDS looks for prepared datasets (names '
                      'only)')
  parser.add_argument('--json', action='store_true',
                      help='print JSON for machines')
  parser.add_argument('--no-progress', action='store_true',
                      help='hide the progress bar (shown on a terminal only)')
  rewrite_options.add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
  problem = rewrite_options.out_dir_error(args.out, args.val_fraction)
  if problem:
    return dataset_options.report_error('merge', ValueError(problem))
  overwriting.check_creatable(args.out, writer='merge')
  for path in args.paths:
    missing = dataset_options.missing_dataset(path)
    if missing:
      return dataset_options.report_error('merge', missing)
  dataset_options.quiet_logs()
  # pylint: disable=g-import-not-at-top
  from rlds_lite.catalog import rewrite
  try:
    path = rewrite.merge_datasets(
        args.paths, args.out, split=args.split,
        val_fraction=args.val_fraction, seed=args.seed, name=args.name,
        data_dir=args.data_dir, progress=dataset_options.progress_option(args))
  except dataset_options.BAD_INPUT_ERRORS + (FileExistsError,) as e:
    return rewrite_options.report_error('merge', e)
  rewrite_options.report(path, args.json)
  return 0
