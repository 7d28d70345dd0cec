"""The episode catalog: list, select, filter, merge and split episodes.

`episodes` builds a cached `Catalog` (one row per episode), `Catalog.select`
takes an EXPR (`parse_expression`), ``rlds_lite.load(path, episodes=...)``
reads the chosen episodes, and `filter_dataset`, `merge_datasets`,
`split_dataset` write new datasets; see ``docs/episodes.md``.

Example:
  >>> from rlds_lite import catalog, synthetic
  >>> path = synthetic.dataset(num_episodes=6, seed=0)
  >>> table = catalog.episodes(path, progress=False)
  >>> table.select('length > 20').sort('return')['index'].tolist()
  [3, 1, 4, 2]
"""

from rlds_lite.catalog.build import episodes
from rlds_lite.catalog.expression import ExpressionError
from rlds_lite.catalog.expression import parse as parse_expression
from rlds_lite.catalog.table import Catalog
from rlds_lite.catalog.rewrite import filter_dataset
from rlds_lite.catalog.rewrite import merge_datasets
from rlds_lite.catalog.rewrite import split_dataset
