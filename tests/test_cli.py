"""The rlds-lite command line, run as a user runs it (a subprocess).

Instant (no TensorFlow import for --help/--version), quiet (no TensorFlow log
lines unless --verbose), --json everywhere, one line and exit 2 on bad input.
"""

import importlib
import json
import os
import re
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import rlds_lite
from rlds_lite import cli
from rlds_lite import commands
from rlds_lite.convert import files

TF_LOG_LINE = re.compile(
    r'^[IWEF]\d{4} |absl::InitializeLog|oneDNN|cuda|rebuild TensorFlow', re.M)
"""A line TensorFlow's C++ runtime logs (abseil's format and known texts)."""


def _user_env():
  """The environment of a user's shell: no TF log settings of the tests."""
  env = dict(os.environ)
  for name in ('TF_CPP_MIN_LOG_LEVEL', 'GLOG_minloglevel'):
    env.pop(name, None)
  return env


def _command(*args):
  return [sys.executable, '-m', 'rlds_lite.cli', *args]


def _run(*args):
  return subprocess.run(_command(*args), capture_output=True, text=True,
                        timeout=600, check=False, env=_user_env())


def _cameras_episodes(num_episodes=3, length=6):
  """Episodes with two cameras (16x12 and 8x8 uint8) and a discrete action."""
  rng = np.random.default_rng(0)
  index = np.arange(length)
  return [{'steps': {
      'observation': {
          'image': rng.integers(0, 256, (length, 16, 12, 3), np.uint8),
          'wrist': rng.integers(0, 256, (length, 8, 8, 3), np.uint8),
          'state': rng.normal(size=(length, 2)).astype(np.float32)},
      'action': np.where(index == length - 1, 0,   # Invalid on the last step.
                         rng.integers(0, 3, length)).astype(np.int64),
      'reward': np.where(index == length - 1, 0, 1).astype(np.float32),
      'discount': np.where(index == length - 1, 0, 1).astype(np.float32),
      'is_first': index == 0, 'is_last': index == length - 1,
      'is_terminal': index == length - 1}} for _ in range(num_episodes)]


@pytest.fixture(name='cameras', scope='module')
def _cameras(tmp_path_factory):
  """A small RLDS dataset with two cameras: (path, episodes)."""
  episodes = _cameras_episodes()
  path = files.write_episodes(
      'rlds', episodes, tmp_path_factory.mktemp('cli') / 'cameras')
  return path, episodes


# --- Instant: no TensorFlow for --help and --version. ---

INSTANT = ([['--help'], ['--version'], ['version'], ['version', '--json']] +
           [[name, '--help'] for name in commands.COMMANDS])

_TIME_IN_PROCESS = textwrap.dedent('''
    import contextlib, io, json, sys, time
    from rlds_lite import cli
    times = {}
    for argv in json.loads(sys.argv[1]):
      start = time.perf_counter()
      with contextlib.redirect_stdout(io.StringIO()):
        try:
          cli.main(argv)
        except SystemExit as e:
          assert e.code == 0, (argv, e.code)
      times[' '.join(argv)] = time.perf_counter() - start
    heavy = ('tensorflow', 'tensorflow_datasets', 'keras', 'matplotlib',
             'h5py', 'jax', 'absl')
    print(json.dumps({'times': times, 'heavy': sorted(
        m for m in sys.modules if m.split('.')[0] in heavy)}))
''')


def test_help_and_version_import_no_tensorflow():
  result = subprocess.run(
      [sys.executable, '-c', _TIME_IN_PROCESS, json.dumps(INSTANT)],
      capture_output=True, text=True, timeout=120, check=False,
      env=_user_env())
  assert result.returncode == 0, result.stderr[-2000:]
  measured = json.loads(result.stdout)
  assert measured['heavy'] == []  # Not even absl: registration is light.
  assert sorted(measured['times']) == sorted(' '.join(a) for a in INSTANT)
  slow = {k: t for k, t in measured['times'].items() if t > 2}
  assert not slow  # Each takes a few milliseconds here.


@pytest.mark.parametrize('args, stdout', [
    (['--help'], 'usage: rlds-lite [-h] [--version] [--verbose] COMMAND ...'),
    (['--version'], f'rlds_lite {rlds_lite.__version__}'),
], ids=['help', 'version'])
def test_help_and_version_answer_in_under_2_seconds(args, stdout):
  start = time.perf_counter()
  result = _run(*args)
  seconds = time.perf_counter() - start
  print(f'rlds-lite {" ".join(args)}: {seconds:.3f} s')  # pytest -s shows it.
  assert result.returncode == 0
  assert result.stdout.splitlines()[0] == stdout
  assert result.stderr == ''
  assert seconds < 2  # About 0.05 s here; room for a busy 2-core CI.


def test_version(capsys):
  assert cli.main(['version']) == 0
  assert capsys.readouterr().out == f'rlds_lite {rlds_lite.__version__}\n'
  assert cli.main(['version', '--json']) == 0
  assert json.loads(capsys.readouterr().out) == {
      'version': rlds_lite.__version__}
  with pytest.raises(SystemExit) as exit_info:
    cli.main(['--version'])
  assert exit_info.value.code == 0
  assert capsys.readouterr().out == f'rlds_lite {rlds_lite.__version__}\n'


def test_the_package_imports_its_names_on_first_use():
  # `import rlds_lite` is light (see above); every public name still resolves
  # to its module's own object, as when __init__ imported them eagerly.
  defined_in = rlds_lite._NAMES  # pylint: disable=protected-access
  for name in rlds_lite.__all__:
    value = getattr(rlds_lite, name)
    if name in defined_in:
      module = importlib.import_module(f'rlds_lite.{defined_in[name]}')
      assert value is getattr(module, name), name
    elif name != '__version__':
      assert value is importlib.import_module(f'rlds_lite.{name}'), name
  assert rlds_lite.tfds.__name__ == 'rlds_lite.tfds'  # Any submodule.
  with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
    rlds_lite.no_such_name  # pylint: disable=pointless-statement


# --- Quiet: no TensorFlow log lines unless --verbose; --json everywhere. ---

QUIET_RUNS = {
    # command: (arguments, keys its --json output has)
    'chunk': (['chunk', '{data}', '--out', '{tmp}/chunks', '--json'],
              {'path', 'chunk_steps', 'splits'}),
    'convert': (['convert', '--from', 'rlds', '--to', 'ted', '{data}',
                 '{tmp}/x.h5', '--json'],
                {'episodes', 'steps', 'from', 'source', 'to', 'target'}),
    'episodes': (['episodes', '{data}', '--json'],
                 {'index', 'length', 'shard', 'record'}),
    'filter': (['filter', '{data}', '--where', 'length > 0', '--out',
                '{tmp}/filtered', '--json'],
               {'path', 'splits', 'source_episodes'}),
    'merge': (['merge', '{data}', '{data}', '--out', '{tmp}/merged', '--json'],
              {'path', 'splits', 'source_episodes'}),
    'inspect': (['inspect', '{data}', '--json'],
                {'name', 'version', 'episodes', 'steps', 'splits',
                 'step_features'}),
    'stats': (['stats', '{data}', '--no-cache', '--json', '--plot',
               '{tmp}/stats.png'], {'num_episodes', 'num_steps', 'fields'}),
    'validate': (['validate', '{data}', '--json'],
                 {'ok', 'complete', 'episodes', 'problems'}),
    'version': (['version', '--json'], {'version'}),
    'video': (['video', '{data}', '--out', '{tmp}/v.gif', '--json'],
              {'out', 'frames', 'height', 'width', 'fps', 'keys', 'scale'}),
}
"""One run of each command (demo: test_demo_records_builds_trains_...)."""


def test_every_command_has_a_quiet_run():
  # demo: test_demo_records_builds_trains_and_reports; view serves until
  # Ctrl-C: tests/view/test_view_cli.py::test_serves_until_interrupted; serve
  # until SIGTERM: tests/pipeline/test_service_processes.py; record:
  # tests/record/test_browser_record.py runs it (and --build).
  # build: tests/test_beam_runs.py::test_cli_build_on_beam_equals_the_api_build.
  assert set(QUIET_RUNS) | {'demo', 'view', 'build', 'serve', 'record'} == set(commands.COMMANDS)


@pytest.fixture(name='quiet_runs', scope='module')
def _quiet_runs(cameras, tmp_path_factory):
  """Every command of QUIET_RUNS, and inspect --verbose, run together."""
  tmp = tmp_path_factory.mktemp('quiet')
  argvs = {name: [a.format(data=cameras[0], tmp=tmp) for a in args]
           for name, (args, _) in QUIET_RUNS.items()}
  argvs['verbose'] = ['--verbose', 'inspect', cameras[0], '--no-progress']
  procs = {name: subprocess.Popen(
      _command(*argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
      text=True, env=_user_env()) for name, argv in argvs.items()}
  results = {}
  for name, proc in procs.items():
    out, err = proc.communicate(timeout=600)
    results[name] = (proc.returncode, out, err)
  return results


@pytest.mark.parametrize('name', sorted(QUIET_RUNS))
def test_commands_print_no_tensorflow_logs_and_json(quiet_runs, name):
  code, out, err = quiet_runs[name]
  assert code == 0, err[-2000:]
  assert TF_LOG_LINE.findall(err) == []
  # Nothing else either (no progress bar off a terminal); stats --json names
  # its plot there, outside the JSON.
  assert [line for line in err.splitlines()
          if not line.startswith('plot: ')] == []
  printed = json.loads(out)
  if isinstance(printed, list):  # episodes --json: one object per episode.
    assert printed
    printed = printed[0]
  assert QUIET_RUNS[name][1] <= set(printed)


def test_verbose_keeps_tensorflow_logs(quiet_runs):
  code, out, err = quiet_runs['verbose']
  assert code == 0, err[-2000:]
  assert out.startswith('cameras 1.0.0')
  assert TF_LOG_LINE.findall(err)  # TensorFlow's own start-up lines.


def test_verbose_is_accepted_after_the_command_too():
  parser = cli._parser()  # pylint: disable=protected-access
  assert parser.parse_args(['--verbose', 'version']).verbose
  assert parser.parse_args(['version', '--verbose']).verbose
  assert not parser.parse_args(['version']).verbose


@pytest.mark.parametrize('name', commands.COMMANDS)
def test_every_command_has_json_and_no_progress(name, capsys):
  with pytest.raises(SystemExit):
    cli.main([name, '--help'])
  text = capsys.readouterr().out
  assert '--json' in text
  if name not in ('version', 'serve'):  # Nothing to show progress of.
    assert '--no-progress' in text


# --- The demo, as a subprocess: quiet, --json. ---

def test_demo_records_builds_trains_and_reports(tmp_path):
  out_dir = tmp_path / 'work'
  result = _run('demo', '--out', str(out_dir), '--episodes', '40',
                '--epochs', '3', '--eval-episodes', '20', '--seed', '1',
                '--json')
  assert result.returncode == 0, result.stderr[-3000:]
  assert TF_LOG_LINE.findall(result.stderr) == []
  err = result.stderr  # With --json the progress lines go to stderr.
  assert re.search(r'\[1/6\] recorded 40 episodes \(400 EnvLogger timesteps\)',
                   err)
  assert "[2/6] built TFDS dataset 'catch_demo'" in err
  assert '[3/6] tfds.load: 40 episodes, 400 RLDS steps, 40 terminal' in err
  assert '360 (observation, action) pairs' in err
  assert 'Downloading and preparing' not in err  # TFDS's chatter is hidden.
  assert 'episodes [' not in err  # No progress bar off a terminal.
  rows = {m.group(1): (int(m.group(2)), float(m.group(3))) for m in re.finditer(
      r'^(BC \(Keras MLP\)|random|expert) +(\d+) +(-?[\d.]+)', err, re.M)}
  assert rows['expert'] == (20, 1.0)
  assert rows['BC (Keras MLP)'][0] == rows['random'][0] == 20
  printed = json.loads(result.stdout)
  with open(out_dir / 'summary.json') as f:
    summary = json.load(f)
  assert printed == summary
  assert summary['episodes'] == 40
  assert summary['mean_return']['expert'] == 1.0
  assert (out_dir / 'demo.png').read_bytes()[:4] == b'\x89PNG'
  assert f'plot: {out_dir / "demo.png"}' in err


# --- Bad input: one line, exit 2. ---

@pytest.mark.parametrize('args, message', [
    (['--episodes', '1'], '--episodes must be at least 2'),
    (['--epochs', '0'], '--epochs must be at least 1'),
    (['--eval-episodes', '0'], '--eval-episodes must be at least 1'),
    (['--epsilon', '1.5'], '--epsilon must be between 0 and 1'),
], ids=['one-episode', 'no-epochs', 'no-eval-episodes', 'epsilon-above-one'])
def test_bad_demo_arguments_exit_non_zero_with_a_message(tmp_path, capsys,
                                                         args, message):
  # In-process (argument checks come before any work); one subprocess below.
  assert cli.main(['demo', '--out', str(tmp_path / 'out'), *args]) == 2
  assert capsys.readouterr().err == f'rlds-lite demo: {message}.\n'
  assert not (tmp_path / 'out').exists()


_COMMANDS_CHOICE = ', '.join(repr(name) for name in commands.COMMANDS)


@pytest.mark.parametrize('args, line', [
    (['no-such-command'], "rlds-lite: argument COMMAND: invalid choice: "
     f"'no-such-command' (choose from {_COMMANDS_CHOICE}) (see rlds-lite "
     '--help)'),
    ([], 'rlds-lite: the following arguments are required: COMMAND (see '
     'rlds-lite --help)'),
    (['demo', '--env', 'reach'], "rlds-lite demo: argument --env: invalid "
     "choice: 'reach' (choose from 'catch', 'catch_pixels') (see rlds-lite demo "
     '--help)'),
    (['demo', '--episodes', 'many'], 'rlds-lite demo: argument --episodes: '
     "invalid int value: 'many' (see rlds-lite demo --help)"),
    (['video', 'p', '--episode', 'two', '--out', 'v.gif'],
     "rlds-lite video: argument --episode: invalid int value: 'two' (see "
     'rlds-lite video --help)'),
    (['video', 'p'], 'rlds-lite video: the following arguments are required: '
     '--out (see rlds-lite video --help)'),
    (['inspect'], 'rlds-lite inspect: the following arguments are required: '
     'PATH (see rlds-lite inspect --help)'),
    (['inspect', 'p', '--bogus'], 'rlds-lite inspect: unrecognized arguments: '
     '--bogus (see rlds-lite inspect --help)'),
    (['validate', 'p', '--last-step', 'maybe'], 'rlds-lite validate: argument '
     "--last-step: invalid choice: 'maybe' (choose from 'invalid', 'valid') "
     '(see rlds-lite validate --help)'),
], ids=['unknown-command', 'no-command', 'unknown-environment',
        'non-integer-episodes', 'non-integer-episode', 'missing-out',
        'missing-path', 'unknown-flag', 'unknown-last-step'])
def test_unusable_command_lines_are_one_line_and_exit_2(capsys, args, line):
  # argparse printed its usage block first (2-7 lines) and named the
  # top-level parser for an unknown flag of a command.
  with pytest.raises(SystemExit) as exit_info:
    cli.main(args)
  assert exit_info.value.code == 2
  assert capsys.readouterr() == ('', line + '\n')


def test_bad_arguments_exit_non_zero_as_a_subprocess(tmp_path):
  a_file = tmp_path / 'a_file'
  a_file.write_text('')
  start = time.perf_counter()
  result = _run('demo', '--out', str(a_file))
  assert time.perf_counter() - start < 2  # Checked before TensorFlow loads.
  assert result.returncode == 2
  assert result.stderr == (
      f"rlds-lite demo: --out '{a_file}' is a file; give a directory.\n")
  assert a_file.read_text() == ''
  start = time.perf_counter()
  result = _run('episodes', str(tmp_path), '--limit', 'ten')
  assert time.perf_counter() - start < 2  # argparse: no TensorFlow.
  assert (result.returncode, result.stdout, result.stderr) == (
      2, '', "rlds-lite episodes: argument --limit: invalid int value: 'ten' "
      '(see rlds-lite episodes --help)\n')


_MISSING = '/no/such/rlds-lite-dataset'
_IN_HOME = '~/no-such-rlds-lite-dataset'

_RUN_IN_PROCESS = textwrap.dedent('''
    import contextlib, io, json, sys
    from rlds_lite import cli
    results = []
    for argv in json.loads(sys.argv[1]):
      err = io.StringIO()
      with contextlib.redirect_stderr(err):
        try:
          status = cli.main(argv)
        except SystemExit as e:
          status = e.code
      results.append([status, err.getvalue()])
    print(json.dumps({'results': results, 'tensorflow': sorted(
        m for m in sys.modules if m.split('.')[0] == 'tensorflow')}))
''')

_TYPOS = {  # argv -> stderr; each answered before TensorFlow is imported.
    'validate': (['validate', _MISSING],
                 f"validate: dataset directory '{_MISSING}' does not exist."),
    'inspect': (['inspect', _MISSING],
                f"inspect: dataset directory '{_MISSING}' does not exist."),
    'stats': (['stats', _MISSING],
              f"stats: dataset directory '{_MISSING}' does not exist."),
    'episodes': (['episodes', _MISSING, '--where', 'length > 2'],
                 f"episodes: dataset directory '{_MISSING}' does not exist."),
    'video': (['video', _MISSING, '--out', '{tmp}/v.gif'],
              f"video: dataset directory '{_MISSING}' does not exist."),
    'filter': (['filter', _MISSING, '--out', '{tmp}/out'],
               f"filter: dataset directory '{_MISSING}' does not exist."),
    'merge': (['merge', _MISSING, '{tmp}', '--out', '{tmp}/out'],
              f"merge: dataset directory '{_MISSING}' does not exist."),
    'chunk': (['chunk', _MISSING],
              f"chunk: dataset directory '{_MISSING}' does not exist."),
    'view': (['view', _MISSING, '--port', '0'],
             f"view: dataset directory '{_MISSING}' does not exist."),
    'convert': (['convert', '--from', 'd4rl', '--to', 'ted', _MISSING,
                 '{tmp}/out.h5'],
                f'convert: {_MISSING}: no such file or directory'),
    'convert-rlds': (['convert', '--from', 'rlds', '--to', 'minari', _MISSING,
                      '{tmp}/out'],
                     f'convert: {_MISSING}: no such file or directory'),
    'home-validate': (['validate', _IN_HOME], "validate: dataset directory "
                      f"'{os.path.expanduser(_IN_HOME)}' does not exist."),
    'home-stats': (['stats', _IN_HOME],  # stats and view name it as given.
                   f"stats: dataset directory '{_IN_HOME}' does not exist."),
    'relative-view': (['view', 'no/such'],
                      "view: dataset directory 'no/such' does not exist."),
    'limit-first': (['episodes', _MISSING, '--limit', '-1'],
                    'episodes: --limit must be at least 0.'),
    'chunk-steps': (['chunk', _MISSING, '--chunk-steps',
                     '99999999999999999999'], 'chunk: argument --chunk-steps: '
                    '99999999999999999999 is out of range '
                    '(-2147483647..2147483647) (see rlds-lite chunk --help)'),
    'negative-episode': (['video', _MISSING, '--out', 'v.gif', '--episode',
                          '-1' + '0' * 12], 'video: argument --episode: '
                         '-1000000000000 is out of range '
                         '(-2147483647..2147483647) (see rlds-lite video '
                         '--help)'),
    'huge-seed': (['filter', _MISSING, '--out', 'x', '--seed', '9' * 19],
                  'filter: argument --seed: 9999999999999999999 is out of '
                  'range (-9223372036854775807..9223372036854775807) (see '
                  'rlds-lite filter --help)'),
    'digits-beyond-python': (
        ['validate', _MISSING, '--max-problems', '9' * 5000],
        f"validate: argument --max-problems: invalid int value: '{'9' * 5000}' "
        '(see rlds-lite validate --help)'),
}


@pytest.fixture(name='typo_runs', scope='module')
def _typo_runs(tmp_path_factory):
  """Every `_TYPOS` command line run in one fresh interpreter."""
  tmp = str(tmp_path_factory.mktemp('typos'))
  argvs = [[a.format(tmp=tmp) for a in argv] for argv, _ in _TYPOS.values()]
  result = subprocess.run(
      [sys.executable, '-c', _RUN_IN_PROCESS, json.dumps(argvs)], cwd=tmp,
      capture_output=True, text=True, timeout=120, check=False,
      env=_user_env())
  assert result.returncode == 0, result.stderr[-2000:]
  measured = json.loads(result.stdout)
  assert sorted(os.listdir(tmp)) == []  # Nothing written.
  return dict(zip(_TYPOS, measured['results'])), measured['tensorflow']


@pytest.mark.parametrize('case', list(_TYPOS))
def test_typos_answer_in_one_line_without_tensorflow(typo_runs, case):
  results, tensorflow = typo_runs
  assert results[case] == [2, f'rlds-lite {_TYPOS[case][1]}\n']
  assert tensorflow == []  # As fast as --help: no 9 s TensorFlow import.


def _minari_round_trip(tmp, source):
  """--to minari writes a root; --from minari reads it, and back."""
  root = tmp / 'minari_root'
  yield ['convert', '--from', 'rlds', '--to', 'minari', source, str(root),
         '--dataset-id', 'test/cams-v0']
  yield ['convert', '--from', 'minari', '--to', 'rlds', str(root),
         str(tmp / 'from_root')]
  # The dataset's own directory (what --from minari reads) as a target.
  yield ['convert', '--from', 'minari', '--to', 'minari',
         str(root / 'test' / 'cams-v0'), str(tmp / 'copy' / 'test' / 'cams-v0'),
         '--dataset-id', 'test/cams-v0']
  yield ['convert', '--from', 'minari', '--to', 'minari', str(tmp / 'copy'),
         str(tmp / 'named' / 'cams-v1')]  # The id taken from the target.
  yield ['convert', '--from', 'minari', '--to', 'rlds', str(tmp / 'named'),
         str(tmp / 'back')]


def test_convert_from_minari_reads_what_to_minari_wrote(cameras, tmp_path,
                                                        capsys):
  source, episodes = cameras
  for argv in _minari_round_trip(tmp_path, source):
    assert cli.main([*argv, '--no-progress']) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith('converted 3 episodes (18 '
                                              'steps): '), argv
  assert (tmp_path / 'copy' / 'test' / 'cams-v0' / 'data' /
          'main_data.hdf5').is_file()
  assert (tmp_path / 'named' / 'cams-v1' / 'data' / 'main_data.hdf5').is_file()
  back = list(files.read_episodes('rlds', str(tmp_path / 'back')))
  np.testing.assert_array_equal(
      back[2]['steps']['observation']['image'],
      episodes[2]['steps']['observation']['image'])


@pytest.mark.parametrize('argv, message', [
    (['demo', '--out', '{file}'], "rlds-lite demo: --out '{file}' is a file; "
     'give a directory.'),
    (['demo', '--out', '{file}/sub'], "rlds-lite demo: --out '{file}/sub': "
     "'{file}' is a file, not a directory."),
    (['validate', '{data}', '--episodes', '0'],
     'rlds-lite validate: --episodes must be at least 1.'),
    (['validate', '{data}', '--episodes', '-3'],
     'rlds-lite validate: --episodes must be at least 1.'),
    (['convert', '--from', 'rlds', '--to', 'd4rl', '{data}',
      '{tmp}/missing/x.hdf5'], 'rlds-lite convert: {tmp}/missing/x.hdf5: '
     'its directory {tmp}/missing does not exist'),
    (['convert', '--from', 'rlds', '--to', 'alf', '{data}', '{file}/x.npz'],
     'rlds-lite convert: {file}/x.npz: its directory {file} is not a '
     'directory'),
    (['convert', '--from', 'alf', '--to', 'rlds', '{file}', '{tmp}/out'],
     'rlds-lite convert: {file}: is not a .npz file (a zip archive of .npy '
     'arrays, as numpy.savez writes)'),
    (['convert', '--from', 'minari', '--to', 'rlds', '{two_datasets}',
      '{tmp}/out'], "rlds-lite convert: {two_datasets}: a Minari root with 2 "
     "datasets (a-v0, b/c-v0); give one dataset's directory"),
    (['video', '{data}', '--out', '{tmp}/v.gif', '--scale', '0'],
     'rlds-lite video: --scale must be at least 1, got 0.'),
    (['video', '{data}', '--out', '{tmp}/v.gif', '--fps', '0'],
     'rlds-lite video: --fps must be positive, got 0.'),
    (['video', '{data}', '--out', '{tmp}/v.gif', '--fps', 'nan'],
     'rlds-lite video: --fps must be positive, got nan.'),
    (['video', '{data}', '--out', '{tmp}/v.txt'],
     "rlds-lite video: --out {tmp}/v.txt: unknown video format '.txt' (use "
     '.gif or .mp4).'),
    (['video', '{data}', '--out', '{file}/v.gif'],
     'rlds-lite video: --out: {file}/v.gif: its directory {file} is not a '
     'directory'),
    (['chunk', '{data}', '--out', '{data_dir}', '--overwrite'],
     'rlds-lite chunk: {data_dir} holds the source {data}; overwriting it '
     'would delete the source. Choose an output directory for the new chunk '
     'dataset itself.'),
    (['chunk', '{data}', '--out', '{data}/chunks'],
     'rlds-lite chunk: {data}/chunks is inside the source {data}; writing '
     'there would change the source dataset. Choose an output outside it.'),
    (['chunk', '{data}', '--out', '{data}', '--overwrite'],
     'rlds-lite chunk: {data} is the source {data}; writing there would '
     'destroy it. Choose another output.'),
], ids=['demo-out-is-a-file', 'demo-out-under-a-file', 'validate-0-episodes',
        'validate-negative-episodes', 'd4rl-into-a-missing-directory',
        'alf-into-a-file', 'alf-from-a-text-file', 'minari-root-of-two',
        'video-scale-0', 'video-fps-0', 'video-fps-nan', 'video-unknown-format',
        'video-under-a-file', 'chunk-over-the-data-dir',
        'chunk-into-the-source', 'chunk-over-the-source'])
def test_bad_input_is_one_line_and_exit_2(cameras, tmp_path, capsys, argv,
                                          message):
  a_file = tmp_path / 'a_file.txt'
  a_file.write_text('not a dataset\n')
  two = tmp_path / 'two'
  for dataset in ('a-v0', 'b/c-v0'):
    (two / dataset / 'data').mkdir(parents=True)
    (two / dataset / 'data' / 'main_data.hdf5').write_bytes(b'')
  data_dir = os.path.dirname(os.path.dirname(cameras[0]))
  before = sorted(os.listdir(data_dir))
  in_the_source = sorted(os.listdir(cameras[0]))
  fill = lambda s: s.format(data=cameras[0], tmp=tmp_path, file=a_file,
                            two_datasets=two, data_dir=data_dir)
  assert cli.main([fill(a) for a in argv]) == 2
  assert sorted(os.listdir(data_dir)) == before
  assert sorted(os.listdir(cameras[0])) == in_the_source
  out, err = capsys.readouterr()
  assert (out, err) == ('', fill(message) + '\n')
  assert sorted(p.name for p in tmp_path.iterdir()) == ['a_file.txt', 'two']


@pytest.fixture(name='chunks', scope='module')
def _chunks(cameras, tmp_path_factory):
  """The chunk dataset (rlds_lite.random_access) of ``cameras``: its path."""
  from rlds_lite import random_access  # pylint: disable=g-import-not-at-top
  return random_access.convert(
      cameras[0], str(tmp_path_factory.mktemp('chunks') / 'cameras_chunks'),
      progress=False)


@pytest.mark.parametrize('argv', [
    ['episodes', '{chunks}', '--no-cache'],
    ['view', '{chunks}'],
    ['chunk', '{chunks}', '--out', '{tmp}/again'],
    ['inspect', '{chunks}'],
    ['validate', '{chunks}'],
    ['video', '{chunks}', '--out', '{tmp}/v.gif'],
], ids=['episodes', 'view', 'chunk', 'inspect', 'validate', 'video'])
def test_a_chunk_dataset_is_named_as_one(cameras, chunks, tmp_path, capsys,
                                         argv):
  # It was "is not an RLDS dataset ..." with the whole FeaturesDict: one
  # line of 684 characters.
  fill = lambda s: s.format(chunks=chunks, tmp=tmp_path)
  assert cli.main([fill(a) for a in argv] + ['--no-progress']) == 2
  assert capsys.readouterr() == ('', (
      f'rlds-lite {argv[0]}: {chunks} is a chunk dataset '
      f'(rlds_lite.random_access, converted from {cameras[0]}); pass its '
      'source, or read it with rlds_lite.random_access.\n'))
  assert os.listdir(tmp_path) == []


def test_chunk_over_a_chunk_dataset_names_the_flag(cameras, chunks, capsys):
  assert cli.main(['chunk', cameras[0], '--out', chunks,
                   '--no-progress']) == 2
  assert capsys.readouterr() == ('', (
      f"rlds-lite chunk: '{chunks}' already exists; pass --overwrite to "
      'replace it.\n'))
