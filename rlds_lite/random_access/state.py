"""Save and restore a random-access pipeline exactly: its state is two integers.

Example:
  >>> import tempfile
  >>> from rlds_lite import synthetic
  >>> from rlds_lite.random_access import convert, Windows
  >>> chunks = convert(synthetic.dataset(num_episodes=4, seed=0), progress=False)
  >>> it = SampleIterator(chunks, Windows(size=2), batch_size=8, seed=3)
  >>> _ = next(it); path = it.save(tempfile.mkdtemp() + '/data.json')
  >>> again = SampleIterator(chunks, Windows(size=2), batch_size=8)
  >>> again.restore(path)
  >>> (again.seed, again.position)
  (3, 8)
"""

import json
import os
import uuid
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple, Union

import tensorflow as tf

from rlds_lite import nesting
from rlds_lite import sample_kinds as samples_lib
from rlds_lite.random_access import tf_data

__all__ = ['SampleIterator', 'StateMismatchError']

PathLike = Union[str, os.PathLike]
STATE_FORMAT = 'rlds_lite.random_access.state/3'
"""The ``format`` of the states `SampleIterator.state` gives."""
_FORMAT_V2 = 'rlds_lite.random_access.state/2'   # Still restored.
_FORMAT_V1 = 'rlds_lite.random_access.state/1'   # Still restored.
_FORMATS = (STATE_FORMAT, _FORMAT_V2, _FORMAT_V1)
_BOUNDS = {'seed': (-(1 << 63), (1 << 63) - 1), 'position': (0, (1 << 62) - 1)}
"""The values a state's seed (an int64) and position may hold (a position
leaves room to count on: a batch's positions are int64)."""


class StateMismatchError(ValueError):
  """A saved state belongs to another pipeline (data, kind, weights, order, batch).

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
  """An iterator over `sample_batches` (same arguments) whose state is ``(seed, position)``.

  ``plan`` is the pipeline's `tf_data.Plan`; ``checkpoint`` a ``tf.train.Checkpoint`` of the
  state, to save with a model.

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
               **options: Any):
    self.plan, sorted_options = tf_data.plan_of_keywords(
        'SampleIterator', sources, kind, batch_size, seed, options)
    self._options = dict(
        num_parallel_calls=sorted_options.reading.num_parallel_calls,
        prefetch=sorted_options.reading.prefetch)
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
    """``{'format', 'seed', 'position', 'fingerprint'}`` (JSON-ready)."""
    return {'format': STATE_FORMAT, 'seed': self.seed,
            'position': self.position, 'fingerprint': self.fingerprint}

  def _check(self, fingerprint: str, where: str,
             state_format: str = STATE_FORMAT) -> None:
    wanted = {_FORMAT_V1: self.plan.fingerprint_v1,
              _FORMAT_V2: self.plan.fingerprint_v2}.get(
                  state_format, self.plan.fingerprint)
    if fingerprint not in (wanted, self.plan.fingerprint):
      raise StateMismatchError(
          f'random access: the state {where} was saved by another pipeline '
          f'(fingerprint {fingerprint!r}, this one {self.plan.fingerprint!r}): '
          'another dataset or split, sample kind, weights, order or global '
          'batch size' + (', or (a state of format 1) another chunk_steps'
                          if state_format == _FORMAT_V1 else '') +
          '. Restore it into the pipeline that saved it.')

  def _sync(self) -> None:
    wanted = (self.seed, self.position)
    if self._live == wanted:
      return
    fingerprint = self._fingerprint.numpy().decode()
    if fingerprint not in (self.plan.fingerprint, self.plan.fingerprint_v2,
                           self.plan.fingerprint_v1):
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

    Example:
      >>> from rlds_lite import synthetic
      >>> from rlds_lite import random_access as ra
      >>> chunks = ra.convert(synthetic.dataset(3, 4, 6, seed=0),
      ...                     progress=False)
      >>> it = ra.SampleIterator(chunks, ra.Windows(size=2), 4)
      >>> it.restore({**it.state(), 'position': 'ten'})
      Traceback (most recent call last):
      ...
      ValueError: SampleIterator.restore: the state given has position 'ten'; it must be an int from 0 to 4611686018427387903. Restore the state save() wrote (or a state() dict) as it was.
    """
    if isinstance(path_or_state, Mapping):
      state, where = dict(path_or_state), 'given'
    elif not isinstance(path_or_state, (str, os.PathLike)):
      raise TypeError('SampleIterator.restore: pass the path save() returned '
                      f'or a state() dict, got {path_or_state!r}.')
    else:
      state, where = _read_state(os.fspath(path_or_state))
    seed, position, fingerprint = _parse_state(state, where)
    self._check(fingerprint, where, state['format'])
    end = self.plan.end
    if end is not None and position > end:
      raise ValueError(f'SampleIterator.restore: the state {where} has '
                       f'position {position}, past the end of this pipeline '
                       f'({end}: num_epochs times its samples); the pipeline '
                       'that saved it never got there.')
    self._seed.assign(seed)
    self._position.assign(position)


def _read_state(path: str) -> Tuple[Any, str]:
  """``(the JSON value at path or None, where)``; raises if nothing is there."""
  if not tf.io.gfile.exists(path):
    raise FileNotFoundError(f'SampleIterator.restore: no state at '
                            f'{path!r}; pass the path save() returned.')
  if tf.io.gfile.isdir(path):
    raise IsADirectoryError(f'SampleIterator.restore: {path!r} is a '
                            'directory; pass the path of the file save() '
                            'wrote.')
  with tf.io.gfile.GFile(path, 'rb') as f:
    try:
      return nesting.loads(f.read().decode('utf-8')), f'in {path!r}'
    except nesting.TooDeepError as e:
      raise ValueError(f'SampleIterator.restore: the state in {path!r} '
                       f'{str(e).removeprefix("JSON ")}; it is not a saved '
                       'random-access state.') from None
    except (UnicodeDecodeError, json.JSONDecodeError):
      return None, f'in {path!r}'


def _parse_state(state: Any, where: str) -> Tuple[int, int, str]:
  """``(seed, position, fingerprint)`` of a saved state, or a ValueError."""
  if not isinstance(state, dict) or state.get('format') not in _FORMATS:
    raise ValueError(f'SampleIterator.restore: the state {where} is not a '
                     'saved random-access state.')
  again = 'Restore the state save() wrote (or a state() dict) as it was.'
  missing = [key for key in ('seed', 'position', 'fingerprint')
             if key not in state]
  if missing:
    raise ValueError(f'SampleIterator.restore: the state {where} has no '
                     f'{", ".join(repr(k) for k in missing)}. {again}')
  for key, (low, high) in _BOUNDS.items():
    value = state[key]
    if (isinstance(value, bool) or not isinstance(value, int) or
        not low <= value <= high):
      raise ValueError(f'SampleIterator.restore: the state {where} has '
                       f'{key} {value!r}; it must be an int from {low} to '
                       f'{high}. {again}')
  if not isinstance(state['fingerprint'], str):
    raise ValueError(f'SampleIterator.restore: the state {where} has '
                     f'fingerprint {state["fingerprint"]!r}; it must be a '
                     f'string. {again}')
  return state['seed'], state['position'], state['fingerprint']
