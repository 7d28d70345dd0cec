"""rlds_lite.view.app: the JSON endpoints, videos and pages (Flask's client)."""

import io
import os
import re
import warnings

import av
import numpy as np
import pytest

import rlds_lite
from rlds_lite import catalog as catalog_lib
from rlds_lite import stats as stats_lib
from rlds_lite.view import app as app_lib
from rlds_lite.view import dataset_view
import rlds_testing
import view_testing

NUM_EPISODES = 6


@pytest.fixture(name='dataset', scope='module')
def _dataset(tmp_path_factory):
  return view_testing.write_camera_dataset(
      str(tmp_path_factory.mktemp('app')), num_episodes=NUM_EPISODES,
      max_length=10, size=16)


@pytest.fixture(name='expected', scope='module')
def _expected():
  return view_testing.expected_rows(view_testing.camera_episodes(
      num_episodes=NUM_EPISODES, max_length=10, size=16))


@pytest.fixture(name='view', scope='module')
def _view(dataset):
  return dataset_view.DatasetView(dataset, fps=5)


@pytest.fixture(name='client', scope='module')
def _client(view):
  return app_lib.create_app(view).test_client()


def test_dataset_json(client, dataset):
  info = client.get('/api/dataset').json
  assert info['name'] == 'cameras' and info['path'] == dataset
  assert info['version'] == '1.0.0' and info['file_format'] == 'tfrecord'
  assert info['splits'] == [{'name': 'train', 'episodes': NUM_EPISODES,
                             'shards': 1, 'bytes': info['splits'][0]['bytes']}]
  assert info['cameras'] == ['observation/front', 'observation/wrist']
  assert info['default_split'] == 'train' and info['fps'] == 5
  features = {f['path']: f for f in info['features']}
  assert features['observation/front'] == {
      'path': 'observation/front', 'level': 'step', 'type': 'Image',
      'shape': [16, 16, 3], 'dtype': 'uint8', 'encoding': 'png'}
  assert features['language_instruction']['dtype'] == 'string'
  assert features['episode_id']['level'] == 'episode'


def test_stats_json(client, expected):
  stats = client.get('/api/stats/train').json
  assert stats['num_episodes'] == NUM_EPISODES
  assert stats['num_steps'] == sum(r['length'] for r in expected)
  assert stats['num_terminated'] == sum(r['terminated'] for r in expected)
  assert stats['fields']['action']['shape'] == [2]
  assert 'observation/front' in stats['skipped']


def test_episodes_json_sorts_and_filters(client, expected):
  page = client.get('/api/episodes/train?sort=return&order=desc').json
  returns = [r['return'] for r in page['rows']]
  assert returns == pytest.approx(sorted((r['return'] for r in expected),
                                         reverse=True))
  assert page['matched'] == page['total'] == NUM_EPISODES
  page = client.get('/api/episodes/train?status=truncated&instruction=TARGET'
                    '&min_length=1&max_length=100').json
  want = [i for i, r in enumerate(expected) if not r['terminated'] and
          'target' in r['instructions'][0]]
  assert [r['index'] for r in page['rows']] == want
  page = client.get('/api/episodes/train?offset=2&limit=2&min_return=-1e9'
                    '&max_return=1e9').json
  assert [r['index'] for r in page['rows']] == [2, 3]
  assert page['rows'][0]['metadata'] == {'episode_id': 102}


def test_the_table_is_the_episode_catalog(client, dataset, expected):
  page = client.get('/api/episodes/train?limit=1000').json
  catalog = catalog_lib.episodes(dataset, progress=False)  # Cached: read.
  assert [r['length'] for r in page['rows']] == catalog['length'].tolist()
  assert [r['return'] for r in page['rows']] == catalog['return'].tolist()
  assert [r['return'] for r in page['rows']] == pytest.approx(
      [r['return'] for r in expected])
  assert [r['terminated'] for r in page['rows']] == [
      r['terminated'] for r in expected]
  assert [r['instructions'] for r in page['rows']] == [
      r['instructions'] for r in expected]
  # One pass, cached where the catalog caches; the viewer keeps no table of
  # its own.
  assert [f.rsplit('-', 1)[0] for f in os.listdir(
      os.path.join(dataset, 'rlds_lite_catalog'))] == ['train-invalid']
  assert not os.path.exists(os.path.join(dataset, 'rlds_lite_view'))
  assert page['columns'] == ['index', 'length', 'return', 'status',
                             'instruction', 'episode_id']
  assert (page['last_step'], page['left_out_last_rewards']) == ('invalid', 0)


def test_episodes_json_filters_by_expr(client, expected):
  page = client.get('/api/episodes/train', query_string={
      'where': 'length >= 5 and not terminated', 'sort': 'length'}).json
  want = sorted((i for i, r in enumerate(expected)
                 if r['length'] >= 5 and not r['terminated']),
                key=lambda i: (expected[i]['length'], i))
  assert [r['index'] for r in page['rows']] == want and want
  response = client.get('/api/episodes/train', query_string={
      'where': 'speed > 2'})
  assert response.status_code == 400
  assert response.json['error'].startswith(
      "EXPR 'speed > 2': no column 'speed' (columns: index, episode_id, ")


@pytest.mark.parametrize('query, message', [
    ('min_length=abc', "query parameter 'min_length' must be an int, got 'abc'."),
    ('max_return=x', "query parameter 'max_return' must be a finite float, "
     "got 'x'."),
    ('min_return=nan', "query parameter 'min_return' must be a finite float, "
     "got 'nan'."),  # Matched nothing, silently.
    ('max_return=-inf', "query parameter 'max_return' must be a finite "
     "float, got '-inf'."),
    ('min_length=1e400', "query parameter 'min_length' must be an int, got "
     "'1e400'."),
    ('limit=' + '9' * 20, "query parameter 'limit' must be an int, got "
     f"'{'9' * 20}'."),
    ('offset=' + '9' * 5000, "query parameter 'offset' must be an int, got "
     f"'{'9' * 5000}'."),
    ('where=' + '(' * 101 + 'length+>+1' + ')' * 101, 'EXPR nests deeper '
     "than 100 levels (refused): '(' at position 101."),  # Was HTML 500.
    ('where=' + 'not+' * 5000 + 'terminated', 'EXPR nests deeper than 100 '
     "levels (refused): 'not' at position 401."),
    ('order=up', "query parameter 'order' must be asc or desc, got 'up'."),
    ('status=done', "status must be one of ['terminated', 'truncated'], got "
     "'done'."),
    ('offset=-3', 'offset and limit must be >= 0, got -3, 100.'),
], ids=['non-integer-length', 'non-number-return', 'nan-return',
        'infinite-return', 'float-length', 'huge-limit', '5000-digit-offset',
        'deep-parentheses', 'deep-nots', 'unknown-order', 'unknown-status',
        'negative-offset'])
def test_bad_table_queries_are_400(client, query, message):
  response = client.get(f'/api/episodes/train?{query}')
  assert response.status_code == 400
  assert response.json == {'error': message}


def test_unknown_sort_column_is_404(client):
  response = client.get('/api/episodes/train?sort=colour')
  assert response.status_code == 404
  assert response.json['error'].startswith("unknown column 'colour'")


def test_episode_json(client, expected):
  data = client.get('/api/episode/train/2').json
  assert data['split'] == 'train' and data['index'] == 2
  assert data['num_episodes'] == NUM_EPISODES and data['fps'] == 5
  assert data['length'] == expected[2]['length']
  assert data['return'] == pytest.approx(expected[2]['return'])
  assert data['terminated'] == expected[2]['terminated']
  assert data['instructions'] == expected[2]['instructions']
  assert data['metadata'] == {'episode_id': 102}
  assert data['flags']['is_last'] == [expected[2]['length'] - 1]
  assert [c['url'] for c in data['cameras']] == [
      '/video/train/2/observation/front', '/video/train/2/observation/wrist']
  assert [p['name'] for p in data['panels']] == ['action', 'state', 'reward',
                                                 'discount']


@pytest.mark.parametrize('url, message', [
    ('/api/episode/train/6', "episode 6 is out of range: split 'train' has 6 "
     'episodes.'),
    ('/api/episode/test/0', "no split 'test' (splits: ['train'])."),
    ('/api/stats/test', "no split 'test' (splits: ['train'])."),
    ('/api/episodes/test', "no split 'test' (splits: ['train'])."),
    ('/video/train/0/observation/state', "no camera 'observation/state' "
     "(cameras: ['observation/front', 'observation/wrist'])."),
    ('/video/train/9/observation/front', "episode 9 is out of range: split "
     "'train' has 6 episodes."),
    ('/episode/train/6', "episode 6 is out of range: split 'train' has 6 "
     'episodes.'),
    ('/?split=test', "no split 'test' (splits: ['train'])."),
    # Indices that are not episodes were Flask's HTML 404 page.
    ('/api/episode/train/-1', "no episode '-1': split 'train' has 6 episodes "
     '(0 to 5).'),
    ('/api/episode/train/abc', "no episode 'abc': split 'train' has 6 "
     'episodes (0 to 5).'),
    ('/api/episode/train/1.5', "no episode '1.5': split 'train' has 6 "
     'episodes (0 to 5).'),
    ('/api/episode/train/' + '9' * 30, f"no episode '{'9' * 30}': split "
     "'train' has 6 episodes (0 to 5)."),
    ('/api/episode/train/99', "episode 99 is out of range: split 'train' has "
     '6 episodes.'),
    ('/episode/train/-1', "no episode '-1': split 'train' has 6 episodes (0 "
     'to 5).'),
    ('/video/train/x/observation/front', "no episode 'x': split 'train' has "
     '6 episodes (0 to 5).'),
    ('/api/episode/test/abc', "no split 'test' (splits: ['train'])."),
    ('/no/such/page', 'The requested URL was not found on the server. If you '
     'entered the URL manually please check your spelling and try again.'),
], ids=['episode-out-of-range', 'unknown-split-episode', 'unknown-split-stats',
        'unknown-split-table', 'not-a-camera', 'video-out-of-range',
        'page-out-of-range', 'page-unknown-split', 'negative-index',
        'word-index', 'fraction-index', '30-digit-index', 'index-99',
        'page-negative-index', 'video-word-index', 'unknown-split-first',
        'unknown-route'])
def test_not_found_is_404_json(client, url, message):
  response = client.get(url)
  assert response.status_code == 404
  assert response.json == {'error': message}


def test_other_errors_are_json_too(client, view, monkeypatch):
  response = client.post('/api/dataset')
  assert (response.status_code, response.json) == (405, {
      'error': 'The method is not allowed for the requested URL.'})
  monkeypatch.setattr(view, 'info', lambda: {}['no such key'][0])
  response = client.get('/api/dataset')  # A KeyError of the code: 404.
  assert (response.status_code, response.json) == (404, {
      'error': 'no such key'})
  monkeypatch.setattr(view, 'info', lambda: 1 / 0)
  response = client.get('/api/dataset')  # Was Flask's HTML 500 page.
  assert (response.status_code, response.json) == (500, {
      'error': 'ZeroDivisionError: division by zero'})


@pytest.fixture(name='undecodable', scope='module')
def _undecodable(tmp_path_factory):
  """A client of a dataset whose episode 2 has a frame that is no PNG."""
  _, bad = rlds_testing.camera_datasets_good_and_undecodable(
      tmp_path_factory.mktemp('undecodable'), only_at=(2, 3))
  return bad, app_lib.create_app(dataset_view.DatasetView(bad)).test_client()


@pytest.mark.parametrize('url', ['/api/episode/train/2',
                                 '/video/train/2/observation/camera'],
                         ids=['episode', 'video'])
def test_an_undecodable_frame_is_named(undecodable, url):
  path, client = undecodable
  response = client.get(url)  # Was Flask's HTML 500 page.
  assert response.status_code == 500
  assert response.json == {'error': (
      f"{path}/cams-train.tfrecord-00000: episode 2 of split 'train', field "
      "'observation/camera': step 3 does not decode as the image its feature "
      'declares in dataset_info.json (Unknown image file format. One of '
      "JPEG, JPEG XL, PNG, GIF, BMP, WebP required); its bytes begin b'not "
      "a pn'.")}
  assert client.get('/api/episode/train/0').status_code == 200


def test_video_plays_back_the_episode(client, dataset):
  response = client.get('/video/train/1/observation/wrist')
  assert response.status_code == 200
  assert response.mimetype == 'video/mp4'
  assert response.headers['Accept-Ranges'] == 'bytes'
  data = response.data
  episode = list(view_testing.camera_episodes(NUM_EPISODES, 10, 16))[1]
  frames = episode['steps']['observation']['wrist']
  with av.open(io.BytesIO(data)) as container:
    decoded = [f.to_ndarray(format='rgb24') for f in container.decode(video=0)]
  assert len(decoded) == len(frames)
  scale = decoded[0].shape[0] // 16
  for image, frame in zip(decoded, frames):
    assert np.abs(image[::scale, ::scale].astype(int) - frame).mean() < 8


def test_video_range_requests(client):
  full = _get(client, '/video/train/0/observation/front')[1]
  response = client.get('/video/train/0/observation/front',
                        headers={'Range': 'bytes=100-199'})
  assert response.status_code == 206
  assert response.headers['Content-Range'] == f'bytes 100-199/{len(full)}'
  assert response.data == full[100:200]
  etag = response.headers['ETag']
  again = client.get('/video/train/0/observation/front',
                     headers={'If-None-Match': etag})
  assert again.status_code == 304


def _get(client, url):
  """Status and body of a GET (the response closed: files are streamed)."""
  with client.get(url) as response:
    return response.status_code, response.get_data()


def test_pages_and_assets_are_local(client):
  for url in ['/', '/episode/train/0']:
    html = _get(client, url)[1].decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources and all(s.startswith(('/', '#', 'data:')) for s in sources), (
        sources)
    for source in sources:
      if source.startswith('/') and not source.startswith(('/episode', '/?')):
        assert _get(client, source)[0] == 200, source
  status, plotly = _get(client, '/vendor/plotly.min.js')
  assert status == 200 and len(plotly) > 1_000_000
  for name in ['common.js', 'dataset.js', 'episode.js', 'viewer.css']:
    text = _get(client, f'/static/{name}')[1].decode()
    assert not re.search(r'https?://', text), name


def test_other_host_names_are_refused(client):
  assert client.get('/api/dataset', headers={'Host': '127.0.0.1:8765'}
                    ).status_code == 200
  assert client.get('/api/dataset', headers={'Host': 'evil.example:8765'}
                    ).status_code == 400


@pytest.mark.parametrize('last_step', ['invalid', 'valid'])
def test_last_step_decides_returns_stats_and_plots(tmp_path, last_step):
  """A success reward on terminal last steps: left out and shown, or counted."""
  path = view_testing.write_camera_dataset(
      str(tmp_path), num_episodes=NUM_EPISODES, max_length=10, size=8,
      success_reward=1.0)
  expected = view_testing.expected_rows(view_testing.camera_episodes(
      NUM_EPISODES, 10, 8, success_reward=1.0), last_step)
  terminated = sum(r['terminated'] for r in expected)
  assert terminated and all(r['last_reward'] == 1.0 for r in expected
                            if r['terminated'])
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    view = dataset_view.DatasetView(path, last_step=last_step)
    client = app_lib.create_app(view).test_client()
    stats = client.get('/api/stats/train').json
    page = client.get('/api/episodes/train').json
    episode = client.get('/api/episode/train/3').json
  # The pages say what is left out; no Python warning reaches the console.
  assert not [w for w in caught
              if issubclass(w.category, rlds_lite.LastStepValuesWarning)]
  assert client.get('/api/dataset').json['last_step'] == last_step
  assert [r['return'] for r in page['rows']] == pytest.approx(
      [r['return'] for r in expected])
  assert episode['return'] == pytest.approx(expected[3]['return'])
  assert stats['source']['last_step'] == last_step
  assert stats['episode_return']['max'] == pytest.approx(
      max(r['return'] for r in expected))
  if last_step == 'invalid':
    assert page['left_out_last_rewards'] == terminated
    assert page['columns'][:5] == ['index', 'length', 'return', 'last_reward',
                                   'status']
    assert [r['last_reward'] for r in page['rows']] == [
        r['last_reward'] for r in expected]
    assert stats['last_step_values'] == {'reward': terminated}
    assert episode['invalid_on_last'] == ['action', 'reward', 'discount']
    assert episode['panels'][2]['series'][0]['values'][-1] is None
  else:
    assert page['left_out_last_rewards'] == 0
    assert 'last_reward' not in page['columns']
    # Counted (the statistics list them either way; the page notes them
    # only when left out).
    assert stats['last_step_values'] == {'reward': terminated}
    assert episode['invalid_on_last'] == []
    assert episode['panels'][2]['series'][0]['values'][-1] == (
        expected[3]['last_reward'])
  # The same call outside the viewer warns (so the check above can fail).
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    stats_lib.compute(path, last_step=last_step, progress=False)
  assert len([w for w in caught if issubclass(
      w.category, rlds_lite.LastStepValuesWarning)]) == (
          last_step == 'invalid')


def test_bad_last_step_is_refused(dataset):
  with pytest.raises(ValueError, match="view: last_step must be"):
    dataset_view.DatasetView(dataset, last_step='maybe')
