"""Know your data: statistics of RLDS datasets in one streaming pass.

- `compute`: per-field count, mean, std, min, max and approximate quantiles
  (p01, p50, p99; a mergeable bounded-memory sketch), episode lengths and
  returns, terminated vs truncated counts; cached next to the dataset. NaN
  and infinite values are counted (`FieldStats.nan_count`, `inf_count`),
  left out of the other statistics and named once in a
  `NonFiniteValuesWarning`.
- `DatasetStats`, `FieldStats`: typed, JSON-serialisable, mergeable results;
  `merge` combines the statistics of several datasets.
- `normalize`, `denormalize`: dataset transforms (Gaussian or bounds).
- `plot_stats`: a PNG of returns, lengths and per-dimension distributions.
- `QuantileSketch`: the quantile sketch itself.

Example:
  >>> from rlds_lite import stats, synthetic
  >>> s = stats.compute(synthetic.episodes(num_episodes=4, seed=0),
  ...                   progress=False)
  >>> s.num_episodes, s['action'].shape
  (4, (2,))
"""

from rlds_lite.stats.streaming import compute
from rlds_lite.stats.streaming import Transform
from rlds_lite.stats.normalize import denormalize
from rlds_lite.stats.normalize import normalize
from rlds_lite.stats.plot import plot_stats
from rlds_lite.stats.plot import PlotWarning
from rlds_lite.stats.sketch import QuantileSketch
from rlds_lite.stats.types import DatasetStats
from rlds_lite.stats.types import FieldStats
from rlds_lite.stats.types import merge
from rlds_lite.stats.types import NonFiniteValuesWarning
from rlds_lite.stats.types import QUANTILES
