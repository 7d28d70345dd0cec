"""``rlds-lite convert --from X --to Y SOURCE TARGET``: convert between formats.

Formats are `rlds_lite.convert.registry`'s; errors are one line naming the
flags (`FLAGS`) where the library names its Python arguments.
"""

import argparse
import json
import os

from rlds_lite.commands import dataset_options
from rlds_lite.convert import registry

FLAGS = {
    "one_step='skip'": '--skip-one-step',
    'allow_pickle=True': '--allow-pickle',
    'no_video=True': '--no-video',
    'check_continuity=False': '--no-check-continuity',
    'split': '--split', 'name': '--name', 'dataset_id': '--dataset-id',
    'repair': '--repair', 'final_observation': '--final-observation',
    'last_step': '--last-step', 'fps': '--fps', 'task_key': '--task-key',
    **{f'{fmt.reader}()': f'--from {name}'
       for name, fmt in registry.FORMATS.items()},
}
"""The flag of each Python argument the converters' messages name
(`rlds_lite.commands.dataset_options.cli_wording`); a reader, its format's
``--from`` ("read it with from_minari()")."""


def register(subparsers: argparse._SubParsersAction) -> None:  # pylint: disable=protected-access
  formats = '; '.join(fmt.help() for fmt in registry.FORMATS.values())
  parser = subparsers.add_parser(
      'convert', help='convert episodes between RLDS, Minari, D4RL, '
      'il-representations, webdataset shards, TorchRL TED, ALF and LeRobot',
      description='Reads SOURCE in one format and writes TARGET in another, '
      'keeping episode ends (terminated vs truncated) exact. Formats: '
      f'{formats}.')
  names = sorted(registry.FORMATS)
  parser.add_argument('--from', dest='from_format', required=True,
                      choices=names, help='the format of SOURCE')
  parser.add_argument('--to', dest='to_format', required=True, choices=names,
                      help='the format of TARGET')
  parser.add_argument('source', metavar='SOURCE')
  parser.add_argument('target', metavar='TARGET',
                      help='a new file or directory (rlds: the dataset is '
                      'written to TARGET/1.0.0 ... under a name taken from '
                      'TARGET, or --name)')
  parser.add_argument('--split', default=None,
                      help='rlds: the split to read and write (default train)')
  parser.add_argument('--name', default=None,
                      help='rlds target: the dataset name')
  parser.add_argument('--dataset-id', default=None,
                      help='minari target: the dataset id, e.g. '
                      'demo/point-v0')
  parser.add_argument('--repair', default=None,
                      help="the source's documented repair, e.g. truncate "
                      '(il, webdataset, ted, alf), truncate_unfinished (d4rl), '
                      'drop_last_transition (minari)')
  parser.add_argument('--allow-pickle', action='store_true',
                      help='webdataset source: unpickle anything (only for '
                      'files you trust)')
  parser.add_argument('--final-observation', choices=('repeat', 'zeros'),
                      default=None,
                      help='d4rl source without next_observations: each '
                      "episode's final observation repeats its last row's, "
                      'or is zeros')
  parser.add_argument('--no-check-continuity', action='store_true',
                      help='ted source: do not check that next/observation '
                      'is the following observation (multi-step data)')
  dataset_options.add_last_step_argument(
      parser, 'targets without a place for them leave them out')
  parser.add_argument('--skip-one-step', action='store_true',
                      help='targets without room for one-step episodes: skip '
                      'them instead of failing')
  parser.add_argument('--fps', type=dataset_options.integer, default=None,
                      help='lerobot target: frames per second (required)')
  parser.add_argument('--task-key', default=None,
                      help='lerobot: the step field holding the task text '
                      '(default language_instruction)')
  parser.add_argument('--no-video', action='store_true',
                      help='lerobot target: store camera frames as PNG images '
                      'instead of MP4 video')
  parser.add_argument('--json', action='store_true',
                      help='print the counts as JSON for machines')
  parser.add_argument('--no-progress', action='store_true',
                      help='hide the progress bar (shown on a terminal only)')


def run(args: argparse.Namespace) -> int:
  if not os.path.exists(args.source):  # A typo answers before TF's import.
    return dataset_options.report_error('convert', FileNotFoundError(
        f'{args.source}: no such file or directory'
        f'{dataset_options.missing_hint(args.source)}'))
  dataset_options.quiet_logs()
  # pylint: disable=g-import-not-at-top
  from rlds_lite import progress
  from rlds_lite.convert import files
  options = {
      'split': args.split, 'name': args.name, 'dataset_id': args.dataset_id,
      'repair': args.repair, 'allow_pickle': args.allow_pickle,
      'final_observation': args.final_observation,
      'check_continuity': False if args.no_check_continuity else None,
      'one_step': 'skip' if args.skip_one_step else None,
      'fps': args.fps, 'task_key': args.task_key, 'no_video': args.no_video,
      'last_step': args.last_step,
  }
  if args.to_format == 'rlds' and args.split:
    options['split'] = args.split
  try:
    with dataset_options.last_step_warnings('convert'):
      counted = files.convert(
          args.source, args.target, from_format=args.from_format,
          to_format=args.to_format,
          progress=progress.shown(dataset_options.progress_option(args)),
          **options)
  except (dataset_options.BAD_INPUT_ERRORS + (FileExistsError,)) as e:
    message = dataset_options.one_line(e).removeprefix('convert: ')
    return dataset_options.report_error('convert', ValueError(message), FLAGS)
  if args.json:
    print(json.dumps({'episodes': counted.episodes, 'steps': counted.steps,
                      'skipped_one_step': counted.skipped_one_step,
                      'from': args.from_format, 'source': args.source,
                      'to': args.to_format, 'target': args.target,
                      'written': counted.written}))
  else:
    skipped = (f'; left out {counted.skipped_one_step} one-step episodes'
               if counted.skipped_one_step else '')
    print(f'converted {counted.episodes} episodes ({counted.steps} steps): '
          f'{args.from_format} {args.source} -> {args.to_format} '
          f'{counted.written}{skipped}')
  return 0
