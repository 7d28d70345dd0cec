"""Apache Beam sources of RLDS episodes for TFDS's Beam-based generation (``beam=True``).

One EnvLogger recording per element, converted on a worker; everything shipped
is picklable. Needs ``apache-beam`` (``pip install rlds_lite[beam]``).
"""

import functools
from typing import (Any, Callable, Dict, Iterable, Iterator, Mapping,
                    Optional, Sequence, Tuple)

import tensorflow_datasets as tfds

from rlds_lite.tfds import encoding
from rlds_lite.tfds import envlogger_episodes

__all__ = ['envlogger_examples', 'generated_examples']


def _beam():
  try:
    import apache_beam  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ImportError(
        'Building with beam=True needs Apache Beam: pip install '
        "'rlds_lite[beam]' (apache-beam>=2.77; TFDS's own beam extra pins an "
        'older apache-beam that conflicts with TensorFlow 2.21).') from e
  return apache_beam


@functools.lru_cache(maxsize=8)
def _encoder(features_json: str, jpeg_quality: Optional[int] = None
             ) -> encoding.EpisodeEncoder:
  import json  # pylint: disable=g-import-not-at-top
  features = tfds.features.FeatureConnector.from_json(json.loads(features_json))
  return encoding.EpisodeEncoder(features, jpeg_quality)


def _conformed(encoder: encoding.EpisodeEncoder, episode: Any,
               where: str) -> Dict[str, Any]:
  """``encoder.conform(episode)``; refused (naming it) if over 2 GiB.

  Only an episode whose `encoding.size_bound` is over the limit is
  serialized here to be measured.
  """
  conformed = encoder.conform(episode)
  if encoding.size_bound(conformed) > encoding.MAX_RECORD_BYTES:
    try:
      encoder.serialize(episode)
    except encoding.RecordTooLargeError as e:
      raise encoding.RecordTooLargeError(f'{where}: {e}', e.nbytes,
                                         e.limit) from None
  return conformed


def _recording_examples(indexed_recording: Tuple[int, str],
                        specs: Mapping[str, Any],
                        features_json: str,
                        jpeg_quality: Optional[int] = None
                        ) -> Iterator[Tuple[int, Dict[str, Any]]]:
  """The conformed ``(key, episode)`` pairs of one recording (a Beam FlatMap)."""
  index, recording = indexed_recording
  encoder = _encoder(features_json, jpeg_quality)
  first = envlogger_episodes.episode_key(index, 0)
  for key, episode in envlogger_episodes.read_rlds_episodes(recording, specs,
                                                            index):
    where = f'episode {key - first} of EnvLogger recording {recording}'
    yield key, _conformed(encoder, episode, where)


def _generated(split: str, episodes_fn: Callable[[str], Iterable[Any]],
               features_json: str, jpeg_quality: Optional[int] = None
               ) -> Iterator[Tuple[int, Dict[str, Any]]]:
  encoder = _encoder(features_json, jpeg_quality)
  for i, episode in enumerate(episodes_fn(split)):
    yield i, _conformed(encoder, episode, f'episode {i} of split {split!r}')


def _json(features_json: Any) -> str:
  import json  # pylint: disable=g-import-not-at-top
  return features_json if isinstance(features_json, str) else json.dumps(
      features_json, sort_keys=True)


def envlogger_examples(recordings: Sequence[str], specs: Mapping[str, Any],
                       features_json: Any, jpeg_quality: Optional[int] = None):
  """A ``beam.PTransform`` of the ``(key, episode)`` of EnvLogger recordings.

    Args:
      recordings: recording directories (one Beam element each).
      specs: their shared dm_env specs.
      features_json: ``features.to_json()`` of the dataset features.
      jpeg_quality: the quality of JPEG images (None: TFDS's 95).

    Example:
      >>> from rlds_lite import synthetic
      >>> recording = synthetic.catch_recording(num_episodes=2)
      >>> import apache_beam as beam
      >>> from rlds_lite.tfds import envlogger_episodes
      >>> specs = envlogger_episodes.recording_specs(recording)
      >>> features = envlogger_episodes.features_from_recordings([recording])
      >>> with beam.Pipeline() as pipeline:  # Prints each (key, RLDS steps).
      ...   _ = (pipeline | envlogger_examples([recording], specs, features.to_json())
      ...        | beam.Map(lambda kv: print(kv[0], len(kv[1]['steps']['action']))))
      0 10
      1 10
  """
  beam = _beam()
  return (beam.Create(list(enumerate(recordings))) |
          'ReadEnvLogger' >> beam.FlatMap(
              _recording_examples, specs=dict(specs),
              features_json=_json(features_json), jpeg_quality=jpeg_quality))


def generated_examples(episodes_fn: Callable[[str], Iterable[Any]], split: str,
                       features_json: Any, jpeg_quality: Optional[int] = None):
  """A ``beam.PTransform`` yielding ``episodes_fn(split)`` (picklable) as ``(key, episode)``.

    Example:
      >>> import apache_beam as beam
      >>> import numpy as np
      >>> from rlds_lite.tfds.features import rlds_features
      >>> def episodes(split):
      ...   return [{'steps': {'reward': np.ones(n, np.float32),
      ...                      'is_terminal': [False] * (n - 1) + [True]}}
      ...           for n in (2, 3)]
      >>> json = rlds_features({'reward': np.float32}).to_json()
      >>> with beam.Pipeline() as pipeline:  # Flags are derived by the encoder.
      ...   _ = (pipeline | generated_examples(episodes, 'train', json)
      ...        | beam.Map(lambda kv: print(kv[0], kv[1]['steps']['is_first'])))
      0 [ True False]
      1 [ True False False]
  """
  beam = _beam()
  return (beam.Create([split]) |
          'GenerateEpisodes' >> beam.FlatMap(
              _generated, episodes_fn=episodes_fn,
              features_json=_json(features_json), jpeg_quality=jpeg_quality))
