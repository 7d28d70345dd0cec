"""An iterator over a pipeline that can be saved and resumed where it stopped.

``ResumableIterator(dataset)`` checkpoints ``iter(dataset)`` with
``tf.train.Checkpoint``; a rebuilt, seeded pipeline restored from it gives the
elements the interrupted run would have given. What a checkpoint holds, epochs
(repeat the episodes, not the batches) and ``external_state``:
docs/distributed.md, "Resuming a run where it stopped".

Example:
  >>> import tempfile
  >>> import tensorflow as tf
  >>> ds = tf.data.Dataset.range(10).shuffle(10, seed=0).batch(2)
  >>> it = ResumableIterator(ds)
  >>> first = next(it)
  >>> path = it.save(tempfile.mkdtemp() + '/data')
  >>> rest = [b.tolist() for b in it.numpy()]
  >>> resumed = ResumableIterator(ds)
  >>> resumed.restore(path)
  >>> resumed.position
  1
  >>> [b.tolist() for b in resumed.numpy()] == rest
  True
"""

import os
from typing import Any, Iterator, Union

import tensorflow as tf

PathLike = Union[str, os.PathLike]

EXTERNAL_STATE = {
    'ignore': tf.data.experimental.ExternalStatePolicy.IGNORE,
    'warn': tf.data.experimental.ExternalStatePolicy.WARN,
    'fail': tf.data.experimental.ExternalStatePolicy.FAIL,
}
"""``external_state`` names -> tf.data's ``ExternalStatePolicy``."""


class ResumableIterator:
  """An iterator over ``dataset`` whose position can be saved and restored.

  Attributes:
    checkpoint: the ``tf.train.Checkpoint`` of the iterator and position;
      put it in your training checkpoint
      (``tf.train.Checkpoint(model=model, data=it.checkpoint)``) to save
      both together, or use ``save``/``restore``.

  Args:
    dataset: the pipeline.
    external_state: ``'ignore'``, ``'warn'`` or ``'fail'``: what saving
      does about ops tf.data deems stateful (see the module docstring).

  Example:
    >>> import tempfile
    >>> it = ResumableIterator(tf.data.Dataset.range(5))
    >>> int(next(it)), int(next(it))
    (0, 1)
    >>> path = it.save(os.path.join(tempfile.mkdtemp(), 'ckpt'))
    >>> again = ResumableIterator(tf.data.Dataset.range(5))
    >>> again.restore(path)
    >>> [int(x) for x in again]
    [2, 3, 4]
  """

  def __init__(self, dataset: tf.data.Dataset, *,
               external_state: str = 'ignore'):
    if not isinstance(dataset, tf.data.Dataset):
      raise TypeError('ResumableIterator: dataset must be a tf.data.Dataset, '
                      f'got {type(dataset).__name__}.')
    if external_state not in EXTERNAL_STATE:
      raise ValueError(f'ResumableIterator: external_state must be one of '
                       f'{sorted(EXTERNAL_STATE)}, got {external_state!r}.')
    options = tf.data.Options()
    options.experimental_external_state_policy = EXTERNAL_STATE[external_state]
    self._iterator = iter(dataset.with_options(options))
    self._position = tf.Variable(0, dtype=tf.int64, trainable=False)
    self.checkpoint = tf.train.Checkpoint(iterator=self._iterator,
                                          position=self._position)

  @property
  def element_spec(self) -> Any:
    """The dataset's element spec."""
    return self._iterator.element_spec

  @property
  def position(self) -> int:
    """How many elements were taken (before a save, counted on restore)."""
    return int(self._position.numpy())

  def __iter__(self) -> 'ResumableIterator':
    return self

  def __next__(self) -> Any:
    element = next(self._iterator)
    self._position.assign_add(1)
    return element

  def numpy(self) -> Iterator[Any]:
    """The remaining elements as NumPy values (as ``as_numpy_iterator``)."""
    for element in self:
      yield tf.nest.map_structure(lambda x: x.numpy(), element)

  def save(self, path: PathLike) -> str:
    """Writes the iterator's state at file prefix ``path``; returns it.

    The directory is created; files ``path.index`` and ``path.data-*``
    are written (an existing checkpoint there is replaced).
    """
    path = os.fspath(path)
    parent = os.path.dirname(path)
    if parent:
      tf.io.gfile.makedirs(parent)
    return self.checkpoint.write(path)

  def restore(self, path: PathLike) -> None:
    """Continues from the state saved at ``path`` (a ``save`` prefix).

    Raises:
      FileNotFoundError: if there is no checkpoint at ``path``.
    """
    path = os.fspath(path)
    if not tf.io.gfile.exists(path + '.index'):
      raise FileNotFoundError(
          f'ResumableIterator.restore: no checkpoint at {path!r} (no '
          f'{path}.index); pass the path that save() returned.')
    self.checkpoint.read(path).assert_consumed()
