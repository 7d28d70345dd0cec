"""``rlds-lite validate PATH``: list every format problem; exit 1 if any (notices alone: exit 0)."""

import argparse
from typing import Optional

from rlds_lite.commands import dataset_options

PROBLEMS_FOUND = 1


def register(subparsers: argparse._SubParsersAction) -> None:  # pylint: disable=protected-access
  parser = subparsers.add_parser(
      'validate', help='check an RLDS dataset and list every problem',
      description='Checks an RLDS dataset against the format (flags, empty '
      'episodes, shapes, NaN/Inf, optionally last-step values) in one pass '
      'and lists each problem with its episode, step and field, then any '
      'notices (non-zero action/reward/discount on last steps: field and '
      'number of episodes). Exits 0 if the dataset is valid (notices '
      'included), 1 if problems were found, 2 on bad input.')
  dataset_options.add_dataset_arguments(parser)
  parser.add_argument('--last-step-invalid', action='store_true',
                      help='the final step\'s reward and discount are invalid '
                      '(RLDS): report non-zero values there as problems '
                      '(exit 1)')
  dataset_options.add_last_step_argument(
      parser, 'non-zero values there are noticed')
  parser.add_argument('--max-problems', type=dataset_options.integer,
                      default=1000,
                      help='stop after this many problems (default 1000)')
  parser.add_argument('--episodes', type=dataset_options.integer, default=None,
                      help='check only the first N episodes (N >= 1)')


def _argument_problem(args: argparse.Namespace) -> Optional[str]:
  """What is wrong with the numbers given, or None (checked before any work).

  Example:
    >>> _argument_problem(argparse.Namespace(
    ...     max_problems=5, episodes=0, last_step_invalid=False))
    '--episodes must be at least 1.'
  """
  if args.last_step_invalid and args.last_step == 'valid':
    return ('--last-step-invalid and --last-step valid contradict each other '
            '(invalid final-step values, or real ones?); pass one of them.')
  if args.max_problems < 1:
    return '--max-problems must be at least 1.'
  if args.episodes is not None and args.episodes < 1:
    return '--episodes must be at least 1.'
  return None


def run(args: argparse.Namespace) -> int:
  problem = _argument_problem(args)
  if problem:
    return dataset_options.report_error('validate', ValueError(problem))
  missing = dataset_options.missing_dataset(args.path)
  if missing:
    return dataset_options.report_error('validate', missing)
  dataset_options.quiet_logs()
  from rlds_lite import checks  # pylint: disable=g-import-not-at-top
  try:
    report = checks.validate(args.path, split=args.split,
                             data_dir=args.data_dir,
                             last_step_invalid=args.last_step_invalid,
                             last_step=args.last_step,
                             max_problems=args.max_problems,
                             num_episodes=args.episodes,
                             progress=dataset_options.progress_option(args))
  except dataset_options.BAD_INPUT_ERRORS as e:
    return dataset_options.report_error('validate', e)
  print(report.to_json() if args.json else report.table())
  return 0 if report.ok else PROBLEMS_FOUND
