"""The files of a prepared TFDS dataset: checked when opened, named when damaged.

What is checked when: docs/guarantees.md ("Corrupt files").
"""

import json
import os
import re
import struct
from typing import (Any, Callable, Collection, Dict, List, NamedTuple,
                    Optional, Sequence, Tuple, Union)

from google.protobuf import json_format
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import nesting
from rlds_lite import tfrecord_frames
from rlds_lite.tfds import publish

PathLike = Union[str, os.PathLike]
Reader = Callable[[str], tf.data.Dataset]

INFO_FILE = 'dataset_info.json'
FEATURES_FILE = 'features.json'
_FRAMING = tfrecord_frames.HEADER + tfrecord_frames.FOOTER
_MAX_TF_MESSAGE = 240

CORRUPT_FILE = 'corrupt_file'
UNDECODABLE = 'undecodable'
FEATURES_MISMATCH = 'features_mismatch'


class CorruptDatasetError(ValueError):
  """A dataset file is missing, damaged or disagrees with the dataset's metadata.

  The message is one line: ``<file>: episode <i> of split '<split>', field '<field>': <what>``.
  Attributes: ``path``, ``detail``, ``kind`` (``'corrupt_file'``, ``'undecodable'`` or
  ``'features_mismatch'``), ``episode``, ``split``, ``field``, ``step`` (None where unknown)
  and ``cause`` (TensorFlow's message for undecodable data).

  Example:
    >>> str(CorruptDatasetError('/d/x-train.tfrecord-00001', 'is empty.',
    ...                         episode=4, split='train'))
    "/d/x-train.tfrecord-00001: episode 4 of split 'train': is empty."
  """

  def __init__(self, path: str, message: str, *, episode: Optional[int] = None,
               split: Optional[str] = None, field: Optional[str] = None,
               kind: str = CORRUPT_FILE, step: Optional[int] = None,
               cause: Optional[str] = None):
    where = []
    if episode is not None:
      where.append(f'episode {episode}' +
                   (f' of split {split!r}' if split else ''))
    if field is not None:
      where.append(f'field {field!r}')
    text = f'{path}: ' + (', '.join(where) + ': ' if where else '') + message
    super().__init__(' '.join(text.split()))
    self.path = path
    self.detail = ' '.join(message.split())
    self.kind = kind
    self.episode = episode
    self.split = split
    self.field = field
    self.step = step
    self.cause = cause

  def __repr__(self) -> str:
    return f'CorruptDatasetError({str(self)!r})'

  def __eq__(self, other: Any) -> bool:
    return isinstance(other, CorruptDatasetError) and str(self) == str(other)

  def __hash__(self) -> int:
    return hash(str(self))


# ---------------------------------------------------------------------------
# Metadata: dataset_info.json and features.json.


def _read_json(path: str, what: str) -> Any:
  """The JSON value of a metadata file, or a CorruptDatasetError naming it."""
  try:
    with tf.io.gfile.GFile(path, 'rb') as f:
      data = f.read()
  except tf.errors.NotFoundError:
    raise CorruptDatasetError(path, f'is missing; it holds {what}.') from None
  except (tf.errors.OpError, OSError) as e:
    raise CorruptDatasetError(path, f'cannot be read: {_short(e)}') from None
  if not data.strip():
    raise CorruptDatasetError(path, f'is empty; it should hold {what}.')
  try:
    return nesting.loads(data.decode('utf-8'))
  except nesting.TooDeepError as e:
    raise CorruptDatasetError(path, f'{e}; it should hold {what}.') from None
  except UnicodeDecodeError:
    raise CorruptDatasetError(
        path, f'is not text (not UTF-8); it should hold {what} as JSON.'
    ) from None
  except json.JSONDecodeError as e:
    raise CorruptDatasetError(
        path, f'is not valid JSON ({e.msg} at line {e.lineno} column '
        f'{e.colno}); it should hold {what}.') from None


def _info_proto(dataset_dir: str) -> Any:
  """The parsed ``dataset_info.json``; CorruptDatasetError naming it if bad."""
  path = os.path.join(dataset_dir, INFO_FILE)
  what = 'the TFDS DatasetInfo (name, version, splits)'
  value = _read_json(path, what)
  if not isinstance(value, dict):
    kind = {list: 'list', str: 'string', bool: 'boolean', int: 'number',
            float: 'number', type(None): 'null'}.get(type(value), 'value')
    raise CorruptDatasetError(
        path, f'holds a JSON {kind}, not an object; it should hold {what}.')
  proto = tfds.core.proto.dataset_info_pb2.DatasetInfo()
  try:
    json_format.ParseDict(value, proto)
  except json_format.ParseError as e:
    raise CorruptDatasetError(
        path, f'is not a TFDS DatasetInfo: {_first_sentence(str(e))}'
    ) from None
  if not proto.name:
    raise CorruptDatasetError(path, 'names no dataset ("name" is empty).')
  try:
    tfds.core.Version(proto.version)
  except ValueError:
    raise CorruptDatasetError(
        path, f'has no valid version (got {proto.version!r}; expected '
        'x.y.z).') from None
  if proto.file_format:
    try:
      tfds.core.FileFormat(proto.file_format)
    except ValueError:
      raise CorruptDatasetError(
          path, f'names an unknown file format {proto.file_format!r}.'
      ) from None
  return proto


def _read_features_json(path: str, what: str) -> Any:
  """The features ``features.json`` describes; CorruptDatasetError naming it."""
  value = _read_json(path, what)
  if not isinstance(value, dict) or '.' not in str(
      value.get('pythonClassName', '')):
    raise CorruptDatasetError(
        path, f'does not describe TFDS features (no "pythonClassName"); it '
        f'should hold {what}.')
  try:
    return tfds.features.FeatureConnector.from_json(value)
  except Exception as e:  # pylint: disable=broad-except
    raise CorruptDatasetError(
        path, f'does not describe TFDS features: {_first_sentence(str(e))}; '
        f'it should hold {what}.') from None


def _features_problem(dataset_dir: str, proto: Any
                      ) -> Optional[CorruptDatasetError]:
  """What keeps TFDS from restoring the features (from the file it reads), or None."""
  info_path = os.path.join(dataset_dir, INFO_FILE)
  if proto.HasField('features'):
    try:
      tfds.features.FeatureConnector.from_proto(proto.features)
    except Exception as e:  # pylint: disable=broad-except
      return CorruptDatasetError(
          info_path, 'its "features" do not describe TFDS features: '
          f'{_first_sentence(str(e))}')
    return None
  path = os.path.join(dataset_dir, FEATURES_FILE)
  try:
    if not tf.io.gfile.exists(path):
      return CorruptDatasetError(
          path, f'is missing, and {INFO_FILE} does not describe the features '
          'either: the dataset cannot be decoded.')
    _read_features_json(path, 'the features of the dataset')
  except CorruptDatasetError as e:
    return e
  return None


def metadata_problem(dataset_dir: PathLike) -> Optional[CorruptDatasetError]:
  """A `CorruptDatasetError` naming the first damaged metadata file of ``dataset_dir``, or None.

  Example:
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> with open(os.path.join(d, INFO_FILE), 'w') as f:
    ...   _ = f.write('{"name": "toy", ')
    >>> metadata_problem(d)  # doctest: +ELLIPSIS
    CorruptDatasetError('.../dataset_info.json: is not valid JSON (Expecting property name enclosed in double quotes at line 1 column 17); it should hold the TFDS DatasetInfo (name, version, splits).')
  """
  dataset_dir = os.fspath(dataset_dir)
  try:
    proto = _info_proto(dataset_dir)
  except CorruptDatasetError as e:
    return e
  return _features_problem(dataset_dir, proto)


def open_builder(dataset_dir: PathLike) -> tfds.core.DatasetBuilder:
  """``tfds.builder_from_directory`` of one published version, damage named.

  Example:
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> open(os.path.join(d, INFO_FILE), 'w').close()
    >>> open_builder(d)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rlds_lite.dataset_files.CorruptDatasetError: .../dataset_info.json: is empty; it should hold the TFDS DatasetInfo (name, version, splits).
  """
  dataset_dir = os.fspath(dataset_dir)
  try:
    return publish.read_builder(dataset_dir)  # Of one published version.
  except Exception as error:  # pylint: disable=broad-except
    problem = metadata_problem(dataset_dir)
    if problem is None:
      problem = CorruptDatasetError(
          os.path.join(dataset_dir, INFO_FILE),
          f'TFDS cannot open the dataset: {type(error).__name__}: '
          f'{_first_sentence(str(error))}')
    raise problem from None


def check_has_splits(builder: tfds.core.DatasetBuilder) -> None:
  """Raises a `CorruptDatasetError` naming ``dataset_info.json`` if it lists no split."""
  if not builder.info.splits.keys():
    raise CorruptDatasetError(
        os.path.join(os.fspath(builder.data_dir), INFO_FILE),
        'lists no splits: the dataset holds no data (its "splits" are missing '
        'or empty).')


def features_mismatch(dataset_dir: PathLike) -> Optional[CorruptDatasetError]:
  """What is wrong with ``features.json`` beside ``dataset_info.json``'s features, or None.

  Reported by ``rlds_lite.validate``, not raised by readers (TFDS decodes with
  ``dataset_info.json``).

  Example:
    >>> from rlds_lite import synthetic
    >>> path = synthetic.dataset(2, seed=0)
    >>> features_mismatch(path) is None
    True
    >>> os.remove(os.path.join(path, FEATURES_FILE))
    >>> features_mismatch(path)  # doctest: +ELLIPSIS
    CorruptDatasetError('.../features.json: is missing; TFDS decodes with the features in dataset_info.json, but tools that look for features.json (tfds.builder or tfds.load by name) do not find the dataset.')
  """
  dataset_dir = os.fspath(dataset_dir)
  path = os.path.join(dataset_dir, FEATURES_FILE)
  try:
    proto = _info_proto(dataset_dir)
    if not proto.HasField('features'):
      return None
    declared = tfds.features.FeatureConnector.from_proto(proto.features)
  except Exception:  # pylint: disable=broad-except
    return None  # Reported by `metadata_problem`.

  def problem(detail: str, field: Optional[str] = None) -> CorruptDatasetError:
    return CorruptDatasetError(path, detail, field=field,
                               kind=FEATURES_MISMATCH)

  if not tf.io.gfile.exists(path):
    return problem(
        f'is missing; TFDS decodes with the features in {INFO_FILE}, but tools '
        f'that look for {FEATURES_FILE} (tfds.builder or tfds.load by name) do '
        'not find the dataset.')
  try:
    stored = _read_features_json(
        path, f'a copy of the features in {INFO_FILE} (which TFDS decodes '
        'with), for tools that read it')
  except CorruptDatasetError as e:
    return problem(e.detail)
  if declared.to_json() == stored.to_json():
    return None
  try:
    ours, theirs = _tensor_infos(stored), _tensor_infos(declared)
  except Exception:  # pylint: disable=broad-except
    ours = theirs = {}
  for name in sorted(set(ours) | set(theirs)):
    if ours.get(name) != theirs.get(name):
      return problem(
          f'disagrees with the features in {INFO_FILE}, which TFDS decodes '
          f'with: {_info_text(ours.get(name))} here, '
          f'{_info_text(theirs.get(name))} there.', field=name or None)
  return problem(
      f'disagrees with the features in {INFO_FILE} (which TFDS decodes with) '
      'in an encoding or other detail.')


def _tensor_infos(features: Any) -> Dict[str, Any]:
  """``{'steps/observation': TensorInfo, ...}`` of a top-level feature."""
  flat = {}

  def walk(value, prefix):
    if isinstance(value, dict):
      for key, item in value.items():
        walk(item, f'{prefix}/{key}' if prefix else key)
    else:
      flat[prefix] = (tuple(value.shape), value.tf_dtype.name)

  walk(features.get_tensor_info(), '')
  return flat


def _info_text(info: Optional[Tuple[Any, str]]) -> str:
  if info is None:
    return 'absent'
  shape, dtype = info
  return f'{dtype} of shape {tuple(shape)}'


# ---------------------------------------------------------------------------
# Shard files.


class Shard(NamedTuple):
  """One shard of a split: ``path``, ``split``, ``first`` episode, ``count``, ``file_format``."""
  path: str
  split: str
  first: int
  count: int
  file_format: str

  def episodes_text(self) -> str:
    """``'episodes 4-5'`` (or ``'episode 4'``) of the shard, for messages."""
    if self.count == 1:
      return f'episode {self.first}'
    return f'episodes {self.first}-{self.first + self.count - 1}'


def file_format(builder: tfds.core.DatasetBuilder) -> str:
  """``'tfrecord'`` or ``'array_record'`` (or another TFDS format name)."""
  value = builder.info.file_format
  return getattr(value, 'value', None) or str(value or 'tfrecord')


def split_shards(builder: tfds.core.DatasetBuilder,
                 split: Any = None) -> List[Shard]:
  """The shard files a read of ``split`` opens, in split order (every split's for None).

  Example:
    >>> from rlds_lite import synthetic
    >>> path = synthetic.dataset(3, seed=0)
    >>> [(os.path.basename(s.path), s.first, s.count)
    ...  for s in split_shards(open_builder(path), 'train[1:]')]
    [('toy-train.tfrecord-00000', 0, 3)]
  """
  shard_format = file_format(builder)
  names = list(builder.info.splits.keys())
  if split is None:
    return [s for name in names for s in _shards_of(builder, name, shard_format)]
  if isinstance(split, str) and split in names:
    return _shards_of(builder, split, shard_format)
  every = [s for name in names for s in _shards_of(builder, name, shard_format)]
  try:
    instructions = builder.info.splits[split].file_instructions
  except Exception:  # pylint: disable=broad-except
    return every  # A form TFDS resolves later; check every file.
  by_path = {s.path: s for s in every}
  shards, seen = [], set()
  for instruction in instructions:
    shard = by_path.get(os.fspath(instruction.filename))
    if shard is not None and shard.path not in seen:
      seen.add(shard.path)
      shards.append(shard)
  return shards


def _shards_of(builder: tfds.core.DatasetBuilder, name: str,
               shard_format: str) -> List[Shard]:
  """The shards of one split, by its plain name."""
  info = builder.info.splits[name]
  shards, first = [], 0
  for path, count in zip(info.filepaths, info.shard_lengths):
    shards.append(Shard(os.fspath(path), name, first, int(count), shard_format))
    first += int(count)
  return shards


def _file_sizes(directories: Sequence[str]) -> Optional[Dict[str, int]]:
  """``{path: size}`` of the files in local directories (None if remote)."""
  sizes = {}
  for directory in directories:
    if '://' in directory:
      return None
    try:
      with os.scandir(directory) as entries:
        for entry in entries:
          try:
            if entry.is_file():
              sizes[entry.path] = entry.stat().st_size
          except OSError:
            continue
    except OSError:
      continue
  return sizes


def _missing(shard: Shard) -> CorruptDatasetError:
  return CorruptDatasetError(
      shard.path, f'is missing; {INFO_FILE} lists it with '
      f'{shard.episodes_text()} of split {shard.split!r}.')


def _size_problem(shard: Shard, size: int) -> Optional[CorruptDatasetError]:
  """Problems visible from the size alone."""
  if shard.count and size == 0:
    return CorruptDatasetError(
        shard.path, f'is empty; {INFO_FILE} says it holds '
        f'{shard.episodes_text()} of split {shard.split!r}.')
  if shard.file_format == 'tfrecord' and size < _FRAMING * shard.count:
    return CorruptDatasetError(
        shard.path, f'is truncated: {size} bytes cannot hold the '
        f'{shard.count} records of {shard.episodes_text()} of split '
        f'{shard.split!r} ({_FRAMING} bytes of framing each).',
        episode=None)
  return None


def check_open(builder: tfds.core.DatasetBuilder, split: Any) -> None:
  """The cheap checks of ``rlds_lite.load``: the split's shards look whole (no file read).

  Example:
    >>> from rlds_lite import synthetic
    >>> path = synthetic.dataset(3, seed=0)
    >>> os.remove(os.path.join(path, 'toy-train.tfrecord-00000'))
    >>> check_open(open_builder(path), 'train')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rlds_lite.dataset_files.CorruptDatasetError: .../toy-train.tfrecord-00000: is missing; dataset_info.json lists it with episodes 0-2 of split 'train'.
  """
  shards = split_shards(builder, split)
  directories = sorted({os.path.dirname(s.path) for s in shards})
  sizes = _file_sizes(directories)
  if sizes is None:
    for shard in shards:
      if not tf.io.gfile.exists(shard.path):
        raise _missing(shard)
    return
  for shard in shards:
    if shard.path not in sizes:
      raise _missing(shard)
    problem = _size_problem(shard, sizes[shard.path])
    if problem is not None:
      raise problem
  if shards and shards[0].file_format == 'tfrecord':
    _check_split_bytes(builder, shards, sizes)


def _check_split_bytes(builder: tfds.core.DatasetBuilder, shards: List[Shard],
                       sizes: Dict[str, int]) -> None:
  """Raises if a split's TFRecord files do not add up to ``numBytes``."""
  for name in sorted({s.split for s in shards}):
    info = builder.info.splits[name]
    expected = int(info.num_bytes)
    paths = [s.path for s in shards if s.split == name]
    if len(paths) != info.num_shards:
      paths = [s.path for s in _shards_of(builder, name, 'tfrecord')]
    if not expected or any(p not in sizes for p in paths):
      continue
    total = sum(sizes[p] for p in paths)
    if total in (expected, expected + _FRAMING * int(info.num_examples)):
      continue
    for problem in find_damage(builder, name):
      raise problem


# ---------------------------------------------------------------------------
# Record framing.

_CRC_TABLE = []
for _byte in range(256):
  _crc = _byte
  for _ in range(8):
    _crc = (_crc >> 1) ^ (0x82F63B78 if _crc & 1 else 0)
  _CRC_TABLE.append(_crc)
del _byte, _crc


def _masked_crc32c(data: bytes) -> int:
  """TFRecord's masked CRC-32C (Castagnoli) of a few bytes."""
  crc = 0xFFFFFFFF
  for byte in data:
    crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
  crc ^= 0xFFFFFFFF
  return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _open_binary(path: str):
  if '://' in path:
    return tf.io.gfile.GFile(path, 'rb')
  return open(path, 'rb')


def scan_tfrecord(path: str) -> Tuple[int, Optional[str], Optional[int]]:
  """Walks a TFRecord file's headers: ``(whole records, problem or None, bad record or None)``.

  Example:
    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), 'x.tfrecord')
    >>> with tf.io.TFRecordWriter(path) as w:
    ...   w.write(b'abc'); w.write(b'defg')
    >>> scan_tfrecord(path)
    (2, None, None)
    >>> with open(path, 'r+b') as f:
    ...   _ = f.truncate(33)
    >>> scan_tfrecord(path)
    (1, 'is truncated: it ends inside record 1 (33 bytes; the record needs 39)', 1)
  """
  def header_ok(header: bytes) -> bool:
    return struct.unpack('<I', header[8:])[0] == _masked_crc32c(header[:8])
  with _open_binary(path) as f:
    f.seek(0, 2)
    size = f.tell()
    try:
      count = sum(1 for _ in tfrecord_frames.frames(f, size, header_ok))
    except tfrecord_frames.FramingError as e:
      if e.length is None:
        problem = (f'is truncated: it ends inside the header of record '
                   f'{e.record} ({size} bytes)')
      elif not e.cut:
        problem = (f'record {e.record} has a corrupted header at byte '
                   f'{e.offset} (bad length checksum)')
      else:
        problem = (f'is truncated: it ends inside record {e.record} ({size} '
                   f'bytes; the record needs {e.offset + _FRAMING + e.length})')
      return e.record, problem, e.record
  return count, None, None


def _corrupted_records(shards: List[Shard]) -> List[CorruptDatasetError]:
  """TFRecord shards (whole framing) whose data checksums fail, one error each."""
  found = []
  while shards:
    done = 0
    try:
      records = tf.data.TFRecordDataset([s.path for s in shards])
      for _ in records.prefetch(64):
        done += 1
      return found
    except tf.errors.OpError as e:
      index = 0
      while index < len(shards) - 1 and done >= shards[index].count:
        done -= shards[index].count
        index += 1
      shard = shards[index]
      found.append(_located(shard, f'record {done} is corrupted ({_short(e)})',
                            done))
      shards = shards[index + 1:]
  return found


def _located(shard: Shard, problem: str,
             bad: Optional[int]) -> CorruptDatasetError:
  """The error of a damaged shard, with the episode of its bad record if known."""
  if bad is not None and bad < shard.count:
    return CorruptDatasetError(
        shard.path, f'{problem}; the file holds {shard.episodes_text()}.',
        episode=shard.first + bad, split=shard.split)
  return CorruptDatasetError(
      shard.path, f'{problem}; the file holds {shard.episodes_text()} of '
      f'split {shard.split!r}.')


def _scan_array_record(path: str, read_all: bool
                       ) -> Tuple[int, Optional[str], Optional[int]]:
  """Opens (and reads) an ArrayRecord file: ``(records, problem, bad_record)``."""
  from array_record.python import array_record_module  # pylint: disable=g-import-not-at-top
  reader = array_record_module.ArrayRecordReader(path)
  try:
    if not reader.ok():
      return 0, ('is not a readable ArrayRecord file (its index cannot be '
                 'read: the file is truncated or damaged)'), None
    count = reader.num_records()
    if read_all:
      for start in range(0, count, 64):
        stop = min(count, start + 64)
        try:
          reader.read(start, stop)
        except Exception:  # pylint: disable=broad-except
          for index in range(start, stop):  # Which record?
            try:
              reader.read(index, index + 1)
            except Exception as e:  # pylint: disable=broad-except
              text = _first_sentence(str(e)) or type(e).__name__
              return count, f'record {index} is corrupted ({text})', index
    return count, None, None
  finally:
    try:
      reader.close()
    except Exception:  # pylint: disable=broad-except
      pass  # A damaged file fails to close too; the problem is reported.


def _shard_damage(shard: Shard, records: bool) -> Optional[CorruptDatasetError]:
  """The damage of one shard file found from its framing (and records)."""
  if not tf.io.gfile.exists(shard.path):
    return _missing(shard)
  try:
    problem = _size_problem(shard, tf.io.gfile.stat(shard.path).length)
    if problem is not None:
      return problem
    if shard.file_format == 'array_record':
      count, problem, bad = _scan_array_record(shard.path, read_all=records)
    else:
      count, problem, bad = scan_tfrecord(shard.path)
  except (OSError, RuntimeError, tf.errors.OpError) as e:
    return CorruptDatasetError(shard.path, f'cannot be read: {_short(e)}')
  if problem is not None:
    return _located(shard, problem, bad)
  if count < shard.count:
    return CorruptDatasetError(
        shard.path, f'holds {count} records, but {INFO_FILE} says '
        f'{shard.count} ({shard.episodes_text()}): this episode and those '
        'after it in the file are missing.', episode=shard.first + count,
        split=shard.split)
  if count > shard.count:
    return CorruptDatasetError(
        shard.path, f'holds {count} records, but {INFO_FILE} says '
        f'{shard.count} ({shard.episodes_text()} of split {shard.split!r}).')
  return None


def _undecodable(shard: Shard, read: Reader) -> Optional[CorruptDatasetError]:
  """The first episode of a shard that does not read back, as an error."""
  if not shard.count:
    return None
  episodes = read(f'{shard.split}[{shard.first}:{shard.first + shard.count}]')
  done = 0
  try:
    for _ in episodes:
      done += 1
  except tf.errors.OpError as e:
    return undecodable_error(shard, shard.first + done, e)
  return None


def undecodable_error(shard: Shard, episode: int,
                      error: BaseException) -> CorruptDatasetError:
  """The error of an episode whose data does not decode with the declared features.

  Example:
    >>> shard = Shard('/d/toy-train.tfrecord-00000', 'train', 0, 3, 'tfrecord')
    >>> print(undecodable_error(shard, 2, ValueError(
    ...     'Key: steps/observation. Cannot parse serialized Example.')))
    /d/features.json: episode 2 of split 'train', field 'observation': its data (in toy-train.tfrecord-00000) does not fit the features declared here: Key: steps/observation. Cannot parse serialized Example.
  """
  message = _short(error)
  if "' does not have one entry per step" in message:
    message = message.split(':')[0]  # The rest repeats the dataset.
  return CorruptDatasetError(
      features_file(os.path.dirname(shard.path)),
      f'its data (in {os.path.basename(shard.path)}) does not fit the '
      f'features declared here: {message}',
      episode=episode, split=shard.split, field=_field_of(message),
      kind=UNDECODABLE, cause=message)


def shard_of(builder: tfds.core.DatasetBuilder, split: str,
             episode: int) -> Optional[Shard]:
  """The shard holding episode ``episode`` of a plain split, or None.

  Example:
    >>> from rlds_lite import synthetic
    >>> path = synthetic.dataset(3, seed=0)
    >>> shard_of(open_builder(path), 'train', 2).episodes_text()
    'episodes 0-2'
  """
  for shard in split_shards(builder, split):
    if shard.split == split and shard.first <= episode < shard.first + shard.count:
      return shard
  return None


def features_file(dataset_dir: PathLike) -> str:
  """The file TFDS takes the features from: dataset_info.json or features.json.

  Example:
    >>> import tempfile
    >>> os.path.basename(features_file(tempfile.mkdtemp()))
    'features.json'
  """
  dataset_dir = os.fspath(dataset_dir)
  try:
    if _info_proto(dataset_dir).HasField('features'):
      return os.path.join(dataset_dir, INFO_FILE)
  except CorruptDatasetError:
    pass
  return os.path.join(dataset_dir, FEATURES_FILE)


def find_damage(builder: tfds.core.DatasetBuilder, split: Any = None, *,
                records: bool = False,
                read: Optional[Reader] = None) -> List[CorruptDatasetError]:
  """Every damaged shard of a split (all splits for None), one error each, in split order.

  Args:
    split: the split (as ``rlds_lite.load`` takes it), or None for all.
    records: also check every record's data checksum.
    read: ``split -> episodes``; if given, whole shards are decoded until one fails.

  Example:
    >>> from rlds_lite import synthetic
    >>> path = synthetic.dataset(2, seed=0)
    >>> find_damage(open_builder(path), records=True)
    []
  """
  shards = split_shards(builder, split)
  found = []
  whole = []
  for shard in shards:
    problem = _shard_damage(shard, records)
    if problem is None:
      whole.append(shard)
    else:
      found.append(problem)
  if records:
    corrupted = _corrupted_records(
        [s for s in whole if s.file_format == 'tfrecord'])
    bad_paths = {e.path for e in corrupted}
    whole = [s for s in whole if s.path not in bad_paths]
    order = {s.path: i for i, s in enumerate(shards)}
    found = sorted(found + corrupted, key=lambda e: order[e.path])
  if read is not None:
    for shard in whole:
      problem = _undecodable(shard, read)
      if problem is not None:
        found.append(problem)
        break  # The same features decode every shard: one is enough.
  return found


def check_all_read(builder: tfds.core.DatasetBuilder, split: str,
                   read: int, consequence: str = '') -> None:
  """Raises if a pass over ``split`` read fewer episodes than it lists.

  Example:
    >>> from rlds_lite import synthetic
    >>> path = synthetic.dataset(2, seed=0)
    >>> check_all_read(open_builder(path), 'train', 2)
    >>> check_all_read(open_builder(path), 'train', 1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rlds_lite.dataset_files.CorruptDatasetError: .../dataset_info.json: lists 2 episodes in split 'train' but its files hold 1.
  """
  listed = builder.info.splits[split].num_examples
  if read == listed:
    return
  for problem in find_damage(builder, split):
    raise problem
  ending = f'; {consequence}' if consequence else '.'
  raise CorruptDatasetError(
      os.path.join(os.fspath(builder.data_dir), INFO_FILE),
      f'lists {listed} episodes in split {split!r} but its files hold '
      f'{read}{ending}')


def diagnose(builder: tfds.core.DatasetBuilder, split: Any,
             error: BaseException, read: Optional[Reader] = None,
             known: Collection[str] = ()) -> Optional[CorruptDatasetError]:
  """The `CorruptDatasetError` behind a read ``error`` of ``split``, or None if the files read back.

  ``read`` is ``split -> episodes`` as the failed reader read them; ``known`` are files already
  known to be damaged.
  """
  data_loss = isinstance(error, (tf.errors.DataLossError,
                                 tf.errors.UnknownError))
  def new(problems: List[CorruptDatasetError]) -> List[CorruptDatasetError]:
    return [p for p in problems if p.path not in known]

  problems = new(find_damage(builder, split, records=data_loss))
  if not problems and read is not None and not isinstance(
      error, tf.errors.DataLossError):
    problems = new(find_damage(builder, split, read=read))
  return problems[0] if problems else None


# ---------------------------------------------------------------------------
# TF error messages.

_ASSERTION = re.compile(r'assertion failed: \[(.*?)\]')
_TF_NOISE = (
    re.compile(r'\{\{function_node [^}]*\}\}'),
    re.compile(r'\[Op:[^\]]*\]( name:)?'),
    re.compile(r'Error in user-defined function passed to \S+ transformation '
               r'with iterator: \S+:? ?'),
    re.compile(r'\s*\[\[[^\]]*\]\]'),
)


def _short(error: BaseException) -> str:
  """A TF or OS error's message on one line, without TF's plumbing."""
  text = getattr(error, 'message', None) or str(error)
  text = text.replace("\\'", "'")  # TF prints assertion messages escaped.
  for pattern in _TF_NOISE:
    text = pattern.sub(' ', text)
  assertion = _ASSERTION.search(text)
  if assertion:  # Our own message, without TF's x/y dump.
    text = assertion.group(1)
  text = ' '.join(text.split())
  if len(text) > _MAX_TF_MESSAGE:
    text = text[:_MAX_TF_MESSAGE - 3] + '...'
  return text


def short_message(error: BaseException) -> str:
  """A TF or OS error's message on one line, without TF's plumbing.

  Example:
    >>> short_message(tf.errors.DataLossError(None, None,
    ...     '{{function_node __wrapped__IteratorGetNext}} truncated record at '
    ...     '26012 [Op:IteratorGetNext] name: '))
    'truncated record at 26012'
  """
  return _short(error)


def _first_sentence(text: str) -> str:
  text = ' '.join(text.split())
  if len(text) > _MAX_TF_MESSAGE:
    text = text[:_MAX_TF_MESSAGE - 3] + '...'
  return text


_FIELD_PATTERNS = (
    re.compile(r"step field '([^']+)'"),
    re.compile(r"[Kk]ey:? '?steps/([\w/]+)"),
    re.compile(r"feature '?steps/([\w/]+)"),
    re.compile(r"[Kk]ey:? '?([\w][\w/]*)"),
)


def _field_of(message: str) -> Optional[str]:
  """The field a TF parse error names (``'observation'``), if any.

  Example:
    >>> _field_of('Key: steps/observation. Can\\'t parse serialized Example.')
    'observation'
  """
  for pattern in _FIELD_PATTERNS:
    match = pattern.search(message)
    if match:
      return match.group(1).rstrip('.')
  return None
