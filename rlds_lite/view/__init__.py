"""See your data: a local web viewer of RLDS datasets (``rlds-lite view``; docs/view.md).

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
