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
changes (`transitions`). `files` reads and writes each format on disk, by
name (the formats of `registry`).

Names are imported on first use (PEP 562): importing `registry` (what
``rlds-lite convert --help`` lists) loads no TensorFlow.

Example:
  >>> import numpy as np
  >>> from rlds_lite import convert
  >>> episode = {'steps': {'reward': np.array([1.0, 0.0]),
  ...                      **convert.rlds_flags(2, terminated=True)}}
  >>> [e['steps']['reward'].numpy().tolist()
  ...  for e in convert.to_dataset([episode], dense=True)]
  [[1.0, 0.0]]
"""

from typing import Any, List, TYPE_CHECKING

from rlds_lite import lazy_names

_SUBMODULES = ('alf', 'd4rl', 'il_representations', 'lerobot', 'minari',
               'strings', 'ted', 'transitions')
"""Submodules that are attributes of the package (as if imported here)."""

_NAMES = {name: 'episodes' for name in (
    'check_episode', 'checked_episodes', 'ConversionError', 'Episode',
    'episode_slices', 'numpy_episodes', 'rlds_flags', 'to_dataset',
    'write_tfds')}
"""Public names of the package and the submodule that defines each."""

__all__ = list(_SUBMODULES) + list(_NAMES)


def __getattr__(name: str) -> Any:
  """Imports a public name (or any submodule) on first use."""
  return lazy_names.attribute(__name__, _NAMES, name)


def __dir__() -> List[str]:
  return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # For type checkers and IDEs: the same names, eagerly.
  # pylint: disable=g-import-not-at-top,g-bad-import-order
  from rlds_lite.convert import alf, d4rl, il_representations, lerobot
  from rlds_lite.convert import minari, strings, ted, transitions
  from rlds_lite.convert.episodes import (
      check_episode, checked_episodes, ConversionError, Episode,
      episode_slices, numpy_episodes, rlds_flags, to_dataset, write_tfds)
