"""The viewer's web app (Flask): two pages, their JSON and the videos (routes: docs/view.md).

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

import importlib.util
import io
import logging
import math
import os
import re
from typing import Any, Optional

try:
  import flask  # pylint: disable=g-import-not-at-top
except ImportError:  # pragma: no cover - depends on the installation.
  raise ImportError("rlds-lite view needs Flask, PyAV and plotly: pip install "
                    "'rlds_lite[view]'") from None

from werkzeug import exceptions

from rlds_lite import dataset_files
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


_MAX_INT = 2**63 - 1  # Query numbers compare with int64 columns.


def _error_json(error: BaseException):
  """Any error as ``{"error": ...}`` and its status (404, 400 or 500: docs/view.md)."""
  if isinstance(error, exceptions.HTTPException):
    status, text = error.code or 500, error.description
  elif isinstance(error, dataset_files.CorruptDatasetError):
    status, text = 500, str(error)
  elif isinstance(error, (KeyError, IndexError)):
    status = 404
    text = error.args[0] if isinstance(error, KeyError) and error.args else error
  elif isinstance(error, ValueError):
    status, text = 400, str(error)
  else:
    logging.getLogger(__name__).error('view: %s', error, exc_info=error)
    status, text = 500, f'{type(error).__name__}: {error}'
  return flask.jsonify(error=' '.join(str(text).split())), status


def _number(name: str, kind: type) -> Optional[Any]:
  """Query parameter ``name`` as ``kind`` (finite); None if absent or empty."""
  text = flask.request.args.get(name, '').strip()
  if not text:
    return None
  try:
    value = kind(text)
  except ValueError:
    value = None
  if value is None or (abs(value) > _MAX_INT if kind is int
                       else not math.isfinite(value)):
    article = 'an' if kind is int else 'a finite'
    raise ValueError(f'query parameter {name!r} must be {article} '
                     f'{kind.__name__}, got {text!r}.')
  return value


def _episode_index(view: dataset_view_lib.DatasetView, split: str,
                   text: str) -> int:
  """Episode ``text`` of ``split`` as an index; IndexError if there is none."""
  total = view.num_episodes(split)
  if not re.fullmatch(r'[0-9]{1,18}', text):
    raise IndexError(f'no episode {text!r}: split {split!r} has {total} '
                     f'episodes{f" (0 to {total - 1})" if total else ""}.')
  index = int(text)
  if index >= total:
    raise IndexError(f'episode {index} is out of range: split {split!r} has '
                     f'{total} episodes.')
  return index


def _table_query(view: dataset_view_lib.DatasetView, split: str):
  args = flask.request.args
  order = args.get('order', 'asc')
  if order not in ('asc', 'desc'):
    raise ValueError(f"query parameter 'order' must be asc or desc, got "
                     f'{order!r}.')
  offset, limit = _number('offset', int), _number('limit', int)
  page = table_query.query(view.table(split), table_query.Query(
      sort=args.get('sort', 'index'),
      descending=order == 'desc',
      min_length=_number('min_length', int),
      max_length=_number('max_length', int),
      min_return=_number('min_return', float),
      max_return=_number('max_return', float),
      status=args.get('status') or None,
      instruction=args.get('instruction') or None,
      where=args.get('where', '').strip() or None,
      offset=0 if offset is None else offset,
      limit=100 if limit is None else limit))
  return flask.jsonify(split=split, **page)


def create_app(view: dataset_view_lib.DatasetView) -> flask.Flask:
  """The Flask app showing ``view``'s dataset."""
  app = flask.Flask(__name__)
  app.json.sort_keys = False
  # Only requests addressed to this machine by name: a web page cannot reach
  # the viewer through a DNS name rebound to 127.0.0.1.
  app.config['TRUSTED_HOSTS'] = ['127.0.0.1', 'localhost']
  app.register_error_handler(Exception, _error_json)
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
    view.check_split(split)
    return page('dataset.html', split=split)

  @app.get('/episode/<split>/<index>')
  def episode_page(split: str, index: str):
    index = _episode_index(view, split, index)
    return page('episode.html', split=split, index=index,
                num_episodes=view.num_episodes(split))

  @app.get('/api/dataset')
  def dataset_json():
    return flask.jsonify(view.info())

  @app.get('/api/stats/<split>')
  def stats_json(split: str):
    return flask.jsonify(split=split, **view.stats(split))

  @app.get('/api/episodes/<split>')
  def episodes_json(split: str):
    return _table_query(view, split)

  @app.get('/api/episode/<split>/<index>')
  def episode_json(split: str, index: str):
    index = _episode_index(view, split, index)
    data = view.episode_data(split, index)
    for camera in data['cameras']:
      camera['url'] = flask.url_for('camera_video', split=split, index=index,
                                    camera=camera['key'])
    return flask.jsonify(data)

  @app.get('/video/<split>/<index>/<path:camera>')
  def camera_video(split: str, index: str, camera: str):
    index = _episode_index(view, split, index)
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
