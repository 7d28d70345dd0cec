"""The notebooks in colabs/ run top to bottom and compute what they say.

The notebooks are executed afresh with nbclient, all at once (each in its
own kernel ``python3``, which jupyter_client starts with this interpreter;
a probe cell checks it), each in a temporary working directory; the printed figures are checked against NumPy on the same
built-in data. A first cell makes rlds_lite's rename DeprecationWarnings errors, so a notebook
that uses an old spelling fails. The committed notebooks must carry their outputs.
"""

import asyncio
import os
import re
import sys

import nbclient
import nbformat
import numpy as np
import pytest

from rlds_lite import synthetic

COLABS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      'colabs')
NOTEBOOKS = ('tutorial', 'performance', 'training', 'envlogger_to_tfds')
PROBE = 'import sys; print("PYTHON", sys.executable)'
# An old spelling (a renamed keyword that still works) fails its cell.
STRICT = ("import warnings; warnings.filterwarnings('error', message=r'.*(later release|"
          "mask_last_step is deprecated)', category=DeprecationWarning)")


def _read(name):
  return nbformat.read(os.path.join(COLABS, f'{name}.ipynb'), as_version=4)


def _stdout(nb):
  return ''.join(out.get('text', '') for cell in nb.cells
                 if cell.cell_type == 'code' for out in cell.outputs
                 if out.output_type == 'stream' and out.name == 'stdout')


def _num_images(nb):
  return sum('image/png' in out.get('data', {}) for cell in nb.cells
             if cell.cell_type == 'code' for out in cell.outputs)


def _find(pattern, text):
  match = re.search(pattern, text)
  assert match, f'{pattern!r} not found in the output:\n{text}'
  return match.groups()


async def _execute_all(tmp_dir):
  """Runs every notebook (plus a probe cell) at once, each in its own kernel."""
  runs = {}
  for name in NOTEBOOKS:
    nb = _read(name)
    nb.cells.insert(0, nbformat.v4.new_code_cell(STRICT))
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    path = os.path.join(tmp_dir, name)
    os.makedirs(path)
    runs[name] = (nb, nbclient.NotebookClient(
        nb, kernel_name='python3', timeout=600, allow_errors=False,
        resources={'metadata': {'path': path}}))
  results = await asyncio.gather(
      *(client.async_execute() for _, client in runs.values()),
      return_exceptions=True)
  return {name: (nb, result, os.path.join(tmp_dir, name))
          for (name, (nb, _)), result in zip(runs.items(), results)}


@pytest.fixture(scope='module')
def executions(tmp_path_factory):
  """Fresh runs of all notebooks, concurrently (kernels are processes)."""
  return asyncio.run(_execute_all(str(tmp_path_factory.mktemp('colabs'))))


@pytest.fixture(params=NOTEBOOKS)
def executed(request, executions):
  """(name, stdout) of a fresh run of the notebook; fails on any cell error."""
  nb, result, cwd = executions[request.param]
  if isinstance(result, BaseException):
    raise result
  # Temporary data goes to a tempfile directory, deleted at the end.
  assert not os.listdir(cwd), os.listdir(cwd)
  errors = [out for cell in nb.cells if cell.cell_type == 'code'
            for out in cell.outputs if out.output_type == 'error']
  assert not errors, errors
  assert _num_images(nb) >= 1, f'{request.param} draws no plot'
  return request.param, _stdout(nb)


def test_notebook_runs_with_this_python(executed):
  _, stdout = executed
  assert _find(r'PYTHON (\S+)', stdout) == (sys.executable,)


def _check_tutorial(stdout):
  arrays = synthetic.episode_arrays(num_episodes=12, max_length=40, seed=0)
  lengths = [len(a['reward']) for a in arrays]
  returns = [a['reward'].sum() for a in arrays]
  assert _find(r'valid RLDS: (\w+)', stdout) == ('True',)
  assert int(_find(r'steps: (\d+)', stdout)[0]) == sum(lengths)
  assert _find(r'episodes: (\d+)', stdout) == ('12',)
  assert _find(r'lengths: (\[.*\])', stdout) == (str(lengths),)
  assert float(_find(r'mean return: (-?[\d.]+)', stdout)[0]) == pytest.approx(
      np.mean(returns), abs=1e-4)
  terminal = sum(bool(a['is_terminal'][-1]) for a in arrays)
  assert int(_find(r'terminal episodes: (\d+)', stdout)[0]) == terminal
  assert int(_find(r'SARS tuples: (\d+)', stdout)[0]) == sum(lengths) - 12
  absorbing = [n + bool(a['is_terminal'][-1]) for n, a in zip(lengths, arrays)]
  assert _find(r'lengths with absorbing states: (\[.*\])', stdout) == (
      str(absorbing),)
  rewards = np.concatenate([a['reward'][:-1] for a in arrays])
  assert float(_find(r'reward mean: (-?[\d.]+)', stdout)[0]) == pytest.approx(
      rewards.mean(), abs=1e-4)


def _check_performance(stdout):
  arrays = synthetic.episode_arrays(num_episodes=600, min_length=20,
                                    max_length=80, seed=0)
  windows = sum(max(len(a['reward']) - 3, 0) for a in arrays)
  counts = _find(r"windows per pass: \{'upstream RLDS recipe': (\d+), "
                 r"'rlds_lite, same recipe': (\d+), "
                 r"'rlds_lite dense \+ batches': (\d+)\}", stdout)
  assert counts == (str(windows),) * 3
  for name in ('upstream RLDS recipe', 'rlds_lite, same recipe',
               'rlds_lite dense \\+ batches'):
    rate, wall, cpu = _find(
        name + r': ([\d,]+) windows/s, ([\d.]+)x wall, ([\d.]+)x CPU', stdout)
    assert int(rate.replace(',', '')) > 0 and float(wall) > 0 and float(cpu) > 0
  assert float(_find(r'distinct episodes per batch of 256: ([\d.]+)',
                     stdout)[0]) > 10
  # Camera images: 12 episodes x 40 steps, a sample (or a frame pair) each,
  # three epochs.
  counts = _find(r"samples per pass: \{'Octo recipe': (\d+), "
                 r"'rlds_lite robot_samples_dataset': (\d+), "
                 r"'decode floor \(frames, no samples\)': (\d+)\}", stdout)
  assert counts == ('1440',) * 3
  for name in ('Octo recipe', 'rlds_lite robot_samples_dataset',
               'decode floor \\(frames, no samples\\)'):
    rate, cpu = _find(name + r': ([\d,]+) samples/s, ([\d,]+) us CPU per sample',
                      stdout)
    assert int(rate.replace(',', '')) > 0 and int(cpu.replace(',', '')) > 0
  assert "DecodePlan(decode='per_episode', whole episodes, 12 episodes" in stdout
  assert _find(r'distinct episodes per batch of 64: ([\d.]+) of 12',
               stdout) == ('12.0',)


def _check_training(stdout):
  first, last = map(float, _find(
      r'Keras loss: first epoch ([\d.]+), last epoch ([\d.]+)', stdout))
  assert last < first
  first, last = map(float, _find(
      r'loss: first 10 steps ([\d.]+), last 10 steps ([\d.]+)', stdout))
  assert last < 0.5 * first
  losses = _find(r'masked per-step loss by epoch: \[(.*)\]', stdout)[0]
  losses = [float(x) for x in losses.split(',')]
  assert losses[-1] < losses[0]


def _check_envlogger_to_tfds(stdout):
  assert _find(r'recorded (\d+) episodes, (\d+) EnvLogger timesteps',
               stdout) == ('20', '200')
  assert _find(r'valid RLDS: (\w+)', stdout) == ('True',)
  episodes, steps, caught = map(int, _find(
      r'episodes: (\d+), steps: (\d+), caught: (\d+)', stdout))
  assert (episodes, steps) == (20, 200) and 0 < caught <= 20
  mean_return = float(_find(r'mean return: ([+-][\d.]+)', stdout)[0])
  assert mean_return == pytest.approx((2 * caught - 20) / 20)
  assert "'observation': (10, 32, 32, 3)" in stdout


CHECKS = {
    'tutorial': _check_tutorial,
    'performance': _check_performance,
    'training': _check_training,
    'envlogger_to_tfds': _check_envlogger_to_tfds,
}


def test_notebook_figures(executed):
  name, stdout = executed
  CHECKS[name](stdout)


@pytest.mark.parametrize('name', NOTEBOOKS)
def test_committed_notebook_has_outputs(name):
  nb = _read(name)
  code = [cell for cell in nb.cells if cell.cell_type == 'code']
  assert code and any(cell.cell_type == 'markdown' for cell in nb.cells)
  # Executed once, top to bottom, without errors.
  assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
  assert all(out.output_type != 'error' for cell in code for out in cell.outputs)
  assert _num_images(nb) >= 1
  # Figures are in the committed outputs too.
  assert CHECKS[name](_stdout(nb)) is None


def test_every_notebook_is_tested():
  found = sorted(f[:-len('.ipynb')] for f in os.listdir(COLABS)
                 if f.endswith('.ipynb'))
  assert found == sorted(NOTEBOOKS)
