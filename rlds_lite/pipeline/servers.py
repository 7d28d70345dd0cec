"""tf.data service servers in their own process: start, probe, serve until SIGTERM.

``rlds-lite serve dispatcher|worker`` runs `serve` on `start_dispatcher` /
`start_worker`; `check_answers` is how ``distribute`` refuses a dispatcher
that does not answer. Several hosts: docs/distributed.md.

Example:
  >>> dispatcher = start_dispatcher(port=0)
  >>> address = dispatcher.target.split('://', 1)[1]
  >>> check_answers(address, timeout=10)
  >>> worker = start_worker(address, port=0)
  >>> worker.stop(); dispatcher.stop()
"""

import signal
import socket
import sys
import threading
from typing import Any, Optional, Sequence, TextIO, Tuple

import tensorflow as tf

_service = tf.data.experimental.service

CONNECT_TIMEOUT = 10.0
"""Seconds `check_answers` waits for a dispatcher by default."""


def host_port(address: str, what: str = 'dispatcher') -> Tuple[str, int]:
  """``(host, port)`` of ``'grpc://host:port'`` or ``'host:port'``.

  Example:
    >>> host_port('grpc://localhost:5050')
    ('localhost', 5050)
    >>> host_port('localhost')
    Traceback (most recent call last):
    ...
    ValueError: dispatcher address 'localhost' must be HOST:PORT or grpc://HOST:PORT (a port from 1 to 65535).
  """
  text = str(address).split('://', 1)[-1]
  host, _, port = text.rpartition(':')
  if not host or not port.isdigit() or not 0 < int(port) < 65536:
    raise ValueError(f'{what} address {address!r} must be HOST:PORT or '
                     'grpc://HOST:PORT (a port from 1 to 65535).')
  return host.strip('[]'), int(port)


def check_answers(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
  """Returns once a gRPC server answers at ``address``, else raises.

  A gRPC channel ready check, retried until ``timeout`` seconds pass
  (tf.data itself retries an absent dispatcher for an hour), then a TCP
  connect to say why.

  Raises:
    ValueError: for an address that is not ``HOST:PORT``.
    ConnectionError: when nothing answers within ``timeout`` seconds.

  Example:
    >>> check_answers('localhost:1', timeout=1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ConnectionError: no tf.data service dispatcher answers at localhost:1 (waited 1 s: ...). Start one with `rlds-lite serve dispatcher --port 1` on that host, or check the address and the firewall.
  """
  import grpc  # pylint: disable=g-import-not-at-top  (TF's own dependency)
  host, port = host_port(address)
  with grpc.insecure_channel(f'{host}:{port}') as channel:
    try:  # gRPC reconnects (with backoff) until the timeout.
      grpc.channel_ready_future(channel).result(timeout=timeout)
      return
    except grpc.FutureTimeoutError:
      pass
  try:
    with socket.create_connection((host, port), timeout=1):
      reason = 'the port is open, but no gRPC server answers on it'
  except OSError as error:
    reason = (str(error) or type(error).__name__).rstrip('.')
  raise ConnectionError(
      f'no tf.data service dispatcher answers at {host}:{port} (waited '
      f'{timeout:g} s: {reason}). Start one with `rlds-lite serve '
      f'dispatcher --port {port}` on that host, or check the address and '
      'the firewall.')


def free_port() -> int:
  """A TCP port free now (the system's pick; another process may take it).

  Example:
    >>> 0 < free_port() < 65536
    True
  """
  with socket.socket() as probe:
    probe.bind(('', 0))
    return probe.getsockname()[1]


def check_port_free(port: int) -> None:
  """Raises ValueError if ``port`` is taken (gRPC itself would share it).

  Example:
    >>> with socket.socket() as taken:
    ...   taken.bind(('', 0)); taken.listen()
    ...   check_port_free(taken.getsockname()[1])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: port ... is in use by another process; give another --port (0: a free one).
  """
  with socket.socket() as probe:
    # Connections of a stopped server (TIME_WAIT) do not count; a listener does.
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
      probe.bind(('', port))
    except OSError:
      raise ValueError(f'port {port} is in use by another process; give '
                       'another --port (0: a free one).') from None


def start_dispatcher(port: int, work_dir: Optional[str] = None,
                     worker_timeout: Optional[float] = None) -> Any:
  """A running ``DispatchServer`` on ``port`` (0: a free one).

  Args:
    port: the port it listens on (every interface).
    work_dir: with it, fault-tolerant mode: its jobs and splits are journaled
      there and a dispatcher restarted on it recovers them.
    worker_timeout: seconds without a heartbeat before a worker counts as
      gone and the jobs go on without it (None: tf.data's default, 10
      minutes). The dispatcher then also looks a quarter as often (tf.data
      looks every 10 minutes).

  Returns:
    The ``tf.data.experimental.service.DispatchServer`` (``.target``,
    ``.stop()``).

  Raises:
    ValueError: for a port in use.

  Example:
    >>> dispatcher = start_dispatcher(0, worker_timeout=2)
    >>> dispatcher.target.startswith('grpc://localhost:')
    True
    >>> dispatcher.stop()
  """
  if port:
    check_port_free(port)
  timing = {}
  if worker_timeout is not None:  # Checked in the maintenance loop: as often.
    timing['worker_timeout_ms'] = max(1, int(worker_timeout * 1000))
    timing['job_gc_check_interval_ms'] = max(50, timing['worker_timeout_ms'] // 4)
  config = _service.DispatcherConfig(
      port=port, work_dir=work_dir, fault_tolerant_mode=work_dir is not None,
      **timing)
  return _service.DispatchServer(config)


def start_worker(dispatcher: str, port: int,
                 worker_address: Optional[str] = None,
                 heartbeat: Optional[float] = None) -> Any:
  """A running ``WorkerServer`` registered with ``dispatcher``.

  Args:
    dispatcher: ``'HOST:PORT'`` (or ``'grpc://HOST:PORT'``).
    port: the port it listens on (0: a free one, picked here).
    worker_address: the address trainers reach it at (``%port%`` is
      replaced); None: ``'localhost:%port%'`` (one host only).
    heartbeat: seconds between heartbeats to the dispatcher (None: 30).

  Returns:
    The ``tf.data.experimental.service.WorkerServer`` (``.stop()``).

  Raises:
    ValueError: for a port in use or a bad dispatcher address.

  Example:
    >>> dispatcher = start_dispatcher(0)
    >>> worker = start_worker(dispatcher.target, 0, heartbeat=0.5)
    >>> worker.stop(); dispatcher.stop()
  """
  if port:
    check_port_free(port)
  host, dispatcher_port = host_port(dispatcher)
  options = {}
  if worker_address is not None:
    options['worker_address'] = worker_address
  if heartbeat is not None:
    options['heartbeat_interval_ms'] = int(heartbeat * 1000)
  return _service.WorkerServer(_service.WorkerConfig(
      dispatcher_address=f'{host}:{dispatcher_port}',
      port=port or free_port(), **options))


GRACE = 10.0
"""Seconds `serve` waits for a server to stop before it gives up on it."""


def serve(server: Any, ready: str, out: Optional[TextIO] = None,
          signals: Sequence[int] = (signal.SIGTERM, signal.SIGINT),
          grace: float = GRACE, stop_server: bool = True) -> bool:
  """Prints ``ready``, runs ``server`` until a signal, stops it.

  A server busy with a job may not stop (a worker with a trainer still
  reading was seen to block ``stop()``, holding the GIL): after ``grace``
  seconds `serve` gives up on it and returns False; exit the process then
  (``os._exit``). ``stop_server=False`` returns at the signal without
  ``stop()``, for the caller to exit at once (``rlds-lite serve worker``:
  what the worker held is lost either way, as if it were killed).

  Args:
    server: a started tf.data server (``.stop()``).
    ready: the one line printed (and flushed) once it serves.
    out: where the lines go (None: sys.stdout).
    signals: the signals that stop it (main thread only).
    grace: seconds to wait for ``server.stop()``.
    stop_server: call ``server.stop()`` (else return at the signal).

  Returns:
    True once ``server.stop()`` returned, False if it did not within
    ``grace`` seconds.

  Example:
    >>> import os
    >>> dispatcher = start_dispatcher(0)
    >>> threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()
    >>> serve(dispatcher, 'dispatcher ready on (the address)')
    dispatcher ready on (the address)
    True
  """
  out = sys.stdout if out is None else out
  stop = threading.Event()
  previous = {number: signal.signal(number, lambda *_: stop.set())
              for number in signals}
  try:
    print(ready, file=out, flush=True)
    while not stop.wait(0.2):
      pass
  finally:
    for number, handler in previous.items():
      signal.signal(number, handler)
  if not stop_server:
    return True
  stopping = threading.Thread(target=server.stop, daemon=True)
  stopping.start()
  stopping.join(grace)
  return not stopping.is_alive()
