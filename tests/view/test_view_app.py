"""rlds_lite.view.app: the JSON endpoints, videos and pages (Flask's client)."""

import io
import re

import av
import numpy as np
import pytest

from rlds_lite.view import app as app_lib
from rlds_lite.view import dataset_view
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


@pytest.fixture(name='client', scope='module')
def _client(dataset):
  view = dataset_view.DatasetView(dataset, fps=5)
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


@pytest.mark.parametrize('query, message', [
    ('min_length=abc', "query parameter 'min_length' must be an int, got 'abc'."),
    ('max_return=x', "query parameter 'max_return' must be a float, got 'x'."),
    ('order=up', "query parameter 'order' must be asc or desc, got 'up'."),
    ('status=done', "status must be one of ['terminated', 'truncated'], got "
     "'done'."),
    ('offset=-3', 'offset and limit must be >= 0, got -3, 100.'),
])
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
])
def test_not_found_is_404_json(client, url, message):
  response = client.get(url)
  assert response.status_code == 404
  assert response.json == {'error': message}


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
