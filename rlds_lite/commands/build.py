"""``rlds-lite build RECORDING --name N``: an RLDS dataset from EnvLogger recordings, optionally on Beam.

See ``rlds_lite.tfds.build_from_envlogger`` and docs/distributed.md (Beam runners
and their flags).
"""

import argparse
import contextlib
import io
import json
import os
import sys

from rlds_lite.commands import beam_flags
from rlds_lite.commands import dataset_options


def register(subparsers: argparse._SubParsersAction) -> None:  # pylint: disable=protected-access
  parser = subparsers.add_parser(
      'build', help='build an RLDS dataset from EnvLogger recordings '
      '(optionally on Apache Beam)',
      description='Converts EnvLogger recordings (a recording, or a '
      'directory of them) into the TFDS dataset DATA_DIR/NAME/VERSION, '
      'published atomically. With --beam, --beam-runner or --beam-option the '
      'conversion runs on Apache Beam, one recording per work item: e.g. '
      '--beam-option direct_num_workers=2 --beam-option '
      'direct_running_mode=multi_processing for two local worker processes, '
      'or --beam-runner DataflowRunner with its flags (docs/distributed.md).')
  parser.add_argument('recordings', metavar='RECORDING', nargs='+',
                      help='a recording or a directory of recordings')
  parser.add_argument('--name', required=True, help='the dataset name '
                      '(snake_case)')
  parser.add_argument('--data-dir', default='~/tensorflow_datasets',
                      help='the TFDS data directory (default '
                      '~/tensorflow_datasets)')
  parser.add_argument('--version', default='1.0.0', help='the dataset '
                      'version (default 1.0.0)')
  parser.add_argument('--split', default='train', help='the split the '
                      'episodes go to (default train)')
  beam_flags.add_beam_arguments(parser, 'one recording per work item')
  parser.add_argument('--json', action='store_true',
                      help='print the result as JSON for machines')
  parser.add_argument('--no-progress', action='store_true',
                      help='hide the progress bar (shown on a terminal only)')


def run(args: argparse.Namespace) -> int:
  for recording in args.recordings:
    if not os.path.exists(recording):  # A typo answers before TF's import.
      return dataset_options.report_error('build', FileNotFoundError(
          f'{recording}: no such recording'
          f'{dataset_options.missing_hint(recording)}'))
  try:
    beam = beam_flags.beam_of(args)
  except (ValueError, TypeError, ImportError) as e:
    return dataset_options.report_error('build', e)
  dataset_options.quiet_logs()
  # pylint: disable=g-import-not-at-top
  import tensorflow_datasets as tfds
  from rlds_lite import progress
  from rlds_lite.tfds import envlogger_build
  if not progress.shown(dataset_options.progress_option(args)):
    tfds.disable_progress_bar()  # TFDS's own bars: on a terminal only too.
  recordings = (args.recordings[0] if len(args.recordings) == 1
                else args.recordings)
  hidden = io.StringIO()  # TFDS's own lines; ours below.
  try:
    with contextlib.redirect_stdout(hidden), (
        contextlib.redirect_stderr(hidden) if args.no_progress
        else contextlib.nullcontext()):
      path = envlogger_build.build_from_envlogger(
          recordings, name=args.name, data_dir=args.data_dir,
          version=args.version, split=args.split, beam=beam or False)
  except (dataset_options.BAD_INPUT_ERRORS + (FileExistsError,)) as e:
    return dataset_options.report_error('build', e)
  episodes = tfds.builder_from_directory(path).info.splits[
      args.split].num_examples
  on = (f' on Beam ({beam.runner}{", " if beam.flags() else ""}'
        f'{" ".join(beam.flags())})' if beam else '')
  if args.json:
    print(json.dumps({
        'path': path, 'name': args.name, 'version': args.version,
        'split': args.split, 'episodes': episodes,
        'beam': ({'runner': str(beam.runner), 'options': beam.flags()}
                 if beam else None)}))
  else:
    print(f'built {episodes} episodes into {path}{on}', file=sys.stdout)
  return 0
