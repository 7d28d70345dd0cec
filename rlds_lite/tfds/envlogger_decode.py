"""Fast, column-wise decoding of EnvLogger (riegeli) recordings, a chunk of episodes at a time.

The episodes are those of ``rlds_lite.envlogger.read_episodes``; how:
``docs/recording.md``, "Why writing is fast".
"""

import contextlib
import gc
import itertools
import os
from typing import Any, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from rlds_lite import envlogger as envlogger_compat
from rlds_lite.envlogger import files as envlogger_files
from rlds_lite.envlogger import reading as envlogger_reading
from rlds_lite import rlds_types
from rlds_lite.tfds import envlogger_protos

__all__ = ['LoggedChunk', 'read_logged_chunks', 'read_logged_episodes',
           'split_chunk']

# Fields holding big-endian packed values: field -> (buffer dtype, dtype).
_BUFFERS = {
    'float_values_buffer': ('>f4', np.float32),
    'int8_values': ('>i1', np.int8),
    'int16_values': ('>i2', np.int16),
    'uint8_values': ('>u1', np.uint8),
    'uint16_values': ('>u2', np.uint16),
}
# Repeated numeric fields: field -> dtype.
_REPEATED = {
    'float_values': np.float32,
    'double_values': np.float64,
    'int32_values': np.int32,
    'int64_values': np.int64,
    'uint32_values': np.uint32,
    'uint64_values': np.uint64,
    'bool_values': np.bool_,
}
_SCALAR_DIM = -438  # EnvLogger's marker of a scalar datum.
_ROW_COPY_MIN_BYTES = 1024  # Buffers this large are copied one by one.


class _Fallback(Exception):
  """The column needs EnvLogger's generic per-timestep decoding."""


def _codec():
  envlogger_compat.import_envlogger()
  from envlogger.converters import codec  # pylint: disable=g-import-not-at-top
  return codec


def _concatenated_buffers(datums: Sequence[Any], name: str, code: np.dtype,
                          size: int) -> np.ndarray:
  """The byte-buffer field ``name`` of each datum, one after another.

  Large buffers (image frames) are copied into one preallocated array as
  soon as each is read, so the chunk never holds them all as separate
  ``bytes``: joining them cost more than the copies (fresh memory for every
  chunk). A buffer that does not hold ``size`` values raises `_Fallback`.
  """
  width = size * code.itemsize
  buffers = (getattr(datum.values, name) for datum in datums)
  if width < _ROW_COPY_MIN_BYTES:
    buffers = list(buffers)
    if any(len(buffer) != width for buffer in buffers):
      raise _Fallback()
    return np.frombuffer(b''.join(buffers), code)
  flat = np.empty(len(datums) * width, np.uint8)
  for j, buffer in enumerate(buffers):
    if len(buffer) != width:
      raise _Fallback()
    flat[j * width:(j + 1) * width] = np.frombuffer(buffer, np.uint8)
  return flat.view(code)


def _decode_datums(datums: Sequence[Any]) -> np.ndarray:
  """One stacked array from datums of equal shape and storage."""
  first = datums[0]
  shape_proto = first.shape
  for datum in datums:
    if datum.shape != shape_proto:
      raise _Fallback()
  dims = [dim.size for dim in shape_proto.dim]
  shape = () if dims == [_SCALAR_DIM] else tuple(dims)
  fields = first.values.ListFields()
  if len(fields) != 1:
    raise _Fallback()
  name = fields[0][0].name
  count = len(datums)
  size = int(np.prod(shape, dtype=np.int64))
  if name in _BUFFERS:
    code, dtype = _BUFFERS[name]
    flat = _concatenated_buffers(datums, name, np.dtype(code), size)
  elif name == 'bigint_values' and not shape:  # Python ints (StepType too).
    dtype = np.int64
    flat = np.array([int.from_bytes(d.values.bigint_values[0], 'big',
                                    signed=True) for d in datums])
    if flat.dtype != np.int64:
      raise _Fallback()  # Beyond int64: as EnvLogger, keep Python ints.
  elif name in _REPEATED:
    dtype = _REPEATED[name]
    flat = np.fromiter(
        itertools.chain.from_iterable(getattr(d.values, name) for d in datums),
        dtype=dtype)
  else:
    raise _Fallback()
  if flat.size != count * size:
    raise _Fallback()
  return flat.astype(dtype, copy=False).reshape((count,) + shape)


def _decode_column(datas: Sequence[Any]) -> Any:
  """Stacks same-structured ``storage_pb2.Data`` (one per timestep)."""
  first = datas[0]
  if first.HasField('datum'):
    # A timestep without a datum has an empty default one: its shape differs.
    return _decode_datums([d.datum for d in datas])
  if first.HasField('dict'):
    if len(first.dict.kvs.values):  # pylint: disable=g-explicit-length-test
      raise _Fallback()  # Non-string keys.
    keys = sorted(first.dict.values.keys())
    for d in datas:
      if not d.HasField('dict') or sorted(d.dict.values.keys()) != keys:
        raise _Fallback()
    return {k: _decode_column([d.dict.values[k] for d in datas]) for k in keys}
  if first.HasField('tuple'):
    width = len(first.tuple.values)
    if not all(d.HasField('tuple') and len(d.tuple.values) == width
               for d in datas):
      raise _Fallback()
    return tuple(_decode_column([d.tuple.values[i] for d in datas])
                 for i in range(width))
  raise _Fallback()


def _codec_values(datas: Sequence[Any], field: str, where: str) -> List[Any]:
  """EnvLogger's codec per timestep; a value it cannot decode is named."""
  codec = _codec()
  values = []
  for j, data in enumerate(datas):
    try:
      values.append(codec.decode(data))
    except Exception as e:  # pylint: disable=broad-except
      raise envlogger_compat.CorruptRecordingError(
          f'{where}: cannot decode {field} value {j} of {len(datas)} (its '
          f'values do not match its shape?): {e!r}') from e
  return values


def _generic_column(datas: Sequence[Any], field: str, where: str) -> Any:
  """EnvLogger's codec per timestep, then stacking (the slow, general path)."""
  return envlogger_reading.stack_timesteps(
      _codec_values(datas, field, where), field, where)


def _column(datas: Sequence[Any], field: str, where: str) -> Any:
  try:
    return _decode_column(datas)
  except _Fallback:
    for j, data in enumerate(datas):
      if _is_none(data):
        raise ValueError(f'{where}: timestep {j} has no {field}; only a reset '
                         '(FIRST) timestep may lack it.') from None
    return _generic_column(datas, field, where)


def _is_none(data: Any) -> bool:
  return not data.ListFields()


def _zero_row(spec: Any, field: str, where: str) -> Any:
  """One ``[1, ...]`` row of zeros of ``spec`` (a reset timestep's value)."""
  return tf.nest.map_structure(
      lambda z: np.asarray(z)[None],
      envlogger_reading.reset_zeros(spec, field, where))


def _filled_column(datas: Sequence[Any], step_types: np.ndarray, spec: Any,
                   field: str, where: str) -> Any:
  """The column with zero rows where a reset (FIRST) timestep has no value."""
  missing = np.zeros(len(datas), bool)
  for j in np.flatnonzero(step_types == 0):  # Only resets lack values.
    missing[j] = _is_none(datas[j])
  present = [d for d, m in zip(datas, missing) if not m]
  if not present:
    zeros = _zero_row(spec, field, where)
    return tf.nest.map_structure(
        lambda z: np.repeat(z, len(datas), axis=0), zeros)
  values = _column(present, field, where)
  if not missing.any():
    return values

  def fill(column):
    out = np.zeros((len(datas),) + column.shape[1:], column.dtype)
    out[~missing] = column
    return out

  return tf.nest.map_structure(fill, values)




def _step_metadata(datas: Sequence[Any], where: str) -> Dict[str, Any]:
  if all(_is_none(d) for d in datas):
    return {}
  try:
    column = _decode_column(datas)
  except _Fallback:
    return envlogger_reading.stack_step_metadata(
        _codec_values(datas, 'step metadata', where), where)
  return envlogger_compat.as_metadata_dict(column)


def _parse(serialized: List[bytes], recording: str, index: int
           ) -> Tuple[List[Any], List[Any], List[Any]]:
  """``(timesteps, actions, custom data)`` protos of an episode's timesteps.

  Each timestep is ``(step_type, reward, discount, observation)``.
  """
  from envlogger.proto import storage_pb2  # pylint: disable=g-import-not-at-top
  timesteps, actions, custom = [], [], []
  for j, data in enumerate(serialized):
    try:
      step = storage_pb2.Data.FromString(data).tuple.values
    except Exception as e:  # pylint: disable=broad-except
      raise envlogger_compat.CorruptRecordingError(
          f'Cannot read timestep {j} of episode {index} of EnvLogger recording '
          f'{recording}: steps.riegeli (or step_offsets.riegeli) is truncated '
          f'or corrupt ({e!r}).') from e
    timestep = step[0].tuple.values if len(step) == 3 else ()
    if len(timestep) != 4:
      raise envlogger_compat.CorruptRecordingError(
          f'Timestep {j} of episode {index} of EnvLogger recording '
          f'{recording} is not an EnvLogger step (timestep, action, data).')
    timesteps.append(timestep)
    actions.append(step[1])
    custom.append(step[2])
  return timesteps, actions, custom


def _logged_episode(parsed: Tuple[List[Any], List[Any], List[Any]],
                    specs: Mapping[str, Any], metadata: Any,
                    where: str) -> Dict[str, Any]:
  """One episode in ``read_episodes``' layout, decoded column-wise."""
  timesteps, actions, custom = parsed
  step_types = np.asarray(
      _column([t[0] for t in timesteps], 'step_type', where), np.int64)
  step_types = step_types.astype(np.uint8)
  return {
      rlds_types.OBSERVATION: _column([t[3] for t in timesteps], 'observation',
                                      where),
      rlds_types.ACTION: _filled_column(actions, step_types,
                                        specs.get('action'), 'action', where),
      rlds_types.REWARD: _filled_column([t[1] for t in timesteps], step_types,
                                        specs.get('reward'), 'reward', where),
      rlds_types.DISCOUNT: _filled_column([t[2] for t in timesteps],
                                          step_types, specs.get('discount'),
                                          'discount', where),
      'step_type': step_types,
      'step_metadata': _step_metadata(custom, where),
      'episode_metadata': envlogger_compat.as_metadata_dict(metadata),
  }


_CHUNK_STEPS = 4096
"""Timesteps decoded together: per-field work is paid once per chunk."""
_CHUNK_BYTES = 64 << 20
"""At most about this many serialized bytes are decoded together (large
frames: a chunk and its arrays stay within a few hundred MB)."""
TF_DECODE_MAX_STEP_BYTES = 4096
"""Chunks whose timesteps are larger on average (serialized bytes) skip the
TF tier: its ``decode_proto`` per tree level copies the payloads below that
level, while Python's protobuf parsing costs per field, not per byte.
Measured on this project's recordings (`benchmarks/RESULTS.md`, Build): TF
decodes 200-byte vector timesteps ~2x faster than Python, and 12 KB image
timesteps (64x64x3) ~2x slower."""


def _episode_records(recording: str
                     ) -> Iterator[Tuple[int, List[bytes], Any, str,
                                         Tuple[str, int]]]:
  """``(index, serialized timesteps, metadata proto, where, (writer folder,
  index in it))`` of each episode.

  Folder by folder, the episodes every reader reads
  (`rlds_lite.envlogger.reading.recording_episodes`: what a killed writer
  left unfinished is dropped with a warning), numbered across the recording.
  """
  planned = envlogger_reading.recording_episodes(recording)
  index = 0
  for folder, bounds in planned:
    if not bounds:
      continue
    with envlogger_files.open_native(recording, folder) as reader:
      for i, (start, length) in enumerate(bounds):
        where = f'Episode {index} of EnvLogger recording {recording}'
        try:
          info = reader.episode(i, True)
          serialized = [reader.serialized_step(start + j)
                        for j in range(length)]
          metadata = info.metadata if info.metadata else None
        except Exception as e:  # pylint: disable=broad-except
          raise envlogger_compat.CorruptRecordingError(
              f'Cannot read {where.lower()} (episode_index.riegeli, '
              'episode_metadata.riegeli or steps.riegeli of '
              f'{folder} corrupt?): {e!r}') from e
        yield index, serialized, metadata, where, (folder, i)
        index += 1


def _batches(records: Iterator[Any], max_steps: int,
             max_bytes: int = None) -> Iterator[List[Any]]:
  """Consecutive episode records, about ``max_steps`` timesteps and
  ``max_bytes`` serialized bytes (default `_CHUNK_BYTES`) a batch."""
  max_bytes = max_bytes or _CHUNK_BYTES
  batch, steps, size = [], 0, 0
  for record in records:
    batch.append(record)
    steps += len(record[1])
    # None: an unreadable record, reported when the chunk is decoded.
    size += sum(len(s) for s in record[1] if s is not None)
    if steps >= max_steps or size >= max_bytes:
      yield batch
      batch, steps, size = [], 0, 0
  if batch:
    yield batch


class LoggedChunk(NamedTuple):
  """Consecutive episodes decoded together, in ``read_episodes``' layout.

  Attributes:
    indices: the episodes' indices in the recording.
    lengths: their numbers of timesteps.
    wheres: their names for error messages.
    logged: the episodes' fields concatenated along the time axis, except
      ``episode_metadata``: a list with one dict per episode.

  Example:
    >>> from rlds_lite import synthetic
    >>> recording = synthetic.catch_recording(num_episodes=2)
    >>> from rlds_lite.tfds.envlogger_episodes import recording_specs
    >>> chunk, = read_logged_chunks(recording, recording_specs(recording))
    >>> chunk.indices, chunk.lengths.tolist(), chunk.logged['observation'].shape
    ([0, 1], [10, 10], (20, 10, 5))
    >>> chunk.logged['episode_metadata']
    [{'episode_id': np.int64(0)}, {'episode_id': np.int64(1)}]
  """
  indices: List[int]
  lengths: np.ndarray
  wheres: List[str]
  logged: Dict[str, Any]


def _logged_from_columns(columns: Dict[str, Any], specs: Mapping[str, Any],
                         where: str) -> Dict[str, Any]:
  """`_logged_episode`'s result from `envlogger_protos.decode_timesteps`."""
  count = len(columns['step_type'])

  def filled(field):
    values = columns[field]
    if values is not None:
      return values
    zeros = _zero_row(specs.get(field), field, where)
    return tf.nest.map_structure(lambda z: np.repeat(z, count, axis=0), zeros)

  custom = columns['custom']
  return {
      rlds_types.OBSERVATION: columns['observation'],
      rlds_types.ACTION: filled('action'),
      rlds_types.REWARD: filled('reward'),
      rlds_types.DISCOUNT: filled('discount'),
      'step_type': columns['step_type'].astype(np.uint8),
      'step_metadata': ({} if custom is None else
                        envlogger_compat.as_metadata_dict(custom)),
  }


def _episode_metadata(batch: List[Any]) -> List[Dict[str, Any]]:
  """The episodes' metadata dicts, decoded together when they allow it."""
  protos = [r[2] for r in batch]
  if all(m is None for m in protos):
    return [{} for _ in protos]
  if len(protos) > 1 and all(m is not None for m in protos):
    try:
      column = envlogger_protos.decode_column(
          [m.SerializeToString() for m in protos])
      leaves = tf.nest.flatten(column)
      return [envlogger_compat.as_metadata_dict(tf.nest.pack_sequence_as(
          column, [leaf[k] for leaf in leaves])) for k in range(len(protos))]
    except Exception:  # pylint: disable=broad-except
      pass  # EnvLogger's codec, episode by episode.
  codec = _codec()
  decoded = []
  for (_, _, metadata, where, _) in batch:
    try:
      value = codec.decode(metadata) if metadata is not None else None
    except Exception as e:  # pylint: disable=broad-except
      raise envlogger_compat.CorruptRecordingError(
          f'Cannot read the metadata of {where.lower()} '
          f'(episode_metadata.riegeli corrupt?): {e!r}') from e
    decoded.append(envlogger_compat.as_metadata_dict(value))
  return decoded


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
  """Python's cyclic garbage collector off for the block (if it was on).

  Decoding a chunk creates tens of thousands of protobuf objects that live
  until the chunk is stacked; each batch of them counts towards a full
  collection, which walks every object of the process (~450k in a
  TF/TFDS process). Converting 64x64x3 frames, collections took ~26 us per
  step under the profiler; pausing the collector while a chunk is decoded
  saved ~5% in a fresh process and more in one holding many objects (the
  build benchmark's). The objects hold no cycles; the collector runs again
  as soon as the block ends.
  """
  was_enabled = gc.isenabled()
  gc.disable()
  try:
    yield
  finally:
    if was_enabled:
      gc.enable()


def _decode_batch(batch: List[Any], recording: str,
                  specs: Mapping[str, Any]) -> LoggedChunk:
  with _gc_paused():
    chunk = _decode_batch_now(batch, recording, specs)
  _check_resets(chunk, [r[4] for r in batch])
  return chunk


def _check_resets(chunk: LoggedChunk,
                  sources: Sequence[Tuple[str, int]]) -> None:
  """Raises unless each episode has one reset (FIRST), its first timestep.

  As ``rlds_lite.envlogger.read_episodes``: an index mixed up with another
  recording's cuts episodes elsewhere.
  """
  step_types = np.asarray(chunk.logged['step_type'])
  starts = np.cumsum(chunk.lengths) - chunk.lengths
  firsts = np.flatnonzero(step_types == 0)
  if np.array_equal(firsts, starts):
    return
  for (folder, i), start, length in zip(sources, starts, chunk.lengths):
    inside = np.flatnonzero(step_types[start:start + length] == 0)
    if inside.tolist() != [0]:
      raise envlogger_compat.CorruptRecordingError(
          f'EnvLogger file {os.path.join(folder, "episode_index.riegeli")} is '
          f'corrupt: episode {i} has FIRST timesteps at {inside.tolist()} '
          'instead of only at 0.')


def _decode_batch_now(batch: List[Any], recording: str,
                      specs: Mapping[str, Any]) -> LoggedChunk:
  where = (batch[0][3] if len(batch) == 1 else
           f'Episodes {batch[0][0]}..{batch[-1][0]} of EnvLogger recording '
           f'{recording}')
  timesteps = [s for r in batch for s in r[1]]
  try:
    if sum(map(len, timesteps)) > TF_DECODE_MAX_STEP_BYTES * len(timesteps):
      raise envlogger_protos.Unsupported()  # Large timesteps: tier 2 below.
    # Batched protobuf decoding in TF: the fast path for small timesteps.
    columns = envlogger_protos.decode_timesteps(timesteps)
    logged = _logged_from_columns(columns, specs, where)
  except Exception:  # pylint: disable=broad-except
    # Per-timestep decoding in Python: everything, with precise errors.
    parsed = ([], [], [])
    for i, serialized, *_ in batch:
      for column, values in zip(parsed, _parse(serialized, recording, i)):
        column.extend(values)
    logged = _logged_episode(parsed, specs, None, where)
  logged['episode_metadata'] = _episode_metadata(batch)
  return LoggedChunk([r[0] for r in batch],
                     np.array([len(r[1]) for r in batch], np.int64),
                     [r[3] for r in batch], logged)


def read_logged_chunks(recording: str, specs: Mapping[str, Any],
                       max_steps: Optional[int] = None
                       ) -> Iterator[LoggedChunk]:
  """Chunks of consecutive episodes of a recording, each decoded at once.

    A chunk that cannot be decoded together is decoded episode by episode.
    ``max_steps``: timesteps per chunk (about; whole episodes).

    Example:
      >>> from rlds_lite import synthetic
      >>> recording = synthetic.catch_recording(num_episodes=2)
      >>> from rlds_lite.tfds.envlogger_episodes import recording_specs
      >>> specs = recording_specs(recording)
      >>> [c.indices for c in read_logged_chunks(recording, specs)]
      [[0, 1]]
      >>> [c.indices for c in read_logged_chunks(recording, specs, max_steps=1)]
      [[0], [1]]
  """
  recording = os.fspath(recording)
  envlogger_compat.import_envlogger()
  max_steps = max_steps or _CHUNK_STEPS
  for batch in _batches(_episode_records(recording), max_steps):
    if len(batch) > 1:
      try:
        yield _decode_batch(batch, recording, specs)
        continue
      except Exception:  # pylint: disable=broad-except
        pass  # Decoded one by one below, for a precise error or result.
    for record in batch:
      yield _decode_batch([record], recording, specs)


def split_chunk(chunk: LoggedChunk) -> Iterator[Tuple[int, Dict[str, Any]]]:
  """``(index, episode)`` of each episode of a chunk (views, no copies).

  Example:
    >>> from rlds_lite import synthetic
    >>> recording = synthetic.catch_recording(num_episodes=2)
    >>> from rlds_lite.tfds.envlogger_episodes import recording_specs
    >>> chunk, = read_logged_chunks(recording, recording_specs(recording))
    >>> [(i, e['step_type'].tolist()) for i, e in split_chunk(chunk)]
    [(0, [0, 1, 1, 1, 1, 1, 1, 1, 1, 2]), (1, [0, 1, 1, 1, 1, 1, 1, 1, 1, 2])]
  """
  stops = np.cumsum(chunk.lengths)
  starts = stops - chunk.lengths
  logged = dict(chunk.logged)
  metadata = logged.pop('episode_metadata')
  paths_leaves = tf.nest.flatten(logged)
  for k, (index, a, b) in enumerate(zip(chunk.indices, starts, stops)):
    episode = tf.nest.pack_sequence_as(logged,
                                       [leaf[a:b] for leaf in paths_leaves])
    episode['episode_metadata'] = metadata[k]
    yield index, episode


def read_logged_episodes(recording: str, specs: Mapping[str, Any]
                         ) -> Iterator[Tuple[int, Dict[str, Any]]]:
  """``(index, episode)`` of a recording, as ``read_episodes`` lays them out.

    Example (EnvLogger alignment):
      >>> from rlds_lite import synthetic
      >>> recording = synthetic.catch_recording(num_episodes=2)
      >>> from rlds_lite.tfds.envlogger_episodes import recording_specs
      >>> index, logged = next(read_logged_episodes(recording,
      ...                                           recording_specs(recording)))
      >>> index, logged['action'].tolist()[:3]
      (0, [0, 2, 2])
  """
  for chunk in read_logged_chunks(recording, specs):
    yield from split_chunk(chunk)
