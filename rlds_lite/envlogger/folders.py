"""The episodes of a writer folder (`folder_episodes`): what every reader reads, after a kill too.

Why the cut-off episode is dropped: docs/guarantees.md ("Recordings: the
cut-off episode is dropped").
"""

import os
from typing import Any, Dict, List, Tuple

import dm_env

from rlds_lite.envlogger import files
from rlds_lite.envlogger import riegeli_files
from rlds_lite.envlogger.compat import CorruptRecordingError

Bounds = Tuple[Tuple[int, int], ...]
"""``(first timestep, number of timesteps)`` of each episode of a folder."""

_FIRST = int(dm_env.StepType.FIRST)


def _step_type(native: Any, step: int, folder: str, episode: int,
               start: int) -> int:
  """The ``dm_env.StepType`` of timestep ``step`` of the folder (timestep
  ``step - start`` of its episode ``episode``)."""
  from envlogger.converters import codec  # pylint: disable=g-import-not-at-top
  from envlogger.proto import storage_pb2  # pylint: disable=g-import-not-at-top
  try:
    data = storage_pb2.Data.FromString(native.serialized_step(step))
    return int(codec.decode(data.tuple.values[0].tuple.values[0]))
  except Exception as e:  # pylint: disable=broad-except
    raise CorruptRecordingError(
        f'Cannot read timestep {step - start} of episode {episode} from '
        f'{os.path.join(folder, files.SHARD_FILES[0])} (or its '
        f'{files.SHARD_FILES[1]}): the file is truncated or corrupt '
        f'({e!r}).') from e


def _listed(native: Any, folder: str,
            extents: Dict[str, riegeli_files.Extent]) -> List[Tuple[int, int]]:
  """The index's episodes, checked against the step offsets and the files."""
  num_steps = native.num_steps
  offsets = extents[files.SHARD_FILES[1]]
  index = extents[files.SHARD_FILES[3]]
  index_path = os.path.join(folder, files.SHARD_FILES[3])
  # Every record EnvLogger writes there lists >= 1 offset or episode: fewer
  # means a whole chunk that does not read (damaged data, not a kill).
  if num_steps < offsets.records:
    raise CorruptRecordingError(
        f'EnvLogger file {os.path.join(folder, files.SHARD_FILES[1])} is '
        f'corrupt: EnvLogger reads {num_steps} step offsets from its '
        f'{offsets.records} records.')
  if native.num_episodes < index.records:
    raise CorruptRecordingError(
        f'EnvLogger file {index_path} is corrupt: EnvLogger reads '
        f'{native.num_episodes} episodes from its {index.records} records.')
  starts = [native.episode(i, False).start for i in range(native.num_episodes)]
  if starts and (starts[0] != 0 or
                 any(b <= a for a, b in zip(starts, starts[1:])) or
                 starts[-1] >= num_steps):
    raise CorruptRecordingError(
        f'EnvLogger files {index_path} and {files.SHARD_FILES[1]} disagree: '
        f'the {len(starts)} indexed episodes do not cover the {num_steps} '
        'listed timesteps; one of the files is corrupt.')
  stops = starts[1:] + [num_steps]
  return [(a, b - a) for a, b in zip(starts, stops)]


def folder_episodes(native: Any, folder: str,
                    extents: Dict[str, riegeli_files.Extent]) -> Bounds:
  """The episodes every reader reads from a writer folder.

  Args:
    native: EnvLogger's ``RiegeliDatasetReader`` over the folder
      (`files.open_native`).
    folder: the folder's path (for messages).
    extents: its files' extents (`files.recording_folders`).

  Returns:
    ``((first timestep, number of timesteps), ...)`` of the episodes its
    index lists, the last one cut before the next FIRST timestep.

  Example (not run here: it needs a recording)::

    with files.open_native(data_dir, folder) as native:
      bounds = folder_episodes(native, folder)  # ((start, length), ...)
  """
  bounds = _listed(native, folder, extents)
  num_steps = native.num_steps
  # The last listed episode ends at the first reset after its start; with
  # no episode listed, every timestep is unlisted.
  episode, start = (len(bounds) - 1, bounds[-1][0]) if bounds else (0, 0)
  index_path = os.path.join(folder, files.SHARD_FILES[3])
  if bounds and _step_type(native, start, folder, episode, start) != _FIRST:
    raise CorruptRecordingError(
        f'EnvLogger file {index_path} is corrupt: episode {episode} does not '
        'start with a reset (FIRST) timestep.')
  end, unfinished = num_steps, 0
  for step in range(start + 1 if bounds else 0, num_steps):
    if _step_type(native, step, folder, episode, start) == _FIRST:
      end, unfinished = min(end, step), unfinished + 1
      episode, start = episode + bool(step), step
    elif step == 0:
      raise CorruptRecordingError(
          f'EnvLogger file {os.path.join(folder, files.SHARD_FILES[0])} is '
          'corrupt: the first timestep of the folder is not a reset (FIRST).')
  if bounds and not unfinished and extents[files.SHARD_FILES[1]].problem:
    # Killed while writing the offsets, the writer wrote no index after
    # them, so the next episode's reset would follow the last listed one.
    raise CorruptRecordingError(
        f'EnvLogger files {index_path} and {files.SHARD_FILES[1]} disagree: '
        f'the index lists episode {episode} as the last one, which the '
        'truncated step offsets may not cover; one of the files is corrupt.')
  if bounds:
    bounds[-1] = (bounds[-1][0], end - bounds[-1][0])
  dropped = num_steps - end
  if dropped:
    files.warn_recovered(
        f'EnvLogger writer folder {folder} ends with {dropped} timestep(s) of '
        f'{unfinished} episode(s) after the last episode its index lists '
        '(its writer was killed, or is still recording, before it listed '
        'them): they were dropped.')
  return tuple(bounds)
