"""``rlds-lite inspect``: features, splits, sizes, episode and step counts."""

import json

import numpy as np
import pytest

import checks_testing
from rlds_lite import checks
from rlds_lite import cli
from rlds_lite.tfds import EpisodeWriter


@pytest.fixture(scope='module')
def catch_path(tmp_path_factory):
  episodes = checks_testing.catch_episodes(3)
  return checks_testing.write_catch(str(tmp_path_factory.mktemp('data')),
                                    episodes)


def test_inspect_prints_features_splits_and_counts(catch_path, capsys):
  # In-process; tests/test_cli.py runs every command as a subprocess.
  assert cli.main(['inspect', catch_path, '--no-progress']) == 0
  out, err = capsys.readouterr()
  assert err == ''
  lines = out.splitlines()
  assert lines[0] == f'catch_images 1.0.0 (tfrecord) at {catch_path}'
  rows = {line.split()[0]: line.split()[1:] for line in lines[5:11]}
  assert rows['observation/image'] == ['uint8', '(16,', '12,', '3)', 'Image',
                                       '(png)']
  assert rows['reward'] == ['float32', '()', 'Tensor']
  assert rows['is_last'] == ['bool', '()', 'Tensor']
  splits = lines[lines.index('splits:') + 3].split()
  assert splits[:3] == ['train', '3', '30']  # Catch episodes have 10 steps.
  assert lines[-1].split()[:3] == ['total', '3', '30']


def test_inspect_json(catch_path, capsys):
  assert cli.main(['inspect', catch_path, '--json']) == 0
  data = json.loads(capsys.readouterr().out)
  assert (data['name'], data['version'], data['episodes'], data['steps']) == (
      'catch_images', '1.0.0', 3, 30)
  assert data['splits'][0]['name'] == 'train'
  assert data['splits'][0]['num_bytes'] > 0
  assert {'path': 'observation/image', 'dtype': 'uint8', 'shape': '(16, 12, 3)',
          'kind': 'Image (png)'} in data['step_features']


def test_describe_counts_steps_without_decoding(catch_path):
  overview = checks.describe(catch_path, steps=False)
  assert (overview.num_episodes, overview.num_steps) == (3, None)
  assert checks.describe(catch_path, split='train').num_steps == 30


@pytest.mark.parametrize('args, message', [
    (['/no/such/dataset'],
     "rlds-lite inspect: dataset directory '/no/such/dataset' does not exist."),
    (['{empty}'], 'is not a TFDS dataset directory: no dataset_info.json'),
    (['{catch}', '--split', 'test'],
     "rlds-lite inspect: dataset '{catch}' has no split 'test' (its splits: "
     "['train'])."),
], ids=['missing-path', 'not-a-dataset', 'unknown-split'])
def test_bad_input_is_one_line_and_exit_2(catch_path, tmp_path, capsys, args,
                                          message):
  fill = {'empty': str(tmp_path), 'catch': catch_path}
  args = [a.format(**fill) for a in args]
  assert cli.main(['inspect', *args]) == 2
  err = capsys.readouterr().err
  assert err.count('\n') == 1 and err.startswith('rlds-lite inspect: ')
  assert message.format(**fill) in err


def test_inspect_says_string_for_text_fields(tmp_path, capsys):
  # Before: dtype 'object', NumPy's name for the bytes TF gives.
  episode = {'steps': {'language_instruction': ['pick', 'place'],
                       'tokens': np.array([['a', 'b'], ['c', 'd']]),
                       'is_last': [False, True], 'is_terminal': [False, True]},
             'file_path': 'x.h5'}
  with EpisodeWriter(tmp_path, 'texts', episode) as writer:
    writer.add_episode(episode)
  assert cli.main(['inspect', writer.path, '--json']) == 0
  data = json.loads(capsys.readouterr().out)
  assert {'path': 'language_instruction', 'dtype': 'string', 'shape': '()',
          'kind': 'Text'} in data['step_features']
  assert {'path': 'tokens', 'dtype': 'string', 'shape': '(2,)',
          'kind': 'Tensor'} in data['step_features']
  assert data['episode_features'] == [
      {'path': 'file_path', 'dtype': 'string', 'shape': '()', 'kind': 'Text'}]
