"""(seed, position): the batch after a restore is the batch that would have come."""

import json

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite import random_access as ra


def _iterator(chunks, **kwargs):
  kwargs = {'seed': 4, 'batch_size': 16, 'sample_info': True, **kwargs}
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
  it = _iterator(vector_chunks, num_epochs=1)
  sizes = [len(_ids(b)) for b in it]
  assert sizes == [16, 16, 16, 12] and it.position == 60
  again = _iterator(vector_chunks, num_epochs=1)
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
                     r'pipeline \(fingerprint .*\): another dataset or split'):
    it.restore(path)
  other = _iterator(vector_chunks, batch_size=8)   # Another global batch.
  with pytest.raises(ra.StateMismatchError):
    other.restore(_iterator(vector_chunks).state())


def test_restore_bad_files(vector_chunks, tmp_path):
  it = _iterator(vector_chunks)
  with pytest.raises(FileNotFoundError, match='no state at'):
    it.restore(tmp_path / 'missing.json')
  (tmp_path / 'bad.json').write_text('{"seed": 1}')
  with pytest.raises(ValueError, match='is not a saved random-access state'):
    it.restore(tmp_path / 'bad.json')
