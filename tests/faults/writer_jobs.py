"""Writers the fault tests run in forked processes, and what readers check.

Every episode says who it is: episode ``i`` of dataset version ``v`` has 3
steps whose observations are ``[i, v]`` and rewards ``v``, and metadata
``episode_id=i``, ``version=v``. `read_episodes` reads a dataset back and
checks every value against those labels, so a reader can tell exactly
which episodes of which version it saw.
"""

import os
import time
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow_datasets as tfds

import rlds_lite
from rlds_lite.tfds import EpisodeWriter
from rlds_lite.tfds import FileOptions

NAME = 'faulty'
STEPS = 3


def features() -> Dict:
  return {'steps': {'observation': tfds.features.Tensor(shape=(2,),
                                                        dtype=np.float32),
                    'reward': np.float32},
          'episode_id': np.int64, 'version': np.int64}


def episode(episode_id: int, version: int) -> Dict:
  index = np.arange(STEPS)
  return {'steps': {
      'observation': np.tile(np.float32([episode_id, version]), (STEPS, 1)),
      'reward': np.full(STEPS, version, np.float32),
      'is_first': index == 0, 'is_last': index == STEPS - 1,
      'is_terminal': index == STEPS - 1},
          'episode_id': np.int64(episode_id), 'version': np.int64(version)}


def episodes_of_version(version: int) -> List[int]:
  """The episode ids an overwrite to ``version`` writes (2 to 4 of them)."""
  return list(range(2 + version % 3))


def write(data_dir: str, ids: Sequence[int], version: int,
          if_exists: str = 'error', sessions: int = 1,
          max_episodes_per_file: int = 2,
          lock_timeout: Optional[float] = None) -> None:
  """Writes episodes ``ids`` of ``version``, in ``sessions`` writer sessions.

  The first session uses ``if_exists``, the others append.
  """
  chunks = np.array_split(np.asarray(ids, int), sessions)
  options = {} if lock_timeout is None else {'lock_timeout': lock_timeout}
  for k, chunk in enumerate(chunks):
    with EpisodeWriter(data_dir, NAME, features(),
                       if_exists=if_exists if k == 0 else 'append',
                       options=FileOptions(
                           max_episodes_per_file=max_episodes_per_file),
                       **options) as writer:
      for i in chunk:
        writer.add_episode(episode(int(i), version))


def overwrite_versions(data_dir: str, versions: Sequence[int],
                       pause: float = 0, passes: Optional[str] = None,
                       timeout: float = 60) -> None:
  """Overwrites the dataset once per version (`episodes_of_version`).

  With ``passes`` (a directory where a reader creates one file per pass it
  ends), each overwrite waits until a reader pass ended after the previous
  one: overwrites keep racing with passes, however slow the machine, but a
  pass outlives at most one overwrite.
  """
  for version in versions:
    ended = len(os.listdir(passes)) if passes else 0
    write(data_dir, episodes_of_version(version), version,
          if_exists='overwrite')
    time.sleep(pause)
    deadline = time.monotonic() + timeout
    while (passes and len(os.listdir(passes)) <= ended and
           time.monotonic() < deadline):
      time.sleep(0.01)


def hold(data_dir: str, ready: str, release: str, episode_id: int = 999,
         timeout: float = 60) -> None:
  """Opens an appending writer, signals ``ready``, publishes on ``release``."""
  with EpisodeWriter(data_dir, NAME, features(), if_exists='append') as writer:
    writer.add_episode(episode(episode_id, 1))
    open(ready, 'w').close()
    deadline = time.monotonic() + timeout
    while not os.path.exists(release) and time.monotonic() < deadline:
      time.sleep(0.01)


def read_episodes(dataset, check: bool = True) -> List[Tuple[int, int]]:
  """``(episode_id, version)`` of every episode of a dense episodes dataset.

  Raises AssertionError if any value does not match its episode's labels.
  """
  seen = []
  for e in dataset.as_numpy_iterator():
    episode_id, version = int(e['episode_id']), int(e['version'])
    if check:
      np.testing.assert_array_equal(
          e['steps']['observation'],
          np.tile(np.float32([episode_id, version]), (STEPS, 1)))
      np.testing.assert_array_equal(e['steps']['reward'],
                                    np.full(STEPS, version, np.float32))
    seen.append((episode_id, version))
  return seen


def load(data_dir: str) -> List[Tuple[int, int]]:
  """`read_episodes` of ``data_dir/NAME``, loaded as a reader does."""
  return read_episodes(rlds_lite.load(os.path.join(data_dir, NAME),
                                      dense=True))


def build_from_recording(recording: str, data_dir: str) -> None:
  """`build_from_envlogger` of a recording into ``data_dir/recorded``."""
  from rlds_lite.tfds import build_from_envlogger  # pylint: disable=g-import-not-at-top
  build_from_envlogger(recording, name='recorded', data_dir=data_dir)


def _slow_episodes(split: str):
  del split
  for i in range(1000):
    if i == 3 and 'RLDS_LITE_TEST_READY' in os.environ:
      open(os.environ['RLDS_LITE_TEST_READY'], 'w').close()
    time.sleep(0.01)
    yield episode(i, 1)


def slow_builder_class():
  """An `RLDSBuilder` whose episodes come slowly (a build to kill)."""
  from rlds_lite.tfds import RLDSBuilder, RLDSConfig  # pylint: disable=g-import-not-at-top,g-multiple-import

  class SlowBuild(RLDSBuilder, skip_registration=True):
    RLDS_CONFIG = RLDSConfig(features=features(), episodes_fn=_slow_episodes,
                             max_episodes_per_file=2)
  return SlowBuild


def build_slowly(data_dir: str) -> None:
  """Prepares `slow_builder_class` in ``data_dir`` (signals ready at 3)."""
  slow_builder_class()(data_dir=data_dir).download_and_prepare()
