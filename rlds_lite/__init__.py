"""rlds_lite: fast, dependable RLDS episodic data on tf.data.

A drop-in for Google's RLDS: ``import rlds_lite as rlds`` and RLDS code keeps
working, on today's TensorFlow and without dm-reverb.

Example:
  >>> import rlds_lite as rlds
  >>> rlds.STEPS, rlds.IS_LAST, rlds.metadata.EPISODE_ID
  ('steps', 'is_last', 'episode_id')
"""

from rlds_lite import metadata
from rlds_lite import rlds_types
from rlds_lite import transformations
from rlds_lite import dense
from rlds_lite import images
from rlds_lite import pipeline
from rlds_lite import synthetic
from rlds_lite import stats
from rlds_lite import checks
from rlds_lite import video
from rlds_lite.checks import validate
from rlds_lite.checks import ValidationReport
from rlds_lite.video import episode_to_video
from rlds_lite.loading import load
from rlds_lite.metadata import AGENT_ID
from rlds_lite.metadata import ENVIRONMENT_CONFIG
from rlds_lite.metadata import EPISODE_ID
from rlds_lite.metadata import EXPERIMENT_ID
from rlds_lite.metadata import INVALID
from rlds_lite.rlds_types import ACTION
from rlds_lite.rlds_types import ALIGNMENT
from rlds_lite.rlds_types import BatchedEpisode
from rlds_lite.rlds_types import BatchedStep
from rlds_lite.rlds_types import build_episode
from rlds_lite.rlds_types import build_step
from rlds_lite.rlds_types import CORE_STEP_FIELDS
from rlds_lite.rlds_types import DISCOUNT
from rlds_lite.rlds_types import Episode
from rlds_lite.rlds_types import IS_FIRST
from rlds_lite.rlds_types import IS_LAST
from rlds_lite.rlds_types import IS_TERMINAL
from rlds_lite.rlds_types import MANDATORY_STEP_FIELDS
from rlds_lite.rlds_types import OBSERVATION
from rlds_lite.rlds_types import REWARD
from rlds_lite.rlds_types import Step
from rlds_lite.rlds_types import STEPS
from rlds_lite.validation import is_valid_rlds_dataset
from rlds_lite.validation import RLDSFormatError
from rlds_lite.validation import validate_episodes

__version__ = '0.1.0'
