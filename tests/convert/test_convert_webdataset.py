"""il-representations webdataset shards <-> RLDS, and safe unpickling."""

import io
import os
import pickle
import shlex
import tarfile

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import numpy as np
import pytest

import convert_testing
from rlds_lite import convert
from rlds_lite.convert import il_representations as il


def frames_reference(episodes):
  """NumPy reference: the frames (dicts of per-row values) of Episodes."""
  frames = []
  for episode in episodes:
    steps = episode['steps']
    length = len(steps['is_last'])
    terminated = bool(steps['is_terminal'][-1])
    obs = steps['observation']
    at = lambda nest, t: ({k: v[t] for k, v in nest.items()}
                          if isinstance(nest, dict) else nest[t])
    for t in range(length - 1):
      infos = {}
      if t == 0:
        infos['episode_metadata'] = {'episode_id': episode['episode_id']}
      if t == length - 2 and not terminated:
        infos['TimeLimit.truncated'] = True
      frames.append({'obs': at(obs, t), 'next_obs': at(obs, t + 1),
                     'acts': steps['action'][t], 'rews': steps['reward'][t],
                     'dones': t == length - 2, 'infos': infos})
  return frames


def read_frames(paths):
  """All frames of shards, unpickled with the standard pickle module."""
  frames = []
  for path in paths:
    with tarfile.open(path) as tar:
      names = tar.getnames()
      assert names[0] == '_metadata.meta.pickle'
      for name in names[1:]:
        key, field, _ = name.split('.')
        if not frames or frames[-1]['__key__'] != (path, key):
          frames.append({'__key__': (path, key)})
        frames[-1][field] = pickle.loads(tar.extractfile(name).read())
  for frame in frames:
    del frame['__key__']
  return frames


def assert_nest_equal(actual, expected):
  if isinstance(expected, list):
    assert isinstance(actual, list) and len(actual) == len(expected)
    for a, e in zip(actual, expected):
      assert_nest_equal(a, e)
  elif isinstance(expected, dict):
    assert isinstance(actual, dict) and sorted(actual) == sorted(expected)
    for key in expected:
      assert_nest_equal(actual[key], expected[key])
  else:
    assert np.asarray(actual).dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(actual, expected)


NAMES = [n for n in convert_testing.NAMED_EPISODES
         if n not in ('empty', 'one-step', 'mixed-ends')]


@pytest.mark.parametrize('name', NAMES)
def test_named_cases_layout_and_round_trip(name, tmp_path):
  episodes = convert_testing.NAMED_EPISODES[name]
  paths = il.to_webdataset(episodes, tmp_path, metadata={'task': name})
  assert_nest_equal(read_frames(paths), frames_reference(episodes))
  assert il.read_shard_metadata(paths[0]) == {'task': name}
  for source in (tmp_path, paths, paths[0], str(paths[0])):
    convert_testing.assert_episodes_equal(il.from_webdataset(source),
                                          episodes)


def test_member_layout_of_one_shard(tmp_path):
  [path] = il.to_webdataset(convert_testing.NAMED_EPISODES['short-terminal'],
                            tmp_path)
  with tarfile.open(path) as tar:
    assert tar.getnames() == [
        '_metadata.meta.pickle', 'frame_000.obs.pickle',
        'frame_000.next_obs.pickle', 'frame_000.acts.pickle',
        'frame_000.rews.pickle', 'frame_000.dones.pickle',
        'frame_000.infos.pickle']
  assert os.listdir(tmp_path) == ['shard_000000.tar']  # no temporary files


def test_shards_hold_whole_episodes(tmp_path):
  episodes = convert_testing.NAMED_EPISODES['mixed-ends']
  kept = [e for e in episodes if len(e['steps']['is_last']) > 1]  # 2, 6, 1 rows
  paths = il.to_webdataset(episodes, tmp_path, frames_per_shard=2,
                           one_step='skip')
  assert [os.path.basename(p) for p in paths] == [
      'shard_000000.tar', 'shard_000001.tar', 'shard_000002.tar']
  assert [len(read_frames([p])) for p in paths] == [2, 6, 1]
  convert_testing.assert_episodes_equal(il.from_webdataset(tmp_path), kept)
  with pytest.raises(FileExistsError, match='already holds'):
    il.to_webdataset(episodes, tmp_path, one_step='skip')


def test_a_shard_that_fails_to_write_leaves_no_shard(tmp_path):
  # Shards were renamed into place one by one: a failure in the third left
  # the first two, and a retry then found "already holds *.tar shards".
  episodes = [dict(e) for e in convert_testing.NAMED_EPISODES['mixed-ends']]
  episodes[-1]['note'] = lambda: None  # Episode metadata not picklable.
  with pytest.raises((pickle.PicklingError, AttributeError)):
    il.to_webdataset(episodes, tmp_path, frames_per_shard=2, one_step='skip')
  assert os.listdir(tmp_path) == []


def test_empty_and_one_step_cases(tmp_path):
  with pytest.raises(ValueError, match='no episodes with rows'):
    il.to_webdataset([], tmp_path / 'a')
  with pytest.raises(convert.ConversionError) as error:
    il.to_webdataset(convert_testing.NAMED_EPISODES['one-step'], tmp_path / 'b')
  assert str(error.value) == (
      "<episodes>: episode 0, field 'is_last': has one step (only a final "
      "observation), so no row in a webdataset shard; pass one_step='skip' "
      'to leave such episodes out')
  with pytest.raises(FileNotFoundError, match='no \\*.tar shards'):
    il.from_webdataset(tmp_path)


@settings(max_examples=15, deadline=None)
@given(convert_testing.rlds_episodes(allow_one_step=False),
       st.integers(1, 6))
def test_round_trip_is_exact(episodes, frames_per_shard):
  import tempfile  # pylint: disable=g-import-not-at-top
  with tempfile.TemporaryDirectory() as out:
    il.to_webdataset(episodes, out, frames_per_shard=frames_per_shard)
    convert_testing.assert_episodes_equal(il.from_webdataset(out), episodes)


def write_shard(path, frames, metadata=None, tar_format=tarfile.PAX_FORMAT,
                prefix=''):
  """A shard written by hand (as il-representations' write_frames does)."""
  with tarfile.open(path, 'w', format=tar_format) as tar:
    members = [('_metadata.meta.pickle', pickle.dumps(metadata or {}))]
    for i, frame in enumerate(frames):
      for field, value in frame.items():
        payload = value if isinstance(value, bytes) else pickle.dumps(value)
        members.append((f'{prefix}frame_{i:03d}.{field}.pickle', payload))
    for name, payload in members:
      info = tarfile.TarInfo(name)
      info.size = len(payload)
      tar.addfile(info, io.BytesIO(payload))
  return str(path)


def frame(t, done, **extra):
  out = {'obs': np.full(2, t, np.float32),
         'next_obs': np.full(2, t + 1, np.float32),
         'acts': np.int64(t), 'rews': np.float32(t), 'dones': done,
         'infos': {}}
  out.update(extra)
  return out


# frames' (dones, infos) -> per episode (is_terminal[-1], discount).
SEMANTICS = {
    'done-is-termination': ([(False, {}), (True, {})],
                            [(True, [1., 0., 0.])]),
    'time-limit-info': ([(False, {}), (True, {'TimeLimit.truncated': True})],
                        [(False, [1., 1., 0.])]),
    'time-limit-false': ([(True, {'TimeLimit.truncated': False})],
                         [(True, [0., 0.])]),
    'two-episodes': ([(True, {'TimeLimit.truncated': True}), (True, {})],
                     [(False, [1., 0.]), (True, [0., 0.])]),
}


@pytest.mark.parametrize('rows, expected', SEMANTICS.values(),
                         ids=SEMANTICS.keys())
def test_end_semantics_table(rows, expected, tmp_path):
  path = write_shard(tmp_path / 'a.tar', [
      frame(t, done, infos=infos) for t, (done, infos) in enumerate(rows)])
  episodes = il.from_webdataset(path)
  assert [(bool(e['steps']['is_terminal'][-1]),
           e['steps']['discount'].tolist()) for e in episodes] == expected
  back = read_frames(il.to_webdataset(episodes, tmp_path / 'out'))
  assert [f['dones'] for f in back] == [done for done, _ in rows]
  assert [f['infos'].get('TimeLimit.truncated', False) for f in back] == [
      bool(infos.get('TimeLimit.truncated')) for _, infos in rows]


@pytest.mark.parametrize('tar_format, prefix', [
    (tarfile.PAX_FORMAT, ''), (tarfile.GNU_FORMAT, ''),
    (tarfile.PAX_FORMAT, 'd' * 120 + '/'), (tarfile.USTAR_FORMAT, 'sub/')],
                         ids=['pax', 'gnu', 'pax-long-names', 'ustar-dirs'])
def test_tar_formats_read_alike(tar_format, prefix, tmp_path):
  frames = [frame(0, False), frame(1, True), frame(2, True)]
  path = write_shard(tmp_path / 'a.tar', frames, tar_format=tar_format,
                     prefix=prefix)
  episodes = il.from_webdataset(path)
  assert [e['steps']['observation'][:, 0].tolist() for e in episodes] == [
      [0., 1., 2.], [2., 3.]]
  assert [e['steps']['action'].tolist() for e in episodes] == [[0, 1, 0],
                                                               [2, 0]]


def test_common_infos_become_step_fields(tmp_path):
  path = write_shard(tmp_path / 'a.tar', [
      frame(0, False, infos={'speed': np.float32(1.5), 'once': 1}),
      frame(1, True, infos={'speed': np.float32(2.5)})])
  [episode] = il.from_webdataset(path)
  np.testing.assert_array_equal(episode['steps']['speed'], [1.5, 2.5, 0.])
  assert 'once' not in episode['steps']
  [back] = il.from_webdataset(il.to_webdataset([episode], tmp_path / 'o'))
  convert_testing.assert_episodes_equal([back], [episode])


class Exploit:
  """Unpickling this runs a shell command that creates a file."""

  def __init__(self, path):
    self.path = path

  def __reduce__(self):
    return (os.system, (f'touch {shlex.quote(self.path)}',))


def test_malicious_pickle_is_refused_without_opt_in(tmp_path):
  marker = tmp_path / 'pwned'
  path = write_shard(tmp_path / 'evil.tar', [
      frame(0, False), frame(1, True, rews=pickle.dumps(Exploit(str(marker))))])
  with pytest.raises(convert.ConversionError) as error:
    il.from_webdataset(path)
  assert str(error.value) == (
      f"{path}:frame_001.rews.pickle: episode 0, field 'rews': refuses to "
      'load global posix.system: without allow_pickle=True only NumPy arrays '
      'and builtin values are unpickled (pass allow_pickle=True only for '
      'files you trust)')
  assert not marker.exists()
  il.from_webdataset(path, allow_pickle=True)  # explicit opt-in: trusted
  assert marker.exists()


def test_malicious_metadata_is_refused(tmp_path):
  marker = tmp_path / 'pwned'
  path = write_shard(tmp_path / 'evil.tar', [frame(0, True)],
                     metadata=Exploit(str(marker)))
  assert len(il.from_webdataset(path)) == 1  # metadata is not unpickled
  with pytest.raises(convert.ConversionError,
                     match='_metadata.meta.pickle: refuses to load global '
                           'posix.system'):
    il.read_shard_metadata(path)
  assert not marker.exists()


@pytest.mark.parametrize('protocol', [2, 4, 5])
def test_safe_unpickler_loads_arrays_and_builtins(protocol, tmp_path):
  value = {'array': np.arange(6, dtype=np.float32).reshape(2, 3),
           'scalar': np.int64(7), 'flag': np.bool_(True),
           'strings': np.array(['ab', 'c']), 'set': {1, 2},
           'frozen': frozenset([3]), 'complex': 1 + 2j, 'bytes': b'xy',
           'tuple': (1, 2.5, 'z'), 'bytearray': bytearray(b'q')}
  payload = pickle.dumps(value, protocol=protocol)
  path = write_shard(tmp_path / 'a.tar', [frame(0, True, infos=payload)])
  with tarfile.open(path) as tar:
    data = tar.extractfile('frame_000.infos.pickle').read()
  # pylint: disable-next=protected-access
  loaded = il._unpickle(data, False, {'source': path})
  assert sorted(loaded) == sorted(value)
  for key, want in value.items():
    got = loaded[key]
    assert type(got) is type(want), key
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def bad_shard(tmp_path, frames):
  return write_shard(tmp_path / 'bad.tar', frames)


BAD_INPUT = {
    'missing-acts': (
        lambda: [frame(0, False), {k: v for k, v in frame(1, True).items()
                                   if k != 'acts'}],
        "{path}: episode 0, field 'acts': is missing in frame frame_001; "
        'every frame needs obs, next_obs, acts, dones'),
    'shapes-disagree': (
        lambda: [frame(0, False), frame(1, True, obs=np.zeros(3))],
        "{path}: episode 0, field 'obs': has shape (3,) in frame frame_001; "
        'frame frame_000 has (2,)'),
    'dones-never-set-at-end': (
        lambda: [frame(0, True), frame(1, False)],
        "{path}: episode 1, field 'dones': is not set on the last row (1): "
        "rows 1..1 do not end an episode; pass repair='truncate' to end them "
        "as a truncated episode or repair='drop' to drop them"),
    'not-a-pickle': (
        lambda: [frame(0, True, rews=b'\x80\x04junk')],
        "{path}:frame_000.rews.pickle: episode 0, field 'rews': cannot be "
        'unpickled: '),
    'infos-not-a-dict': (
        lambda: [frame(0, True, infos=[1])],
        "{path}: episode 0, field 'infos': is a list in frame frame_000; "
        'expected a dict'),
    'dones-nan': (
        lambda: [frame(0, True), frame(1, False, dones=np.float64('nan'))],
        "{path}:frame_001.dones.pickle: episode 1, field 'dones': holds nan; "
        'a flag stored as numbers must be 0 or 1'),
    'truncated-half': (
        lambda: [frame(0, True, infos={'TimeLimit.truncated': 0.5})],
        "{path}: episode 0, field 'infos/TimeLimit.truncated': holds 0.5; a "
        'flag stored as numbers must be 0 or 1'),
}


@pytest.mark.parametrize('frames, message', BAD_INPUT.values(),
                         ids=BAD_INPUT.keys())
def test_bad_input_errors(frames, message, tmp_path):
  path = bad_shard(tmp_path, frames())
  with pytest.raises(convert.ConversionError) as error:
    il.from_webdataset(path)
  assert str(error.value).startswith(message.format(path=path))


def test_episode_spanning_shards(tmp_path):
  write_shard(tmp_path / 'a.tar', [frame(0, True), frame(1, False)])
  write_shard(tmp_path / 'b.tar', [frame(2, True)])
  episodes = il.from_webdataset(tmp_path)
  assert [e['steps']['observation'][:, 0].tolist() for e in episodes] == [
      [0., 1.], [1., 2., 3.]]
  with pytest.raises(convert.ConversionError) as error:
    il.from_webdataset([tmp_path / 'b.tar', tmp_path / 'a.tar'])
  assert str(error.value).startswith(
      f"{tmp_path / 'a.tar'}: episode 2, field 'dones': is not set on the "
      'last row (2)')
  with pytest.raises(ValueError, match='frames_per_shard=0'):
    il.to_webdataset(episodes, tmp_path / 'out', frames_per_shard=0)


def test_unreadable_tar_file(tmp_path):
  path = tmp_path / 'junk.tar'
  path.write_bytes(b'not a tar file' * 100)
  with pytest.raises(convert.ConversionError,
                     match=f'^{path}: is not a readable tar file: '):
    il.from_webdataset(path)
  good = write_shard(tmp_path / 'cut.tar', [frame(0, True), frame(1, True)])
  with open(good, 'rb') as file:
    head = file.read(3000)
  (tmp_path / 'cut.tar').write_bytes(head)  # truncated inside frame_001
  with pytest.raises(convert.ConversionError, match='cut.tar'):
    il.from_webdataset(tmp_path / 'cut.tar')


def test_repair_of_unfinished_shard(tmp_path):
  path = bad_shard(tmp_path, [frame(0, True), frame(1, False)])
  episodes = il.from_webdataset(path, repair='truncate')
  assert [bool(e['steps']['is_terminal'][-1]) for e in episodes] == [
      True, False]
  assert len(il.from_webdataset(path, repair='drop')) == 1
