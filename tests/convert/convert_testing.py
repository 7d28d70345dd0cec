"""Episodes for converter tests: named cases and a hypothesis strategy.

Every Episode follows the RLDS alignment: step t holds (o_t, a_t, r_t, d_t);
the last step holds the final observation with zero action, reward and
discount; the discount is 0 on the step whose transition terminates.
"""

from typing import Any, Dict, List

from hypothesis import strategies as st
import numpy as np

from rlds_lite.convert import episodes as episodes_lib


def make_episode(length: int, terminated: bool, *, nested: bool = False,
                 obs_dim: int = 3, action_dim: int = 2, seed: int = 0,
                 episode_id: int = 0) -> Dict[str, Any]:
  """One RLDS Episode with random values and exact RLDS flags/discounts."""
  rng = np.random.default_rng(seed)
  if nested:
    observation = {
        'pos': rng.normal(size=(length, obs_dim)).astype(np.float32),
        'vel': rng.normal(size=(length, 1)).astype(np.float32),
    }
  else:
    observation = rng.normal(size=(length, obs_dim)).astype(np.float32)
  action = rng.normal(size=(length, action_dim)).astype(np.float32)
  reward = rng.normal(size=length).astype(np.float32)
  discount = np.ones(length, np.float32)
  action[-1] = 0
  reward[-1] = 0
  discount[-1] = 0
  if terminated and length >= 2:
    discount[-2] = 0
  steps = {
      'observation': observation,
      'action': action,
      'reward': reward,
      'discount': discount,
      **episodes_lib.rlds_flags(length, terminated),
  }
  return {'steps': steps, 'episode_id': np.int64(episode_id)}


NAMED_EPISODES: Dict[str, List[Dict[str, Any]]] = {
    'empty': [],
    'one-step': [make_episode(1, terminated=False)],
    'short-terminal': [make_episode(2, terminated=True, seed=1)],
    'terminal': [make_episode(6, terminated=True, seed=2)],
    'truncated': [make_episode(5, terminated=False, seed=3)],
    'nested': [make_episode(4, terminated=True, nested=True, seed=4),
               make_episode(3, terminated=False, nested=True, seed=5,
                            episode_id=1)],
    'mixed-ends': [make_episode(n, terminated=t, seed=10 + i, episode_id=i)
                   for i, (n, t) in enumerate(
                       [(3, True), (1, False), (7, False), (2, True)])],
}
"""Lists of Episodes of one structure, by case name (``'empty'`` has none)."""


@st.composite
def rlds_episodes(draw, min_episodes: int = 1, max_episodes: int = 4,
                  max_length: int = 8, allow_one_step: bool = True,
                  nested=None) -> List[Dict[str, Any]]:
  """A list of Episodes sharing one structure (terminated, truncated, ...)."""
  nested = draw(st.booleans()) if nested is None else nested
  obs_dim = draw(st.integers(1, 3))
  action_dim = draw(st.integers(1, 2))
  count = draw(st.integers(min_episodes, max_episodes))
  min_length = 1 if allow_one_step else 2
  return [
      make_episode(draw(st.integers(min_length, max_length)),
                   draw(st.booleans()), nested=nested, obs_dim=obs_dim,
                   action_dim=action_dim, seed=draw(st.integers(0, 2**16)),
                   episode_id=i)
      for i in range(count)
  ]


def assert_episodes_equal(actual: List[Dict[str, Any]],
                          expected: List[Dict[str, Any]],
                          metadata: bool = True) -> None:
  """Exact equality of two lists of Episodes (values, dtypes, shapes)."""
  assert len(actual) == len(expected), (len(actual), len(expected))
  for index, (a, e) in enumerate(zip(actual, expected)):
    keys = set(e) if metadata else {'steps'}
    assert set(a) >= keys, (index, sorted(a), sorted(keys))
    for key in keys:
      a_flat = _flatten(a[key])
      e_flat = _flatten(e[key])
      assert sorted(a_flat) == sorted(e_flat), (index, key, sorted(a_flat),
                                                sorted(e_flat))
      for path, value in e_flat.items():
        got = np.asarray(a_flat[path])
        want = np.asarray(value)
        assert got.dtype == want.dtype, (index, key, path, got.dtype,
                                         want.dtype)
        np.testing.assert_array_equal(got, want,
                                      err_msg=f'episode {index} {key}/{path}')


def _flatten(value: Any, prefix: str = '') -> Dict[str, Any]:
  if isinstance(value, dict):
    out = {}
    for k, v in value.items():
      out.update(_flatten(v, f'{prefix}/{k}' if prefix else str(k)))
    return out
  return {prefix: value}


def assert_one_step_episodes_skipped(write, read, episodes) -> None:
  """``write(episodes, one_step='skip')`` then ``read`` keeps the longer ones.

  With no episode longer than one step, writing is an error ("no episodes").
  """
  import pytest  # pylint: disable=g-import-not-at-top
  kept = [e for e in episodes if len(e['steps']['is_last']) > 1]
  if not kept:
    with pytest.raises(ValueError, match='no episodes'):
      write(episodes, one_step='skip')
    return
  assert_episodes_equal(read(write(episodes, one_step='skip')), kept,
                        metadata=False)
