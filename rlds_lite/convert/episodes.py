"""Episodes as NumPy arrays: the form every format converter speaks.

This module checks Episodes and turns them into RLDS ``tf.data`` datasets and
TFDS directories, and back.
"""

import itertools
import os
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Union

import numpy as np
import tensorflow as tf

from rlds_lite import nest_paths
from rlds_lite import rlds_types
from rlds_lite.validation import RLDSFormatError
from rlds_lite.dense import conversion
from rlds_lite.tfds import episode_writer
from rlds_lite.tfds import features as features_lib

Episode = Dict[str, Any]
"""``{'steps': {field: np.ndarray [T, ...] (nested dicts allowed)}, **metadata}``."""

EpisodesLike = Union[tf.data.Dataset, Iterable[Episode]]
"""An RLDS episodes dataset (nested or dense steps) or an iterable of Episodes."""

_FLAGS = (rlds_types.IS_FIRST, rlds_types.IS_LAST, rlds_types.IS_TERMINAL)


class ConversionError(RLDSFormatError):
  """Input of a converter breaks its format; names source, episode and field.

  Example:
    >>> str(ConversionError('missing', source='a.h5', episode=3,
    ...                     field='actions'))
    "a.h5: episode 3, field 'actions': missing"
  """

  def __init__(self, message: str, *, source: Optional[str] = None,
               episode: Optional[Union[int, str]] = None,
               field: Optional[str] = None):
    super().__init__(message, episode, field)
    if source is not None:
      self.args = (f'{source}: {self.args[0]}',)
    self.source = source
    self.episode = episode


def rlds_flags(length: int, terminated: bool) -> Dict[str, np.ndarray]:
  """``is_first``, ``is_last`` and ``is_terminal`` of an episode of ``length`` steps.

  Example:
    >>> {k: v.tolist() for k, v in rlds_flags(2, terminated=False).items()}
    {'is_first': [True, False], 'is_last': [False, True], 'is_terminal': [False, False]}
  """
  index = np.arange(length)
  is_last = index == length - 1
  return {
      rlds_types.IS_FIRST: index == 0,
      rlds_types.IS_LAST: is_last,
      rlds_types.IS_TERMINAL: is_last & bool(terminated),
  }


def _flag_problem(name: str, flag: np.ndarray) -> Optional[str]:
  """What is wrong with one flag column of a whole episode, or None."""
  length = len(flag)
  if name == rlds_types.IS_FIRST and (not flag[0] or flag[1:].any()):
    return 'must be True on step 0 only'
  if name == rlds_types.IS_LAST and (not flag[-1] or flag[:-1].any()):
    return f'must be True on the last step (step {length - 1}) only'
  if name == rlds_types.IS_TERMINAL and flag[:-1].any():
    return 'may only be True on the last step'
  return None


def held_text(array: np.ndarray, flat: int) -> str:
  """``'holds <value> at index <i>'`` of ``array``'s ``flat``-th element
  (the index an int, or a tuple; none for a scalar)."""
  text = f'holds {array.reshape(-1)[flat].item()}'
  if array.ndim == 1:
    return f'{text} at index {flat}'
  if array.ndim:
    index = tuple(int(i) for i in np.unravel_index(flat, array.shape))
    return f'{text} at index {index}'
  return text


def flags(value: Any, *, source: str, field: str,
          episode: Optional[Union[int, str]] = None) -> np.ndarray:
  """``value`` as a bool array: bools as they are, numbers only if 0 or 1.

  Example:
    >>> flags([0, 1], source='x', field='dones').tolist()
    [False, True]
    >>> flags([0, float('nan')], source='x.h5', field='terminals')
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: x.h5: field 'terminals': holds nan at index 1; a flag stored as numbers must be 0 or 1
  """
  array = np.asarray(value)
  if array.dtype == np.bool_:
    return array
  if array.dtype.kind not in 'iuf':
    raise ConversionError(
        f'has dtype {array.dtype}; a flag must be bool or numbers 0 and 1',
        source=source, episode=episode, field=field)
  bad = np.flatnonzero((array != 0) & (array != 1))
  if len(bad):
    first = int(bad[0])
    raise ConversionError(
        f'{held_text(array, first)}; a flag stored as numbers must be 0 or 1',
        source=source, episode=episode, field=field)
  return array.astype(bool)


def check_episode(episode: Episode, *, source: str = '<memory>',
                  index: Union[int, str] = 0) -> Episode:
  """Checks an Episode (one length ``T >= 1``, flags as RLDS requires); returns it with bool flags.

  Args:
    episode: the Episode (a missing ``is_terminal`` is all False).
    source: the file or object it came from (for error messages).
    index: the episode's index or name in the source.

  Example:
    >>> check_episode({'steps': {'reward': np.zeros(2), 'is_first': [1, 0],
    ...                          'is_last': [0, 0]}}, source='x.h5', index=4)
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: x.h5: episode 4, field 'is_last': must be True on the last step (step 1) only
  """
  steps = episode.get(rlds_types.STEPS) if isinstance(episode, dict) else None
  if not isinstance(steps, dict):
    raise ConversionError("needs a dict of step arrays under 'steps'",
                          source=source, episode=index, field='steps')
  slash = nest_paths.slash_key(episode)
  if slash:
    raise ConversionError(nest_paths.slash_key_problem(slash), source=source,
                          episode=index)
  steps = {k: np.asarray(v) if k in _FLAGS else v for k, v in steps.items()}
  leaves = nest_paths.flatten_with_paths(steps)
  if not leaves:
    raise ConversionError('has no step fields', source=source, episode=index,
                          field='steps')
  lengths = {}
  for path, leaf in leaves:
    shape = np.shape(leaf)
    if not shape:
      raise ConversionError('is a scalar, not a [T, ...] array',
                            source=source, episode=index, field=path)
    lengths[path] = shape[0]
  length = max(lengths.values())
  for path, field_length in lengths.items():
    if field_length != length:
      raise ConversionError(
          f'has {field_length} steps, other fields have {length}',
          source=source, episode=index, field=path)
  if length == 0:
    raise ConversionError('has no steps', source=source, episode=index,
                          field='steps')
  steps.setdefault(rlds_types.IS_TERMINAL, np.zeros(length, bool))
  for name in _FLAGS:
    if name not in steps:
      raise ConversionError('is missing', source=source, episode=index,
                            field=name)
    flag = flags(steps[name], source=source, field=name, episode=index)
    problem = _flag_problem(name, flag)
    if problem:
      raise ConversionError(problem, source=source, episode=index, field=name)
    steps[name] = flag
  return {**episode, rlds_types.STEPS: steps}


def _check_one_number(steps: Dict[str, Any], name: str, source: str,
                      index: int) -> None:
  """A ConversionError unless ``steps[name]`` (if there) is ``[T]`` or ``[T, 1]`` numbers."""
  if name not in steps:
    return
  value = steps[name]
  if isinstance(value, dict):
    what = 'is a dict'
  else:
    value = np.asarray(value)
    if value.dtype.kind in 'biuf' and value.shape[1:] in ((), (1,)):
      return
    what = (f'has per-step shape {tuple(value.shape[1:])} and dtype '
            f'{value.dtype}')
  raise ConversionError(f'{what}; this format stores one number per step',
                        source=source, episode=index, field=name)


def _step_specs(steps: Dict[str, Any]) -> Dict[str, Any]:
  """Path -> (per-step shape, dtype) of every step field (strings: 'string')."""
  if all(type(leaf) is np.ndarray for leaf in steps.values()):  # pylint: disable=unidiomatic-typecheck
    leaves = sorted(steps.items())  # Flat steps (the usual case): no walk.
  else:
    leaves = nest_paths.flatten_with_paths(steps)
  specs = {}
  for path, leaf in leaves:
    dtype = np.asarray(leaf).dtype
    specs[path] = (np.shape(leaf)[1:],
                   'string' if dtype.kind in 'OSUT' else dtype)
  return specs


def checked_episodes(episodes: EpisodesLike, *,
                     source: str = '<episodes>',
                     numbers: Sequence[str] = ()) -> Iterator[Episode]:
  """Episodes as NumPy, each checked (`check_episode`) and shaped like the first.

  ``numbers``: step fields the format stores as one number per step.

  Example:
    >>> ep = lambda obs: {'steps': {'observation': obs, **rlds_flags(2, True)}}
    >>> list(checked_episodes([ep(np.zeros((2, 3))), ep(np.zeros((2, 4)))]))
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: <episodes>: episode 1, field 'observation': has steps of shape (4,); episode 0 has (3,)
  """
  first = None
  for index, episode in enumerate(numpy_episodes(episodes)):
    episode = check_episode(episode, source=source, index=index)
    for name in numbers:
      _check_one_number(episode[rlds_types.STEPS], name, source, index)
    specs = _step_specs(episode[rlds_types.STEPS])
    if first is None:
      first = specs
    _check_like_first(first, specs, source, index)
    yield episode


def _check_like_first(first: Dict[str, Any], specs: Dict[str, Any],
                      source: str, index: int) -> None:
  """Raises unless episode ``index``'s step specs are episode 0's."""
  unshared = sorted(set(first) ^ set(specs))
  if unshared:
    raise ConversionError('is in some episodes only', source=source,
                          episode=index, field=unshared[0])
  for path, (shape, dtype) in specs.items():
    first_shape, first_dtype = first[path]
    if shape != first_shape:
      raise ConversionError(f'has steps of shape {shape}; episode 0 has '
                            f'{first_shape}', source=source,
                            episode=index, field=path)
    if dtype != first_dtype:
      raise ConversionError(f'has dtype {dtype}; episode 0 has '
                            f'{first_dtype}', source=source,
                            episode=index, field=path)


def open_hdf5(path: Union[str, os.PathLike]) -> Any:
  """``h5py.File(path, 'r')``; a file that is not HDF5 is a ConversionError.

  Example:
    >>> import tempfile
    >>> bad = os.path.join(tempfile.mkdtemp(), 'x.h5')
    >>> with open(bad, 'wb') as f:
    ...   _ = f.write(b'not HDF5')
    >>> open_hdf5(bad)
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: /.../x.h5: is not a readable HDF5 file: Unable to ... (file signature not found)
  """
  import h5py  # pylint: disable=g-import-not-at-top
  path = os.fspath(path)
  if os.path.isdir(path):
    raise ConversionError('is a directory, not an HDF5 file', source=path)
  try:
    return h5py.File(path, 'r')
  except FileNotFoundError:
    raise
  except OSError as error:
    raise ConversionError(f'is not a readable HDF5 file: {error}',
                          source=path) from None


def episode_slices(ends: Any, *, source: str = '<memory>',
                   field: str = 'dones') -> List[slice]:
  """One ``slice`` of rows per episode of a concatenated layout, from its end flags.

  Args:
    ends: bool ``[N]``: True on the last row of each episode.
    source: the file or object (for error messages).
    field: the name of the end flag in that format (for error messages).

  Example:
    >>> episode_slices([False, True, True, False, True])
    [slice(0, 2, None), slice(2, 3, None), slice(3, 5, None)]
  """
  ends = np.asarray(ends, bool).reshape(-1)
  stops = np.flatnonzero(ends) + 1
  if len(ends) and (not len(stops) or stops[-1] != len(ends)):
    raise ConversionError(
        f'is never set after row {stops[-1] - 1 if len(stops) else -1}: rows '
        f'{stops[-1] if len(stops) else 0}..{len(ends) - 1} do not end an '
        'episode', source=source, episode=len(stops), field=field)
  starts = np.concatenate([[0], stops[:-1]])
  return [slice(int(a), int(b)) for a, b in zip(starts, stops)]


def _to_numpy(value: Any) -> Any:
  return tf.nest.map_structure(
      lambda t: t.numpy() if isinstance(t, tf.Tensor) else t, value)


def numpy_episodes(episodes: EpisodesLike) -> Iterator[Episode]:
  """Episodes as NumPy, from an RLDS dataset (nested or dense) or an iterable.

  Example:
    >>> import rlds_lite
    >>> ds = rlds_lite.synthetic.episodes(num_episodes=2, seed=0)  # nested
    >>> [e['steps']['reward'].shape == e['steps']['is_last'].shape
    ...  for e in numpy_episodes(ds)]
    [True, True]
  """
  if not isinstance(episodes, tf.data.Dataset):
    yield from episodes
    return
  spec = episodes.element_spec
  if isinstance(spec.get(rlds_types.STEPS), tf.data.DatasetSpec):
    episodes = conversion.to_dense(episodes)
  for episode in episodes:
    yield _to_numpy(episode)


def _spec_of(value: Any, batched: bool) -> Any:
  def leaf_spec(leaf):
    array = np.asarray(leaf)
    shape = list(array.shape)
    if batched:
      shape[0] = None
    return tf.TensorSpec(shape, tf.as_dtype(array.dtype))
  return tf.nest.map_structure(leaf_spec, value)


_CHUNK_STEPS = 1 << 16
"""Steps of consecutive episodes handed to tf.data as one element."""


def _chunks(episodes: Iterable[Episode], max_steps: int) -> Iterator[Any]:
  """Consecutive Episodes stacked: (steps concatenated, lengths, metadata)."""
  batch, steps = [], 0

  def stacked():
    lengths = np.array([len(_first_leaf(e[rlds_types.STEPS])) for e in batch],
                       np.int64)
    columns = tf.nest.map_structure(
        lambda *xs: np.concatenate(xs), *[e[rlds_types.STEPS] for e in batch])
    metadata = {k: tf.nest.map_structure(lambda *xs: np.stack(xs),
                                         *[e[k] for e in batch])
                for k in batch[0] if k != rlds_types.STEPS}
    return columns, lengths, metadata

  for episode in episodes:
    batch.append(episode)
    steps += len(_first_leaf(episode[rlds_types.STEPS]))
    if steps >= max_steps:
      yield stacked()
      batch, steps = [], 0
  if batch:
    yield stacked()


def _first_leaf(steps: Any) -> np.ndarray:
  return np.asarray(tf.nest.flatten(steps)[0])


def to_dataset(episodes: Iterable[Episode], *,
               dense: bool = False) -> tf.data.Dataset:
  """An RLDS episodes ``tf.data.Dataset`` from Episodes (all of one structure).

  The element spec comes from the first episode; ``dense=True`` gives steps as
  dicts of ``[T, ...]`` tensors. The iterable is iterated again at each pass,
  so pass a list to iterate more than once.

  Example:
    >>> ds = to_dataset([{'steps': {'reward': np.zeros(2), **rlds_flags(2, True)},
    ...                   'episode_id': np.int64(7)}])
    >>> e = next(iter(ds))
    >>> int(e['episode_id']), [bool(s['is_last']) for s in e['steps']]
    (7, [False, True])
    >>> to_dataset([{'steps': {'reward': np.zeros(2)}},
    ...             {'steps': {'reward': np.zeros((2, 3))}}])
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: <episodes>: episode 1, field 'reward': has steps of shape (3,); episode 0 has ()
  """
  iterator = iter(episodes)
  try:
    first = next(iterator)
  except StopIteration:
    raise ValueError('to_dataset: no episodes; the element structure of an '
                     'empty dataset cannot be inferred.') from None
  steps_spec = _spec_of(first[rlds_types.STEPS], batched=True)
  metadata_spec = {k: _spec_of(v, batched=False) for k, v in first.items()
                   if k != rlds_types.STEPS}
  chunk_spec = (steps_spec, tf.TensorSpec([None], tf.int64),
                tf.nest.map_structure(
                    lambda s: tf.TensorSpec([None] + s.shape.as_list(),
                                        s.dtype), metadata_spec))

  first_specs = _step_specs(first[rlds_types.STEPS])

  def checked(iterable: Iterable[Episode]) -> Iterator[Episode]:
    for index, episode in enumerate(iterable):
      _check_like_first(first_specs, _step_specs(episode[rlds_types.STEPS]),
                        '<episodes>', index)
      yield episode

  def generate():
    if isinstance(episodes, Iterator):
      yield from _chunks(checked(itertools.chain([first], iterator)),
                         _CHUNK_STEPS)
    else:
      yield from _chunks(episodes, _CHUNK_STEPS)

  if not isinstance(episodes, Iterator):
    for _ in checked(episodes):   # Now, while the error can be plain.
      pass

  def episodes_of(columns, lengths, metadata):
    starts = tf.cumsum(lengths, exclusive=True)

    def episode(start, length, meta):
      steps = tf.nest.map_structure(lambda c: c[start:start + length], columns)
      if not dense:
        steps = tf.data.Dataset.from_tensor_slices(steps)
      return {rlds_types.STEPS: steps, **meta}

    return tf.data.Dataset.from_tensor_slices(
        (starts, lengths, metadata)).map(episode)

  chunks = tf.data.Dataset.from_generator(generate, output_signature=chunk_spec)
  return chunks.flat_map(episodes_of)


def write_tfds(episodes: EpisodesLike, data_dir: Union[str, os.PathLike],
               name: str, *, split: str = 'train', if_exists: str = 'error',
               version: Optional[str] = None,
               options: Optional[episode_writer.FileOptions] = None,
               card: Optional[episode_writer.DatasetCard] = None,
               **legacy: Any) -> str:
  """Writes Episodes (or an RLDS dataset) as a TFDS dataset; returns its dir.

  Features come from the first episode (`rlds_lite.tfds.features_from_episode`);
  ``options`` and ``card`` are `rlds_lite.tfds.EpisodeWriter`'s.

  Example:
    >>> import tempfile, rlds_lite
    >>> path = write_tfds([{'steps': {'reward': np.ones(2, np.float32),
    ...                               **rlds_flags(2, True)}}],
    ...                   tempfile.mkdtemp(), 'toy')
    >>> [int(e['steps']['reward'].shape[0]) for e in rlds_lite.load(path, dense=True)]
    [2]
  """
  options, card = episode_writer.options_and_card('write_tfds', options, card,
                                                  legacy)
  iterator = iter(numpy_episodes(episodes))
  try:
    first = next(iterator)
  except StopIteration:
    raise ValueError(f'write_tfds: no episodes to write to {name!r}.') from None
  features = features_lib.features_from_episode(first,
                                                **options.feature_options())
  with episode_writer.EpisodeWriter(data_dir, name, features, splits=(split,),
                                    options=options, version=version,
                                    if_exists=if_exists, card=card) as writer:
    writer.add_episodes(itertools.chain([first], iterator), split=split)
  return writer.path
