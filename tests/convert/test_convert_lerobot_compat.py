"""lerobot's own reader loads what `to_lerobot` writes; we read what it writes.

Opt-in: needs a Python with lerobot 0.4 (which pulls torch, several GB), named
by ``RLDS_LITE_LEROBOT_PYTHON``; ``make test-lerobot`` creates
``.venv-lerobot`` with ``lerobot==0.4.4`` and runs this module:

  RLDS_LITE_LEROBOT_PYTHON=.venv-lerobot/bin/python \
      python -m pytest tests/convert/test_convert_lerobot_compat.py

Datasets written by rlds_lite are loaded with ``LeRobotDataset(repo_id,
root=..., video_backend='pyav')`` in that Python (tests/convert/
lerobot_load.py) and every frame is compared with what was written; fresh
datasets written by lerobot (tests/convert/fixtures/make_lerobot_fixtures.py)
are read with `from_lerobot`.
"""

import json
import os
import subprocess

import numpy as np
import pytest

import test_convert_lerobot as base
from rlds_lite import nest_paths
from rlds_lite.convert import episodes as episodes_lib
from rlds_lite.convert import lerobot

PYTHON = os.environ.get('RLDS_LITE_LEROBOT_PYTHON')
if not PYTHON:
  pytest.skip('opt-in: set RLDS_LITE_LEROBOT_PYTHON to a Python with '
              'lerobot (make test-lerobot)', allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))
# lerobot decodes with torchvision's PyAV path, rgb24 conversion of its own.
LEROBOT_VIDEO_TOLERANCE = 10


def _run(*args):
  env = {**os.environ, 'HF_HUB_OFFLINE': '1', 'SVT_LOG': '1'}
  result = subprocess.run([PYTHON, *args], capture_output=True, text=True,
                          env=env, timeout=900, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  return result


def lerobot_frames(root, repo_id, tmp_path):
  out = str(tmp_path / f'{repo_id.replace("/", "_")}.npz')
  _run(os.path.join(HERE, 'lerobot_load.py'), str(root), repo_id, out)
  with np.load(out) as data:
    arrays = {k: data[k] for k in data.files}
  return arrays, json.loads(str(arrays.pop('meta/summary')))


def episodes_to_write(count=5):
  """Two cameras, nested and 2-D fields, ints, strings, a task, metadata."""
  out = []
  for index in range(count):
    length = 1 if index == 1 else 3 + 2 * index  # One one-frame episode.
    rng = np.random.default_rng(index)
    steps = {
        'observation': {
            'images': {'front': base.camera(length, index),
                       'wrist': base.camera(length, index + 7)[:, :16, :16]},
            'state': rng.normal(size=(length, 4)).astype(np.float32),
            'grid': rng.normal(size=(length, 2, 3)).astype(np.float32)},
        'action': rng.normal(size=(length, 2)).astype(np.float32),
        'reward': rng.normal(size=length).astype(np.float32),
        'discount': np.ones(length, np.float32),
        'gripper': rng.integers(0, 5, size=length).astype(np.int64),
        'language_instruction': np.array(
            [f'task {index % 3}'.encode()] * length, object),
        **episodes_lib.rlds_flags(length, index % 2 == 0)}
    out.append({'steps': steps, 'episode_id': np.int64(index)})
  return out


@pytest.mark.parametrize('options', [
    {}, {'video': False},
    {'chunks_size': 2, 'data_files_size_in_mb': 1e-6,
     'video_files_size_in_mb': 1e-6}], ids=['video', 'images', 'rolled'])
def test_lerobot_loads_what_we_write(options, tmp_path):
  episodes = episodes_to_write()
  root = lerobot.to_lerobot(episodes, tmp_path / 'd', fps=base.FPS, **options)
  got, summary = lerobot_frames(root, 'rlds_lite/compat', tmp_path)
  lengths = [len(e['steps']['is_last']) for e in episodes]
  assert summary['fps'] == base.FPS
  assert summary['num_episodes'] == len(episodes)
  assert summary['episode_lengths'] == lengths
  assert summary['num_frames'] == sum(lengths)
  cameras = ['observation.images.front', 'observation.images.wrist']
  assert sorted(summary['image_keys' if options.get('video') is False
                        else 'video_keys']) == cameras
  flat = [dict(nest_paths.flatten_with_paths(e['steps'])) for e in episodes]
  column = lambda path: np.concatenate([f[path] for f in flat])
  for name, path in [('observation.state', 'observation/state'),
                     ('observation.grid', 'observation/grid'),
                     ('action', 'action'), ('next.reward', 'reward'),
                     ('discount', 'discount'), ('gripper', 'gripper'),
                     ('next.done', 'is_last')]:
    np.testing.assert_array_equal(got[name], column(path), err_msg=name)
  np.testing.assert_array_equal(
      got['timestamp'], np.concatenate(
          [np.arange(n, dtype=np.float32) / base.FPS for n in lengths]))
  np.testing.assert_array_equal(got['index'], np.arange(sum(lengths)))
  assert got['task'].tolist() == [
      s.decode() for s in column('language_instruction')]
  for name in cameras:
    want = column(name.replace('.', '/'))
    error = np.abs(got[name].astype(int) - want).max()
    limit = 0 if options.get('video') is False else LEROBOT_VIDEO_TOLERANCE
    assert error <= limit, (name, error)


@pytest.mark.parametrize('name', ['v30_video', 'v30_multifile'])
def test_we_read_what_lerobot_writes_now(name, tmp_path):
  _run(os.path.join(HERE, 'fixtures', 'make_lerobot_fixtures.py'), '--out',
       str(tmp_path), name)
  base.assert_fixture_read_back(
      list(lerobot.from_lerobot(tmp_path / name)), name)
