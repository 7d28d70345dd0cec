"""`RLDSLog`: every episode added to a buffer also kept in an RLDS dataset (``ReplayBuffer(log_to=...)``)."""

import os
import threading
from typing import Any, Dict, List, Mapping, Optional

import numpy as np
import tensorflow as tf

from rlds_lite import nest_paths
from rlds_lite import rlds_names
from rlds_lite.replay import offline
from rlds_lite.tfds import episode_writer

__all__ = ['RLDSLog']

_IF_EXISTS = ('error', 'append', 'overwrite')


class RLDSLog:
  """Writes each episode a buffer receives to ``data_dir/name/version``, publishing every ``publish_every`` episodes.

  A finished episode (its ``is_last`` step added) goes to an
  `rlds_lite.tfds.EpisodeWriter`; every ``publish_every`` episodes, `flush`
  and `close` publish them atomically (the dataset then loads with them).
  A crash loses at most the finished episodes since the last publish and
  the open one; what was published stays readable, and the next writer
  removes what the crash left. `close` ends an open episode as
  ``open_episodes`` says (``'truncate'``: written, ``is_last`` on its last
  step; ``'skip'``: dropped). One log per process and dataset (a second
  writer waits for the dataset's lock).

  Args:
    data_dir, name: where the dataset goes (``data_dir/name/version``).
    publish_every: finished episodes between publishes.
    if_exists: ``'error'`` (default), ``'append'`` or ``'overwrite'`` an existing dataset.
    open_episodes: what `close` does with an open episode.
    split, options, card, version: as `rlds_lite.tfds.EpisodeWriter`'s.

  Example:
    >>> import tempfile, rlds_lite
    >>> from rlds_lite import replay
    >>> log = replay.RLDSLog(tempfile.mkdtemp(), 'seen', publish_every=1)
    >>> buffer = replay.ReplayBuffer(replay.MemoryStorage(2), log_to=log)
    >>> for episode in range(3):
    ...   buffer.extend({'reward': [1.0 * episode, 0.0], 'is_first': [1, 0], 'is_last': [0, 1]})
    >>> len(buffer), rlds_lite.open(log.close()).num_episodes   # evicted, but logged
    (2, 3)
  """

  def __init__(self, data_dir: Any, name: str, *, publish_every: int = 100,
               if_exists: str = 'error', open_episodes: str = 'truncate',
               split: str = 'train', options: Optional[episode_writer.FileOptions] = None,
               card: Optional[episode_writer.DatasetCard] = None,
               version: str = '1.0.0'):
    if isinstance(publish_every, bool) or not isinstance(publish_every, int) or publish_every < 1:
      raise ValueError(f'RLDSLog: publish_every must be a positive int, got {publish_every!r}.')
    if if_exists not in _IF_EXISTS:
      raise ValueError(f'RLDSLog: if_exists must be one of {_IF_EXISTS}, got {if_exists!r}.')
    offline.check_open_episodes(open_episodes, 'RLDSLog')
    episode_writer.check_name(name)
    self.path = episode_writer.dataset_path(data_dir, name, version)
    exists = tf.io.gfile.exists(os.path.join(self.path, 'dataset_info.json'))
    if exists and if_exists == 'error':
      raise FileExistsError(
          f"RLDSLog: dataset {name!r} already exists at {self.path!r}; pass if_exists='append' "
          "to log into it, if_exists='overwrite' to replace it, or another name.")
    self._data_dir, self._name, self._version = data_dir, name, version
    self._args = dict(splits=(split,), options=options, card=card, version=version)
    self._if_exists = if_exists
    self._open_episodes = open_episodes
    self.publish_every = publish_every
    self._writer: Optional[episode_writer.EpisodeWriter] = None
    self._created = False
    self._pending: Dict[int, List[Dict[str, np.ndarray]]] = {}
    self._unpublished = 0
    self.num_logged = 0
    self.num_published = 0
    self.closed = False
    self._lock = threading.RLock()   # Threads of one process share the log.

  def __repr__(self) -> str:
    return (f'RLDSLog({self.path!r}, {self.num_published} episodes published, '
            f'{self._unpublished} unpublished, {len(self._pending)} open)')

  def add(self, values: Mapping[str, np.ndarray], episode_ids: np.ndarray,
          closed: bool) -> None:
    """Takes steps a buffer added: flat ``[N, ...]`` fields, their episode ids; ``closed``: the last episode ended."""
    with self._lock:
      self._add(values, episode_ids, closed)

  def _add(self, values, episode_ids, closed) -> None:
    if self.closed:
      raise ValueError(f'RLDSLog: add after close ({self.path!r}).')
    ids = np.asarray(episode_ids)
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(ids)) + 1, [len(ids)]]).tolist()
    for i, (begin, end) in enumerate(zip(bounds[:-1], bounds[1:])):
      episode = int(ids[begin])
      self._pending.setdefault(episode, []).append(
          {p: np.array(v[begin:end]) for p, v in values.items()})
      if i < len(bounds) - 2 or closed:
        self._write(self._pending.pop(episode), truncate=False)

  def _write(self, chunks: List[Dict[str, np.ndarray]], truncate: bool) -> None:
    flat = {p: np.concatenate([c[p] for c in chunks]) for p in chunks[0]}
    steps = nest_paths.nest_from_paths(offline.with_flags(flat, truncate))
    episode = {rlds_names.STEPS: steps}
    if self._writer is None:
      self._writer = self._open(episode)
    self._writer.add_episode(episode)
    self.num_logged += 1
    self._unpublished += 1
    if self._unpublished >= self.publish_every:
      self.flush()

  def _open(self, example: Dict[str, Any]) -> episode_writer.EpisodeWriter:
    exists = tf.io.gfile.exists(os.path.join(self.path, 'dataset_info.json'))
    if self._created or (exists and self._if_exists == 'append'):
      return episode_writer.EpisodeWriter(self._data_dir, self._name, None,
                                          if_exists='append', **self._args)
    self._created = True
    return episode_writer.EpisodeWriter(self._data_dir, self._name, example,
                                        if_exists=self._if_exists, **self._args)

  def flush(self) -> None:
    """Publishes the finished episodes written so far (atomically)."""
    with self._lock:
      if self._writer is not None:
        writer, self._writer = self._writer, None
        writer.close()
        self.num_published += self._unpublished
        self._unpublished = 0

  def close(self) -> Optional[str]:
    """Ends an open episode (``open_episodes``), publishes; the dataset dir (None: nothing was ever logged)."""
    with self._lock:
      if not self.closed:
        if self._open_episodes == 'truncate':
          for episode in sorted(self._pending):
            self._write(self._pending[episode], truncate=True)
        self._pending.clear()
        self.flush()
        self.closed = True
    return self.path if self._created or self.num_published else None

  def __enter__(self) -> 'RLDSLog':
    return self

  def __exit__(self, *exc_info) -> None:
    self.close()
