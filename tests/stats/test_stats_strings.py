"""String fields in stats: StringStats (counts, distinct, most frequent)."""

import json

import numpy as np
import pytest

from rlds_lite import stats
from rlds_lite.stats import DatasetStats
from rlds_lite.stats.strings import StringStats
import stats_testing


def _strings(values):
  return np.array(values, dtype=object)


def test_counts_distinct_and_most_frequent_are_exact_when_few():
  s = StringStats.empty('language_instruction')
  s.update(_strings([b'pick', b'place', b'pick', b'']))
  s.update(_strings(['pick', 'é']))  # str: counted as its UTF-8 bytes.
  assert (s.count, s.distinct, s.distinct_exact, s.exact) == (6, 4, True, True)
  assert s.top() == [(b'pick', 3), (b'', 1), (b'place', 1),
                     ('é'.encode(), 1)]
  assert s.top(1) == [(b'pick', 3)]


def test_per_step_string_tensors_count_every_string():
  s = StringStats.empty('tokens', (2,))
  s.update(_strings([[b'a', b'b'], [b'a', b'c']]))
  assert (s.count, s.distinct, s.top(1)) == (4, 3, [(b'a', 2)])


def test_json_round_trip_keeps_any_bytes():
  s = StringStats.empty('x')
  s.update(_strings([b'\xff\xfe', 'é'.encode(), b'']))
  back = StringStats.from_json(s.to_json())
  assert back == s and back.top() == s.top()
  assert json.loads(s.to_json())['top'][0][1] == 1


def test_merge_equals_one_pass():
  rng = np.random.default_rng(0)
  values = _strings([f'v{i}'.encode() for i in rng.integers(0, 50, 1000)])
  whole = StringStats.empty('x')
  whole.update(values)
  a, b = StringStats.empty('x'), StringStats.empty('x')
  a.update(values[:300])
  b.update(values[300:])
  assert a.merge(b) == whole


def test_bounded_memory_beyond_capacity():
  rng = np.random.default_rng(1)
  rare = [f'rare {i}'.encode() for i in range(5000)]
  values = _strings(rare + [b'pick'] * 2000 + [b'place'] * 1000)
  rng.shuffle(values)
  s = StringStats.empty('x', capacity=256)
  for chunk in np.array_split(values, 40):
    s.update(chunk)
  assert len(s.counters) <= 256 and len(s.hashes) <= 256
  assert not s.exact and not s.distinct_exact
  top = dict(s.top(2))
  assert list(top) == [b'pick', b'place']
  # Misra-Gries: each count is low by at most `error`.
  assert 2000 - s.error <= top[b'pick'] <= 2000
  assert 1000 - s.error <= top[b'place'] <= 1000
  assert abs(s.distinct - 5002) / 5002 < 0.2   # KMV, ~6% standard error.


def _instruction_episodes():
  episodes = [stats_testing.episode(3, True, 0), stats_testing.episode(4, False, 1)]
  texts = [['pick', 'pick', 'place'], ['pick', 'stack é', '', 'pick']]
  for steps, words in zip(episodes, texts):
    steps['language_instruction'] = np.array([w.encode() for w in words])
  return episodes


@pytest.mark.parametrize('nested_steps', [False, True], ids=['dense', 'nested'])
def test_compute_reports_string_fields(nested_steps):
  # Before: skipped as 'not numeric (string)'.
  result = stats.compute(
      stats_testing.to_dataset(_instruction_episodes(), nested_steps),
      progress=False)
  field = result['language_instruction']
  assert (field.count, field.distinct) == (7, 4)
  assert field.top(2) == [(b'pick', 4), (b'', 1)]
  assert 'language_instruction' not in result.skipped
  summary = result.summary()['strings']['language_instruction']
  assert summary['top'][0] == ['pick', 4] and summary['distinct'] == 4
  table = result.table()
  assert 'string field' in table
  line = [l for l in table.splitlines()
          if l.startswith('language_instruction')][0]
  assert line.split()[:3] == ['language_instruction', '7', '4']
  assert "'pick' 4" in line
  assert DatasetStats.from_json(result.to_json()) == result


def test_a_string_field_can_be_asked_for():
  ds = stats_testing.to_dataset(_instruction_episodes())
  only = stats.compute(ds, keys=['language_instruction'], progress=False)
  assert (sorted(only.fields), sorted(only.strings)) == (
      [], ['language_instruction'])


def test_merge_merges_string_fields():
  episodes = _instruction_episodes()
  parts = [stats.compute(stats_testing.to_dataset([e]), progress=False)
           for e in episodes]
  whole = stats.compute(stats_testing.to_dataset(episodes), progress=False)
  assert stats.merge(*parts).strings == whole.strings


def test_string_fields_of_a_tfds_dataset(tmp_path):
  from rlds_lite.tfds import EpisodeWriter  # pylint: disable=g-import-not-at-top
  episode = {'steps': {'observation': np.zeros((3, 2), np.float32),
                       'language_instruction': ['open', 'open', 'close'],
                       'is_last': [False, False, True],
                       'is_terminal': [False, False, True]}}
  with EpisodeWriter(tmp_path, 'texts', episode) as writer:
    writer.add_episode(episode)
  result = stats.compute(writer.path, progress=False)
  assert result['language_instruction'].top() == [(b'open', 2), (b'close', 1)]
