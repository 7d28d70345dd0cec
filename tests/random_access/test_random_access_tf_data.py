"""sample_batches: uniform batches, epochs, hosts, weighted mixing."""

import os
import re
import warnings

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite import pipeline
from rlds_lite import random_access as ra
from rlds_lite import option_objects
import random_access_testing as testing
import rlds_testing

INFO = ra.Outputs(sample_info=True)


def _ids(ds):
  return [b['sample_id'].numpy().tolist() for b in ds]


def test_one_epoch_is_every_sample_once(vector_chunks):
  ds = ra.sample_batches(vector_chunks, ra.Windows(4), batch_size=16, seed=2,
                         epochs=ra.Epochs(num_epochs=2), outputs=INFO)
  batches = _ids(ds)
  flat = sum(batches, [])
  assert [len(b) for b in batches] == [16] * 7 + [8]   # 60 samples x 2.
  assert sorted(flat[:60]) == list(range(60)) == sorted(flat[60:])
  assert flat[:60] != flat[60:]


@pytest.mark.parametrize('order', ['spread', 'uniform'])
def test_batches_are_the_sampler_s_draws(vector_chunks, order):
  ds = ra.sample_batches(vector_chunks, ra.Windows(4), batch_size=8, seed=9,
                         position=20, outputs=INFO,
                         epochs=ra.Epochs(order=order))
  index = ra.SampleIndex.build(ra.Windows(4), ra.ChunkStorage(vector_chunks))
  sampler = ra.Sampler([60], seed=9, batch_size=8, order=order,
                       episode_counts=[np.bincount(index.episode)])
  want = sampler.numpy_ids(range(20, 20 + 24))[1].reshape(3, 8)
  assert _ids(ds.take(3)) == want.tolist()


@pytest.mark.parametrize('num_epochs', [2, None])
def test_reading_several_batches_at_once_gives_the_same_batches(
    vector_chunks, num_epochs):
  from rlds_lite.random_access import tf_data  # pylint: disable=g-import-not-at-top
  p = tf_data.plan(vector_chunks, ra.Windows(4), 8, seed=3,
                   epochs=ra.Epochs(num_epochs=num_epochs), outputs=INFO)
  def batches(group):
    ds = tf_data.dataset_of_plan(p, 5, batches_per_read=group)
    return [{k: v.tolist() for k, v in b.items()}
            for b in ds.take(20).as_numpy_iterator()]
  one = batches(1)
  # 2 epochs of 60 samples from position 5: 14 full batches and one of 3.
  assert len(one) == (15 if num_epochs else 20)
  for group in (3, 32):   # Groups that do not divide the batches, and more.
    assert batches(group) == one, group


def test_drop_remainder(vector_chunks):
  ds = ra.sample_batches(vector_chunks, ra.Windows(4), batch_size=16,
                         epochs=ra.Epochs(1, drop_remainder=True))
  assert [int(b['step'].shape[0]) for b in ds] == [16, 16, 16]
  with pytest.raises(ValueError, match=r'^random access: drop_remainder=True '
                     r'gives no batch: 1 epoch\(s\) hold 60 samples, fewer '
                     'than the global batch of 64.'):
    ra.sample_batches(vector_chunks, ra.Windows(4), batch_size=64,
                      epochs=ra.Epochs(1, drop_remainder=True))
  two = ra.sample_batches(vector_chunks, ra.Windows(4), batch_size=64,
                          epochs=ra.Epochs(2, drop_remainder=True))
  assert [int(b['step'].shape[0]) for b in two] == [64]


def test_batches_mix_nearly_every_episode(vectors, tmp_path):
  # 40 episodes of 5 steps: a batch of 32 windows from 32 episodes at best.
  import random_access_testing as testing
  source = testing.write_vectors(tmp_path, 'many', lengths=[5] * 40)
  chunks = ra.convert(source, chunk_steps=4, progress=False)
  def quality(order):
    ds = ra.sample_batches(chunks, ra.Windows(2), batch_size=32, seed=0,
                           outputs=INFO, epochs=ra.Epochs(order=order))
    return pipeline.shuffle_quality(
        ds.take(20), episode_field='episode_index').mean_distinct_episodes
  assert quality('spread') == 32     # 40 episodes of 4 windows: 32 distinct.
  assert 18 < quality('uniform') < 28   # A uniform draw: ~22.5 expected.


@pytest.mark.parametrize('num_hosts', [1, 2, 3, 4])
def test_hosts_together_give_the_single_host_batches(vector_chunks, num_hosts):
  single = _ids(ra.sample_batches(vector_chunks, ra.Windows(4),
                                  batch_size=4 * num_hosts, seed=1,
                                  epochs=ra.Epochs(1), outputs=INFO))
  hosts = [_ids(ra.sample_batches(vector_chunks, ra.Windows(4), batch_size=4,
                                  seed=1, epochs=ra.Epochs(1), outputs=INFO,
                                  sharding=ra.Sharding(num_hosts, h)))
           for h in range(num_hosts)]
  together = [sum((h[k] for h in hosts if k < len(h)), [])
              for k in range(len(single))]
  assert together == single
  flat = sum(sum(hosts, []), [])
  assert sorted(flat) == list(range(60))        # No overlap, none missing.


def test_weighted_mixing(vector_chunks, other_chunks):
  ds = ra.sample_batches({'a': vector_chunks, 'b': other_chunks},
                         ra.Windows(4), batch_size=8,
                         weights={'a': 0.75, 'b': 0.25}, seed=0,
                         outputs=INFO)
  for batch in ds.take(10):
    source = batch['dataset_index'].numpy()
    assert np.bincount(source, minlength=2).tolist() == [6, 2]
    # The other dataset's observations are offset by 1000.
    assert ((batch['observation'].numpy()[:, 0, 0] >= 1000) == (source == 1)).all()


def test_bad_input(vector_chunks, vectors):
  with pytest.raises(ValueError, match='weights has keys'):
    ra.sample_batches({'a': vector_chunks}, ra.Windows(2), 4, weights={'b': 1.0})
  with pytest.raises(ValueError, match='num_epochs needs one source'):
    ra.sample_batches([vector_chunks, vector_chunks], ra.Windows(2), 4,
                      weights=[0.5, 0.5], epochs=ra.Epochs(1))
  with pytest.raises(ra.NotChunkedError, match=(
      r"is an RLDS episode dataset \(tfrecord shards\). Random access reads a "
      r"chunk dataset: convert it once with rlds_lite.random_access.convert"
      r".* or `rlds-lite chunk .*`")):
    ra.sample_batches(vectors, ra.Windows(2), 4)


ARGUMENT_ERRORS = {
    'kind is the class': (
        lambda v, c: ra.sample_batches(v, ra.Windows, 4), TypeError,
        'random access: kind must be a sample kind: Windows(...), '
        'Transitions(...) or RobotSamples(...), got the class Windows; call '
        'it: Windows(...).'),
    'kind is a string': (
        lambda v, c: ra.sample_batches(v, 'windows', 4), TypeError,
        'random access: kind must be a sample kind: Windows(...), '
        "Transitions(...) or RobotSamples(...), got 'windows'."),
    'Grain kind is the class': (
        lambda v, c: ra.GrainSamples(v, ra.Transitions), TypeError,
        'random access: kind must be a sample kind: Windows(...), '
        'Transitions(...) or RobotSamples(...), got the class Transitions; '
        'call it: Transitions(...).'),
    'image_size is an int': (
        lambda v, c: ra.sample_batches(
            c, ra.Windows(2), 4, outputs=ra.Outputs(image_size=128)),
        ValueError, 'random access: image_size must be None or (height, '
        'width) of positive ints, got 128.'),
    'split is sliced': (
        lambda v, c: ra.sample_batches(v, ra.Windows(2), 4, split='train[:2]'),
        ValueError, "random access: split 'train[:2]' is not a split name: "
        'random access reads whole splits; pass a plain split name (no '
        "slicing; '{v}' has ['train'])."),
    'a file, not the directory': (
        lambda v, c: ra.ChunkStorage(os.path.join(v, 'dataset_info.json')),
        ValueError, "random access: '{v}/dataset_info.json' is a file, not a "
        "dataset directory; pass the chunk dataset's directory ('{v}')."),
    'mixed sources with other features': (
        lambda v, c: ra.sample_batches([c, v], ra.Windows(2), 4,
                                       weights=[0.5, 0.5]), ValueError,
        'random access: the sources have different features, so their '
        "samples do not mix: only '0' ({c}) has language_instruction, "
        "observation/image, observation/state; only '1' ({v}) has "
        'discount, observation, step. Mix sources with the same step '
        'features.'),
}


@pytest.mark.parametrize('name', ARGUMENT_ERRORS)
def test_argument_errors(vector_chunks, camera_chunks, name):
  call, error, message = ARGUMENT_ERRORS[name]
  message = message.format(v=os.fspath(vector_chunks),
                           c=os.fspath(camera_chunks))
  with pytest.raises(error, match='^' + re.escape(message) + '$'):
    call(os.fspath(vector_chunks), os.fspath(camera_chunks))


def test_sources_chunked_differently_mix(camera_chunks, tmp_path):
  # The same step features in records of 2 and of 3 steps.
  other = ra.convert(testing.write_cameras(tmp_path), tmp_path / 'other',
                     chunk_steps=3, progress=False)
  batch = next(iter(ra.sample_batches([camera_chunks, other], ra.Windows(2),
                                      4, weights=[0.5, 0.5],
                                      outputs=ra.Outputs(image_size=(4, 4)))))
  assert batch['observation']['image'].shape == (4, 2, 4, 4, 3)


def test_undecodable_frame_error_names_its_field(tmp_path):
  _, bad = rlds_testing.camera_datasets_good_and_undecodable(
      tmp_path, only_at=(2, 3))
  chunks = ra.convert(bad, tmp_path / 'chunks', progress=False)
  ds = ra.sample_batches(chunks, ra.Windows(2), batch_size=4, seed=0,
                         epochs=ra.Epochs(1))
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'Unknown image file format[^\n]*\n[^\n]*'
                     r'\{\{node observation/camera/map/while/DecodePng\}\}'):
    for _ in ds:
      pass


def test_the_flat_keywords_still_work_and_warn_once(vector_chunks):
  from rlds_lite.random_access import options  # pylint: disable=g-import-not-at-top
  new = _ids(ra.sample_batches(
      vector_chunks, ra.Windows(4), 4, seed=1,
      epochs=ra.Epochs(1, drop_remainder=True, order='uniform'),
      sharding=ra.Sharding(2, 1), outputs=INFO,
      reading=ra.ReadOptions(mapped_budget=0, prefetch=0)))
  option_objects._WARNED.clear()  # pylint: disable=protected-access
  with pytest.warns(DeprecationWarning, match=re.escape(
      'sample_batches: drop_remainder, host, mapped_budget, num_epochs, '
      'num_hosts, order, prefetch, sample_info are now '
      'sharding=Sharding(num_hosts=2, host=1), '
      "epochs=Epochs(num_epochs=1, drop_remainder=True, order='uniform'), "
      'outputs=Outputs(sample_info=True), '
      'reading=ReadOptions(mapped_budget=0, prefetch=0) '
      '(rlds_lite.random_access)')):
    old = ra.sample_batches(
        vector_chunks, ra.Windows(4), 4, seed=1, num_epochs=1,
        drop_remainder=True, order='uniform', num_hosts=2, host=1,
        sample_info=True, mapped_budget=0, prefetch=0)
  assert _ids(old) == new and len(new) == 7
  with warnings.catch_warnings():
    warnings.filterwarnings('error', 'sample_batches')   # Once.
    ra.sample_batches(vector_chunks, ra.Windows(4), 4, num_epochs=1)


def test_the_flat_keywords_of_plan_iterator_and_grain_still_work(
    vector_chunks):
  from rlds_lite.random_access import options, tf_data  # pylint: disable=g-import-not-at-top
  option_objects._WARNED.clear()  # pylint: disable=protected-access
  new = tf_data.plan(vector_chunks, ra.Windows(4), 8,
                     epochs=ra.Epochs(order='uniform'))
  calls = {
      'plan': lambda: tf_data.plan(vector_chunks, ra.Windows(4), 8,
                                   order='uniform').fingerprint,
      'SampleIterator': lambda: ra.SampleIterator(
          vector_chunks, ra.Windows(4), 8, order='uniform').fingerprint,
  }
  for op, call in calls.items():
    with pytest.warns(DeprecationWarning, match=f'^{op}: order are now '
                      r"epochs=Epochs\(order='uniform'\)"):
      assert call() == new.fingerprint


@pytest.mark.parametrize('call,error,message', [
    (dict(num_epochs=1, epochs=ra.Epochs()), TypeError,
     "sample_batches: pass ['num_epochs'] in epochs=Epochs(...), not beside "
     'it.'),
    (dict(sharding=(2, 0)), TypeError,
     'sample_batches: sharding must be a Sharding(...), got tuple.'),
    (dict(num_epoch=1), TypeError,
     "sample_batches() got an unexpected keyword argument 'num_epoch'"),
], ids=['flat_beside_its_group', 'not_a_group', 'misspelt'])
def test_option_errors(vector_chunks, call, error, message):
  with pytest.raises(error, match='^' + re.escape(message) + '$'):
    ra.sample_batches(vector_chunks, ra.Windows(2), 4, **call)


def test_options_reprs():
  assert [repr(o) for o in (ra.Sharding(), ra.Epochs(), ra.Outputs(),
                            ra.ReadOptions())] == [
      'Sharding(num_hosts=1, host=0)',
      "Epochs(num_epochs=None, drop_remainder=False, order='spread')",
      'Outputs(decode_images=True, image_size=None, sample_info=False)',
      'ReadOptions(mapped_budget=None, num_parallel_calls=-1, prefetch=2)']
