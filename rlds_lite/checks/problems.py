"""The problems a validation pass finds (`Problem`, `Notice`), and the report that lists them."""

import dataclasses
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

# The kinds of problem, each checked by a rule in `rlds_lite.checks.rules`.
NOT_RLDS = 'not_rlds'
MISSING_FIELD = 'missing_field'
BAD_FLAG = 'bad_flag'
EMPTY_EPISODE = 'empty_episode'
IS_FIRST_MISSING = 'is_first_missing'
IS_FIRST_NOT_AT_START = 'is_first_not_at_start'
IS_LAST_MISSING = 'is_last_missing'
IS_LAST_EARLY = 'is_last_early'
IS_TERMINAL_NOT_LAST = 'is_terminal_not_last'
STRUCTURE_MISMATCH = 'structure_mismatch'
DTYPE_MISMATCH = 'dtype_mismatch'
SHAPE_MISMATCH = 'shape_mismatch'
NON_FINITE = 'non_finite'
LAST_STEP_VALUE = 'last_step_value'
LENGTH_MISMATCH = 'length_mismatch'
# Problems of the files of a dataset on disk (``rlds_lite.dataset_files``).
CORRUPT_FILE = 'corrupt_file'
UNDECODABLE = 'undecodable'
FEATURES_MISMATCH = 'features_mismatch'

# The kinds of notice (findings that leave the data valid RLDS).
LAST_STEP_VALUES = 'last_step_values'


@dataclasses.dataclass(frozen=True)
class Problem:
  """One violation of the RLDS format.

  Attributes:
    episode: index of the episode in the pass (None: dataset-wide).
    field: the step field, as a path such as ``'observation/image'``.
    kind: a stable name of the rule broken (``'is_last_missing'``, ...).
    message: what is wrong, for a person.
    step: the first offending step, where there is one.
    file: the damaged file, for problems of the files on disk.
  """
  episode: Optional[int]
  field: Optional[str]
  kind: str
  message: str
  step: Optional[int] = None
  file: Optional[str] = None

  def to_dict(self) -> Dict[str, Any]:
    """A JSON-ready dict (``file`` only for problems of a file)."""
    out = dataclasses.asdict(self)
    if self.file is None:
      del out['file']
    return out

  def __str__(self) -> str:
    if self.file is not None:
      return self.message  # Names the file, episode and field itself.
    where = []
    if self.episode is not None:
      where.append(f'episode {self.episode}')
    if self.step is not None:
      where.append(f'step {self.step}')
    if self.field is not None:
      where.append(f'field {self.field!r}')
    return (', '.join(where) + ': ' if where else '') + self.message


@dataclasses.dataclass(frozen=True)
class Notice:
  """A finding (``field``, ``kind``, ``episodes``, ``message``) that leaves the data valid RLDS."""
  field: str
  kind: str
  episodes: int
  message: str

  def __str__(self) -> str:
    return f'field {self.field!r}: {self.message}'


def last_step_notices(counts: Dict[str, int], num_episodes: int
                      ) -> List[Notice]:
  """One `Notice` per field with non-zero values on last steps.

  Example:
    >>> [str(n) for n in last_step_notices({'reward': 3}, 10)]
    ["field 'reward': non-zero on the last step of 3 of 10 episodes; RLDS says it is invalid, so stats, transitions and converters leave it out by default: if it is real (e.g. a success reward), use last_step='valid' (--last-step valid)."]
  """
  return [Notice(field, LAST_STEP_VALUES, count,
                 f'non-zero on the last step of {count} of {num_episodes} '
                 'episodes; RLDS says it is invalid, so stats, transitions '
                 'and converters leave it out by default: if it is real '
                 "(e.g. a success reward), use last_step='valid' "
                 '(--last-step valid).')
          for field, count in sorted(counts.items()) if count]


_STOPPING_KINDS = (CORRUPT_FILE, UNDECODABLE)
"""Problems of files that stop a validation pass where they are read."""


def _counted(count: int, noun: str) -> str:
  """``'1 episode'``, ``'3 episodes'``.

  Example:
    >>> _counted(1, 'step'), _counted(0, 'step')
    ('1 step', '0 steps')
  """
  return f'{count} {noun}' + ('' if count == 1 else 's')


def _text_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
  """Left-aligned columns under a dashed rule."""
  cells = [[str(c) for c in header]] + [
      ['-' if c is None else str(c) for c in row] for row in rows]
  widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
  lines = ['  '.join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
           for r in cells]
  lines.insert(1, '  '.join('-' * w for w in widths))
  return '\n'.join(lines)


@dataclasses.dataclass
class ValidationReport:
  """What `rlds_lite.validate` found.

  Attributes:
    problems: every problem found, in dataset order.
    num_episodes, num_steps: what was checked.
    source: what was checked (a path, a name or ``'<dataset>'``).
    complete: False if the pass did not read every episode.
    repairs, repaired: the repairs asked for, and the repaired episodes (else None).
    notices: findings that leave the data valid (`Notice`).
    unread: episodes damaged files kept from an otherwise whole pass.
    max_problems_reached: the pass stopped at ``max_problems``.

  Example:
    >>> report = ValidationReport(
    ...     problems=[Problem(2, 'is_last', 'is_last_missing',
    ...                       'the final step (index 4) must have is_last=True.',
    ...                       step=4)],
    ...     num_episodes=3, num_steps=15, source='toy')
    >>> report
    ValidationReport(source='toy', ok=False, problems=1, episodes=3, steps=15)
    >>> print(report.table())
    toy: 1 problem in 3 episodes (15 steps)
    episode  step  field    kind             message
    -------  ----  -------  ---------------  ------------------------------------------------
    2        4     is_last  is_last_missing  the final step (index 4) must have is_last=True.
  """
  problems: List[Problem]
  num_episodes: int
  num_steps: int
  source: str = '<dataset>'
  complete: bool = True
  repairs: Tuple[str, ...] = ()
  repaired: Any = None
  notices: List[Notice] = dataclasses.field(default_factory=list)
  unread: int = 0
  max_problems_reached: bool = False

  @property
  def ok(self) -> bool:
    """True if no problem was found (notices do not count)."""
    return not self.problems

  def kinds(self) -> Dict[str, int]:
    """How many problems of each kind, e.g. ``{'is_last_missing': 2}``."""
    counts: Dict[str, int] = {}
    for problem in self.problems:
      counts[problem.kind] = counts.get(problem.kind, 0) + 1
    return counts

  def headline(self) -> str:
    """One line: source, problem count, episodes and steps checked.

    Example:
      >>> ValidationReport([], 1, 1, 'toy').headline()
      'toy: OK in 1 episode (1 step)'
    """
    count = (_counted(len(self.problems), 'problem') if self.problems
             else 'OK')
    text = (f'{self.source}: {count} in '
            f'{_counted(self.num_episodes, "episode")} '
            f'({_counted(self.num_steps, "step")})')
    damaged = sum(p.kind in _STOPPING_KINDS for p in self.problems)
    files = 'a damaged file' if damaged == 1 else f'{damaged} damaged files'
    if not self.complete:
      if self.max_problems_reached or not damaged:
        text += '; stopped early (max_problems reached)'
      elif self.unread:
        text += f'; {_counted(self.unread, "episode")} not read ({files})'
      else:
        text += f'; stopped early ({files})'
    if self.repairs and self.repaired is None:  # Asked for, not done.
      text += f'; not repaired ({files})'
    elif self.repairs:
      text += f'; repaired: {", ".join(self.repairs)}'
    if self.notices:
      plural = '' if len(self.notices) == 1 else 's'
      text += f'; {len(self.notices)} notice{plural}'
    return text

  def table(self) -> str:
    """The headline, one row per problem, then one line per notice."""
    lines = [self.headline()]
    if self.problems:
      rows = [(p.episode, p.step, p.field, p.kind, p.message)
              for p in self.problems]
      lines.append(_text_table(('episode', 'step', 'field', 'kind',
                                'message'), rows))
    lines += [f'notice: {n}' for n in self.notices]
    return '\n'.join(lines)

  def to_dict(self) -> Dict[str, Any]:
    """A JSON-ready dict (the repaired dataset is left out)."""
    return {
        'source': self.source,
        'ok': self.ok,
        'complete': self.complete,
        'episodes': self.num_episodes,
        'steps': self.num_steps,
        'unread': self.unread,
        'repairs': list(self.repairs),
        'problems': [p.to_dict() for p in self.problems],
        'notices': [dataclasses.asdict(n) for n in self.notices],
    }

  def to_json(self, indent: Optional[int] = 2) -> str:
    """The report as JSON text (see `to_dict`)."""
    return json.dumps(self.to_dict(), indent=indent)

  def __str__(self) -> str:
    return self.table()

  def __repr__(self) -> str:
    return (f'ValidationReport(source={self.source!r}, ok={self.ok}, '
            f'problems={len(self.problems)}, episodes={self.num_episodes}, '
            f'steps={self.num_steps})')
