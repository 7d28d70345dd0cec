"""Shared fixtures: the vector source and its chunk datasets."""

import pytest

from rlds_lite import random_access as ra
import random_access_testing as testing


@pytest.fixture(name='vectors', scope='package')
def _vectors(tmp_path_factory):
  return testing.write_vectors(tmp_path_factory.mktemp('vectors'))


@pytest.fixture(name='vector_chunks', scope='package')
def _vector_chunks(vectors, tmp_path_factory):
  # Small shards: reads span several files.
  return ra.convert(vectors, tmp_path_factory.mktemp('c') / 'vec_chunks',
                    chunk_steps=4, max_bytes_per_file=2000, progress=False)


@pytest.fixture(name='other_chunks', scope='package')
def _other_chunks(tmp_path_factory):
  """Another dataset: same features, other lengths and values."""
  source = testing.write_vectors(tmp_path_factory.mktemp('other'), 'other',
                                 lengths=(12, 5, 30), offset=1000)
  return ra.convert(source, chunk_steps=4, progress=False)


@pytest.fixture(name='camera_chunks', scope='package')
def _camera_chunks(tmp_path_factory):
  """Images (png), vectors and strings: a parsed layout."""
  source = testing.write_cameras(tmp_path_factory.mktemp('cams'))
  return ra.convert(source, tmp_path_factory.mktemp('c') / 'cams_chunks',
                    chunk_steps=2, progress=False)
