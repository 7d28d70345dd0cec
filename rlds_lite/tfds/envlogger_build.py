"""Convert EnvLogger recordings into a TFDS dataset, with or without Beam.

`build_from_envlogger` is `RLDSBuilder` without writing a class: the features
are inferred from the recorded dm_env specs (images detected, float64 kept
exact) and the episodes are converted with the exact RLDS alignment described
in `rlds_lite.tfds.envlogger_episodes`.

Everything is checked before anything is written: the dataset must not exist
yet, every path must hold recordings with the same specs. A recording whose
writer was killed is read as every rlds_lite reader reads it (see
``rlds_lite.envlogger.read_episodes``): what EnvLogger's own reader reads,
the unfinished episode dropped with a ``RecoveredRecordingWarning``. Episodes
are then written to a hidden staging directory which becomes the dataset only
when all were converted (flushed to disk, then renamed into place; the
protocol of `rlds_lite.tfds.publish`, holding the dataset's lock), so a
failure or a kill (a damaged file found mid-way, a value that does not match
its spec, SIGKILL) leaves no dataset behind and loses nothing that existed;
the next writer removes the staging directory.

Example (not run here: it needs a recording)::

  path = build_from_envlogger('/tmp/catch_logs', name='catch_expert',
                              data_dir='~/tensorflow_datasets')
  episodes = tfds.load('catch_expert', data_dir='~/tensorflow_datasets',
                       split='train')
"""

import contextlib
import os
import sys
import types
from typing import Any, Optional, Sequence, TextIO, Union

import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite.tfds import builder as builder_lib
from rlds_lite.tfds import envlogger_episodes
from rlds_lite.tfds import episode_writer
from rlds_lite.tfds import leftovers
from rlds_lite.tfds import locking
from rlds_lite.tfds import publish
from rlds_lite.tfds import shards

__all__ = ['build_from_envlogger', 'envlogger_builder_class']

PathLike = Union[str, os.PathLike]


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
                         file_format: str = 'tfrecord',
                         beam: bool = False,
                         description: str = '',
                         use_images: bool = True,
                         image_encoding: str = 'png',
                         jpeg_quality: Optional[int] = None,
                         beam_runner: Any = None,
                         beam_options: Any = None,
                         lock_timeout: Optional[float] = None) -> str:
  """Converts EnvLogger recordings into the dataset ``data_dir/name/version``.

  Args:
    envlogger_dir: a recording, a directory of recordings, or a list of them
      (all go to ``split``).
    name: the dataset name (snake_case); ``tfds.load(name, data_dir=...)``
      and ``rlds_lite.load`` read it.
    data_dir: the TFDS data directory (created if missing).
    version: the dataset version.
    split: the split the episodes go to.
    file_format: ``'tfrecord'`` or ``'array_record'``.
    beam: convert with Apache Beam through TFDS (one recording per element;
      needs ``apache-beam``). Shards are then named by TFDS
      (``...-00000-of-00001``).
    description: the dataset description.
    use_images: detect image observations (uint8 ``(h, w, c)``; named fields
      with ``image``/``pixels`` in their name).
    image_encoding: the encoding of detected images (``'png'``,
      ``'jpeg'``).
    jpeg_quality: the quality (0-100) of JPEG images (None: TFDS's 95).
    beam_runner: with ``beam``, the Beam runner (default ``'DirectRunner'``).
    beam_options: with ``beam``, ``apache_beam`` PipelineOptions.
    lock_timeout: seconds to wait for another writer of the dataset (None:
      as long as it takes; 0: fail at once).

  Each EnvLogger episode ``e_0..e_T`` becomes ``T + 1`` RLDS steps (see
  `rlds_lite.tfds.envlogger_episodes`): an episode that is only a ``reset()``
  becomes one step (first, last, not terminal, zero action/reward/discount),
  and an episode cut off by ``reset()`` (no LAST timestep) or by a time limit
  (LAST with a non-zero discount) ends with a non-terminal last step. The
  unfinished episode a killed writer leaves at the end of a writer folder
  is dropped with a ``RecoveredRecordingWarning``, as by every reader.

  Returns:
    The dataset directory.

  Raises:
    FileExistsError: if the dataset already exists (it is left untouched).
    FileNotFoundError: if a path does not exist, is empty or holds an
      incomplete recording (the message names the file).
    rlds_lite.envlogger.CorruptRecordingError: a damaged file (named).
    rlds_lite.tfds.locking.DatasetLockedError: if another writer holds the
      dataset after ``lock_timeout`` seconds.
    ValueError: recordings with different specs (naming both and the field),
      an episode whose values do not match the specs (naming the episode,
      recording and field), a bad name/split/file format.

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
  episode_writer.check_name(name)
  if not isinstance(split, str) or not split.isidentifier():
    raise ValueError(f'split must be a name like "train", got {split!r}.')
  file_format = shards.file_format_of(file_format)
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
    config = builder_lib.RLDSConfig(
        description=description or
        f'RLDS episodes converted from EnvLogger recordings {recordings}.',
        envlogger_dirs={split: recordings},
        beam=beam,
        use_images=use_images,
        image_encoding=image_encoding,
        jpeg_quality=jpeg_quality)
    staging = publish.staging_dir(path)
    try:
      # Built (and flushed) in the staging directory, as its own data_dir.
      builder = envlogger_builder_class(name, config, version)(
          data_dir=staging, file_format=file_format)
      download_config = tfds.download.DownloadConfig(
          beam_runner=(beam_runner or 'DirectRunner') if beam else None,
          beam_options=beam_options if beam else None)
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
