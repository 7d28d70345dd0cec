"""``rlds-lite view PATH [--port N]``: look at a dataset in the browser (the ``view`` extra).

Behaviour and errors: docs/view.md.
"""

import argparse
import json
import os
import sys

from rlds_lite.commands import dataset_options


def register(subparsers: argparse._SubParsersAction) -> None:  # pylint: disable=protected-access
  parser = subparsers.add_parser(
      'view', help='look at a dataset in the browser (a local web app)',
      description='Serves a local web viewer of an RLDS dataset on '
      '127.0.0.1: its features, splits and statistics, an episode table '
      '(sort, filter) and episode pages (camera videos, plots of actions, '
      'state and reward with a cursor following the video). Episodes are '
      'read on demand; nothing is fetched from the network. Needs '
      "pip install 'rlds_lite[view]'.")
  dataset_options.add_dataset_arguments(
      parser, json_help='print the dataset and its address as JSON for '
      'machines once serving')
  parser.add_argument('--port', type=dataset_options.integer, default=8765,
                      help='the port on 127.0.0.1 (default 8765; 0 picks a '
                      'free one)')
  parser.add_argument('--fps', type=float, default=10,
                      help='steps per second of the camera videos (default 10)')
  dataset_options.add_last_step_argument(
      parser, 'left out of the statistics and returns, and not drawn')


def run(args: argparse.Namespace) -> int:
  missing = dataset_options.missing_dataset(args.path, as_given=True)
  if missing:
    return dataset_options.report_error('view', missing)
  path = os.path.expanduser(args.path)
  if not 0 <= args.port <= 65535:
    return dataset_options.report_error(
        'view', ValueError(f'--port must be in 0..65535, got {args.port}.'))
  if not args.fps > 0:  # As video says it.
    return dataset_options.report_error(
        'view', ValueError(f'--fps must be positive, got {args.fps:g}.'))
  dataset_options.quiet_logs()
  try:
    # pylint: disable=g-import-not-at-top
    from rlds_lite.view import dataset_view
    from rlds_lite.view import server as server_lib
    server_lib.quiet_requests(not getattr(args, 'verbose', False))
    server = server_lib.Server(dataset_view.DatasetView(
        path if os.path.exists(path) else args.path, data_dir=args.data_dir,
        split=args.split, fps=args.fps, last_step=args.last_step), args.port)
  except dataset_options.BAD_INPUT_ERRORS + (OSError,) as e:  # OSError: port.
    return dataset_options.report_error('view', e)
  if args.json:
    print(json.dumps({'path': server.view.label, 'url': server.url}),
          flush=True)
  else:
    print(f'Serving {server.view.label} at {server.url}', flush=True)
  server.run()
  # Ctrl-C may come while a thread is inside TensorFlow (the warm-up pass, a
  # request): finalising the interpreter then aborts the process. Everything
  # is written atomically, so leave at once.
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(0)  # pylint: disable=protected-access
