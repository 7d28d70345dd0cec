"""Convert episodic datasets between RLDS and the field's other formats.

Every converter reads into, or writes from, NumPy `Episode` dicts;
`to_dataset` and `write_tfds` make them RLDS ``tf.data`` or TFDS. Formats:
`minari`, `d4rl`, `il_representations`, `ted`, `alf`, `lerobot`; `files`
reads and writes them by name. How each maps: docs/convert.md.

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
