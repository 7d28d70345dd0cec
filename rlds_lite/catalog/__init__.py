"""The episode catalog: list, select, filter, merge and split episodes.

- `episodes(path, split)`: a `Catalog` (one row per episode: index,
  episode_id, length, return, terminated/truncated, language instructions,
  scalar episode metadata, shard and record), built in one streaming pass and
  cached next to the dataset.
- `Catalog`: NumPy columns, rows as dicts, `select` (an EXPR such as
  ``'length > 20 and terminated'``), `sort`, `to_records`.
- `parse_expression` / `ExpressionError`: the EXPR grammar (docs/episodes.md).
- ``rlds_lite.load(path, episodes=...)`` reads only the chosen episodes.
- `filter_dataset`, `merge_datasets`, `split_dataset`: write new datasets of
  chosen episodes (records copied as they are; train/validation splits by
  episode), published atomically.

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
