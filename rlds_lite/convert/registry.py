"""The formats ``rlds-lite convert`` and `rlds_lite.convert.files` know, by name (`Format`, `get`).

Modules are imported when an entry is used, so this loads no TensorFlow.
"""

import importlib
from typing import Callable, Dict, FrozenSet, NamedTuple, Optional, Tuple

LAYOUTS = ('npz', 'file', 'directory', 'own')
"""How a format lies on disk, which decides how `rlds_lite.convert.files`
calls its reader and writer:

* ``npz``: a new ``.npz`` file; the reader takes the loaded dict of arrays,
  the writer returns one (nested dicts under ``'a/b'`` keys).
* ``file``: a new file; the reader takes its path, the writer
  ``(episodes, path, if_exists='error', **options)``.
* ``directory``: a new directory; ``(path, **options)`` and
  ``(episodes, path, **options)``.
* ``own``: as ``directory``, and the writer returns the path it wrote.
"""


class Format(NamedTuple):
  """One format on disk.

  Attributes:
    name: what ``--from``/``--to`` and ``fmt`` say.
    module: the module of ``rlds_lite.convert`` that implements it.
    reader: its function that reads (see `LAYOUTS`), returning Episodes.
    writer: its function that writes.
    read_options: the options ``reader`` takes (others are an error).
    write_options: the options ``writer`` takes.
    describe: one line for ``--help``.
    layout: one of `LAYOUTS`.
    extra: the ``pip install 'rlds_lite[extra]'`` it needs, if any.
    into_root: the target is a root the writer adds a dataset under: it
      may exist (the writer checks the dataset's own place).
  """
  name: str
  module: str
  reader: str
  writer: str
  read_options: FrozenSet[str]
  write_options: FrozenSet[str]
  describe: str
  layout: str = 'file'
  extra: Optional[str] = None
  into_root: bool = False

  def functions(self) -> Tuple[Callable, Callable]:
    """``(reader, writer)``, importing the module (and what it needs)."""
    module = importlib.import_module(f'rlds_lite.convert.{self.module}')
    return getattr(module, self.reader), getattr(module, self.writer)

  def help(self) -> str:
    """``name: describe`` for ``--help``, with the extra it needs."""
    extra = f" (pip install 'rlds_lite[{self.extra}]')" if self.extra else ''
    return f'{self.name}: {self.describe}{extra}'


_ENDS = frozenset({'one_step', 'last_step'})
"""The write options of the formats that keep episode ends as flags."""
_FIXED = frozenset({'repair', 'last_step'})
"""The read options of the formats that repair a damaged end."""

FORMATS: Dict[str, Format] = {fmt.name: fmt for fmt in (
    Format('rlds', 'rlds_dirs', 'from_rlds', 'to_rlds', frozenset({'split'}),
           frozenset({'split', 'name'}), 'a TFDS dataset directory (RLDS)',
           layout='own', into_root=True),
    Format('minari', 'minari', 'from_minari', 'to_minari_root', _FIXED,
           frozenset({'dataset_id', 'last_step'}), 'a Minari dataset root',
           layout='own', into_root=True),
    Format('d4rl', 'd4rl', 'from_d4rl', 'to_d4rl',
           _FIXED | {'final_observation'}, _ENDS, 'a D4RL-style HDF5 file'),
    Format('il', 'il_representations', 'from_il_dict', 'to_il_dict', _FIXED,
           _ENDS, 'an il-representations dict in a .npz file', layout='npz'),
    Format('webdataset', 'il_representations', 'from_webdataset',
           'to_webdataset', _FIXED | {'allow_pickle'}, _ENDS,
           'a directory of il-representations tar shards',
           layout='directory'),
    Format('ted', 'ted', 'from_ted', 'to_ted_h5',
           _FIXED | {'check_continuity'}, _ENDS, 'a TorchRL TED H5 file'),
    Format('alf', 'alf', 'from_alf', 'to_alf', _FIXED, _ENDS,
           'ALF TimeSteps in a .npz file', layout='npz'),
    Format('lerobot', 'lerobot', 'from_lerobot', 'to_lerobot_dir',
           frozenset({'task_key'}), frozenset({'fps', 'task_key', 'no_video'}),
           'a LeRobotDataset directory (v3.0; reads v2.x too)', layout='own',
           extra='lerobot'),
)}
"""Every format, by name."""


def get(name: str) -> Format:
  """The format called ``name``, or a ValueError listing the known ones.

  Example:
    >>> get('ted').module, get('ted').reader, get('ted').writer
    ('ted', 'from_ted', 'to_ted_h5')
    >>> get('parquet')
    Traceback (most recent call last):
    ...
    ValueError: unknown format 'parquet'; known: rlds, minari, d4rl, il, webdataset, ted, alf, lerobot
  """
  if name not in FORMATS:
    raise ValueError(f'unknown format {name!r}; known: {", ".join(FORMATS)}')
  return FORMATS[name]
