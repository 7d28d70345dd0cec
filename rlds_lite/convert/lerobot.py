"""LeRobot datasets (LeRobotDataset v3.0) to RLDS Episodes and back.

`to_lerobot` writes one RLDS step as one LeRobot frame (and records in
info.json where each feature came from, so `from_lerobot` restores it
exactly); `from_lerobot` also reads datasets lerobot wrote (v2.0 to v3.0).
The mapping, and what LeRobot cannot say (termination vs truncation, the
last step's values): docs/convert_lerobot.md.

Example:
  >>> import tempfile, numpy as np
  >>> from rlds_lite.convert import episodes as episodes_lib
  >>> steps = {'observation': {'state': np.arange(6, dtype=np.float32).reshape(3, 2)},
  ...          'action': np.ones((3, 1), np.float32),
  ...          'reward': np.array([0., 1., 0.], np.float32),
  ...          'language_instruction': np.array([b'push'] * 3, object),
  ...          **episodes_lib.rlds_flags(3, terminated=True)}
  >>> root = to_lerobot([{'steps': steps}], tempfile.mkdtemp() + '/push', fps=10)
  >>> episode = next(from_lerobot(root))
  >>> episode['steps']['observation']['state'][2].tolist(), bool(episode['steps']['is_terminal'][-1])
  ([4.0, 5.0], True)
  >>> episode['steps']['language_instruction'][0], episode['steps']['action'].shape
  (b'push', (3, 1))
"""

import contextlib
import dataclasses
import glob
import json
import os
import re
from typing import (Any, Dict, Iterable, Iterator, List, NamedTuple, Optional,
                    Sequence, Tuple, Union)

import numpy as np

from rlds_lite import option_objects
from rlds_lite import atomic_output
from rlds_lite import nest_paths
from rlds_lite import overwriting
from rlds_lite import rlds_types
from rlds_lite.convert import episodes as episodes_lib
from rlds_lite.convert import input_checks
from rlds_lite.convert import lerobot_layout as layout
from rlds_lite.convert import lerobot_stats as stats_lib
from rlds_lite.convert import lerobot_video as video_lib
from rlds_lite.convert import transitions

ConversionError = episodes_lib.ConversionError
Feature = layout.Feature
read_info = layout.read_info



class _DefaultTaskKey(str):
  """The default ``task_key``: used where present, optional where absent.

  A ``str`` of its own class, so ``task_key is DEFAULT_TASK_KEY`` tells the
  default apart from a caller's explicit ``'language_instruction'``, which,
  like any explicit key, must be a step field.
  """


DEFAULT_TASK_KEY = _DefaultTaskKey('language_instruction')
TERMINAL_COLUMN = 'rlds/is_terminal'
METADATA_PREFIX = 'rlds/metadata/'
_FLAGS = frozenset(transitions.FLAG_FIELDS)
_META_BUFFER = 10  # Episode rows per row group of meta/episodes (lerobot's).
_MIN_IMAGE_SIDE = 16
_REPO_ID = re.compile(r'^[\w.-]+/[\w.-]+$')
_LEROBOT_COLUMNS = frozenset({
    'episode_index', 'tasks', 'length', 'data/chunk_index', 'data/file_index',
    'dataset_from_index', 'dataset_to_index', 'meta/episodes/chunk_index',
    'meta/episodes/file_index'})


@dataclasses.dataclass(frozen=True)
class Storage:
  """How `to_lerobot` stores a dataset: cameras, codec and file rolling.

  Attributes:
    video: cameras as MP4 video (lerobot's default) or, with False, as PNG
      images in the Parquet files (lossless, larger).
    video_keys: the step fields (paths or dotted names) that are cameras;
      None: every uint8 ``[H, W, 3]`` field with sides of 16 or more.
    vcodec: ``'libsvtav1'`` (AV1, lerobot's default), ``'h264'`` or
      ``'hevc'``.
    chunks_size: files per chunk directory (lerobot's setting).
    data_files_size_in_mb, video_files_size_in_mb: the size at which a
      Parquet or MP4 file rolls to the next (lerobot's settings).

  Example:
    >>> Storage(video=False)
    Storage(video=False)
  """
  video: bool = True
  video_keys: Optional[Sequence[str]] = None
  vcodec: str = video_lib.DEFAULT_VCODEC
  chunks_size: int = layout.DEFAULT_CHUNKS_SIZE
  data_files_size_in_mb: float = layout.DEFAULT_DATA_FILES_SIZE_IN_MB
  video_files_size_in_mb: float = layout.DEFAULT_VIDEO_FILES_SIZE_IN_MB

  def __repr__(self) -> str:
    return option_objects.short_repr(self)

  def _info_options(self, robot_type: Optional[str]) -> Dict[str, Any]:
    """The keywords of `lerobot_layout.new_info` this storage sets."""
    return dict(video=self.video, robot_type=robot_type,
                chunks_size=self.chunks_size,
                data_files_size_in_mb=self.data_files_size_in_mb,
                video_files_size_in_mb=self.video_files_size_in_mb)


_STORAGE_FIELDS = frozenset(f.name for f in dataclasses.fields(Storage))


class _Options(NamedTuple):
  """One `to_lerobot` call's options, checked (for `_DatasetWriter`)."""
  fps: int
  task_key: Optional[str]
  default_task: str
  robot_type: Optional[str]
  names: Dict[str, Any]
  storage: Storage


def _storage(storage: Optional[Storage], legacy: Dict[str, Any]) -> Storage:
  """The `Storage` of a call, from the flat keywords of before it too."""
  unknown = sorted(set(legacy) - _STORAGE_FIELDS)
  if unknown:
    raise TypeError(f'to_lerobot() got an unexpected keyword argument '
                    f'{unknown[0]!r}')
  if not legacy:
    return Storage() if storage is None else storage
  if storage is not None:
    raise TypeError(f'to_lerobot: pass {sorted(legacy)} in storage='
                    'Storage(...), not beside it.')
  old = ', '.join(f'{key}=' for key in sorted(legacy))
  option_objects.warn_once(
      ('to_lerobot', 'storage'), f'to_lerobot: {old} are now '
      'storage=Storage(...); the old keywords will go in a later release.')
  return Storage(**legacy)


def _pq():
  layout._pa()  # pylint: disable=protected-access
  import pyarrow.parquet as pq  # pylint: disable=g-import-not-at-top
  return pq


def lerobot_home() -> str:
  """``$HF_LEROBOT_HOME``, else ``$HF_HOME/lerobot`` (lerobot's default root).

  Example:
    >>> import os
    >>> os.environ['HF_LEROBOT_HOME'] = '/data/lerobot'
    >>> lerobot_home()
    '/data/lerobot'
    >>> del os.environ['HF_LEROBOT_HOME']
  """
  if os.environ.get('HF_LEROBOT_HOME'):
    return os.path.expanduser(os.environ['HF_LEROBOT_HOME'])
  hf_home = os.environ.get('HF_HOME',
                           os.path.join('~', '.cache', 'huggingface'))
  return os.path.join(os.path.expanduser(hf_home), 'lerobot')


# RLDS -> LeRobot.


def _feature_name(path: str, leaf: np.ndarray) -> str:
  """``reward`` -> ``next.reward``; a bare observation -> LeRobot's
  ``observation.state`` (``observation.image`` for a camera); else dots."""
  if path == rlds_types.REWARD:
    return 'next.reward'
  if path == rlds_types.OBSERVATION:
    return 'observation.image' if _is_image(leaf) else 'observation.state'
  return path.replace('/', '.')


def _is_image(leaf: np.ndarray, min_side: int = _MIN_IMAGE_SIDE) -> bool:
  """uint8 ``[T, H, W, 3]`` with sides of ``min_side`` or more."""
  return (leaf.dtype == np.uint8 and leaf.ndim == 4 and leaf.shape[-1] == 3
          and min(leaf.shape[1:3]) >= min_side)


def _plan_features(steps: Dict[str, Any], *, task_key: Optional[str],
                   video: bool, video_keys: Optional[Sequence[str]],
                   names: Dict[str, Any], source: str
                   ) -> Tuple[List[Feature], Optional[str]]:
  """The LeRobot features of the first episode's steps, and the task path."""
  leaves = dict(nest_paths.flatten_with_paths(steps))
  task_path = task_key if task_key in leaves else None
  if task_path is None and task_key is not None and (
      task_key is not DEFAULT_TASK_KEY):
    fields = sorted(path for path in leaves if path not in _FLAGS)
    raise ValueError(f'to_lerobot: task_key={task_key!r} is not a step '
                     f'field; the step fields are {fields}')
  cameras = None
  if video_keys is not None:
    cameras = {k.replace('.', '/') if k not in leaves else k
               for k in video_keys}
    unknown = sorted(cameras - set(leaves))
    if unknown:
      raise ValueError(f'to_lerobot: video_keys {unknown} are not step '
                       f'fields; the step fields are {sorted(leaves)}')
  features, by_name = [], {}
  for path, leaf in leaves.items():
    if path in _FLAGS or path == task_path:
      continue
    leaf = np.asarray(leaf)
    name = _feature_name(path, leaf)
    where = {'source': source, 'episode': 0, 'field': path}
    if name in layout.RESERVED:
      raise ConversionError(
          f'would be the LeRobot feature {name!r}, which LeRobot keeps for '
          'itself; rename the field', **where)
    if name in by_name:
      raise ConversionError(
          f'and {by_name[name]!r} would both be the LeRobot feature {name!r}',
          **where)
    by_name[name] = path
    step_shape = tuple(leaf.shape[1:])
    shape = step_shape or (1,)
    feature_names = names.get(name, names.get(path))
    if (cameras is not None and path in cameras) or (
        cameras is None and _is_image(leaf)):
      if not _is_image(leaf, min_side=1):
        raise ConversionError(
            f'is {leaf.dtype} of per-step shape {list(step_shape)}; a camera '
            'needs uint8 [H, W, 3]', **where)
      kind, dtype = ('video' if video else 'image'), 'uint8'
    elif leaf.dtype.kind in 'OSU':
      if leaf.ndim != 1:
        raise ConversionError(
            f'holds strings of per-step shape {list(step_shape)}; LeRobot '
            'string features hold one string a frame', **where)
      kind, dtype, shape = 'string', 'string', (1,)
    elif leaf.dtype.kind in 'biuf':
      kind, dtype = 'value', leaf.dtype.name
      if len(shape) > 5:
        raise ConversionError(
            f'has per-step shape {list(step_shape)}; LeRobot features have at '
            'most 5 dimensions', **where)
    else:
      raise ConversionError(f'has dtype {leaf.dtype}, which LeRobot cannot '
                            'store', **where)
    features.append(Feature(name, kind, dtype, shape, path, step_shape,
                            feature_names))
  if 'next.done' not in by_name:
    features.append(Feature('next.done', 'value', 'bool', (1,)))
  order = {'observation': 0, 'action': 1, 'next.reward': 2, 'next.done': 3}
  features.sort(key=lambda f: min(order.get(f.name, 4),
                                  order.get(f.name.split('.')[0], 4)))
  return features, task_path


def _frame_values(feature: Feature, leaves: Dict[str, Any],
                  steps: Dict[str, Any]) -> np.ndarray:
  if feature.path is None:  # next.done, from is_last.
    return np.asarray(steps[rlds_types.IS_LAST], bool)
  return np.asarray(leaves[feature.path])


def _task_strings(leaves: Dict[str, Any], task_path: Optional[str],
                  length: int, default_task: str,
                  where: Dict[str, Any]) -> List[str]:
  if task_path is None:
    return [default_task] * length
  values = np.asarray(leaves[task_path], object).reshape(-1)
  out = []
  for value in values:
    if isinstance(value, (bytes, np.bytes_)):
      try:
        value = bytes(value).decode('utf-8')
      except UnicodeDecodeError:
        raise ConversionError('is not UTF-8 text', **where) from None
    out.append(str(value))
  return out


def _arrow_type_of(value: np.ndarray) -> Any:
  """The Arrow type of an episode metadata value (dtype and rank kept)."""
  pa = layout._pa()  # pylint: disable=protected-access
  if value.dtype.kind in 'OS':
    item = pa.binary()
  elif value.dtype.kind == 'U':
    item = pa.string()
  else:
    item = pa.from_numpy_dtype(value.dtype)
  for _ in range(value.ndim):
    item = pa.list_(item)
  return item


def _metadata_columns(episode: Dict[str, Any], source: str,
                      index: int) -> Dict[str, Tuple[Any, Any]]:
  """``rlds/metadata/<path>`` -> (python value, Arrow type)."""
  out = {}
  metadata = {k: v for k, v in episode.items() if k != rlds_types.STEPS}
  for path, value in nest_paths.flatten_with_paths(metadata):
    if isinstance(value, (bytes, str)):
      array = np.asarray(value, object if isinstance(value, bytes) else str)
    else:
      array = np.asarray(value)
    if array.dtype.kind not in 'biufOSU':
      raise ConversionError(f'has dtype {array.dtype}, which LeRobot cannot '
                            'store', source=source, episode=index, field=path)
    out[METADATA_PREFIX + path] = (array.tolist() if array.ndim else
                                   array.item(), _arrow_type_of(array))
  return out


class _ParquetFiles:
  """Parquet files ``chunk-XXX/file-XXX`` rolled at a size, written in order."""

  def __init__(self, root: str, template: str, size_in_mb: float,
               chunks_size: int):
    self._root, self._template = root, template
    self._limit = size_in_mb * (1 << 20)
    self._chunks_size = chunks_size
    self.chunk, self.file = 0, 0
    self._writer = None
    self._path = None
    self._rows = 0

  def target(self, num_rows: int) -> Tuple[int, int]:
    """The (chunk, file) the next ``num_rows`` rows go to (rolls lerobot's
    way: when the file would reach the size limit with them)."""
    if self._writer is not None and self._rows:
      size = os.path.getsize(self._path)
      if size + size / self._rows * num_rows >= self._limit:
        self.close()
        self.chunk, self.file = layout.next_file(self.chunk, self.file,
                                                 self._chunks_size)
    return self.chunk, self.file

  def write(self, table: Any, schema: Any) -> Tuple[int, int]:
    """Writes ``table`` as a row group; returns its (chunk, file)."""
    pq = _pq()
    self.target(table.num_rows)
    if self._writer is None:
      self._path = os.path.join(self._root, self._template.format(
          chunk_index=self.chunk, file_index=self.file))
      os.makedirs(os.path.dirname(self._path), exist_ok=True)
      self._writer = pq.ParquetWriter(self._path, schema,
                                      compression='snappy',
                                      use_dictionary=True)
      self._rows = 0
    self._writer.write_table(table)
    self._rows += table.num_rows
    return self.chunk, self.file

  def close(self) -> None:
    if self._writer is not None:
      self._writer.close()
      self._writer = None


class _DatasetWriter:
  """Writes episodes into a LeRobotDataset directory (see `to_lerobot`)."""

  def __init__(self, root: str, options: _Options, source: str):
    self._root = root
    self._fps = options.fps
    self._task_key = options.task_key
    self._default_task = options.default_task
    self._storage = storage = options.storage
    self._names = options.names
    self._source = source
    self._info_options = storage._info_options(  # pylint: disable=protected-access
        options.robot_type)
    self._data = _ParquetFiles(root, layout.DATA_PATH,
                               storage.data_files_size_in_mb,
                               storage.chunks_size)
    self._meta = _ParquetFiles(root, layout.EPISODES_PATH,
                               storage.data_files_size_in_mb,
                               storage.chunks_size)
    self._features: List[Feature] = []
    self._task_path = None
    self._schema = None
    self._meta_schema = None
    self._videos: Dict[str, video_lib.VideoWriter] = {}
    self._tasks: Dict[str, int] = {}
    self._rows: List[Dict[str, Any]] = []  # Episode rows not yet written.
    self._aggregate = stats_lib.Aggregate()
    self._episodes = 0
    self._frames = 0

  def _start(self, episode: Dict[str, Any]) -> None:
    self._features, self._task_path = _plan_features(
        episode[rlds_types.STEPS], task_key=self._task_key,
        video=self._storage.video, video_keys=self._storage.video_keys,
        names=self._names, source=self._source)
    self._schema = layout.data_schema(self._features)
    info = layout.new_info(self._fps, {}, **self._info_options)
    for feature in self._features:
      if feature.kind == 'video':
        self._videos[feature.name] = video_lib.VideoWriter(
            lambda chunk, file, key=feature.name: os.path.join(
                self._root, layout.video_path(info, key, chunk, file)),
            self._fps, vcodec=self._storage.vcodec,
            file_size_in_mb=self._storage.video_files_size_in_mb,
            chunks_size=self._storage.chunks_size,
            name=feature.path or feature.name)

  def add(self, index: int, episode: Dict[str, Any]) -> None:
    """Writes one checked Episode."""
    pa = layout._pa()  # pylint: disable=protected-access
    if not self._features:
      self._start(episode)
    steps = episode[rlds_types.STEPS]
    leaves = dict(nest_paths.flatten_with_paths(steps))
    length = len(steps[rlds_types.IS_LAST])
    where = {'source': self._source, 'episode': index}
    tasks = _task_strings(leaves, self._task_path, length,
                          self._default_task,
                          {**where, 'field': self._task_path})
    task_index = np.empty(length, np.int64)
    for t, task in enumerate(tasks):
      task_index[t] = self._tasks.setdefault(task, len(self._tasks))
    columns, episode_stats, placements = {}, {}, {}
    for feature in self._features:
      values = _frame_values(feature, leaves, steps)
      if feature.kind == 'video':
        placements[feature.name] = self._videos[feature.name].add(index,
                                                                  values)
      elif feature.kind == 'image':
        columns[feature.name] = [
            {'bytes': video_lib.encode_png(image),
             'path': f'frame-{t:06d}.png'} for t, image in enumerate(values)]
      else:
        columns[feature.name] = values
      if feature.kind in ('video', 'image'):
        episode_stats[feature.name] = stats_lib.image_stats(values)
      elif feature.kind == 'value':
        episode_stats[feature.name] = stats_lib.numeric_stats(values)
    frame_index = np.arange(length, dtype=np.int64)
    bookkeeping = {
        'timestamp': (frame_index / self._fps).astype(np.float32),
        'frame_index': frame_index,
        'episode_index': np.full(length, index, np.int64),
        'index': np.arange(self._frames, self._frames + length,
                           dtype=np.int64),
        'task_index': task_index,
    }
    for name, values in bookkeeping.items():
      columns[name] = values
      episode_stats[name] = stats_lib.numeric_stats(values)
    arrays = []
    for field in self._schema:
      feature = next((f for f in self._features if f.name == field.name),
                     None) or Feature(field.name, 'value',
                                      layout.DEFAULT_FEATURES[field.name][
                                          'dtype'], (1,))
      try:
        arrays.append(layout.to_arrow(feature, columns[field.name]))
      except (UnicodeDecodeError, ValueError, TypeError) as error:
        raise ConversionError(f'cannot be stored: {error}', **where,
                              field=feature.path or feature.name) from None
    table = pa.Table.from_arrays(arrays, schema=self._schema)
    chunk, file = self._data.write(table, self._schema)
    row = {
        'episode_index': index,
        'tasks': list(dict.fromkeys(tasks)),
        'length': length,
        'data/chunk_index': chunk,
        'data/file_index': file,
        'dataset_from_index': self._frames,
        'dataset_to_index': self._frames + length,
    }
    for key, (video_chunk, video_file, start, end) in placements.items():
      row[f'videos/{key}/chunk_index'] = video_chunk
      row[f'videos/{key}/file_index'] = video_file
      row[f'videos/{key}/from_timestamp'] = start
      row[f'videos/{key}/to_timestamp'] = end
    for name, feature_stats in episode_stats.items():
      for key in stats_lib.STAT_KEYS:
        row[f'stats/{name}/{key}'] = feature_stats[key].tolist()
    row['meta/episodes/chunk_index'] = None
    row['meta/episodes/file_index'] = None
    row[TERMINAL_COLUMN] = bool(steps[rlds_types.IS_TERMINAL][-1])
    row.update(_metadata_columns(episode, self._source, index))
    self._rows.append(row)
    self._aggregate.add(episode_stats)
    self._episodes += 1
    self._frames += length
    if len(self._rows) >= _META_BUFFER:
      self._write_meta()

  def _write_meta(self) -> None:
    """Writes the buffered episode rows to meta/episodes as a row group."""
    rows, self._rows = self._rows, []

    pa = layout._pa()  # pylint: disable=protected-access
    chunk, file = self._meta.target(len(rows))
    for row in rows:
      row['meta/episodes/chunk_index'] = chunk
      row['meta/episodes/file_index'] = file
    if self._meta_schema is None:
      self._meta_schema = self._meta_table_schema(rows[0])
    try:
      table = pa.Table.from_pylist(
          [{k: v[0] if isinstance(v, tuple) else v for k, v in row.items()}
           for row in rows], schema=self._meta_schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, KeyError) as error:
      raise ConversionError(
          f'episode metadata differs from episode 0\'s: {error}',
          source=self._source, episode=rows[0]['episode_index']) from None
    self._meta.write(table, self._meta_schema)

  def _meta_table_schema(self, row: Dict[str, Any]) -> Any:
    pa = layout._pa()  # pylint: disable=protected-access
    plain = {k: v for k, v in row.items() if not isinstance(v, tuple)}
    inferred = pa.Table.from_pylist([plain]).schema
    fields = []
    for key, value in row.items():
      if isinstance(value, tuple):
        fields.append(pa.field(key, value[1]))
      else:
        fields.append(inferred.field(key))
    return pa.schema(fields)

  def close(self) -> Dict[str, Any]:
    """Finishes the files; returns info.json."""
    if not self._features:
      raise ValueError(f'to_lerobot: no episodes to write to {self._root}')
    for writer in self._videos.values():
      writer.close()
    if self._rows:
      self._write_meta()
    self._data.close()
    self._meta.close()
    layout.write_tasks(os.path.join(self._root, layout.TASKS_PATH),
                       list(self._tasks))
    with open(os.path.join(self._root, layout.STATS_PATH), 'w') as f:
      json.dump(stats_lib.to_json(self._aggregate.result()), f, indent=4)
    info = layout.new_info(
        self._fps, {f.name: f for f in self._features}, **self._info_options)
    for key in self._videos:
      info['features'][key]['info'] = video_lib.video_info(os.path.join(
          self._root, layout.video_path(info, key, 0, 0)))
    info.update(total_episodes=self._episodes, total_frames=self._frames,
                total_tasks=len(self._tasks),
                splits={'train': f'0:{self._episodes}'})
    info['rlds'] = {
        'writer': 'rlds_lite',
        'task_key': self._task_path,
        'fields': {f.name: {'path': f.path, 'shape': list(f.step_shape)}
                   for f in self._features if f.path is not None},
    }
    with open(os.path.join(self._root, layout.INFO_PATH), 'w') as f:
      json.dump(info, f, indent=4, ensure_ascii=False)
    return info

  def abort(self) -> None:
    for writer in self._videos.values():
      try:
        writer.close()
      except Exception:  # pylint: disable=broad-except
        pass  # The files are removed; the first error is the one to report.
    self._data.close()
    self._meta.close()


def to_lerobot(episodes: episodes_lib.EpisodesLike,
               root: Union[None, str, os.PathLike] = None,
               repo_id: Optional[str] = None, *, fps: int,
               task_key: Optional[str] = DEFAULT_TASK_KEY,
               default_task: str = '',
               robot_type: Optional[str] = None,
               names: Optional[Dict[str, Any]] = None,
               storage: Optional[Storage] = None,
               if_exists: str = 'error', **legacy: Any) -> str:
  """Writes Episodes as a LeRobotDataset v3.0 at ``root``; returns ``root``.

  The layout is lerobot 0.4's (``LeRobotDataset(repo_id, root=root)`` loads
  it); the module docstring tables the mapping. Episodes are streamed (about
  one in memory) and the dataset appears atomically (docs/guarantees.md).

  Args:
    episodes: Episodes or an RLDS dataset (every episode of one structure).
    root: the dataset directory; None for ``$HF_LEROBOT_HOME/<repo_id>``
      (lerobot's default, `lerobot_home`).
    repo_id: ``'<user>/<name>'``; needed only when ``root`` is None.
    fps: frames per second (RLDS does not record it).
    task_key: the step field (a ``'a/b'`` path) holding each step's task
      text; the default, ``language_instruction``, is used where present
      (an explicit key must be a step field); None: no step field is the
      task.
    default_task: the task of frames without a ``task_key`` field.
    robot_type: info.json's ``robot_type``.
    names: feature (or path) -> ``names`` in info.json (e.g. the joint
      names of ``observation.state``).
    storage: cameras, codec and file rolling (`Storage`; the default:
      lerobot's).
    if_exists: ``'error'`` or ``'overwrite'``.
    **legacy: `Storage`'s fields as keywords (``video=False``, ...), as
      before `Storage`; still taken, warning once.

  Example:
    >>> import tempfile, os, numpy as np
    >>> from rlds_lite.convert import episodes as episodes_lib
    >>> image = np.zeros((4, 32, 32, 3), np.uint8)
    >>> steps = {'observation': {'image': image, 'state': np.zeros((4, 2))},
    ...          'action': np.zeros((4, 2)), **episodes_lib.rlds_flags(4, False)}
    >>> root = to_lerobot([{'steps': steps}], tempfile.mkdtemp() + '/d', fps=5)
    >>> read_info(root)['features']['observation.image']['dtype']
    'video'
    >>> sorted(os.listdir(os.path.join(root, 'videos')))
    ['observation.image']
  """
  storage = _storage(storage, legacy)
  if if_exists not in ('error', 'overwrite'):
    raise ValueError(f"to_lerobot: if_exists={if_exists!r}; 'error' or "
                     "'overwrite'.")
  if not isinstance(fps, (int, np.integer)) or isinstance(fps, bool) or (
      fps <= 0):
    raise ValueError(f'to_lerobot: fps={fps!r}; LeRobot needs a positive '
                     'integer frame rate.')
  if root is None:
    if not repo_id or not _REPO_ID.match(repo_id):
      raise ValueError(f"to_lerobot: repo_id={repo_id!r}; pass root, or a "
                       "repo_id such as 'user/dataset'.")
    root = overwriting.path_inside(lerobot_home(), repo_id, what='repo_id',
                                   writer='to_lerobot')
  root = os.path.abspath(os.fspath(root))

  def check(target: str) -> None:
    overwriting.check_replaceable(target, kind='LeRobot dataset',
                                  marker=layout.INFO_PATH,
                                  writer='to_lerobot')
    if os.path.exists(target) and if_exists == 'error':
      raise FileExistsError(f"to_lerobot: {target} exists; pass "
                            "if_exists='overwrite' to replace it.")

  check(root)  # Before reading; again under the lock.
  source = '<episodes>'
  with atomic_output.AtomicOutput(root, directory=True, check=check,
                                  replace=if_exists == 'overwrite',
                                  label=f'to_lerobot: {root}') as output:
    writer = _DatasetWriter(output.path, _Options(
        int(fps), task_key, default_task, robot_type, dict(names or {}),
        storage), source)
    try:
      for index, episode in enumerate(
          episodes_lib.checked_episodes(episodes, source=source)):
        writer.add(index, episode)
      writer.close()
    except BaseException:
      # Its own error (e.g. ENOSPC again while closing encoders) must not
      # hide the first one; the staging directory goes either way.
      with contextlib.suppress(Exception):
        writer.abort()
      raise
    output.publish()
  return root


def to_lerobot_dir(episodes: episodes_lib.EpisodesLike,
                   path: Union[str, os.PathLike], *, fps: Optional[int] = None,
                   task_key: Optional[str] = None,
                   no_video: bool = False) -> str:
  """`to_lerobot` with ``rlds-lite convert``'s options (``fps`` required,
  ``no_video``); returns the dataset's directory."""
  if fps is None:  # 0 and negatives: to_lerobot says they are not rates.
    raise ValueError('writing lerobot needs the frame rate, e.g. fps=10: '
                     'RLDS does not record it')
  return to_lerobot(
      episodes, path, fps=fps, storage=Storage(video=not no_video),
      task_key=DEFAULT_TASK_KEY if task_key is None else task_key)


# LeRobot -> RLDS.


class _EpisodeRef(NamedTuple):
  """Where one episode's rows and frames are."""
  index: int
  length: int
  data_path: str
  from_index: Optional[int]  # Global index of its first row (None: v2 file).
  videos: Dict[str, Tuple[str, float, float]]
  columns: Dict[str, Any]  # Extra episode columns (Arrow scalars or JSON).
  source: str


def _number(values: Dict[str, List[Any]], key: str, row: int, path: str,
            episode: Optional[int] = None, integer: bool = True) -> Any:
  """An episode index entry, checked to be a finite number (an integer)."""
  return input_checks.number(values[key][row], source=path, field=key,
                             episode=episode, integer=integer)


def _v3_episode_refs(root: str, info: Dict[str, Any],
                     video_keys: Sequence[str]) -> Iterator[_EpisodeRef]:
  pq = _pq()
  files = sorted(glob.glob(os.path.join(root, layout.EPISODES_DIR, '*',
                                        '*.parquet')))
  if not files:
    raise ConversionError(
        'has no chunk-XXX/file-XXX.parquet: the episode index is missing',
        source=os.path.join(root, layout.EPISODES_DIR))
  required = ['episode_index', 'length', 'data/chunk_index',
              'data/file_index', 'dataset_from_index', 'dataset_to_index']
  for key in video_keys:
    required += [f'videos/{key}/{part}' for part in (
        'chunk_index', 'file_index', 'from_timestamp', 'to_timestamp')]
  for path in files:
    try:
      file = pq.ParquetFile(path)
    except (OSError, ValueError) as error:
      raise ConversionError(f'is not a readable Parquet file: {error}',
                            source=path) from None
    names = file.schema_arrow.names
    for key in required:
      if key not in names:
        raise ConversionError('is missing from the episode index',
                              source=path, field=key)
    extra = [n for n in names if n not in _LEROBOT_COLUMNS and
             not n.startswith(('stats/', 'videos/'))]
    for batch in file.iter_batches(batch_size=1024, columns=required + extra):
      values = {k: batch.column(k).to_pylist() for k in required}
      for row in range(batch.num_rows):
        index = _number(values, 'episode_index', row, path)
        get = lambda key, integer=True, row=row, index=index: _number(
            values, key, row, path, index, integer)
        videos = {
            key: (layout.video_path(info, key,
                                    get(f'videos/{key}/chunk_index'),
                                    get(f'videos/{key}/file_index')),
                  float(get(f'videos/{key}/from_timestamp', False)),
                  float(get(f'videos/{key}/to_timestamp', False)))
            for key in video_keys}
        length = get('length')
        start, stop = get('dataset_from_index'), get('dataset_to_index')
        if stop - start != length:
          raise ConversionError(
              f'dataset_to_index - dataset_from_index = {stop - start}, '
              f'length = {length}', source=path, episode=index,
              field='length')
        yield _EpisodeRef(
            index, length,
            layout.data_path(info, get('data/chunk_index'),
                             get('data/file_index')),
            start, videos, {k: batch.column(k)[row] for k in extra}, path)


def _v2_episode_refs(root: str, info: Dict[str, Any],
                     video_keys: Sequence[str]) -> Iterator[_EpisodeRef]:
  path = os.path.join(root, layout.LEGACY_EPISODES_PATH)
  rows = list(layout.read_jsonl(path, 'the episode index'))
  for row in rows:
    for key in ('episode_index', 'length'):
      if key not in row:
        raise ConversionError('is missing', source=path, field=key)
      row[key] = input_checks.number(row[key], source=path, field=key,
                                     integer=True)
  chunks_size = int(info.get('chunks_size') or layout.DEFAULT_CHUNKS_SIZE)
  for row in sorted(rows, key=lambda row: row['episode_index']):
    index, length = row['episode_index'], row['length']
    chunk = index // chunks_size
    videos = {key: (info['video_path'].format(
        episode_chunk=chunk, video_key=key, episode_index=index), 0.0,
                    length / info['fps']) for key in video_keys}
    extra = {k: v for k, v in row.items()
             if k not in ('episode_index', 'length', 'tasks')}
    yield _EpisodeRef(index, length, info['data_path'].format(
        episode_chunk=chunk, episode_index=index), None, videos, extra, path)


class _DataRows:
  """The rows of one data file, read forward in record batches."""

  def __init__(self, path: str, columns: List[str]):
    pq = _pq()
    self.path = path
    try:
      self._file = pq.ParquetFile(path)
    except FileNotFoundError:
      raise
    except (OSError, ValueError) as error:
      raise ConversionError(f'is not a readable Parquet file: {error}',
                            source=path) from None
    names = self._file.schema_arrow.names
    for column in columns:
      if column not in names:
        raise ConversionError('is missing from the data file', source=path,
                              field=column)
    self._columns = columns
    self._restart()

  def _restart(self) -> None:
    self._batches = self._file.iter_batches(batch_size=4096,
                                            columns=self._columns)
    self._buffer = None
    self._restarted = False

  def _fill(self) -> bool:
    pa = layout._pa()  # pylint: disable=protected-access
    while self._buffer is None or not self._buffer.num_rows:
      batch = next(self._batches, None)
      if batch is None:
        return False
      self._buffer = pa.Table.from_batches([batch])
    return True

  def rows(self, from_index: Optional[int], length: int,
           where: Dict[str, Any]) -> Any:
    """``length`` rows from global ``index`` ``from_index`` (None: all)."""
    pa = layout._pa()  # pylint: disable=protected-access
    if from_index is None:
      self._restart()
      table = self._file.read(columns=self._columns)
      if table.num_rows != length:
        raise ConversionError(
            f'has {table.num_rows} rows; the episode index says {length}',
            source=self.path, **where)
      return table
    restarted = False
    while True:
      if not self._fill():
        if restarted:
          raise ConversionError(f'has no row with index {from_index}',
                                source=self.path, **where)
        self._restart()
        restarted = True
        continue
      index = self._buffer.column('index').to_numpy()
      if index[0] > from_index:
        if restarted:
          raise ConversionError(f'has no row with index {from_index}',
                                source=self.path, **where)
        self._restart()
        restarted = True
        continue
      position = int(np.searchsorted(index, from_index))
      self._buffer = self._buffer.slice(position)
      if self._buffer.num_rows:
        break
    parts, need = [], length
    while need > 0 and self._fill():
      take = min(need, self._buffer.num_rows)
      parts.append(self._buffer.slice(0, take))
      self._buffer = self._buffer.slice(take)
      need -= take
    if need:
      raise ConversionError(
          f'has {length - need} rows from index {from_index}; the episode '
          f'index says {length}', source=self.path, **where)
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


class _Readers:
  """The open data file and video files (one per camera) while reading."""

  def __init__(self, root: str, columns: List[str]):
    self._root = root
    self._columns = columns
    self._data: Optional[_DataRows] = None
    self._videos: Dict[str, video_lib.VideoReader] = {}

  def data(self, ref: _EpisodeRef) -> _DataRows:
    path = os.path.join(self._root, ref.data_path)
    if self._data is None or self._data.path != path:
      try:
        self._data = _DataRows(path, self._columns)
      except FileNotFoundError:
        raise ConversionError('is missing: the episode\'s data file',
                              source=path, episode=ref.index) from None
    return self._data

  def video(self, ref: _EpisodeRef, key: str) -> video_lib.VideoReader:
    path = os.path.join(self._root, ref.videos[key][0])
    reader = self._videos.get(key)
    if reader is None or reader.path != path:
      if reader is not None:
        reader.close()
      try:
        reader = video_lib.VideoReader(path)
      except FileNotFoundError:
        raise ConversionError('is missing: the episode\'s video file',
                              source=path, episode=ref.index,
                              field=key) from None
      self._videos[key] = reader
    return reader

  def decode_videos(self, ref: _EpisodeRef, keys: List[str],
                    timestamps: np.ndarray) -> Dict[str, np.ndarray]:
    """The episode's frames of every camera, one after the other (a thread
    per camera measured 6-9% faster: not worth a pool)."""
    out = {}
    for key in keys:
      _, start, end = ref.videos[key]
      out[key] = self.video(ref, key).frames(
          start, end, timestamps, {'episode': ref.index, 'field': key})
    return out

  def close(self) -> None:
    for reader in self._videos.values():
      reader.close()
    self._videos.clear()


class _Mapping(NamedTuple):
  """How a dataset's features become RLDS step fields."""
  features: List[Feature]  # With RLDS paths and step shapes.
  task_path: Optional[str]
  done: Optional[Feature]  # next.done, dropped when it equals is_last.
  flags: Dict[str, Feature]  # is_first/is_last/is_terminal features.
  rlds: bool  # Written by rlds_lite.


def _mapping(info: Dict[str, Any], task_key: Optional[str],
             source: str) -> _Mapping:
  block = info.get('rlds') if isinstance(info.get('rlds'), dict) else None
  fields = (block or {}).get('fields') or {}
  if task_key is None:
    task_key = block.get('task_key') if block else DEFAULT_TASK_KEY
  out, done, flags = [], None, {}
  for feature in layout.features_from_info(info, source):
    if feature.name in layout.BOOKKEEPING:
      continue
    if (feature.name in _FLAGS and feature.kind == 'value' and
        feature.shape == (1,) and feature.name not in fields):
      # lerobot's old Open X-Embodiment port kept RLDS flags as features.
      flags[feature.name] = feature._replace(path=feature.name,
                                             step_shape=())
      continue
    if feature.name in fields:
      entry = fields[feature.name]
      out.append(feature._replace(path=entry['path'],
                                  step_shape=tuple(entry['shape'])))
      continue
    if feature.name == 'next.done' and feature.kind == 'value':
      done = feature._replace(path='next/done', step_shape=())
      continue
    path = (rlds_types.REWARD if feature.name == 'next.reward'
            else feature.name.replace('.', '/'))
    step_shape = None
    if feature.kind not in ('video', 'image'):
      step_shape = () if feature.shape == (1,) else feature.shape
    out.append(feature._replace(path=path, step_shape=step_shape))
  if task_key in {f.path for f in out}:
    task_key = None  # A feature of that name (e.g. language_instruction) wins.
  paths = sorted([f.path for f in out] + ([task_key] if task_key else []))
  for a, b in zip(paths, paths[1:]):
    if a == b or b.startswith(a + '/'):
      raise ConversionError(
          f'RLDS step fields {a!r} and {b!r} clash (one holds the other); '
          'rename a feature', source=source, field=a)
  return _Mapping(out, task_key, done, flags, block is not None)


def _arrow_to_numpy(value: Any) -> Any:
  """An episode column's Arrow scalar as a NumPy value (dtype kept)."""
  pa = layout._pa()  # pylint: disable=protected-access
  kind = value.type
  python = value.as_py()
  depth = 0
  while pa.types.is_list(kind) or pa.types.is_large_list(
      kind) or pa.types.is_fixed_size_list(kind):
    kind = kind.value_type
    depth += 1
  if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
    return python if not depth else np.array(python, object)
  if pa.types.is_string(kind) or pa.types.is_large_string(kind):
    return python if not depth else np.array(python)
  try:
    dtype = kind.to_pandas_dtype()
  except NotImplementedError:
    return python
  return np.array(python, dtype)[()] if not depth else np.array(python, dtype)


def _terminated(ref: _EpisodeRef, terminated_by: Optional[str],
                columns: Dict[str, Any], at: Dict[str, Any]) -> bool:
  """``terminated_by``'s last value, else rlds/is_terminal, else an
  is_terminal feature, else False (truncated)."""
  if terminated_by is not None:
    return bool(input_checks.flags(
        np.asarray(columns[terminated_by]).reshape(-1), **at,
        field=terminated_by)[-1])
  value = ref.columns.get(TERMINAL_COLUMN)
  if value is not None:
    return bool(value.as_py() if hasattr(value, 'as_py') else value)
  if rlds_types.IS_TERMINAL in columns:
    return bool(columns[rlds_types.IS_TERMINAL][-1])
  return False


def _check_flags(flags: Dict[str, np.ndarray], length: int,
                 where: Dict[str, Any]) -> None:
  """Flag features must say what RLDS flags say."""
  expected = episodes_lib.rlds_flags(length, True)
  rules = {rlds_types.IS_FIRST: 'on the first frame only',
           rlds_types.IS_LAST: 'on the last frame only',
           rlds_types.IS_TERMINAL: 'on the last frame only, if at all'}
  for name, values in flags.items():
    if name == rlds_types.IS_TERMINAL:
      wrong = bool(values[:-1].any())
    else:
      wrong = not np.array_equal(values, expected[name])
    if wrong:
      raise ConversionError(
          f'is True on frames {np.flatnonzero(values).tolist()}; RLDS sets '
          f'it {rules[name]}', **where, field=name)


def _read_episode(ref: _EpisodeRef, mapping: _Mapping, tasks: Dict[int, str],
                  readers: _Readers, info: Dict[str, Any],
                  terminated_by: Optional[str]) -> episodes_lib.Episode:
  where = {'episode': ref.index}
  data = readers.data(ref)
  table = data.rows(ref.from_index, ref.length, where)
  length = ref.length
  at = {'source': data.path, 'episode': ref.index}

  def column(name: str, dtype: str = 'int64') -> np.ndarray:
    return layout.from_arrow(Feature(name, 'value', dtype, (1,)),
                             table.column(name), length,
                             {**at, 'field': name})

  frame_index = column('frame_index')
  if not np.array_equal(frame_index, np.arange(length)):
    shown = str(frame_index[:8].tolist())[:-1] + (
        ', ...]' if length > 8 else ']')
    raise ConversionError(f'is {shown}; expected 0 to {length - 1} in order',
                          **at, field='frame_index')
  episode_index = column('episode_index')
  if not (episode_index == ref.index).all():
    raise ConversionError(f'is not {ref.index} on every row of the episode',
                          **at, field='episode_index')
  timestamps = input_checks.finite(column('timestamp', 'float32'), **at,
                                   field='timestamp')
  fps = info['fps']
  steps: Dict[str, Any] = {}
  if np.abs(timestamps - frame_index / fps).max(initial=0) > (
      video_lib.TOLERANCE_S):
    steps['timestamp'] = timestamps
  values = readers.decode_videos(ref, [
      f.name for f in mapping.features if f.kind == 'video'], timestamps)
  for feature in mapping.features:
    field = {**at, 'field': feature.name}
    if feature.kind == 'video':
      pass
    elif feature.kind == 'image':
      cells = table.column(feature.name).to_pylist()
      images = []
      for t, cell in enumerate(cells):
        if not cell or not cell.get('bytes'):
          raise ConversionError(f'frame {t} has no image bytes', **field)
        try:
          images.append(video_lib.decode_image(cell['bytes']))
        except (ValueError, OSError) as error:
          raise ConversionError(f'frame {t} is not a PNG/JPEG image: '
                                f'{error}', **field) from None
      values[feature.name] = (np.stack(images) if images else
                              np.zeros((0,) + feature.shape, np.uint8))
    else:
      values[feature.name] = layout.from_arrow(
          feature, table.column(feature.name), length, field)
    steps[feature.path] = values[feature.name]
  if mapping.done is not None:
    done = layout.from_arrow(mapping.done, table.column('next.done'), length,
                             {**at, 'field': 'next.done'})
    values['next.done'] = done
    is_last = np.arange(length) == length - 1
    if not np.array_equal(input_checks.flags(done, **at, field='next.done'),
                          is_last):
      steps[mapping.done.path] = done
  if mapping.task_path:
    task_index = column('task_index')
    try:
      steps[mapping.task_path] = np.array(
          [tasks[int(i)].encode('utf-8') for i in task_index], object)
    except KeyError as error:
      raise ConversionError(f'{error} is not in the task list', **at,
                            field='task_index') from None
  for name, feature in mapping.flags.items():
    values[name] = input_checks.flags(
        layout.from_arrow(feature, table.column(name), length,
                          {**at, 'field': name}), **at, field=name)
  _check_flags({k: values[k] for k in mapping.flags}, length, at)
  if terminated_by is not None and terminated_by not in values:
    raise ValueError(f'from_lerobot: terminated_by={terminated_by!r} is not a '
                     f'feature; features: {sorted(values)}')
  terminated = _terminated(ref, terminated_by, values, at)
  steps.update(episodes_lib.rlds_flags(length, terminated))
  if not mapping.rlds and rlds_types.DISCOUNT not in steps:
    steps[rlds_types.DISCOUNT] = transitions.derived_discount(length,
                                                              terminated)
  episode = {rlds_types.STEPS: nest_paths.nest_from_paths(steps)}
  metadata = {}
  for name, value in ref.columns.items():
    if name == TERMINAL_COLUMN:
      continue
    key = name[len(METADATA_PREFIX):] if name.startswith(
        METADATA_PREFIX) else name
    metadata[key] = _arrow_to_numpy(value) if hasattr(value, 'as_py') else (
        value)
  episode.update(nest_paths.nest_from_paths(metadata))
  return episode


def _counted(refs: List[_EpisodeRef], info: Dict[str, Any],
             info_path: str) -> List[_EpisodeRef]:
  """``refs``, once info.json's ``total_episodes`` and ``total_frames``
  (where given) are checked against the episode index."""
  for key, held, what in (
      ('total_episodes', len(refs), 'episodes in the episode index'),
      ('total_frames', sum(ref.length for ref in refs),
       'frames (episode lengths in the episode index)')):
    if key in info:
      input_checks.count(info[key], held, source=info_path, field=key,
                         what=what)
  return refs


def from_lerobot(root: Union[str, os.PathLike], *,
                 episodes: Optional[Iterable[int]] = None,
                 task_key: Optional[str] = None,
                 terminated_by: Optional[str] = None
                 ) -> Iterator[episodes_lib.Episode]:
  """RLDS Episodes from a LeRobotDataset directory (v3.0; v2.0/v2.1 too).

  Reads one episode at a time (rows in record batches, frames decoded from
  the file's position onwards); errors name the file, episode and field.

  Args:
    root: the dataset directory (holding ``meta/info.json``).
    episodes: episode indices to read, in that order; all in stored order
      by default.
    task_key: the step field that receives each frame's task text (bytes);
      by default what `to_lerobot` recorded, else ``'language_instruction'``.
    terminated_by: a bool feature (e.g. ``'next.success'``) whose value on
      an episode's last frame says the episode terminated. By default
      episodes written by `to_lerobot` keep their RLDS end and others are
      read as truncated.

  Example:
    >>> import tempfile, numpy as np
    >>> from rlds_lite.convert import episodes as episodes_lib
    >>> make = lambda n, t: {'steps': {'action': np.arange(n, dtype=np.int32),
    ...                               **episodes_lib.rlds_flags(n, t)}}
    >>> root = to_lerobot([make(2, False), make(3, True)],
    ...                   tempfile.mkdtemp() + '/d', fps=30)
    >>> [e['steps']['is_terminal'].tolist() for e in from_lerobot(root, episodes=[1])]
    [[False, False, True]]
  """
  root = os.fspath(root)
  hint = atomic_output.missing_hint(root)
  if hint:  # A writer died replacing it: say where the old one is.
    raise FileNotFoundError(f'{root}: does not exist{hint}')
  info = layout.read_info(root)
  info_path = os.path.join(root, layout.INFO_PATH)
  mapping = _mapping(info, task_key, info_path)
  tasks = layout.read_tasks(root, info)
  video_keys = [f.name for f in mapping.features if f.kind == 'video']
  columns = ([f.name for f in mapping.features if f.kind != 'video'] +
             (['next.done'] if mapping.done else []) + list(mapping.flags) +
             list(layout.BOOKKEEPING))
  if info['codebase_version'].startswith('v2'):
    refs = _v2_episode_refs(root, info, video_keys)
  else:
    refs = _v3_episode_refs(root, info, video_keys)
  refs = _counted(list(refs), info, info_path)
  if episodes is not None:
    wanted = [int(i) for i in episodes]
    found = {ref.index: ref for ref in refs if ref.index in set(wanted)}
    for index in wanted:
      if index not in found:
        raise ConversionError('is not in the dataset', source=root,
                              episode=index)
    refs = (found[i] for i in wanted)
  readers = _Readers(root, columns)
  try:
    for ref in refs:
      yield _read_episode(ref, mapping, tasks, readers, info, terminated_by)
  finally:
    readers.close()


def lerobot_to_tfds(root: Union[str, os.PathLike],
                    data_dir: Union[str, os.PathLike], name: str, *,
                    episodes: Optional[Iterable[int]] = None,
                    task_key: Optional[str] = None,
                    terminated_by: Optional[str] = None,
                    **write_kwargs: Any) -> str:
  """Writes a LeRobotDataset as an RLDS TFDS dataset; returns its directory.

  Arguments as `from_lerobot` and `rlds_lite.convert.write_tfds`.

  Example:
    >>> import tempfile, numpy as np, rlds_lite
    >>> from rlds_lite.convert import episodes as episodes_lib
    >>> e = {'steps': {'action': np.ones(3, np.float32),
    ...                **episodes_lib.rlds_flags(3, True)}}
    >>> root = to_lerobot([e], tempfile.mkdtemp() + '/d', fps=10)
    >>> out = lerobot_to_tfds(root, tempfile.mkdtemp(), 'd')
    >>> [ep['steps']['is_terminal'].numpy().tolist()
    ...  for ep in rlds_lite.load(out, dense=True)]
    [[False, False, True]]
  """
  return episodes_lib.write_tfds(
      from_lerobot(root, episodes=episodes, task_key=task_key,
                   terminated_by=terminated_by), data_dir, name,
      **write_kwargs)
