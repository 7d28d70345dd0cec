"""``rlds-lite record`` in a real headless browser (Playwright + Debian chromium), and killed.

The browser test plays ``catch``: one episode frame by frame (a key held while ``.``
steps), one discarded, one on the clock with a key held; the built dataset must hold
exactly the two kept ones, their actions step by step and their instructions. With
``RLDS_LITE_RECORD_SCREENSHOT=docs/images/record.png`` it writes the docs' screenshot.
The kill test runs the command in a subprocess and SIGKILLs it mid-episode.
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest
import tensorflow_datasets as tfds

from rlds_lite import cli
from rlds_lite import envlogger
from rlds_lite.record import browser
from rlds_lite.record import build
from rlds_lite.record import keymaps
from rlds_lite.record import session
import browser_testing

STEPS = 9  # Catch's 10 rows: 9 actions, 10 RLDS steps.
FIRST_KEYS = ['ArrowLeft', 'ArrowLeft', None, 'ArrowRight', 'ArrowRight', None,
              'ArrowLeft', None, 'ArrowRight']
CATCH = keymaps.builtin('catch')


@pytest.fixture(name='page', scope='module')
def _page():
  with browser_testing.local_page(browser.HOST, (1100, 620)) as page:
    yield page


def _wait_text(page, selector, text):
  page.wait_for_function(
      '([s, t]) => document.querySelector(s).textContent === t',
      arg=[selector, text])


def _wait_status(page, status):
  page.wait_for_function('s => document.body.dataset.status === s', arg=status)


def _step_by_step(page, keys):
  for i, key in enumerate(keys):
    if key:
      page.keyboard.down(key)
    page.keyboard.press('.')
    if key:
      page.keyboard.up(key)
    if i + 1 < len(keys):  # The last step ends the episode.
      _wait_text(page, '#steps', str(i + 1))
  _wait_status(page, 'deciding')


def _decide(page, button, instruction='', success=False):
  page.fill('#instruction', instruction)
  if success:
    page.check('#success')
  page.click(button)


def test_plays_keeps_two_discards_one(page, tmp_path):
  out = str(tmp_path / 'rec')
  server = browser.start('catch', out, seed=0, steps_per_second=20)
  try:
    page.goto(server.url)
    _wait_status(page, 'paused')
    page.wait_for_function("document.getElementById('frame').dataset.version")
    assert page.text_content('#frame-kind').startswith('No pixels')
    # 1: frame by frame, kept.
    _step_by_step(page, FIRST_KEYS)
    page.fill('#instruction', 'catch the ball')
    page.fill('#note', 'first try')
    page.check('#success')
    page.click('#keep')
    _wait_text(page, '#count', '1')
    # 2: discarded.
    _step_by_step(page, [None] * STEPS)
    _decide(page, '#discard', 'never stored')
    _wait_status(page, 'paused')
    assert page.text_content('#count') == '1'
    # 3: on the clock, ArrowRight held all along, kept.
    page.keyboard.down('ArrowRight')
    deadline = time.monotonic() + 10
    while server.player.state()['held'] != ['ArrowRight']:
      assert time.monotonic() < deadline
      page.wait_for_timeout(10)  # Not time.sleep: Playwright routes requests.
    page.keyboard.press(' ')
    _wait_status(page, 'deciding')
    page.keyboard.up('ArrowRight')
    page.click('#pause')
    page.fill('#instruction', 'move right')
    page.screenshot(path=str(tmp_path / 'record.png'))
    if os.environ.get('RLDS_LITE_RECORD_SCREENSHOT'):
      page.screenshot(path=os.environ['RLDS_LITE_RECORD_SCREENSHOT'])
    page.click('#keep')
    _wait_text(page, '#count', '2')
    rows = page.eval_on_selector_all(
        '#episodes tr', 'rows => rows.map(r => Array.from(r.cells, c => c.textContent))')
    assert [r[0] for r in rows] == ['0', '1'] and rows[0][3:] == [
        'yes', 'catch the ball', 'first try', '']
    assert rows[1][1:2] + rows[1][4:5] == ['10', 'move right']
    page.click('#finish')
    page.wait_for_function("document.body.dataset.build === 'built'")
    path = server.builds.state['path']
    # Each kept episode replays on the viewer's episode page.
    links = page.eval_on_selector_all('#episodes a', 'links => links.map(a => a.href)')
    assert links == [server.builds.state['viewer'] + f'episode/train/{i}'
                     for i in range(2)]
    with urllib.request.urlopen(links[1].replace('episode/', 'api/episode/'),
                                timeout=30) as response:
      assert json.loads(response.read())['length'] == STEPS + 1
  finally:
    server.stop()
  episodes = list(tfds.builder_from_directory(path).as_dataset(
      split='train', decoders={'steps': tfds.decode.SkipDecoding()}))
  assert len(episodes) == 2
  actions = [e['steps']['action'].numpy().tolist() for e in episodes]
  assert actions[0][:-1] == [CATCH.action([k] if k else []) for k in FIRST_KEYS]
  assert actions[1][:-1] == [2] * STEPS
  assert [e['instruction'].numpy() for e in episodes] == [b'catch the ball',
                                                         b'move right']
  assert [bool(e['success']) for e in episodes] == [True, False]
  assert [int(e['episode_id']) for e in episodes] == [0, 1]
  first = episodes[0]['steps']
  assert first['is_last'].numpy().tolist() == [False] * STEPS + [True]
  assert first['observation'].shape == (10, 10, 5)


def _api(url, path, body=None):
  data = None if body is None else json.dumps(body).encode()
  request = urllib.request.Request(url + path, data=data, headers={
      'Content-Type': 'application/json'})
  with urllib.request.urlopen(request, timeout=10) as response:
    return json.loads(response.read())


def _until(url, test):
  deadline = time.monotonic() + 20
  while True:
    state = _api(url, 'api/state')
    if test(state):
      return state
    assert time.monotonic() < deadline, state
    time.sleep(0.02)


def test_killed_mid_episode_keeps_every_kept_episode(tmp_path, capsys):
  out = str(tmp_path / 'rec')
  env = dict(os.environ, PYTHONPATH=os.getcwd())
  process = subprocess.Popen(
      [sys.executable, '-m', 'rlds_lite.cli', 'record', 'catch', '--out', out,
       '--port', '0', '--seed', '1', '--speed', '50'],
      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
  try:
    line = process.stdout.readline()
    url = line[line.index('http://'):].strip()
    for k, key in enumerate(['ArrowLeft', 'ArrowRight']):
      for i in range(STEPS):
        _api(url, 'api/step', {'held': [key]})
        _until(url, lambda s, i=i: s['episode']['steps'] == i + 1)
      _api(url, 'api/decide', {'keep': True, 'instruction': f'go {k}'})
      _until(url, lambda s, k=k: len(s['episodes']) == k + 1)
    _api(url, 'api/keys', {'held': ['ArrowLeft']})
    _api(url, 'api/control', {'paused': False})
    _until(url, lambda s: s['episode']['steps'] >= 3)
    process.send_signal(signal.SIGKILL)
    process.wait(10)
  finally:
    if process.poll() is None:
      process.kill()
      process.wait()
  assert os.listdir(os.path.join(out, session.PENDING)) == ['episode_000002']
  kept = [row['episode_id'] for row in session.kept_episodes(out)]
  assert kept == [0, 1]
  for episode_id, action in zip(kept, [0, 2]):
    recording = os.path.join(out, session.KEPT, f'episode_{episode_id:06d}')
    (episode,) = list(envlogger.read_episodes(recording))
    assert np.asarray(episode['action'])[1:].tolist() == [action] * STEPS
  # A restarted recorder drops the unfinished episode and builds the two.
  server = browser.start('catch', out, port=0)
  server.stop()
  assert os.listdir(os.path.join(out, session.PENDING)) == []
  capsys.readouterr()
  assert cli.main(['record', 'catch', '--out', out, '--build']) == 0
  path = capsys.readouterr().out.strip().splitlines()[-1]
  assert build.build(out) == path  # A rebuild swaps in beside the old one.
  assert sorted(os.listdir(out)) == [
      '.rlds_lite_record.lock', 'kept', 'pending', session.MARKER, 'tfds']
  episodes = list(tfds.builder_from_directory(path).as_dataset(split='train'))
  assert [e['instruction'].numpy() for e in episodes] == [b'go 0', b'go 1']
