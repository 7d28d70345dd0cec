"""Record dm_env episodes with EnvLogger and read them back, on today's stack.

EnvLogger 1.3's wheel needs glibc >= 2.38 and EnvLogger 1.2 uses `np.unicode_`
/ `np.string_`, which NumPy 2 removed. rlds_lite pins `envlogger==1.2` and
`import_envlogger()` defines those two aliases (only if missing) before
loading it, or raises `EnvLoggerUnavailableError` naming the cause.

A recording (EnvLogger's riegeli backend) is a directory with
`metadata.riegeli` (dataset metadata and the environment specs) and one
timestamped folder per writer holding `steps.riegeli`, `step_offsets.riegeli`,
`episode_metadata.riegeli` and `episode_index.riegeli`.

Recordings survive crashes: `record` flushes as each episode starts, so a
crash (even SIGKILL) loses at most the episode in progress; every reader
(`read_episodes`, `validate_recording`, `rlds_lite.tfds.build_from_envlogger`)
reads what a killed writer left as EnvLogger's own reader does, dropping the
unfinished episode with a `RecoveredRecordingWarning`; `record(if_exists='append')`
and `record(if_exists='overwrite')` never destroy the recording that was there
before the new data is complete (see docs/guarantees.md).

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
