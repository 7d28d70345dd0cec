"""``rlds-lite video``: one episode's cameras as a GIF or MP4."""

import io
import json

import numpy as np
from PIL import Image
import pytest

import checks_testing
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
      f"rlds-lite video: [Errno 20] Not a directory: '{out}'\n")
