"""rlds_lite.convert.pickles: untrusted pickles load NumPy/builtins, bounded."""

import collections
import io
import json
import os
import pickle
import subprocess
import sys
import tarfile

import numpy as np
import pytest

import pickle_bombs
from rlds_lite import convert
from rlds_lite.convert import il_representations as il
from rlds_lite.convert import pickles

_HERE = os.path.dirname(os.path.abspath(__file__))
_PICKLES_PY = os.path.abspath(pickles.__file__)

# Runs every bomb through `loads` in a process whose address space is capped
# (an unbounded unpickler dies there, not the test machine), and reports
# what each raised and the peak memory Python and NumPy allocated meanwhile.
_BOMB_RUNNER = f'''
import importlib.util, json, resource, sys, tracemalloc
sys.path.insert(0, {_HERE!r})
spec = importlib.util.spec_from_file_location('pickles', {_PICKLES_PY!r})
pickles = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pickles)  # NumPy only: no TensorFlow in this process.
import pickle_bombs
limit = 1 << 30
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
tracemalloc.start()
out = {{}}
for name, make in pickle_bombs.BOMBS.items():
  data = make()
  tracemalloc.reset_peak()
  before = tracemalloc.get_traced_memory()[0]
  try:
    pickles.loads(data)
    result = 'loaded'
  except BaseException as e:  # MemoryError too.
    result = type(e).__name__ + ': ' + str(e)
  peak = tracemalloc.get_traced_memory()[1] - before
  out[name] = [len(data), peak, result]
print(json.dumps(out))
'''


def test_bombs_are_refused_within_a_memory_bound():
  env = {**os.environ, 'OPENBLAS_NUM_THREADS': '1', 'OMP_NUM_THREADS': '1'}
  run = subprocess.run([sys.executable, '-c', _BOMB_RUNNER], env=env,
                       capture_output=True, text=True, timeout=300,
                       check=False)
  assert run.returncode == 0, run.stderr[-3000:]
  results = json.loads(run.stdout)
  assert sorted(results) == sorted(pickle_bombs.BOMBS)
  for name, (size, peak, result) in results.items():
    assert result.startswith('RefusedPickle: ' + pickle_bombs.EXPECTED[name]), (
        name, result)
    # The budget is 16x the pickle; the pickle and what it spells out itself
    # come on top. Each bomb asks for 0.8 to 8 GB.
    assert peak < 20 * size + (1 << 20), (name, size, peak)


@pytest.mark.parametrize('name', sorted(pickle_bombs.BOMBS))
def test_bomb_in_a_shard_names_the_file_member_and_field(name, tmp_path):
  path = str(tmp_path / 'shard_000000.tar')
  members = {'obs': np.zeros(2), 'next_obs': np.ones(2), 'acts': np.int64(1),
             'dones': True}
  with tarfile.open(path, 'w') as tar:
    for field, value in [*members.items(),
                         ('rews', pickle_bombs.BOMBS[name]())]:
      payload = value if isinstance(value, bytes) else pickle.dumps(value)
      info = tarfile.TarInfo(f'frame_000.{field}.pickle')
      info.size = len(payload)
      tar.addfile(info, io.BytesIO(payload))
  with pytest.raises(convert.ConversionError) as error:
    il.from_webdataset(path)
  assert str(error.value).startswith(
      f"{path}:frame_000.rews.pickle: episode 0, field 'rews': "
      + pickle_bombs.EXPECTED[name])


VALUES = {
    'float_array': np.arange(12, dtype=np.float32).reshape(3, 4),
    'image': np.arange(64 * 64 * 3, dtype=np.uint8).reshape(64, 64, 3),
    'fortran': np.asfortranarray(np.arange(6.0).reshape(2, 3)),
    'bool_array': np.array([True, False]),
    'string_array': np.array(['ab', 'c']),
    'bytes_array': np.array([b'ab', b'c']),
    'object_array': np.array([1, 'x', None], dtype=object),
    'structured': np.array([(1, 2.0)], dtype=[('a', 'i4'), ('b', 'f8')]),
    'empty_array': np.zeros((0, 3)),
    'scalars': [np.float32(1.5), np.int64(7), np.bool_(True), np.complex64(1j)],
    'builtins': {'set': {1, 2}, 'frozen': frozenset([3]), 'complex': 1 + 2j,
                 'bytes': b'xy', 'empty_bytes': b'', 'tuple': (1, 2.5, 'z'),
                 'bytearray': bytearray(b'q'), 'none': None, 'big_int': 2**100,
                 'slice': slice(1, 5, 2), 'text': 'é' * 100},
    'long_float_list': [0.5] * 100_000,
    'long_bool_list': [True, False] * 50_000,
    'nested': {'a': [{'b': (np.zeros(2), [1, 2])}], 'c': {'d': 'e'}},
    'large_array': np.random.default_rng(0).normal(size=(512, 1024)),
}


@pytest.mark.parametrize('protocol', [2, 3, 4, 5])
@pytest.mark.parametrize('name', sorted(VALUES))
def test_values_load_as_pickle_loads_them(name, protocol):
  data = pickle.dumps(VALUES[name], protocol=protocol)
  got = pickles.loads(data)
  want = pickle.loads(data)
  assert _same(got, want), name


def _same(got, want) -> bool:
  if isinstance(want, np.ndarray):
    return (type(got) is np.ndarray and got.dtype == want.dtype and
            got.shape == want.shape and
            got.flags.f_contiguous == want.flags.f_contiguous and
            bool(np.all(got == want)))
  if isinstance(want, dict):
    return (type(got) is dict and got.keys() == want.keys() and
            all(_same(got[k], want[k]) for k in want))
  if isinstance(want, (list, tuple)):
    return (type(got) is type(want) and len(got) == len(want) and
            all(_same(g, w) for g, w in zip(got, want)))
  return type(got) is type(want) and got == want


def test_other_globals_are_refused():
  with pytest.raises(pickles.RefusedPickle,
                     match='refuses to load global collections.OrderedDict'):
    pickles.loads(pickle.dumps(collections.OrderedDict(a=1)))


@pytest.mark.parametrize('call, message', [
    (pickle_bombs.Call(str, ([1, 2],)), 'refuses to call str'),
    (pickle_bombs.Call(list, (5,)), 'refuses to call list'),
    (pickle_bombs.Call(bytearray, ({'a': 1},)),
     'refuses to unpickle bytearray'),
])
def test_odd_calls_of_allowed_builtins_are_refused(call, message):
  data = pickle.dumps(call, protocol=4)
  with pytest.raises(pickles.RefusedPickle, match=message):
    pickles.loads(data)


def test_deep_nesting_is_refused_not_crashed():
  depth = 5000  # Lists in lists, spelled out opcode by opcode.
  data = b'\x80\x04' + b']' * depth + b'a' * (depth - 1) + b'.'
  with pytest.raises(pickles.RefusedPickle, match='nested more deeply'):
    pickles.loads(data)
