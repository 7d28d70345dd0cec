"""See your data: a local web viewer of RLDS datasets (``rlds-lite view``).

Needs the ``view`` extra (``pip install 'rlds_lite[view]'``: Flask, PyAV,
plotly). `serve` serves a dataset on 127.0.0.1 until Ctrl-C; `start` serves
it in a background thread (notebooks, tests); `create_app` is the Flask app
of a `DatasetView`.

Modules: `dataset_view` (what is shown, read on demand and cached),
`dataset_info` (features and splits), `table_query` (filter, sort and page
the split's episode catalog, ``rlds_lite.catalog``, which is the table),
`episode_reader` (one episode by index), `episode_payload` (an episode as the
page's JSON), `fields` (which fields are cameras, language, plots),
`video_encoding` (cameras as MP4), `app` (the Flask routes), `server`.

Example:
  >>> from rlds_lite import synthetic
  >>> path = synthetic.dataset(2, seed=0)
  >>> server = start(path)
  >>> server.url.startswith('http://127.0.0.1:')
  True
  >>> server.stop()
"""

from rlds_lite.view.app import create_app
from rlds_lite.view.dataset_view import DatasetView
from rlds_lite.view.server import serve
from rlds_lite.view.server import start
from rlds_lite.view.server import Server
