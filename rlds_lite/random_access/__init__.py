"""Random access: uniformly shuffled batches in bounded memory, resumable (docs/random_access.md).

Example:
  >>> from rlds_lite import synthetic
  >>> chunks = convert(synthetic.dataset(num_episodes=10, seed=0), progress=False)
  >>> ds = sample_batches(chunks, Windows(size=4), batch_size=64, seed=0)
  >>> next(iter(ds))['observation'].shape
  TensorShape([64, 4, 4])
"""

from rlds_lite.random_access.conversion import convert
from rlds_lite.random_access.conversion import DEFAULT_CHUNK_STEPS
from rlds_lite.random_access.grain_reader import grain_batches
from rlds_lite.random_access.grain_reader import GrainSamples
from rlds_lite.random_access.index import SampleIndex
from rlds_lite.random_access.options import Epochs
from rlds_lite.random_access.options import Outputs
from rlds_lite.random_access.options import ReadOptions
from rlds_lite.random_access.options import Sharding
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
    'Epochs',
    'grain_batches',
    'GrainSamples',
    'NotChunkedError',
    'Outputs',
    'ReadOptions',
    'RobotSamples',
    'sample_batches',
    'SampleIndex',
    'SampleIterator',
    'SampleReader',
    'Sampler',
    'Sharding',
    'StateMismatchError',
    'Transitions',
    'Windows',
]
