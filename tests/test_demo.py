"""The demo: record -> build -> load -> train -> evaluate -> report."""

import io
import json
import os
import warnings

import numpy as np
import pytest

from rlds_lite import demo
from rlds_lite import envs
from rlds_lite import option_objects


def _reference_returns(env_name, num_episodes, epsilon, seed):
  """Returns of the recording policy, simulated directly (no EnvLogger/TFDS).

  `rlds_lite.envlogger.record(seed=s)` seeds the env with s, the policy s + 1.
  """
  env = envs.make(env_name)
  policy = demo.EpsilonGreedy(env.expert_policy, 3, epsilon)
  env.seed(seed)
  policy.seed(seed + 1)
  returns = []
  for _ in range(num_episodes):
    timestep, total = env.reset(), 0.0
    while not timestep.last():
      timestep = env.step(policy(timestep))
      total += float(timestep.reward)
    returns.append(total)
  return returns


@pytest.fixture(scope='module')
def small_run(tmp_path_factory):
  out_dir = str(tmp_path_factory.mktemp('demo'))
  printed = io.StringIO()
  config = demo.DemoConfig(num_episodes=100, epsilon=0.2, epochs=5,
                           batch_size=32, eval_episodes=50, seed=3)
  figures = demo.run(out_dir, config, progress=False, out=printed)
  return out_dir, figures, printed.getvalue()


def test_bc_policy_clearly_beats_random(small_run):
  _, figures, _ = small_run
  means = figures['mean_return']
  assert means['bc'] >= 0.9
  assert means['random'] <= 0.0
  assert means['bc'] - means['random'] >= 1.0
  assert means['expert'] == 1.0
  assert len(figures['returns']['bc']) == 50
  assert len(figures['returns']['random']) == 50


def test_dataset_matches_the_recorded_episodes(small_run):
  _, figures, _ = small_run
  # Catch: 9 actions + the last RLDS step per episode; every episode terminal.
  assert (figures['episodes'], figures['steps'], figures['transitions'],
          figures['terminal_episodes']) == (100, 1000, 900, 100)
  assert figures['returns']['dataset'] == _reference_returns('catch', 100, 0.2,
                                                             3)


def test_training_history_and_outputs(small_run):
  out_dir, figures, printed = small_run
  history = figures['history']
  assert sorted(history) == ['accuracy', 'loss', 'val_accuracy', 'val_loss']
  assert all(len(values) == 5 for values in history.values())
  assert history['loss'][-1] < history['loss'][0]
  paths = figures['paths']
  assert paths['out_dir'] == out_dir
  assert paths['dataset'] == os.path.join(out_dir, 'tensorflow_datasets',
                                          'catch_demo', '1.0.0')
  with open(paths['plot'], 'rb') as f:
    assert f.read(8) == b'\x89PNG\r\n\x1a\n'
  with open(paths['summary']) as f:
    assert json.load(f) == json.loads(json.dumps(figures))
  assert os.path.getsize(paths['model']) > 0
  assert os.path.exists(os.path.join(paths['recording'], 'metadata.riegeli'))
  assert set(figures['seconds']) == {'record', 'build', 'load', 'pipeline',
                                     'train', 'evaluate', 'report', 'total'}


def test_printed_summary_table(small_run):
  _, figures, printed = small_run
  lines = printed.splitlines()
  header = next(i for i, line in enumerate(lines) if line.startswith('policy'))
  rows = {line.split('  ')[0].strip(): line.split()[-4:]
          for line in lines[header + 2:header + 6]}
  assert sorted(rows) == ['BC (Keras MLP)', 'dataset (epsilon 0.2)', 'expert',
                          'random']
  for label, key in (('BC (Keras MLP)', 'bc'), ('random', 'random'),
                     ('dataset (epsilon 0.2)', 'dataset')):
    episodes, mean = rows[label][:2]
    assert int(episodes) == len(figures['returns'][key])
    assert float(mean) == pytest.approx(figures['mean_return'][key], abs=5e-4)
  assert [line[:5] for line in lines if line.startswith('[')] == [
      f'[{i}/6]' for i in range(1, 7)]


def test_rerun_replaces_own_outputs_and_keeps_other_files(tmp_path):
  keep = tmp_path / 'notes.txt'
  keep.write_text('mine')
  quick = dict(progress=False, out=io.StringIO())
  first = demo.run(str(tmp_path), demo.DemoConfig(
      num_episodes=12, epochs=1, eval_episodes=2), **quick)
  second = demo.run(str(tmp_path), demo.DemoConfig(
      num_episodes=7, epochs=1, eval_episodes=2), **quick)
  assert (first['episodes'], second['episodes']) == (12, 7)
  assert second['steps'] == 70
  assert keep.read_text() == 'mine'
  with open(second['paths']['summary']) as f:
    assert json.load(f)['episodes'] == 7


def test_pixel_observations(tmp_path):
  config = demo.DemoConfig(env_name='catch_pixels', num_episodes=20,
                           epochs=1, eval_episodes=2)
  figures = demo.run(str(tmp_path), config, progress=False, out=io.StringIO())
  assert (figures['env'], figures['episodes'], figures['transitions']) == (
      'catch_pixels', 20, 180)
  assert figures['returns']['dataset'] == _reference_returns(
      'catch_pixels', 20, 0.2, 0)


@pytest.mark.parametrize('kwargs, error, match', [
    (dict(env_name='reach'), ValueError, r"env_name must be one of \['catch'"),
    (dict(num_episodes=1), ValueError, 'num_episodes must be at least 2'),
    (dict(num_episodes=2.0), TypeError, 'num_episodes must be an int'),
    (dict(eval_episodes=0), ValueError, 'eval_episodes must be at least 1'),
    (dict(epochs=0), ValueError, 'epochs must be at least 1'),
    (dict(batch_size=True), TypeError, 'batch_size must be an int'),
    (dict(epsilon=1.5), ValueError, r'epsilon must be in \[0, 1\]'),
    (dict(epsilon='0.1'), TypeError, 'epsilon must be a number'),
], ids=['unknown-env', 'one-episode', 'float-episodes', 'no-eval-episodes',
        'no-epochs', 'bool-batch-size', 'epsilon-above-one',
        'string-epsilon'])
def test_bad_arguments_fail_before_writing(tmp_path, kwargs, error, match):
  out_dir = tmp_path / 'out'
  with pytest.raises(error, match=match):
    demo.run(str(out_dir), demo.DemoConfig(**kwargs), progress=False,
             out=io.StringIO())
  assert not out_dir.exists()


def test_the_keywords_of_before_demo_config_still_work_and_warn_once(
    tmp_path, monkeypatch):
  monkeypatch.setattr(option_objects, '_WARNED', set())
  out_dir = tmp_path / 'out'
  with pytest.warns(DeprecationWarning,
                    match=r'now run\(out_dir, DemoConfig\(\.\.\.\)\)'):
    with pytest.raises(ValueError, match='num_episodes must be at least 2'):
      demo.run(str(out_dir), num_episodes=1, progress=False)
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    with pytest.raises(ValueError, match='epochs must be at least 1'):
      demo.run(str(out_dir), epochs=0, progress=False)
  assert not [w for w in caught if 'DemoConfig' in str(w.message)]  # Once.
  with pytest.raises(TypeError, match=r"demo\.run: pass \['epochs'\] in run\(out_dir, DemoConfig\(\.\.\.\)\), not beside it\."):
    demo.run(str(out_dir), demo.DemoConfig(), epochs=3)
  with pytest.raises(TypeError, match="unexpected keyword argument 'epoch'"):
    demo.run(str(out_dir), epoch=3)
  assert not out_dir.exists()
  assert repr(demo.DemoConfig(seed=3)) == 'DemoConfig(seed=3)'


def _reference_epsilon_greedy(greedy, num_actions, epsilon, seed, n):
  """One uniform draw per call; a random action only when it is < epsilon."""
  rng = np.random.default_rng(seed)
  actions = []
  for _ in range(n):
    random = rng.random() < epsilon
    actions.append(int(rng.integers(num_actions)) if random else greedy)
  return actions


@pytest.mark.parametrize('epsilon', [0.0, 0.3, 1.0],
                         ids=['never-random', 'sometimes-random',
                              'always-random'])
def test_epsilon_greedy(epsilon):
  expected = _reference_epsilon_greedy(1, 3, epsilon, 0, 12)
  if epsilon == 0.0:
    assert expected == [1] * 12
  policy = demo.EpsilonGreedy(lambda timestep: 1, 3, epsilon, seed=0)
  actions = [policy(None) for _ in range(12)]
  assert all(a.dtype == np.int64 for a in actions)
  assert [int(a) for a in actions] == expected
  policy.seed(0)
  assert [int(policy(None)) for _ in range(12)] == expected


def test_epsilon_greedy_frequency_and_errors():
  policy = demo.EpsilonGreedy(lambda timestep: 0, 4, 0.4, seed=1)
  actions = np.array([policy(None) for _ in range(4000)])
  # Greedy 0 w.p. 0.6 + 0.4/4; each other action w.p. 0.1.
  np.testing.assert_allclose(np.bincount(actions, minlength=4) / 4000,
                             [0.7, 0.1, 0.1, 0.1], atol=0.025)
  with pytest.raises(ValueError, match=r'epsilon must be in \[0, 1\]'):
    demo.EpsilonGreedy(lambda timestep: 0, 3, -0.1)
  with pytest.raises(ValueError, match='num_actions must be >= 1'):
    demo.EpsilonGreedy(lambda timestep: 0, 0, 0.1)


def test_evaluate_is_seeded_and_checks_its_argument():
  env = envs.make('catch')
  random_policy = envs.random_policy(env.action_spec(), seed=0)
  first = demo.evaluate(env, random_policy, 20, seed=5)
  random_policy.seed(0)
  again = demo.evaluate(env, random_policy, 20, seed=5)
  assert first.dtype == np.float64 and first.shape == (20,)
  np.testing.assert_array_equal(first, again)
  assert set(first.tolist()) <= {-1.0, 1.0}
  np.testing.assert_array_equal(
      demo.evaluate(env, env.expert_policy, 4, seed=1), np.ones(4))
  with pytest.raises(ValueError, match='num_episodes must be >= 1'):
    demo.evaluate(env, env.expert_policy, 0, seed=1)


@pytest.mark.parametrize('rows, expected', [
    ([], 'a  bb\n-  --'),
    ([['x', 1.0]], 'a     bb\n-  -----\nx  1.000'),
    ([['long name', 2], ['y', -0.12345]],
     'a              bb\n---------  ------\nlong name       2\n'
     'y          -0.123'),
], ids=['no-rows', 'one-row', 'mixed-types'])
def test_format_table(rows, expected):
  assert demo.format_table(['a', 'bb'], rows) == expected


@pytest.mark.parametrize('returns', [
    {'bc': np.array([1.0, 1.0]), 'random': np.array([-1.0, 1.0])},
    {'reach': np.linspace(-5.0, -1.0, 40)},
], ids=['discrete-returns', 'continuous-returns'])
def test_plot_results_writes_a_png(tmp_path, returns):
  path = demo.plot_results(str(tmp_path / 'p.png'), returns,
                           {'loss': [1.0, 0.5], 'val_loss': [1.1, 0.6],
                            'val_accuracy': [0.5, 0.8]}, title='t')
  with open(path, 'rb') as f:
    assert f.read(8) == b'\x89PNG\r\n\x1a\n'
