"""(seed, position): the batch after a restore is the batch that would have come."""

import json
import re

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite import random_access as ra
import random_access_testing as testing


def _iterator(chunks, **kwargs):
  kwargs = {'seed': 4, 'batch_size': 16,
            'outputs': ra.Outputs(sample_info=True), **kwargs}
  return ra.SampleIterator(chunks, ra.Windows(4), **kwargs)


def _ids(batch):
  return batch['sample_id'].numpy().tolist()


@pytest.mark.parametrize('taken', [1, 2, 15], ids=['mid-epoch', 'mid-epoch-2',
                                                    'later-epoch'])
def test_restore_gives_the_next_batch(vector_chunks, tmp_path, taken):
  it = _iterator(vector_chunks)
  for _ in range(taken):
    next(it)
  path = it.save(tmp_path / 'state.json')
  expected = [_ids(next(it)) for _ in range(3)]
  again = _iterator(vector_chunks, seed=0)       # The seed comes from the state.
  again.restore(path)
  assert (again.seed, again.position) == (4, 16 * taken)
  assert [_ids(next(again)) for _ in range(3)] == expected


def test_restore_at_an_epoch_boundary(vector_chunks):
  # 60 samples, batches of 20: the state after 3 batches is the epoch's end.
  it = _iterator(vector_chunks, batch_size=20)
  first_epoch = sum((_ids(next(it)) for _ in range(3)), [])
  assert sorted(first_epoch) == list(range(60)) and it.position == 60
  state = it.state()
  expected = _ids(next(it))
  again = _iterator(vector_chunks, batch_size=20)
  again.restore(state)
  assert _ids(next(again)) == expected
  assert json.loads(json.dumps(state)) == state


def test_finite_epochs_end_and_resume_at_the_end(vector_chunks):
  it = _iterator(vector_chunks, epochs=ra.Epochs(num_epochs=1))
  sizes = [len(_ids(b)) for b in it]
  assert sizes == [16, 16, 16, 12] and it.position == 60
  again = _iterator(vector_chunks, epochs=ra.Epochs(num_epochs=1))
  again.restore(it.state())
  assert list(again) == []


def test_restore_through_a_tf_train_checkpoint(vector_chunks, tmp_path):
  it = _iterator(vector_chunks)
  next(it)
  model = tf.Variable(1.0)
  path = tf.train.Checkpoint(model=model, data=it.checkpoint).write(
      str(tmp_path / 'ckpt'))
  expected = _ids(next(it))
  again = _iterator(vector_chunks, seed=123)
  tf.train.Checkpoint(model=tf.Variable(0.0), data=again.checkpoint).read(
      path).assert_consumed()
  assert _ids(next(again)) == expected


def test_restore_from_another_dataset_is_an_error(vector_chunks, other_chunks,
                                                  tmp_path):
  path = _iterator(other_chunks).save(tmp_path / 'other.json')
  it = _iterator(vector_chunks)
  with pytest.raises(ra.StateMismatchError,
                     match=r"the state in '.*other.json' was saved by another "
                     r'pipeline \(fingerprint .*\): another dataset or split, '
                     r'sample kind, weights, order or global batch size. '
                     r'Restore it into the pipeline that saved it.$'):
    it.restore(path)
  other = _iterator(vector_chunks, batch_size=8)   # Another global batch.
  with pytest.raises(ra.StateMismatchError):
    other.restore(_iterator(vector_chunks).state())


@pytest.fixture(name='twin_chunks', scope='module')
def _twin_chunks(tmp_path_factory):
  """The vector dataset's twin: same name, features and lengths; other values."""
  source = testing.write_vectors(tmp_path_factory.mktemp('twin'), offset=1000)
  return ra.convert(source, chunk_steps=4, progress=False)


def test_a_state_names_the_data_not_only_its_shape(vector_chunks,
                                                   twin_chunks, tmp_path):
  it, twin = _iterator(vector_chunks), _iterator(twin_chunks)
  assert (it.plan.fingerprint_v2 == twin.plan.fingerprint_v2 and
          it.fingerprint != twin.fingerprint)
  path = it.save(tmp_path / 'state.json')
  with pytest.raises(ra.StateMismatchError, match=re.escape(
      f"the state in '{path}' was saved by another pipeline (fingerprint "
      f"'{it.fingerprint}', this one '{twin.fingerprint}')")):
    twin.restore(path)
  # A state of format 2 (saved before states named the data) still restores.
  twin.restore({**it.state(), 'format': 'rlds_lite.random_access.state/2',
                'fingerprint': it.plan.fingerprint_v2})
  assert (twin.seed, twin.position) == (4, 0)


def test_restore_bad_files(vector_chunks, tmp_path):
  it = _iterator(vector_chunks)
  with pytest.raises(FileNotFoundError, match='no state at'):
    it.restore(tmp_path / 'missing.json')
  (tmp_path / 'bad.json').write_text('{"seed": 1}')
  with pytest.raises(ValueError, match='is not a saved random-access state'):
    it.restore(tmp_path / 'bad.json')
  for name, text in [('deep.json', '[' * 101 + ']' * 101),
                     ('deeper.json', '{"seed": ' + '[' * 100_000)]:
    (tmp_path / name).write_text(text)
    with pytest.raises(ValueError) as raised:  # Was a RecursionError.
      it.restore(tmp_path / name)
    assert str(raised.value) == (
        f"SampleIterator.restore: the state in '{tmp_path / name}' nests "
        'deeper than 100 levels (refused); it is not a saved random-access '
        'state.')


@pytest.mark.parametrize('other', [dict(batch_size=8), dict(epochs=ra.Epochs(order='uniform')),
                                   dict(kind=ra.Windows(3))],
                         ids=['batch size', 'order', 'kind'])
def test_restore_into_another_pipeline_is_an_error(vector_chunks, other):
  state = _iterator(vector_chunks).state()
  kind = other.pop('kind', ra.Windows(4))
  it = ra.SampleIterator(vector_chunks, kind, **{'batch_size': 16, **other})
  with pytest.raises(ra.StateMismatchError, match='order or global batch'):
    it.restore(state)


def test_restore_into_the_source_chunked_again(vectors, vector_chunks,
                                               tmp_path):
  # chunk_steps changes how samples are read, not which: same batches.
  it = _iterator(vector_chunks)
  next(it)
  state = it.state()
  rechunked = ra.convert(vectors, tmp_path / 'c8', chunk_steps=8,
                         progress=False)
  again = _iterator(rechunked, seed=0)
  again.restore(state)
  tf.nest.map_structure(np.testing.assert_array_equal, next(again), next(it))


def test_a_state_of_format_1_still_restores(vector_chunks, vectors, tmp_path):
  it = _iterator(vector_chunks)
  state = {**it.state(), 'format': 'rlds_lite.random_access.state/1',
           'fingerprint': it.plan.fingerprint_v1}   # As rlds_lite saved it.
  again = _iterator(vector_chunks, seed=0)
  again.restore(state)
  assert again.seed == 4
  rechunked = _iterator(ra.convert(vectors, tmp_path / 'c8', chunk_steps=8,
                                   progress=False))
  with pytest.raises(ra.StateMismatchError, match=r'or \(a state of format '
                     r'1\) another chunk_steps. Restore it'):
    rechunked.restore(state)


AGAIN = 'Restore the state save() wrote (or a state() dict) as it was.'
POSITIONS = 'an int from 0 to 4611686018427387903'
SEEDS = 'an int from -9223372036854775808 to 9223372036854775807'
BAD_STATES = {
    'no position': (lambda s: s.pop('position'), ValueError,
                    "SampleIterator.restore: the state given has no "
                    f"'position'. {AGAIN}"),
    'no seed nor fingerprint': (
        lambda s: [s.pop('seed'), s.pop('fingerprint')], ValueError,
        "SampleIterator.restore: the state given has no 'seed', "
        f"'fingerprint'. {AGAIN}"),
    'position a string': (
        lambda s: s.update(position='ten'), ValueError,
        "SampleIterator.restore: the state given has position 'ten'; it "
        f'must be {POSITIONS}. {AGAIN}'),
    'position negative': (
        lambda s: s.update(position=-16), ValueError,
        'SampleIterator.restore: the state given has position -16; it must '
        f'be {POSITIONS}. {AGAIN}'),
    'position a float': (
        lambda s: s.update(position=16.0), ValueError,
        'SampleIterator.restore: the state given has position 16.0; it must '
        f'be {POSITIONS}. {AGAIN}'),
    'position past int64': (
        lambda s: s.update(position=1 << 64), ValueError,
        'SampleIterator.restore: the state given has position '
        f'18446744073709551616; it must be {POSITIONS}. {AGAIN}'),
    'position without room to count on': (
        lambda s: s.update(position=1 << 62), ValueError,
        'SampleIterator.restore: the state given has position '
        f'4611686018427387904; it must be {POSITIONS}. {AGAIN}'),
    'seed None': (
        lambda s: s.update(seed=None), ValueError,
        'SampleIterator.restore: the state given has seed None; it must be '
        f'{SEEDS}. {AGAIN}'),
    'seed past int64': (
        lambda s: s.update(seed=1 << 63), ValueError,
        'SampleIterator.restore: the state given has seed '
        f'9223372036854775808; it must be {SEEDS}. {AGAIN}'),
    'seed below int64': (
        lambda s: s.update(seed=-(1 << 63) - 1), ValueError,
        'SampleIterator.restore: the state given has seed '
        f'-9223372036854775809; it must be {SEEDS}. {AGAIN}'),
    'seed true': (
        lambda s: s.update(seed=True), ValueError,
        'SampleIterator.restore: the state given has seed True; it must be '
        f'{SEEDS}. {AGAIN}'),
    'fingerprint a number': (
        lambda s: s.update(fingerprint=7), ValueError,
        'SampleIterator.restore: the state given has fingerprint 7; it must '
        f'be a string. {AGAIN}'),
}


@pytest.mark.parametrize('name', BAD_STATES)
def test_restore_a_hand_edited_state(vector_chunks, name):
  edit, error, message = BAD_STATES[name]
  it = _iterator(vector_chunks)
  state = it.state()
  edit(state)
  with pytest.raises(error, match='^' + re.escape(message) + '$'):
    it.restore(state)
  assert (it.seed, it.position) == (4, 0)


@pytest.mark.parametrize('field, value, message', [
    ('position', 1 << 64, 'position 18446744073709551616; it must be '
     f'{POSITIONS}. {AGAIN}'),
    ('seed', -(1 << 64), f'seed -18446744073709551616; it must be {SEEDS}. '
     f'{AGAIN}'),
    ('position', 61, 'position 61, past the end of this pipeline (60: '
     'num_epochs times its samples); the pipeline that saved it never got '
     'there.'),
], ids=['position-out-of-range', 'seed-out-of-range', 'position-past-the-end'])
def test_restore_an_edited_state_file_names_it(vector_chunks, tmp_path, field,
                                               value, message):
  it = _iterator(vector_chunks, epochs=ra.Epochs(num_epochs=1))
  path = it.save(tmp_path / 'state.json')
  with open(path) as f:
    state = json.load(f)
  with open(path, 'w') as f:
    json.dump({**state, field: value}, f)
  with pytest.raises(ValueError) as raised:
    it.restore(path)
  assert str(raised.value) == (
      f"SampleIterator.restore: the state in '{path}' has {message}")
  assert (it.seed, it.position) == (4, 0)


def test_restore_neither_a_file_nor_a_state(vector_chunks, tmp_path):
  it = _iterator(vector_chunks)
  with pytest.raises(IsADirectoryError, match=re.escape(
      f"SampleIterator.restore: '{tmp_path}' is a directory; pass the path "
      'of the file save() wrote.')):
    it.restore(tmp_path)
  with pytest.raises(TypeError, match=re.escape(
      'SampleIterator.restore: pass the path save() returned or a state() '
      'dict, got None.')):
    it.restore(None)
