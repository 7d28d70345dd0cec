"""``rlds-lite view`` in a real headless browser (Playwright + Debian chromium).

The server runs in a thread of this process; Playwright drives
``/usr/bin/chromium`` (``make test`` installs it; Playwright's own browser
download is not used). Every request that does not go to the viewer is
blocked and recorded: the pages must render from the app alone.

The episode test saves a screenshot of the page, paused mid episode, to its
tmp dir; with ``RLDS_LITE_VIEWER_SCREENSHOT=docs/images/viewer.png`` it also
writes the README's screenshot there.
"""

import base64
import io
import os
import time

import numpy as np
from PIL import Image
import pytest

from rlds_lite import synthetic
from rlds_lite.tfds import EpisodeWriter
from rlds_lite.tfds import write_dataset
from rlds_lite.view import server as server_lib
import browser_testing
import view_testing

NUM_EPISODES, MAX_LENGTH, SIZE, FPS = 12, 40, 128, 10
SUCCESS = 1.0  # The reward on terminated episodes' last steps.

# The master camera's current frame, drawn on a canvas, as a PNG data URL.
FRAME_JS = """() => {
  const video = document.querySelector('video');
  const canvas = document.createElement('canvas');
  canvas.width = video.videoWidth;
  canvas.height = video.videoHeight;
  canvas.getContext('2d').drawImage(video, 0, 0);
  return canvas.toDataURL('image/png');
}"""
CURSOR_JS = """() => {
  const plot = document.getElementById('plot');
  const line = plot.querySelector('.shapelayer path');
  return [plot.layout.shapes[0].x0, line.getBoundingClientRect().x];
}"""


@pytest.fixture(name='dataset', scope='module')
def _dataset(tmp_path_factory):
  return view_testing.write_camera_dataset(
      str(tmp_path_factory.mktemp('browser')), num_episodes=NUM_EPISODES,
      max_length=MAX_LENGTH, size=SIZE, seed=3, success_reward=SUCCESS)


@pytest.fixture(name='server', scope='module')
def _server(dataset):
  server = server_lib.start(dataset, fps=FPS)
  yield server
  server.stop()


@pytest.fixture(name='page', scope='module')
def _page():
  with browser_testing.local_page(server_lib.HOST, (1280, 900)) as page:
    yield page


@pytest.fixture(name='expected', scope='module')
def _expected():
  return view_testing.expected_rows(view_testing.camera_episodes(
      NUM_EPISODES, MAX_LENGTH, SIZE, seed=3, success_reward=SUCCESS))


def _table_column(page, column):
  return page.eval_on_selector_all(f'#episodes tbody td.col-{column}',
                                   'cells => cells.map(c => c.textContent)')


def _wait_table(page, query_part, exact=False):
  """Waits until the table shows the query holding (or equal to) the text."""
  page.wait_for_function(
      """([part, exact]) => { const t = document.getElementById('episodes');
         const query = t.dataset.query || '';
         return t.dataset.state === 'ready' &&
                (exact ? query === part : query.includes(part)); }""",
      arg=[query_part, exact])


def test_dataset_page_sorts_and_filters(page, server, expected):
  page.goto(server.url)
  _wait_table(page, 'sort=index')
  assert _table_column(page, 'index') == [str(i) for i in range(NUM_EPISODES)]
  page.wait_for_selector('#stats tbody tr')
  assert page.text_content('#stats-counts').startswith(
      f'{NUM_EPISODES} episodes, {sum(r["length"] for r in expected)} steps')
  assert page.text_content('#features').count('(camera)') == 2
  # The success rewards RLDS leaves out of returns are shown, and said so.
  terminated = sum(r['terminated'] for r in expected)
  assert terminated >= 2
  assert page.eval_on_selector_all('#episodes thead th',
                                   'ths => ths.map(t => t.dataset.sort)') == [
      'index', 'length', 'return', 'last_reward', 'status', 'instruction',
      'episode_id']
  assert _table_column(page, 'last_reward') == [
      '1' if r['terminated'] else '0' for r in expected]
  assert page.text_content('#episodes-last-step').startswith(
      f'{terminated} episodes have a non-zero last reward, which return '
      'leaves out')
  page.wait_for_selector('#stats-last-step:not([hidden])')
  assert page.text_content('#stats-last-step').startswith(
      f'Left out: non-zero last-step values of reward ({terminated} '
      'episodes).')

  page.click('th[data-sort=return]')
  _wait_table(page, 'sort=return&order=asc')
  returns = [float(x) for x in _table_column(page, 'return')]
  assert returns == sorted(returns) and len(returns) == NUM_EPISODES
  page.click('th[data-sort=return]')
  _wait_table(page, 'sort=return&order=desc')
  by_return = sorted(range(NUM_EPISODES), key=lambda i: -expected[i]['return'])
  assert _table_column(page, 'index') == [str(i) for i in by_return]

  page.select_option('#filter-status', 'terminated')
  _wait_table(page, 'status=terminated')
  terminated = [i for i in by_return if expected[i]['terminated']]
  assert _table_column(page, 'index') == [str(i) for i in terminated]
  assert set(_table_column(page, 'status')) == {'terminated'}

  page.select_option('#filter-status', '')
  page.fill('#filter-instruction', 'Target')
  _wait_table(page, 'instruction=Target')
  target = [i for i in by_return if 'target' in expected[i]['instructions'][0]]
  assert _table_column(page, 'index') == [str(i) for i in target]
  assert all('target' in t for t in _table_column(page, 'instruction'))

  page.fill('#filter-min-length', '10')
  _wait_table(page, 'min_length=10')
  longer = [i for i in target if expected[i]['length'] >= 10]
  assert _table_column(page, 'index') == [str(i) for i in longer]
  page.click('#filter-reset')
  _wait_table(page, 'sort=return&order=desc&offset=0&limit=100', exact=True)
  assert len(_table_column(page, 'index')) == NUM_EPISODES

  # An EXPR over the catalog's columns.
  page.fill('#filter-where', 'last_reward > 0 or episode_id < 102')
  _wait_table(page, 'where=last_reward')
  chosen = [i for i in by_return if expected[i]['terminated'] or i < 2]
  assert _table_column(page, 'index') == [str(i) for i in chosen]
  page.fill('#filter-where', 'colour > 1')
  page.wait_for_selector('#episodes[data-state=error]')
  assert page.text_content('#episodes-status').startswith(
      "EXPR 'colour > 1': no column 'colour'")
  page.click('#filter-reset')
  _wait_table(page, 'sort=return&order=desc&offset=0&limit=100', exact=True)
  assert page.is_hidden('#episodes-status')


def _frame(page):
  """The frame the master video shows, ``[H, W, 3]`` uint8."""
  url = page.evaluate(FRAME_JS)
  png = base64.b64decode(url.split(',', 1)[1])
  return np.asarray(Image.open(io.BytesIO(png)).convert('RGB'))


def _frame_error(shown, frame, where=None):
  """Mean absolute difference of a video frame and a dataset frame."""
  scale = shown.shape[0] // frame.shape[0]
  error = np.abs(shown[::scale, ::scale].astype(int) - frame).mean(axis=-1)
  return float(error.mean() if where is None else error[where].mean())


def _settled_error(page, frame, where, seconds=5.0):
  """`_frame_error` once the video has finished seeking and drawn its frame.

  A seek's frame reaches the canvas a little after ``seeking`` ends: poll
  until the error is small or time is up; returns the last error.
  """
  deadline = time.monotonic() + seconds
  while True:
    page.wait_for_function("!document.querySelector('video').seeking")
    error = _frame_error(_frame(page), frame, where)
    if error < 25 or time.monotonic() > deadline:
      return error
    time.sleep(0.1)


def _moved(frame_a, frame_b):
  """The pixels that differ between two dataset frames (what moved)."""
  return np.abs(frame_a.astype(int) - frame_b).max(axis=-1) > 40


def _screenshot(page, path):
  """The page as it is (paused mid episode); also the README's if asked."""
  page.screenshot(path=str(path), full_page=True)
  assert os.path.getsize(path) > 10_000
  readme = os.environ.get('RLDS_LITE_VIEWER_SCREENSHOT')
  if readme:  # 128 colours: a small PNG for the README.
    Image.open(path).convert('RGB').quantize(
        colors=128, method=Image.Quantize.MEDIANCUT).save(readme, optimize=True)


def test_episode_page_plays_and_the_cursor_follows(page, server, expected,
                                                   tmp_path):
  index = int(np.argmax([r['length'] for r in expected]))
  length = expected[index]['length']
  episode = list(view_testing.camera_episodes(
      NUM_EPISODES, MAX_LENGTH, SIZE, seed=3))[index]
  frames = episode['steps']['observation']['front']
  page.goto(f'{server.url}episode/train/{index}')
  page.wait_for_selector('body[data-ready="1"]')
  assert page.text_content('#instruction') == (
      f'“{expected[index]["instructions"][0]}”')
  assert page.eval_on_selector_all(
      'video', 'vs => vs.map(v => v.dataset.camera)') == [
          'observation/front', 'observation/wrist']
  page.wait_for_function(
      "Array.from(document.querySelectorAll('video')).every(v => v.readyState >= 2)")
  # The flags on the time axis.
  flags = page.evaluate("""() => Object.fromEntries(
      document.getElementById('plot').data.filter(t => t.name.startsWith('is_'))
          .map(t => [t.name, Array.from(t.x)]))""")
  assert flags == {'is_first': [0], 'is_last': [length - 1],
                   'is_terminal': [length - 1] if expected[index]['terminated']
                                  else []}

  assert page.text_content('#step-label') == f'step 0 / {length - 1}'
  cursor_step, cursor_x = page.evaluate(CURSOR_JS)
  assert cursor_step == 0
  first = _frame(page)
  assert _frame_error(first, frames[0]) < 6

  # Half speed: the pause below lands mid-video even on a loaded machine (a
  # click after the video's end would play it again from the start).
  page.select_option('#speed', '0.5')
  page.click('#play')
  page.wait_for_function(
      "document.querySelector('video').currentTime > 1.2",
      timeout=browser_testing.TIMEOUT_MS)
  page.click('#play')  # Pause.
  # The page shows the step of the paused video's time (once its pause and
  # seek events are handled).
  page.wait_for_function(f"""() => {{
      const video = document.querySelector('video');
      return video.paused && !video.seeking && Number(document.body.dataset.step)
          === Math.min({length - 1}, Math.floor(video.currentTime * {FPS} + 1e-3));
  }}""")
  state = page.evaluate("""() => { const vs = document.querySelectorAll('video');
      return [vs[0].currentTime, vs[1].currentTime,
              Number(document.body.dataset.step)]; }""")
  master_time, follower_time, step = state
  assert step == min(length - 1, int(master_time * FPS + 1e-3)) and step >= 12
  assert abs(follower_time - master_time) < 1.5 / FPS
  assert page.text_content('#step-label') == f'step {step} / {length - 1}'
  page.wait_for_function(f"document.getElementById('plot').layout.shapes[0].x0 === {step}")
  moved_step, moved_x = page.evaluate(CURSOR_JS)
  assert moved_step == step and moved_x > cursor_x + 50
  moved = _moved(frames[0], frames[step])
  assert moved.sum() > 20
  # The video shows the step's own frame, no longer the first one.
  assert _settled_error(page, frames[step], moved) < 25
  shown = _frame(page)
  assert _frame_error(shown, frames[step]) < 6
  assert _frame_error(shown, frames[0], moved) > 60
  assert _frame_error(first, frames[0], moved) < 25
  _screenshot(page, tmp_path / 'episode.png')

  # Keyboard and plot clicks seek too (back: the video may have ended).
  step = int(page.evaluate('document.body.dataset.step'))
  page.keyboard.press('ArrowLeft')
  page.wait_for_function(f"document.body.dataset.step === '{step - 1}'")
  moved = _moved(frames[step], frames[step - 1])
  assert _settled_error(page, frames[step - 1], moved) < 25
  box = page.locator('#plot .nsewdrag').first.bounding_box()
  page.mouse.click(box['x'] + box['width'] * 0.1, box['y'] + box['height'] / 2)
  page.wait_for_function(f"Number(document.body.dataset.step) < {step}")


def test_episode_without_cameras_plays_on_a_clock(page, tmp_path):
  """No camera: play/pause still move the step and the cursor (a timer)."""
  arguments = {'num_episodes': 4, 'min_length': 30, 'max_length': 30,
               'seed': 0}
  path = write_dataset(synthetic.episodes(**arguments), str(tmp_path),
                       'vectors')
  lengths = [len(e['reward']) for e in synthetic.episode_arrays(**arguments)]
  index = int(np.argmax(lengths))
  assert lengths[index] == 30
  server = server_lib.start(path, fps=FPS)  # Another viewer, same browser.
  try:
    page.goto(f'{server.url}episode/train/{index}')
    page.wait_for_selector('body[data-ready="1"]')
    assert page.locator('video').count() == 0
    # A quarter speed: the 3 s episode lasts 12 s, so a loaded machine still
    # pauses it mid-way (a click after its end would play it from step 0).
    page.select_option('#speed', '0.25')
    page.click('#play')
    page.wait_for_function("Number(document.body.dataset.step) >= 3")
    page.click('#play')  # Pause.
    assert page.text_content('#play') == '▶ play'
    step = int(page.evaluate('document.body.dataset.step'))
    assert 3 <= step < 29
    page.wait_for_function(
        f"document.getElementById('plot').layout.shapes[0].x0 === {step}")
    time.sleep(0.3)
    assert int(page.evaluate('document.body.dataset.step')) == step  # Paused.
    page.keyboard.press('ArrowLeft')
    page.wait_for_function(f"document.body.dataset.step === '{step - 1}'")
  finally:
    server.stop()


def test_statistics_name_the_fields_holding_nan_and_inf(page, tmp_path):
  """Statistics leave NaN/inf out of mean, min...: the page says which."""
  features = {'steps': {'observation': np.zeros(2, np.float32),
                        'reward': np.float32(0), 'is_terminal': True}}
  with EpisodeWriter(str(tmp_path), 'nans', features) as writer:
    for nan in (False, True):
      observation = np.ones((4, 2), np.float32)
      reward = np.zeros(4, np.float32)
      if nan:
        observation[1:3, 0] = np.nan
        reward[0] = np.inf
      writer.add_episode({'steps': {'observation': observation,
                                    'reward': reward,
                                    'is_terminal': [False] * 3 + [True]}})
  server = server_lib.start(writer.path, fps=FPS)
  try:
    page.goto(server.url)
    page.wait_for_selector('#stats-nonfinite:not([hidden])')
    assert page.text_content('#stats-nonfinite') == (
        'Not finite: observation (2 NaN), reward (1 inf). The statistics '
        'above are those of the finite values (count counts them all).')
  finally:
    server.stop()


# As the audit had it, but for the closing '</a>': writers now refuse a key
# holding a '/'. Plotly opens a link at '<a href=...>' and closes it at the
# end of the text when no '</a>' comes.
HOSTILE = '<a href="https:\\\\evil.example">click'
PLOT_LINKS_JS = """() => Array.from(document.querySelectorAll('#plot a'))
    .filter(a => !a.classList.contains('modebar-btn'))  // Plotly's buttons.
    .map(a => a.outerHTML)"""


def test_dataset_strings_reach_the_plot_as_text(page, tmp_path):
  """Plotly draws HTML in trace names: a feature name must not become a link."""
  features = {'steps': {'observation': {HOSTILE: np.zeros(2, np.float32)},
                        'reward': np.float32(0), 'is_terminal': True}}
  with EpisodeWriter(str(tmp_path), 'hostile', features) as writer:
    writer.add_episode({'steps': {
        'observation': {HOSTILE: np.ones((4, 2), np.float32)},
        'reward': np.zeros(4, np.float32),
        'is_terminal': [False] * 3 + [True]}})
  server = server_lib.start(writer.path, fps=FPS)
  try:
    page.goto(f'{server.url}episode/train/0')
    page.wait_for_selector('body[data-ready="1"]')
    legend = page.eval_on_selector_all(
        '#plot .legendtext', 'texts => texts.map(t => t.textContent)')
    assert legend == [f'observation/{HOSTILE}[0]', f'observation/{HOSTILE}[1]',
                      'reward', 'is_first', 'is_last', 'is_terminal']
    assert page.evaluate(PLOT_LINKS_JS) == []  # It was a link to evil.example.
    page.evaluate("Plotly.Fx.hover('plot', {xval: 1}, 'xy')")  # State.
    page.wait_for_selector('#plot .hoverlayer text')
    hover = page.text_content('#plot .hoverlayer')
    assert f'observation/{HOSTILE}[1]' in hover, hover  # The label too.
    assert page.evaluate(PLOT_LINKS_JS) == []
  finally:
    server.stop()
