"""Every sample read by random access equals the dense op's (named cases)."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import random_access as ra
from rlds_lite.random_access import layout
import random_access_testing as testing

INFO = ra.Outputs(sample_info=True)

KINDS = {
    'windows-4': ra.Windows(4),
    'windows-1': ra.Windows(1),
    'windows-shift-3-stride-2': ra.Windows(3, shift=3, stride=2),
    'windows-padded': ra.Windows(5, shift=2, drop_remainder=False),
    'windows-longer-than-chunks': ra.Windows(11, stride=2),
    'transitions-1': ra.Transitions(),
    'transitions-3': ra.Transitions(n=3, gamma=0.9),
    'transitions-3-valid-last-step': ra.Transitions(n=3, gamma=0.5,
                                                    last_step='valid'),
    'robot-1-1': ra.RobotSamples(),
    'robot-history-2-chunk-4': ra.RobotSamples(2, 4),
    'robot-strided-zero-pads-valid': ra.RobotSamples(
        3, 5, last_step='valid', history_stride=2, shift=2, history_pad='zero',
        action_pad='zero'),
}


@pytest.fixture(name='source', scope='module')
def _source(tmp_path_factory):
  return testing.write_vectors(tmp_path_factory.mktemp('src'))


@pytest.fixture(name='chunks', scope='module', params=[4, 8, 64])
def _chunks(request, source, tmp_path_factory):
  out = tmp_path_factory.mktemp('chunks') / f'c{request.param}'
  return ra.convert(source, out, chunk_steps=request.param, progress=False)


def _read_all(storage, kind, **kwargs):
  reader = ra.SampleReader(storage, ra.SampleIndex.build(kind, storage),
                           **kwargs)
  return tf.nest.map_structure(
      lambda x: x.numpy(), reader.read(tf.range(reader.num_samples)))


@pytest.mark.parametrize('name', sorted(KINDS))
def test_every_sample_equals_the_dense_op(chunks, source, name):
  kind = KINDS[name]
  storage = ra.ChunkStorage(chunks)
  got = _read_all(storage, kind)
  want = testing.reference(kind, source)
  assert sorted(got) == sorted(want)
  for key in want:
    np.testing.assert_allclose(got[key], want[key], rtol=1e-6, err_msg=key)


def test_index_counts_named_episodes(chunks):
  storage = ra.ChunkStorage(chunks)
  # Lengths 1, 6, 17, 3, 40, 9; episodes 0, 2, 4 terminal.
  index = ra.SampleIndex.build(ra.Windows(4), storage)
  assert np.bincount(index.episode, minlength=6).tolist() == [0, 3, 14, 0, 37, 6]
  index = ra.SampleIndex.build(ra.Transitions(last_step='valid'), storage)
  assert np.bincount(index.episode, minlength=6).tolist() == [1, 5, 17, 2, 40, 8]
  assert index.episode.dtype == np.uint16 and index.start.dtype == np.uint16
  assert index.counts.tolist() == [1, 5, 17, 2, 40, 8]


def test_one_episode_dataset(tmp_path):
  source = testing.write_vectors(tmp_path, lengths=(7,))
  storage = ra.ChunkStorage(ra.convert(source, chunk_steps=4, progress=False))
  got = _read_all(storage, ra.Windows(3), sample_info=True)
  assert got['step'].tolist() == [[i, i + 1, i + 2] for i in range(5)]
  assert got['episode_index'].tolist() == [0] * 5
  batch = next(iter(ra.sample_batches(storage, ra.Windows(3), batch_size=5,
                                      seed=1, outputs=INFO)))
  assert sorted(batch['sample_id'].numpy().tolist()) == [0, 1, 2, 3, 4]


def test_windows_longer_than_every_episode(chunks):
  storage = ra.ChunkStorage(chunks)
  with pytest.raises(ValueError, match=r"has no Windows\(size=41.* sample: "
                     r'its 6 episodes are all shorter than a sample '
                     r'\(longest: 40 steps\)'):
    ra.sample_batches(storage, ra.Windows(41), batch_size=4)
  padded = _read_all(storage, ra.Windows(41, shift=40, drop_remainder=False))
  assert padded['mask'].sum(axis=1).tolist() == [1, 6, 17, 3, 40, 9]
  assert padded['step'][0].tolist() == [0] + [0] * 40   # Zero padding.


def test_chunk_dataset_loads_with_tfds(chunks, source):
  builder = tfds.builder_from_directory(chunks)
  records = list(builder.as_dataset(split='train').as_numpy_iterator())
  steps = builder.info.metadata['layout']['chunk_steps']
  assert len(records) == sum(-(-n // steps) for n in testing.LENGTHS)
  first = testing.dense_steps(source)
  for record in records:
    episode, offset, num = (int(record[k]) for k in ('episode', 'offset',
                                                     'num_steps'))
    want = first[episode]['observation'].numpy()[offset:offset + num]
    np.testing.assert_array_equal(record['steps']['observation'][:num], want)
    # Past the end: the last step repeated.
    np.testing.assert_array_equal(
        record['steps']['observation'][num:],
        np.repeat(want[-1:], steps - num, axis=0))


def test_records_are_those_tfds_would_serialize():
  steps = tfds.features.FeaturesDict({
      'image': tfds.features.Image(shape=(4, 4, 3), encoding_format='png'),
      'state': tfds.features.Tensor(shape=(2,), dtype=np.float64),
      'flag': np.bool_, 'text': tfds.features.Text()})
  chunk = layout.ChunkLayout.from_step_features(steps, 2)
  png = tf.io.encode_png(np.zeros([4, 4, 3], np.uint8)).numpy()
  values = {'image': [png, png], 'state': np.ones([2, 2]),
            'flag': np.array([True, False]), 'text': [b'a', b'b']}
  record = chunk.encode(5, 2, 1, values)
  want = chunk.features.serialize_example({
      'episode': 5, 'offset': 2, 'num_steps': 1,
      'steps': {**values, 'image': [np.zeros([4, 4, 3], np.uint8)] * 2,
                'text': ['a', 'b']}})
  assert tf.train.Example.FromString(record) == tf.train.Example.FromString(want)


def test_images_and_strings_are_read_through_the_parser(tmp_path):
  source = testing.write_cameras(tmp_path)
  storage = ra.ChunkStorage(ra.convert(source, chunk_steps=2, progress=False))
  assert not storage.layout.fixed
  for kind in (ra.Windows(2, drop_remainder=False), ra.Transitions(n=2),
               ra.RobotSamples(2, 2, history_pad='zero')):
    got = _read_all(storage, kind)
    want = testing.reference(kind, source)
    for key in ('observation', 'reward', 'language_instruction', 'mask',
                'next_observation', 'observation_pad_mask'):
      if key in want:
        tf.nest.map_structure(np.testing.assert_array_equal, got[key],
                              want[key])
  small = _read_all(storage, ra.Windows(2), image_size=(4, 4))
  assert small['observation']['image'].shape == (8, 2, 4, 4, 3)   # 2 + 6 + 0.
  encoded = _read_all(storage, ra.Windows(2), decode_images=False)
  assert encoded['observation']['image'].dtype == object
  assert tf.io.decode_png(encoded['observation']['image'][0, 0]).shape == (8, 8, 3)


def test_array_record_sources_convert_too(tmp_path, source):
  array_record = testing.write_vectors(tmp_path, file_format='array_record')
  storage = ra.ChunkStorage(ra.convert(array_record, chunk_steps=8,
                                       progress=False))
  got = _read_all(storage, ra.Windows(2))
  want = testing.reference(ra.Windows(2), source)   # The same episodes.
  np.testing.assert_array_equal(got['observation'], want['observation'])
