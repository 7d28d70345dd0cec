"""Writers of whole outputs (`rlds_lite.atomic_output`) the fault tests run.

Every writer writes one tiny dataset of a ``version``: its episodes'
observations hold the version, so `read_version` tells which one a reader
found (through the library's reader of that format) or None if none.
"""

import os
from typing import List, Optional

import numpy as np

import writer_jobs

STEPS = 3
MINARI_ID = 'ns/toy-v0'


def episodes(version: int, count: int = 2) -> List[dict]:
  index = np.arange(STEPS)
  return [{'steps': {
      'observation': np.full((STEPS, 2), version, np.float32),
      'action': np.zeros((STEPS, 1), np.float32),
      'reward': np.full(STEPS, version, np.float32),
      'is_first': index == 0, 'is_last': index == STEPS - 1,
      'is_terminal': index == STEPS - 1}} for _ in range(count)]


def target(kind: str, parent: str) -> str:
  """The path a ``kind`` writer publishes under ``parent``."""
  return {'webdataset': os.path.join(parent, 'shards'),
          'minari': os.path.join(parent, *MINARI_ID.split('/')),
          'lerobot': os.path.join(parent, 'lr'),
          'chunk': os.path.join(parent, 'chunks'),
          'filter': os.path.join(parent, 'filtered'),
          'il': os.path.join(parent, 'il.npz'),
          'd4rl': os.path.join(parent, 'd4rl.h5')}[kind]


def source(parent: str, version: int) -> str:
  """A TFDS dataset of ``version`` (what chunk and filter read)."""
  from rlds_lite import catalog  # pylint: disable=g-import-not-at-top
  data_dir = os.path.join(parent, f'source{version}')
  path = os.path.join(data_dir, writer_jobs.NAME, '1.0.0')
  if not os.path.exists(data_dir):
    writer_jobs.write(data_dir, [0, 1], version)
    # Its catalog cache too (published with atomic_output, as the outputs
    # are): a writer killed at an output step is then killed at its own.
    catalog.episodes(path, progress=False)
  return path


def write(kind: str, parent: str, version: int, overwrite: bool = False
          ) -> None:
  """Writes ``version`` with the ``kind`` writer."""
  # pylint: disable=g-import-not-at-top
  from rlds_lite.convert import files, il_representations, lerobot, minari
  from rlds_lite import random_access
  from rlds_lite.catalog import rewrite
  out = target(kind, parent)
  if kind == 'webdataset':
    il_representations.to_webdataset(episodes(version), out,
                                      frames_per_shard=2)
  elif kind == 'minari':
    minari.to_minari(episodes(version), parent, MINARI_ID,
                     if_exists='overwrite' if overwrite else 'error')
  elif kind == 'lerobot':
    lerobot.to_lerobot(episodes(version), out, fps=10,
                       storage=lerobot.Storage(video=False),
                       if_exists='overwrite' if overwrite else 'error')
  elif kind == 'chunk':
    random_access.convert(source(parent, version), out, overwrite=overwrite,
                          progress=False)
  elif kind == 'filter':
    rewrite.filter_dataset(source(parent, version), out, 'length > 0',
                           progress=False)
  elif kind in ('il', 'd4rl'):
    files.write_episodes(kind, episodes(version), out)
  else:
    raise ValueError(kind)


def read_version(kind: str, parent: str) -> Optional[int]:
  """The version a reader finds at the ``kind`` target, or None."""
  # pylint: disable=g-import-not-at-top
  import tensorflow_datasets as tfds
  from rlds_lite.convert import files, lerobot
  from rlds_lite import random_access
  out = target(kind, parent)
  if not os.path.exists(out):
    return None
  if kind == 'chunk':
    random_access.ChunkStorage(out)  # Opens (checks) it.
    path = tfds.builder_from_directory(out).info.metadata['source']['path']
    return int(path.split('source')[-1].split(os.sep)[0])
  if kind == 'filter':
    seen = writer_jobs.load(out)
    assert len(seen) == 2, seen
    return seen[0][1]
  if kind == 'lerobot':
    read = list(lerobot.from_lerobot(out))
  else:
    read = list(files.read_episodes(kind, out))
  assert len(read) == 2, read
  values = {float(np.asarray(e['steps']['observation'])[0, 0]) for e in read}
  assert len(values) == 1, values
  return int(values.pop())
