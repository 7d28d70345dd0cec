"""Write new datasets from chosen episodes: filter, merge, train/validation split.

The records are copied as they are, atomically; what the metadata records: docs/episodes.md.

Example:
  >>> import tempfile, os
  >>> from rlds_lite import synthetic
  >>> source = synthetic.dataset(num_episodes=10, seed=0)
  >>> out = os.path.join(tempfile.mkdtemp(), 'long')
  >>> path = filter_dataset(source, out, 'length > 20', val_fraction=0.25,
  ...                       progress=False)
  >>> import tensorflow_datasets as tfds
  >>> info = tfds.builder_from_directory(path).info
  >>> {name: s.num_examples for name, s in info.splits.items()}
  {'train': 5, 'validation': 2}
  >>> info.metadata['rlds_lite']['episodes']['validation']
  [[0, 6, 1], [0, 8, 1]]
"""

import contextlib
import dataclasses
import os
from typing import (Any, Dict, Iterator, List, NamedTuple, Optional,
                    Sequence, Union)

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import atomic_output
from rlds_lite import dataset_files
from rlds_lite import diagnosis
from rlds_lite import op_context
from rlds_lite import overwriting
from rlds_lite import source as source_lib
from rlds_lite import progress as progress_lib
from rlds_lite import rlds_types
from rlds_lite.catalog import build
from rlds_lite.catalog import expression
from rlds_lite.catalog import records as records_lib
from rlds_lite.catalog import selection
from rlds_lite.catalog import table
from rlds_lite.dense import last_step as last_step_lib
from rlds_lite.tfds import episode_writer

__all__ = ['filter_dataset', 'merge_datasets', 'split_dataset', 'TRAIN',
           'VALIDATION']

PathLike = Union[str, os.PathLike]

TRAIN = 'train'
VALIDATION = 'validation'


class _Chosen(NamedTuple):
  """The episodes chosen from one opened split, and the split's files."""
  source: source_lib.Source
  files: records_lib.SplitFiles
  indices: np.ndarray


def _describe(chosen: _Chosen) -> Dict[str, Any]:
  """What the new dataset's metadata says of one source."""
  info = chosen.source.builder.info
  metadata = info.metadata
  return {'dataset': chosen.source.data_dir, 'name': info.name,
          'version': str(info.version), 'split': chosen.source.split,
          'num_episodes': chosen.files.num_episodes,
          'metadata': dict(metadata) if metadata else {}}


def _open(source: Any, split: Optional[str],
          data_dir: Optional[PathLike]) -> _Chosen:
  opened = source_lib.as_source(source, split, data_dir=data_dir)
  files = records_lib.split_files(opened.builder, opened.split)
  dataset_files.check_open(opened.builder, opened.split)  # Damage named now.
  return _Chosen(opened, files, np.arange(files.num_episodes, dtype=np.int64))


def _catalog(chosen: _Chosen, progress: Optional[bool],
             last_step: str = 'invalid') -> table.Catalog:
  return build.catalog_of_builder(chosen.source.builder, chosen.source.split,
                                  last_step=last_step, progress=progress)


def _check_out_dir(out_dir: PathLike) -> str:
  out_dir = os.path.expanduser(os.fspath(out_dir))
  if tf.io.gfile.exists(out_dir):
    raise FileExistsError(f'{out_dir!r} already exists; choose a new output '
                          'directory (nothing was written).')
  return out_dir


def _flat_features(features: tfds.features.FeaturesDict
                   ) -> Dict[str, tfds.features.FeatureConnector]:
  flat = {}
  for path, leaf in build._leaves(features):  # pylint: disable=protected-access
    if isinstance(leaf, tfds.features.Dataset):
      for step_path, step_leaf in build._leaves(leaf.feature):  # pylint: disable=protected-access
        flat[f'{path}/{step_path}'] = step_leaf
    else:
      flat[path] = leaf
  return flat


def _feature_difference(first: source_lib.Source, other: source_lib.Source
                        ) -> Optional[str]:
  """How ``other``'s features differ from ``first``'s, or None if the same."""
  a, b = first.features, other.features
  if a.to_json() == b.to_json():
    return None
  flat_a, flat_b = _flat_features(a), _flat_features(b)
  only_a = sorted(set(flat_a) - set(flat_b))
  only_b = sorted(set(flat_b) - set(flat_a))
  if only_a or only_b:
    parts = []
    if only_a:
      parts.append(f'only {first.label!r} has {", ".join(only_a)}')
    if only_b:
      parts.append(f'only {other.label!r} has {", ".join(only_b)}')
    return '; '.join(parts)
  for path in flat_a:
    if flat_a[path].to_json() != flat_b[path].to_json():
      return (f'{path} is {_short(flat_a[path])} in {first.label!r} but '
              f'{_short(flat_b[path])} in {other.label!r}')
  return 'their feature descriptions differ'


def _short(feature: Any) -> str:
  return ' '.join(repr(feature).split())


def _validation_mask(total: int, val_fraction: Optional[float],
                     seed: int) -> Optional[np.ndarray]:
  """Which of ``total`` episodes go to validation (None: no split)."""
  if val_fraction is None:
    return None
  if isinstance(val_fraction, bool) or not isinstance(
      val_fraction, (int, float)) or not 0 < val_fraction < 1:
    raise ValueError(f'val_fraction must be between 0 and 1 (exclusive), got '
                     f'{val_fraction!r}.')
  num_val = int(np.floor(val_fraction * total + 0.5))
  if num_val == 0 or num_val == total:
    empty = VALIDATION if num_val == 0 else TRAIN
    raise ValueError(f'val_fraction={val_fraction} of {total} episode'
                     f'{"s" if total != 1 else ""} leaves the {empty!r} split '
                     'empty.')
  mask = np.zeros(total, bool)
  mask[np.random.default_rng(seed).choice(total, num_val, replace=False)] = True
  return mask


def _runs(sources: Sequence[_Chosen], take: np.ndarray
          ) -> List[List[int]]:
  """``[source, first index, count]`` runs of the episodes where ``take``."""
  runs: List[List[int]] = []
  position = 0
  for number, source in enumerate(sources):
    for index in source.indices:
      if take[position]:
        last = runs[-1] if runs else None
        if last and last[0] == number and last[1] + last[2] == index:
          last[2] += 1
        else:
          runs.append([number, int(index), 1])
      position += 1
  return runs


@dataclasses.dataclass(frozen=True)
class _Ids:
  """The episode-id policy of a merge, and the new ids if renumbered."""
  field: Optional[str]
  policy: str  # 'none', 'kept', 'renumbered', 'prefixed'
  new_ids: Optional[List[Any]] = None


def _episode_ids(sources: Sequence[_Chosen],
                 progress: Optional[bool]) -> _Ids:
  catalogs = [_catalog(s, progress) for s in sources]
  fields = {c.info.get('episode_id') for c in catalogs}
  field = fields.pop() if len(fields) == 1 else None
  if field is None or 'episode_id' not in catalogs[0]:
    return _Ids(None, 'none')
  ids = [c['episode_id'][s.indices] for c, s in zip(catalogs, sources)]
  joined = np.concatenate(ids)
  if len(np.unique(joined)) == len(joined):
    return _Ids(field, 'kept')
  if joined.dtype.kind in 'iu':
    return _Ids(field, 'renumbered', list(range(len(joined))))
  if joined.dtype.kind in 'US':
    new_ids = [f'{number}:{old}' for number, part in enumerate(ids)
               for old in part.tolist()]
    if len(set(new_ids)) != len(new_ids):
      raise ValueError('merge: episode ids collide even with the source number '
                       'as prefix; make them unique first.')
    return _Ids(field, 'prefixed', new_ids)
  raise ValueError(f'merge: episode ids ({field}, {joined.dtype}) collide and '
                   'are neither integers nor strings; they cannot be made '
                   'unique.')


def _with_episode_id(record: bytes, field: str, value: Any) -> bytes:
  """``record`` with its episode id set to ``value`` (nothing else decoded)."""
  example = tf.train.Example.FromString(record)
  if field not in example.features.feature:
    raise ValueError(f'merge: an episode record has no {field!r} feature to '
                     'renumber.')
  feature = example.features.feature[field]
  if isinstance(value, str):
    feature.bytes_list.value[:] = [value.encode('utf-8')]
  else:
    feature.int64_list.value[:] = [int(value)]
  return example.SerializeToString()


@contextlib.contextmanager
def _damage_named(source: source_lib.Source) -> Iterator[None]:
  """Read errors of ``source`` as the `CorruptDatasetError` naming its file (and episode)."""
  try:
    with diagnosis.named_read_errors(source.builder, source.split):
      yield
  except dataset_files.CorruptDatasetError:
    raise
  except ValueError:
    for problem in dataset_files.find_damage(source.builder, source.split):
      raise problem from None
    raise


@dataclasses.dataclass(frozen=True)
class _Choice:
  """How the episodes were chosen and split (recorded in the metadata)."""
  where: Optional[str] = None
  last_step: Optional[str] = None
  val_fraction: Optional[float] = None
  seed: int = 0


def _metadata(operation: str, chosen: Sequence[_Chosen], choice: _Choice,
              ids: _Ids, out_splits: Dict[str, np.ndarray]) -> Dict[str, Any]:
  return {'rlds_lite': {
      'operation': operation,
      'sources': [_describe(c) for c in chosen],
      'where': choice.where,
      'last_step': choice.last_step,
      'val_fraction': choice.val_fraction,
      'seed': choice.seed if choice.val_fraction is not None else None,
      'episode_id': {'field': ids.field, 'policy': ids.policy},
      'episodes': {split: _runs(chosen, take)
                   for split, take in out_splits.items()},
  }}


def _write(operation: str, chosen: Sequence[_Chosen], out_dir: str,
           choice: _Choice, *, name: Optional[str], ids: _Ids,
           progress: Optional[bool]) -> str:
  """Copies the chosen episodes into a new dataset; its directory."""
  total = sum(len(c.indices) for c in chosen)
  if total == 0:
    condition = f' matches {choice.where!r}' if choice.where else ' to write'
    raise ValueError(f'{operation}: no episode{condition}; nothing was '
                     'written.')
  validation = _validation_mask(total, choice.val_fraction, choice.seed)
  first = chosen[0]
  info = first.source.builder.info
  name = name or info.name
  episode_writer.check_name(name)
  if validation is None:
    split_of = lambda position: first.source.split
    out_splits = {first.source.split: np.ones(total, bool)}
  else:
    split_of = lambda position: VALIDATION if validation[position] else TRAIN
    out_splits = {TRAIN: ~validation, VALIDATION: validation}
  card = episode_writer.DatasetCard(
      description=info.description, homepage=info.homepage,
      citation=info.citation,
      metadata=_metadata(operation, chosen, choice, ids, out_splits))
  # The whole out_dir is staged beside it and renamed in once the dataset
  # is published inside: a kill leaves no out_dir, and no re-run is refused.
  with atomic_output.AtomicOutput(out_dir, directory=True,
                                  check=_check_out_dir) as output:
    with episode_writer.EpisodeWriter(
        output.path, name, info.features, splits=tuple(out_splits),
        options=episode_writer.FileOptions(
            file_format=first.files.file_format),
        version=str(info.version), card=card) as writer:
      position = 0
      with progress_lib.bar(progress, total=total, unit=' episodes',
                            desc=operation) as bar:
        for source, files, indices in chosen:
          with _damage_named(source):
            for record in records_lib.iterate_records(files, indices):
              if ids.new_ids is not None:
                record = _with_episode_id(record, ids.field,
                                          ids.new_ids[position])
              writer.add_serialized_episode(record, split_of(position))
              position += 1
              bar.update(1)
    staged = writer.path
    output.publish()
  return os.path.join(out_dir, os.path.relpath(staged, output.path))


def filter_dataset(source: Any,
                   out_dir: PathLike,
                   where: Optional[str] = None,
                   *,
                   split: Optional[str] = None,
                   val_fraction: Optional[float] = None,
                   seed: int = 0,
                   name: Optional[str] = None,
                   data_dir: Optional[PathLike] = None,
                   last_step: Union[last_step_lib.LastStep, str] = 'invalid',
                   progress: Optional[bool] = None) -> str:
  """Writes the episodes of a split matching an EXPR as a new dataset; its directory.

  Args:
    source: a dataset directory, registered TFDS name or `rlds_lite.Source`.
    out_dir: a new directory (the TFDS ``data_dir`` of the new dataset), outside the source.
    where: an EXPR over the catalog (``'success and length > 20'``); None keeps every episode.
    split: the split to read (default ``'train'``, or the first split).
    val_fraction, seed: if given, ``round(val_fraction * N)`` episodes chosen with ``seed``
      go to a ``'validation'`` split, the others to ``'train'``.
    name: the new dataset's name (default: the source's).
    last_step: what ``return`` sums in ``where``: ``'invalid'`` (default, RLDS: every step
      but the last) or ``'valid'``.
    progress: progress bars on stderr (None: on a terminal only).

  Example:
    >>> import tempfile, os
    >>> import rlds_lite
    >>> from rlds_lite import synthetic
    >>> source = synthetic.dataset(num_episodes=6, seed=0)
    >>> path = filter_dataset(source, os.path.join(tempfile.mkdtemp(), 'out'),
    ...                       'terminated', progress=False)
    >>> [int(e['episode_id']) for e in rlds_lite.load(path)]
    [0, 4]
  """
  with op_context.named('filter'):
    policy = last_step_lib.as_last_step(last_step)
  out_dir = _check_out_dir(out_dir)
  opened = _open(source, split, data_dir)
  overwriting.check_apart_from_sources(out_dir, [opened.source.data_dir],
                                       kind='dataset', writer='filter')
  if where is not None:
    where = expression.parse(where).text
    catalog = _catalog(opened, progress, policy.value)
    opened = opened._replace(indices=catalog.select(where).indices)
    if selection.uses_return(where):
      build.warn_left_out(catalog, 'filter')
  choice = _Choice(where, policy.value if where is not None else None,
                   val_fraction, seed)
  return _write('filter', [opened], out_dir, choice, name=name,
                ids=_Ids(None, 'kept'), progress=progress)


def split_dataset(source: Any,
                  out_dir: PathLike,
                  val_fraction: float,
                  *,
                  seed: int = 0,
                  split: Optional[str] = None,
                  name: Optional[str] = None,
                  data_dir: Optional[PathLike] = None,
                  progress: Optional[bool] = None) -> str:
  """Writes a split's episodes with train/validation splits (`filter_dataset` without an EXPR).

  Example:
    >>> import tempfile, os
    >>> from rlds_lite import synthetic
    >>> source = synthetic.dataset(num_episodes=10, seed=0)
    >>> path = split_dataset(source, os.path.join(tempfile.mkdtemp(), 'out'),
    ...                      0.2, seed=1, progress=False)
    >>> import rlds_lite
    >>> [len(rlds_lite.load(path, s)) for s in ('train', 'validation')]
    [8, 2]
  """
  if val_fraction is None:
    raise ValueError('split_dataset: val_fraction is required.')
  return filter_dataset(source, out_dir, None, split=split,
                        val_fraction=val_fraction, seed=seed, name=name,
                        data_dir=data_dir, progress=progress)


def merge_datasets(sources: Sequence[Any],
                   out_dir: PathLike,
                   *,
                   split: Optional[str] = None,
                   val_fraction: Optional[float] = None,
                   seed: int = 0,
                   name: Optional[str] = None,
                   data_dir: Optional[PathLike] = None,
                   progress: Optional[bool] = None) -> str:
  """Writes the episodes of several datasets with the same features as one; its directory.

  Episodes come in the order of ``sources``; ids are kept if unique, else renumbered
  (docs/episodes.md). The other arguments are `filter_dataset`'s.

  Example:
    >>> import tempfile, os
    >>> from rlds_lite import synthetic
    >>> a = synthetic.dataset(3, seed=0)
    >>> path = merge_datasets([a, a], os.path.join(tempfile.mkdtemp(), 'm'),
    ...                       progress=False)
    >>> import rlds_lite
    >>> [int(e['episode_id']) for e in rlds_lite.load(path)]
    [0, 1, 2, 3, 4, 5]
  """
  if isinstance(sources, (str, os.PathLike)) or not sources:
    raise ValueError('merge: pass a list of at least one dataset.')
  out_dir = _check_out_dir(out_dir)
  opened = [_open(source, split, data_dir) for source in sources]
  overwriting.check_apart_from_sources(
      out_dir, [c.source.data_dir for c in opened], kind='dataset',
      writer='merge')
  for other in opened[1:]:
    difference = _feature_difference(opened[0].source, other.source)
    if difference is not None:
      raise ValueError(f'merge: the datasets have different features: '
                       f'{difference}.')
  ids = _episode_ids(opened, progress)
  return _write('merge', opened, out_dir, _Choice(val_fraction=val_fraction,
                                                  seed=seed),
                name=name, ids=ids, progress=progress)
