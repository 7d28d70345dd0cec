"""LeRobot datasets <-> RLDS: layout, round trips, lerobot's files, bad input."""

import glob
import json
import os
import shutil
import tempfile
import warnings

import av
from hypothesis import given
from hypothesis import settings
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import convert_testing
import lerobot_fixture_data
import rlds_lite
from rlds_lite import cli
from rlds_lite.convert import episodes as episodes_lib
from rlds_lite.convert import files
from rlds_lite.convert import lerobot
from rlds_lite.convert import lerobot_video
from rlds_lite import option_objects

FPS = 10
FIXTURES = os.path.join(os.path.dirname(__file__), 'fixtures', 'lerobot')
VIDEO_TOLERANCE = 8
"""Largest error (levels of 255) of a smooth frame through AV1 crf 30."""


def camera(length, seed):
  """Smooth frames (gradients) a video codec keeps within a few levels."""
  frames = np.zeros((length, 24, 32, 3), np.uint8)
  frames[..., 0] = (20 * np.arange(length) + 7 * seed)[:, None, None] % 200
  frames[..., 1] = np.arange(32)[None, None, :] * 6
  frames[..., 2] = 90 + 10 * (seed % 5)
  return frames


def with_camera_and_task(episodes):
  """Named episodes plus a camera and a language instruction per step."""
  out = []
  for index, episode in enumerate(episodes):
    steps = dict(episode['steps'])
    length = len(steps['is_last'])
    steps['image'] = camera(length, index)
    steps['language_instruction'] = np.array(
        [f'task {index % 2}'.encode()] * length, object)
    out.append({**episode, 'steps': steps})
  return out


def split_images(episodes, key='image'):
  """(episodes without ``key``, the ``key`` frames)."""
  rest, images = [], []
  for episode in episodes:
    steps = dict(episode['steps'])
    images.append(steps.pop(key))
    rest.append({**episode, 'steps': steps})
  return rest, images


NAMES = [n for n in convert_testing.NAMED_EPISODES if n != 'empty']


@pytest.mark.parametrize('video', [True, False], ids=['video', 'images'])
@pytest.mark.parametrize('name', NAMES)
def test_named_cases_round_trip(name, video, tmp_path):
  episodes = with_camera_and_task(convert_testing.NAMED_EPISODES[name])
  root = lerobot.to_lerobot(episodes, tmp_path / 'd', fps=FPS,
                            storage=lerobot.Storage(video=video))
  back, frames = split_images(list(lerobot.from_lerobot(root)))
  want, want_frames = split_images(episodes)
  convert_testing.assert_episodes_equal(back, want)
  for got, expected in zip(frames, want_frames):
    assert got.shape == expected.shape and got.dtype == np.uint8
    error = np.abs(got.astype(int) - expected).max()
    assert error <= (VIDEO_TOLERANCE if video else 0), error
  kinds = {k: v['dtype'] for k, v in lerobot.read_info(root)[
      'features'].items()}
  assert kinds['image'] == ('video' if video else 'image')
  assert sorted(p.name for p in tmp_path.iterdir()) == ['d']


def test_empty_is_an_error(tmp_path):
  with pytest.raises(ValueError, match='to_lerobot: no episodes to write'):
    lerobot.to_lerobot([], tmp_path / 'd', fps=FPS)
  assert not list(tmp_path.iterdir())


def _reference_frames(episodes):
  """The frame rows lerobot would hold for RLDS Episodes (a per-step loop)."""
  rows, tasks = [], {}
  for e, episode in enumerate(episodes):
    steps = episode['steps']
    length = len(steps['is_last'])
    for t in range(length):
      task = steps['language_instruction'][t].decode()
      rows.append({
          'observation.state': steps['observation'][t].tolist(),
          'action': steps['action'][t].tolist(),
          'next.reward': float(steps['reward'][t]),
          'next.done': bool(steps['is_last'][t]),
          'discount': float(steps['discount'][t]),
          'timestamp': float(np.float32(t / FPS)),
          'frame_index': t, 'episode_index': e, 'index': len(rows),
          'task_index': tasks.setdefault(task, len(tasks))})
  return rows, list(tasks)


def test_layout_is_lerobots(tmp_path):
  episodes = with_camera_and_task(
      convert_testing.NAMED_EPISODES['mixed-ends'])
  root = lerobot.to_lerobot(episodes, tmp_path / 'd', fps=FPS,
                            robot_type='toy', names={'action': ['x', 'y']})
  rows, tasks = _reference_frames(episodes)
  assert sorted(os.path.relpath(os.path.join(d, f), root)
                for d, _, fs in os.walk(root) for f in fs) == [
                    'data/chunk-000/file-000.parquet',
                    'meta/episodes/chunk-000/file-000.parquet',
                    'meta/info.json', 'meta/stats.json', 'meta/tasks.parquet',
                    'videos/image/chunk-000/file-000.mp4']
  info = json.load(open(os.path.join(root, 'meta', 'info.json')))
  video_info = info['features']['image'].pop('info')
  assert video_info == {
      'video.height': 24, 'video.width': 32, 'video.codec': 'av1',
      'video.pix_fmt': 'yuv420p', 'video.is_depth_map': False,
      'video.fps': FPS, 'video.channels': 3, 'has_audio': False}
  scalar = lambda dtype: {'dtype': dtype, 'shape': [1], 'names': None}
  assert info == {
      'codebase_version': 'v3.0', 'robot_type': 'toy', 'total_episodes': 4,
      'total_frames': 13, 'total_tasks': 2, 'chunks_size': 1000,
      'data_files_size_in_mb': 100, 'video_files_size_in_mb': 200,
      'fps': FPS, 'splits': {'train': '0:4'},
      'data_path': 'data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet',
      'video_path': 'videos/{video_key}/chunk-{chunk_index:03d}/'
                    'file-{file_index:03d}.mp4',
      'features': {
          'observation.state': {'dtype': 'float32', 'shape': [3],
                                'names': None},
          'action': {'dtype': 'float32', 'shape': [2], 'names': ['x', 'y']},
          'next.reward': scalar('float32'), 'next.done': scalar('bool'),
          'discount': scalar('float32'),
          'image': {'dtype': 'video', 'shape': [24, 32, 3],
                    'names': ['height', 'width', 'channels']},
          'timestamp': scalar('float32'), 'frame_index': scalar('int64'),
          'episode_index': scalar('int64'), 'index': scalar('int64'),
          'task_index': scalar('int64')},
      'rlds': {'writer': 'rlds_lite', 'task_key': 'language_instruction',
               'fields': {
                   'observation.state': {'path': 'observation',
                                         'shape': [3]},
                   'action': {'path': 'action', 'shape': [2]},
                   'next.reward': {'path': 'reward', 'shape': []},
                   'discount': {'path': 'discount', 'shape': []},
                   'image': {'path': 'image', 'shape': [24, 32, 3]}}}}
  data = pq.read_table(os.path.join(root, 'data/chunk-000/file-000.parquet'))
  assert data.to_pylist() == rows
  assert data.num_rows == 13 and pq.ParquetFile(os.path.join(
      root, 'data/chunk-000/file-000.parquet')).num_row_groups == 4
  assert str(data.schema.field('action').type) == (
      'fixed_size_list<element: float>[2]')
  hf = json.loads(data.schema.metadata[b'huggingface'])['info']['features']
  assert hf['next.done'] == {'dtype': 'bool', '_type': 'Value'}
  assert 'image' not in hf
  tasks_table = pq.read_table(os.path.join(root, 'meta/tasks.parquet'))
  assert tasks_table.to_pydict() == {'task_index': [0, 1],
                                     '__index_level_0__': tasks}
  meta = pq.read_table(os.path.join(
      root, 'meta/episodes/chunk-000/file-000.parquet')).to_pydict()
  assert [k for k in meta if not k.startswith('stats/')] == [
      'episode_index', 'tasks', 'length', 'data/chunk_index',
      'data/file_index', 'dataset_from_index', 'dataset_to_index',
      'videos/image/chunk_index', 'videos/image/file_index',
      'videos/image/from_timestamp', 'videos/image/to_timestamp',
      'meta/episodes/chunk_index', 'meta/episodes/file_index',
      'rlds/is_terminal', 'rlds/metadata/episode_id']
  assert meta['length'] == [3, 1, 7, 2]
  assert meta['tasks'] == [['task 0'], ['task 1'], ['task 0'], ['task 1']]
  assert meta['dataset_from_index'] == [0, 3, 4, 11]
  assert meta['videos/image/from_timestamp'] == pytest.approx(
      [0, 0.3, 0.4, 1.1])
  assert meta['videos/image/to_timestamp'] == pytest.approx(
      [0.3, 0.4, 1.1, 1.3])
  assert meta['rlds/is_terminal'] == [True, False, False, True]
  assert meta['rlds/metadata/episode_id'] == [0, 1, 2, 3]
  assert meta['stats/action/count'] == [[3], [1], [7], [2]]
  actions = np.array([r['action'] for r in rows])
  assert meta['stats/action/mean'][2] == pytest.approx(
      actions[4:11].mean(axis=0))
  assert meta['stats/action/q50'][2] == pytest.approx(
      np.quantile(actions[4:11], 0.5, axis=0))
  stats = json.load(open(os.path.join(root, 'meta', 'stats.json')))
  assert sorted(stats) == sorted(
      ['observation.state', 'action', 'next.reward', 'next.done', 'discount',
       'image', 'timestamp', 'frame_index', 'episode_index', 'index',
       'task_index'])
  assert stats['action']['mean'] == pytest.approx(actions.mean(axis=0))
  assert stats['action']['std'] == pytest.approx(actions.std(axis=0))
  assert stats['action']['min'] == pytest.approx(actions.min(axis=0))
  assert stats['index'] == {**stats['index'], 'min': [0], 'max': [12],
                            'count': [13]}
  assert stats['next.done']['max'] == [True]
  frames = np.concatenate([e['steps']['image'] for e in episodes])
  assert np.array(stats['image']['mean']).shape == (3, 1, 1)
  assert np.array(stats['image']['mean'])[:, 0, 0] == pytest.approx(
      frames.reshape(-1, 3).mean(axis=0) / 255)
  with av.open(os.path.join(root, 'videos/image/chunk-000/file-000.mp4')) as c:
    stream = c.streams.video[0]
    packets = [p for p in c.demux(stream) if p.pts is not None]
    assert stream.codec_context.name == 'libdav1d'
    assert stream.average_rate == FPS
    times = sorted(float(p.pts * stream.time_base) for p in packets)
    assert times == pytest.approx(np.arange(13) / FPS)
    keys = sorted(round(float(p.pts * stream.time_base) * FPS)
                  for p in packets if p.is_keyframe)
    assert {0, 3, 4, 11} <= set(keys)  # Every episode starts on a key frame.


def test_scalars_dots_nesting_and_strings_round_trip(tmp_path):
  length = 4
  steps = {
      'observation': {'arm.left': np.arange(4, dtype=np.float64),
                      'grid': np.ones((4, 2, 3), np.int16),
                      'flag': np.ones((4, 1), np.int32),
                      'instruction': np.array([b'a', b'b', b'a', b'a'],
                                              object)},
      'action': np.zeros((4, 7), np.float32),
      'note': np.array([b'x', b'', b'z', b'w'], object),
      'next': {'success': np.array([False, False, False, True])},
      **episodes_lib.rlds_flags(length, True)}
  episode = {'steps': steps, 'meta': {'path': b'/a/b', 'weights':
                                      np.arange(3, dtype=np.float32)},
             'name': 'first'}
  root = lerobot.to_lerobot([episode], tmp_path / 'd', fps=FPS,
                            task_key='observation/instruction')
  features = lerobot.read_info(root)['features']
  assert features['observation.arm.left']['shape'] == [1]
  assert features['observation.flag']['shape'] == [1]
  assert features['observation.grid']['shape'] == [2, 3]
  assert features['note'] == {'dtype': 'string', 'shape': [1], 'names': None}
  assert features['next.success']['dtype'] == 'bool'
  convert_testing.assert_episodes_equal(list(lerobot.from_lerobot(root)),
                                        [episode])


def test_bare_image_observation_is_observation_image(tmp_path):
  steps = {'observation': camera(3, 0), 'action': np.zeros((3, 1)),
           **episodes_lib.rlds_flags(3, False)}
  root = lerobot.to_lerobot([{'steps': steps}], tmp_path / 'd', fps=FPS,
                            storage=lerobot.Storage(video=False))
  assert 'observation.image' in lerobot.read_info(root)['features']
  convert_testing.assert_episodes_equal(list(lerobot.from_lerobot(root)),
                                        [{'steps': steps}])


def test_default_task_key_absent_gives_the_default_task(tmp_path):
  """Episodes without language_instruction get default_task, no error."""
  episodes = convert_testing.NAMED_EPISODES['terminal']
  root = lerobot.to_lerobot(episodes, tmp_path / 'd', fps=FPS,
                            default_task='pick')
  tasks = pq.read_table(os.path.join(root, 'meta/tasks.parquet'))
  assert tasks.to_pydict() == {'task_index': [0],
                               '__index_level_0__': ['pick']}


def test_files_roll_at_their_size_limits(tmp_path):
  episodes = with_camera_and_task(
      convert_testing.NAMED_EPISODES['mixed-ends'] * 2)
  root = lerobot.to_lerobot(episodes, tmp_path / 'd', fps=FPS,
                            storage=lerobot.Storage(
                                chunks_size=2, data_files_size_in_mb=1e-6,
                                video_files_size_in_mb=1e-6))
  data = sorted(os.path.relpath(p, root) for p in
                glob.glob(f'{root}/data/*/*.parquet'))
  assert data == [f'data/chunk-{i // 2:03d}/file-{i % 2:03d}.parquet'
                  for i in range(8)]
  meta = pq.read_table(os.path.join(
      root, 'meta/episodes/chunk-000/file-000.parquet')).to_pydict()
  assert meta['data/chunk_index'] == [0, 0, 1, 1, 2, 2, 3, 3]
  assert len(set(zip(meta['videos/image/chunk_index'],
                     meta['videos/image/file_index']))) >= 2
  back, frames = split_images(list(lerobot.from_lerobot(root)))
  want, want_frames = split_images(episodes)
  convert_testing.assert_episodes_equal(back, want)
  for got, expected in zip(frames, want_frames):
    assert np.abs(got.astype(int) - expected).max() <= VIDEO_TOLERANCE


def test_episodes_are_read_in_the_order_asked(tmp_path):
  episodes = convert_testing.NAMED_EPISODES['mixed-ends']
  root = lerobot.to_lerobot(with_camera_and_task(episodes), tmp_path / 'd',
                            fps=FPS)
  back = list(lerobot.from_lerobot(root, episodes=[3, 0, 2]))
  assert [int(e['episode_id']) for e in back] == [3, 0, 2]
  with pytest.raises(lerobot.ConversionError, match='episode 9: is not in'):
    list(lerobot.from_lerobot(root, episodes=[9]))


def test_a_tf_data_dataset_is_written(tmp_path):
  episodes = rlds_lite.synthetic.episodes(num_episodes=3, seed=0)
  root = lerobot.to_lerobot(episodes, tmp_path / 'd', fps=FPS)
  back = list(lerobot.from_lerobot(root))
  want = list(episodes_lib.numpy_episodes(episodes))
  convert_testing.assert_episodes_equal(back, want)


# Datasets lerobot wrote (tests/convert/fixtures/make_lerobot_fixtures.py).


def assert_fixture_read_back(back, name):
  """Episodes read from a fixture are the frames lerobot was given."""
  spec = lerobot_fixture_data.FIXTURES[name]
  assert len(back) == len(spec['episodes'])
  for index, episode in enumerate(back):
    frames, task = lerobot_fixture_data.episode_frames(name, index)
    column = lambda key: np.stack([f[key] for f in frames])
    steps = episode['steps']
    length = len(frames)
    assert len(steps['is_last']) == length
    np.testing.assert_array_equal(steps['observation']['state'],
                                  column('observation.state'))
    assert steps['action'].dtype == column('action').dtype
    np.testing.assert_array_equal(steps['action'], column('action'))
    np.testing.assert_array_equal(steps['reward'], column('next.reward')[:, 0])
    assert steps['language_instruction'].tolist() == [task.encode()] * length
    assert steps['is_terminal'].tolist() == [False] * length  # No RLDS end.
    assert steps['discount'].tolist() == [1.0] * (length - 1) + [0.0]
    assert 'timestamp' not in steps  # frame_index / fps: derived.
    if not spec['extras']:
      assert 'next' not in steps  # next.done says what is_last says.
    for key in spec['cameras']:
      got = steps['observation']['images'][key.split('.')[-1]]
      error = np.abs(got.astype(int) - column(key)).max()
      assert error <= (VIDEO_TOLERANCE if spec['cameras'][key] == 'video'
                       else 0), (key, error)
    if spec['extras']:
      np.testing.assert_array_equal(steps['observation']['grid'],
                                    column('observation.grid'))
      assert steps['observation']['flag'].dtype == np.int32
      np.testing.assert_array_equal(steps['observation']['flag'],
                                    column('observation.flag')[:, 0])
      assert steps['note'].tolist() == [f['note'].encode() for f in frames]
      np.testing.assert_array_equal(steps['next']['success'],
                                    column('next.success')[:, 0])
    assert sorted(k for k in episode if k != 'steps') == []


@pytest.mark.parametrize('name', sorted(lerobot_fixture_data.FIXTURES))
def test_datasets_lerobot_wrote_read_back(name):
  assert_fixture_read_back(
      list(lerobot.from_lerobot(os.path.join(FIXTURES, name))), name)


@pytest.mark.parametrize('name, feature, ends', [
    ('v30_video', 'next.done', [True, True, True]),
    ('v30_multifile', 'next.success', [True, False, True, False]),
    ('v21_video', 'next.done', [True, True, True]),
])
def test_terminated_by_a_feature(name, feature, ends):
  back = lerobot.from_lerobot(os.path.join(FIXTURES, name),
                              terminated_by=feature)
  got = [bool(e['steps']['is_terminal'][-1]) for e in back]
  assert got == ends
  with pytest.raises(ValueError, match="terminated_by='nope' is not a"):
    next(lerobot.from_lerobot(os.path.join(FIXTURES, name),
                              terminated_by='nope'))


def test_native_done_and_timestamps_are_kept_when_they_say_more(tmp_path):
  root = str(tmp_path / 'v')
  shutil.copytree(os.path.join(FIXTURES, 'v30_video'), root)
  path = os.path.join(root, 'data/chunk-000/file-000.parquet')
  table = pq.read_table(path)
  done = table.column('next.done').to_numpy(zero_copy_only=False).copy()
  done[3] = True  # Episode 0 (5 frames): done on frames 3 and 4.
  table = table.set_column(table.schema.get_field_index('next.done'),
                           table.schema.field('next.done'), pa.array(done))
  pq.write_table(table, path)
  episodes = list(lerobot.from_lerobot(root))
  assert episodes[0]['steps']['next']['done'].tolist() == [
      False, False, False, True, True]
  assert 'next' not in episodes[1]['steps']


# Bad input: one error naming the file, the episode and the field.


def _dataset(root):
  episodes = with_camera_and_task(
      convert_testing.NAMED_EPISODES['mixed-ends'])
  return lerobot.to_lerobot(episodes, root, fps=FPS)


def _rewrite_parquet(path, column, change):
  table = pq.read_table(path)
  values = table.column(column).to_numpy(zero_copy_only=False).copy()
  change(values)
  position = table.schema.get_field_index(column)
  pq.write_table(table.set_column(position, table.schema.field(column),
                                  pa.array(values)), path)


def _drop_last_video_frame(root):
  path = os.path.join(root, 'videos/image/chunk-000/file-000.mp4')
  reader = lerobot_video.VideoReader(path)
  frames = reader.frames(0, 1.3, np.arange(13, dtype=np.float32) / FPS, {})
  reader.close()
  os.remove(path)
  writer = lerobot_video.VideoWriter(lambda chunk, file: path, FPS)
  writer.add(0, frames[:12])
  writer.close()


def _set_info(root, **changes):
  path = os.path.join(root, 'meta', 'info.json')
  info = json.load(open(path))
  info.update(changes)
  json.dump(info, open(path, 'w'))


def _set_shape(root, name, shape):
  path = os.path.join(root, 'meta', 'info.json')
  info = json.load(open(path))
  info['features'][name]['shape'] = shape
  json.dump(info, open(path, 'w'))


def _spoil_video(root, garbage):
  """The video file cut 200 bytes short, or (``garbage``) its second half
  overwritten with a fixed pattern."""
  path = os.path.join(root, VIDEO)
  with open(path, 'rb') as f:
    data = f.read()
  if garbage:
    data = data[:len(data) // 2] + bytes(range(7, 256, 3)) * 20
  with open(path, 'wb') as f:
    f.write(data[:-200] if not garbage else data[:len(data)])


DATA = 'data/chunk-000/file-000.parquet'
VIDEO = 'videos/image/chunk-000/file-000.mp4'
INFO = '{root}/meta/info.json'
BAD_INPUT = {
    'fps-text': (lambda root: _set_info(root, fps='ten'),
                 f"{INFO}: field 'fps': is 'ten'; expected a positive number"),
    'fps-zero': (lambda root: _set_info(root, fps=0),
                 f"{INFO}: field 'fps': is 0; expected a positive number"),
    'fps-nan': (lambda root: _set_info(root, fps=float('nan')),
                f"{INFO}: field 'fps': is nan; expected a positive number"),
    'fps-bool': (lambda root: _set_info(root, fps=True),
                 f"{INFO}: field 'fps': is True; expected a positive number"),
    'shape-text': (
        lambda root: _set_shape(root, 'action', ['two']),
        f"{INFO}: field 'features/action/shape': is 'two'; expected a "
        'positive integer'),
    'shape-fraction': (
        lambda root: _set_shape(root, 'action', [2.5]),
        f"{INFO}: field 'features/action/shape': is 2.5; expected a positive "
        'integer'),
    'shape-not-a-list': (
        lambda root: _set_shape(root, 'action', 2),
        f"{INFO}: field 'features/action/shape': is 2; expected a list of "
        'sizes'),
    'total-episodes': (
        lambda root: _set_info(root, total_episodes=5),
        f"{INFO}: field 'total_episodes': is 5, but the file holds 4 episodes "
        'in the episode index'),
    'total-episodes-text': (
        lambda root: _set_info(root, total_episodes='4'),
        f"{INFO}: field 'total_episodes': is '4'; expected an integer"),
    'total-frames': (
        lambda root: _set_info(root, total_frames=12),
        f"{INFO}: field 'total_frames': is 12, but the file holds 13 frames "
        '(episode lengths in the episode index)'),
    'timestamp-nan': (
        lambda root: _rewrite_parquet(
            os.path.join(root, DATA), 'timestamp',
            lambda v: v.__setitem__(1, np.nan)),
        f"{{root}}/{DATA}: episode 0, field 'timestamp': holds nan at index "
        '1; it must be a finite number'),
    'timestamp-inf': (
        lambda root: _rewrite_parquet(
            os.path.join(root, DATA), 'timestamp',
            lambda v: v.__setitem__(6, np.inf)),
        f"{{root}}/{DATA}: episode 2, field 'timestamp': holds inf at index "
        '2; it must be a finite number'),
    'video-cut-short': (
        lambda root: _spoil_video(root, garbage=False),
        f"{{root}}/{VIDEO}: episode 2, field 'image': cannot be decoded "
        'between 0.4 s and 1.1 s: [Errno 1094995529] Invalid data found when '
        "processing input: 'avcodec_send_packet()'"),
    'video-from-timestamp-nan': (
        lambda root: _rewrite_parquet(
            os.path.join(root, 'meta/episodes/chunk-000/file-000.parquet'),
            'videos/image/from_timestamp', lambda v: v.__setitem__(1, np.nan)),
        '{root}/meta/episodes/chunk-000/file-000.parquet: episode 1, field '
        "'videos/image/from_timestamp': is nan; expected a number"),
    'video-garbage': (
        lambda root: _spoil_video(root, garbage=True),
        f"{{root}}/{VIDEO}: episode 0, field 'image': cannot be decoded "
        'between 0 s and 0.3 s: [Errno 1] Operation not permitted'),
    'missing-info': (
        lambda root: os.remove(os.path.join(root, 'meta/info.json')),
        '{root}/meta/info.json: is missing: {root} is not a LeRobot dataset '
        'root'),
    'not-json': (
        lambda root: open(os.path.join(root, 'meta/info.json'), 'w').write(
            '{'),
        '{root}/meta/info.json: is not valid JSON: Expecting property name '
        'enclosed in double quotes: line 1 column 2 (char 1)'),
    'info-too-deep': (
        lambda root: open(os.path.join(root, 'meta/info.json'), 'w').write(
            '{"features": ' + '[' * 100_000),
        '{root}/meta/info.json: JSON nests deeper than 100 levels (refused)'),
    'codebase-version': (
        lambda root: _set_info(root, codebase_version='v1.6'),
        "{root}/meta/info.json: has codebase_version 'v1.6'; rlds_lite reads "
        'v2.0, v2.1, v3.0 (lerobot converts older ones: '
        'lerobot/datasets/v30/convert_dataset_v21_to_v30.py)'),
    'video-frame-count': (
        _drop_last_video_frame,
        f"{{root}}/{VIDEO}: episode 3, field 'image': has 1 frames between "
        '1.1 s and 1.3 s; the data file has 2 rows for the episode'),
    'missing-video': (
        lambda root: os.remove(os.path.join(root, VIDEO)),
        f"{{root}}/{VIDEO}: episode 0, field 'image': is missing: the "
        "episode's video file"),
    'missing-data': (
        lambda root: os.remove(os.path.join(root, DATA)),
        f"{{root}}/{DATA}: episode 0: is missing: the episode's data file"),
    'missing-tasks': (
        lambda root: os.remove(os.path.join(root, 'meta/tasks.parquet')),
        '{root}/meta/tasks.parquet: is missing: the task list'),
    'task-index': (
        lambda root: _rewrite_parquet(
            os.path.join(root, DATA), 'task_index',
            lambda v: v.__setitem__(5, 9)),
        f"{{root}}/{DATA}: episode 2, field 'task_index': 9 is not in the "
        'task list'),
    'frame-index': (
        lambda root: _rewrite_parquet(
            os.path.join(root, DATA), 'frame_index',
            lambda v: v.__setitem__(1, 5)),
        f"{{root}}/{DATA}: episode 0, field 'frame_index': is [0, 5, 2]; "
        'expected 0 to 2 in order'),
    'timestamp-off-frame': (
        lambda root: _rewrite_parquet(
            os.path.join(root, DATA), 'timestamp',
            lambda v: v.__setitem__(1, 0.15)),
        f"{{root}}/{VIDEO}: episode 0, field 'image': frame 1 is at "
        '0.100000 s into the episode, its row at timestamp 0.150000 s'),
    'missing-rows': (
        lambda root: pq.write_table(
            pq.read_table(os.path.join(root, DATA)).slice(0, 12),
            os.path.join(root, DATA)),
        f'{{root}}/{DATA}: episode 3: has 1 rows from index 11; the episode '
        'index says 2'),
    'episode-column': (
        lambda root: pq.write_table(
            pq.read_table(os.path.join(
                root, 'meta/episodes/chunk-000/file-000.parquet')).drop(
                    ['length']),
            os.path.join(root, 'meta/episodes/chunk-000/file-000.parquet')),
        "{root}/meta/episodes/chunk-000/file-000.parquet: field 'length': is "
        'missing from the episode index'),
}


@pytest.mark.parametrize('case', sorted(BAD_INPUT))
def test_bad_input_names_file_episode_and_field(case, tmp_path):
  root = _dataset(str(tmp_path / 'd'))
  breaks, message = BAD_INPUT[case]
  breaks(root)
  with pytest.raises(lerobot.ConversionError) as error:
    list(lerobot.from_lerobot(root))
  assert str(error.value) == message.format(root=root)


@pytest.mark.parametrize('steps, kwargs, message', [
    ({'timestamp': np.zeros(2)}, {},
     "<episodes>: episode 0, field 'timestamp': would be the LeRobot feature "
     "'timestamp', which LeRobot keeps for itself; rename the field"),
    ({'a': {'b': np.zeros(2)}, 'a.b': np.zeros(2)}, {},
     "<episodes>: episode 0, field 'a.b': and 'a/b' would both be the "
     "LeRobot feature 'a.b'"),
    ({'words': np.array([[b'a'], [b'b']], object)}, {},
     "<episodes>: episode 0, field 'words': holds strings of per-step shape "
     '[1]; LeRobot string features hold one string a frame'),
    ({'depth': np.zeros((2, 20, 20, 3), np.float32)},
     {'video_keys': ['depth']},
     "<episodes>: episode 0, field 'depth': is float32 of per-step shape "
     '[20, 20, 3]; a camera needs uint8 [H, W, 3]'),
    ({'z': np.zeros(2, np.complex64)}, {},
     "<episodes>: episode 0, field 'z': has dtype complex64, which LeRobot "
     'cannot store'),
], ids=['reserved', 'clash', 'string-array', 'camera-dtype', 'complex'])
def test_writer_bad_input(steps, kwargs, message, tmp_path):
  episode = {'steps': {**steps,
                       **episodes_lib.rlds_flags(2, False)}}
  with pytest.raises(lerobot.ConversionError) as error:
    lerobot.to_lerobot([episode], tmp_path / 'd', fps=FPS, **kwargs)
  assert str(error.value) == message
  assert not list(tmp_path.iterdir())  # Nothing half-written is left.


@pytest.mark.parametrize('kwargs, error, message', [
    ({'fps': 0}, ValueError, 'to_lerobot: fps=0; LeRobot needs a positive '
     'integer frame rate.'),
    ({'fps': 2.5}, ValueError, 'to_lerobot: fps=2.5'),
    ({'fps': FPS, 'if_exists': 'append'}, ValueError,
     "to_lerobot: if_exists='append'"),
    ({'fps': FPS, 'video_keys': ['nope']}, ValueError,
     "to_lerobot: video_keys ['nope'] are not step fields"),
    ({'fps': FPS, 'task_key': 'nope'}, ValueError,
     "to_lerobot: task_key='nope' is not a step field; the step fields are "
     "['action', 'discount', 'observation', 'reward']"),
    # Only the default may be absent; asked for by name, it must be there.
    ({'fps': FPS, 'task_key': 'language_instruction'}, ValueError,
     "to_lerobot: task_key='language_instruction' is not a step field"),
])
def test_writer_bad_arguments(kwargs, error, message, tmp_path):
  episodes = convert_testing.NAMED_EPISODES['terminal']
  with pytest.raises(error) as raised:
    lerobot.to_lerobot(episodes, tmp_path / 'd', **kwargs)
  assert str(raised.value).startswith(message)
  assert not list(tmp_path.iterdir())


def test_a_bad_episode_midway_leaves_nothing(tmp_path):
  good = with_camera_and_task(convert_testing.NAMED_EPISODES['terminal'])
  bad = convert_testing.make_episode(3, True, obs_dim=5)
  bad['steps'].update(image=camera(3, 0), language_instruction=np.array(
      [b'x'] * 3, object))
  with pytest.raises(lerobot.ConversionError, match='episode 2, field '
                     "'observation': has steps of shape"):
    lerobot.to_lerobot(good * 2 + [bad], tmp_path / 'd', fps=FPS)
  assert not list(tmp_path.iterdir())
  root = lerobot.to_lerobot(good, tmp_path / 'd', fps=FPS)
  with pytest.raises(FileExistsError, match='exists'):
    lerobot.to_lerobot(good, root, fps=FPS)
  lerobot.to_lerobot(good * 2, root, fps=FPS, if_exists='overwrite')
  assert len(list(lerobot.from_lerobot(root))) == 2
  (tmp_path / 'mine' / 'notes.txt').parent.mkdir()
  (tmp_path / 'mine' / 'notes.txt').write_text('keep me')
  with pytest.raises(FileExistsError, match=r'is not a LeRobot dataset \(it '
                     r'has no meta/info.json\)'):
    lerobot.to_lerobot(good, tmp_path / 'mine', fps=FPS,
                       if_exists='overwrite')
  assert (tmp_path / 'mine' / 'notes.txt').read_text() == 'keep me'


def test_root_defaults_to_lerobot_home(tmp_path, monkeypatch):
  monkeypatch.setenv('HF_LEROBOT_HOME', str(tmp_path / 'home'))
  episodes = convert_testing.NAMED_EPISODES['terminal']
  root = lerobot.to_lerobot(episodes, repo_id='me/toy', fps=FPS)
  assert root == str(tmp_path / 'home' / 'me' / 'toy')
  with pytest.raises(ValueError, match="repo_id=None; pass root"):
    lerobot.to_lerobot(episodes, fps=FPS)


# The command line.


def test_cli_both_ways(tmp_path, capsys):
  episodes = with_camera_and_task(
      convert_testing.NAMED_EPISODES['mixed-ends'])
  for episode in episodes:
    steps = episode['steps']
    steps['prompt'] = steps.pop('language_instruction')
  source = files.write_episodes('rlds', episodes, tmp_path / 'source')
  target = str(tmp_path / 'lerobot')
  args = ['convert', '--from', 'rlds', '--to', 'lerobot', source, target,
          '--no-progress']
  assert cli.main(args) == 2
  assert capsys.readouterr().err == (
      'rlds-lite convert: writing lerobot needs the frame rate, e.g. --fps '
      '10: RLDS does not record it\n')
  assert cli.main(args + ['--fps', '10', '--task-key', 'prompt',
                          '--no-video']) == 0
  assert capsys.readouterr().out.startswith('converted 4 episodes (13 steps)')
  info = lerobot.read_info(target)
  assert info['features']['image']['dtype'] == 'image'
  assert info['rlds']['task_key'] == 'prompt'
  assert cli.main(['convert', '--from', 'lerobot', '--to', 'rlds', target,
                   str(tmp_path / 'back'), '--no-progress']) == 0
  back = list(files.read_episodes('rlds', str(tmp_path / 'back')))
  convert_testing.assert_episodes_equal(back, episodes)
  assert cli.main(['convert', '--from', 'lerobot', '--to', 'ted', str(
      tmp_path / 'nowhere'), str(tmp_path / 't.h5'), '--no-progress']) == 2
  assert capsys.readouterr().err == (
      f'rlds-lite convert: {tmp_path}/nowhere: no such file or directory\n')


def _openx_port(root):
  """v30_video with frame columns as lerobot's old Open X-Embodiment port had
  them: is_first, is_terminal and language_instruction (beside the task)."""
  shutil.copytree(os.path.join(FIXTURES, 'v30_video'), root)
  path = os.path.join(root, 'data/chunk-000/file-000.parquet')
  table = pq.read_table(path)
  frame = table.column('frame_index').to_numpy()
  episode = table.column('episode_index').to_numpy()
  done = table.column('next.done').to_numpy(zero_copy_only=False)
  table = table.append_column('is_first', pa.array(frame == 0))
  table = table.append_column('is_terminal', pa.array(done & (episode != 1)))
  table = table.append_column('language_instruction', pa.array(
      [f'say {e}' for e in episode]))
  pq.write_table(table, path)
  info_path = os.path.join(root, 'meta/info.json')
  info = json.load(open(info_path))
  for name in ('is_first', 'is_terminal'):
    info['features'][name] = {'dtype': 'bool', 'shape': [1], 'names': None}
  info['features']['language_instruction'] = {'dtype': 'string',
                                              'shape': [1], 'names': None}
  json.dump(info, open(info_path, 'w'))
  return root, table


def test_flag_and_language_features_of_lerobots_openx_port(tmp_path):
  root, _ = _openx_port(str(tmp_path / 'openx'))
  back = list(lerobot.from_lerobot(root))
  assert [bool(e['steps']['is_terminal'][-1]) for e in back] == [
      True, False, True]
  assert [e['steps']['language_instruction'][0] for e in back] == [
      b'say 0', b'say 1', b'say 2']  # The column, not the task.
  assert [e['steps']['discount'][-2:].tolist() for e in back] == [
      [0, 0], [1, 0], [0, 0]]
  table = pq.read_table(os.path.join(root, DATA))
  first = table.column('is_first').to_numpy(zero_copy_only=False).copy()
  first[6] = True  # Frame 1 of episode 1.
  pq.write_table(table.set_column(table.schema.get_field_index('is_first'),
                                  'is_first', pa.array(first)),
                 os.path.join(root, DATA))
  with pytest.raises(lerobot.ConversionError) as error:
    list(lerobot.from_lerobot(root))
  assert str(error.value) == (
      f"{root}/{DATA}: episode 1, field 'is_first': is True on frames [0, 1]; "
      'RLDS sets it on the first frame only')


@settings(max_examples=15, deadline=None)
@given(episodes=convert_testing.rlds_episodes())
def test_round_trip_is_exact_hypothesis(episodes):
  with tempfile.TemporaryDirectory() as work:
    root = lerobot.to_lerobot(episodes, os.path.join(work, 'd'), fps=FPS)
    convert_testing.assert_episodes_equal(list(lerobot.from_lerobot(root)),
                                          episodes)


def test_a_frame_size_the_codec_refuses_names_the_camera(tmp_path):
  steps = {'cam': np.zeros((2, 17, 33, 3), np.uint8),
           **episodes_lib.rlds_flags(2, False)}
  with pytest.raises(lerobot.ConversionError) as error:
    lerobot.to_lerobot(  # x264 needs even sides for yuv420p.
        [{'steps': steps}], tmp_path / 'd', fps=FPS,
        storage=lerobot.Storage(vcodec='h264'))
  assert str(error.value).startswith(
      "<episodes>: episode 0, field 'cam': cannot be encoded with h264 "
      '(33x17 frames): ')
  assert not list(tmp_path.iterdir())
  root = lerobot.to_lerobot([{'steps': steps}], tmp_path / 'd', fps=FPS)
  assert next(lerobot.from_lerobot(root))['steps']['cam'].shape == (
      2, 17, 33, 3)  # AV1 (SVT) takes odd sides.


def test_the_storage_keywords_of_before_still_work_and_warn_once(
    tmp_path, monkeypatch):
  monkeypatch.setattr(option_objects, '_WARNED', set())
  episodes = convert_testing.NAMED_EPISODES['terminal']
  with pytest.warns(DeprecationWarning, match=r'to_lerobot: chunks_size=, '
                    r'video= are now storage=Storage\(\.\.\.\)'):
    old = lerobot.to_lerobot(episodes, tmp_path / 'old', fps=FPS,
                             video=False, chunks_size=3)
  new = lerobot.to_lerobot(episodes, tmp_path / 'new', fps=FPS,
                           storage=lerobot.Storage(video=False, chunks_size=3))
  assert lerobot.read_info(old) == lerobot.read_info(new)
  assert lerobot.read_info(old)['chunks_size'] == 3
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    lerobot.to_lerobot(episodes, tmp_path / 'again', fps=FPS, video=False)
  assert not [w for w in caught if 'storage=' in str(w.message)]  # Once.
  with pytest.raises(TypeError, match=r"pass \['video'\] in storage="):
    lerobot.to_lerobot(episodes, tmp_path / 'x', fps=FPS, video=False,
                       storage=lerobot.Storage())
  with pytest.raises(TypeError, match="unexpected keyword argument 'fsp'"):
    lerobot.to_lerobot(episodes, tmp_path / 'x', fps=FPS, fsp=3)


def test_storage_repr_names_what_differs_from_lerobots_defaults():
  assert repr(lerobot.Storage()) == 'Storage()'
  assert repr(lerobot.Storage(video=False, vcodec='h264')) == (
      "Storage(video=False, vcodec='h264')")
