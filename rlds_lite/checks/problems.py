"""The problems a validation pass finds, and the report that lists them.

Example:
  >>> report = ValidationReport(
  ...     problems=[Problem(2, 'is_last', 'is_last_missing',
  ...                       'the final step (index 4) must have is_last=True.',
  ...                       step=4)],
  ...     num_episodes=3, num_steps=15, source='toy')
  >>> report.ok
  False
  >>> report
  ValidationReport(source='toy', ok=False, problems=1, episodes=3, steps=15)
  >>> print(report.table())
  toy: 1 problem in 3 episodes (15 steps)
  episode  step  field    kind             message
  -------  ----  -------  ---------------  ------------------------------------------------
  2        4     is_last  is_last_missing  the final step (index 4) must have is_last=True.
"""

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


@dataclasses.dataclass(frozen=True)
class Problem:
  """One violation of the RLDS format.

  Attributes:
    episode: index of the episode in the pass (None: dataset-wide).
    field: the step field, as a path such as ``'observation/image'``.
    kind: a stable name of the rule broken (``'is_last_missing'``, ...).
    message: what is wrong, for a person (for a file: one line naming the
      file, and the episode and field where known).
    step: the first offending step in the episode, where there is one.
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
    num_episodes: episodes checked.
    num_steps: steps checked.
    source: what was checked (a path, a name or ``'<dataset>'``).
    complete: False if the pass stopped early (``max_problems`` reached, or
      a damaged file, then the last problem).
    repairs: the repairs asked for (``('is_last',)``), applied to `repaired`.
    repaired: the repaired episodes (a ``tf.data.Dataset``) when repairs
      were asked for, else None. Problems describe the data before repair.
  """
  problems: List[Problem]
  num_episodes: int
  num_steps: int
  source: str = '<dataset>'
  complete: bool = True
  repairs: Tuple[str, ...] = ()
  repaired: Any = None

  @property
  def ok(self) -> bool:
    """True if no problem was found."""
    return not self.problems

  def kinds(self) -> Dict[str, int]:
    """How many problems of each kind, e.g. ``{'is_last_missing': 2}``."""
    counts: Dict[str, int] = {}
    for problem in self.problems:
      counts[problem.kind] = counts.get(problem.kind, 0) + 1
    return counts

  def headline(self) -> str:
    """One line: source, problem count, episodes and steps checked."""
    plural = '' if len(self.problems) == 1 else 's'
    count = f'{len(self.problems)} problem{plural}' if self.problems else 'OK'
    text = (f'{self.source}: {count} in {self.num_episodes} episodes '
            f'({self.num_steps} steps)')
    if not self.complete:
      damaged = bool(self.problems) and self.problems[-1].file is not None
      text += ('; stopped early (a damaged file)' if damaged
               else '; stopped early (max_problems reached)')
    if self.repairs:
      text += f'; repaired: {", ".join(self.repairs)}'
    return text

  def table(self) -> str:
    """The headline, then one row per problem."""
    if not self.problems:
      return self.headline()
    rows = [(p.episode, p.step, p.field, p.kind, p.message)
            for p in self.problems]
    return self.headline() + '\n' + _text_table(
        ('episode', 'step', 'field', 'kind', 'message'), rows)

  def to_dict(self) -> Dict[str, Any]:
    """A JSON-ready dict (the repaired dataset is left out)."""
    return {
        'source': self.source,
        'ok': self.ok,
        'complete': self.complete,
        'episodes': self.num_episodes,
        'steps': self.num_steps,
        'repairs': list(self.repairs),
        'problems': [p.to_dict() for p in self.problems],
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
