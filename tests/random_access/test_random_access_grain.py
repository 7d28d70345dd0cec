"""The Grain readers give the tf.data reader's samples and batches."""

import pickle

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite import random_access as ra
from rlds_lite import option_objects

grain = pytest.importorskip('grain')  # The `grain` extra (in `test` too).


def test_grain_batches_equal_the_tf_data_batches(vector_chunks, other_chunks):
  kwargs = dict(sources={'a': vector_chunks, 'b': other_chunks},
                kind=ra.Transitions(n=2, gamma=0.9), batch_size=8,
                weights={'a': 0.5, 'b': 0.5}, seed=7, position=24,
                outputs=ra.Outputs(sample_info=True))
  want = list(ra.sample_batches(**kwargs).take(4).as_numpy_iterator())
  batches = ra.grain_batches(**kwargs)
  assert isinstance(batches, grain.MapDataset)
  for k in range(4):
    tf.nest.map_structure(np.testing.assert_array_equal, batches[k], want[k])


def test_grain_batches_hosts_and_epochs(vector_chunks):
  hosts = [ra.grain_batches(vector_chunks, ra.Windows(4), 8, seed=1,
                            epochs=ra.Epochs(num_epochs=1),
                            sharding=ra.Sharding(num_hosts=2, host=h),
                            outputs=ra.Outputs(sample_info=True))
           for h in range(2)]
  assert [len(h) for h in hosts] == [4, 4]
  ids = [b['sample_id'].tolist() for h in hosts for b in h]
  assert sorted(sum(ids, [])) == list(range(60))


def test_grain_samples_source(vector_chunks):
  source = ra.GrainSamples(vector_chunks, ra.Windows(4), sample_info=True)
  assert len(source) == 60
  storage = ra.ChunkStorage(vector_chunks)
  reader = ra.SampleReader(storage, ra.SampleIndex.build(ra.Windows(4), storage))
  want = reader.read(tf.constant([5, 59]))
  got = source.__getitems__([5, 59])
  np.testing.assert_array_equal(got[1]['observation'],
                                want['observation'][1].numpy())
  np.testing.assert_array_equal(source[-1]['step'], source[59]['step'])
  with pytest.raises(IndexError, match='sample 60 is out of range'):
    source[60]
  copy = pickle.loads(pickle.dumps(source))   # For Grain's worker processes.
  np.testing.assert_array_equal(copy[5]['observation'], got[0]['observation'])
  batch = grain.MapDataset.source(source).shuffle(seed=0).batch(6)[0]
  assert batch['observation'].shape == (6, 4, 3)


def test_grain_batches_take_the_flat_keywords_too(vector_chunks):
  from rlds_lite.random_access import options  # pylint: disable=g-import-not-at-top
  new = ra.grain_batches(vector_chunks, ra.Windows(4), 8,
                         epochs=ra.Epochs(num_epochs=1))
  option_objects._WARNED.clear()  # pylint: disable=protected-access
  with pytest.warns(DeprecationWarning, match=r'^grain_batches: num_epochs '
                    r'are now epochs=Epochs\(num_epochs=1\)'):
    old = ra.grain_batches(vector_chunks, ra.Windows(4), 8, num_epochs=1)
  assert len(old) == len(new) == 8
  np.testing.assert_array_equal(old[7]['step'], new[7]['step'])
