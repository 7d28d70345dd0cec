"""Record Gymnasium envs (and vector envs) as RLDS: `record`, `DataCollector`; people: `serve`.

Needs the ``gymnasium`` extra (`serve`, the browser recorder, the ``record`` one). How
episodes map to RLDS steps, and what a crash loses: docs/record.md.
"""

try:
  import gymnasium  # pylint: disable=unused-import
except ImportError as error:  # pragma: no cover - the extra is missing.
  raise ImportError("rlds_lite.record needs Gymnasium: pip install "
                    "'rlds_lite[gymnasium]'.") from error

from rlds_lite import lazy_names
from rlds_lite.record.collector import DataCollector
from rlds_lite.record.episodes import ENV_INDEX, INFOS, NO_SEED, OPTIONS, SEED
from rlds_lite.record.recording import RecordSummary, record
from rlds_lite.record.spaces import SpaceFields, UnsupportedSpaceError

__all__ = ['DataCollector', 'RecordSummary', 'SpaceFields',
           'UnsupportedSpaceError', 'record', 'ENV_INDEX', 'INFOS', 'NO_SEED',
           'OPTIONS', 'SEED', 'serve', 'start']

_NAMES = {'serve': 'browser', 'start': 'browser'}


def __getattr__(name):
  # The browser recorder (Flask) is imported on first use.
  return lazy_names.attribute(__name__, _NAMES, name)
