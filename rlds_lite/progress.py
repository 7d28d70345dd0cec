"""Progress bars on stderr: ``progress=None`` shows one on a terminal, ``True`` always."""

import sys
from typing import Any, Optional

import tqdm


def shown(progress: Optional[bool] = None) -> bool:
  """Whether a bar shows: ``progress``, or (``None``) stderr is a terminal.

  Example:
    >>> shown(None) == sys.stderr.isatty()
    True
  """
  if progress is None:
    isatty = getattr(sys.stderr, 'isatty', None)
    return bool(isatty and isatty())
  return bool(progress)


def bar(progress: Optional[bool] = None, **kwargs: Any) -> tqdm.tqdm:
  """A tqdm bar on stderr, shown as `shown` says (other arguments: tqdm's).

  Example:
    >>> import io
    >>> with bar(progress=True, desc='count', file=io.StringIO()) as b:
    ...   b.update(2)
    >>> b.n
    2
  """
  kwargs.setdefault('file', sys.stderr)
  kwargs.setdefault('dynamic_ncols', True)
  return tqdm.tqdm(disable=not shown(progress), **kwargs)
