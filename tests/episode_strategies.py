"""Hypothesis strategies of random episodes (nesting, dtypes, zero-size arrays, strings, odd keys)."""

from hypothesis import strategies as st
import numpy as np


def flags(length, terminal):
  """RLDS flags of a ``length``-step episode, terminal or truncated."""
  index = np.arange(length)
  return {'is_first': index == 0, 'is_last': index == length - 1,
          'is_terminal': (index == length - 1) & terminal}


_DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_,
           object]


@st.composite
def leaf(draw, length):
  dtype = draw(st.sampled_from(_DTYPES))
  shape = (length,) + tuple(draw(st.lists(st.integers(0, 2), max_size=2)))
  if dtype is object:
    words = draw(st.lists(st.binary(max_size=3), min_size=int(np.prod(shape)),
                          max_size=int(np.prod(shape))))
    return np.array(words + [None], object)[:-1].reshape(shape)
  values = draw(st.lists(st.integers(0, 1 if dtype is np.bool_ else 200),
                         min_size=int(np.prod(shape)),
                         max_size=int(np.prod(shape))))
  return np.array(values).astype(dtype).reshape(shape)


@st.composite
def random_episode(draw):
  length = draw(st.integers(1, 3))
  keys = st.sampled_from(['a', 'b', 'ab', 'a.b', '.', '..', 'a/b', 'b/'])
  fields = st.recursive(leaf(length),
                        lambda inner: st.dictionaries(keys, inner, min_size=1,
                                                      max_size=2),
                        max_leaves=4)
  steps = draw(st.dictionaries(keys, fields, min_size=1, max_size=3))
  return {'steps': {**steps, **flags(length, draw(st.booleans()))}}


@st.composite
def rl_episode(draw):
  """A random episode with a random (nested) observation, action and reward."""
  length = draw(st.integers(1, 3))
  keys = st.sampled_from(['a', 'b', 'ab', 'a.b', 'a/b'])
  fields = st.recursive(leaf(length), lambda inner: st.dictionaries(
      keys, inner, min_size=1, max_size=2), max_leaves=3)
  steps = {'observation': draw(fields), 'action': draw(leaf(length)),
           'reward': draw(leaf(length))}
  return {'steps': {**steps, **flags(length, draw(st.booleans()))}}
