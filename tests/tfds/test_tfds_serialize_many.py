"""encoding.adjacent_runs, EpisodeEncoder.serialize_many, RLDSBuilder groups.

serialize_many must give the records of per-episode `serialize` (PNG files
compared as pixels) whatever the memory layout of the episodes' columns; the
builder must write what the episode source yielded, with errors naming the
episode.
"""

import re

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite.tfds import encoding
from rlds_lite.tfds import RLDSBuilder
from rlds_lite.tfds import RLDSConfig
from rlds_lite.tfds import rlds_features

from test_tfds_episode_writer import _flags
from test_tfds_episode_writer import _per_step
from test_tfds_episode_writer import _png_as_pixels
from test_tfds_episode_writer import png_episode
from test_tfds_episode_writer import png_features


def _cut(chunk, bounds):
  """Episodes whose step columns are ``x[a:b]`` of the chunk's columns."""
  episodes = []
  for i, (a, b) in enumerate(bounds):
    steps = tf.nest.map_structure(lambda x, a=a, b=b: x[a:b], chunk['steps'])
    steps.update(_flags(b - a, True))
    episodes.append(dict(chunk, steps=steps, episode_id=np.int64(i)))
  return episodes


def _with_rgb(rgb, bounds):
  chunk = png_episode(len(rgb), 3)
  chunk['steps']['observation']['rgb'] = rgb
  return _cut(chunk, bounds)


def _relaid(make):
  """png_episode(8) with each step column replaced by ``make(column)``."""
  chunk = png_episode(8, 0)
  chunk['steps'] = tf.nest.map_structure(make, chunk['steps'])
  return chunk


def _in_bytes_of(dtype, offset=0):
  """An image column laid in the bytes of an array of ``dtype``."""
  pixels = np.random.default_rng(1).integers(0, 256, (8, 6, 5, 3), np.uint8)
  owner = np.zeros((pixels.nbytes + offset) // np.dtype(dtype).itemsize + 1,
                   dtype)
  rgb = np.ndarray(pixels.shape, np.uint8, buffer=owner, offset=offset)
  rgb[...] = pixels
  return rgb


def _unaligned_uint16():
  chunk = png_episode(8, 0)
  depth = chunk['steps']['observation']['depth']
  raw = np.zeros(depth.nbytes + 1, np.uint8)
  moved = np.ndarray(depth.shape, np.uint16, buffer=raw, offset=1)
  moved[...] = depth
  chunk['steps']['observation']['depth'] = moved
  return _cut(chunk, [(0, 2), (2, 5), (5, 8)])


def _same_twice():
  first, second = _cut(png_episode(8, 0), [(0, 2), (2, 5)])
  return [first, first, second, first, second]


def _partly_exact():
  episodes = _cut(png_episode(8, 0), [(0, 2), (2, 3), (3, 5), (5, 8)])
  rgb = episodes[1]['steps']['observation']['rgb']
  episodes[1]['steps']['observation'] = dict(
      episodes[1]['steps']['observation'], rgb=list(rgb))
  episodes[2]['steps']['observation']['depth'] = (
      episodes[2]['steps']['observation']['depth'].astype(np.int64))
  return episodes


def _big_endian_between():
  episodes = _cut(png_episode(8, 0), [(0, 2), (2, 5), (5, 8)])
  episodes[1]['steps']['observation']['depth'] = (
      episodes[1]['steps']['observation']['depth'].astype('>u2'))
  return episodes  # TFDS refuses the episode: serialize_many the same.


def _step_list_between():
  episodes = _cut(png_episode(8, 0), [(0, 2), (2, 5), (5, 8)])
  episodes[1] = dict(episodes[1], steps=_per_step(episodes[1]['steps'], 3))
  return episodes


def _bad_episode_between():
  episodes = _cut(png_episode(8, 0), [(0, 2), (2, 5), (5, 8)])
  episodes[1]['steps']['action'] = np.arange(2)  # A column too short.
  return episodes


SAME_AS_SERIALIZE_CASES = {
    'consecutive_views': lambda: _cut(png_episode(8, 0),
                                      [(0, 2), (2, 5), (5, 8)]),
    'same_episode_repeated': _same_twice,
    'overlapping': lambda: _cut(png_episode(8, 0), [(0, 3), (2, 5), (5, 8)]),
    'reversed': lambda: _cut(png_episode(8, 0), [(5, 8), (2, 5), (0, 2)]),
    'zero_length_inside': lambda: _cut(png_episode(8, 0),
                                       [(0, 2), (2, 2), (2, 5), (8, 8)]),
    'views_of_a_view': lambda: _cut(_relaid(lambda x: x[1:]),
                                    [(0, 2), (2, 4), (4, 7)]),
    'fortran_base': lambda: _cut(_relaid(np.asfortranarray),
                                 [(0, 2), (2, 5), (5, 8)]),
    'negative_strides': lambda: _cut(_relaid(lambda x: x[::-1]),
                                     [(0, 2), (2, 5), (5, 8)]),
    'read_only_frombuffer': lambda: _cut(_relaid(
        lambda x: np.frombuffer(x.tobytes(), x.dtype).reshape(x.shape)),
                                         [(0, 2), (2, 5), (5, 8)]),
    'bytes_of_uint32': lambda: _with_rgb(_in_bytes_of(np.uint32),
                                         [(0, 2), (2, 5), (5, 8)]),
    'bytes_of_datetime64_at_offset_3': lambda: _with_rgb(
        _in_bytes_of('M8[s]', 3), [(0, 2), (2, 5), (5, 8)]),
    'unaligned_uint16': _unaligned_uint16,
    'partly_exact': _partly_exact,
    'big_endian_uint16_between': _big_endian_between,
    'step_list_between': _step_list_between,
    'bad_episode_between': _bad_episode_between,
}


@pytest.mark.parametrize('make_episodes', SAME_AS_SERIALIZE_CASES.values(),
                         ids=SAME_AS_SERIALIZE_CASES.keys())
def test_serialize_many_is_serialize_for_any_layout(make_episodes):
  encoder = encoding.EpisodeEncoder(png_features())
  episodes = make_episodes()
  try:
    want = [_png_as_pixels(encoder.serialize(e)) for e in episodes]
  except ValueError as e:
    with pytest.raises(ValueError, match=re.escape(str(e))):
      encoder.serialize_many(episodes)
    return
  got = [_png_as_pixels(r) for r in encoder.serialize_many(episodes)]
  assert got == want


def test_serialize_many_nested_images_in_one_chunk():
  features = rlds_features(
      {'observation': {'cam': {'a': tfds.features.Image(shape=(4, 3, 3)),
                               'b': tfds.features.Image(shape=(2, 2, 1),
                                                        dtype=np.uint16)},
                       'c': tfds.features.Image(shape=(3, 3, 2))},
       'action': np.int64},
      {'goal': tfds.features.Image(shape=(2, 2, 3))})
  rng = np.random.default_rng(0)
  chunk = {'steps': {'observation': {
      'cam': {'a': rng.integers(0, 256, (9, 4, 3, 3), np.uint8),
              'b': rng.integers(0, 2**16, (9, 2, 2, 1), np.uint16)},
      'c': rng.integers(0, 256, (9, 3, 3, 2), np.uint8)},
                     'action': np.arange(9)},
           'goal': rng.integers(0, 256, (2, 2, 3), np.uint8)}
  episodes = _cut(chunk, [(0, 2), (2, 5), (5, 6), (6, 9)])
  for episode in episodes:
    del episode['episode_id']
  # One field of one episode is a copy: the others still run together.
  episodes[2]['steps']['observation']['c'] = (
      episodes[2]['steps']['observation']['c'].copy())
  encoder = encoding.EpisodeEncoder(features)
  want = [_png_as_pixels(encoder.serialize(e)) for e in episodes]
  assert [_png_as_pixels(r) for r in encoder.serialize_many(episodes)] == want


_CHUNK = np.arange(6 * 4, dtype=np.uint8).reshape(6, 2, 2, 1)
ADJACENT_RUN_CASES = {
    # columns -> [(start, stop)] of the runs.
    'one_column': ([_CHUNK], [(0, 1)]),
    'consecutive_views': ([_CHUNK[0:1], _CHUNK[1:3], _CHUNK[3:6]], [(0, 3)]),
    # NumPy gives an empty view no base: a run of its own.
    'empty_view_inside': ([_CHUNK[0:2], _CHUNK[2:2], _CHUNK[2:4]],
                          [(0, 1), (1, 2), (2, 3)]),
    'gap': ([_CHUNK[0:2], _CHUNK[3:5]], [(0, 1), (1, 2)]),
    'out_of_order': ([_CHUNK[2:4], _CHUNK[0:2]], [(0, 1), (1, 2)]),
    'overlapping': ([_CHUNK[0:3], _CHUNK[2:4]], [(0, 1), (1, 2)]),
    'separate_arrays': ([_CHUNK[0:2].copy(), _CHUNK[2:4].copy()],
                        [(0, 1), (1, 2)]),
    'strided_view': ([_CHUNK[0:2], _CHUNK[2::2]], [(0, 1), (1, 2)]),
    'another_row_shape': ([_CHUNK[0:2], _CHUNK.reshape(12, 2, 1, 1)[4:6]],
                          [(0, 1), (1, 2)]),
    'runs_then_other_array': ([_CHUNK[0:2], _CHUNK[2:3], np.zeros(
        (1, 2, 2, 1), np.uint8), _CHUNK[3:4], _CHUNK[4:6]],
                              [(0, 2), (2, 3), (3, 5)]),
}


@pytest.mark.parametrize('columns, expected', ADJACENT_RUN_CASES.values(),
                         ids=ADJACENT_RUN_CASES.keys())
def test_adjacent_runs(columns, expected):
  runs = encoding.adjacent_runs(columns)
  assert [(a, b) for a, b, _ in runs] == expected
  for a, b, rows in runs:
    np.testing.assert_array_equal(rows, np.concatenate(columns[a:b]))
    if b - a > 1:
      assert np.shares_memory(rows, columns[a])  # Joined, not copied.


def _episodes_of_one_chunk(lengths, seed=0):
  """png_episode columns cut into episodes of ``lengths``: views of one chunk."""
  stops = np.cumsum(lengths)
  return _cut(png_episode(int(stops[-1]), seed),
              list(zip(stops - lengths, stops)))


SERIALIZE_MANY_CASES = {
    # episodes -> the batch sizes of encode_png_batch's calls, sorted: one
    # call per image step field (rgb, depth) and run of views of one chunk;
    # one per field and episode for the others; the goal image (episode
    # metadata) one per episode.
    'one_chunk': (lambda: _episodes_of_one_chunk([1, 2, 3, 1]),
                  [1] * 4 + [7, 7]),
    'two_chunks': (lambda: _episodes_of_one_chunk([2, 1]) +
                   _episodes_of_one_chunk([3, 2], seed=1),
                   [1] * 4 + [3, 3, 5, 5]),
    'separate_arrays': (lambda: [png_episode(2, 0), png_episode(3, 1)],
                        [1, 1, 2, 2, 3, 3]),
    'one_episode': (lambda: _episodes_of_one_chunk([3]), [1, 3, 3]),
    'a_step_list_between': (lambda: _episodes_of_one_chunk([2]) + [dict(
        png_episode(2, 5), steps=_per_step(png_episode(2, 5)['steps'], 2))] +
                            _episodes_of_one_chunk([1, 1], seed=2),
                            [1] * 4 + [2] * 4 + [2, 2]),
}


@pytest.mark.parametrize('make_episodes, png_calls',
                         SERIALIZE_MANY_CASES.values(),
                         ids=SERIALIZE_MANY_CASES.keys())
def test_serialize_many_encodes_runs_together(monkeypatch, make_episodes,
                                              png_calls):
  encoder = encoding.EpisodeEncoder(png_features())
  episodes = make_episodes()
  one_by_one = [_png_as_pixels(encoder.serialize(e)) for e in episodes]
  calls = []
  encode = encoding.png.encode_png_batch
  monkeypatch.setattr(encoding.png, 'encode_png_batch',
                      lambda images: calls.append(len(images)) or encode(images))
  records = encoder.serialize_many(episodes)
  # The same examples, PNG files compared as pixels.
  assert [_png_as_pixels(r) for r in records] == one_by_one
  assert sorted(calls) == png_calls


def test_serialize_many_errors_name_the_field():
  encoder = encoding.EpisodeEncoder(png_features())
  episodes = _episodes_of_one_chunk([2, 2])
  del episodes[1]['steps']['action']
  with pytest.raises(ValueError, match=r"steps: missing field\(s\) \['action'\]"):
    encoder.serialize_many(episodes)


# -----------------------------------------------------------------------------
# RLDSBuilder: groups of episodes.


def _build(tmp_path, episodes_fn):

  class Built(RLDSBuilder, skip_registration=True):
    RLDS_CONFIG = RLDSConfig(step_features={'observation': np.float32},
                             episode_features={'episode_id': np.int64},
                             episodes_fn=episodes_fn)

  builder = Built(data_dir=str(tmp_path))
  builder.download_and_prepare()
  return [(int(e['episode_id']),
           [float(s['observation']) for s in e['steps']])
          for e in builder.as_dataset(split='train')]


def _reusing_one_buffer(unused_split):
  buffer = np.zeros(3, np.float32)
  for i in range(3):
    buffer[:] = i  # Refilled for the next episode (allowed before: written).
    yield {'steps': {'observation': buffer, 'is_terminal': np.arange(3) == 2},
           'episode_id': i}


def _reusing_one_dict(unused_split):
  episode = {}
  for i in range(3):
    episode['steps'] = {'observation': np.full(3, i, np.float32),
                        'is_terminal': np.arange(3) == 2}
    episode['episode_id'] = i
    yield episode


@pytest.mark.parametrize('episodes_fn', [_reusing_one_buffer,
                                         _reusing_one_dict])
def test_builder_writes_what_was_yielded_when_the_source_reuses(tmp_path,
                                                                 episodes_fn):
  assert _build(tmp_path, episodes_fn) == [
      (i, [float(i)] * 3) for i in range(3)]


def _extra_0d_field(unused_split):
  yield {'steps': {'a_extra': np.array(1.0),
                   'observation': np.arange(2, dtype=np.float32),
                   'is_terminal': np.arange(2) == 1}, 'episode_id': 0}


def _non_string_key(unused_split):
  yield {'steps': {1: np.zeros(2),
                   'observation': np.arange(2, dtype=np.float32),
                   'is_terminal': np.arange(2) == 1}, 'episode_id': 0}


@pytest.mark.parametrize('episodes_fn, field', [
    (_extra_0d_field, r"\['a_extra'\]"), (_non_string_key, r'\[1\]')],
                         ids=['extra_0d_field', 'non_string_key'])
def test_builder_errors_name_the_episode_for_odd_steps(tmp_path, episodes_fn,
                                                        field):
  with pytest.raises(ValueError, match=r"episode 0 of split 'train': steps: "
                     r'field\(s\) ' + field + ' are not in the dataset'):
    _build(tmp_path, episodes_fn)
