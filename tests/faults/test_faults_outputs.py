"""Writers of whole outputs killed at every step of `rlds_lite.atomic_output`.

Real writer processes (forked from `fault_server`) of webdataset shards,
Minari and LeRobot datasets, chunk datasets, ``filter`` outputs and
``.npz`` files are SIGKILLed at each of ``OUTPUT_STEPS`` (through the
``RLDS_LITE_FAULT_KILL_AT`` hook) while creating or overwriting, and run two
at once. Each case asserts what the library's reader (and Minari's own, for
Minari) then finds: the old version or the new one, never a mix or a
partial one; that the next writer succeeds; and that nothing but the output
is left beside it.
"""

import os
import signal
import stat

import pytest

import output_jobs
from fault_server import ForkServer
from rlds_lite import atomic_output
from rlds_lite.tfds import publish

STEPS = atomic_output.OUTPUT_STEPS
PUBLISHED = STEPS.index('output_published')
WRITE = 'output_jobs:write'
# Which writers replace an existing output (and how), and which only create.
OVERWRITING = ('minari', 'lerobot', 'chunk')
CREATING = ('webdataset', 'filter', 'il', 'minari')


@pytest.fixture(scope='module')
def server(tmp_path_factory):
  fork_server = ForkServer(str(tmp_path_factory.mktemp('output_logs')))
  yield fork_server
  fork_server.close()


def _only_the_output(kind, parent, lock_file=False):
  """Nothing beside the output: no staging, set-aside (or lock) files."""
  out = output_jobs.target(kind, parent)
  names = sorted(n for n in os.listdir(os.path.dirname(out))
                 if n.startswith('.'))
  assert names == ([f'.{os.path.basename(out)}.lock'] if lock_file else []), (
      names)


def _minari_reads(parent, version):
  """Minari's own reader loads the dataset (its observations: version)."""
  import minari  # pylint: disable=g-import-not-at-top
  os.environ['MINARI_DATASETS_PATH'] = parent
  dataset = minari.load_dataset(output_jobs.MINARI_ID)
  episodes = list(dataset.iterate_episodes())
  assert len(episodes) == 2
  assert float(episodes[0].observations[0, 0]) == version


@pytest.mark.parametrize('step', STEPS)
@pytest.mark.parametrize('kind', OVERWRITING)
def test_overwrite_killed_at_every_step_leaves_old_or_new(server, tmp_path,
                                                          kind, step):
  parent = str(tmp_path)
  output_jobs.write(kind, parent, version=1)
  if kind in ('chunk', 'filter'):  # What they read, made here, not killed.
    output_jobs.source(parent, 2)
  result = server.run(WRITE, env={publish.FAULT_KILL_ENV: step}, kind=kind,
                      parent=parent, version=2, overwrite=True)
  assert result['signal'] == signal.SIGKILL, result['log']
  expected = 2 if STEPS.index(step) >= PUBLISHED else 1
  if step == 'output_set_aside':  # Between the renames: none, and a hint.
    out = output_jobs.target(kind, parent)
    assert output_jobs.read_version(kind, parent) is None
    assert 'its writer died while replacing it' in atomic_output.missing_hint(
        out)
    atomic_output.recover(out)  # What the next writer does first.
  assert output_jobs.read_version(kind, parent) == expected
  if kind == 'minari':
    _minari_reads(parent, expected)
  output_jobs.write(kind, parent, version=3, overwrite=True)
  assert output_jobs.read_version(kind, parent) == 3
  _only_the_output(kind, parent)


@pytest.mark.parametrize('step', [s for s in STEPS if s != 'output_set_aside'])
@pytest.mark.parametrize('kind', CREATING)
def test_create_killed_at_every_step_blocks_no_rerun(server, tmp_path, kind,
                                                     step):
  parent = str(tmp_path)
  if kind in ('chunk', 'filter'):  # What they read, made here, not killed.
    output_jobs.source(parent, 1)
  result = server.run(WRITE, env={publish.FAULT_KILL_ENV: step}, kind=kind,
                      parent=parent, version=1)
  assert result['signal'] == signal.SIGKILL, result['log']
  published = STEPS.index(step) >= PUBLISHED
  assert output_jobs.read_version(kind, parent) == (1 if published else None)
  if not published:
    output_jobs.write(kind, parent, version=2)
    assert output_jobs.read_version(kind, parent) == 2
  else:  # Refused before it takes the lock: the dead one's lock file
    # stays (until a writer of this target takes the lock).
    with pytest.raises(FileExistsError):
      output_jobs.write(kind, parent, version=2)
    assert output_jobs.read_version(kind, parent) == 1
  _only_the_output(kind, parent, lock_file=published)


@pytest.mark.parametrize('kind', ['webdataset', 'il', 'd4rl', 'filter'])
def test_two_writers_of_one_output_one_whole_result(server, tmp_path, kind):
  parent = str(tmp_path)
  if kind == 'filter':  # Sources first, so both writers only write.
    output_jobs.source(parent, 1), output_jobs.source(parent, 2)
  pids = [server.start(WRITE, kind=kind, parent=parent, version=v)
          for v in (1, 2)]
  results = [server.wait(pid) for pid in pids]
  assert sorted(r['exit'] for r in results) == [0, 1], results
  failed = next(r for r in results if r['exit'])
  assert 'FileExistsError' in failed['log'], failed['log']
  won = 1 + [r['exit'] for r in results].index(0)
  assert output_jobs.read_version(kind, parent) == won
  _only_the_output(kind, parent)


def test_outputs_follow_the_umask(tmp_path):
  """Directories 0755 and files 0644 under umask 022 (mkstemp gave 0600)."""
  # pylint: disable=g-import-not-at-top
  from rlds_lite.convert import d4rl, ted
  from rlds_lite.stats import cache
  old = os.umask(0o022)
  try:
    parent = str(tmp_path)
    for kind in ('webdataset', 'minari', 'il'):
      output_jobs.write(kind, parent, version=1)
    d4rl.to_d4rl(output_jobs.episodes(1), os.path.join(parent, 'd.h5'))
    ted.to_ted_h5(output_jobs.episodes(1), os.path.join(parent, 't.h5'))
    cache._write_atomically(os.path.join(parent, 'stats', 'k.json'), '{}')  # pylint: disable=protected-access
  finally:
    os.umask(old)
  modes = {}
  for root, dirs, names in os.walk(parent):
    for name in dirs + names:
      path = os.path.join(root, name)
      modes[os.path.relpath(path, parent)] = stat.S_IMODE(os.stat(path).st_mode)
  wrong = {p: oct(m) for p, m in modes.items()
           if m != (0o755 if os.path.isdir(os.path.join(parent, p)) else 0o644)}
  assert wrong == {}
  assert {'shards/shard_000000.tar', 'ns/toy-v0', 'ns/toy-v0/data/main_data.hdf5',
          'il.npz', 'd.h5', 't.h5', 'stats/k.json'} <= set(modes)


@pytest.mark.parametrize('kind', OVERWRITING + ('filter',))
def test_reader_of_a_target_set_aside_says_where_the_old_one_is(tmp_path,
                                                               kind):
  """A writer killed between its two renames: the reader's error says so."""
  # pylint: disable=g-import-not-at-top
  from rlds_lite import loading, random_access
  from rlds_lite.convert import files, lerobot
  parent = str(tmp_path)
  if kind == 'filter':
    output_jobs.source(parent, 1)
  output_jobs.write(kind, parent, version=1)
  out = output_jobs.target(kind, parent)
  aside = os.path.join(os.path.dirname(out),
                       f'.{os.path.basename(out)}.replaced-7-{"ab" * 16}')
  os.rename(out, aside)
  read = {'chunk': random_access.ChunkStorage,
          'filter': loading.load,
          'minari': lambda path: files.read_episodes('minari', path),
          'lerobot': lambda path: list(lerobot.from_lerobot(path))}[kind]
  with pytest.raises(FileNotFoundError) as raised:
    read(out)
  assert (f'its writer died while replacing it: the old one is whole at '
          f'{aside} (the next writer of {out} puts it back') in str(
              raised.value)


@pytest.mark.parametrize('command', ['stats', 'view', 'validate'])
def test_commands_say_where_a_set_aside_dataset_is(tmp_path, capsys, command):
  from rlds_lite import cli  # pylint: disable=g-import-not-at-top
  parent = str(tmp_path)
  output_jobs.source(parent, 1)
  output_jobs.write('filter', parent, version=1)
  out = output_jobs.target('filter', parent)
  aside = os.path.join(parent, f'.filtered.replaced-7-{"ab" * 16}')
  os.rename(out, aside)
  assert cli.main([command, out]) == 2
  assert capsys.readouterr().err == (
      f"rlds-lite {command}: dataset directory '{out}' does not exist; its "
      f'writer died while replacing it: the old one is whole at {aside} (the '
      f'next writer of {out} puts it back; or rename it yourself).\n')
