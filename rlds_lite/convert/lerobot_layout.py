"""The files of a LeRobotDataset (v3.0, and v2.x for reading) and their types.

Paths, ``meta/info.json`` and Parquet column types; the layout is in
docs/convert_lerobot.md, and `lerobot` converts.
"""

import json
import os
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from rlds_lite import nesting
from rlds_lite.convert import episodes as episodes_lib
from rlds_lite.convert import input_checks

ConversionError = episodes_lib.ConversionError

CODEBASE_VERSION = 'v3.0'
"""The LeRobotDataset version written (lerobot 0.4's)."""
READABLE_VERSIONS = ('v2.0', 'v2.1', 'v3.0')
"""The ``codebase_version`` values `from_lerobot` reads."""

DEFAULT_CHUNKS_SIZE = 1000
DEFAULT_DATA_FILES_SIZE_IN_MB = 100
DEFAULT_VIDEO_FILES_SIZE_IN_MB = 200
INFO_PATH = 'meta/info.json'
STATS_PATH = 'meta/stats.json'
TASKS_PATH = 'meta/tasks.parquet'
LEGACY_TASKS_PATH = 'meta/tasks.jsonl'
LEGACY_EPISODES_PATH = 'meta/episodes.jsonl'
EPISODES_DIR = 'meta/episodes'
CHUNK_FILE = 'chunk-{chunk_index:03d}/file-{file_index:03d}'
EPISODES_PATH = EPISODES_DIR + '/' + CHUNK_FILE + '.parquet'
DATA_PATH = 'data/' + CHUNK_FILE + '.parquet'
VIDEO_PATH = 'videos/{video_key}/' + CHUNK_FILE + '.mp4'

BOOKKEEPING = ('timestamp', 'frame_index', 'episode_index', 'index',
               'task_index')
"""LeRobot's own columns of every frame (its ``DEFAULT_FEATURES``)."""
RESERVED = frozenset(BOOKKEEPING) | {'task'}
"""Names no converted step field may take."""

_INT64_SCALAR = {'dtype': 'int64', 'shape': [1], 'names': None}
DEFAULT_FEATURES = {
    'timestamp': {'dtype': 'float32', 'shape': [1], 'names': None},
    'frame_index': _INT64_SCALAR, 'episode_index': _INT64_SCALAR,
    'index': _INT64_SCALAR, 'task_index': _INT64_SCALAR,
}
IMAGE_NAMES = ['height', 'width', 'channels']
"""``names`` of image and video features, as lerobot writes them."""


class Feature(NamedTuple):
  """One LeRobot feature and the RLDS step field it holds.

  Attributes:
    name: the LeRobot feature name (``observation.images.front``).
    kind: ``'video'``, ``'image'``, ``'value'`` (numbers, bools) or
      ``'string'``.
    dtype: the NumPy dtype name (``'float32'``, ``'bool'``, ...; ``'uint8'``
      for images, ``'string'`` for strings).
    shape: the LeRobot per-frame shape (``(1,)`` for scalars).
    path: the RLDS step path (``'observation/images/front'``), or None.
    step_shape: the RLDS per-step shape (``()`` for a scalar).
    names: the feature's ``names`` in info.json.
  """
  name: str
  kind: str
  dtype: str
  shape: Tuple[int, ...]
  path: Optional[str] = None
  step_shape: Optional[Tuple[int, ...]] = None
  names: Any = None

  def info(self) -> Dict[str, Any]:
    """The feature's entry in ``meta/info.json``."""
    dtype = self.kind if self.kind in ('video', 'image') else self.dtype
    names = self.names
    if names is None and self.kind in ('video', 'image'):
      names = list(IMAGE_NAMES)
    return {'dtype': dtype, 'shape': list(self.shape), 'names': names}


def features_from_info(info: Dict[str, Any], source: str) -> List[Feature]:
  """The `Feature` of every entry of ``info['features']`` (paths unset).

  Raises:
    ConversionError: naming the file and field of a malformed feature.
  """
  features = info.get('features')
  if not isinstance(features, dict):
    raise ConversionError("has no 'features' object", source=source)
  out = []
  for name, spec in features.items():
    if not isinstance(spec, dict) or 'dtype' not in spec or 'shape' not in spec:
      raise ConversionError('needs a dict with dtype and shape',
                            source=source, field=f'features/{name}')
    dtype = spec['dtype']
    if not isinstance(spec['shape'], (list, tuple)):
      raise ConversionError(f"is {spec['shape']!r}; expected a list of sizes",
                            source=source, field=f'features/{name}/shape')
    shape = tuple(input_checks.number(n, source=source, integer=True,
                                      positive=True,
                                      field=f'features/{name}/shape')
                  for n in spec['shape'])
    if dtype in ('video', 'image'):
      kind, dtype = dtype, 'uint8'
    elif dtype == 'string':
      kind = 'string'
    else:
      try:
        np.dtype(dtype)
      except TypeError:
        raise ConversionError(f'has dtype {dtype!r}, not one rlds_lite reads',
                              source=source,
                              field=f'features/{name}') from None
      kind = 'value'
    out.append(Feature(name, kind, dtype, shape, names=spec.get('names')))
  return out


def read_json(path: str, what: str) -> Any:
  """A JSON file, or one ConversionError naming it."""
  try:
    with open(path) as f:
      return nesting.load(f)
  except FileNotFoundError:
    raise ConversionError(f'is missing: {what}', source=path) from None
  except nesting.TooDeepError as error:
    raise ConversionError(str(error), source=path) from None
  except ValueError as error:
    raise ConversionError(f'is not valid JSON: {error}', source=path) from None


def read_info(root: str) -> Dict[str, Any]:
  """``meta/info.json`` of the dataset at ``root``, its version checked.

  Raises:
    ConversionError: the file is missing, not JSON, or of a
      ``codebase_version`` rlds_lite does not read.

  Example:
    >>> read_info('/nonexistent')
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: /nonexistent/meta/info.json: is missing: /nonexistent is not a LeRobot dataset root
  """
  path = os.path.join(root, INFO_PATH)
  info = read_json(path, f'{root} is not a LeRobot dataset root')
  if not isinstance(info, dict):
    raise ConversionError('is not a JSON object', source=path)
  version = info.get('codebase_version')
  if version not in READABLE_VERSIONS:
    raise ConversionError(
        f'has codebase_version {version!r}; rlds_lite reads '
        f'{", ".join(READABLE_VERSIONS)} (lerobot converts older ones: '
        'lerobot/datasets/v30/convert_dataset_v21_to_v30.py)', source=path)
  for key in ('fps', 'features'):
    if key not in info:
      raise ConversionError(f'has no {key!r}', source=path)
  info['fps'] = input_checks.number(info['fps'], source=path, field='fps',
                                    positive=True)
  return info


def new_info(fps: int, features: Dict[str, Feature], *,
             video: bool = True, robot_type: Optional[str] = None,
             chunks_size: int = DEFAULT_CHUNKS_SIZE,
             data_files_size_in_mb: float = DEFAULT_DATA_FILES_SIZE_IN_MB,
             video_files_size_in_mb: float = DEFAULT_VIDEO_FILES_SIZE_IN_MB
             ) -> Dict[str, Any]:
  """``meta/info.json`` of an empty dataset, as lerobot 0.4 creates it.

  Example:
    >>> info = new_info(10, {'action': Feature('action', 'value', 'float32', (2,))})
    >>> info['codebase_version'], list(info['features'])
    ('v3.0', ['action', 'timestamp', 'frame_index', 'episode_index', 'index', 'task_index'])
    >>> data_path(info, chunk=0, file=3)
    'data/chunk-000/file-003.parquet'
  """
  entries = {name: feature.info() for name, feature in features.items()}
  entries.update({k: dict(v) for k, v in DEFAULT_FEATURES.items()})
  return {
      'codebase_version': CODEBASE_VERSION,
      'robot_type': robot_type,
      'total_episodes': 0,
      'total_frames': 0,
      'total_tasks': 0,
      'chunks_size': chunks_size,
      'data_files_size_in_mb': data_files_size_in_mb,
      'video_files_size_in_mb': video_files_size_in_mb,
      'fps': fps,
      'splits': {},
      'data_path': DATA_PATH,
      'video_path': VIDEO_PATH if video else None,
      'features': entries,
  }


def data_path(info: Dict[str, Any], chunk: int, file: int) -> str:
  """The relative path of a data file (v3.0)."""
  return info['data_path'].format(chunk_index=chunk, file_index=file)


def video_path(info: Dict[str, Any], key: str, chunk: int, file: int) -> str:
  """The relative path of a video file (v3.0)."""
  return info['video_path'].format(video_key=key, chunk_index=chunk,
                                   file_index=file)


def next_file(chunk: int, file: int, chunks_size: int) -> Tuple[int, int]:
  """The (chunk, file) after ``(chunk, file)``: ``chunks_size`` files a chunk.

  Example:
    >>> next_file(0, 998, 1000), next_file(0, 999, 1000)
    ((0, 999), (1, 0))
  """
  if file >= chunks_size - 1:
    return chunk + 1, 0
  return chunk, file + 1


# Arrow types and the Hugging Face features lerobot writes in the schema.


def _pa():
  try:
    import pyarrow as pa  # pylint: disable=g-import-not-at-top
  except ImportError as error:
    raise ImportError('rlds_lite.convert.lerobot needs pyarrow and av: '
                      "pip install 'rlds_lite[lerobot]'") from error
  return pa


def _value_type(dtype: str) -> Any:
  pa = _pa()
  if dtype == 'string':
    return pa.string()
  return pa.from_numpy_dtype(np.dtype(dtype))


def arrow_type(feature: Feature) -> Any:
  """The Arrow type of a feature's column (lerobot's, through `datasets`)."""
  pa = _pa()
  if feature.kind == 'image':
    return pa.struct([('bytes', pa.binary()), ('path', pa.string())])
  value = _value_type(feature.dtype)
  if feature.shape == (1,):
    return value
  if len(feature.shape) == 1:
    return pa.list_(pa.field('element', value), feature.shape[0])
  for _ in feature.shape:
    value = pa.list_(pa.field('element', value))
  return value


def arrow_field(feature: Feature) -> Any:
  """The Arrow field; 2-D to 5-D arrays carry the ``ArrayND`` extension tags."""
  pa = _pa()
  metadata = None
  rank = len(feature.shape)
  if feature.kind == 'value' and rank >= 2:
    metadata = {
        'ARROW:extension:name':
            f'datasets.features.features.Array{rank}DExtensionType',
        'ARROW:extension:metadata':
            json.dumps([list(feature.shape), feature.dtype]),
    }
    return pa.field(feature.name, arrow_type(feature)).with_metadata(metadata)
  return pa.field(feature.name, arrow_type(feature))


def hf_feature(feature: Feature) -> Dict[str, Any]:
  """The feature as `datasets` serialises it in the Parquet schema metadata."""
  if feature.kind == 'image':
    return {'_type': 'Image'}
  value = {'dtype': feature.dtype, '_type': 'Value'}
  if feature.shape == (1,):
    return value
  if len(feature.shape) == 1:
    return {'feature': value, 'length': feature.shape[0], '_type': 'List'}
  return {'shape': list(feature.shape), 'dtype': feature.dtype,
          '_type': f'Array{len(feature.shape)}D'}


def bookkeeping_features() -> List[Feature]:
  """``timestamp``, ``frame_index``, ... as Features."""
  return [Feature(name, 'value', spec['dtype'], (1,))
          for name, spec in DEFAULT_FEATURES.items()]


def data_schema(features: Sequence[Feature]) -> Any:
  """The Arrow schema of the data files: features, then bookkeeping columns.

  Example:
    >>> schema = data_schema([Feature('action', 'value', 'float32', (2,))])
    >>> [str(t) for t in schema.types]
    ['fixed_size_list<element: float>[2]', 'float', 'int64', 'int64', 'int64', 'int64']
    >>> json.loads(schema.metadata[b'huggingface'])['info']['features']['action']
    {'feature': {'dtype': 'float32', '_type': 'Value'}, 'length': 2, '_type': 'List'}
  """
  pa = _pa()
  columns = [f for f in features if f.kind != 'video'] + bookkeeping_features()
  hf = {'info': {'features': {f.name: hf_feature(f) for f in columns}}}
  return pa.schema([arrow_field(f) for f in columns],
                   metadata={'huggingface': json.dumps(hf)})


def to_arrow(feature: Feature, values: np.ndarray) -> Any:
  """An Arrow array of a feature's ``[T, ...]`` values (images: PNG structs)."""
  pa = _pa()
  kind, shape = feature.kind, feature.shape
  length = len(values)
  if kind == 'image':
    return pa.array(values, arrow_type(feature))  # values: list of dicts.
  if kind == 'string':
    return pa.array([v.decode('utf-8') if isinstance(v, bytes) else str(v)
                     for v in np.asarray(values, object).reshape(length)],
                    pa.string())
  array = np.ascontiguousarray(values, np.dtype(feature.dtype))
  if shape == (1,):
    return pa.array(array.reshape(length))
  flat = pa.array(array.reshape(-1))
  if len(shape) == 1:
    return pa.FixedSizeListArray.from_arrays(flat, type=arrow_type(feature))
  nested = flat  # Lists of lists, innermost first (HF ArrayND storage).
  for level in range(len(shape) - 1, -1, -1):
    count = length * int(np.prod(shape[:level], dtype=np.int64))
    offsets = np.arange(count + 1, dtype=np.int32) * shape[level]
    nested = pa.ListArray.from_arrays(
        pa.array(offsets), nested,
        type=pa.list_(pa.field('element', nested.type)))
  return nested


def _flat_values(column: Any) -> Any:
  """The innermost values of a (possibly nested) list column, offsets kept."""
  pa = _pa()
  if isinstance(column, pa.ChunkedArray):
    column = column.combine_chunks()
  while True:
    if isinstance(column, pa.ExtensionArray):
      column = column.storage
    elif pa.types.is_list(column.type) or pa.types.is_large_list(
        column.type) or pa.types.is_fixed_size_list(column.type):
      column = column.flatten()
    else:
      return column


def from_arrow(feature: Feature, column: Any, length: int,
               where: Dict[str, Any]) -> np.ndarray:
  """A column of ``length`` rows as a NumPy ``[T, *step_shape]`` array.

  Args:
    feature: the feature (its ``step_shape`` decides scalars vs ``(1,)``).
    column: the Arrow (chunked) array.
    length: the number of rows.
    where: ``source``/``episode``/``field`` for errors.

  Raises:
    ConversionError: nulls or a size other than the feature's shape says.
  """
  if column.null_count:
    raise ConversionError(f'has {column.null_count} null values', **where)
  step_shape = feature.step_shape
  if step_shape is None:
    step_shape = () if feature.shape == (1,) else feature.shape
  if feature.kind == 'string':
    return np.array([s.encode('utf-8') for s in column.to_pylist()],
                    object).reshape((length,) + step_shape)
  values = _flat_values(column).to_numpy(zero_copy_only=False)
  size = int(np.prod(step_shape, dtype=np.int64))
  if values.size != length * size:
    raise ConversionError(
        f'has {values.size} values in {length} rows; shape '
        f'{list(feature.shape)} needs {length * size}', **where)
  return values.astype(np.dtype(feature.dtype), copy=False).reshape(
      (length,) + step_shape)


# Tasks.


def write_tasks(path: str, tasks: Sequence[str]) -> None:
  """``meta/tasks.parquet``: task strings as a pandas index, ``task_index``.

  Written with pyarrow alone, with the pandas metadata lerobot's
  ``pd.read_parquet`` needs to make the strings the index.
  """
  pa = _pa()
  import pyarrow.parquet as pq  # pylint: disable=g-import-not-at-top
  pandas_meta = {
      'index_columns': ['__index_level_0__'],
      'column_indexes': [{'name': None, 'field_name': None,
                          'pandas_type': 'unicode', 'numpy_type': 'object',
                          'metadata': {'encoding': 'UTF-8'}}],
      'columns': [
          {'name': 'task_index', 'field_name': 'task_index',
           'pandas_type': 'int64', 'numpy_type': 'int64', 'metadata': None},
          {'name': None, 'field_name': '__index_level_0__',
           'pandas_type': 'unicode', 'numpy_type': 'object',
           'metadata': None}],
      'attributes': {},
      'creator': {'library': 'pyarrow', 'version': pa.__version__},
      'pandas_version': '2.2.3',
  }
  table = pa.table(
      {'task_index': pa.array(np.arange(len(tasks), dtype=np.int64)),
       '__index_level_0__': pa.array(list(tasks), pa.string())},
      metadata={'pandas': json.dumps(pandas_meta)})
  pq.write_table(table, path, compression='snappy')


def read_tasks(root: str, info: Dict[str, Any]) -> Dict[int, str]:
  """task_index -> task string, from ``tasks.parquet`` (v3) or ``.jsonl``."""
  if info['codebase_version'].startswith('v2'):
    path = os.path.join(root, LEGACY_TASKS_PATH)
    return {int(row['task_index']): str(row['task'])
            for row in read_jsonl(path, 'the task list')}
  path = os.path.join(root, TASKS_PATH)
  table = read_parquet(path, 'the task list')
  index_name = '__index_level_0__'
  pandas_meta = (table.schema.metadata or {}).get(b'pandas')
  if pandas_meta:
    names = nesting.loads(pandas_meta).get('index_columns') or []
    if names and isinstance(names[0], str):
      index_name = names[0]
  name = next((n for n in (index_name, 'task') if n in table.column_names),
              None)
  if name is None or 'task_index' not in table.column_names:
    raise ConversionError(
        f'has columns {table.column_names}; expected task_index and the '
        'task strings (the pandas index)', source=path)
  return dict(zip((int(i) for i in table.column('task_index').to_pylist()),
                  (str(t) for t in table.column(name).to_pylist())))


def read_parquet(path: str, what: str, columns: Optional[List[str]] = None
                 ) -> Any:
  """A whole (small) Parquet file as a Table, or one ConversionError."""
  _pa()
  import pyarrow.parquet as pq  # pylint: disable=g-import-not-at-top
  try:
    return pq.read_table(path, columns=columns)
  except FileNotFoundError:
    raise ConversionError(f'is missing: {what}', source=path) from None
  except (OSError, ValueError) as error:  # pyarrow.ArrowException included.
    raise ConversionError(f'is not a readable Parquet file: {error}',
                          source=path) from None


def read_jsonl(path: str, what: str) -> Iterator[Dict[str, Any]]:
  """The JSON objects of a ``.jsonl`` file, or one ConversionError."""
  try:
    with open(path) as f:
      lines = f.readlines()
  except FileNotFoundError:
    raise ConversionError(f'is missing: {what}', source=path) from None
  for number, line in enumerate(lines):
    if line.strip():
      try:
        yield nesting.loads(line)
      except nesting.TooDeepError as error:
        raise ConversionError(f'line {number + 1}: {error}',
                              source=path) from None
      except ValueError as error:
        raise ConversionError(f'line {number + 1} is not JSON: {error}',
                              source=path) from None
