"""``rlds-lite video``: one episode's cameras as a GIF or MP4."""

import io
import json
import os
import shutil

import numpy as np
from PIL import Image
import pytest

import checks_testing
import rlds_testing
from rlds_lite import cli
from rlds_lite.convert import files


@pytest.fixture(scope='module')
def catch(tmp_path_factory):
  episodes = checks_testing.catch_episodes(3, seed=4)
  path = checks_testing.write_catch(str(tmp_path_factory.mktemp('data')),
                                    episodes)
  return path, episodes


def _gif_frames(path):
  image = Image.open(io.BytesIO(path.read_bytes()))
  return image.n_frames, image.size


def test_video_writes_one_frame_per_step_scaled_up(catch, tmp_path, capsys):
  # In-process; tests/test_cli.py runs every command as a subprocess.
  path, episodes = catch
  out = tmp_path / 'episode2.gif'
  assert cli.main(['video', path, '--episode', '2', '--out', str(out)]) == 0
  length = len(episodes[2]['action'])
  # 16x12 frames are tiny: enlarged 8 times by default (at least 128 high).
  assert capsys.readouterr() == (
      f'wrote {out}: {length} frames of 128x96 (observation/image, scale 8) '
      'at 10 fps\n', '')
  assert _gif_frames(out) == (length, (96, 128))
  image = Image.open(out)
  image.seek(4)
  np.testing.assert_array_equal(
      np.asarray(image.convert('RGB'))[::8, ::8],
      episodes[2]['observation']['image'][4])


def test_video_json_and_frames_match_the_episode(catch, tmp_path, capsys):
  path, episodes = catch
  out = tmp_path / 'e0.gif'
  assert cli.main(['video', path, '--key', checks_testing.IMAGE_KEY, '--out',
                   str(out), '--fps', '4', '--scale', '1', '--json']) == 0
  assert json.loads(capsys.readouterr().out) == {
      'out': str(out), 'frames': 10, 'height': 16, 'width': 12, 'fps': 4.0,
      'keys': ['observation/image'], 'scale': 1}
  image = Image.open(out)
  image.seek(3)
  assert image.info['duration'] == 250
  assert list(image.convert('RGB').getdata()) == [
      tuple(p) for p in episodes[0]['observation']['image'][3].reshape(-1, 3)]


@pytest.fixture(name='two_cameras', scope='module')
def _two_cameras(tmp_path_factory):
  rng = np.random.default_rng(1)
  length = 4
  index = np.arange(length)
  colours = lambda shape: (rng.integers(0, 4, shape) * 85).astype(np.uint8)
  episode = {'steps': {  # 64 colours: the GIF keeps them exactly.
      'observation': {
          'front': colours((length, 20, 10, 3)),
          'wrist': colours((length, 10, 6, 3)),
          'depth': rng.random((length, 20, 10)).astype(np.float32)},
      'action': np.zeros(length, np.int64), 'reward': np.zeros(length),
      'is_first': index == 0, 'is_last': index == length - 1,
      'is_terminal': index == length - 1}}
  path = files.write_episodes('rlds', [episode], tmp_path_factory.mktemp(
      'cams') / 'two_cameras')
  return path, episode['steps']['observation']


def test_every_camera_side_by_side_by_default(two_cameras, tmp_path, capsys):
  path, cameras = two_cameras
  out = tmp_path / 'cams.gif'
  assert cli.main(['video', path, '--out', str(out), '--scale', '2',
                   '--json']) == 0
  # The uint8 cameras (not the float depth map); the wrist camera doubled to
  # the front camera's height, a 2-pixel gap between, then all doubled.
  assert json.loads(capsys.readouterr().out) == {
      'out': str(out), 'frames': 4, 'height': 40, 'width': 2 * (10 + 2 + 12),
      'fps': 10.0, 'keys': ['observation/front', 'observation/wrist'],
      'scale': 2}
  image = Image.open(out)
  assert (image.n_frames, image.size) == (4, (48, 40))
  image.seek(1)
  frame = np.asarray(image.convert('RGB'))
  np.testing.assert_array_equal(frame[::2, :20:2], cameras['front'][1])
  np.testing.assert_array_equal(frame[::4, 24::4], cameras['wrist'][1])


def test_keys_choose_the_cameras_and_mp4_has_every_frame(two_cameras,
                                                         tmp_path, capsys):
  import imageio.v2 as imageio  # pylint: disable=g-import-not-at-top
  path, _ = two_cameras
  out = tmp_path / 'cams.mp4'
  assert cli.main(['video', path, '--out', str(out), '--key',
                   'observation/wrist,observation/depth', '--fps', '5']) == 0
  # Wrist doubled to 20 high beside the depth map; 20 < 128: scaled 7 times.
  assert capsys.readouterr().out == (
      f'wrote {out}: 4 frames of 140x168 (observation/wrist, '
      'observation/depth, scale 7) at 5 fps\n')
  decoded = np.stack(imageio.mimread(str(out)))
  assert decoded.shape == (4, 140, 168, 3)


@pytest.mark.parametrize('args, message', [
    (['--key', 'observation/pixels'], "rlds-lite video: no step field "
     "'observation/pixels'; image-like fields: ['observation/image'], all "
     "fields: ['action', 'is_first', 'is_last', 'is_terminal', "
     "'observation/image', 'reward']."),
    (['--episode', '3'], "rlds-lite video: episode 3 is out of range: split "
     "'train' has 3 episodes."),
    (['--key', 'reward'], "rlds-lite video: field 'reward' is not an image"),
    (['--out', '{tmp}/x.mp4'], 'rlds-lite video: episode_to_video: writing MP4 '
     'needs the imageio and imageio-ffmpeg packages'),
], ids=['unknown-key', 'episode-out-of-range', 'not-an-image',
      'mp4-without-imageio'])
def test_bad_input_exits_2(catch, tmp_path, capsys, monkeypatch, args,
                           message):
  monkeypatch.setitem(__import__('sys').modules, 'imageio', None)
  argv = {'--key': checks_testing.IMAGE_KEY, '--out': str(tmp_path / 'x.gif')}
  for flag, value in zip(args[::2], args[1::2]):
    argv[flag] = value.format(tmp=tmp_path)
  flat = [x for pair in argv.items() for x in pair]
  assert cli.main(['video', catch[0], *flat]) == 2
  err = capsys.readouterr().err
  assert err.count('\n') == 1 and err.startswith(message)
  assert not (tmp_path / 'x.gif').exists()


def test_unwritable_out_path_is_one_line_and_exit_2(catch, tmp_path, capsys):
  blocker = tmp_path / 'a_file'
  blocker.write_text('')
  out = str(blocker / 'x.gif')
  assert cli.main(['video', catch[0], '--key', checks_testing.IMAGE_KEY,
                   '--out', out]) == 2
  assert capsys.readouterr().err == (
      f'rlds-lite video: --out: {out}: its directory {blocker} is not a '
      'directory\n')


@pytest.fixture(name='damaged', scope='module')
def _damaged(tmp_path_factory):
  """Camera datasets of 3 episodes (4, 1, 6 steps), each damaged once.

  ``frame``: the frame of episode 0, step 2 is not a PNG; ``record``:
  episode 2's record has a flipped byte (its checksum fails).
  """
  root = tmp_path_factory.mktemp('damaged')
  good, frame = rlds_testing.camera_datasets_good_and_undecodable(
      root / 'frame', only_at=(0, 2))
  record = str(root / 'record')
  shutil.copytree(good, record)
  shard = os.path.join(record, 'cams-train.tfrecord-00000')
  data = bytearray(open(shard, 'rb').read())
  data[-30] ^= 0xFF  # Inside the last record (episode 2).
  with open(shard, 'wb') as f:
    f.write(bytes(data))
  return {'good': good, 'frame': frame, 'record': record}


_FRAME_ERROR = (
    "rlds-lite video: {path}/cams-train.tfrecord-00000: episode 0 of split "
    "'train', field 'observation/camera': step 2 does not decode as the image "
    'its feature declares in dataset_info.json (Unknown image file format. '
    'One of JPEG, JPEG XL, PNG, GIF, BMP, WebP required); its bytes begin '
    "b'not a pn'.\n")
_RECORD_ERROR = (
    "rlds-lite video: {path}/cams-train.tfrecord-00000: episode 2 of split "
    "'train': record 2 is corrupted (corrupted record at 2010); the file holds "
    'episodes 0-2.\n')


@pytest.mark.parametrize('dataset, args, error', [
    ('frame', ['--episode', '0'], _FRAME_ERROR),
    ('frame', ['--episode', '0', '--split', 'train[:2]'], _FRAME_ERROR),
    ('record', ['--episode', '2'], _RECORD_ERROR),
    ('record', ['--episode', '1', '--split', 'train[1:]'], _RECORD_ERROR),
], ids=['frame', 'frame-in-a-slice', 'record', 'record-in-a-slice'])
def test_a_damaged_episode_is_one_line_naming_it(damaged, tmp_path, capsys,
                                                 dataset, args, error):
  # It was TF's traceback (25 lines, exit 1).
  path = damaged[dataset]
  out = tmp_path / 'v.gif'
  assert cli.main(['video', path, '--out', str(out), *args]) == 2
  assert capsys.readouterr() == ('', error.format(path=path))
  assert not out.exists()


@pytest.mark.parametrize('dataset, args, frames', [
    ('frame', ['--episode', '1'], 1),
    ('frame', ['--episode', '2'], 6),
    ('frame', ['--episode', '1', '--split', 'train[1:]'], 6),
    ('record', ['--episode', '0'], 4),
    ('record', ['--episode', '1'], 1),
], ids=['frame-then-1', 'frame-then-2', 'frame-then-2-of-a-slice',
        'record-before-0', 'record-before-1'])
def test_another_damaged_episode_does_not_stop_the_one_asked_for(
    damaged, tmp_path, capsys, dataset, args, frames):
  # --episode N decoded every episode before N (skip after decoding), so a
  # damaged earlier episode stopped it; now only episode N is decoded.
  got, expected = tmp_path / 'got.gif', tmp_path / 'expected.gif'
  assert cli.main(['video', damaged[dataset], '--out', str(got), *args]) == 0
  assert cli.main(['video', damaged['good'], '--out', str(expected),
                   *args]) == 0
  assert capsys.readouterr().err == ''
  assert _gif_frames(got) == (frames, (128, 128))
  assert got.read_bytes() == expected.read_bytes()


def test_a_frame_that_does_not_decode_as_a_user_runs_it(damaged, tmp_path):
  path = damaged['frame']
  run = checks_testing.run_cli('video', path, '--out', str(tmp_path / 'v.gif'))
  assert run.returncode == 2, run.stderr[-2000:]
  assert checks_testing.own_stderr_lines(run.stderr) == [
      _FRAME_ERROR.format(path=path).rstrip('\n')]
  assert run.stdout == ''
