"""Know your data: statistics of RLDS datasets in one streaming pass.

`compute` (per-field moments, min, max and sketched quantiles, episode
lengths, returns and endings; cached next to the dataset), `DatasetStats` and
`FieldStats` (typed, mergeable: `merge`), `normalize` / `denormalize`,
`plot_stats`, `QuantileSketch`. docs/stats.md says what each computes.

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
