"""`save` and `restore`: a buffer's exact state in a checksummed directory, published atomically (docs/replay_state.md)."""

import dataclasses
import json
import os
import zlib
from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

from rlds_lite import atomic_output
from rlds_lite import sample_kinds
from rlds_lite.replay import rate_limit
from rlds_lite.replay import samplers as samplers_lib
from rlds_lite.replay import spec as spec_lib
from rlds_lite.replay import storage as storage_lib
from rlds_lite.replay import writers as writers_lib

__all__ = ['save', 'restore', 'MANIFEST', 'FORMAT']

MANIFEST = 'manifest.json'
FORMAT = 1
"""The layout `save` writes; `restore` refuses any other."""

_PARTS = {cls.__name__: cls for cls in (
    samplers_lib.SAMPLERS + (writers_lib.RoundRobin, writers_lib.TopK, writers_lib.Immutable)
    + tuple(sample_kinds.KINDS) + (rate_limit.RateLimiter,))}
_STORAGES = {cls.__name__: cls for cls in (storage_lib.MemoryStorage, storage_lib.MemmapStorage)}

Arrays = Dict[str, np.ndarray]


# Saving.
def _part(obj: Any) -> Optional[Dict[str, Any]]:
  """A sampler, writer, kind or rate limiter as ``{'type', 'params'}`` (None stays None)."""
  if obj is None:
    return None
  params = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)
            if f.init and not f.name.startswith('_')}
  return {'type': type(obj).__name__, 'params': params}


def _strings(name: str, column: np.ndarray, arrays: Arrays) -> None:
  """An object column of str/bytes as a byte blob, offsets and which were str."""
  items = column.reshape(-1).tolist()
  wrong = next((x for x in items if not isinstance(x, (bytes, str))), None)
  if wrong is not None:
    raise TypeError(f'save: column {name} holds a {type(wrong).__name__}; a checkpoint '
                    'keeps strings (str or bytes) only.')
  encoded = [x.encode() if isinstance(x, str) else x for x in items]
  arrays[name + '.blob'] = np.frombuffer(b''.join(encoded), np.uint8)
  arrays[name + '.ends'] = np.cumsum([len(x) for x in encoded], dtype=np.int64)
  arrays[name + '.is_str'] = np.array([isinstance(x, str) for x in items], bool)


def _state_arrays(buffer) -> Arrays:
  storage = buffer.storage
  arrays: Arrays = {'storage/header': storage.header,
                    'storage/episode_ids': storage.episode_ids,
                    'storage/step_ids': storage.step_ids,
                    'buffer/times_sampled': buffer.times_sampled,
                    'buffer/seen': buffer._seen}  # pylint: disable=protected-access
  for i, path in enumerate(sorted(storage.columns)):
    column = storage.columns[path]
    if column.dtype == object:
      _strings(f'storage/column-{i}', column, arrays)
    else:
      arrays[f'storage/column-{i}'] = column
  parts = [('sampler', buffer.sampler), ('writer', buffer.writer), ('index', buffer.index)]
  for label, part in parts:
    if part is not None and hasattr(part, 'state'):
      arrays.update({f'{label}/{k}': np.asarray(v) for k, v in part.state().items()})
  return arrays


def _config(buffer) -> Dict[str, Any]:
  storage = buffer.storage
  return {
      'format': FORMAT, 'storage': type(storage).__name__, 'capacity': storage.capacity,
      'spec': spec_lib.to_json(storage.spec or {}), 'columns': sorted(storage.columns),
      'sampler': _part(buffer.sampler), 'writer': _part(buffer.writer),
      'kind': _part(buffer.kind), 'rate_limiter': _part(buffer.rate_limiter),
      'max_times_sampled': buffer.max_times_sampled, 'seed': buffer.seed,
      'rng': buffer.rng.bit_generator.state,
      'stream': {'episode': buffer.stream.episode, 'next_step': buffer.stream.next_step},
  }


def _crc(array: np.ndarray) -> int:
  return zlib.crc32(np.ascontiguousarray(array).reshape(-1).view(np.uint8))


def _write(directory: str, arrays: Arrays) -> Dict[str, Any]:
  files = {}
  for name, array in arrays.items():
    file = name.replace('/', '.') + '.npy'
    np.save(os.path.join(directory, file), array, allow_pickle=False)
    files[name] = {'file': file, 'shape': list(array.shape), 'dtype': array.dtype.str,
                   'crc32': _crc(array)}
  return files


def _body_crc(body: Mapping[str, Any]) -> int:
  return zlib.crc32(json.dumps(body, sort_keys=True).encode())


def _only_checkpoints(target: str) -> None:
  if os.path.lexists(target) and not os.path.exists(os.path.join(target, MANIFEST)):
    raise FileExistsError(f'save: {target} exists and is not a replay checkpoint (no '
                          f'{MANIFEST}); choose a new path (save replaces only a checkpoint).')


def save(buffer, path: str) -> str:
  """Writes ``buffer``'s exact state to the directory ``path``; returns the path.

  The storage's lock is held throughout (actors wait); the directory appears
  whole or not at all, and replaces an older checkpoint there atomically.

  Example:
    >>> import tempfile
    >>> from rlds_lite import replay
    >>> buffer = replay.ReplayBuffer(replay.MemoryStorage(8), seed=1)
    >>> buffer.extend({'reward': np.arange(5, dtype=np.float32)})
    >>> path = save(buffer, tempfile.mkdtemp() + '/ckpt')
    >>> again = restore(replay.ReplayBuffer, path)
    >>> buffer.sample(3)[0]['reward'].tolist() == again.sample(3)[0]['reward'].tolist()
    True
  """
  path = os.fspath(path)
  with buffer.storage.lock():
    buffer._sync()  # pylint: disable=protected-access
    body = _config(buffer)
    with atomic_output.AtomicOutput(path, directory=True, replace=True,
                                    check=_only_checkpoints) as output:
      body['files'] = _write(output.path, _state_arrays(buffer))
      with open(os.path.join(output.path, MANIFEST), 'w') as f:
        json.dump({'body': body, 'crc32': _body_crc(body)}, f, sort_keys=True)
      output.publish()
  return path


# Restoring.
def _manifest(path: str) -> Dict[str, Any]:
  file = os.path.join(path, MANIFEST)
  if not os.path.exists(file):
    raise FileNotFoundError(f'restore: {path} holds no replay checkpoint (no {MANIFEST})'
                            f'{atomic_output.missing_hint(path)}.')
  try:
    with open(file) as f:
      data = json.load(f)
    body = data['body']
    ok = data['crc32'] == _body_crc(body)
  except (ValueError, KeyError, TypeError):
    ok = False
  if not ok:
    raise ValueError(f'restore: {file} is corrupt or truncated (its checksum does not '
                     'match); restore from another checkpoint.')
  if body.get('format') != FORMAT:
    raise ValueError(f'restore: {file} has checkpoint format {body.get("format")!r}; '
                     f'this rlds_lite reads format {FORMAT}.')
  return body


def _read(path: str, files: Mapping[str, Any], name: str) -> np.ndarray:
  entry = files[name]
  file = os.path.join(path, entry['file'])
  try:
    array = np.load(file, mmap_mode='r', allow_pickle=False)
    whole = (list(array.shape) == entry['shape'] and array.dtype.str == entry['dtype']
             and _crc(array) == entry['crc32'])
  except (OSError, ValueError, EOFError):
    whole = False
  if not whole:
    raise ValueError(f'restore: {file} is missing, corrupt or truncated (shape, dtype or '
                     'checksum differ from the manifest); restore from another checkpoint.')
  return array


def _strings_back(path, files, name, shape) -> np.ndarray:
  blob = _read(path, files, name + '.blob').tobytes()
  ends = _read(path, files, name + '.ends')
  is_str = _read(path, files, name + '.is_str')
  starts = np.concatenate([[0], ends[:-1]]).tolist()
  items = [blob[s:e].decode() if text else blob[s:e]
           for s, e, text in zip(starts, ends.tolist(), is_str.tolist())]
  out = np.empty([len(items)], object)
  out[:] = items
  return out.reshape(shape)


def _storage_for(body: Mapping[str, Any], storage, where: str):
  """The storage to restore into: a new `MemoryStorage`, or ``storage`` once checked."""
  kind, capacity = body['storage'], body['capacity']
  spec = spec_lib.from_json(body['spec'])
  if storage is None:
    if kind != 'MemoryStorage':
      raise ValueError(f'restore: {where} holds a {kind}; give storage={kind}(path, '
                       f'{capacity}) (a new, empty one) to restore into.')
    storage = storage_lib.MemoryStorage(capacity)
  if type(storage).__name__ != kind:
    raise ValueError(f'restore: {where} holds a {kind}, not a {type(storage).__name__}; '
                     f'give storage={kind}(...).')
  if storage.capacity != capacity:
    raise ValueError(f'restore: {where} holds a buffer of capacity {capacity}, not '
                     f'{storage.capacity}.')
  if int(storage.header[storage_lib.RESERVED]):
    raise ValueError(f'restore: {storage!r} is not empty; restore into a new storage.')
  if storage.spec is None and spec:
    storage.allocate(spec)
  elif dict(storage.spec or {}) != spec:
    raise ValueError(f'restore: {where} {_spec_difference(spec, dict(storage.spec or {}))}.')
  return storage


def _spec_difference(saved: spec_lib.Spec, given: spec_lib.Spec) -> str:
  """The first field where two specs differ, in words."""
  def describe(spec, path):
    return spec[path].describe() if path in spec else 'no such field'
  path = next(p for p in sorted(set(saved) | set(given)) if saved.get(p) != given.get(p))
  return (f'holds field {path!r} as {describe(saved, path)}, the storage as '
          f'{describe(given, path)}: another spec')


def _build(body: Mapping[str, Any]) -> Dict[str, Any]:
  made = {}
  for name in ('sampler', 'writer', 'kind', 'rate_limiter'):
    part = body[name]
    made[name] = None if part is None else _PARTS[part['type']](**part['params'])
  return made


def _load_parts(buffer, path: str, files: Mapping[str, Any]) -> None:
  for label, part in (('sampler', buffer.sampler), ('writer', buffer.writer),
                      ('index', buffer.index)):
    names = [n for n in files if n.startswith(label + '/')]
    if part is not None and names:
      part.load_state({n[len(label) + 1:]: np.array(_read(path, files, n)) for n in names})


def _fill(buffer, body: Mapping[str, Any], path: str) -> None:
  storage, files = buffer.storage, body['files']
  for i, field in enumerate(body['columns']):
    name = f'storage/column-{i}'
    column = storage.columns[field]
    column[...] = (_strings_back(path, files, name, column.shape) if column.dtype == object
                   else _read(path, files, name))
  for name in ('episode_ids', 'step_ids', 'header'):
    getattr(storage, name)[...] = _read(path, files, 'storage/' + name)
  buffer.times_sampled[...] = _read(path, files, 'buffer/times_sampled')
  buffer._seen[...] = _read(path, files, 'buffer/seen')  # pylint: disable=protected-access
  _load_parts(buffer, path, files)
  buffer.stream.episode = body['stream']['episode']
  buffer.stream.next_step = body['stream']['next_step']
  buffer.rng.bit_generator.state = body['rng']


def restore(buffer_class, path: str, storage: Optional[storage_lib.Storage] = None,
            log_to: Optional[Any] = None):
  """The buffer `save` wrote to ``path``: it samples exactly what the saved one would have.

  Args:
    buffer_class: `ReplayBuffer` (what `ReplayBuffer.restore` passes).
    path: a checkpoint directory.
    storage: a new, empty storage to restore into (None: a `MemoryStorage`;
      a `MemmapStorage` checkpoint needs one of its kind and capacity).
    log_to: the restored buffer's ``log_to`` (a log is not part of a checkpoint).

  Returns:
    A `ReplayBuffer`.

  Example:
    >>> from rlds_lite import replay
    >>> restore(replay.ReplayBuffer, '/nonexistent/ckpt')
    Traceback (most recent call last):
    ...
    FileNotFoundError: restore: /nonexistent/ckpt holds no replay checkpoint (no manifest.json).
  """
  path = os.fspath(path)
  body = _manifest(path)
  target = _storage_for(body, storage, path)
  extra = {} if log_to is None else {'log_to': log_to}
  buffer = buffer_class(target, max_times_sampled=body['max_times_sampled'],
                        seed=body['seed'], **_build(body), **extra)
  with target.lock():
    _fill(buffer, body, path)
    if isinstance(target, storage_lib.MemmapStorage) and target.spec is not None:
      target.flush()
  return buffer


def describe(path: str) -> Tuple[str, int]:
  """The storage kind and capacity a checkpoint holds (without reading its arrays).

  Example:
    >>> import tempfile
    >>> from rlds_lite import replay
    >>> buffer = replay.ReplayBuffer(replay.MemoryStorage(8))
    >>> describe(save(buffer, tempfile.mkdtemp() + '/ckpt'))
    ('MemoryStorage', 8)
  """
  body = _manifest(os.fspath(path))
  return body['storage'], body['capacity']
