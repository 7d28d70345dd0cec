"""Record dm_env episodes with EnvLogger and read them back, on today's stack.

`record` writes an EnvLogger (riegeli) recording, `read_episodes` and
`validate_recording` read and check it; crashes, appends and overwrites:
docs/guarantees.md ("Recordings"), the files: docs/recording.md.

Example:
  >>> import tempfile
  >>> from rlds_lite import envs
  >>> from rlds_lite import envlogger
  >>> tmp = tempfile.TemporaryDirectory()
  >>> env = envs.make('catch', seed=0)
  >>> summary = envlogger.record(env, env.expert_policy, tmp.name, 2, seed=0,
  ...                            progress=False)
  >>> summary.num_episodes, summary.num_steps, summary.returns
  (2, 20, (1.0, 1.0))
  >>> [e['episode_metadata']['episode_id'].item() for e in
  ...  envlogger.read_episodes(tmp.name)]
  [0, 1]
  >>> tmp.cleanup()
"""

from rlds_lite.envlogger.compat import CorruptRecordingError
from rlds_lite.envlogger.compat import EnvLoggerUnavailableError
from rlds_lite.envlogger.compat import import_envlogger
from rlds_lite.envlogger.compat import patch_numpy_for_envlogger
from rlds_lite.envlogger.compat import RecoveredRecordingWarning
from rlds_lite.envlogger.compat import SUPPORTED_ENVLOGGER
from rlds_lite.envlogger.files import METADATA_FILE
from rlds_lite.envlogger.files import SHARD_FILES
from rlds_lite.envlogger.files import validate_recording
from rlds_lite.envlogger.reading import as_metadata_dict
from rlds_lite.envlogger.reading import read_episodes
from rlds_lite.envlogger.recording import COMPRESSIONS
from rlds_lite.envlogger.recording import record
from rlds_lite.envlogger.recording import RECORDER_KEY
from rlds_lite.envlogger.recording import RecordingOptions
from rlds_lite.envlogger.recording import RecordingSummary
from rlds_lite.envlogger.staging import finish_overwrite
from rlds_lite.envlogger.staging import RecordingLockedError

__all__ = [
    'COMPRESSIONS',
    'CorruptRecordingError',
    'EnvLoggerUnavailableError',
    'METADATA_FILE',
    'RECORDER_KEY',
    'RecordingLockedError',
    'RecordingOptions',
    'RecordingSummary',
    'RecoveredRecordingWarning',
    'SHARD_FILES',
    'SUPPORTED_ENVLOGGER',
    'as_metadata_dict',
    'finish_overwrite',
    'import_envlogger',
    'patch_numpy_for_envlogger',
    'read_episodes',
    'record',
    'validate_recording',
]
