"""The browser recorder's parts without a browser: key maps, frames, ENV, out dirs, app, bad input."""

import json
import os
import time

from dm_env import specs
import gymnasium
import numpy as np
import pytest

from rlds_lite import cli
from rlds_lite import envlogger
from rlds_lite import envs
from rlds_lite.record import browser
from rlds_lite.record import env_specs
from rlds_lite.record import frames
from rlds_lite.record import keymaps
from rlds_lite.record import session

PREFIX = 'rlds-lite record: '


def test_builtin_key_maps():
  catch = keymaps.builtin('catch')
  assert [catch.action(held) for held in
          ([], ['ArrowLeft'], ['ArrowRight'], ['ArrowLeft', 'ArrowRight'],
           ['ArrowRight', 'ArrowLeft'], ['x'])] == [1, 0, 2, 2, 0, 1]
  reach = keymaps.builtin('reach')
  assert reach.action([]).tolist() == [0.0, 0.0]
  assert reach.action(['ArrowLeft', 'ArrowUp']).tolist() == [-1.0, 1.0]
  assert reach.action(['ArrowLeft', 'ArrowRight']).tolist() == [0.0, 0.0]


def test_derived_key_maps():
  discrete = keymaps.derive(specs.BoundedArray((), np.int64, 2, 4))
  assert (discrete.keys, discrete.noop) == ({'1': 2, '2': 3, '3': 4}, 2)
  box = keymaps.derive(specs.BoundedArray((3,), np.float32, -1, 1))
  assert box.action(['ArrowUp', 'e']).tolist() == [0.0, 1.0, 1.0]
  with pytest.raises(ValueError, match='more than the 10 digit keys'):
    keymaps.derive(specs.DiscreteArray(11))
  with pytest.raises(ValueError, match='no key map can be derived'):
    keymaps.derive(specs.Array((2, 2), np.float32))


def test_key_map_files(tmp_path):
  spec = specs.BoundedArray((2,), np.float32, -1, 1)
  path = tmp_path / 'keys.yaml'
  path.write_text('keys: {a: [-1, 0], d: [1, 0]}\nnoop: [0, 0]\n')
  assert keymaps.load(str(path), spec).action(['d']).tolist() == [1.0, 0.0]
  path.write_text('keys: {a: [-1, 0, 0]}\nnoop: [0, 0]\n')
  with pytest.raises(ValueError) as error:
    keymaps.load(str(path), spec)
  assert str(error.value) == (
      f"record: key map {path} maps key 'a' to action [-1, 0, 0], which the "
      f'action space {spec!r} does not have.')
  path.write_text('[1, 2]')
  with pytest.raises(ValueError, match='must be'):
    keymaps.load(str(path), spec)


def test_frames_pixels_render_and_plots():
  pixels = envs.make('catch_pixels', seed=0, height=84, width=84)
  source = frames.FrameSource(pixels.reset().observation)
  image = pixels.step(0).observation
  assert source.kind == 'pixels' and source.frame(image) is image
  state = frames.FrameSource(np.zeros(6, np.float32))
  bars = state.frame(np.array([1, -1, 0, 0, 0, 0.5], np.float32))
  assert state.kind == 'state' and bars.shape == (64, 48, 3)
  # A bar goes up for +1, down for -1, half way for 0.5.
  assert (bars[:, 3] != 250).sum() > 30 and (bars[:, 11] != 250).sum() > 30
  played = env_specs.resolve(_Rendered)
  assert played.env.action_spec().maximum == 1
  source = frames.FrameSource(played.env.reset().observation, played.render)
  assert source.kind == 'render' and source.frame(None).shape == (8, 4, 3)
  def broken():
    raise RuntimeError('no pygame')
  assert frames.FrameSource(np.zeros(2), broken).kind == 'state'


class _Rendered(gymnasium.Env):
  observation_space = gymnasium.spaces.Box(-1, 1, (2,), np.float32)
  action_space = gymnasium.spaces.Discrete(2)
  render_mode = 'rgb_array'

  def reset(self, *, seed=None, options=None):
    return np.zeros(2, np.float32), {}

  def step(self, action):
    return np.zeros(2, np.float32), 1.0, True, False, {}

  def render(self):
    return np.zeros((8, 4, 3), np.uint8)


def test_out_dirs(tmp_path):
  other = tmp_path / 'other'
  other.mkdir()
  (other / 'dataset_info.json').write_text('{}')
  with pytest.raises(ValueError, match='holds no browser recording'):
    session.check_out_dir(str(other), 'catch')
  session.check_out_dir(str(tmp_path / 'rec'), 'catch')
  session.check_out_dir(str(tmp_path / 'rec'), 'catch')  # Again: it is ours.
  with pytest.raises(ValueError, match="holds a recording of 'catch', not"):
    session.check_out_dir(str(tmp_path / 'rec'), 'reach')


def _bad_input(capsys, argv):
  capsys.readouterr()
  assert cli.main(argv) == 2
  out, err = capsys.readouterr()
  assert out == '' and err.count('\n') == 1 and err.startswith(PREFIX), err
  return err[len(PREFIX):].strip()


def test_command_bad_input(capsys, tmp_path):
  out = str(tmp_path / 'rec')
  assert _bad_input(capsys, ['record', 'pong', '--out', out, '--port', '0']) == (
      "unknown ENV 'pong': not a built-in (catch, catch_pixels, reach), a "
      'Gymnasium id or module:factory.')
  assert not os.path.exists(out)
  (tmp_path / 'keys.json').write_text('{"keys": {"a": 3}, "noop": 1}')
  assert _bad_input(capsys, ['record', 'catch', '--out', out, '--port', '0',
                             '--keys', str(tmp_path / 'keys.json')]).startswith(
      f"key map {tmp_path / 'keys.json'} maps key 'a' to action 3, which")
  assert 'holds no browser recording' in _bad_input(
      capsys, ['record', 'catch', '--out', str(tmp_path), '--port', '0'])
  assert _bad_input(capsys, ['record', 'catch', '--out', out, '--build']) == (
      f'{out} is not a browser recording (no {session.MARKER}).')
  assert 'speed must be' in _bad_input(
      capsys, ['record', 'catch', '--out', out, '--speed', '1000'])


def test_app_reset_and_errors(tmp_path):
  out = str(tmp_path / 'rec')
  server = browser.start(lambda: envs.make('catch', seed=0), out)
  try:
    with pytest.raises(ValueError, match='another rlds-lite record'):
      browser.start(lambda: envs.make('catch', seed=0), out)
    port = int(server.url.rsplit(':', 1)[1].strip('/'))
    with pytest.raises(OSError, match=f'cannot listen on 127.0.0.1:{port}'):
      browser.start('catch', str(tmp_path / 'other'), port=port)
    browser.start('catch', str(tmp_path / 'other')).stop()  # Not locked.
    client = server.app.test_client()
    assert client.post('/api/decide', json={'keep': True}).json == {
        'error': 'record: no episode is waiting for keep or discard.'}
    assert client.post('/api/control', json={'speed': 0}).status_code == 400
    assert client.post('/api/keys', json={'held': 'x'}).status_code == 400
    for _ in range(3):
      client.post('/api/step', json={'held': ['1']})
    server.player.wait_frame(3)
    frame = client.get('/frame.png?after=0')
    assert frame.data[:4] == b'\x89PNG' and frame.headers['X-Frame-Version']
    client.post('/api/control', json={'reset': True})  # Thrown away.
    for _ in range(9):
      client.post('/api/step', json={'held': ['3']})
    server.player.wait_for('deciding')
    assert client.post('/api/control', json={'reset': True}).json == {
        'error': 'record: the episode has ended: keep or discard it.'}
    assert client.get('/api/state').json['episode'] == {
        'id': 0, 'steps': 9, 'return': -1.0}
    client.post('/api/decide', json={'keep': True, 'note': '<b>x</b>'})
    server.player.wait_for('paused')
    assert [e['note'] for e in session.kept_episodes(out)] == ['<b>x</b>']
    pending = os.path.join(out, session.PENDING)
    deadline = time.monotonic() + 10
    while not os.listdir(pending) and time.monotonic() < deadline:
      time.sleep(0.01)  # The next episode starts.
    assert os.listdir(pending) == ['episode_000001']
    with open(os.path.join(out, session.MARKER)) as f:
      assert json.load(f)['env'] == '<lambda>'
  finally:
    server.stop()


def test_module_factories():
  played = env_specs.resolve('rlds_lite.envs.catch:CatchPixels')
  assert (played.label, played.builtin) == ('rlds_lite.envs.catch:CatchPixels', None)
  assert played.env.observation_spec().shape == (32, 32, 3)
  with pytest.raises(ValueError, match="cannot load ENV 'no_such_module:make'"):
    env_specs.resolve('no_such_module:make')


def test_a_gymnasium_env_is_recorded_through_envlogger(tmp_path):
  played = env_specs.resolve(_Rendered)
  keymap = keymaps.for_env(None, played.env.action_spec())
  out = str(tmp_path / 'gym')
  session.check_out_dir(out, played.label)
  player = session.Player(played.env, out, keymap, render=played.render).start()
  try:
    player.request_step(['2'])  # Digit 2: action 1; the episode terminates.
    player.wait_for('deciding')
    assert player.state()['frame_kind'] == 'render'
    player.decide(True, instruction='one step')
    player.wait_for('paused')
  finally:
    player.stop()
  (episode,) = list(envlogger.read_episodes(
      os.path.join(out, session.KEPT, 'episode_000000')))
  assert np.asarray(episode['action']).tolist()[1:] == [1]
  assert np.asarray(episode['discount']).tolist()[1:] == [0.0]  # terminated
  assert episode['episode_metadata']['instruction'] == 'one step'
