"""Tests of rlds_lite.pipeline.checkpointing: a resumed run continues exactly."""

import pytest
import tensorflow as tf

import rlds_lite
import rlds_testing
from rlds_lite import synthetic
from rlds_lite.pipeline import checkpointing
from rlds_lite.pipeline import mixing
from rlds_lite.pipeline import sharding
from rlds_lite.pipeline import transitions
from rlds_lite.pipeline import windows
from rlds_lite.tfds import write_dataset
from rlds_lite.pipeline.pools import Pooling
from rlds_lite.sample_kinds import Transitions, Windows


def episodes(seed=0, num=12):
  return synthetic.episodes(num_episodes=num, max_length=12, seed=seed,
                            dense=True)


def windows_pipeline(pool='samples', seed=1, episodes_seed=0, epochs=1):
  return windows.windows_dataset(
      episodes(episodes_seed).repeat(epochs), Windows(3), 4, seed=seed,
      pooling=Pooling(pool, pool_episodes=4, episode_shuffle_buffer=8),
      episode_fields='episode_id')


@pytest.fixture(scope='module')
def toy_path(tmp_path_factory):
  return write_dataset(episodes(seed=5), tmp_path_factory.mktemp('ckpt'),
                       'toy')


def shuffled_batches(seed):
  return tf.data.Dataset.range(seed * 1000, seed * 1000 + 90).shuffle(
      30, seed=seed).batch(3)


EPOCH_BATCHES = 11  # Batches of one pass of windows_pipeline().

PIPELINES = {  # name: (make(path), batches taken before saving)
    # Stops in the second epoch (the episodes repeated: see below).
    'windows_samples_pool_two_epochs': (
        lambda path: windows_pipeline('samples', epochs=2), EPOCH_BATCHES + 2),
    'windows_episodes_pool': (lambda path: windows_pipeline('episodes'), 3),
    'transitions_sharded_from_tfds': (lambda path: (
        transitions.transitions_dataset(
            sharding.shard(path, 1, 2, seed=3), Transitions(n=2, gamma=0.9), 4,
            seed=2, pooling=Pooling(pool_episodes=4),
            episode_fields='episode_id')),
                                      3),
    'exact_mix': (lambda path: mixing.mix(
        [shuffled_batches(1), shuffled_batches(2)], (0.6, 0.4), exact=True,
        batch_size=5, batched=True, seed=9), 3),
}


def as_numpy(batches):
  return [tf.nest.map_structure(lambda x: x.numpy(), b) for b in batches]


@pytest.mark.parametrize('make,stop', list(PIPELINES.values()),
                         ids=list(PIPELINES))
def test_resumed_run_continues_the_uninterrupted_one(make, stop, toy_path,
                                                     tmp_path):
  run = checkpointing.ResumableIterator(make(toy_path))
  for _ in range(stop):
    next(run)
  path = run.save(tmp_path / 'run' / 'data')
  rest = list(run.numpy())  # The run goes on uninterrupted.
  assert len(rest) > 3
  resumed = checkpointing.ResumableIterator(make(toy_path))
  resumed.restore(path)
  assert resumed.position == stop
  assert run.position == stop + len(rest)
  if stop > EPOCH_BATCHES:
    assert run.position == 2 * EPOCH_BATCHES
  rlds_testing.assert_structures_equal(list(resumed.numpy()), rest)


def transitions_pipeline(epochs):
  return transitions.transitions_dataset(
      episodes().repeat(epochs), Transitions(n=2, gamma=0.9), 4, seed=2,
      pooling=Pooling(pool_episodes=4, episode_shuffle_buffer=8),
      episode_fields='episode_id')


EPOCHS = {  # name: (make(epochs), batches of one epoch)
    'windows_samples_pool': (
        lambda epochs: windows_pipeline('samples', epochs=epochs), 11),
    'windows_episodes_pool': (
        lambda epochs: windows_pipeline('episodes', epochs=epochs), 11),
    'transitions': (transitions_pipeline, 14),
}
# An outer repeat() (pipeline.repeat(3)) draws each pass's seeds from a
# counter tf.data saves only while its iterator lives; read-ahead ends it
# before the pass does, so a save late in a pass resumed the next pass
# otherwise (the module docstring). Repeating the episodes is exact.
STOPS = {'late_in_epoch_1': lambda n: n - 2,
         'at_the_epoch_boundary': lambda n: n,
         'early_in_epoch_2': lambda n: n + 1}


@pytest.mark.parametrize('stop', list(STOPS.values()), ids=list(STOPS))
@pytest.mark.parametrize('make,epoch', list(EPOCHS.values()), ids=list(EPOCHS))
def test_resume_across_epochs_of_repeated_episodes(make, epoch, stop,
                                                   tmp_path):
  stop = stop(epoch)
  full = as_numpy(make(3))
  assert abs(len(full) - 3 * epoch) <= 2
  run = checkpointing.ResumableIterator(make(3))
  for _ in range(stop):
    next(run)
  path = run.save(tmp_path / 'data')
  resumed = checkpointing.ResumableIterator(make(3))
  resumed.restore(path)
  rlds_testing.assert_structures_equal(list(resumed.numpy()), full[stop:])


@pytest.mark.parametrize('stop', [0, 9], ids=['start', 'exhausted'])
def test_resume_at_the_ends(stop, tmp_path):
  make = lambda: tf.data.Dataset.range(9).shuffle(9, seed=0).batch(1)
  full = [b.tolist() for b in make().as_numpy_iterator()]
  it = checkpointing.ResumableIterator(make())
  head = [next(it).numpy().tolist() for _ in range(stop)]
  path = it.save(tmp_path / 'ckpt')
  resumed = checkpointing.ResumableIterator(make())
  resumed.restore(path)
  assert head + [b.tolist() for b in resumed.numpy()] == full


def test_iterator_checkpoint_nests_in_a_training_checkpoint(tmp_path):
  make = lambda: tf.data.Dataset.range(10)
  weights = tf.Variable(1.0)
  it = checkpointing.ResumableIterator(make())
  next(it), next(it)
  weights.assign(3.0)
  train_ckpt = tf.train.Checkpoint(weights=weights, data=it.checkpoint)
  path = train_ckpt.write(str(tmp_path / 'train'))
  new_weights = tf.Variable(0.0)
  resumed = checkpointing.ResumableIterator(make())
  tf.train.Checkpoint(weights=new_weights, data=resumed.checkpoint).read(path)
  assert float(new_weights.numpy()) == 3.0
  assert [int(x) for x in resumed] == list(range(2, 10))
  assert resumed.position == 10


def test_pooled_pipelines_need_external_state_ignored(tmp_path):
  it = checkpointing.ResumableIterator(windows_pipeline(), external_state='fail')
  next(it)
  with pytest.raises(tf.errors.FailedPreconditionError, match='is stateful'):
    it.save(tmp_path / 'ckpt')


def test_element_spec_is_the_datasets():
  ds = tf.data.Dataset.range(3).batch(2)
  assert checkpointing.ResumableIterator(ds).element_spec == ds.element_spec


BAD = {
    'not_a_dataset': (lambda tmp: checkpointing.ResumableIterator([1, 2]),
                      TypeError, 'dataset must be a tf.data.Dataset, got list'),
    'bad_policy': (
        lambda tmp: checkpointing.ResumableIterator(
            tf.data.Dataset.range(3), external_state='maybe'), ValueError,
        r"external_state must be one of \['fail', 'ignore', 'warn'\], got "
        "'maybe'"),
    'missing_checkpoint': (
        lambda tmp: checkpointing.ResumableIterator(
            tf.data.Dataset.range(3)).restore(tmp / 'nothing'),
        FileNotFoundError, r"no checkpoint at '.*nothing' \(no .*nothing.index\)"),
}


@pytest.mark.parametrize('make,error,message', list(BAD.values()),
                         ids=list(BAD))
def test_bad_input_raises_clear_error(make, error, message, tmp_path):
  with pytest.raises(error, match=message):
    make(tmp_path)


def test_restoring_into_another_pipeline_fails(tmp_path):
  it = checkpointing.ResumableIterator(tf.data.Dataset.range(5).batch(2))
  next(it)
  path = it.save(tmp_path / 'ckpt')
  other = checkpointing.ResumableIterator(
      tf.data.Dataset.range(5).map(lambda x: x * 2))
  with pytest.raises(tf.errors.NotFoundError):
    other.restore(path)
