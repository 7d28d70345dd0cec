"""Write RLDS datasets in the TFDS format: configs, writers, builders, EnvLogger.

- `generate_config_from_spec`, `extract_feature_from_data`: upstream-compatible
  feature inference (RGB/top-level images detected, float64 kept exact).
- `EpisodeWriter`, `write_dataset`: write episodes (columnar dicts, RLDS
  episodes or a whole episodes ``tf.data.Dataset``) as a TFDS dataset,
  published atomically; several splits; appending.
- `features_from_episode`: the features of a dataset from one example
  episode (what `EpisodeWriter` does when given an episode as features).
- `RLDSBuilder`, `RLDSConfig`: TFDS builders configured, not programmed;
  ``tfds build`` works on them; Beam optional.
- `build_from_envlogger`: EnvLogger recordings -> TFDS dataset, exact RLDS
  alignment, with or without Beam.
- `locking`, `publish`, `leftovers`: how every writer publishes (one lock per
  dataset, everything flushed, one atomic switch, leftovers of dead writers
  removed); ``docs/guarantees.md`` lists the promises and their tests.

Example:
  >>> import tempfile
  >>> import numpy as np
  >>> from rlds_lite import tfds as rlds_tfds
  >>> features = {'steps': {'observation': np.zeros(2, np.float64)}}
  >>> with rlds_tfds.EpisodeWriter(tempfile.mkdtemp(), 'toy', features) as w:
  ...   w.add_episode({'steps': {'observation': np.ones((3, 2)),
  ...                            'is_terminal': [False, False, True]}})
  >>> w.features['steps'].feature['observation'].to_json_content().encoding
  'bytes'
"""

from rlds_lite.tfds.builder import RLDSBuilder
from rlds_lite.tfds.builder import RLDSConfig
from rlds_lite.tfds.config_generator import extract_feature_from_data
from rlds_lite.tfds.config_generator import generate_config_from_spec
from rlds_lite.tfds.encoding import EpisodeEncoder
from rlds_lite.tfds.envlogger_build import build_from_envlogger
from rlds_lite.tfds.envlogger_episodes import find_recordings
from rlds_lite.tfds.envlogger_episodes import read_rlds_episodes
from rlds_lite.tfds.episode_writer import EpisodeWriter
from rlds_lite.tfds.episode_writer import write_dataset
from rlds_lite.tfds.features import episode_features
from rlds_lite.tfds.features import features_from_config
from rlds_lite.tfds.features import features_from_env_specs
from rlds_lite.tfds.features import features_from_episode
from rlds_lite.tfds.features import is_example_episode
from rlds_lite.tfds.features import rlds_features
