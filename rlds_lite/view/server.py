"""Serve the viewer on 127.0.0.1 (Werkzeug's threaded WSGI server).

Example:
  >>> import urllib.request
  >>> from rlds_lite import synthetic
  >>> path = synthetic.dataset(2, seed=0)
  >>> server = start(path, port=0)
  >>> server.url.startswith('http://127.0.0.1:')
  True
  >>> urllib.request.urlopen(server.url + 'api/dataset').status
  200
  >>> server.stop()
"""

import logging
import os
import socket
import sys
import threading
from typing import Any, Optional, TextIO

from werkzeug import serving

from rlds_lite.view import app as app_lib
from rlds_lite.view import dataset_view

HOST = '127.0.0.1'


class Server:
  """A running viewer: ``url``, ``view``, ``stop()``."""

  def __init__(self, view: dataset_view.DatasetView, port: int):
    self.view = view
    self.app = app_lib.create_app(view)
    # Bound here, not by Werkzeug (which exits the process if the port is
    # taken): a taken port is an OSError the caller can report.
    try:
      listener = socket.create_server((HOST, port))
    except OSError as e:
      raise OSError(e.errno, f'cannot listen on {HOST}:{port}: {os.strerror(e.errno)}; '
                    'pass another port (0 picks a free one)') from None
    with listener:  # The server keeps its own duplicate of the socket.
      self._server = serving.make_server(HOST, port, self.app, threaded=True,
                                         fd=listener.fileno())
    self._thread: Optional[threading.Thread] = None
    self._warm_thread: Optional[threading.Thread] = None

  @property
  def port(self) -> int:
    return int(self._server.port)

  @property
  def url(self) -> str:
    return f'http://{HOST}:{self.port}/'

  def serve_forever(self) -> None:
    """Serves in this thread until `stop` (or KeyboardInterrupt)."""
    self._server.serve_forever()

  def start_thread(self) -> 'Server':
    """Serves in a daemon thread; returns self."""
    self._thread = threading.Thread(target=self.serve_forever, daemon=True,
                                    name='rlds-lite-view')
    self._thread.start()
    return self

  def warm(self) -> threading.Thread:
    """Computes the default split's table and statistics in the background."""
    def compute():
      try:
        self.view.table(self.view.default_split)
        self.view.stats(self.view.default_split)
      except Exception as e:  # pylint: disable=broad-except
        # The pages ask again, and show the error then.
        logging.getLogger(__name__).warning('view: warm-up failed: %s', e)
    self._warm_thread = threading.Thread(target=compute, daemon=True,
                                         name='rlds-lite-view-warm')
    self._warm_thread.start()
    return self._warm_thread

  def run(self, warm: bool = True) -> None:
    """Serves in this thread until Ctrl-C (warming first), then stops."""
    if warm:
      self.warm()
    try:
      self.serve_forever()
    except KeyboardInterrupt:
      pass
    finally:
      self.stop()

  def stop(self) -> None:
    """Stops serving and closes the socket."""
    if self._thread is not None:
      self._server.shutdown()
      self._thread.join()
      self._thread = None
    self._server.server_close()


def quiet_requests(quiet: bool = True) -> None:
  """Hides (or shows) Werkzeug's one line per request."""
  logging.getLogger('werkzeug').setLevel(logging.WARNING if quiet else
                                         logging.INFO)


def start(name_or_dir: Any, port: int = 0, **view_options: Any) -> Server:
  """A `Server` of the dataset on ``port`` (0: a free one), serving in a background thread.

  ``**view_options`` are `DatasetView`'s (``split``, ``fps``, ...).
  """
  quiet_requests()
  return Server(dataset_view.DatasetView(name_or_dir, **view_options),
                port).start_thread()


def serve(name_or_dir: Any, port: int = 0, *, out: TextIO = sys.stdout,
          warm: bool = True, **view_options: Any) -> None:
  """Prints ``Serving <dataset> at <url>`` and serves until Ctrl-C."""
  quiet_requests()
  server = Server(dataset_view.DatasetView(name_or_dir, **view_options), port)
  print(f'Serving {server.view.label} at {server.url}', file=out, flush=True)
  server.run(warm)
