"""Write RLDS datasets in the TFDS format: configs, writers, builders, EnvLogger.

`EpisodeWriter` / `write_dataset` (with `FileOptions`, `DatasetCard`) write
episodes, `features_from_episode` and `generate_config_from_spec` infer
features, `RLDSBuilder` / `RLDSConfig` are configured TFDS builders and
`build_from_envlogger` builds from recordings; see ``docs/recording.md`` and,
for publishing and crashes, ``docs/guarantees.md``.

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

from typing import Any

from rlds_lite import lazy_names

_NAMES = {
    'RLDSBuilder': 'builder',
    'RLDSConfig': 'builder',
    'extract_feature_from_data': 'config_generator',
    'generate_config_from_spec': 'config_generator',
    'EpisodeEncoder': 'encoding',
    'Beam': 'envlogger_build',
    'build_from_envlogger': 'envlogger_build',
    'find_recordings': 'envlogger_episodes',
    'read_rlds_episodes': 'envlogger_episodes',
    'DatasetCard': 'episode_writer',
    'EpisodeWriter': 'episode_writer',
    'FileOptions': 'episode_writer',
    'write_dataset': 'episode_writer',
    'episode_features': 'features',
    'features_from_config': 'features',
    'features_from_env_specs': 'features',
    'features_from_episode': 'features',
    'is_example_episode': 'features',
    'rlds_features': 'features',
}
"""Public names and their module, imported on first use (PEP 562): the file
protocol (``publish``, ``locking``, ``shards``, ...) sits below the readers,
the writers and builders above them, and importing one must not run the other."""

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
  """A public name (or a submodule), imported on first use."""
  return lazy_names.attribute(__name__, _NAMES, name)
