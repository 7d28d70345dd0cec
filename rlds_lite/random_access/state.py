"""Save and restore a random-access pipeline exactly: its state is two integers.

`SampleIterator` iterates `sample_batches` and counts the global *position*
(samples of all hosts taken so far). Its state is ``(seed, position)`` plus a
fingerprint of what positions mean (the data, the sample kind, the weights
and the global batch size). ``save(path)`` writes it as a small JSON file
(atomically); ``restore(path)`` checks the fingerprint and continues at the
batch that would have come next. ``checkpoint`` holds the same state as
``tf.Variable``\\ s, to save with a model in a ``tf.train.Checkpoint``: after
``checkpoint.read(...)``, the next batch follows the restored state.

Nothing of the pipeline's buffers is saved (there is nothing to save: any
batch can be read from its position), so a checkpoint is a few bytes
whatever the batch, the prefetch or the dataset.

Example:
  >>> import tempfile
  >>> from rlds_lite import synthetic
  >>> from rlds_lite.random_access import convert, Windows
  >>> source = synthetic.dataset(num_episodes=4, seed=0)
  >>> chunks = convert(source, progress=False)
  >>> it = SampleIterator(chunks, Windows(size=2), batch_size=8, seed=3)
  >>> _ = next(it); it.position
  8
  >>> path = it.save(tempfile.mkdtemp() + '/data.json')
  >>> expected = next(it)['observation'].numpy()
  >>> again = SampleIterator(chunks, Windows(size=2), batch_size=8)
  >>> again.restore(path)
  >>> (again.seed, again.position)
  (3, 8)
  >>> bool((next(again)['observation'].numpy() == expected).all())
  True
"""

import json
import os
import uuid
from typing import Any, Dict, Iterator, Mapping, Optional, Union

import tensorflow as tf

from rlds_lite.random_access import samples as samples_lib
from rlds_lite.random_access import tf_data

__all__ = ['SampleIterator', 'StateMismatchError']

PathLike = Union[str, os.PathLike]
STATE_FORMAT = 'rlds_lite.random_access.state/1'


class StateMismatchError(ValueError):
  """A saved state belongs to another pipeline (data, kind, weights, batch).

  Example:
    >>> from rlds_lite import synthetic
    >>> from rlds_lite import random_access as ra
    >>> path = synthetic.dataset(3, 4, 6, seed=0)
    >>> chunks = ra.convert(path, progress=False)
    >>> state = ra.SampleIterator(chunks, ra.Windows(size=2), 4).state()
    >>> try:
    ...   ra.SampleIterator(chunks, ra.Windows(size=3), 4).restore(state)
    ... except ra.StateMismatchError:
    ...   print('another pipeline')
    another pipeline
  """


class SampleIterator:
  """An iterator over `sample_batches` whose state is ``(seed, position)``.

  Takes the arguments of `sample_batches` (``position`` is where to start).

  Attributes:
    plan: the pipeline's `tf_data.Plan` (sources, indexes, sampler).
    checkpoint: a ``tf.train.Checkpoint`` of the state (seed, position,
      fingerprint), to save with a model.

  Example:
    >>> from rlds_lite import synthetic
    >>> from rlds_lite import random_access as ra
    >>> path = synthetic.dataset(3, 4, 6, seed=0)
    >>> chunks = ra.convert(path, progress=False)
    >>> it = ra.SampleIterator(chunks, ra.Windows(size=2), batch_size=4)
    >>> _ = next(it)
    >>> state = it.state()
    >>> state['position']
    4
    >>> resumed = ra.SampleIterator(chunks, ra.Windows(size=2), batch_size=4)
    >>> resumed.restore(state)
    >>> bool((next(resumed)['reward'].numpy() ==
    ...       next(it)['reward'].numpy()).all())
    True
  """

  def __init__(self, sources: tf_data.Sources, kind: samples_lib.SampleKind,
               batch_size: int, *, seed: int = 0, position: int = 0,
               num_parallel_calls: Optional[int] = tf.data.AUTOTUNE,
               prefetch: int = 2, **plan_kwargs: Any):
    self.plan = tf_data.plan(sources, kind, batch_size, seed=seed,
                             **plan_kwargs)
    self._options = dict(num_parallel_calls=num_parallel_calls,
                         prefetch=prefetch)
    self._seed = tf.Variable(int(seed), dtype=tf.int64, trainable=False)
    self._position = tf.Variable(int(position), dtype=tf.int64,
                                 trainable=False)
    self._fingerprint = tf.Variable(self.plan.fingerprint, dtype=tf.string,
                                    trainable=False)
    self.checkpoint = tf.train.Checkpoint(seed=self._seed,
                                          position=self._position,
                                          fingerprint=self._fingerprint)
    self._iterator: Optional[Iterator[Any]] = None
    self._live = None   # (seed, position) the live iterator is at.

  @property
  def seed(self) -> int:
    return int(self._seed.numpy())

  @property
  def position(self) -> int:
    """Samples of all hosts taken so far (the next batch's first position)."""
    return int(self._position.numpy())

  @property
  def fingerprint(self) -> str:
    return self.plan.fingerprint

  def state(self) -> Dict[str, Any]:
    """``{'seed', 'position', 'fingerprint'}`` (JSON-ready)."""
    return {'format': STATE_FORMAT, 'seed': self.seed,
            'position': self.position, 'fingerprint': self.fingerprint}

  def _check(self, fingerprint: str, where: str) -> None:
    if fingerprint != self.plan.fingerprint:
      raise StateMismatchError(
          f'random access: the state {where} was saved by another pipeline '
          f'(fingerprint {fingerprint!r}, this one {self.plan.fingerprint!r}): '
          'another dataset or split, sample kind, weights or global batch '
          'size. Restore it into the pipeline that saved it.')

  def _sync(self) -> None:
    wanted = (self.seed, self.position)
    if self._live == wanted:
      return
    fingerprint = self._fingerprint.numpy().decode()
    if fingerprint != self.plan.fingerprint:
      self._check(fingerprint, 'restored from a tf.train.Checkpoint')
    if wanted[0] != self.plan.sampler.seed:
      self.plan = self.plan.with_seed(wanted[0])
    self._iterator = iter(tf_data.dataset_of_plan(self.plan, wanted[1],
                                                  **self._options))
    self._live = wanted

  def __iter__(self) -> 'SampleIterator':
    return self

  def __next__(self) -> Any:
    self._sync()
    batch = next(self._iterator)
    position = self.position + self.plan.sampler.global_batch_size
    end = self.plan.end
    if end is not None:
      position = min(position, end)
    self._position.assign(position)
    self._live = (self._live[0], position)
    return batch

  def numpy(self) -> Iterator[Any]:
    """The remaining batches as NumPy values."""
    for batch in self:
      yield tf.nest.map_structure(lambda x: x.numpy(), batch)

  def save(self, path: PathLike) -> str:
    """Writes the state as JSON at ``path`` (atomically); returns the path."""
    path = os.fspath(path)
    parent = os.path.dirname(path)
    if parent:
      tf.io.gfile.makedirs(parent)
    temporary = f'{path}.tmp-{uuid.uuid4().hex}'
    with tf.io.gfile.GFile(temporary, 'w') as f:
      f.write(json.dumps(self.state()))
    tf.io.gfile.rename(temporary, path, overwrite=True)
    return path

  def restore(self, path_or_state: Union[PathLike, Mapping[str, Any]]) -> None:
    """Continues from a saved state (a `save` path or a `state()` dict).

    Raises:
      FileNotFoundError: if there is no file at the path.
      StateMismatchError: if the state was saved by another pipeline.
      ValueError: if the file is not a saved state.
    """
    if isinstance(path_or_state, Mapping):
      state, where = dict(path_or_state), 'given'
    else:
      path = os.fspath(path_or_state)
      if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f'SampleIterator.restore: no state at '
                                f'{path!r}; pass the path save() returned.')
      with tf.io.gfile.GFile(path) as f:
        try:
          state = json.loads(f.read())
        except json.JSONDecodeError:
          state = None
      where = f'in {path!r}'
    if not isinstance(state, dict) or state.get('format') != STATE_FORMAT:
      raise ValueError(f'SampleIterator.restore: the state {where} is not a '
                       'saved random-access state.')
    self._check(str(state['fingerprint']), where)
    self._seed.assign(int(state['seed']))
    self._position.assign(int(state['position']))
