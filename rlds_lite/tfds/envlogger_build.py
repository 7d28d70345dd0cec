"""Convert EnvLogger recordings into a TFDS dataset, with or without Beam.

`build_from_envlogger` is `RLDSBuilder` without writing a class: features
inferred from the recorded dm_env specs, episodes aligned exactly as RLDS
(`rlds_lite.tfds.envlogger_episodes`), published atomically (see
``docs/guarantees.md``).

Example (not run here: it needs a recording)::

  path = build_from_envlogger('/tmp/catch_logs', name='catch_expert',
                              data_dir='~/tensorflow_datasets')
"""

import contextlib
import os
import sys
import types
from typing import Any, Dict, Optional, Sequence, TextIO, Union

import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import option_objects
from rlds_lite.beam_runs import Beam
from rlds_lite.tfds import builder as builder_lib
from rlds_lite.tfds import envlogger_episodes
from rlds_lite.tfds import episode_writer
from rlds_lite.tfds import leftovers
from rlds_lite.tfds import locking
from rlds_lite.tfds import publish
from rlds_lite.tfds import shards

__all__ = ['Beam', 'build_from_envlogger', 'envlogger_builder_class']

PathLike = Union[str, os.PathLike]
_OLD_FILE_KEYWORDS = ('file_format', 'use_images', 'image_encoding',
                      'jpeg_quality', 'description')


def _beam_of(beam: Union[bool, Beam, None], legacy: Dict[str, Any]
             ) -> Optional[Beam]:
  """The `Beam` of a call (None: no Beam); ``beam_runner=`` and
  ``beam_options=`` of before still work, warning once."""
  old = {k: legacy.pop(k) for k in ('beam_runner', 'beam_options')
         if k in legacy}
  for key in sorted(old):
    new = 'runner' if key == 'beam_runner' else 'pipeline_options'
    option_objects.warn_once(
        ('build_from_envlogger', key), f'build_from_envlogger: {key}= is now '
        f'beam=Beam({new}=...); the old keyword will go in a later release.')
  if isinstance(beam, Beam):
    if old:
      raise TypeError(f'build_from_envlogger: pass {sorted(old)} in '
                      'beam=Beam(...), not beside it.')
    return beam
  if not beam:
    return None
  return Beam(runner=old.get('beam_runner') or 'DirectRunner',
              pipeline_options=old.get('beam_options'))


def _camel_case(name: str) -> str:
  return ''.join(part.capitalize() for part in name.split('_')) or 'Dataset'


def envlogger_builder_class(name: str,
                            config: builder_lib.RLDSConfig,
                            version: str = '1.0.0') -> type:
  """A (non-registered) `RLDSBuilder` subclass named ``name`` for ``config``.

  Args:
    name: the dataset name.
    config: its `RLDSConfig`.
    version: its version.

  Returns:
    The builder class.

  Example:
    >>> cls = envlogger_builder_class('toy_logs', builder_lib.RLDSConfig())
    >>> cls.name, str(cls.VERSION)
    ('toy_logs', '1.0.0')
  """
  def body(namespace):
    namespace.update(name=name, VERSION=tfds.core.Version(version),
                     RLDS_CONFIG=config, __module__=__name__,
                     __doc__=config.description or f'RLDS dataset {name}.')
  return types.new_class(_camel_case(name), (builder_lib.RLDSBuilder,),
                         {'skip_registration': True}, body)


def build_from_envlogger(envlogger_dir: Union[PathLike, Sequence[PathLike]],
                         *,
                         name: str,
                         data_dir: PathLike,
                         version: str = '1.0.0',
                         split: str = 'train',
                         options: Optional[episode_writer.FileOptions] = None,
                         card: Optional[episode_writer.DatasetCard] = None,
                         beam: Union[bool, Beam] = False,
                         lock_timeout: Optional[float] = None,
                         **legacy: Any) -> str:
  """Converts EnvLogger recordings into the dataset ``data_dir/name/version``.

  Each EnvLogger episode ``e_0..e_T`` becomes ``T + 1`` RLDS steps (see
  `rlds_lite.tfds.envlogger_episodes`). Everything is checked before anything
  is written; the dataset must not exist yet.

  Args:
    envlogger_dir: a recording, a directory of recordings, or a list of them
      (all go to ``split``).
    name: the dataset name (snake_case).
    data_dir: the TFDS data directory (created if missing).
    version: the dataset version.
    split: the split the episodes go to.
    options: a `FileOptions` (file format, image encoding, episodes per
      file; ``max_bytes_per_file`` is not supported here).
    card: a `DatasetCard` (description, homepage, citation; no metadata).
    beam: True or a `rlds_lite.beam_runs.Beam` (runner and options, e.g.
      ``Beam.direct(2)``: two local worker processes) to convert with Apache
      Beam (one recording per element; shards then named by TFDS,
      ``...-00000-of-00001``); options that do not parse are refused first.
    lock_timeout: seconds to wait for another writer of the dataset (None:
      as long as it takes; 0: fail at once).

  Returns:
    The dataset directory.

  Example:
    >>> import tempfile
    >>> from rlds_lite import synthetic
    >>> recording = synthetic.catch_recording(num_episodes=2)
    >>> import tensorflow_datasets as tfds
    >>> data_dir = tempfile.mkdtemp()
    >>> path = build_from_envlogger(recording, name='catch_expert',
    ...                             data_dir=data_dir)  # doctest: +ELLIPSIS
    Downloading and preparing dataset ... Subsequent calls will reuse this data.
    >>> ds = tfds.load('catch_expert', data_dir=data_dir, split='train')
    >>> [int(e['episode_id']) for e in ds], path.endswith('catch_expert/1.0.0')
    ([0, 1], True)
  """
  beam = _beam_of(beam, legacy)
  pipeline_options = beam.options() if beam else None  # Checked first.
  options, card = episode_writer.options_and_card(
      'build_from_envlogger', options, card, legacy,
      allowed=_OLD_FILE_KEYWORDS)
  _check_supported(options, card)
  episode_writer.check_name(name)
  if not isinstance(split, str) or not split.isidentifier():
    raise ValueError(f'split must be a name like "train", got {split!r}.')
  file_format = shards.file_format_of(options.file_format)
  tfds.core.Version(version)
  data_dir = os.path.abspath(os.path.expanduser(os.fspath(data_dir)))
  path = episode_writer.dataset_path(data_dir, name, version)
  created = publish.missing_dirs(os.path.dirname(path))
  label = f'dataset {name!r} version {version} at {path!r}'
  with locking.DatasetLock(path, timeout=lock_timeout, label=label):
    leftovers.remove_staging(path)
    if tf.io.gfile.exists(path):
      raise FileExistsError(
          f'build_from_envlogger: dataset {name!r} version {version} already '
          f'exists at {path!r}; choose another name or version, or delete it.')
    recordings = envlogger_episodes.find_recordings(envlogger_dir)
    envlogger_episodes.same_specs(recordings)
    publish.step('locked')
    config = _config({split: recordings}, options, card, beam is not None)
    staging = publish.staging_dir(path)
    try:
      # Built (and flushed) in the staging directory, as its own data_dir.
      builder = envlogger_builder_class(name, config, version)(
          data_dir=staging, file_format=file_format)
      download_config = tfds.download.DownloadConfig(
          beam_runner=beam.runner if beam else None,
          beam_options=pipeline_options)
      # TFDS prints where it prepares the dataset: the staging directory.
      # Users are told where the dataset will be.
      with contextlib.redirect_stdout(_Renamed(sys.stdout,
                                               os.fspath(builder.data_dir),
                                               path)):
        builder.download_and_prepare(download_config=download_config)
      for step in ('shards_synced', 'shards_named', 'info_written'):
        publish.step(step)  # Done by the builder (flushed, features inside).
      publish.rename(os.fspath(builder.data_dir), path)
      publish.step('published')
      publish.fsync_dir(os.path.dirname(path))
      for directory in created:
        publish.fsync_dir(os.path.dirname(directory))
      publish.step('synced')
      publish.step('features_json')
    finally:
      if tf.io.gfile.exists(staging):
        tf.io.gfile.rmtree(staging)
    publish.step('cleaned')
  return path


def _config(recordings: Dict[str, Sequence[str]],
            options: episode_writer.FileOptions,
            card: episode_writer.DatasetCard, beam: bool
            ) -> builder_lib.RLDSConfig:
  """The `RLDSConfig` of a build of ``{split: recordings}``."""
  return builder_lib.RLDSConfig(
      description=card.description or
      f'RLDS episodes converted from EnvLogger recordings '
      f'{list(recordings.values())[0]}.',
      homepage=card.homepage, citation=card.citation,
      envlogger_dirs=recordings, beam=beam,
      use_images=options.use_images,
      image_encoding=options.image_encoding,
      jpeg_quality=options.jpeg_quality,
      tensor_encoding=options.tensor_encoding,
      max_episodes_per_file=options.max_episodes_per_file)


def _check_supported(options: episode_writer.FileOptions,
                     card: episode_writer.DatasetCard) -> None:
  """A ValueError for what a TFDS build cannot write."""
  if options.max_bytes_per_file != episode_writer.FileOptions.max_bytes_per_file:
    raise ValueError('build_from_envlogger: FileOptions.max_bytes_per_file is '
                     'not supported (TFDS sizes the shards); use '
                     'max_episodes_per_file.')
  if card.metadata is not None:
    raise ValueError('build_from_envlogger: DatasetCard.metadata is not '
                     'written by a TFDS build; use EpisodeWriter.')


class _Renamed:
  """A text stream writing to ``stream`` with ``old`` replaced by ``new``."""

  def __init__(self, stream: TextIO, old: str, new: str):
    self._stream, self._old, self._new = stream, old, new

  def write(self, text: str) -> int:
    return self._stream.write(text.replace(self._old, self._new))

  def flush(self) -> None:
    self._stream.flush()

  def __getattr__(self, name: str) -> Any:
    return getattr(self._stream, name)
