"""Which HDF5 format a file holds (Minari, D4RL, TED), so a reader given another's names it."""

import os
from typing import Callable, Iterable, NamedTuple, Set, Union

from rlds_lite.convert import episodes as episodes_lib
from rlds_lite.convert import minari_layout


class _Format(NamedTuple):
  name: str  # What it is, for messages.
  evidence: str  # What gives it away.
  matches: Callable[[Set[str]], bool]


def _has_episode_groups(names: Set[str]) -> bool:
  return any(name.startswith('episode_') and name[len('episode_'):].isdigit()
             for name in names)


_FORMATS = {
    'minari': _Format('a Minari dataset', 'episode_<i> groups',
                      _has_episode_groups),
    'd4rl': _Format('a D4RL file', 'observations, actions, rewards and '
                    'terminals rows at the top',
                    lambda names: {'observations', 'actions', 'rewards',
                                   'terminals'} <= names),
    'ted': _Format('a TorchRL TED file', 'a next group and action rows',
                   lambda names: {'next', 'action'} <= names),
}


def check_format(names: Iterable[str], fmt: str, source: str) -> None:
  """Raises a ConversionError if a file with these top-level ``names`` is
  another format's, not ``fmt``'s, naming the reader it needs.

  Args:
    names: the file's top-level groups and datasets.
    fmt: the format being read: ``'minari'``, ``'d4rl'`` or ``'ted'``.
    source: the file, for the message.

  Example:
    >>> check_format(['episode_0', 'episode_1'], 'minari', 'x.hdf5')
    >>> check_format(['episode_0'], 'ted', 'x.hdf5')
    Traceback (most recent call last):
    ...
    rlds_lite.convert.episodes.ConversionError: x.hdf5: looks like a Minari dataset (episode_<i> groups), not a TorchRL TED file; read it with from_minari()
  """
  names = set(names)
  expected = _FORMATS[fmt]
  if expected.matches(names):
    return
  for other, found in _FORMATS.items():
    if other != fmt and found.matches(names):
      raise episodes_lib.ConversionError(
          f'looks like {found.name} ({found.evidence}), not {expected.name}; '
          f'read it with from_{other}()', source=source)


def check_not_minari_directory(path: Union[str, os.PathLike],
                               fmt: str) -> None:
  """Raises a ConversionError if ``path`` is a Minari dataset's directory (or
  a Minari root), given to the reader of ``fmt``, which reads one file.

  Example:
    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> os.makedirs(os.path.join(root, 'walk-v0', 'data'))
    >>> open(os.path.join(root, 'walk-v0', 'data', 'main_data.hdf5'), 'w').close()
    >>> try:
    ...   check_not_minari_directory(root, 'd4rl')
    ... except episodes_lib.ConversionError as e:
    ...   print(str(e).replace(root, 'ROOT'))
    ROOT: is a Minari dataset directory, not a D4RL file; read it with from_minari()
  """
  if not os.path.isdir(path):
    return
  try:
    minari_layout.locate(path)
  except FileNotFoundError:
    return
  except ValueError:  # A Minari root of several datasets.
    pass
  raise episodes_lib.ConversionError(
      f'is a Minari dataset directory, not {_FORMATS[fmt].name}; read it with '
      'from_minari()', source=os.fspath(path))
