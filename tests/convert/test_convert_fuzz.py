"""Property: random episodes through every format's writer are read back exactly, or refused in one line."""

import os
import tempfile
import warnings

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import numpy as np

import episode_strategies
from rlds_lite import nest_paths
from rlds_lite.convert import episodes as episodes_lib
from rlds_lite.convert import files
from rlds_lite.convert import registry

KINDS = sorted(k for k in registry.FORMATS if k != 'rlds')  # rlds: tests/tfds.
TARGETS = {'d4rl': 'x.h5', 'ted': 'x.h5', 'il': 'x.npz', 'alf': 'x.npz'}
OPTIONS = {'minari': {'dataset_id': 'demo/x-v0'},
           'lerobot': {'fps': 10, 'no_video': True}}


def _leaves(observation):
  if isinstance(observation, dict):
    return dict(nest_paths.flatten_with_paths(observation))
  return {'': observation}


def _assert_read_back(kind, written, read):
  assert len(read) == 1, kind
  got, want = read[0]['steps'], written['steps']
  assert len(got['is_first']) == len(want['is_first']), kind
  got_leaves = _leaves(got['observation'])
  for path, value in _leaves(want['observation']).items():
    value, back = np.asarray(value), np.asarray(got_leaves[path])
    assert back.shape == value.shape, (kind, path)
    if value.dtype == object:
      assert back.tolist() == value.tolist(), (kind, path)
    else:
      np.testing.assert_array_equal(back.astype(value.dtype), value,
                                    err_msg=f'{kind} {path}')


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(episode=episode_strategies.rl_episode(), kind=st.sampled_from(KINDS))
def test_every_writer_reads_back_exactly_or_refuses_in_one_line(episode, kind):
  with tempfile.TemporaryDirectory() as work, warnings.catch_warnings():
    warnings.simplefilter('ignore')  # Left-out last-step values: said so.
    out = os.path.join(work, TARGETS.get(kind, 'out'))
    try:
      files.write_episodes(kind, [episode], out, **OPTIONS.get(kind, {}))
    except (episodes_lib.ConversionError, ValueError) as refusal:
      message = str(refusal)
      assert message and '\n' not in message.strip(), (kind, message)
      return
    _assert_read_back(kind, episode, list(files.read_episodes(kind, out)))
