"""Running on Apache Beam: a runner and its options (`Beam`), and a map-merge job over shards.

`Beam` is the one options structure of every Beam path (``build_from_envlogger``,
``RLDSBuilder``, ``stats.compute``, the episode catalog): a runner and its
pipeline options, as ``'k=v'`` flags, a dict or ``PipelineOptions``, checked
before anything runs. `map_merge` maps a function over work items (shards) on
the workers and merges the results into one value for the caller.
Needs ``apache-beam`` (``pip install 'rlds_lite[beam]'``); docs/distributed.md.
"""

import argparse
import dataclasses
import functools
import logging
import os
import pickle
import tempfile
import uuid
from typing import (Any, Callable, Dict, List, Mapping, Optional, Sequence,
                    Tuple)

__all__ = ['Beam', 'map_merge']

_LOCAL_RUNNERS = ('DirectRunner', 'BundleBasedDirectRunner', 'PrismRunner',
                  'SwitchingDirectRunner', 'FnApiRunner')
"""Runners whose workers run on this machine: results pass through a local
temporary directory unless ``temp_location`` says otherwise."""


def _beam():
  try:
    import apache_beam  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ImportError(
        'Running on Beam needs Apache Beam: pip install '
        "'rlds_lite[beam]' (apache-beam>=2.77; TFDS's own beam extra pins an "
        'older apache-beam that conflicts with TensorFlow 2.21).') from e
  return apache_beam


def _flag(item: Any) -> str:
  """``'k=v'``, ``'--k=v'`` or ``'k'`` as ``'--k=v'`` / ``'--k'``."""
  if not isinstance(item, str) or not item.strip('-').strip():
    raise ValueError(f'Beam: a pipeline option must be a string like '
                     f"'direct_num_workers=2', got {item!r}.")
  name = item.lstrip('-').split('=', 1)[0]
  if not name.replace('_', '').replace('-', '').isalnum():
    raise ValueError(f'Beam: pipeline option {item!r} does not parse: expected '
                     "NAME=VALUE (e.g. 'direct_num_workers=2') or NAME.")
  if name == 'runner':
    raise ValueError(f'Beam: pass the runner as Beam(runner=...) (command '
                     f'line: --beam-runner), not as option {item!r}.')
  return '--' + item.lstrip('-')


def _flags_of_mapping(options: Mapping[str, Any]) -> List[str]:
  flags = []
  for key, value in options.items():
    if value is True:
      flags.append(_flag(str(key)))
    elif value is not False and value is not None:
      flags.append(_flag(f'{key}={value}'))
  return flags


@dataclasses.dataclass(frozen=True)
class Beam:
  """Where and how a job runs on Apache Beam.

  Attributes:
    runner: the runner's name (``'DirectRunner'``, ``'DataflowRunner'``,
      ``'FlinkRunner'``, ``'SparkRunner'``, ...) or a runner object.
    pipeline_options: the runner's options: ``'k=v'`` flags (``'--k=v'`` and
      bare ``'k'`` too), a dict, an ``apache_beam`` ``PipelineOptions``, or
      None. Options that do not parse are refused (`options`).

  Example:
    >>> Beam()
    Beam(runner='DirectRunner', pipeline_options=None)
    >>> Beam.direct(2).flags()
    ['--direct_num_workers=2', '--direct_running_mode=multi_processing']
  """
  runner: Any = 'DirectRunner'
  pipeline_options: Any = None

  def __post_init__(self):
    self.flags()  # Their syntax; their names and values in `options`.

  @classmethod
  def direct(cls, num_workers: int = 2,
             running_mode: str = 'multi_processing') -> 'Beam':
    """The DirectRunner on ``num_workers`` local worker processes.

    Example:
      >>> Beam.direct(1, 'in_memory').pipeline_options
      ('direct_num_workers=1', 'direct_running_mode=in_memory')
    """
    return cls('DirectRunner', (f'direct_num_workers={num_workers}',
                                f'direct_running_mode={running_mode}'))

  def flags(self) -> Optional[List[str]]:
    """The options as ``--k=v`` flags (None for a ``PipelineOptions``).

    Example:
      >>> Beam('FlinkRunner', {'flink_master': 'host:8081',
      ...                      'save_main_session': True}).flags()
      ['--flink_master=host:8081', '--save_main_session']
    """
    options = self.pipeline_options
    if options is None:
      return []
    if isinstance(options, str):
      raise TypeError('Beam: pipeline_options must be a list of flags like '
                      f"['direct_num_workers=2'], a dict or PipelineOptions, "
                      f'not the string {options!r}.')
    if isinstance(options, Mapping):
      return _flags_of_mapping(options)
    if type(options).__name__ == 'PipelineOptions' or hasattr(
        options, 'view_as'):
      return None
    if not isinstance(options, Sequence):
      raise TypeError('Beam: pipeline_options must be flags, a dict or '
                      f'PipelineOptions, got {type(options).__name__}.')
    return [_flag(item) for item in options]

  def options(self):
    """The ``PipelineOptions``; a ValueError naming an option that does not parse.

    Example:
      >>> Beam.direct(2).options().get_all_options()['direct_num_workers']
      2
      >>> Beam(pipeline_options=['direct_num_workers=two']).options()
      Traceback (most recent call last):
      ...
      ValueError: Beam: pipeline option --direct_num_workers=two does not parse: argument --direct_num_workers: invalid int value: 'two'.
    """
    flags = self.flags()
    if flags is None:
      return self.pipeline_options
    return _checked_options(_pipeline_options_class(), tuple(flags))

  def is_local(self) -> bool:
    """Whether the workers run on this machine (the DirectRunner, Prism).

    Example:
      >>> Beam().is_local(), Beam('DataflowRunner').is_local()
      (True, False)
    """
    name = self.runner if isinstance(self.runner, str) else type(
        self.runner).__name__
    return name in _LOCAL_RUNNERS

  def download_config(self, **kwargs: Any):
    """A ``tfds.download.DownloadConfig`` running a TFDS build (`RLDSBuilder`) here.

    Example:
      >>> Beam.direct(2).download_config().beam_runner
      'DirectRunner'
    """
    import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
    return tfds.download.DownloadConfig(beam_runner=self.runner,
                                        beam_options=self.options(), **kwargs)

  def pipeline(self):
    """A new ``apache_beam.Pipeline`` on this runner with these options."""
    return _beam().Pipeline(runner=self.runner, options=self.options())


def _pipeline_options_class() -> type:
  """``apache_beam``'s ``PipelineOptions``, imported without its misleading
  "apitools not found" warning (it concerns BigQuery only)."""
  logging.disable(logging.WARNING)
  try:
    _beam()
    from apache_beam.options import pipeline_options  # pylint: disable=g-import-not-at-top
  finally:
    logging.disable(logging.NOTSET)
  return pipeline_options.PipelineOptions


def _checked_options(options_class: type, flags: Sequence[str]):
  """``options_class(flags)``, every flag known to Beam and of a valid value."""
  parsers = []

  def grab(parser: argparse.ArgumentParser) -> None:
    parser.exit_on_error = False  # Bad values raise, not exit.
    parsers.append(parser)

  options = options_class(list(flags))
  beam_log = logging.getLogger('apache_beam.options.pipeline_options')
  for flag in flags:
    level = beam_log.level
    beam_log.setLevel(logging.ERROR)  # Its "Discarding ..." line: ours below.
    try:
      options_class([flag]).get_all_options(add_extra_args_fn=grab)
      _, unknown = parsers[-1].parse_known_args([flag])
    except argparse.ArgumentError as e:
      raise ValueError(f'Beam: pipeline option {flag} does not parse: '
                       f'{e}.') from None
    finally:
      beam_log.setLevel(level)
    if unknown:
      raise ValueError(
          f'Beam: unknown pipeline option {flag} (no runner of apache_beam '
          'defines it; see docs/distributed.md for the flags of Dataflow, '
          'Flink and Spark).')
  return options


@dataclasses.dataclass(frozen=True)
class _Failed:
  """The error of a work item, carried to the caller (the first item's wins).

  Its class, ``args`` and attributes: an exception whose ``__init__`` takes
  other arguments than its ``args`` (`CorruptDatasetError`) does not survive
  pickling itself.
  """
  item: int
  error_class: type
  args: Tuple[Any, ...]
  state: Dict[str, Any]

  def error(self) -> BaseException:
    error = self.error_class.__new__(self.error_class)
    error.args = self.args
    error.__dict__.update(self.state)
    return error


def _outcome(indexed: Any, work: Callable[[Any], Any]) -> Any:
  index, item = indexed
  try:
    return work(item)
  except Exception as e:  # pylint: disable=broad-except
    try:  # Raised where the job was started.
      state = pickle.loads(pickle.dumps(dict(vars(e))))
    except Exception:  # pylint: disable=broad-except
      state = {}
    return _Failed(index, type(e), tuple(e.args), state)


def _merged(values: Any, merge: Callable[[Any, Any], Any]) -> Any:
  """The merge of ``values`` (None: nothing; an error: the first item's)."""
  values = [v for v in values if v is not None]
  failed = [v for v in values if isinstance(v, _Failed)]
  if failed:
    return min(failed, key=lambda f: f.item)
  return functools.reduce(merge, values) if values else None


def _write(value: Any, path: str) -> None:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  with tf.io.gfile.GFile(path + '.tmp', 'wb') as f:
    f.write(pickle.dumps(value))
  tf.io.gfile.rename(path + '.tmp', path, overwrite=True)


def _work_dir(beam: Beam) -> str:
  """Where the merged result goes: ``temp_location``, else a local temp dir."""
  options = beam.options()
  location = options.get_all_options().get('temp_location')
  if location:
    return location
  if not beam.is_local():
    raise ValueError(
        f'Beam: runner {beam.runner!r} runs its workers elsewhere: pass '
        'pipeline option temp_location=DIR, a directory every worker and this '
        'process can reach (e.g. gs://bucket/tmp).')
  return tempfile.gettempdir()


def map_merge(beam: Beam, items: Sequence[Any], fn: Callable[[Any], Any],
              merge: Callable[[Any, Any], Any], label: str) -> List[Any]:
  """``[merge of fn(item) over items]`` (``[]`` for no items), run on Beam.

  ``fn``, ``merge`` and the results are pickled to the workers and back; the
  merged result passes through ``temp_location`` (local runners: a temporary
  file here). An error of ``fn`` is raised here, as it was raised (that of
  the first item failing), not as the runner's traceback.

  Args:
    beam: the runner and options.
    items: the work items (one Beam element each).
    fn: a picklable ``item -> result``.
    merge: a picklable associative, commutative ``(a, b) -> merged``.
    label: names the job's steps.

  Returns:
    A list of the one merged result, or ``[]``.

  Example:
    >>> import operator
    >>> map_merge(Beam(), [1, 2, 3], abs, operator.add, 'sum')
    [6]
  """
  apache_beam = _beam()
  work_dir = _work_dir(beam)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  path = os.path.join(work_dir, f'rlds_lite-{label}-{uuid.uuid4().hex}.pickle')
  try:
    with beam.pipeline() as pipeline:
      _ = (pipeline
           | f'{label}Items' >> apache_beam.Create(list(enumerate(items)))
           | f'{label}Map' >> apache_beam.Map(_outcome, work=fn)
           | f'{label}Merge' >> apache_beam.CombineGlobally(
               functools.partial(_merged, merge=merge))
           | f'{label}Write' >> apache_beam.Map(_write, path))
    with tf.io.gfile.GFile(path, 'rb') as f:
      merged = pickle.loads(f.read())
  finally:
    if tf.io.gfile.exists(path):
      tf.io.gfile.remove(path)
  if isinstance(merged, _Failed):
    raise merged.error()
  return [] if merged is None else [merged]
