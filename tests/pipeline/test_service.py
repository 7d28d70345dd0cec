"""Tests of rlds_lite.pipeline.service with an in-process tf.data service."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite import synthetic
from rlds_lite.pipeline import service
from rlds_lite.pipeline import windows
from rlds_lite.pipeline.pools import Pooling
from rlds_lite.sample_kinds import Windows

NUM_SAMPLES = 60


@pytest.fixture(scope='module')
def local_service():
  with service.LocalService(num_workers=2) as running:
    yield running


def samples():
  """Uniquely id'd samples from a splittable source."""
  return tf.data.Dataset.range(NUM_SAMPLES).map(
      lambda i: {'id': i, 'value': tf.cast(i, tf.float32) * 0.5})


MODES = {
    'distributed_epoch': ('distributed_epoch', 1),
    'parallel_epochs': ('parallel_epochs', 2),  # Once per worker.
}


@pytest.mark.parametrize('mode,copies', list(MODES.values()), ids=list(MODES))
def test_every_sample_arrives_the_expected_number_of_times(
    local_service, mode, copies):
  ds = service.distribute(samples(), local_service, processing_mode=mode)
  got = collections.Counter()
  for sample in ds.as_numpy_iterator():
    assert sample['value'] == np.float32(sample['id']) * 0.5
    got[int(sample['id'])] += 1
  assert got == collections.Counter(list(range(NUM_SAMPLES)) * copies)


def test_distributed_windows_pipeline_delivers_each_window_once(
    local_service):
  episodes = synthetic.episodes(num_episodes=12, max_length=10, seed=0,
                                dense=True)
  pipeline = windows.windows_dataset(episodes, Windows(2), 8, seed=0,
                                     pooling=Pooling(pool_episodes=3),
                                     episode_fields='episode_id')

  def keys(batches):
    out = collections.Counter()
    for batch in batches:
      for episode_id, window in zip(batch['episode_id'],
                                    batch['observation']):
        out[(int(episode_id), window.tobytes())] += 1
    return out

  local = keys(pipeline.as_numpy_iterator())
  remote = keys(service.distribute(pipeline, local_service.target,
                                   job_name='windows').as_numpy_iterator())
  assert remote == local
  assert sum(local.values()) > 20


def test_consumers_of_one_job_share_its_samples(local_service):
  consumers = [iter(service.distribute(samples(), local_service,
                                       job_name='shared'))
               for _ in range(2)]
  got = collections.Counter()
  live = list(consumers)
  while live:
    for it in list(live):
      try:
        got[int(next(it)['id'])] += 1
      except StopIteration:
        live.remove(it)
  assert got == collections.Counter(range(NUM_SAMPLES))


def test_close_stops_the_servers_once_and_for_all():
  running = service.LocalService(num_workers=1)
  assert running.target.startswith('grpc://localhost:')
  running.close()
  running.close()
  assert running.num_workers == 1


BAD = {
    'unknown_mode': (
        lambda: service.distribute(samples(), 'grpc://localhost:1',
                                   processing_mode='round_robin'),
        ValueError,
        r"processing_mode must be one of \['distributed_epoch', "
        r"'parallel_epochs'\], got 'round_robin'"),
    'bad_service': (
        lambda: service.distribute(samples(), 5), TypeError,
        "service must be a dispatcher address such as 'grpc://host:port'"),
    'not_a_dataset': (
        lambda: service.distribute([1, 2], 'grpc://localhost:1'), TypeError,
        'dataset must be a tf.data.Dataset, got list'),
    'no_workers': (
        lambda: service.LocalService(num_workers=0), ValueError,
        'LocalService: num_workers must be a positive int, got 0'),
}


@pytest.mark.parametrize('make,error,message', list(BAD.values()),
                         ids=list(BAD))
def test_bad_input_raises_clear_error(make, error, message):
  with pytest.raises(error, match=message):
    make()
