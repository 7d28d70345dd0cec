"""Beam on two worker processes: builds, statistics and the catalog equal the single-process ones; options checked."""

import functools
import json
import operator
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import rlds_lite
from rlds_lite import beam_runs
from rlds_lite import cli
from rlds_lite import catalog
from rlds_lite import stats
from rlds_lite import synthetic
from rlds_lite.nest_paths import flatten_with_paths
from rlds_lite.beam_runs import Beam
from rlds_lite.tfds import build_from_envlogger
from rlds_lite.tfds import episode_writer
from rlds_lite.tfds import FileOptions
from rlds_lite.tfds import RLDSBuilder
from rlds_lite.tfds import RLDSConfig

TWO_WORKERS = Beam.direct(2)
IN_PROCESS = Beam.direct(1, 'in_memory')


@pytest.fixture(name='recordings', scope='module')
def _recordings(tmp_path_factory):
  root = tmp_path_factory.mktemp('logs')
  for seed, episodes in enumerate((3, 2, 1, 2)):  # Recordings are work items.
    synthetic.catch_recording(root / f'r{seed}', num_episodes=episodes,
                              seed=seed)
  return str(root)


@pytest.fixture(name='builds', scope='module')
def _builds(recordings, tmp_path_factory):
  data_dir = tmp_path_factory.mktemp('tfds')
  plain = build_from_envlogger(recordings, name='plain', data_dir=data_dir)
  beamed = build_from_envlogger(recordings, name='two_workers',
                                data_dir=data_dir, beam=TWO_WORKERS)
  return plain, beamed


@pytest.fixture(name='sharded', scope='module')
def _sharded(tmp_path_factory):
  """Episodes of many lengths (one-step too), 3 to a shard file: 5 shards."""
  return episode_writer.write_dataset(
      synthetic.episodes(13, 1, 40, seed=3), tmp_path_factory.mktemp('data'),
      'sharded', options=FileOptions(max_episodes_per_file=3))


def _dense(path):
  return list(rlds_lite.load(path, dense=True).as_numpy_iterator())


# --- Two worker processes. ---


def test_two_workers_are_two_processes():
  pids = beam_runs.map_merge(TWO_WORKERS, range(4),
                             lambda _: frozenset([os.getpid()]),
                             operator.or_, 'Pids')[0]
  assert len(pids) == 2 and os.getpid() not in pids


def _assert_same_episodes(expected_path, path):
  """The datasets hold the same episodes, in order, field by field."""
  expected, episodes = _dense(expected_path), _dense(path)
  # In key order: by recording, then its own episode ids.
  assert [int(e['episode_id']) for e in episodes] == [
      int(e['episode_id']) for e in expected] == [0, 1, 2, 0, 1, 0, 0, 1]
  for a, b in zip(expected, episodes, strict=True):
    a, b = dict(flatten_with_paths(a)), dict(flatten_with_paths(b))
    assert sorted(a) == sorted(b) == [
        'episode_id', 'steps/action', 'steps/discount', 'steps/is_first',
        'steps/is_last', 'steps/is_terminal', 'steps/observation',
        'steps/reward']
    for path in a:
      np.testing.assert_array_equal(a[path], b[path], err_msg=path)


def test_two_worker_build_equals_single_process_build_field_by_field(builds):
  plain, beamed = builds
  _assert_same_episodes(plain, beamed)
  infos = [rlds_lite.open(p).builder.info for p in (plain, beamed)]
  assert infos[0].features.to_json() == infos[1].features.to_json()


def _ranks_within(values, quantiles, qs, error):
  """Each quantile's rank in ``values`` is within ``error`` of its ``q``."""
  values = np.sort(values, axis=0)
  n = len(values)
  for q, estimate in zip(qs, quantiles):
    below = (values < estimate).sum(axis=0) / n
    at_or_below = (values <= estimate).sum(axis=0) / n
    assert np.all(below <= q + error + 1e-12), (q, below)
    assert np.all(at_or_below >= q - error - 1e-12), (q, at_or_below)


def test_stats_on_two_workers_equal_single_process(sharded):
  single = stats.compute(sharded, cache=False, progress=False)
  beamed = stats.compute(sharded, cache=False, progress=False,
                         beam=TWO_WORKERS)
  assert beamed.source == single.source
  assert (beamed.num_episodes, beamed.num_steps, beamed.num_terminated,
          beamed.num_truncated) == (single.num_episodes, single.num_steps,
                                    single.num_terminated,
                                    single.num_truncated) == (
                                        13, beamed.num_steps, 1, 12)
  assert sorted(beamed.fields) == sorted(single.fields)
  episodes = _dense(sharded)
  for path in ('action', 'observation', 'reward', 'discount'):
    a, b = single[path], beamed[path]
    np.testing.assert_array_equal(b.count, a.count)
    np.testing.assert_array_equal(b.min, a.min)
    np.testing.assert_array_equal(b.max, a.max)
    np.testing.assert_allclose(b.mean, a.mean, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(b.std, a.std, rtol=1e-9, atol=1e-15)
    masked = path != 'observation'  # RLDS: no action/reward on last steps.
    values = np.concatenate([e['steps'][path][:-1] if masked
                             else e['steps'][path] for e in episodes])
    qs = (0.01, 0.5, 0.99)
    _ranks_within(values, b.quantile(qs), qs, b.rank_error)
  np.testing.assert_array_equal(beamed.episode_length.count,
                                single.episode_length.count)
  assert (float(beamed.episode_length.min), float(beamed.episode_length.max)
          ) == (float(single.episode_length.min),
                float(single.episode_length.max))
  np.testing.assert_allclose(beamed.episode_return.mean,
                             single.episode_return.mean, rtol=1e-12)
  returns = [e['steps']['reward'][:-1].astype(np.float64).sum()
             for e in episodes]
  np.testing.assert_allclose(float(beamed.episode_return.mean) * 13,
                             np.sum(returns), rtol=1e-9)


def test_catalog_on_beam_equals_single_process(sharded):
  # On Beam in this process (its rows still pass through Beam's coders): a
  # job on two worker processes costs ~20 s more here, for the same code.
  single = catalog.episodes(sharded, cache=False, progress=False)
  beamed = catalog.episodes(sharded, cache=False, progress=False,
                            beam=IN_PROCESS)
  assert beamed.columns == single.columns
  assert beamed.info == single.info
  for column in single.columns:
    np.testing.assert_array_equal(beamed[column], single[column],
                                  err_msg=column)
  assert beamed['index'].tolist() == list(range(13))
  assert len(set(beamed['shard'].tolist())) == 5


# --- Bad input: one clear error, nothing run or written. ---

OPTION_ERRORS = {
    'bad_value': (['direct_num_workers=two'], ValueError,
                  "Beam: pipeline option --direct_num_workers=two does not "
                  "parse: argument --direct_num_workers: invalid int value: "
                  "'two'."),
    'bad_choice': (['direct_running_mode=several'], ValueError,
                   'invalid choice: \'several\''),
    'unknown': (['no_such_option=1'], ValueError,
                'Beam: unknown pipeline option --no_such_option=1 (no runner '
                'of apache_beam defines it'),
    'value_for_a_switch': (['save_main_session=yes'], ValueError,
                           "ignored explicit argument 'yes'"),
    'no_name': (['=3'], ValueError, "Beam: pipeline option '=3' does not "
                'parse: expected NAME=VALUE'),
    'empty': ([''], ValueError, 'must be a string like'),
    'one_string': ('direct_num_workers=2', TypeError,
                   'not the string'),
    'a_number': (2, TypeError, 'got int'),
    'runner_as_option': (['runner=FlinkRunner'], ValueError,
                         'pass the runner as Beam(runner=...)'),
}


@pytest.mark.parametrize('options,error,message', OPTION_ERRORS.values(),
                         ids=OPTION_ERRORS.keys())
def test_options_that_do_not_parse_are_one_clear_error(options, error,
                                                        message):
  with pytest.raises(error) as raised:
    Beam(pipeline_options=options).options()
  assert message in str(raised.value)


DOCUMENTED_FLAGS = {  # docs/distributed.md's table, runner by runner.
    'DirectRunner': ['direct_num_workers=2',
                     'direct_running_mode=multi_processing'],
    'DataflowRunner': ['project=p', 'region=europe-west1',
                       'temp_location=gs://b/tmp',
                       'sdk_container_image=gcr.io/p/image',
                       'setup_file=./setup.py', 'num_workers=4',
                       'max_num_workers=8', 'machine_type=n2-standard-8'],
    'FlinkRunner': ['flink_master=h:8081', 'environment_type=DOCKER',
                    'environment_config=h:50000', 'parallelism=4',
                    'temp_location=/shared/tmp'],
    'SparkRunner': ['spark_master_url=spark://h:7077',
                    'environment_type=PROCESS', 'temp_location=/shared/tmp'],
    'PortableRunner': ['job_endpoint=h:8099', 'environment_type=LOOPBACK'],
}


@pytest.mark.parametrize('runner', DOCUMENTED_FLAGS)
def test_the_documented_flags_of_each_runner_parse(runner):
  flags = DOCUMENTED_FLAGS[runner]
  parsed = Beam(runner, flags).options().get_all_options()
  for flag in flags:
    name, value = flag.split('=', 1)
    assert str(parsed[name]) == value, name


def test_a_dict_of_options_is_flags():
  beam = Beam('FlinkRunner', {'flink_master': 'h:8081', 'parallelism': 2,
                              'save_main_session': True,
                              'direct_num_workers': None})
  assert beam.flags() == ['--flink_master=h:8081', '--parallelism=2',
                          '--save_main_session']
  assert beam.options().get_all_options()['save_main_session'] is True


def test_a_build_with_bad_options_writes_nothing(recordings, tmp_path):
  with pytest.raises(ValueError, match='does not parse'):
    build_from_envlogger(recordings, name='bad', data_dir=tmp_path / 'tfds',
                         beam=Beam(pipeline_options=['direct_num_workers=x']))
  assert not os.path.exists(tmp_path / 'tfds')


def test_stats_on_beam_need_a_path_and_a_whole_split(sharded):
  with pytest.raises(TypeError, match='needs a dataset directory or name'):
    stats.compute(rlds_lite.load(sharded), beam=IN_PROCESS)
  with pytest.raises(ValueError, match=r"pass a plain split name, got "
                     r"'train\[:5\]'"):
    stats.compute(sharded, split='train[:5]', cache=False, beam=IN_PROCESS)


def test_a_remote_runner_needs_a_temp_location():
  with pytest.raises(ValueError, match='pass pipeline option '
                     'temp_location=DIR'):
    beam_runs.map_merge(Beam('DataflowRunner'), [1], abs, operator.add, 'X')


def _fail_on_two(item):
  if item == 2:
    raise ValueError(f'item {item} is bad')
  return item


def test_a_worker_error_is_raised_as_it_was():
  assert beam_runs.map_merge(IN_PROCESS, [], abs, operator.add, 'None') == []
  with pytest.raises(ValueError, match='^item 2 is bad$'):
    beam_runs.map_merge(IN_PROCESS, [1, 2, 3], _fail_on_two, operator.add,
                        'Fail')


# --- The command line: rlds-lite build. ---


def test_cli_build_on_beam_equals_the_api_build(builds, recordings, tmp_path):
  # As a user runs it: TensorFlow's, TFDS's and Beam's own lines hidden.
  env = {k: v for k, v in os.environ.items()
         if k not in ('TF_CPP_MIN_LOG_LEVEL', 'GLOG_minloglevel')}
  result = subprocess.run(
      [sys.executable, '-m', 'rlds_lite.cli', 'build', recordings, '--name',
       'from_cli', '--data-dir', str(tmp_path), '--beam-option',
       'direct_running_mode=in_memory', '--json'], capture_output=True,
      text=True, timeout=600, check=False, env=env)
  assert (result.returncode, result.stderr) == (0, '')
  printed = json.loads(result.stdout)
  assert printed == {
      'path': str(tmp_path / 'from_cli' / '1.0.0'), 'name': 'from_cli',
      'version': '1.0.0', 'split': 'train', 'episodes': 8,
      'beam': {'runner': 'DirectRunner',
               'options': ['--direct_running_mode=in_memory']}}
  _assert_same_episodes(builds[0], printed['path'])


def test_cli_build_with_bad_options_is_one_line_exit_2(recordings, tmp_path):
  # A fresh interpreter: the options are refused before TensorFlow loads.
  script = ('import sys; from rlds_lite import cli; code = cli.main('
            'sys.argv[1:]); print(sorted(m for m in sys.modules if '
            "m.split('.')[0] == 'tensorflow')); sys.exit(code)")
  result = subprocess.run(
      [sys.executable, '-c', script, 'build', recordings, '--name', 'bad',
       '--data-dir', str(tmp_path / 'tfds'), '--beam-option',
       'direct_num_workers=two'], capture_output=True, text=True, timeout=300,
      check=False)
  assert result.returncode == 2
  assert result.stderr.splitlines() == [  # One line.
      'rlds-lite build: Beam: pipeline option --direct_num_workers=two does '
      "not parse: argument --direct_num_workers: invalid int value: 'two'."]
  assert result.stdout == '[]\n'  # No TensorFlow imported.
  assert not os.path.exists(tmp_path / 'tfds')


def test_cli_build_of_a_missing_recording(tmp_path, capsys):
  missing = str(tmp_path / 'no_such_logs')
  assert cli.main(['build', missing, '--name', 'x']) == 2
  assert capsys.readouterr().err == (
      f'rlds-lite build: {missing}: no such recording\n')


def _corrupted_copy(source, out):
  """A copy of ``source`` with a flipped byte in its second shard file."""
  shutil.copytree(source, out)
  shard = os.path.join(out, sorted(f for f in os.listdir(out)
                                   if '.tfrecord-' in f)[1])
  with open(shard, 'r+b') as f:
    f.seek(40)
    byte = f.read(1)
    f.seek(40)
    f.write(bytes([byte[0] ^ 0xFF]))
  return out


@pytest.mark.parametrize('reader', ['stats', 'catalog'])
def test_a_damaged_shard_on_beam_is_the_single_process_error(sharded,
                                                             tmp_path, reader):
  path = _corrupted_copy(sharded, str(tmp_path / 'damaged'))
  run = (functools.partial(stats.compute, path) if reader == 'stats' else
         functools.partial(catalog.episodes, path))
  with pytest.raises(Exception) as single:
    run(cache=False, progress=False)
  with pytest.raises(Exception) as beamed:
    run(cache=False, progress=False, beam=IN_PROCESS)
  assert type(beamed.value) is type(single.value)
  assert str(beamed.value) == str(single.value)
  assert '.tfrecord-00001' in str(beamed.value)


def test_an_rlds_builder_on_beam_equals_the_single_process_build(
    builds, recordings, tmp_path):
  # build_from_envlogger is an RLDSBuilder: its two-worker build is above.

  class BeamRlds(RLDSBuilder, skip_registration=True):
    RLDS_CONFIG = RLDSConfig(envlogger_dirs=recordings, beam=True)

  builder = BeamRlds(data_dir=str(tmp_path))
  builder.download_and_prepare(download_config=IN_PROCESS.download_config())
  _assert_same_episodes(builds[0], os.fspath(builder.data_path))


def test_cli_stats_on_beam_prints_the_single_process_counts(sharded, capsys):
  assert cli.main(['stats', sharded, '--no-cache', '--json']) == 0
  single = json.loads(capsys.readouterr().out)
  assert cli.main(['stats', sharded, '--no-cache', '--json', '--beam-option',
                   'direct_running_mode=in_memory']) == 0
  beamed = json.loads(capsys.readouterr().out)
  assert (beamed['num_episodes'], beamed['num_steps']) == (
      single['num_episodes'], single['num_steps']) == (13, single['num_steps'])
  assert beamed['fields']['action']['min'] == single['fields']['action']['min']
  assert cli.main(['stats', sharded, '--beam-runner', 'DirectRunner',
                   '--beam-option', 'no_such_option=1']) == 2
  err = capsys.readouterr().err
  assert err.startswith(
      'rlds-lite stats: Beam: unknown pipeline option --no_such_option=1 ')
  assert len(err.splitlines()) == 1


def test_cli_episodes_on_beam_prints_the_single_process_catalog(sharded,
                                                                capsys):
  assert cli.main(['episodes', sharded, '--no-cache', '--json']) == 0
  single = json.loads(capsys.readouterr().out)
  assert cli.main(['episodes', sharded, '--no-cache', '--json', '--beam',
                   '--beam-option', 'direct_running_mode=in_memory']) == 0
  assert json.loads(capsys.readouterr().out) == single
  assert len(single) == 13
  assert cli.main(['episodes', sharded, '--beam-option', 'x=']) == 2
  assert capsys.readouterr().err == (
      'rlds-lite episodes: Beam: unknown pipeline option --x= (no runner of '
      'apache_beam defines it; see docs/distributed.md for the flags of '
      'Dataflow, Flink and Spark).\n')
