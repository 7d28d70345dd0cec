"""``rlds-lite record ENV --out DIR [--build]``: a person plays an env in the browser, as RLDS.

Needs the ``record`` extra. Behaviour, files and errors: docs/record.md ("In the browser").
"""

import argparse
import json
import os
import sys

from rlds_lite.commands import dataset_options


def register(subparsers: argparse._SubParsersAction) -> None:  # pylint: disable=protected-access
  parser = subparsers.add_parser(
      'record', help='play an environment in the browser, recorded as RLDS',
      description='Serves a local web page on 127.0.0.1 where a person '
      'plays ENV with the keyboard (or a gamepad): the server steps it on a '
      'fixed clock, records every episode losslessly with EnvLogger, and '
      'after each one asks keep or discard, an instruction, success and a '
      'note. "Finish" (or --build) builds the kept episodes into the TFDS '
      "dataset DIR/tfds/NAME/1.0.0. Needs pip install 'rlds_lite[record]'.")
  parser.add_argument('env', metavar='ENV',
                      help='a built-in env (catch, catch_pixels, reach), a '
                      'Gymnasium id, or module:factory')
  parser.add_argument('--out', required=True, metavar='DIR',
                      help='the recording directory (created)')
  parser.add_argument('--build', action='store_true',
                      help='build the kept episodes into a dataset and exit')
  parser.add_argument('--keys', metavar='FILE',
                      help='a key map, JSON or YAML: {"keys": {KEY: ACTION}, '
                      '"noop": ACTION} (default: built in or derived)')
  parser.add_argument('--speed', type=float, default=10.0,
                      help='steps per second (default 10)')
  parser.add_argument('--port', type=dataset_options.integer, default=8766,
                      help='the port on 127.0.0.1 (default 8766; 0: a free one)')
  parser.add_argument('--name', help='the dataset name (default ENV_human)')
  parser.add_argument('--seed', type=dataset_options.integer,
                      help="the env's seed (built-in envs)")
  parser.add_argument('--json', action='store_true',
                      help='print the address (or the built dataset) as JSON')
  parser.add_argument('--no-progress', action='store_true',
                      help='accepted for symmetry: nothing shows progress')


def _fail(error: BaseException) -> int:
  text = ' '.join(str(error).split()).removeprefix('record: ')
  print(f'rlds-lite record: {text}', file=sys.stderr)
  return dataset_options.BAD_INPUT


def run(args: argparse.Namespace) -> int:
  if not 0 <= args.port <= 65535:
    return _fail(ValueError(f'--port must be in 0..65535, got {args.port}.'))
  if not 0.5 <= args.speed <= 240:
    return _fail(ValueError(f'--speed must be in 0.5..240, got {args.speed:g}.'))
  if args.keys and not os.path.isfile(args.keys):
    return _fail(FileNotFoundError(f'--keys {args.keys!r} does not exist.'))
  dataset_options.quiet_logs()
  try:
    # pylint: disable=g-import-not-at-top
    if args.build:
      from rlds_lite.record import build
      path = build.build(os.path.abspath(args.out), args.name)
      print(json.dumps({'path': path}) if args.json else path, flush=True)
      return 0
    from rlds_lite.record import browser
    browser.serving_logs(not getattr(args, 'verbose', False))
    server = browser.start(args.env, args.out, keys=args.keys,
                           steps_per_second=args.speed, port=args.port,
                           name=args.name, seed=args.seed)
  except dataset_options.BAD_INPUT_ERRORS + (OSError,) as e:
    return _fail(e)
  if args.json:
    print(json.dumps({'env': args.env, 'out': server.player.out_dir,
                      'url': server.url}), flush=True)
  else:
    print(f'Recording {args.env} into {server.player.out_dir} at '
          f'{server.url}', flush=True)
  try:
    server.wait()
  except KeyboardInterrupt:
    pass
  server.stop()
  sys.stdout.flush()
  os._exit(0)  # pylint: disable=protected-access
