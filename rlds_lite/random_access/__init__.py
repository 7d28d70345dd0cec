"""Random access to RLDS samples (work in progress)."""

from rlds_lite.random_access.conversion import convert
from rlds_lite.random_access.index import SampleIndex
from rlds_lite.random_access.reading import SampleReader
from rlds_lite.random_access.sampler import Sampler
from rlds_lite.random_access.samples import Transitions
from rlds_lite.random_access.samples import Windows
from rlds_lite.random_access.storage import ChunkStorage
from rlds_lite.random_access.tf_data import sample_batches
