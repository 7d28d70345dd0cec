"""`validate`: check a dataset against the RLDS format in one streaming pass, list every problem.

Example:
  >>> import rlds_lite
  >>> episodes = rlds_lite.synthetic.episode_arrays(num_episodes=3, seed=0)
  >>> episodes[1]['is_last'][-1] = False
  >>> report = validate(episodes)
  >>> report.ok, [(p.episode, p.field, p.kind) for p in report.problems]
  (False, [(1, 'is_last', 'is_last_missing')])
  >>> validate(episodes, repair='is_last').repaired[1]['steps']['is_last'][-1]
  np.True_
"""

import contextlib
import os
from typing import (Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple,
                    Union)

import tensorflow as tf
import tqdm

from rlds_lite import op_context
from rlds_lite import source as source_lib
from rlds_lite import dataset_files
from rlds_lite import dense
from rlds_lite import diagnosis
from rlds_lite import progress as progress_lib
from rlds_lite import rlds_types
from rlds_lite.dense import last_step as last_step_lib
from rlds_lite.checks import problems as problems_lib
from rlds_lite.checks import repair as repair_lib
from rlds_lite.checks import rules
from rlds_lite.checks import sources
from rlds_lite.checks import summaries

Problem = problems_lib.Problem
Summary = Dict[str, Any]
_CHUNK = 1024  # Steps summarised per batch (nested steps).
_MAX_PROBLEMS, _DAMAGE = 'max_problems', 'damage'  # Why a pass stopped.


def _tf_summaries(source: sources.Episodes, plan: summaries.Plan
                  ) -> Iterator[Summary]:
  """Summaries of ``tf.data`` episodes, computed inside the input pipeline."""

  episodes = source.episodes
  if source.kind == sources.NESTED and not plan.shape_paths:
    # All per-step shapes are fixed: batching whole episodes is much faster.
    episodes = dense.to_dense(episodes)
  if not isinstance(episodes.element_spec[rlds_types.STEPS],
                    tf.data.DatasetSpec):
    def summarize(episode):
      return summaries.summarize(episode[rlds_types.STEPS], plan)
  else:
    # Steps may differ in shape inside an episode: summarise step by step.
    def summarize(episode):
      chunks = episode[rlds_types.STEPS].map(
          lambda step: summaries.summarize_step(step, plan)).batch(_CHUNK)
      empty = tf.nest.map_structure(
          lambda s: tf.zeros([0] + s.shape.as_list()[1:], s.dtype),
          chunks.element_spec)
      out = chunks.reduce(empty, lambda total, chunk: tf.nest.map_structure(
          lambda a, b: tf.concat([a, b], 0), total, chunk))
      out[summaries.LENGTH] = tf.shape(out[rlds_types.IS_LAST],
                                       out_type=tf.int64)[0]
      return out

  yield from episodes.map(summarize).prefetch(2).as_numpy_iterator()


def _python_summaries(source: sources.Episodes, last_step_invalid: bool,
                      last_values: bool,
                      found: List[Problem]) -> Iterator[Summary]:
  """Summaries of Python episodes; structure problems go to ``found``."""
  reference = None
  for index, episode in enumerate(source.episodes):
    steps = sources.python_steps(episode)
    dtypes = rules.field_dtypes(steps)
    tensors = tf.nest.map_structure(tf.convert_to_tensor, steps)
    spec = tf.nest.map_structure(tf.TensorSpec.from_tensor, tensors)
    if reference is None:
      reference = dtypes
      spec_problems = rules.check_spec(spec, dense=True)
      found.extend(spec_problems)
      if spec_problems:
        return
    else:
      found.extend(rules.check_structure(source.number(index), dtypes,
                                         reference))
    plan = summaries.make_plan(spec, dense=True, all_shapes=True,
                               last_step_invalid=last_step_invalid,
                               last_values=last_values)
    yield {k: v.numpy() for k, v in summaries.summarize(tensors, plan).items()}


def _file_problem(error: dataset_files.CorruptDatasetError) -> Problem:
  """The `Problem` of a damaged dataset file."""
  return Problem(error.episode, error.field, error.kind, str(error),
                 step=error.step, file=error.path)


def _files_damage(builder: Any, split: str
                  ) -> List[dataset_files.CorruptDatasetError]:
  """Damaged files of a split on disk (cheap: record headers only)."""
  # Record checksums too for array_record: its reader's errors say little.
  return dataset_files.find_damage(
      builder, split,
      records=dataset_files.file_format(builder) == 'array_record')


def _files_problems(source: sources.Episodes,
                    damaged: List[dataset_files.CorruptDatasetError]
                    ) -> List[Problem]:
  """The damaged files, and a ``features.json`` that disagrees."""
  errors = list(damaged)
  mismatch = dataset_files.features_mismatch(source.builder.data_dir)
  if mismatch is not None:
    errors.append(mismatch)
  return [_file_problem(e) for e in errors]


def _corrupt_report(dataset: Any, split: Optional[str],
                    errors: List[dataset_files.CorruptDatasetError],
                    unread: int) -> problems_lib.ValidationReport:
  """The report of a dataset none of whose episodes can be read."""
  label = os.fspath(dataset) + (f' [{split}]' if split else '')
  return problems_lib.ValidationReport(
      [_file_problem(e) for e in errors], 0, 0, label, complete=False,
      unread=unread)



Episode = Tuple[str, int]  # (plain split name, index in it)


def _read_order(builder: Any, split: str) -> Optional[List[Episode]]:
  """The episodes a read of ``split`` gives (``'train[3:5]'``: train 3, 4), in order, or None."""
  shards = {s.path: s for s in dataset_files.split_shards(builder)}
  try:
    instructions = builder.info.splits[split].file_instructions
  except Exception:  # pylint: disable=broad-except
    return None  # A form TFDS resolves only when reading.
  order = []
  for instruction in instructions:
    shard = shards.get(os.fspath(instruction.filename))
    if shard is None:
      return None
    start = shard.first + instruction.skip
    order += [(shard.split, i) for i in range(start, start + instruction.take)]
  return order


def _lost(builder: Any, errors: List[dataset_files.CorruptDatasetError]
          ) -> Optional[Set[Episode]]:
  """The episodes the damaged files lose (from the first damaged one), or None (all)."""
  shards = {s.path: s for s in dataset_files.split_shards(builder)}
  lost: Set[Episode] = set()
  for error in errors:
    shard = shards.get(error.path)
    if shard is None and error.episode is not None and error.split:
      shard = dataset_files.shard_of(builder, error.split, error.episode)
    if shard is None:
      return None
    first = shard.first
    if error.episode is not None and error.split == shard.split:
      first = max(first, error.episode)
    lost.update((shard.split, i)
                for i in range(first, shard.first + shard.count))
  return lost


def _as_split(episodes: List[Episode]) -> str:
  """A TFDS split string reading exactly ``episodes``, in order.

  Example:
    >>> _as_split([('train', 0), ('train', 1), ('train', 4), ('test', 0)])
    'train[0:2]+train[4:5]+test[0:1]'
  """
  runs: List[List[Any]] = []
  for name, index in episodes:
    if runs and runs[-1][0] == name and runs[-1][2] == index:
      runs[-1][2] = index + 1
    else:
      runs.append([name, index, index + 1])
  return '+'.join(f'{name}[{start}:{stop}]' for name, start, stop in runs)


def _around_damage(dataset: Any, split: Optional[str],
                   data_dir: Optional[str],
                   errors: List[dataset_files.CorruptDatasetError],
                   rescan: bool
                   ) -> Tuple[Optional[sources.Episodes], Optional[str],
                              List[dataset_files.CorruptDatasetError], int]:
  """The whole episodes the damaged files leave: ``(checked, split, errors, unread)``.

  ``rescan``: ``errors`` is only the first damaged file; look for the others.
  """
  try:
    opened = source_lib.as_source(dataset, split, data_dir=data_dir)
    builder, split = opened.builder, opened.split
    if rescan:  # ``errors`` holds the first damaged file only.
      errors = _files_damage(builder, split) or errors
  except (ValueError, OSError):
    return None, split, errors, 0  # Its metadata is damaged: `errors` say so.
  order = _read_order(builder, split)
  lost = _lost(builder, errors) if order is not None else None
  if lost is None:
    return None, split, errors, 0
  # Numbered by their place in the split read, as an undamaged pass does.
  numbers = [n for n, episode in enumerate(order) if episode not in lost]
  unread = len(order) - len(numbers)
  if not numbers:
    return None, split, errors, unread
  if dataset_files.file_format(builder) == 'array_record':
    episodes = sources.RandomAccessEpisodes(builder, split, numbers)
    kind = sources.PYTHON
  else:
    episodes = diagnosis.episode_reader(builder)(
        _as_split([order[n] for n in numbers]))
    kind = sources.DENSE
  return (sources.Episodes(episodes, kind, len(numbers), opened, numbers),
          split, errors, unread)


def _progress_bar(total: Optional[int], progress: Optional[bool],
                  label: str) -> tqdm.tqdm:
  """A tqdm bar on stderr; ``progress=None`` shows it on a terminal only."""
  return progress_lib.bar(progress, total=total, desc=f'validate {label}',
                          unit=' episodes')


def _run_pass(source: sources.Episodes,
              damaged: List[dataset_files.CorruptDatasetError],
              last_step_invalid: bool, last_values: bool,
              max_problems: Optional[int], num_episodes: Optional[int],
              progress: Optional[bool]
              ) -> Tuple[List[Problem], int, int, Optional[str],
                         Dict[str, int]]:
  """(problems, episodes, steps, why it stopped or None, non-zero last values per field)."""
  found: List[Problem] = []
  last_counts: Dict[str, int] = {}
  if source.builder is not None:
    found.extend(_files_problems(source, damaged))
  if source.kind == sources.PYTHON:
    stream = _python_summaries(source, last_step_invalid, last_values, found)
  else:
    steps_spec = source.episodes.element_spec[rlds_types.STEPS]
    is_dense = source.kind == sources.DENSE
    if not is_dense:
      steps_spec = steps_spec.element_spec
    spec_problems = rules.check_spec(steps_spec, is_dense)
    if spec_problems:
      return found + spec_problems, 0, 0, None, last_counts
    plan = summaries.make_plan(steps_spec, dense=is_dense,
                               last_step_invalid=last_step_invalid,
                               last_values=last_values)
    stream = _tf_summaries(source, plan)
  total = source.total
  if num_episodes is not None:
    total = num_episodes if total is None else min(total, num_episodes)
  reference_shapes: Dict[str, Tuple[int, ...]] = {}
  episodes = steps = 0
  reading = (diagnosis.named_read_errors(source.builder, source.split,
                                       {e.path for e in damaged})
             if source.builder is not None else contextlib.nullcontext())
  try:
    with _progress_bar(total, progress, source.label) as bar, reading:
      for index, summary in enumerate(stream):
        if num_episodes is not None and index >= num_episodes:
          break
        found.extend(rules.check_episode(source.number(index), summary,
                                         reference_shapes))
        for path in rules.nonzero_last_values(summary):
          last_counts[path] = last_counts.get(path, 0) + 1
        episodes += 1
        steps += int(summary[summaries.LENGTH])
        bar.update(1)
        if max_problems is not None and len(found) >= max_problems:
          return (found[:max_problems], episodes, steps, _MAX_PROBLEMS,
                  last_counts)
  except dataset_files.CorruptDatasetError as error:
    problem = _file_problem(error)
    if problem not in found:
      found.append(problem)
    return found, episodes, steps, _DAMAGE, last_counts
  return found, episodes, steps, None, last_counts


def validate(dataset: Any,
             *,
             split: Optional[str] = None,
             data_dir: Optional[str] = None,
             last_step_invalid: bool = False,
             last_step: Union[last_step_lib.LastStep, str] = 'invalid',
             repair: Union[bool, str, Sequence[str], None] = False,
             max_problems: Optional[int] = 1000,
             num_episodes: Optional[int] = None,
             progress: Optional[bool] = False) -> problems_lib.ValidationReport:
  """Checks a dataset against the RLDS format; a `ValidationReport` of every problem.

  Damaged files are problems of the report, not errors (docs/validate_and_video.md).

  Args:
    dataset: a TFDS dataset directory or name, a ``tf.data.Dataset`` of episodes, or a list
      of Python episodes (dicts of ``[T, ...]`` arrays, with or without ``steps``).
    split: the split of a directory or name (default ``'train'``, else the first).
    last_step_invalid: report a non-zero final reward or discount as a problem.
    last_step: ``'invalid'`` (default, RLDS): notice non-zero final
      ``action``/``reward``/``discount`` values; ``'valid'``: no notice.
    repair: ``'is_last'``, ``'is_first'``, a list of them or True for all; the report's
      ``repaired`` is the repaired data, its ``problems`` those before repair.
    max_problems: stop once this many problems are found (None: never).
    num_episodes: check only the first episodes.
    progress: show a progress bar on stderr (None: on a terminal only).

  Example:
    >>> from rlds_lite import synthetic
    >>> report = validate(synthetic.episodes(num_episodes=4, seed=0))
    >>> report.ok, report.num_episodes, report.num_steps
    (True, 4, 144)
  """
  names = repair_lib.repair_names(repair)
  with op_context.named('validate'):
    policy = last_step_lib.as_last_step(last_step)
  if last_step_invalid and policy is last_step_lib.LastStep.VALID:
    raise ValueError("validate: last_step_invalid=True and last_step='valid' "
                     'contradict each other (invalid final-step values, or '
                     'real ones?); pass one of them.')
  last_values = policy is last_step_lib.LastStep.INVALID
  damaged: List[dataset_files.CorruptDatasetError] = []
  try:
    source = sources.open_source(dataset, split, data_dir, random_access=True)
  except dataset_files.CorruptDatasetError as error:
    source, damaged = None, [error]
  else:
    if source.builder is not None:
      damaged = _files_damage(source.builder, source.split)
  unread = 0
  if damaged:
    source, split, damaged, unread = _around_damage(
        dataset, split, data_dir, damaged, rescan=source is None)
    if source is None:
      return _corrupt_report(dataset, split, damaged, unread)
  found, episodes, steps, stop, last_counts = _run_pass(
      source, damaged, last_step_invalid, last_values, max_problems,
      num_episodes, progress)
  if stop is not None:
    unread = 0  # Stopped early: how many went unread is not known.
  # With damaged files, the pass read the episodes around them only.
  complete = stop is None and not damaged
  repaired = None
  if names and not damaged:
    if source.kind == sources.PYTHON:
      repaired = repair_lib.repair_python_episodes(source.episodes, names)
    else:
      repaired = repair_lib.repair_episodes(source.episodes, names)
  if last_step_invalid:  # Non-zero reward/discount there are problems.
    last_counts = {k: v for k, v in last_counts.items()
                   if k.split('/')[0] not in (rlds_types.REWARD,
                                              rlds_types.DISCOUNT)}
  label = source.label
  if source.split is not None:
    label = f'{label} [{source.split}]'
  return problems_lib.ValidationReport(
      found, episodes, steps, label, complete, names, repaired,
      problems_lib.last_step_notices(last_counts, episodes), unread,
      stop == _MAX_PROBLEMS)
