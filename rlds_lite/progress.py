"""Progress bars that behave the same everywhere: on stderr, terminal only.

Every ``progress`` argument of rlds_lite (and ``--no-progress`` of every
command) means the same: ``None`` shows a bar when stderr is a terminal and
hides it in logs, pipes and CI; ``True`` always shows it; ``False`` never.

A bar stays on screen when done, with its final count (``leave=True``): a
bar whose last update came within tqdm's ``mininterval`` of the previous one
is redrawn at ``close``, so it never ends on a stale count.

Example:
  >>> shown(False), shown(True)
  (False, True)
  >>> with bar(progress=False, total=3, desc='work', unit=' episodes') as b:
  ...   b.update(3)  # Nothing is drawn: progress=False.
  >>> b.disable
  True
"""

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
