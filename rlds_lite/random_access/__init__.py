"""Random access: uniformly shuffled batches in bounded memory, resumable.

Every sample (window, n-step transition) of a dataset can be read directly,
so a batch is drawn from the *whole* dataset (not from a pool of
~64 episodes), memory holds an index of a few bytes per episode, and a
pipeline's whole state is ``(seed, position)``.

* `convert(path)` / ``rlds-lite chunk PATH``: writes the dataset's *chunk
  dataset* (a TFDS dataset whose records hold ``C`` consecutive steps of one
  episode, frames still encoded) once;
* `ChunkStorage`: reads chunk records by id (memory-mapped or pread; each
  record's checksum checked the first time it is read; `DamagedChunksError`
  names a damaged file);
* `Windows`, `Transitions`, `RobotSamples`: what a sample is (exactly
  `rlds_lite.dense`'s);
* `SampleIndex`: the (episode, start) of every sample, from per-episode counts;
* `Sampler`: position -> sample id, a stateless permutation per epoch:
  ``order='spread'`` (the default of `sample_batches` and `SampleIterator`:
  each batch spread over the dataset, holding samples of as many episodes as
  the spacing allows) or ``order='uniform'`` (``index_shuffle``; the default
  of `Sampler` itself); exact weighted mixing, hosts by position;
* `sample_batches`: the ``tf.data.Dataset``; `SampleIterator`: save/restore
  ``(seed, position)``; `grain_batches` / `GrainSamples`: the same for
  Grain (optional extra ``grain``);
* `checksums.masked_crc32c`: TFRecord checksums of many records (google-crc32c).

See docs/random_access.md.

Example:
  >>> from rlds_lite import synthetic
  >>> source = synthetic.dataset(num_episodes=10, seed=0)
  >>> chunks = convert(source, progress=False)
  >>> ds = sample_batches(chunks, Windows(size=4), batch_size=64, seed=0)
  >>> next(iter(ds))['observation'].shape
  TensorShape([64, 4, 4])
"""

from rlds_lite.random_access.conversion import convert
from rlds_lite.random_access.conversion import DEFAULT_CHUNK_STEPS
from rlds_lite.random_access.grain_reader import grain_batches
from rlds_lite.random_access.grain_reader import GrainSamples
from rlds_lite.random_access.index import SampleIndex
from rlds_lite.random_access.reading import SampleReader
from rlds_lite.random_access.sampler import Sampler
from rlds_lite.sample_kinds import RobotSamples
from rlds_lite.sample_kinds import Transitions
from rlds_lite.sample_kinds import Windows
from rlds_lite.random_access.state import SampleIterator
from rlds_lite.random_access.state import StateMismatchError
from rlds_lite.random_access.storage import ChunkStorage
from rlds_lite.random_access.storage import DamagedChunksError
from rlds_lite.random_access.storage import NotChunkedError
from rlds_lite.random_access.tf_data import sample_batches

__all__ = [
    'ChunkStorage',
    'convert',
    'DamagedChunksError',
    'DEFAULT_CHUNK_STEPS',
    'grain_batches',
    'GrainSamples',
    'NotChunkedError',
    'RobotSamples',
    'sample_batches',
    'SampleIndex',
    'SampleIterator',
    'SampleReader',
    'Sampler',
    'StateMismatchError',
    'Transitions',
    'Windows',
]
