"""An iterator over a pipeline that can be saved and resumed where it stopped.

``ResumableIterator(dataset)`` wraps ``iter(dataset)`` together with a
``tf.train.Checkpoint`` of the iterator (and of how many elements it has
given). ``save(path)`` writes the iterator's state; a new run builds the
same pipeline, makes a new ``ResumableIterator`` and ``restore(path)``-s
it: the next elements are the ones the interrupted run would have given.

What a tf.data iterator checkpoint holds: the position of every source
(files, ``range``, ``from_tensor_slices``), the state of random ops
(``Dataset.random``, seeded ``shuffle``) and the elements buffered inside
the pipeline (``shuffle`` buffers, ``prefetch``, parallel ``map``
results, the pools of ``windows_dataset``/``transitions_dataset``). Big
buffers make big checkpoints: a pool of 64 episodes of images is stored as
such. Resuming gives the same elements only if the rebuilt pipeline is the
same and seeded (``seed=...``); Python state (``from_generator``,
``py_function``) and unseeded ``tf.random`` ops in ``map`` are not saved.

Epochs: repeat the input, not the batches. A shuffled pipeline draws new
seeds each time it is iterated again (each pass of an outer ``repeat()``);
tf.data saves that per-pass counter of ``Dataset.random`` only while its
iterator lives, and read-ahead (``prefetch``, parallel ``map``) ends it a
few batches before the pass does. So ``windows_dataset(...).repeat()``
resumes exactly within a pass, but a save in the last few batches of a pass
resumes the next pass in another (seeded, equally shuffled) order. Repeat
the episodes instead, ``windows_dataset(episodes.repeat(), ...)``: that
resumes exactly at every position (tested for the windows and transitions
pipelines), as does ``rlds_lite.random_access``, whose whole state is
``(seed, position)``. Making the outer ``repeat()`` exact cost half the
throughput (measured), so it is not done.

tf.data calls a ``map`` function stateful if it runs a dataset inside
(``get_single_element``, ``reduce``), as the pooled pipelines do although
their result depends only on their input; such a pipeline's iterator cannot
be saved under tf.data's default policy (``FailedPreconditionError: ...
is stateful``). ``external_state='ignore'`` (the default here) saves it
anyway and is right for rlds_lite pipelines; ``'fail'`` restores tf.data's
check (use it to find truly stateful ops in your own pipeline), ``'warn'``
logs them.

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
