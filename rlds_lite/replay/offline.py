"""A buffer's stored episodes written as an RLDS dataset (`to_rlds`), and a buffer filled from one (`from_rlds`, `fill`)."""

import os
from typing import Any, Callable, Dict, Iterable, Iterator, Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf

from rlds_lite import nest_paths
from rlds_lite import rlds_names
from rlds_lite import source as source_lib
from rlds_lite.replay import storage as storage_lib
from rlds_lite.replay import writers as writers_lib
from rlds_lite.tfds import episode_writer

__all__ = ['OPEN_EPISODES', 'check_open_episodes', 'fill', 'from_rlds', 'stored_episodes', 'to_rlds', 'with_flags']

OPEN_EPISODES = ('skip', 'truncate')
"""What `to_rlds` does with an episode whose ``is_last`` step has not arrived."""

Steps = Dict[str, np.ndarray]
Transform = Callable[[Dict[str, Any]], Dict[str, Any]]


def check_open_episodes(open_episodes: str, op: str) -> None:
  if open_episodes not in OPEN_EPISODES:
    raise ValueError(f'{op}: open_episodes must be one of {OPEN_EPISODES}, got '
                     f'{open_episodes!r}.')


def with_flags(flat: Steps, truncate: bool = False) -> Steps:
  """An episode's flat ``[T, ...]`` steps with RLDS flags: ``is_first`` on step 0, ``is_last`` on the last.

  Missing flags are added (``is_terminal`` False); ``truncate`` ends an open
  episode on its last step (not terminal). A copy: ``flat`` is unchanged.

  Example:
    >>> out = with_flags({'reward': np.zeros([3]), 'is_first': np.zeros([3], bool),
    ...                   'is_last': np.zeros([3], bool)}, truncate=True)
    >>> out['is_first'].tolist(), out['is_last'].tolist(), out['is_terminal'].tolist()
    ([True, False, False], [False, False, True], [False, False, False])
  """
  out = dict(flat)
  length = len(next(iter(flat.values())))
  first = np.arange(length) == 0
  last = np.arange(length) == length - 1
  is_first = out.get(rlds_names.IS_FIRST, first).astype(bool) | first
  out[rlds_names.IS_FIRST] = is_first
  is_last = out.get(rlds_names.IS_LAST)
  if is_last is None:
    is_last = last
  out[rlds_names.IS_LAST] = (is_last.astype(bool) | last) if truncate else is_last.astype(bool)
  terminal = out.get(rlds_names.IS_TERMINAL)
  out[rlds_names.IS_TERMINAL] = (np.zeros([length], bool) if terminal is None
                                 else terminal.astype(bool))
  return out


def _plan(storage: storage_lib.Storage):
  """Under the lock: each stored episode's ring positions (oldest first), in episode order."""
  inserted, reserved = int(storage.header[storage_lib.INSERTED]), int(storage.header[storage_lib.RESERVED])
  positions = np.arange(max(0, reserved - storage.capacity), inserted, dtype=np.int64)
  slots = positions % storage.capacity
  ids = storage.episode_ids[slots]
  order = np.argsort(ids, kind='stable')
  positions, ids = positions[order], ids[order]
  bounds = np.concatenate([[0], np.flatnonzero(np.diff(ids)) + 1, [len(ids)]])
  return [positions[b:e] for b, e in zip(bounds[:-1].tolist(), bounds[1:].tolist()) if e > b]


def stored_episodes(buffer: Any, open_episodes: str = 'skip',
                    op: str = 'to_rlds') -> Iterator[Steps]:
  """The buffer's stored episodes, oldest first, as flat ``[T, ...]`` steps with RLDS flags.

  An episode whose first steps were evicted is left out with
  ``RoundRobin(evict='episode')`` (the buffer samples none of it) and kept
  from its first remaining step (``is_first``) with ``evict='cut'``. An open
  episode (its ``is_last`` step not added yet): ``open_episodes='skip'``
  leaves it out, ``'truncate'`` ends it on its last stored step (``is_last``,
  not terminal). Each episode is copied under the storage's lock; one that
  actors evict while this runs is left out.

  Example:
    >>> from rlds_lite import replay
    >>> buffer = replay.ReplayBuffer(replay.MemoryStorage(8))
    >>> buffer.extend({'reward': np.arange(5.), 'is_first': [1, 0, 0, 1, 0],
    ...                'is_last': [0, 0, 1, 0, 0]})
    >>> [e['reward'].tolist() for e in stored_episodes(buffer, 'truncate')]
    [[0.0, 1.0, 2.0], [3.0, 4.0]]
  """
  check_open_episodes(open_episodes, op)
  if not buffer.writer.sequential:
    raise ValueError(f'{op}: {buffer.writer!r} keeps single steps, not episodes; '
                     'a buffer of episodes has writer=RoundRobin() or Immutable().')
  storage = buffer.storage
  evict = getattr(buffer.writer, 'evict', 'episode')
  with storage.lock():
    plan = _plan(storage) if storage.spec is not None else []
  for positions in plan:
    with storage.lock():
      if positions[0] < int(storage.header[storage_lib.RESERVED]) - storage.capacity:
        continue  # Overwritten since the plan was made.
      slots = positions % storage.capacity
      headless = int(storage.step_ids[slots[0]]) > 0
      flat = {p: np.array(c[slots]) for p, c in storage.columns.items()}
    if headless and evict == 'episode':
      continue
    is_last = flat.get(rlds_names.IS_LAST)
    is_open = is_last is not None and not bool(is_last[-1])
    if is_open and open_episodes == 'skip':
      continue
    yield with_flags(flat, truncate=is_open)


def to_rlds(buffer: Any, data_dir: Any, name: str, *, open_episodes: str = 'skip',
            split: str = 'train', options: Optional[episode_writer.FileOptions] = None,
            card: Optional[episode_writer.DatasetCard] = None, if_exists: str = 'error',
            version: Optional[str] = None) -> str:
  """Writes the buffer's stored episodes (`stored_episodes`) as a TFDS RLDS dataset, published atomically; its dir.

  Args:
    buffer: a `ReplayBuffer` (writer ``RoundRobin`` or ``Immutable``).
    data_dir, name: the dataset goes to ``data_dir/name/version``.
    open_episodes: ``'skip'`` (default) or ``'truncate'`` (see `stored_episodes`).
    split, options, card, if_exists, version: as `rlds_lite.tfds.EpisodeWriter`'s.

  Returns:
    The dataset directory (``tfds.builder_from_directory`` and ``rlds_lite.open`` read it).

  Example:
    >>> import tempfile, rlds_lite
    >>> from rlds_lite import replay
    >>> buffer = replay.ReplayBuffer(replay.MemoryStorage(8))
    >>> buffer.extend({'reward': np.arange(3.), 'is_first': [1, 0, 0], 'is_last': [0, 0, 1]})
    >>> path = to_rlds(buffer, tempfile.mkdtemp(), 'toy')
    >>> rlds_lite.open(path).num_episodes
    1
  """
  episodes = stored_episodes(buffer, open_episodes)
  first = next(episodes, None)
  if first is None:
    raise ValueError(
        f'to_rlds: the buffer holds no episode to write ({len(buffer)} steps stored, '
        f"open_episodes={open_episodes!r}); add whole episodes, or pass "
        "open_episodes='truncate' to write one still being added.")
  nested = lambda flat: {rlds_names.STEPS: nest_paths.nest_from_paths(flat)}
  with episode_writer.EpisodeWriter(
      data_dir, name, nested(first), splits=(split,), options=options, version=version,
      if_exists=if_exists, card=card) as writer:
    writer.add_episode(nested(first))
    for episode in episodes:
      writer.add_episode(nested(episode))
  return writer.path


def _numpy_episodes(source: Any, split: Any, read: Mapping[str, Any]) -> Iterable[Dict[str, Any]]:
  """Dense NumPy episodes of a `Source`, a dataset path or name, a ``tf.data.Dataset`` or list of episodes."""
  if isinstance(source, tf.data.Dataset):
    return source.as_numpy_iterator()
  if isinstance(source, (list, tuple)):
    return source
  opened = source_lib.as_source(source, split)
  if read.get('fields') is not None:  # The flags always: they delimit the episodes.
    flags = [f for f in (rlds_names.IS_FIRST, rlds_names.IS_LAST, rlds_names.IS_TERMINAL)
             if f in opened.step_spec and f not in read['fields']]
    read = {**read, 'fields': list(read['fields']) + flags}

  def episodes():
    with opened.read_errors():
      yield from opened.episodes(dense=True, **read).as_numpy_iterator()
  return episodes()


def fill(buffer: Any, episodes: Any, *, split: Any = None,
         transform: Optional[Transform] = None, fields: Optional[Sequence[str]] = None,
         encoded_images: bool = False, label: str = 'from_rlds') -> int:
  """Adds every episode of ``episodes`` to ``buffer``, one ``add_episode`` (one extend) per episode; how many.

  Args:
    buffer: a `ReplayBuffer`.
    episodes: a `rlds_lite.Source` (``rlds_lite.open(...)``), a dataset directory or
      TFDS name, a ``tf.data.Dataset`` of episodes, or a list of episodes.
    split: the split to read (a path or name; None: ``'train'``, or the `Source`'s own).
    transform: called on each episode's ``steps`` (nested ``[T, ...]`` NumPy) before it
      is added, e.g. to decode or resize frames; returns the steps to add.
    fields, encoded_images: read only these step fields (and the RLDS flags), leave
      image fields encoded (as `rlds_lite.Source.episodes`; a dataset read by path,
      name or `Source`).
    label: names the call in errors.

  Example:
    >>> from rlds_lite import replay
    >>> buffer = replay.ReplayBuffer(replay.MemoryStorage(8))
    >>> fill(buffer, [{'steps': {'reward': np.ones([3]), 'is_first': [1, 0, 0],
    ...                          'is_last': [0, 0, 1]}}], transform=lambda s: {**s, 'reward': 2 * s['reward']})
    1
    >>> buffer.storage.columns['reward'][:3].tolist()
    [2.0, 2.0, 2.0]
  """
  count = 0
  read = {'fields': fields, 'encoded_images': encoded_images}
  if isinstance(episodes, (tf.data.Dataset, list, tuple)) and (fields or encoded_images):
    raise ValueError(f'{label}: fields= and encoded_images= read a dataset by path, name or '
                     'Source; a tf.data.Dataset or list of episodes is taken as it is.')
  for index, episode in enumerate(_numpy_episodes(episodes, split, read)):
    if not isinstance(episode, Mapping) or rlds_names.STEPS not in episode:
      raise TypeError(f"{label}: episode {index} is not a dict with 'steps' (got "
                      f'{type(episode).__name__}).')
    steps = episode[rlds_names.STEPS]
    if transform is not None:
      steps = transform(steps)
    try:
      buffer.add_episode({rlds_names.STEPS: steps})
    except (ValueError, TypeError) as e:
      raise type(e)(f'{label}: episode {index}: {e}') from e
    count += 1
  return count


def _num_steps(episodes: Any, split: Any) -> int:
  if isinstance(episodes, tf.data.Dataset):
    raise ValueError('from_rlds: the capacity of a tf.data.Dataset of episodes is unknown '
                     'before reading it; pass storage=MemoryStorage(capacity) (or a '
                     'MemmapStorage).')
  if isinstance(episodes, (list, tuple)):
    return sum(len(next(iter(nest_paths.flatten_with_paths(e[rlds_names.STEPS])))[1])
               for e in episodes)
  return source_lib.as_source(episodes, split).num_steps


def from_rlds(make_buffer: Callable[..., Any], episodes: Any,
              storage: Optional[storage_lib.Storage] = None, *, split: Any = None,
              transform: Optional[Transform] = None, fields: Optional[Sequence[str]] = None,
              encoded_images: bool = False, **buffer_args: Any) -> Any:
  """A buffer (``make_buffer(storage, **buffer_args)``) filled with ``episodes`` (see `fill`: ``split``, ``transform``, ``fields``, ``encoded_images``).

  ``storage`` defaults to a `MemoryStorage` of exactly the dataset's steps and
  ``writer`` to ``Immutable()``. Episode metadata (fields beside ``steps``) is
  not kept. `ReplayBuffer.from_rlds` is this with ``make_buffer=ReplayBuffer``.

  Example:
    >>> from rlds_lite import replay, synthetic
    >>> buffer = from_rlds(replay.ReplayBuffer, synthetic.dataset(3, seed=0))
    >>> len(buffer), buffer.num_episodes(), buffer.writer
    (97, 3, Immutable())
  """
  if 'image_size' in buffer_args:
    raise TypeError('from_rlds keeps frames as stored; for frames decoded once at a training '
                    'size use replay.decoded_cache(source, path, image_size=...) '
                    '(docs/replay_cache.md).')
  if isinstance(episodes, (str, os.PathLike)) or isinstance(episodes, source_lib.Source):
    episodes = source_lib.as_source(episodes, split)
  if storage is None:
    storage = storage_lib.MemoryStorage(max(1, _num_steps(episodes, split)))
  buffer_args.setdefault('writer', writers_lib.Immutable())
  buffer = make_buffer(storage, **buffer_args)
  fill(buffer, episodes, split=split, transform=transform, fields=fields,
       encoded_images=encoded_images)
  return buffer
