"""TensorFlow without its C++ log lines on the command line (unless --verbose); not a command.

`import_tensorflow` sends file descriptor 2 to ``/dev/null`` while
``import tensorflow`` runs; why: docs/cli.md ("Quiet").
"""

import contextlib
import os
import sys
from typing import Any, Iterator

_state = {'verbose': True}


def configure(verbose: bool) -> None:
  """Keeps TensorFlow's logs (``verbose``) or hides them from now on.

  Sets ``TF_CPP_MIN_LOG_LEVEL=3`` (and ``GLOG_minloglevel=2`` for
  EnvLogger's native code) when TensorFlow is not loaded yet.
  """
  _state['verbose'] = verbose
  if not verbose and 'tensorflow' not in sys.modules:
    os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'
    os.environ['GLOG_minloglevel'] = '2'


@contextlib.contextmanager
def _stderr_discarded() -> Iterator[None]:
  """File descriptor 2 goes to /dev/null inside the block (C++ writes too)."""
  sys.stderr.flush()
  saved = os.dup(2)
  try:
    with open(os.devnull, 'wb') as devnull:
      os.dup2(devnull.fileno(), 2)
    yield
  finally:
    os.dup2(saved, 2)
    os.close(saved)


def import_tensorflow() -> Any:
  """``import tensorflow``, quietly unless `configure` got ``verbose``.

  Also sets TensorFlow's and absl's Python loggers to ERROR when quiet.

  Example:
    >>> configure(verbose=True)
    >>> tf = import_tensorflow()
    >>> tf.__name__
    'tensorflow'
  """
  verbose = _state['verbose']
  if verbose or 'tensorflow' in sys.modules:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
  else:
    with _stderr_discarded():
      import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not verbose:
    from absl import logging  # pylint: disable=g-import-not-at-top
    logging.set_verbosity(logging.ERROR)
    tf.get_logger().setLevel('ERROR')
  return tf
