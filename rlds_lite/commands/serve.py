"""``rlds-lite serve dispatcher|worker``: a tf.data service server in this process until SIGTERM.

One line when it serves (``dispatcher ready on grpc://localhost:P``), one when
it stops; bad input is one line and exit status 2. Several hosts:
docs/distributed.md ("tf.data service across processes").
"""

import argparse
import json
import os
import sys

from rlds_lite.commands import dataset_options
from rlds_lite.commands import quiet


def _port(text: str) -> int:
  """An argparse ``type``: a TCP port, 0 for a free one."""
  if not text.isdigit() or int(text) > 65535:
    raise argparse.ArgumentTypeError(f'a port is 0 to 65535, got {text!r}')
  return int(text)


def _seconds(text: str) -> float:
  """An argparse ``type``: a positive number of seconds."""
  try:
    value = float(text)
  except ValueError:
    value = -1.0
  if not 0 < value < 1e7:
    raise argparse.ArgumentTypeError(f'seconds must be a positive number, '
                                     f'got {text!r}')
  return value


def register(subparsers: argparse._SubParsersAction) -> None:  # pylint: disable=protected-access
  serve = subparsers.add_parser(
      'serve', help='run a tf.data service dispatcher or worker',
      description='Runs a tf.data service server until SIGTERM or Ctrl-C; '
      'trainers send pipelines to it with rlds_lite.pipeline.distribute.')
  serve.add_argument('--json', action='store_true',
                     help='print the ready and stopped lines as JSON objects')
  servers = serve.add_subparsers(dest='server', required=True, metavar='SERVER')
  dispatcher = servers.add_parser(
      'dispatcher', help='the dispatcher (one per cluster)')
  dispatcher.add_argument('--port', type=_port, required=True,
                          help='port to listen on, all interfaces (0: a free '
                          'one, printed)')
  dispatcher.add_argument('--work-dir', default=None,
                          help='journal directory: fault-tolerant mode (a '
                          'restart on it recovers its jobs)')
  dispatcher.add_argument('--worker-timeout', type=_seconds, default=None,
                          help='seconds without a heartbeat before a worker '
                          "counts as gone (default tf.data's 600)")
  worker = servers.add_parser('worker', help='a worker (one per input host)')
  worker.add_argument('--dispatcher', required=True, metavar='HOST:PORT',
                      help="the dispatcher's address")
  worker.add_argument('--port', type=_port, default=0,
                      help='port to listen on (default 0: a free one)')
  worker.add_argument('--worker-address', default=None,
                      help="how trainers reach it, e.g. 'host7:%%port%%' "
                      "(default 'localhost:%%port%%': one host only)")
  worker.add_argument('--heartbeat', type=_seconds, default=None,
                      help='seconds between heartbeats (default 30)')
  worker.add_argument('--connect-timeout', type=_seconds, default=10.0,
                      help='seconds to wait for the dispatcher (default 10)')
  for parser in (dispatcher, worker):  # Also after SERVER (as cli.py).
    parser.add_argument('--json', action='store_true',
                        default=argparse.SUPPRESS,
                        help='print the ready and stopped lines as JSON')
    parser.add_argument('--verbose', action='store_true',
                        default=argparse.SUPPRESS,
                        help="show TensorFlow's own log lines")


def _line(args: argparse.Namespace, event: str, text: str, **fields) -> str:
  """What ``serve`` prints: ``'{server} {event} {text}'``, or JSON."""
  if args.json:
    return json.dumps({'server': args.server, 'event': event, **fields})
  return f'{args.server} {event}{text}'


def _serve(args: argparse.Namespace, server, ready: str, **fields) -> int:
  """Serves until SIGTERM, then 0: a dispatcher stops (within a grace), a
  worker exits at once (stop() can block with trainers reading)."""
  from rlds_lite.pipeline import servers  # pylint: disable=g-import-not-at-top
  worker = args.server == 'worker'
  stopped = servers.serve(server, _line(args, 'ready', ready, **fields),
                          stop_server=not worker)
  note = ('' if stopped else f' (it did not stop within {servers.GRACE:g} s: '
          'its jobs are abandoned)')
  print(_line(args, 'stopped', note, clean=stopped), flush=True)
  if worker or not stopped:
    sys.stderr.flush()
    os._exit(0)  # pylint: disable=protected-access
  return 0


def run(args: argparse.Namespace) -> int:
  quiet.import_tensorflow()
  from rlds_lite.pipeline import servers  # pylint: disable=g-import-not-at-top
  try:
    if args.server == 'dispatcher':
      server = servers.start_dispatcher(args.port, args.work_dir,
                                        args.worker_timeout)
      mode = (f' (fault tolerant, work dir {args.work_dir})'
              if args.work_dir else '')
      return _serve(args, server, f' on {server.target}{mode}',
                    address=server.target, work_dir=args.work_dir)
    servers.check_answers(args.dispatcher, args.connect_timeout)
    port = args.port or servers.free_port()
    server = servers.start_worker(args.dispatcher, port, args.worker_address,
                                  args.heartbeat)
    address = (args.worker_address or 'localhost:%port%').replace(
        '%port%', str(port))
    return _serve(args, server, f' on {address} (dispatcher '
                  f'{args.dispatcher})', address=address,
                  dispatcher=args.dispatcher)
  except (ValueError, ConnectionError) as error:
    print(f'rlds-lite serve {args.server}: {error}', file=sys.stderr)
    return dataset_options.BAD_INPUT
