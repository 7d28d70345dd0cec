"""Load an RLDS dataset stored in the TFDS format, nested or dense (``rlds_lite.load``)."""

import os
from typing import Any, Optional, Sequence, Tuple, Union

import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import op_context
from rlds_lite import option_objects
from rlds_lite import dataset_files
from rlds_lite import decoding
from rlds_lite import diagnosis
from rlds_lite import source as source_lib
from rlds_lite.catalog import selection
from rlds_lite.dense import last_step as last_step_lib

CorruptDatasetError = dataset_files.CorruptDatasetError

PathLike = Union[str, os.PathLike]


def load(name_or_dir: Any,
         split: Optional[str] = None,
         *,
         data_dir: Optional[PathLike] = None,
         dense: bool = False,
         shuffle_files: bool = False,
         read_config: Optional[tfds.ReadConfig] = None,
         episodes: Any = None,
         last_step: str = 'invalid',
         step_fields: Optional[Sequence[str]] = None) -> tf.data.Dataset:
  """The episodes of an RLDS dataset stored in the TFDS format, as a ``tf.data.Dataset``.

  Args:
    name_or_dir: a `rlds_lite.Source`, a TFDS name (``'name/config:1.0.0'``) or a dataset
      directory (holding ``dataset_info.json``, or a parent with one version below it).
    split: the split to read (default: the Source's, or ``'train'``); slicing works.
    dense: steps as dicts of ``[T, ...]`` tensors (much faster), not a nested dataset.
    shuffle_files, read_config: as ``tfds.load``'s.
    episodes: read only these episodes: indices, an EXPR, a function of a catalog row or a
      ``Catalog`` (docs/episodes.md); ``last_step`` says what its ``return`` sums.
    step_fields: with ``dense=True``: keep and decode only these step fields.

  Example:
    >>> load('no_such_rlds_dataset')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: load: no TFDS dataset named 'no_such_rlds_dataset' ...
  """
  source = source_lib.as_source(name_or_dir, split, data_dir=data_dir)
  source.check_fields(step_fields, dense)
  if episodes is not None:
    if shuffle_files or read_config is not None:
      raise ValueError('load: episodes= reads the chosen episodes in their '
                       'order; it does not take shuffle_files or read_config '
                       '(shuffle the result instead).')
    source.check_readable(tfrecord=False)  # Chosen episodes: random access.
    return selection.load_episodes(source.builder, source.split, episodes,
                                   dense=dense, last_step=last_step,
                                   step_fields=step_fields)
  if last_step != 'invalid':
    with op_context.named('load'):
      last_step_lib.as_last_step(last_step)
    raise ValueError("load: last_step says what an episodes= EXPR's return "
                     'sums; it needs episodes= (the episodes read are '
                     'complete either way).')
  return source.episodes(dense=dense, fields=step_fields,
                         shuffle_files=shuffle_files, read_config=read_config)


_MOVED = {
    'as_dataset': decoding, 'check_step_lengths': decoding,
    'decode_batch_example': decoding, 'dense_steps_spec': decoding,
    'select_step_fields': decoding, 'episode_error': diagnosis,
    'episode_reader': diagnosis, 'frame_error': diagnosis,
    'named_read_errors': diagnosis, 'check_split': source_lib,
}
"""Names that lived here before the redesign, and the module that has them now."""


def _warn_once(old: str, new: str) -> None:
  option_objects.warn_once(
      ('loading', old), f'rlds_lite.loading.{old} is now {new}; the old name '
      'will go in a later release.')


def rlds_builder(name_or_dir: PathLike, data_dir: Optional[PathLike] = None,
                 *, op: str = 'load') -> Tuple[tfds.core.DatasetBuilder, str]:
  """Deprecated: ``rlds_lite.open(name_or_dir)`` (its ``builder`` and ``label``)."""
  _warn_once('rlds_builder', 'rlds_lite.open(...).builder')
  with op_context.named(op):
    builder = source_lib.open_builder(name_or_dir, data_dir)
  return builder, os.fspath(name_or_dir)


def decode_dense_steps(episodes: tf.data.Dataset,
                       steps_feature: tfds.features.Dataset, label: str = '',
                       step_fields: Optional[Sequence[str]] = None
                       ) -> tf.data.Dataset:
  """Deprecated: ``rlds_lite.decoding.decode_steps`` (``fields=`` for ``step_fields``)."""
  _warn_once('decode_dense_steps', 'rlds_lite.decoding.decode_steps')
  return decoding.decode_steps(episodes, steps_feature, fields=step_fields,
                               label=label)


def __getattr__(name: str) -> Any:
  """The moved names, warning once each (PEP 562)."""
  if name in _MOVED:
    _warn_once(name, f'{_MOVED[name].__name__}.{name}')
    return getattr(_MOVED[name], name)
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
