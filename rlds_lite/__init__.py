"""rlds_lite: fast, dependable RLDS episodic data on tf.data; names imported on first use.

Example:
  >>> import rlds_lite as rlds
  >>> rlds.STEPS, rlds.IS_LAST, rlds.metadata.EPISODE_ID
  ('steps', 'is_last', 'episode_id')
"""

from typing import Any, List, TYPE_CHECKING

from rlds_lite import lazy_names

__version__ = '0.1.0'

_SUBMODULES = ('metadata', 'rlds_types', 'transformations', 'dense',
               'images', 'pipeline', 'synthetic', 'stats', 'catalog',
               'checks', 'video', 'random_access')
"""Submodules that are attributes of the package (as if imported here)."""

_NAMES = {
    'validate': 'checks',
    'ValidationReport': 'checks',
    'episode_to_video': 'video',
    'load': 'loading',
    'open': 'source',
    'Source': 'source',
    'RobotSamples': 'sample_kinds',
    'Transitions': 'sample_kinds',
    'Windows': 'sample_kinds',
    'FrameDecoding': 'pipeline.robot_samples',
    'Pooling': 'pipeline.pools',
    'ShuffleKnobs': 'pipeline.shuffling',
    'CorruptDatasetError': 'dataset_files',
    'LastStep': 'dense.last_step',
    'LastStepValuesWarning': 'dense.last_step',
    'AGENT_ID': 'metadata',
    'ENVIRONMENT_CONFIG': 'metadata',
    'EPISODE_ID': 'metadata',
    'EXPERIMENT_ID': 'metadata',
    'INVALID': 'metadata',
    'ACTION': 'rlds_types',
    'ALIGNMENT': 'rlds_types',
    'BatchedEpisode': 'rlds_types',
    'BatchedStep': 'rlds_types',
    'build_episode': 'rlds_types',
    'build_step': 'rlds_types',
    'CORE_STEP_FIELDS': 'rlds_types',
    'DISCOUNT': 'rlds_types',
    'Episode': 'rlds_types',
    'EpisodeFilterFn': 'rlds_types',
    'IS_FIRST': 'rlds_types',
    'IS_LAST': 'rlds_types',
    'IS_TERMINAL': 'rlds_types',
    'MANDATORY_STEP_FIELDS': 'rlds_types',
    'OBSERVATION': 'rlds_types',
    'REWARD': 'rlds_types',
    'Step': 'rlds_types',
    'StepFilterFn': 'rlds_types',
    'StepMapFn': 'rlds_types',
    'STEPS': 'rlds_types',
    'StepsToStepsFn': 'rlds_types',
    'is_valid_rlds_dataset': 'validation',
    'RLDSFormatError': 'validation',
    'validate_episodes': 'validation',
}
"""Public names of the package and the submodule that defines each."""

__all__ = sorted(_SUBMODULES + tuple(_NAMES)) + ['__version__']


def __getattr__(name: str) -> Any:
  """Imports a public name (or any submodule) on first use."""
  return lazy_names.attribute(__name__, _NAMES, name)


def __dir__() -> List[str]:
  return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # For type checkers and IDEs: the same names, eagerly.
  # pylint: disable=g-import-not-at-top,g-bad-import-order
  from rlds_lite import checks, dense, images, metadata, pipeline, rlds_types
  from rlds_lite import catalog, stats, synthetic, transformations, video
  from rlds_lite import random_access
  from rlds_lite.checks import validate, ValidationReport
  from rlds_lite.video import episode_to_video
  from rlds_lite.loading import load
  from rlds_lite.source import open, Source  # pylint: disable=redefined-builtin
  from rlds_lite.sample_kinds import RobotSamples, Transitions, Windows
  from rlds_lite.pipeline.pools import Pooling
  from rlds_lite.pipeline.robot_samples import FrameDecoding
  from rlds_lite.pipeline.shuffling import ShuffleKnobs
  from rlds_lite.dataset_files import CorruptDatasetError
  from rlds_lite.dense.last_step import LastStep, LastStepValuesWarning
  from rlds_lite.metadata import (AGENT_ID, ENVIRONMENT_CONFIG, EPISODE_ID,
                                  EXPERIMENT_ID, INVALID)
  from rlds_lite.rlds_types import (
      ACTION, ALIGNMENT, BatchedEpisode, BatchedStep, build_episode,
      build_step, CORE_STEP_FIELDS, DISCOUNT, Episode, EpisodeFilterFn,
      IS_FIRST, IS_LAST, IS_TERMINAL, MANDATORY_STEP_FIELDS, OBSERVATION,
      REWARD, Step, StepFilterFn, StepMapFn, STEPS, StepsToStepsFn)
  from rlds_lite.validation import (is_valid_rlds_dataset, RLDSFormatError,
                                    validate_episodes)
