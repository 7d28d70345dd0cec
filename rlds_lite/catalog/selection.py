"""Read only chosen episodes of a split: ``rlds_lite.load(..., episodes=...)``.

``episodes`` is a list of indices, an EXPR, a function of a catalog row, or a
`Catalog` (docs/episodes.md).
"""

import logging
import os
from typing import Any, Callable, Dict, Optional, Sequence, Union

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import decoding
from rlds_lite import rlds_types
from rlds_lite.catalog import build
from rlds_lite.catalog import expression
from rlds_lite.catalog import records as records_lib
from rlds_lite.catalog import table

_LOG = logging.getLogger('rlds_lite')
from rlds_lite.dense import last_step as last_step_lib

__all__ = ['Episodes', 'episode_indices', 'load_episodes', 'uses_return']

Episodes = Union[Sequence[int], np.ndarray, str, expression.Expression,
                 Callable[[Dict[str, Any]], Any], table.Catalog]


def _catalog_indices(catalog: table.Catalog, builder: tfds.core.DatasetBuilder,
                     split: str) -> np.ndarray:
  info = catalog.info
  dataset = info.get('dataset')
  if dataset is not None and (
      os.path.realpath(dataset) != os.path.realpath(
          os.fspath(builder.data_dir)) or info.get('split') != split):
    raise ValueError(
        f'episodes: the catalog describes split {info.get("split")!r} of '
        f'{dataset!r}, not split {split!r} of '
        f'{os.fspath(builder.data_dir)!r}.')
  return np.asarray(catalog.indices, dtype=np.int64)


def uses_return(where: Any) -> bool:
  """Whether a choice may read ``return``: an EXPR naming it, or a function.

  Example:
    >>> uses_return('return > 0 and length > 2'), uses_return('terminated')
    (True, False)
  """
  if isinstance(where, (str, expression.Expression)):
    return 'return' in expression.column_names(expression.parse(where))
  return callable(where)


def episode_indices(episodes: Episodes, builder: tfds.core.DatasetBuilder,
                    split: str, *,
                    last_step: Union[last_step_lib.LastStep, str] = 'invalid',
                    progress: Optional[bool] = None) -> np.ndarray:
  """The split indices ``episodes`` chooses, in the order to read them.

    Example:
      >>> import rlds_lite
      >>> from rlds_lite import synthetic
      >>> path = synthetic.dataset(num_episodes=6, seed=0)
      >>> builder = rlds_lite.open(path).builder
      >>> episode_indices('length < 20', builder, 'train', progress=False)
      array([0, 5])
  """
  files = records_lib.split_files(builder, split)
  if isinstance(episodes, table.Catalog):
    indices = _catalog_indices(episodes, builder, split)
  elif isinstance(episodes, (str, expression.Expression)) or callable(
      episodes):
    catalog = build.catalog_of_builder(builder, split, last_step=last_step,
                                       progress=progress)
    indices = catalog.select(episodes).indices
    if uses_return(episodes):
      build.warn_left_out(catalog, 'load', stacklevel=5)
  elif isinstance(episodes, (bool, int, np.integer, bytes, dict)):
    raise TypeError('episodes must be a list of episode indices, an EXPR, a '
                    'function of a catalog row or a Catalog, got '
                    f'{type(episodes).__name__}.')
  else:
    indices = episodes
  return records_lib.checked_indices(files, indices)


def _parse_fn(features: tfds.features.FeaturesDict, dense: bool):
  decoders = {rlds_types.STEPS: tfds.decode.SkipDecoding()} if dense else None

  @tf.autograph.experimental.do_not_convert
  def parse(record):
    return features.deserialize_example(record, decoders=decoders)

  return parse


def load_episodes(builder: tfds.core.DatasetBuilder, split: str,
                  episodes: Episodes, *, dense: bool = False,
                  last_step: Union[last_step_lib.LastStep, str] = 'invalid',
                  step_fields: Optional[Sequence[str]] = None,
                  progress: Optional[bool] = None) -> tf.data.Dataset:
  """The chosen episodes of ``split``, as `rlds_lite.load` gives episodes.

    Args:
      builder: the dataset's TFDS builder.
      split: a plain split name.
      episodes: which episodes (indices, EXPR, function or `Catalog`).
      dense: steps as dicts of ``[T, ...]`` tensors instead of datasets.
      last_step: what ``return`` sums in an EXPR or function.
      step_fields: with ``dense``, keep and decode only these step fields.
      progress: the catalog's progress bar, if one is built.

    Example:
      >>> import rlds_lite
      >>> from rlds_lite import synthetic
      >>> path = synthetic.dataset(num_episodes=6, seed=0)
      >>> builder = rlds_lite.open(path).builder
      >>> episodes = load_episodes(builder, 'train', [5, 0], dense=True)
      >>> [int(e['steps']['reward'].shape[0]) for e in episodes]
      [10, 5]
  """
  indices = episode_indices(episodes, builder, split, last_step=last_step,
                            progress=progress)
  if not len(indices):  # pylint: disable=g-explicit-length-test
    _LOG.warning('load: episodes=%r chose none of the %d episodes of split '
                 '%r: the dataset is empty.', episodes,
                 builder.info.splits[split].num_examples, split)
  files = records_lib.split_files(builder, split)
  features = builder.info.features
  serialized = records_lib.read_records(files, indices)
  parsed = serialized.map(_parse_fn(features, dense),
                          num_parallel_calls=tf.data.AUTOTUNE,
                          deterministic=True)
  parsed = parsed.apply(tf.data.experimental.assert_cardinality(len(indices)))
  if dense:
    return decoding.decode_steps(parsed, features[rlds_types.STEPS],
                                 fields=step_fields)
  return parsed
