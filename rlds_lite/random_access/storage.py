"""Random reads of chunk records by chunk id: `ChunkStorage` (docs/random_access.md, "Storage").

Example:
  >>> from rlds_lite import synthetic
  >>> from rlds_lite.random_access import convert
  >>> source = synthetic.dataset(num_episodes=3, seed=0)
  >>> storage = ChunkStorage(convert(source, chunk_steps=16, progress=False))
  >>> storage
  ChunkStorage('.../toy_chunks/1.0.0', split='train', episodes=3, steps=97, chunks=7 of 16 steps, fixed, a snapshot of '.../toy/1.0.0')
  >>> storage.first_chunk.tolist()
  [0, 1, 4, 7]
  >>> fields = storage.fields(storage.read_block([[1, 2]]))
  >>> fields['observation'].shape, fields['offset'].tolist()
  ((1, 2, 16, 4), [[0, 16]])
"""

import json
import mmap
import os
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import atomic_output
from rlds_lite import dataset_files
from rlds_lite import nesting
from rlds_lite import rlds_types
from rlds_lite import tfrecord_frames
from rlds_lite.catalog import records as records_lib
from rlds_lite.random_access import checksums
from rlds_lite.random_access import conversion
from rlds_lite.random_access import layout as layout_lib

__all__ = ['ChunkStorage', 'DamagedChunksError', 'NotChunkedError']

PathLike = Union[str, os.PathLike]
DEFAULT_MAPPED_BUDGET = 64 << 20
"""Splits whose shards hold at most this many bytes are memory-mapped.

A trade: reading a mapped shard is fastest, but the pages read stay in the
process's RSS (as page cache) for as long as the map; a larger split is
read with ``os.preadv``, one call per record, and nothing of it stays.
Measured on the 8x vector benchmark (100 MB of shards), CPU per sample of
the read: mapped 1.8 us (pages in RSS up to the whole split), pread ~3.5 us;
mapped but dropping its pages (``MADV_DONTNEED``) every 16 MiB read 5.5 us
(page faults; and the kernel maps 16 pages around each fault, so RSS still
grew ~4x the budget). Raise it when memory allows (``mapped_budget=`` of
`ChunkStorage` and `sample_batches`)."""
_TFRECORD_HEADER = tfrecord_frames.HEADER
_TFRECORD_FOOTER = tfrecord_frames.FOOTER


class NotChunkedError(ValueError):
  """A dataset asked for random access is not a chunk dataset.

  Example:
    >>> from rlds_lite import synthetic
    >>> from rlds_lite import random_access as ra
    >>> path = synthetic.dataset(3, 4, 6, seed=0)
    >>> chunks = ra.convert(path, progress=False)
    >>> try:
    ...   ra.ChunkStorage(path)   # the source itself, not its chunk dataset
    ... except ra.NotChunkedError as e:
    ...   print('rlds-lite chunk' in str(e))
    True
  """


CONVERT_AGAIN = ('the chunk dataset is damaged: convert the source again '
                 '(rlds_lite.random_access.convert(..., overwrite=True) or '
                 'rlds-lite chunk --overwrite).')
"""How every `DamagedChunksError` message ends."""


class DamagedChunksError(dataset_files.CorruptDatasetError):
  """A file (``path``) of a chunk dataset is missing, damaged or not what it should be.

  Example:
    >>> print(DamagedChunksError('/c/1.0.0/metadata.json', 'is empty'))
    random access: /c/1.0.0/metadata.json: is empty; the chunk dataset is damaged: convert the source again (rlds_lite.random_access.convert(..., overwrite=True) or rlds-lite chunk --overwrite).
  """

  def __init__(self, path: str, detail: str):
    detail = detail.rstrip().rstrip('.')
    if not detail.endswith(CONVERT_AGAIN):
      detail = f'{detail}; {CONVERT_AGAIN}'
    super().__init__(path, detail)
    self.args = (f'random access: {self.args[0]}',)

  def __repr__(self) -> str:
    return f'DamagedChunksError({str(self)!r})'

  def __reduce__(self):   # Grain's workers send it to the main process.
    return DamagedChunksError, (self.path, self.detail)


def _builder(path: str) -> tfds.core.DatasetBuilder:
  """The TFDS builder of the chunk dataset at ``path``, damage named."""
  if not tf.io.gfile.exists(os.path.join(path, 'dataset_info.json')):
    if not tf.io.gfile.exists(path):
      raise FileNotFoundError(f'random access: dataset directory {path!r} '
                              'does not exist'
                              f'{atomic_output.missing_hint(path)}.')
    if not tf.io.gfile.isdir(path):
      raise ValueError(f'random access: {path!r} is a file, not a dataset '
                       'directory; pass the chunk dataset\'s directory '
                       f'({os.path.dirname(path)!r}).')
    raise FileNotFoundError(f'random access: {path!r} is not a TFDS dataset '
                            'directory (no dataset_info.json).')
  _check_metadata_json(path)
  try:
    return dataset_files.open_builder(path)
  except dataset_files.CorruptDatasetError as error:
    raise DamagedChunksError(error.path, error.detail) from None


def _check_metadata_json(path: str) -> None:
  """Raises `DamagedChunksError` if ``metadata.json`` is not JSON."""
  metadata = os.path.join(path, 'metadata.json')
  if not tf.io.gfile.exists(metadata):
    return   # Not a chunk dataset: NotChunkedError says so.
  with tf.io.gfile.GFile(metadata, 'rb') as f:
    data = f.read()
  try:
    nesting.loads(data.decode('utf-8'))
  except nesting.TooDeepError as error:
    raise DamagedChunksError(metadata, f'{error}; it should hold the chunk '
                             'layout') from None
  except UnicodeDecodeError:
    raise DamagedChunksError(metadata, 'is not text (not UTF-8); it should '
                             'hold the chunk layout as JSON') from None
  except json.JSONDecodeError as error:
    raise DamagedChunksError(
        metadata, f'is not valid JSON ({error.msg} at line {error.lineno} '
        f'column {error.colno}); it should hold the chunk layout') from None


def _first_line(error: BaseException) -> str:
  """``Type: first line of the message``."""
  lines = str(error).splitlines()
  return f'{type(error).__name__}: {lines[0]}' if lines else type(error).__name__


def _check_split_name(path: str, split: Any,
                      builder: tfds.core.DatasetBuilder) -> None:
  """Raises for a split that is not a plain name, or not in ``path``."""
  splits = sorted(builder.info.splits.keys())
  if not isinstance(split, str) or any(c in split for c in '[]+%:'):
    raise ValueError(f'random access: split {split!r} is not a split name: '
                     'random access reads whole splits; pass a plain split '
                     f'name (no slicing; {path!r} has {splits}).')
  if split not in splits and not tf.io.gfile.exists(
      conversion.episodes_file(path, split)):
    raise ValueError(f'random access: chunk dataset {path!r} has no split '
                     f'{split!r} (its splits: {splits}).')


def _read_table(path: str, split: str) -> Dict[str, np.ndarray]:
  """The episode table of ``split`` (length, terminated, episode_id)."""
  table_path = conversion.episodes_file(path, split)
  what = f'the episode table (lengths) of split {split!r}'
  try:
    with tf.io.gfile.GFile(table_path, 'rb') as f:
      table = np.load(f, allow_pickle=False)
      table = {key: table[key] for key in table.files}
  except tf.errors.NotFoundError:
    raise DamagedChunksError(table_path, f'is missing; it holds {what}'
                             ) from None
  except Exception as error:  # pylint: disable=broad-except
    raise DamagedChunksError(
        table_path, f'cannot be read ({_first_line(error)}); it holds {what}'
    ) from None
  missing = sorted({'length', 'terminated'} - set(table))
  if missing:
    raise DamagedChunksError(table_path, f'has no {", ".join(missing)}; it '
                             f'holds {what}')
  return table


def _check_table(path: str, split: str, table: Dict[str, np.ndarray],
                 metadata: Any) -> None:
  """Raises if the table's episodes or steps are not what `convert` wrote."""
  written = dict(metadata.get('splits', {})).get(split)
  if not isinstance(written, Mapping):
    return   # A split of no episodes (no entry).
  held = (len(table['length']), int(table['length'].sum()))
  wanted = (written.get('episodes'), written.get('steps'))
  if held != wanted:
    raise DamagedChunksError(
        conversion.episodes_file(path, split),
        f'holds {held[0]} episodes of {held[1]} steps, metadata.json says '
        f'{wanted[0]} of {wanted[1]} (the episode table was changed)')
  recorded = written.get('table_sha256')  # None in older chunk datasets.
  if recorded is not None and recorded != conversion.table_digest(table):
    raise DamagedChunksError(
        conversion.episodes_file(path, split),
        f'holds {held[0]} episodes of {held[1]} steps as metadata.json says, '
        'but not the lengths, ends or ids it recorded (the episode table was '
        'changed)')


def _not_chunked(path: str, builder: tfds.core.DatasetBuilder) -> str:
  file_format = getattr(builder.info.file_format, 'value', 'tfrecord')
  if rlds_types.STEPS in builder.info.features:
    kind = f'an RLDS episode dataset ({file_format} shards)'
  else:
    kind = 'not a chunk dataset'
  return (f'random access: {path!r} is {kind}. Random access reads a chunk '
          'dataset: convert it once with '
          f'rlds_lite.random_access.convert({path!r}) or '
          f'`rlds-lite chunk {path}` (it writes '
          f'{conversion.default_output(path)!r}), then pass that path.')


def _items(rows: np.ndarray, start: int, size: int,
           count: int = 1) -> np.ndarray:
  """``[R, count]`` (or ``[R]``) opaque ``size``-byte items from byte ``start`` of each row."""
  shape = (rows.shape[0], count) if count > 1 else (rows.shape[0],)
  strides = (rows.strides[0], size) if count > 1 else (rows.strides[0],)
  return np.ndarray(shape, np.dtype((np.void, size)), buffer=rows,
                    offset=start, strides=strides)


class ChunkStorage:
  """One split of a chunk dataset, read by chunk id.

  Attributes: ``path``, ``split``, ``layout`` (`ChunkLayout`), ``lengths``, ``terminated`` and
  ``episode_ids`` (``[E]``, or None), ``first_chunk`` (``[E + 1]``: each episode's first chunk
  id, then the number of chunks), ``fingerprint`` (layout and lengths) and ``source``.

  Args:
    mapped_budget: splits of at most this many bytes are memory-mapped, larger ones read
      with pread.

  Example:
    >>> from rlds_lite import synthetic
    >>> from rlds_lite import random_access as ra
    >>> path = synthetic.dataset(3, 4, 6, seed=0)
    >>> chunks = ra.convert(path, progress=False)
    >>> storage = ra.ChunkStorage(chunks)
    >>> storage.num_episodes, storage.lengths.tolist()
    (3, [5, 6, 6])
  """

  def __init__(self, path: PathLike, split: str = 'train', *,
               mapped_budget: int = DEFAULT_MAPPED_BUDGET):
    path = os.path.abspath(os.path.expanduser(os.fspath(path)))
    builder = _builder(path)
    metadata = builder.info.metadata or {}
    if layout_lib.LAYOUT_NAME not in metadata:
      raise NotChunkedError(_not_chunked(path, builder))
    if metadata[layout_lib.LAYOUT_NAME] != layout_lib.LAYOUT_VERSION:
      raise ValueError(f'random access: {path!r} has chunk layout version '
                       f'{metadata[layout_lib.LAYOUT_NAME]}; this rlds_lite '
                       f'reads version {layout_lib.LAYOUT_VERSION}. Convert '
                       'the source again.')
    _check_split_name(path, split, builder)
    self.path = path
    self.split = split
    try:
      self.layout = layout_lib.ChunkLayout.from_json(metadata['layout'])
      self.fingerprint = str(metadata['fingerprint'])
      # The SHA-256 of the split's step values, recorded by convert ('' in
      # older chunk datasets): the data a random-access state names.
      self.data_digest = str(dict(metadata.get('splits', {})).get(
          split, {}).get('sha256', ''))
    except (AttributeError, KeyError, TypeError, ValueError) as error:
      raise DamagedChunksError(
          os.path.join(path, 'metadata.json'), 'does not describe a chunk '
          f'layout ({_first_line(error)})') from None
    self.source = dict(metadata.get('source', {}))
    table = _read_table(path, split)
    _check_table(path, split, table, metadata)
    self.lengths = table['length'].astype(np.int64)
    self.terminated = table['terminated'].astype(bool)
    self.episode_ids = table.get('episode_id')
    steps = self.layout.chunk_steps
    counts = (self.lengths + steps - 1) // steps
    self.first_chunk = np.concatenate([[0], np.cumsum(counts)]).astype(
        np.int64)
    if split in builder.info.splits:
      self._files = records_lib.split_files(builder, split)
    else:
      self._files = records_lib.SplitFiles((), (), 'tfrecord')
    if self._files.num_episodes != self.num_chunks:
      raise DamagedChunksError(
          conversion.episodes_file(path, split),
          f'gives {self.num_chunks} chunks, the shards of split {split!r} '
          f'hold {self._files.num_episodes} records')
    self._fds: Dict[int, int] = {}
    self._maps: Dict[int, mmap.mmap] = {}
    self._views: Dict[int, np.ndarray] = {}
    self._mapped_budget = int(mapped_budget)
    self._shard_bytes: Optional[int] = None
    self._offsets: Dict[int, np.ndarray] = {}
    self._record_bytes: Optional[int] = None
    self._template: Optional[np.ndarray] = None
    self._frame_columns: Optional[np.ndarray] = None
    self._payloads: Dict[str, Tuple[int, int]] = {}
    # Which records' data checksums this process has checked (one byte a
    # record): each record is checked the first time it is read.
    self._verified = np.zeros(self.num_chunks, bool)
    # Small splits are memory-mapped (fastest; their pages count in RSS as
    # page cache); larger ones are read record by record with pread.
    self._mapped = self._total_bytes() <= self._mapped_budget
    if self.layout.fixed and self.num_chunks:
      self._init_fixed()

  # Sizes --------------------------------------------------------------------

  @property
  def num_episodes(self) -> int:
    return int(len(self.lengths))

  @property
  def num_steps(self) -> int:
    return int(self.lengths.sum())

  @property
  def num_chunks(self) -> int:
    return int(self.first_chunk[-1])

  @property
  def mapped(self) -> bool:
    """Whether the split is read through memory maps (else with pread)."""
    return self._mapped

  @property
  def record_bytes(self) -> int:
    """Bytes of one record with its framing (fixed layouts; 0 otherwise)."""
    return self._record_bytes or 0

  @property
  def chunk_steps(self) -> int:
    return self.layout.chunk_steps

  def __repr__(self) -> str:
    kind = 'fixed' if self.layout.fixed else 'parsed'
    return (f'ChunkStorage({self.path!r}, split={self.split!r}, '
            f'episodes={self.num_episodes}, steps={self.num_steps}, '
            f'chunks={self.num_chunks} of {self.chunk_steps} steps, {kind}, '
            f'a snapshot of {self.source.get("path", "its source")!r})')

  # Files --------------------------------------------------------------------

  def _fd(self, shard: int) -> int:
    if shard not in self._fds:
      self._fds[shard] = os.open(self._files.paths[shard], os.O_RDONLY)
    return self._fds[shard]

  def _map(self, shard: int) -> mmap.mmap:
    if shard not in self._maps:
      mapping = mmap.mmap(self._fd(shard), 0, prot=mmap.PROT_READ)
      mapping.madvise(mmap.MADV_RANDOM)   # No read-ahead.
      self._maps[shard] = mapping
    return self._maps[shard]

  def _rows_view(self, shard: int) -> np.ndarray:
    """Shard ``shard`` as a ``[records, record_bytes]`` uint8 array (fixed)."""
    if shard not in self._views:
      self._views[shard] = np.frombuffer(
          self._map(shard), np.uint8).reshape(-1, self._record_bytes)
    return self._views[shard]

  def _rows(self, shard: int, rows: np.ndarray
            ) -> Tuple[np.ndarray, np.ndarray]:
    """``(array, index)``: ``array[index]`` are records ``rows`` of ``shard`` (map or preadv)."""
    if self._mapped:
      return self._rows_view(shard), rows
    unique, inverse = np.unique(rows, return_inverse=True)
    size = self._record_bytes
    block = np.empty((len(unique), size), np.uint8)
    flat = memoryview(block.reshape(-1))
    fd = self._fd(shard)
    for i, row in enumerate(unique.tolist()):
      if os.preadv(fd, [flat[i * size:(i + 1) * size]], row * size) != size:
        raise DamagedChunksError(self._shard_name(shard), f'record {row} ends '
                                 'past the end of the file (it is truncated)')
    return block, inverse.reshape(rows.shape)

  def _total_bytes(self) -> int:
    """Bytes of the split's shards."""
    if self._shard_bytes is None:
      self._shard_bytes = sum(self._file_size(shard)
                              for shard in range(len(self._files.paths)))
    return self._shard_bytes

  def _file_size(self, shard: int) -> int:
    """Bytes of shard ``shard``; `DamagedChunksError` if it is missing."""
    path = self._files.paths[shard]
    try:
      return os.stat(path).st_size
    except FileNotFoundError:
      raise DamagedChunksError(
          path, f'is missing; dataset_info.json lists it with '
          f'{self._files.lengths[shard]} records of split {self.split!r}'
      ) from None

  def close(self) -> None:
    """Closes the shard files and maps (they are reopened when read again)."""
    self._views.clear()
    for mapping in self._maps.values():
      try:
        mapping.close()
      except BufferError:  # A view is still alive: the map closes with it.
        pass
    self._maps.clear()
    for fd in self._fds.values():
      os.close(fd)
    self._fds.clear()

  def __del__(self):
    try:
      self.close()
    except Exception:  # pylint: disable=broad-except
      pass

  def __getstate__(self) -> Dict[str, Any]:
    state = dict(self.__dict__)
    state.update(_fds={}, _maps={}, _views={})
    return state

  def _shard_name(self, shard: int) -> str:
    return self._files.paths[shard]

  def _first_record(self) -> bytes:
    """Record 0 of shard 0 with its framing, its checksums checked."""
    path = self._files.paths[0]
    self._file_size(0)
    with open(path, 'rb') as f:
      header = f.read(_TFRECORD_HEADER)
      size = (int(np.frombuffer(header[:8], '<u8')[0])
              if len(header) == _TFRECORD_HEADER else -1)
      if not 0 <= size <= self._file_size(0):
        raise DamagedChunksError(path, 'record 0 has no valid length '
                                 '(the file is truncated or damaged)')
      record = header + f.read(size + _TFRECORD_FOOTER)
    if len(record) != size + _TFRECORD_HEADER + _TFRECORD_FOOTER:
      raise DamagedChunksError(path, 'record 0 ends past the end of the file '
                               '(it is truncated)')
    self._check_checksums(np.frombuffer(record, np.uint8)[np.newaxis],
                          np.array([0]))
    return record

  def _init_fixed(self) -> None:
    record = self._first_record()
    data = record[_TFRECORD_HEADER:-_TFRECORD_FOOTER]
    try:
      payloads = self.layout.payloads(data)
    except (ValueError, IndexError) as error:
      raise DamagedChunksError(
          self._files.paths[0], f'record 0 is not a chunk record '
          f'({_first_line(error)})') from None
    self._payloads = {key: (start + _TFRECORD_HEADER, size)
                      for key, (start, size) in payloads.items()}
    for leaf in self.layout.leaves:
      if self._payloads.get(leaf.key, (0, -1))[1] != leaf.nbytes:
        raise DamagedChunksError(
            self._files.paths[0], f'record 0 does not hold {leaf.key!r} as '
            f'{leaf.nbytes} raw bytes')
    self._record_bytes = len(record)
    template = np.frombuffer(record, np.uint8).copy()
    inside = np.zeros(len(record), bool)
    for start, size in self._payloads.values():
      inside[start:start + size] = True
    inside[-_TFRECORD_FOOTER:] = True   # The data checksum differs per record.
    self._frame_columns = np.flatnonzero(~inside)
    self._template = template[self._frame_columns]

    for shard, (path, count) in enumerate(zip(self._files.paths,
                                              self._files.lengths)):
      size = self._file_size(shard)
      if size != count * self._record_bytes:
        raise DamagedChunksError(
            path, f'holds {size} bytes, but its {count} records of '
            f'{self._record_bytes} bytes make {count * self._record_bytes} '
            '(it is truncated or was changed)')

  # Reads --------------------------------------------------------------------

  def _check_ids(self, ids: np.ndarray) -> None:
    if ids.size and (ids.min() < 0 or ids.max() >= self.num_chunks):
      bad = ids[(ids < 0) | (ids >= self.num_chunks)][0]
      raise IndexError(f'random access: chunk {bad} is out of range: '
                       f'{self.path!r} split {self.split!r} has '
                       f'{self.num_chunks} chunks.')

  def read_block(self, chunk_ids: Any) -> np.ndarray:
    """The records of ``chunk_ids`` (any shape) as ``[..., record_bytes]`` uint8, checked."""
    if not self.layout.fixed:
      raise ValueError('read_block: the layout has image or string fields; '
                       'use read_records.')
    ids = np.asarray(chunk_ids, np.int64)
    self._check_ids(ids)
    flat = ids.reshape(-1)
    out = np.empty([flat.size, self._record_bytes or 0], np.uint8)
    if flat.size:
      shards, rows = self._files.locate(flat)
      for shard in np.unique(shards):
        chosen = shards == shard
        array, index = self._rows(int(shard), rows[chosen])
        out[chosen] = array[index]
      self._verify(out, flat)
      unique, first = self._unverified(flat)
      if unique.size:
        self._check_checksums(out[first], unique)
    return out.reshape(ids.shape + (out.shape[-1],))

  def gather_steps(self, chunk_ids: Any, steps: Any) -> Dict[str, np.ndarray]:
    """Step ``steps[i]`` of chunk ``chunk_ids[i]`` of every fixed leaf, ``[*S, ...]`` NumPy.

    Copies only those steps' bytes; the records touched are checked as in `read_block`.
    """
    if not self.layout.fixed:
      raise ValueError('gather_steps: the layout has image or string fields; '
                       'use read_records.')
    ids = np.asarray(chunk_ids, np.int64)
    positions = np.asarray(steps, np.int64)
    self._check_ids(ids)
    flat_ids, flat_steps = ids.reshape(-1), positions.reshape(-1)
    out = {leaf.path: np.empty((flat_ids.size,) + leaf.shape[1:], leaf.dtype)
           for leaf in self.layout.leaves}
    if not flat_ids.size:
      return {k: v.reshape(ids.shape + v.shape[1:]) for k, v in out.items()}
    shards, rows = self._files.locate(flat_ids)
    groups = ([(0, slice(None))] if len(self._files.paths) == 1 else
              [(int(shard), shards == shard) for shard in np.unique(shards)])
    for shard, chosen in groups:
      view, shard_rows = self._rows(shard, rows[chosen])
      # Each record's length header and its episode and offset fields: with
      # records of one size, a record out of place or of another episode
      # shows there.
      self._check_frames(_items(view, 0, _TFRECORD_HEADER)[shard_rows],
                         flat_ids[chosen], self._header_values(view,
                                                               shard_rows))
      unique, first = self._unverified(flat_ids[chosen])
      if unique.size:   # Records read for the first time: whole, once.
        self._check_checksums(view[shard_rows[first]], unique)
      step = flat_steps[chosen]
      for leaf, start, size in self.payload_slices():
        # [records, C] items of one step's bytes over the map (a view): the
        # gather copies each step with one memcpy.
        payload = _items(view, start, size // self.chunk_steps,
                         self.chunk_steps)
        values = payload[shard_rows, step]
        out[leaf.path][chosen] = values.view(leaf.dtype).reshape(
            (len(shard_rows),) + leaf.shape[1:])
    return {k: v.reshape(ids.shape + v.shape[1:]) for k, v in out.items()}

  def _check_frames(self, frames: np.ndarray, ids: np.ndarray,
                    header: np.ndarray) -> None:
    """Raises naming the first record whose framing or header is wrong."""
    template = _items(self._template[np.newaxis, :_TFRECORD_HEADER], 0,
                      _TFRECORD_HEADER)[0]
    wrong = (frames != template) | (header != self._wanted_header(ids)).any(
        axis=1)
    if wrong.any():
      first = int(np.flatnonzero(wrong)[0])
      self._raise_wrong(int(ids[first]), header[first])

  def _wanted_header(self, ids: np.ndarray) -> np.ndarray:
    """``[R, 3]``: the episode, offset and num_steps the table gives ``ids``."""
    episodes = np.searchsorted(self.first_chunk, ids, side='right') - 1
    offsets = (ids - self.first_chunk[episodes]) * self.chunk_steps
    num_steps = np.minimum(self.lengths[episodes] - offsets, self.chunk_steps)
    return np.stack([episodes, offsets, num_steps], axis=-1)

  def _header_values(self, view: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``[R, 3]`` int64: the episode, offset and num_steps of ``rows``."""
    out = np.empty([len(rows), 3], np.int64)
    for i, name in enumerate(layout_lib.HEADER_FIELDS):
      start, _ = self._payloads[name]
      out[:, i] = _items(view, start, 8)[rows].view('<i8')
    return out

  def _raise_wrong(self, chunk: int, held: np.ndarray) -> None:
    """Raises for chunk ``chunk``, which holds header ``held`` (`_wanted_header`)."""
    path, row = self._place(chunk)
    episode, offset, num_steps = self._wanted_header(np.array([chunk]))[0]
    raise DamagedChunksError(
        path, f'record {row} (chunk {chunk}) is not chunk '
        f'{offset // self.chunk_steps} of episode {episode} ({num_steps} '
        f'steps) as the episode table says (it holds episode {held[0]}, '
        f'offset {held[1]}, {held[2]} steps, or its bytes are damaged)')

  def _place(self, chunk: int) -> Tuple[str, int]:
    """``(file, record)`` of chunk ``chunk``."""
    shard, row = (int(v[0]) for v in self._files.locate([chunk]))
    return self._shard_name(shard), row

  def _check_checksums(self, records: Union[np.ndarray, List[bytes]],
                       ids: np.ndarray) -> None:
    """Checks the masked CRC32C of whole records of chunks ``ids``, then marks them verified."""
    if isinstance(records, np.ndarray):
      header = records[:, :_TFRECORD_HEADER]
      data = records[:, _TFRECORD_HEADER:-_TFRECORD_FOOTER]
      footer = records[:, -_TFRECORD_FOOTER:]
    else:
      header = np.frombuffer(b''.join(r[:_TFRECORD_HEADER] for r in records),
                             np.uint8).reshape(-1, _TFRECORD_HEADER)
      data = [r[_TFRECORD_HEADER:-_TFRECORD_FOOTER] for r in records]
      footer = np.frombuffer(b''.join(r[-_TFRECORD_FOOTER:] for r in records),
                             np.uint8).reshape(-1, _TFRECORD_FOOTER)
    stored = np.ascontiguousarray(footer).view('<u4')[:, 0]
    length_crc = np.ascontiguousarray(header[:, 8:]).view('<u4')[:, 0]
    wrong = ((checksums.masked_crc32c(data) != stored) |
             (checksums.masked_crc32c(header[:, :8]) != length_crc))
    if wrong.any():
      self._raise_checksum(int(ids[np.flatnonzero(wrong)[0]]))
    self._verified[ids] = True

  def _raise_checksum(self, chunk: int) -> None:
    path, row = self._place(chunk)
    episode = int(np.searchsorted(self.first_chunk, chunk, side='right') - 1)
    offset = (chunk - int(self.first_chunk[episode])) * self.chunk_steps
    raise DamagedChunksError(
        path, f'record {row} (chunk {chunk}: episode {episode}, steps '
        f'{offset}-{offset + self.chunk_steps - 1}) does not match its '
        'checksum (its bytes were changed)')

  def _unverified(self, ids: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(chunk ids, first index in ids)`` of the records not yet checked."""
    new = np.flatnonzero(~self._verified[ids])
    if not new.size:
      return new, new
    unique, first = np.unique(ids[new], return_index=True)
    return unique, new[first]

  def _verify(self, block: np.ndarray, ids: np.ndarray) -> None:
    frames = block[:, self._frame_columns]
    fields = self.header_fields(block)
    header = np.stack([fields[name] for name in layout_lib.HEADER_FIELDS],
                      axis=-1)
    bad = np.flatnonzero((frames != self._template).any(axis=1) |
                         (header != self._wanted_header(ids)).any(axis=1))
    if bad.size:
      first = int(bad[0])
      self._raise_wrong(int(ids[first]), header[first])

  def header_fields(self, block: np.ndarray) -> Dict[str, np.ndarray]:
    """``episode``, ``offset``, ``num_steps`` of a block of records."""
    out = {}
    for name in layout_lib.HEADER_FIELDS:
      start, size = self._payloads[name]
      out[name] = np.ascontiguousarray(block[..., start:start + size]).view(
          '<i8')[..., 0]
    return out

  def payload_slices(self) -> List[Tuple[layout_lib.Leaf, int, int]]:
    """``(leaf, start, size)`` of each fixed leaf in a record of a block."""
    return [(leaf,) + self._payloads[leaf.key] for leaf in self.layout.leaves]

  def fields(self, block: np.ndarray) -> Dict[str, np.ndarray]:
    """NumPy step fields ``{path: [..., C, ...]}`` (and header fields) of a block."""
    out = self.header_fields(block)
    lead = block.shape[:-1]
    for leaf, start, size in self.payload_slices():
      raw = np.ascontiguousarray(block[..., start:start + size])
      out[leaf.path] = raw.view(leaf.dtype).reshape(lead + leaf.shape)
    return out

  def _record_offsets(self, shard: int) -> np.ndarray:
    if shard not in self._offsets:
      path = self._files.paths[shard]
      self._file_size(shard)
      try:
        self._offsets[shard] = records_lib.record_offsets(
            path, self._files.lengths[shard])
      except ValueError as error:
        detail = str(error)
        if detail.startswith(path + ': '):
          detail = detail[len(path) + 2:]
        raise DamagedChunksError(path, detail) from None
    return self._offsets[shard]

  def _read_bytes(self, shard: int, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of shard ``shard`` (map or pread)."""
    if self._mapped:
      return self._map(shard)[start:end]
    return os.pread(self._fd(shard), end - start, start)

  def read_records(self, chunk_ids: Any) -> List[bytes]:
    """The serialized records of ``chunk_ids`` (flattened, any layout), checked at first read."""
    ids = np.asarray(chunk_ids, np.int64).reshape(-1)
    self._check_ids(ids)
    out: List[bytes] = [b''] * ids.size
    if not ids.size:
      return out
    unique, first = self._unverified(ids)
    whole = np.zeros(ids.size, bool)
    whole[first] = True
    full: Dict[int, bytes] = {}
    shards, rows = self._files.locate(ids)
    for shard in np.unique(shards).tolist():
      offsets = self._record_offsets(shard)
      chosen = np.flatnonzero(shards == shard)
      for i, start, end in zip(chosen.tolist(),
                               offsets[rows[chosen]].tolist(),
                               offsets[rows[chosen] + 1].tolist()):
        if whole[i]:
          full[i] = self._read_bytes(shard, start, end)
          out[i] = full[i][_TFRECORD_HEADER:-_TFRECORD_FOOTER]
        else:
          out[i] = self._read_bytes(shard, start + _TFRECORD_HEADER,
                                    end - _TFRECORD_FOOTER)
    if unique.size:
      self._check_checksums([full[i] for i in first.tolist()], unique)
    return out


def open_storage(path: Union[PathLike, ChunkStorage],
                 split: str = 'train',
                 mapped_budget: Optional[int] = None) -> ChunkStorage:
  """``path`` as a `ChunkStorage` (a storage passes through).

  Example:
    >>> open_storage('/no/such/dataset')
    Traceback (most recent call last):
    ...
    FileNotFoundError: random access: dataset directory '/no/such/dataset' does not exist.
  """
  if isinstance(path, ChunkStorage):
    return path
  return ChunkStorage(path, split, mapped_budget=(
      DEFAULT_MAPPED_BUDGET if mapped_budget is None else mapped_budget))
