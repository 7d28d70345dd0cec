"""rlds_lite.validate: every problem named by episode, step and field."""

import json

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest
import tensorflow as tf

import checks_testing
import rlds_lite
import rlds_testing
from rlds_lite import checks
from rlds_lite import dense
from rlds_lite import synthetic

LENGTHS = (5, 6, 4)


def _episodes():
  return [checks_testing.steps(n, seed=i) for i, n in enumerate(LENGTHS)]


def _set(episode, field, index, value):
  episode[field][index] = value


def _retype(episode, field, dtype):
  episode[field] = episode[field].astype(dtype)


def _cut(episode, field, length):
  """Gives one dense field ``length`` entries (the episode keeps its own)."""
  value = episode[field]
  episode[field] = np.resize(value, (length,) + value.shape[1:])


def _wider_obs(episode):
  episode['observation'] = np.zeros((len(episode['reward']), 3), np.float32)


# (id, mutate(episodes), expected (episode, step, field, kind), kwargs, tf_ok)
CASES = [
    ('is-first-not-at-start', lambda e: _set(e[1], 'is_first', 3, True),
     [(1, 3, 'is_first', 'is_first_not_at_start')], {}, True),
    ('is-first-missing', lambda e: _set(e[0], 'is_first', 0, False),
     [(0, 0, 'is_first', 'is_first_missing')], {}, True),
    ('is-last-missing', lambda e: _set(e[2], 'is_last', -1, False),
     [(2, 3, 'is_last', 'is_last_missing')], {}, True),
    ('is-last-early', lambda e: _set(e[1], 'is_last', 2, True),
     [(1, 2, 'is_last', 'is_last_early')], {}, True),
    ('is-terminal-not-last', lambda e: _set(e[0], 'is_terminal', 1, True),
     [(0, 1, 'is_terminal', 'is_terminal_not_last')], {}, True),
    ('empty', lambda e: e.__setitem__(1, checks_testing.steps(0)),
     [(1, None, 'steps', 'empty_episode')], {}, True),
    ('dtype-across-episodes', lambda e: _retype(e[2], 'reward', np.float64),
     [(2, None, 'reward', 'dtype_mismatch')], {}, False),
    ('structure-across-episodes', lambda e: e[1].pop('action'),
     [(1, None, 'action', 'structure_mismatch')], {}, False),
    ('shape-across-episodes', lambda e: _wider_obs(e[1]),
     [(1, 0, 'observation', 'shape_mismatch')], {}, True),
    ('nan', lambda e: _set(e[0], 'observation', (2, 1), np.nan),
     [(0, 2, 'observation', 'non_finite')], {}, True),
    ('inf', lambda e: _set(e[2], 'reward', 1, -np.inf),
     [(2, 1, 'reward', 'non_finite')], {}, True),
    ('reward-on-last-step', lambda e: _set(e[1], 'reward', -1, 1.5),
     [(1, 5, 'reward', 'last_step_value')], {'last_step_invalid': True}, True),
    ('discount-on-last-step', lambda e: _set(e[0], 'discount', -1, 1.0),
     [(0, 4, 'discount', 'last_step_value')], {'last_step_invalid': True},
     True),
    ('last-step-not-declared-invalid', lambda e: _set(e[0], 'discount', -1, 1),
     [], {}, True),
    ('missing-is-last-field', lambda e: [x.pop('is_last') for x in e],
     [(None, None, 'is_last', 'missing_field')], {}, True),
    ('field-shorter-than-episode', lambda e: _cut(e[1], 'observation', 4),
     [(1, None, 'observation', 'length_mismatch')], {}, True),
    ('field-longer-than-episode', lambda e: _cut(e[2], 'reward', 12),
     [(2, None, 'reward', 'length_mismatch')], {}, True),
]
TF_CASES = [c for c in CASES if c[4]]


def _bad(mutate):
  episodes = _episodes()
  mutate(episodes)
  return episodes


def _found(report):
  return [(p.episode, p.step, p.field, p.kind) for p in report.problems]


def as_dataset(episodes, nested):
  """Python episodes as a generator-built tf.data dataset (open shapes)."""
  first = episodes[0]
  signature = {'steps': {
      k: tf.TensorSpec([None] * np.ndim(v), tf.as_dtype(np.asarray(v).dtype))
      for k, v in first.items()}}
  data = tf.data.Dataset.from_generator(
      lambda: ({'steps': e} for e in episodes), output_signature=signature)
  return dense.to_nested(data) if nested else data


@pytest.mark.parametrize('mutate, expected, kwargs',
                         [c[1:4] for c in CASES], ids=[c[0] for c in CASES])
def test_python_episodes_report_each_problem(mutate, expected, kwargs):
  report = checks.validate(_bad(mutate), **kwargs)
  assert _found(report) == expected
  assert report.ok == (not expected)


# Nested steps go through the same rules; a few cases keep the suite fast.
NESTED_CASES = ('is-first-not-at-start', 'is-last-missing', 'empty',
                'shape-across-episodes', 'nan', 'reward-on-last-step')
TF_FORMS = [(c, False) for c in TF_CASES] + [
    (c, True) for c in TF_CASES if c[0] in NESTED_CASES]


@pytest.mark.parametrize(
    'case, nested', TF_FORMS,
    ids=[f'{c[0]}-{"nested" if n else "dense"}' for c, n in TF_FORMS])
def test_tf_datasets_report_the_same_problems(case, nested):
  _, mutate, expected, kwargs, _ = case
  report = checks.validate(as_dataset(_bad(mutate), nested), **kwargs)
  assert _found(report) == expected


def test_messages_name_episode_step_and_field():
  episodes = _episodes()
  episodes[1]['is_last'][[1, 2]] = True
  episodes[2]['observation'][[0, 3], 0] = np.nan
  report = checks.validate(episodes)
  assert [str(p) for p in report.problems] == [
      "episode 1, step 1, field 'is_last': only the final step (index 5) may "
      'have is_last=True; step 1, 2 has it.',
      "episode 2, step 0, field 'observation': NaN or Inf at step 0, 3.",
  ]


def test_field_lengths_are_named():
  episodes = _episodes()
  _cut(episodes[1], 'observation', 4)
  assert [str(p) for p in checks.validate(episodes).problems] == [
      "episode 1, field 'observation': has 4 entries along the step axis, but "
      'the episode has 6 steps (is_first has 6); every step field needs one '
      'entry per step.']


def test_steps_of_different_shapes_inside_an_episode():
  def gen():
    for x in ([1.0, 2.0], [1.0, 2.0, 3.0], [4.0, 5.0]):
      yield {'is_first': x[0] == 1.0 and len(x) == 2, 'is_last': x[0] == 4.0,
             'x': x}
  spec = {'is_first': tf.TensorSpec([], tf.bool),
          'is_last': tf.TensorSpec([], tf.bool),
          'x': tf.TensorSpec([None], tf.float32)}
  steps = tf.data.Dataset.from_generator(gen, output_signature=spec)
  report = checks.validate(tf.data.Dataset.from_tensors({'steps': steps}))
  assert _found(report) == [(0, 1, 'x', 'shape_mismatch')]
  assert 'step 1 has shape [3] but earlier steps have [2]' in (
      report.problems[0].message)


GOOD = {
    'terminal': [checks_testing.steps(4, terminal=True)],
    'truncated': [checks_testing.steps(4, terminal=False)],
    'one-step': [checks_testing.steps(1), checks_testing.steps(1, False)],
    'nested-fields': [{**checks_testing.flags(3),
                       'observation': {
                           'pos': np.zeros((3, 2)),
                           'image': np.zeros((3, 4, 4, 3), np.uint8)},
                       'action': (np.zeros(3), np.ones((3, 2), np.int32))}],
    'mixed-endings': synthetic.episode_arrays(num_episodes=6, seed=3),
}


@pytest.mark.parametrize('episodes', GOOD.values(), ids=GOOD.keys())
def test_good_datasets_are_ok(episodes):
  report = checks.validate(episodes, last_step_invalid=True)
  assert report.ok and report.complete and report.problems == []
  assert report.num_episodes == len(episodes)
  assert report.num_steps == sum(len(e['is_first']) for e in episodes)


@pytest.mark.parametrize('dense_steps', [False, True], ids=['nested', 'dense'])
def test_synthetic_tf_dataset_is_ok(dense_steps):
  report = checks.validate(
      synthetic.episodes(num_episodes=5, seed=2, dense=dense_steps),
      last_step_invalid=True)
  arrays = synthetic.episode_arrays(num_episodes=5, seed=2)
  assert (report.ok, report.num_episodes) == (True, 5)
  assert report.num_steps == sum(len(e['reward']) for e in arrays)


def reference_flag_problems(flag_episodes):
  """A plain-Python reference of the flag rules: (episode, step, kind)."""
  found = []
  for i, (first, last, terminal) in enumerate(flag_episodes):
    n = len(first)
    if n == 0:
      found.append((i, None, 'empty_episode'))
      continue
    if not first[0]:
      found.append((i, 0, 'is_first_missing'))
    extra = [t for t in range(1, n) if first[t]]
    if extra:
      found.append((i, extra[0], 'is_first_not_at_start'))
    if not last[n - 1]:
      found.append((i, n - 1, 'is_last_missing'))
    early = [t for t in range(n - 1) if last[t]]
    if early:
      found.append((i, early[0], 'is_last_early'))
    early = [t for t in range(n - 1) if terminal[t]]
    if early:
      found.append((i, early[0], 'is_terminal_not_last'))
  return found


@st.composite
def flag_episodes(draw):
  result = []
  for _ in range(draw(st.integers(1, 4))):
    n = draw(st.integers(0, 5))
    flags = st.lists(st.booleans(), min_size=n, max_size=n)
    result.append((draw(flags), draw(flags), draw(flags)))
  return result


@hypothesis.settings(max_examples=30)
@hypothesis.given(flag_episodes())
def test_flag_rules_match_the_reference(episodes):
  data = [{'is_first': np.array(f, bool), 'is_last': np.array(l, bool),
           'is_terminal': np.array(t, bool)} for f, l, t in episodes]
  report = checks.validate(data)
  assert [(p.episode, p.step, p.kind) for p in report.problems] == (
      reference_flag_problems(episodes))


def test_max_problems_stops_the_pass():
  episodes = [checks_testing.steps(3) for _ in range(6)]
  for episode in episodes:
    episode['is_last'][-1] = False
  report = checks.validate(episodes, max_problems=2)
  assert [p.episode for p in report.problems] == [0, 1]
  assert (report.complete, report.num_episodes) == (False, 2)
  assert report.headline().endswith('stopped early (max_problems reached)')


def test_num_episodes_limits_the_pass():
  report = checks.validate(synthetic.episodes(num_episodes=5, seed=0),
                              num_episodes=2)
  assert report.num_episodes == 2


def test_report_table_json_and_repr():
  episodes = _bad(lambda e: _set(e[2], 'is_last', -1, False))
  report = checks.validate(episodes)
  assert repr(report) == ("ValidationReport(source='<episodes>', ok=False, "
                          'problems=1, episodes=3, steps=15)')
  lines = report.table().splitlines()
  assert lines[0] == '<episodes>: 1 problem in 3 episodes (15 steps)'
  assert lines[1].split() == ['episode', 'step', 'field', 'kind', 'message']
  assert lines[3].split()[:4] == ['2', '3', 'is_last', 'is_last_missing']
  data = json.loads(report.to_json())
  assert data['ok'] is False and data['episodes'] == 3 and data['steps'] == 15
  assert data['problems'] == [{
      'episode': 2, 'step': 3, 'field': 'is_last', 'kind': 'is_last_missing',
      'message': 'the final step (index 3) must have is_last=True.'}]
  assert str(checks.validate(_episodes())) == (
      '<episodes>: OK in 3 episodes (15 steps)')


@pytest.mark.parametrize('nested', [False, True], ids=['dense', 'nested'])
def test_repair_is_last_only_when_asked(nested):
  bad = _bad(lambda e: (_set(e[0], 'is_last', -1, False),
                        _set(e[1], 'is_last', 2, True)))
  data = as_dataset(bad, nested)
  assert checks.validate(data).repaired is None
  report = checks.validate(data, repair='is_last')
  assert report.repairs == ('is_last',)
  assert [p.kind for p in report.problems] == ['is_last_missing',
                                               'is_last_early']
  assert report.headline().endswith('repaired: is_last')
  fixed = report.repaired
  assert checks.validate(fixed).ok
  assert isinstance(fixed.element_spec['steps'], tf.data.DatasetSpec) == nested
  if nested:
    fixed = dense.to_dense(fixed)
  for episode, original in zip(fixed.as_numpy_iterator(), bad):
    n = len(original['reward'])
    np.testing.assert_array_equal(episode['steps']['is_last'],
                                  np.arange(n) == n - 1)
    np.testing.assert_array_equal(episode['steps']['reward'],
                                  original['reward'])


def test_repair_functions_and_python_repairs():
  bad = _bad(lambda e: (_set(e[0], 'is_first', 0, False),
                        _set(e[2], 'is_last', -1, False)))
  fixed = checks.repair_is_first(checks.repair_is_last(as_dataset(bad, True)))
  assert checks.validate(fixed).ok
  report = checks.validate(bad, repair=True)
  assert report.repairs == ('is_first', 'is_last')
  assert checks.validate(report.repaired).ok
  with pytest.raises(ValueError, match="unknown repair 'is_terminal'"):
    checks.validate(bad, repair='is_terminal')


def test_not_an_rlds_dataset_raises():
  with pytest.raises(ValueError, match="elements must be episode dicts with a "
                     "'steps' entry"):
    checks.validate(tf.data.Dataset.range(3))
  with pytest.raises(FileNotFoundError, match='does not exist'):
    checks.validate('/no/such/rlds/dir')


def test_image_dataset_on_disk(tmp_path):
  episodes = checks_testing.catch_episodes(3)
  episodes[1]['is_first'][4] = True
  path = checks_testing.write_catch(str(tmp_path), episodes)
  report = checks.validate(path, last_step_invalid=True)
  assert report.source == f'{path} [train]'
  assert _found(report) == [(1, 4, 'is_first', 'is_first_not_at_start')]
  assert report.num_steps == sum(len(e['action']) for e in episodes)


def test_progress_bar_on_request(capsys):
  checks.validate(_episodes(), progress=True)
  assert 'validate <episodes>' in capsys.readouterr().err
  checks.validate(_episodes(), progress=False)
  assert capsys.readouterr().err == ''


def test_nested_steps_with_fixed_shapes_take_the_dense_path():
  bad = _bad(lambda e: (_set(e[0], 'observation', (1, 0), np.inf),
                        _set(e[2], 'is_last', 0, True)))
  data = tf.data.Dataset.from_tensors(
      {'steps': tf.data.Dataset.from_tensor_slices(bad[0])}).concatenate(
          tf.data.Dataset.from_tensors(
              {'steps': tf.data.Dataset.from_tensor_slices(bad[2])}))
  assert data.element_spec['steps'].element_spec['observation'].shape == [2]
  assert _found(checks.validate(data)) == [
      (0, 1, 'observation', 'non_finite'), (1, 0, 'is_last', 'is_last_early')]


# Non-zero last-step values: a notice (field, episodes), never silence.


def _last(episode, **values):
  for key, value in values.items():
    episode[key][-1] = value
  return episode


LAST_STEP_NOTICES = {
    'terminal_success_reward': (
        lambda: [_last(checks_testing.steps(4, True), reward=1.0),
                 checks_testing.steps(3, False, seed=1)], {'reward': 1}),
    'truncated_last_actions': (
        lambda: [_last(checks_testing.steps(4, False), action=2),
                 _last(checks_testing.steps(2, False, seed=1), action=1)],
        {'action': 2}),
    'one_step_episode': (
        lambda: [_last(checks_testing.steps(1, True), reward=1.0,
                       discount=1.0)], {'discount': 1, 'reward': 1}),
    'zero_last_values': (
        lambda: [checks_testing.steps(4, True), checks_testing.steps(1)], {}),
}


def _notices(report):
  return {n.field: n.episodes for n in report.notices}


@pytest.mark.parametrize('form', ['python', 'dense', 'nested'])
@pytest.mark.parametrize('make, counts', LAST_STEP_NOTICES.values(),
                         ids=LAST_STEP_NOTICES.keys())
def test_nonzero_last_step_values_are_noticed(make, counts, form):
  # Before: 'OK' and nothing else, while stats and converters dropped them.
  episodes = make()
  data = episodes if form == 'python' else as_dataset(episodes,
                                                      form == 'nested')
  report = checks.validate(data)
  assert report.ok and report.problems == []
  assert _notices(report) == counts
  assert all(n.kind == 'last_step_values' for n in report.notices)
  if counts:
    assert report.headline().endswith(
        f'; {len(counts)} notice{"s" if len(counts) > 1 else ""}')
    field, count = sorted(counts.items())[0]
    assert report.table().splitlines()[1] == (
        f"notice: field '{field}': non-zero on the last step of {count} of "
        f'{len(episodes)} episodes; RLDS says it is invalid, so stats, '
        'transitions and converters leave it out by default: if it is real '
        "(e.g. a success reward), use last_step='valid' (--last-step valid).")
  assert _notices(checks.validate(data, last_step='valid')) == {}


def test_notices_are_in_the_json_report():
  report = checks.validate(LAST_STEP_NOTICES['terminal_success_reward'][0]())
  data = json.loads(report.to_json())
  assert data['ok'] is True
  assert [(n['field'], n['kind'], n['episodes']) for n in data['notices']] == [
      ('reward', 'last_step_values', 1)]


def test_declared_invalid_last_steps_are_problems_not_notices():
  episodes = [_last(checks_testing.steps(4, True), reward=1.0, action=1)]
  report = checks.validate(episodes, last_step_invalid=True)
  assert _found(report) == [(0, 3, 'reward', 'last_step_value')]
  assert _notices(report) == {'action': 1}


def test_last_step_must_be_valid_or_invalid():
  with pytest.raises(ValueError, match="validate: last_step must be"):
    checks.validate(_episodes(), last_step='keep')


def test_last_step_invalid_contradicts_last_step_valid():
  with pytest.raises(ValueError) as raised:
    checks.validate(_episodes(), last_step_invalid=True, last_step='valid')
  assert str(raised.value) == (
      "validate: last_step_invalid=True and last_step='valid' contradict each "
      'other (invalid final-step values, or real ones?); pass one of them.')


def test_an_undecodable_frame_is_named_by_field_and_step(tmp_path):
  # TFDS's decode error names no field; the readers find the frame.
  _, bad = rlds_testing.camera_datasets_good_and_undecodable(
      tmp_path, only_at=(2, 3))
  report = rlds_lite.validate(bad)
  assert not report.ok and not report.complete
  [problem] = report.problems
  assert (problem.episode, problem.step, problem.field, problem.kind) == (
      2, 3, 'observation/camera', 'undecodable')
  # The shard holding the frame (it was dataset_info.json).
  assert problem.file == f'{bad}/cams-train.tfrecord-00000'
  assert problem.message == (
      f"{bad}/cams-train.tfrecord-00000: episode 2 of split 'train', field "
      "'observation/camera': step 3 does not decode as the image its feature "
      'declares in dataset_info.json (Unknown image file format. One of JPEG, '
      "JPEG XL, PNG, GIF, BMP, WebP required); its bytes begin b'not a pn'.")


def test_an_undecodable_episode_is_reported_when_its_frames_cannot_be_read(
    tmp_path, monkeypatch):
  # If reading the episode's frames apart fails too, TFDS's error stands.
  _, bad = rlds_testing.camera_datasets_good_and_undecodable(
      tmp_path, only_at=(2, 3))

  def unreadable(*args, **kwargs):
    raise tf.errors.InvalidArgumentError(None, None, 'cannot read')

  monkeypatch.setattr(rlds_lite.diagnosis, 'first_bad_frame', unreadable)
  [problem] = rlds_lite.validate(bad).problems
  assert (problem.episode, problem.step, problem.field, problem.kind) == (
      2, None, None, 'undecodable')
  assert "episode 2 of split 'train': its data" in problem.message
  assert 'does not decode as the image' not in problem.message
  assert problem.file == f'{bad}/dataset_info.json'
