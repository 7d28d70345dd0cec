"""The viewer's web app (Flask): two pages, their JSON, the videos.

Pages:
- ``/`` (``?split=``): the dataset (features, splits, statistics) and its
  episode table, sortable and filterable;
- ``/episode/<split>/<index>``: one episode: every camera as a video, line
  plots of actions, state and reward with a cursor that follows the video,
  the ``is_*`` flags on the time axis, the language instruction.

Data (JSON): ``/api/dataset``, ``/api/stats/<split>``,
``/api/episodes/<split>`` (the table, from the split's episode catalog:
``sort``, ``order=asc|desc``, ``min_length``, ``max_length``,
``min_return``, ``max_return``, ``status=terminated|truncated``,
``instruction``, ``where`` (an EXPR), ``offset``, ``limit``),
``/api/episode/<split>/<index>``; videos: ``/video/<split>/<index>/<camera>``
(MP4, with HTTP range requests so browsers can seek). Errors are JSON
``{"error": "..."}``: 404 for an unknown split, episode or camera, 400 for a
bad query; 400 for a request not addressed to ``127.0.0.1`` or
``localhost`` (DNS rebinding). Everything is served by the app: plotly.js comes from the
installed ``plotly`` package, nothing from the network.

Example:
  >>> from rlds_lite import synthetic
  >>> from rlds_lite.view.dataset_view import DatasetView
  >>> path = synthetic.dataset(3, seed=0)
  >>> client = create_app(DatasetView(path)).test_client()
  >>> client.get('/api/episodes/train?sort=length&order=desc').json['rows'][0][
  ...     'length']
  46
  >>> client.get('/api/episode/train/9').status_code
  404
"""

import functools
import importlib.util
import io
import os
from typing import Any, Callable, Optional

try:
  import flask  # pylint: disable=g-import-not-at-top
except ImportError:  # pragma: no cover - depends on the installation.
  raise ImportError("rlds-lite view needs Flask, PyAV and plotly: pip install "
                    "'rlds_lite[view]'") from None

from rlds_lite.stats import cache as stats_cache
from rlds_lite.view import dataset_view as dataset_view_lib
from rlds_lite.view import table_query

PLOTLY_JS = os.path.join('package_data', 'plotly.min.js')


def plotly_js_path() -> str:
  """The ``plotly.min.js`` shipped inside the installed ``plotly`` package."""
  spec = importlib.util.find_spec('plotly')
  if spec is None or not spec.submodule_search_locations:
    raise ImportError("rlds-lite view needs plotly (its plotly.min.js): pip "
                      "install 'rlds_lite[view]'")
  path = os.path.join(list(spec.submodule_search_locations)[0], PLOTLY_JS)
  if not os.path.exists(path):
    raise ImportError(f'plotly is installed but has no {PLOTLY_JS}.')
  return path


def _error(status: int, error: BaseException):
  text = error.args[0] if isinstance(error, KeyError) and error.args else error
  return flask.jsonify(error=' '.join(str(text).split())), status


def _api(function: Callable[..., Any]) -> Callable[..., Any]:
  """Unknown split/episode/camera -> 404 JSON; a bad query -> 400 JSON."""
  @functools.wraps(function)
  def wrapped(*args, **kwargs):
    try:
      return function(*args, **kwargs)
    except (KeyError, IndexError) as e:
      return _error(404, e)
    except ValueError as e:
      return _error(400, e)
  return wrapped


def _number(name: str, kind: type) -> Optional[Any]:
  """Query parameter ``name`` as ``kind``; None if absent or empty."""
  text = flask.request.args.get(name, '').strip()
  if not text:
    return None
  try:
    return kind(text)
  except ValueError:
    raise ValueError(f'query parameter {name!r} must be a{"n" if kind is int else ""} '
                     f'{kind.__name__}, got {text!r}.') from None


def _table_query(view: dataset_view_lib.DatasetView, split: str):
  args = flask.request.args
  order = args.get('order', 'asc')
  if order not in ('asc', 'desc'):
    raise ValueError(f"query parameter 'order' must be asc or desc, got "
                     f'{order!r}.')
  offset, limit = _number('offset', int), _number('limit', int)
  page = table_query.query(
      view.table(split), sort=args.get('sort', 'index'),
      descending=order == 'desc',
      min_length=_number('min_length', int),
      max_length=_number('max_length', int),
      min_return=_number('min_return', float),
      max_return=_number('max_return', float),
      status=args.get('status') or None,
      instruction=args.get('instruction') or None,
      where=args.get('where', '').strip() or None,
      offset=0 if offset is None else offset,
      limit=100 if limit is None else limit)
  return flask.jsonify(split=split, **page)


def create_app(view: dataset_view_lib.DatasetView) -> flask.Flask:
  """The Flask app showing ``view``'s dataset."""
  app = flask.Flask(__name__)
  app.json.sort_keys = False
  # Only requests addressed to this machine by name: a web page cannot reach
  # the viewer through a DNS name rebound to 127.0.0.1.
  app.config['TRUSTED_HOSTS'] = ['127.0.0.1', 'localhost']
  plotly_path = plotly_js_path()
  # Names the dataset's files (names, sizes, times) in the videos' ETags.
  identity = stats_cache.cache_key(view.dataset_dir, {'view': 'videos'})

  def page(template: str, **config):
    return flask.render_template(
        template, name=view.builder.name, label=view.label,
        config={'dataset': view.builder.name, 'splits': view.splits,
                'default_split': view.default_split, 'fps': view.fps,
                **config})

  @app.get('/')
  def dataset_page():
    split = flask.request.args.get('split') or view.default_split
    if split not in view.splits:
      return _error(404, KeyError(f'no split {split!r} (splits: '
                                  f'{view.splits}).'))
    return page('dataset.html', split=split)

  @app.get('/episode/<split>/<int:index>')
  def episode_page(split: str, index: int):
    try:
      total = view.num_episodes(split)
    except KeyError as e:
      return _error(404, e)
    if index >= total:
      return _error(404, IndexError(f'episode {index} is out of range: split '
                                    f'{split!r} has {total} episodes.'))
    return page('episode.html', split=split, index=index, num_episodes=total)

  @app.get('/api/dataset')
  @_api
  def dataset_json():
    return flask.jsonify(view.info())

  @app.get('/api/stats/<split>')
  @_api
  def stats_json(split: str):
    return flask.jsonify(split=split, **view.stats(split))

  @app.get('/api/episodes/<split>')
  @_api
  def episodes_json(split: str):
    return _table_query(view, split)

  @app.get('/api/episode/<split>/<int:index>')
  @_api
  def episode_json(split: str, index: int):
    data = view.episode_data(split, index)
    for camera in data['cameras']:
      camera['url'] = flask.url_for('camera_video', split=split, index=index,
                                    camera=camera['key'])
    return flask.jsonify(data)

  @app.get('/video/<split>/<int:index>/<path:camera>')
  @_api
  def camera_video(split: str, index: int, camera: str):
    data = view.video(split, index, camera)
    return flask.send_file(
        io.BytesIO(data), mimetype='video/mp4', conditional=True,
        etag=f'{identity}-{split}-{index}-{camera}-{view.fps:g}',
        download_name=f'{split}-{index}-{camera.replace("/", "-")}.mp4')

  @app.get('/vendor/plotly.min.js')
  def plotly_js():
    return flask.send_file(plotly_path, mimetype='text/javascript',
                           max_age=7 * 24 * 3600)

  return app
