"""Convert episodic datasets between RLDS and the field's other formats.

Every converter reads into, or writes from, NumPy `Episode` dicts (see
`rlds_lite.convert.episodes`); `to_dataset` and `write_tfds` turn those into
an RLDS ``tf.data`` dataset or a TFDS directory. Format modules: `minari`
(Minari HDF5), `d4rl` (D4RL dicts and HDF5), `il_representations` (the
in-memory dict and webdataset shards), `ted` (TorchRL's TED layout, nested
dicts and H5), `alf` (ALF TimeSteps) and `lerobot` (LeRobotDataset v3.0:
Parquet and MP4; needs the ``lerobot`` extra). docs/convert.md tables how each
format's end-of-episode fields map to ``is_last``/``is_terminal``/``discount``,
how each stores string fields (`strings`) and what ``last_step='valid'``
changes (`transitions`).

Example:
  >>> import numpy as np
  >>> from rlds_lite import convert
  >>> episode = {'steps': {'reward': np.array([1.0, 0.0]),
  ...                      **convert.rlds_flags(2, terminated=True)}}
  >>> [e['steps']['reward'].numpy().tolist()
  ...  for e in convert.to_dataset([episode], dense=True)]
  [[1.0, 0.0]]
"""

from rlds_lite.convert import alf
from rlds_lite.convert import d4rl
from rlds_lite.convert import il_representations
from rlds_lite.convert import lerobot
from rlds_lite.convert import minari
from rlds_lite.convert import strings
from rlds_lite.convert import ted
from rlds_lite.convert import transitions
from rlds_lite.convert.episodes import check_episode
from rlds_lite.convert.episodes import checked_episodes
from rlds_lite.convert.episodes import ConversionError
from rlds_lite.convert.episodes import Episode
from rlds_lite.convert.episodes import episode_slices
from rlds_lite.convert.episodes import numpy_episodes
from rlds_lite.convert.episodes import rlds_flags
from rlds_lite.convert.episodes import to_dataset
from rlds_lite.convert.episodes import write_tfds

__all__ = [
    'alf',
    'check_episode',
    'checked_episodes',
    'd4rl',
    'il_representations',
    'lerobot',
    'minari',
    'strings',
    'ted',
    'transitions',
    'ConversionError',
    'Episode',
    'episode_slices',
    'numpy_episodes',
    'rlds_flags',
    'to_dataset',
    'write_tfds',
]
