"""Know your data: `validate`, `repair_is_last` / `repair_is_first`, and `describe`.

Example:
  >>> from rlds_lite import checks, synthetic
  >>> checks.validate(synthetic.episode_arrays(num_episodes=2)).ok
  True
"""

from rlds_lite.checks.overview import describe
from rlds_lite.checks.overview import DatasetOverview
from rlds_lite.checks.problems import Notice
from rlds_lite.checks.problems import Problem
from rlds_lite.checks.problems import ValidationReport
from rlds_lite.checks.repair import repair_is_first
from rlds_lite.checks.repair import repair_is_last
from rlds_lite.checks.repair import REPAIRS
from rlds_lite.checks.validator import validate

__all__ = [
    'DatasetOverview',
    'describe',
    'Notice',
    'Problem',
    'REPAIRS',
    'repair_is_first',
    'repair_is_last',
    'validate',
    'ValidationReport',
]
