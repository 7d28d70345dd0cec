"""The browser recorder's web app and server: `serve`, `start` (Flask, 127.0.0.1; docs/record.md).

Example:
  >>> import tempfile
  >>> server = start('catch', tempfile.mkdtemp(), port=0)
  >>> client = server.app.test_client()
  >>> client.get('/api/state').json['env']
  'catch'
  >>> client.post('/api/step', json={'held': ['ArrowLeft']}).status_code
  200
  >>> client.post('/api/step', data='x').status_code  # Only JSON posts.
  415
  >>> server.stop()
"""

import logging
import os
import socket
import sys
import threading
from typing import Any, Callable, Dict, Optional, TextIO, Union

try:
  import flask  # pylint: disable=g-import-not-at-top
except ImportError:  # pragma: no cover - depends on the installation.
  raise ImportError("rlds-lite record needs Flask and Pillow: pip install "
                    "'rlds_lite[record]'") from None
from werkzeug import exceptions
from werkzeug import serving

from rlds_lite.record import build as build_lib
from rlds_lite.record import env_specs
from rlds_lite.record import frames as frames_lib
from rlds_lite.record import keymaps
from rlds_lite.record import session
try:  # Replays of the built dataset (the view extra); optional.
  from rlds_lite.view import server as view_server  # pylint: disable=g-import-not-at-top
except ImportError:  # pragma: no cover - depends on the installation.
  view_server = None

__all__ = ['RecorderServer', 'create_app', 'serve', 'start', 'HOST']

HOST = '127.0.0.1'
_PAGE = os.path.join(os.path.dirname(__file__), 'static', 'record.html')


class _Builds:
  """The dataset build the page started, in a background thread."""

  def __init__(self, out_dir: str, name: Optional[str]):
    self.out_dir, self.name = out_dir, name
    self.state: Dict[str, Any] = {'status': 'none'}
    self._lock = threading.Lock()
    self._viewer = None

  def start(self) -> None:
    with self._lock:
      if self.state['status'] == 'building':
        raise ValueError('record: a build is already running.')
      self.state = {'status': 'building'}
    threading.Thread(target=self._run, daemon=True).start()

  def _run(self) -> None:
    try:
      self.stop_viewer()
      path = build_lib.build(self.out_dir, self.name)
      self.state = {'status': 'built', 'path': path,
                    'viewer': self._start_viewer(path)}
    except Exception as e:  # pylint: disable=broad-except
      self.state = {'status': 'failed', 'error': f'{type(e).__name__}: {e}'}

  def _start_viewer(self, path: str) -> Optional[str]:
    """The viewer of the built dataset (replays), if the view extra is there."""
    if view_server is None:
      return None
    self._viewer = view_server.start(path, port=0)
    return self._viewer.url

  def stop_viewer(self) -> None:
    if self._viewer is not None:
      self._viewer.stop()
      self._viewer = None


def _json_body() -> Dict[str, Any]:
  """A POST's JSON object (JSON only: a cross-site form cannot post it)."""
  if not flask.request.is_json:
    raise exceptions.UnsupportedMediaType('send application/json')
  body = flask.request.get_json(silent=True)
  if not isinstance(body, dict):
    raise exceptions.BadRequest('the body must be a JSON object')
  return body


def _held(body: Dict[str, Any]) -> list:
  held = body.get('held', [])
  if not isinstance(held, list) or not all(isinstance(k, str) for k in held):
    raise exceptions.BadRequest('held must be a list of key names')
  return held


def _add_posts(app: flask.Flask, player: session.Player,
               builds: _Builds) -> None:
  """The person's controls: keys, a step, pause/speed/reset, the decision, finish."""

  @app.post('/api/keys')
  def _keys():
    player.set_keys(_held(_json_body()))
    return flask.jsonify(ok=True)

  @app.post('/api/step')
  def _step():
    player.request_step(_held(_json_body()))
    return flask.jsonify(ok=True)

  @app.post('/api/control')
  def _control():
    body = _json_body()
    if 'paused' in body:
      player.set_paused(bool(body['paused']))
    if 'speed' in body:
      try:
        player.set_speed(float(body['speed']))
      except (TypeError, ValueError) as e:
        raise exceptions.BadRequest(str(e)) from None
    if body.get('reset'):
      player.reset()
    return flask.jsonify(ok=True)

  @app.post('/api/decide')
  def _decide():
    body = _json_body()
    player.decide(bool(body.get('keep')), str(body.get('instruction', '')),
                  bool(body.get('success')), str(body.get('note', '')))
    return flask.jsonify(ok=True)

  @app.post('/api/finish')
  def _finish():
    _json_body()
    player.set_paused(True)
    builds.start()
    return flask.jsonify(ok=True)


def create_app(player: session.Player, label: str,
               builds: _Builds) -> flask.Flask:
  """The recorder's Flask app over a running `session.Player` (routes: docs/record.md)."""
  app = flask.Flask(__name__)
  png_cache = {'version': -1, 'bytes': b''}
  png_lock = threading.Lock()

  @app.errorhandler(Exception)
  def _error(error):
    if isinstance(error, exceptions.HTTPException):
      return flask.jsonify(error=error.description), error.code
    if isinstance(error, ValueError):
      return flask.jsonify(error=str(error)), 400
    raise error

  @app.get('/')
  def _page():
    return flask.send_file(_PAGE, mimetype='text/html', max_age=0)

  @app.get('/api/state')
  def _state():
    return flask.jsonify(env=label, keymap=player.keymap.describe(),
                         episodes=session.kept_episodes(player.out_dir),
                         build=builds.state, out=player.out_dir,
                         **player.state())

  @app.get('/frame.png')
  def _frame():
    """The newest frame, once newer than ``after`` (a long poll of up to 1 s)."""
    after = flask.request.args.get('after', '-1')
    version = player.wait_frame(int(after) if after.lstrip('-').isdigit()
                                else -1)
    with png_lock:
      if png_cache['version'] != version:
        version, image = player.frame()
        if image is None:
          raise exceptions.NotFound('no frame yet')
        png_cache.update(version=version, bytes=frames_lib.png(image))
      data, version = png_cache['bytes'], png_cache['version']
    response = flask.Response(data, mimetype='image/png')
    response.headers['X-Frame-Version'] = str(version)
    response.headers['Cache-Control'] = 'no-store'
    return response

  _add_posts(app, player, builds)
  return app


class RecorderServer:
  """A running recorder: ``url``, ``player``, ``app``, ``stop()``."""

  def __init__(self, played: env_specs.PlayedEnv, out_dir: str,
               keymap: keymaps.KeyMap, steps_per_second: float, port: int,
               name: Optional[str]):
    session.check_out_dir(out_dir, played.label)
    # The port first: a taken one leaves no player holding the out dir's lock.
    try:
      listener = socket.create_server((HOST, port))
    except OSError as e:
      raise OSError(e.errno, f'cannot listen on {HOST}:{port}: '
                    f'{os.strerror(e.errno)}; pass another port (0 picks a '
                    'free one)') from None
    with listener:
      self.player = session.Player(played.env, out_dir, keymap,
                                   steps_per_second, played.render)
      self.builds = _Builds(out_dir, name)
      self.app = create_app(self.player, played.label, self.builds)
      self._server = serving.make_server(HOST, port, self.app, threaded=True,
                                         fd=listener.fileno())
    self._thread: Optional[threading.Thread] = None
    self.player.start()

  @property
  def url(self) -> str:
    return f'http://{HOST}:{self._server.port}/'

  def start_thread(self) -> 'RecorderServer':
    self._thread = threading.Thread(target=self._server.serve_forever,
                                    daemon=True, name='rlds-lite-record')
    self._thread.start()
    return self

  def wait(self) -> None:
    """Blocks until the serving thread ends (Ctrl-C: KeyboardInterrupt)."""
    while self._thread is not None and self._thread.is_alive():
      self._thread.join(0.5)

  def run(self) -> None:
    """Serves in this thread until Ctrl-C, then stops."""
    try:
      self._server.serve_forever()
    except KeyboardInterrupt:
      pass
    finally:
      self.stop()

  def stop(self) -> None:
    """Stops serving and playing (the episode being played is lost)."""
    self.player.stop()
    self.builds.stop_viewer()
    if self._thread is not None:
      self._server.shutdown()
      self._thread.join()
      self._thread = None
    self._server.server_close()


def _server(env: Union[str, Callable[[], Any]], out_dir: str,
            keys: Optional[str], steps_per_second: float, port: int,
            name: Optional[str], seed: Optional[int]) -> RecorderServer:
  played = env_specs.resolve(env, seed=seed)
  keymap = keymaps.for_env(played.builtin, played.env.action_spec(), keys)
  return RecorderServer(played, os.path.abspath(out_dir), keymap,
                        steps_per_second, port, name)


def start(env: Union[str, Callable[[], Any]], out_dir: str, *,
          keys: Optional[str] = None, steps_per_second: float = 10.0,
          port: int = 0, name: Optional[str] = None,
          seed: Optional[int] = None) -> RecorderServer:
  """A `RecorderServer` serving in a background thread (arguments as `serve`)."""
  serving_logs(quiet=True)
  return _server(env, out_dir, keys, steps_per_second, port, name,
                 seed).start_thread()


def serve(env_factory: Union[str, Callable[[], Any]], out_dir: str, *,
          keys: Optional[str] = None, steps_per_second: float = 10.0,
          port: int = 8766, name: Optional[str] = None,
          seed: Optional[int] = None, out: TextIO = sys.stdout) -> None:
  """Serves the recording page on 127.0.0.1 until Ctrl-C (a person plays; docs/record.md).

  Args:
    env_factory: a built-in name, a Gymnasium id, ``module:factory``, or a
      function returning a dm_env or Gymnasium env.
    out_dir: the recording directory (created; or one this recorder made).
    keys: a key map file (JSON/YAML); default: built in or derived.
    steps_per_second: the clock the env is stepped on.
    port: the port (0: a free one).
    name: the dataset name of the build (default ``<env>_human``).
    seed: the env's seed (built-in envs).
    out: where the address is printed.
  """
  serving_logs(quiet=True)
  server = _server(env_factory, out_dir, keys, steps_per_second, port, name,
                   seed)
  print(f'Recording {server.player.out_dir} at {server.url}', file=out,
        flush=True)
  server.run()


def serving_logs(quiet: bool = True) -> None:
  """Hides (or shows) Werkzeug's one line per request."""
  logging.getLogger('werkzeug').setLevel(logging.WARNING if quiet else
                                         logging.INFO)
