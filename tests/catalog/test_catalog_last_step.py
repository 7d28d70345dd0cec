"""The catalog's ``last_step='invalid'|'valid'``: named cases, the warning, the cache.

``return`` sums ``reward`` over every step but the last (``'invalid'``, RLDS)
or over every step (``'valid'``), against a NumPy reference, for terminal and
truncated episodes with zero and non-zero last rewards, a one-step and an
empty episode. The default warns once per call when it leaves a non-zero last
reward out; ``load(episodes=...)`` and ``filter_dataset`` take the same
argument where they evaluate ``return``.
"""

import os
import warnings

import numpy as np
import pytest
import tensorflow_datasets as tfds

import rlds_lite
from rlds_lite import catalog as catalog_lib
from rlds_lite.catalog import build
from rlds_lite.catalog import storage
from rlds_lite.tfds import EpisodeWriter

# name: (rewards, terminal last step)
CASES = {
    'terminal, non-zero last reward': ([0.0, 1.0, 5.0], True),
    'terminal, zero last reward': ([2.0, 1.0, 0.0], True),
    'truncated, non-zero last reward': ([1.0, 0.5, 3.0, -2.0], False),
    'truncated, zero last reward': ([1.0, 1.0, 0.0], False),
    'one step, non-zero reward': ([7.0], True),
    'empty': ([], False),
}
NAMES = list(CASES)
LEFT_OUT = 3  # Episodes with a non-zero last reward.


def _reference(rewards, last_step):
  """What ``return`` should be: a NumPy sum over the counted steps."""
  rewards = np.asarray(rewards, np.float64)
  counted = len(rewards) if last_step == 'valid' else max(len(rewards) - 1, 0)
  return float(rewards[:counted].sum())


def _write(data_dir, cases):
  features = {'steps': {'reward': np.float32}}
  with EpisodeWriter(data_dir, 'cases', features) as writer:
    for rewards, terminal in cases:
      length = len(rewards)
      index = np.arange(length)
      writer.add_episode({'steps': {
          'reward': np.asarray(rewards, np.float32),
          'is_first': index == 0, 'is_last': index == length - 1,
          'is_terminal': (index == length - 1) & terminal}})
  return writer.path


@pytest.fixture(name='dataset', scope='module')
def _dataset(tmp_path_factory):
  return _write(str(tmp_path_factory.mktemp('last_step')), CASES.values())


def _quiet(function, *args, **kwargs):
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', rlds_lite.LastStepValuesWarning)
    return function(*args, **kwargs)


@pytest.mark.parametrize('last_step', ['invalid', 'valid'])
@pytest.mark.parametrize('name', NAMES)
def test_named_cases_against_numpy(dataset, name, last_step):
  rewards, terminal = CASES[name]
  catalog = _quiet(catalog_lib.episodes, dataset, last_step=last_step,
                   progress=False)
  row = catalog.row(NAMES.index(name))
  assert row['length'] == len(rewards)
  assert row['return'] == _reference(rewards, last_step)
  assert row['last_reward'] == (rewards[-1] if rewards else None)
  assert row['terminated'] is (bool(rewards) and terminal)
  assert row['truncated'] is (bool(rewards) and not terminal)
  assert catalog.info['last_step'] == last_step


def _caught(function, *args, **kwargs):
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    result = function(*args, **kwargs)
  return result, [w for w in caught
                  if issubclass(w.category, rlds_lite.LastStepValuesWarning)]


def test_invalid_warns_once_per_call_naming_the_count_and_the_way_out(
    dataset):
  for _ in range(2):  # Built, then read from the cache: a warning each call.
    _, caught = _caught(catalog_lib.episodes, dataset, progress=False)
    assert len(caught) == 1
    assert str(caught[0].message) == (
        f'episodes: left out non-zero last-step values of reward ({LEFT_OUT} '
        f'of {len(CASES)} episodes): RLDS says a last step\'s reward is '
        'invalid, so return leaves it out (last_reward keeps it); pass '
        "last_step='valid' (command line: --last-step valid) to keep them.")
    assert caught[0].filename == __file__  # Points at the caller.


def test_no_warning_with_valid_or_zero_last_rewards(dataset, tmp_path):
  _, caught = _caught(catalog_lib.episodes, dataset, last_step='valid',
                      progress=False)
  assert caught == []
  zeros = _write(str(tmp_path), [CASES['terminal, zero last reward'],
                                 CASES['truncated, zero last reward'],
                                 CASES['empty']])
  catalog, caught = _caught(catalog_lib.episodes, zeros, progress=False)
  assert caught == [] and len(catalog) == 3


def test_each_last_step_has_its_own_cache_file(tmp_path, monkeypatch):
  path = _write(str(tmp_path), CASES.values())
  invalid = _quiet(catalog_lib.episodes, path, progress=False)
  valid = catalog_lib.episodes(path, last_step='valid', progress=False)
  files = sorted(os.listdir(os.path.join(path, storage.CACHE_SUBDIR)))
  assert [f.rsplit('-', 1)[0] for f in files] == ['train-invalid',
                                                  'train-valid']
  monkeypatch.setattr(build, '_pass', None)  # Both read back, not rebuilt.
  assert _quiet(catalog_lib.episodes, path, progress=False).to_records() == (
      invalid.to_records())
  assert catalog_lib.episodes(path, last_step=rlds_lite.LastStep.VALID,
                              progress=False).to_records() == (
                                  valid.to_records())


def test_a_bad_last_step_is_one_clear_error(dataset):
  with pytest.raises(ValueError, match="catalog.episodes: last_step must be "
                     r"LastStep.INVALID or LastStep.VALID \('invalid'/'valid'"
                     r"\), got 'last'."):
    catalog_lib.episodes(dataset, last_step='last')


def test_load_episodes_expr_follows_last_step(dataset):
  expected = {last_step: [i for i, (rewards, _) in enumerate(CASES.values())
                          if _reference(rewards, last_step) >= 3]
              for last_step in ('invalid', 'valid')}
  assert expected['invalid'] != expected['valid']
  for last_step, indices in expected.items():
    episodes, caught = _caught(rlds_lite.load, dataset, dense=True,
                               episodes='return >= 3', last_step=last_step)
    assert [list(e['steps']['reward'].numpy()) for e in episodes] == [
        list(CASES[NAMES[i]][0]) for i in indices]
    assert len(caught) == (1 if last_step == 'invalid' else 0)
  _, caught = _caught(rlds_lite.load, dataset, episodes='return >= 3')
  assert str(caught[0].message).startswith(
      f'load: left out non-zero last-step values of reward ({LEFT_OUT} of ')
  # An EXPR that does not look at return leaves nothing out: no warning.
  _, caught = _caught(rlds_lite.load, dataset, episodes='length > 1')
  assert caught == []


def test_load_last_step_needs_episodes(dataset):
  with pytest.raises(ValueError, match="load: last_step says what an "
                     "episodes= EXPR's return sums; it needs episodes="):
    rlds_lite.load(dataset, last_step='valid')
  with pytest.raises(ValueError, match="load: last_step must be"):
    rlds_lite.load(dataset, last_step='yes')


def test_filter_follows_last_step_and_records_it(dataset, tmp_path):
  out, caught = _caught(catalog_lib.filter_dataset, dataset,
                        str(tmp_path / 'valid'), 'return >= 3',
                        last_step='valid', progress=False)
  assert caught == []
  assert [list(e['steps']['reward'].numpy()) for e in rlds_lite.load(
      out, dense=True)] == [CASES[n][0] for n in NAMES
                            if _reference(CASES[n][0], 'valid') >= 3]
  metadata = tfds.builder_from_directory(out).info.metadata['rlds_lite']
  assert (metadata['where'], metadata['last_step']) == ('return >= 3', 'valid')
  out, caught = _caught(catalog_lib.filter_dataset, dataset,
                        str(tmp_path / 'invalid'), 'return >= 3',
                        progress=False)
  assert len(caught) == 1 and str(caught[0].message).startswith('filter: ')
  assert len(rlds_lite.load(out)) == sum(
      _reference(r, 'invalid') >= 3 for r, _ in CASES.values())
