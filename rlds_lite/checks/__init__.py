"""Know your data: validation reports, repairs, and dataset overviews.

- `validate`: one pass over a dataset, a `ValidationReport` listing every
  RLDS-format problem (episode, step, field) and notices (`Notice`: non-zero
  last-step values, per field and number of episodes); repairs only when
  asked.
- `repair_is_last`, `repair_is_first`: rewrite a flag from the step index.
- `describe`: features, splits, episode and step counts of a TFDS dataset.

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
