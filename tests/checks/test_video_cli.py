"""``rlds-lite video``: one episode's image field as a GIF."""

import io
import json

from PIL import Image
import pytest

import checks_testing
from rlds_lite import cli


@pytest.fixture(scope='module')
def catch(tmp_path_factory):
  episodes = checks_testing.catch_episodes(3, seed=4)
  path = checks_testing.write_catch(str(tmp_path_factory.mktemp('data')),
                                    episodes)
  return path, episodes


def _gif_frames(path):
  image = Image.open(io.BytesIO(path.read_bytes()))
  return image.n_frames, image.size


def test_video_writes_one_frame_per_step(catch, tmp_path):
  path, episodes = catch
  out = tmp_path / 'episode2.gif'
  result = checks_testing.run_cli('video', path, '--episode', '2', '--key',
                                  checks_testing.IMAGE_KEY, '--out', str(out))
  assert result.returncode == 0, result.stderr[-2000:]
  length = len(episodes[2]['action'])
  assert result.stdout == (f'wrote {out}: {length} frames of '
                           f'{checks_testing.HEIGHT}x{checks_testing.WIDTH} '
                           'at 10 fps\n')
  assert _gif_frames(out) == (length, (checks_testing.WIDTH,
                                       checks_testing.HEIGHT))


def test_video_json_and_frames_match_the_episode(catch, tmp_path, capsys):
  path, episodes = catch
  out = tmp_path / 'e0.gif'
  assert cli.main(['video', path, '--key', checks_testing.IMAGE_KEY, '--out',
                   str(out), '--fps', '4', '--json']) == 0
  assert json.loads(capsys.readouterr().out) == {
      'out': str(out), 'frames': 10, 'height': 16, 'width': 12, 'fps': 4.0}
  image = Image.open(out)
  image.seek(3)
  assert list(image.convert('RGB').getdata()) == [
      tuple(p) for p in episodes[0]['observation']['image'][3].reshape(-1, 3)]


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
