"""Typed, JSON-serialisable, mergeable statistics of an RLDS dataset.

`FieldStats` holds one field's statistics (per element of its shape),
`DatasetStats` a dataset's (episode counts, lengths, returns, one
`FieldStats` per numeric step field, one `StringStats` per string field);
`merge` combines statistics of disjoint datasets (precision: docs/stats.md).

Example:
  >>> import numpy as np
  >>> a = FieldStats.from_values('x', np.array([1.0, 2.0]))
  >>> b = FieldStats.from_values('x', np.array([3.0, 6.0]))
  >>> both = a.merge(b)
  >>> both.count, float(both.mean), float(both.max)
  (4, 3.0, 6.0)
  >>> FieldStats.from_json(both.to_json()) == both
  True
"""

import dataclasses
import json
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import numpy as np

from rlds_lite import nesting
from rlds_lite.stats import sketch as sketch_lib
from rlds_lite.stats import strings as strings_lib

QUANTILES = (0.01, 0.5, 0.99)
"""The quantiles reported as ``p01``, ``p50`` and ``p99``."""

FORMAT_VERSION = 3
"""Version of the JSON layout (part of cache keys); 2 added string fields
and last-step values, 3 the counts of non-finite values (``nan_count``,
``inf_count``; older files are still read, with counts of zero)."""


class NonFiniteValuesWarning(UserWarning):
  """Fields hold NaN or infinite values (left out of their statistics)."""


def _to_list(array: np.ndarray) -> Any:
  """Strict-JSON values: NaN becomes None, +-inf ``'inf'``/``'-inf'``.

  Example:
    >>> _to_list(np.array([1.0, np.nan, -np.inf]))
    [1.0, None, '-inf']
  """
  values = np.asarray(array, np.float64)
  if values.ndim == 0:
    if np.isnan(values):
      return None
    return float(values) if np.isfinite(values) else (
        'inf' if values > 0 else '-inf')
  return [_to_list(v) for v in values]


def _from_list(values: Any, shape: Sequence[int]) -> np.ndarray:
  def fill(v):
    if isinstance(v, list):
      return [fill(x) for x in v]
    return np.nan if v is None else float(v)  # float('inf') reads 'inf'.
  return np.asarray(fill(values), np.float64).reshape(shape)


def _counts(values: Any, shape: Sequence[int]) -> np.ndarray:
  """An int64 array of ``shape`` (zeros for None: an older file)."""
  if values is None:
    return np.zeros(shape, np.int64)
  return np.asarray(values, np.int64).reshape(shape)


@dataclasses.dataclass(eq=False)
class FieldStats:
  """Statistics of one field, per element of its ``shape``.

  ``count`` is the number of valid values (rows); ``nan_count`` and
  ``inf_count`` count, per element, the NaN and infinite ones among them,
  which every other statistic leaves out: ``mean``, ``std`` (the population
  standard deviation, ``np.std``, ``ddof=0``), ``min``, ``max`` and
  ``p01``/``p50``/``p99`` (from ``sketch``: ``inverted_cdf`` quantiles,
  within ``rank_error``) are those of the ``finite_count`` finite values.
  All arrays have ``shape``; statistics of an element without a finite value
  are NaN.

  Example:
    >>> s = FieldStats.from_values('x', [[1.0, np.nan], [3.0, np.inf]])
    >>> s.count, s.nan_count.tolist(), s.inf_count.tolist()
    (2, [0, 1], [0, 1])
    >>> s.finite_count.tolist(), s.mean.tolist()
    ([2, 0], [2.0, nan])
  """

  path: str
  dtype: str
  shape: tuple
  count: int
  mean: np.ndarray
  m2: np.ndarray  # Sum of squared deviations from the mean (for merging).
  min: np.ndarray
  max: np.ndarray
  sketch: sketch_lib.QuantileSketch = dataclasses.field(repr=False)
  nan_count: Optional[np.ndarray] = None  # int64 per element; None: zeros.
  inf_count: Optional[np.ndarray] = None

  def __post_init__(self):
    self.nan_count = _counts(self.nan_count, self.shape)
    self.inf_count = _counts(self.inf_count, self.shape)

  @classmethod
  def empty(cls, path: str, shape: Sequence[int] = (), dtype: str = 'float64',
            k: int = sketch_lib.DEFAULT_K, seed: int = 0) -> 'FieldStats':
    """Statistics of no values."""
    shape = tuple(int(d) for d in shape)
    nan = np.full(shape, np.nan)
    return cls(path, dtype, shape, 0, nan.copy(), np.zeros(shape), nan.copy(),
               nan.copy(), sketch_lib.QuantileSketch(
                   shape, k, seed, sketch_lib.holding_dtype(dtype)))

  @classmethod
  def from_values(cls, path: str, values: Any, dtype: Optional[str] = None,
                  k: int = sketch_lib.DEFAULT_K,
                  seed: int = 0) -> 'FieldStats':
    """Statistics of ``[n, *shape]`` values.

    Example:
      >>> s = FieldStats.from_values('a', [[0.0, 1.0], [2.0, 5.0]])
      >>> s.mean.tolist(), s.std.tolist(), s.p50.tolist()
      ([1.0, 3.0], [1.0, 2.0], [0.0, 1.0])
    """
    array = np.asarray(values)
    stats = cls.empty(path, array.shape[1:], dtype or str(array.dtype), k, seed)
    stats.update(array)
    return stats

  def update(self, values: Any) -> None:
    """Adds ``[n, *shape]`` values (in place); see the class doc for NaN."""
    rows = np.asarray(values, np.float64)
    n = rows.shape[0]
    if not n:
      return
    finite = np.isfinite(rows)
    if finite.all():
      with np.errstate(over='ignore'):  # Beyond float64: inf, as NumPy.
        mean = rows.mean(axis=0)
        m2 = np.square(rows - mean).sum(axis=0)
      self._merge_moments(np.full(self.shape, n, np.int64), mean, m2,
                          rows.min(axis=0), rows.max(axis=0))
    else:
      counts = finite.sum(axis=0)
      zeroed = np.where(finite, rows, 0.0)
      with np.errstate(over='ignore', invalid='ignore', divide='ignore'):
        mean = zeroed.sum(axis=0) / counts  # NaN where no finite value.
        m2 = np.where(finite, np.square(zeroed - np.nan_to_num(mean)),
                      0.0).sum(axis=0)
      low = np.where(finite, rows, np.inf).min(axis=0)
      high = np.where(finite, rows, -np.inf).max(axis=0)
      none = counts == 0
      self._merge_moments(counts, mean, m2, np.where(none, np.nan, low),
                          np.where(none, np.nan, high))
      nan = np.isnan(rows)  # The moments first: they read finite_count.
      self.nan_count = self.nan_count + nan.sum(axis=0)
      self.inf_count = self.inf_count + (~finite & ~nan).sum(axis=0)
    self.count += n
    self.sketch.update(rows)

  @property
  def finite_count(self) -> np.ndarray:
    """Per element, the values the statistics are of (``count`` less NaN and
    infinite ones)."""
    return self.count - self.nan_count - self.inf_count

  @property
  def nonfinite_count(self) -> int:
    """NaN and infinite values, all elements together."""
    return int(self.nan_count.sum() + self.inf_count.sum())

  def _merge_moments(self, n, mean, m2, low, high) -> None:
    """Chan et al.'s parallel merge of mean and M2 per element (``n`` finite
    values there); min and max (NaN where neither side has a value)."""
    have = self.finite_count
    mean, m2 = np.asarray(mean, np.float64), np.asarray(m2, np.float64)
    with np.errstate(over='ignore', invalid='ignore', divide='ignore'):
      total = have + n
      delta = mean - self.mean
      merged_mean = self.mean + delta * (n / total)
      merged_m2 = self.m2 + m2 + np.square(delta) * (have * n / total)
    both, mine = (have > 0) & (n > 0), have > 0
    self.mean = np.where(both, merged_mean, np.where(mine, self.mean, mean))
    self.m2 = np.where(both, merged_m2, np.where(mine, self.m2, m2))
    self.min = np.fmin(self.min, np.asarray(low, np.float64))
    self.max = np.fmax(self.max, np.asarray(high, np.float64))

  def merge(self, other: 'FieldStats') -> 'FieldStats':
    """Statistics of the values of both (a new object)."""
    if other.shape != self.shape:
      raise ValueError(f'FieldStats.merge: field {self.path!r} has shape '
                       f'{self.shape} and {other.shape}.')
    merged = self.copy()
    merged._merge_moments(other.finite_count, other.mean, other.m2, other.min,  # pylint: disable=protected-access
                          other.max)
    merged.count += other.count
    merged.nan_count = merged.nan_count + other.nan_count
    merged.inf_count = merged.inf_count + other.inf_count
    merged.sketch.merge(other.sketch)
    return merged

  def copy(self) -> 'FieldStats':
    return dataclasses.replace(
        self, mean=self.mean.copy(), m2=self.m2.copy(), min=self.min.copy(),
        max=self.max.copy(), sketch=self.sketch.copy(),
        nan_count=self.nan_count.copy(), inf_count=self.inf_count.copy())

  @property
  def std(self) -> np.ndarray:
    """Population standard deviation (``ddof=0``) of the finite values."""
    count = self.finite_count
    with np.errstate(invalid='ignore', divide='ignore'):
      return np.where(count > 0, np.sqrt(self.m2 / count), np.nan)

  def quantile(self, q: Any) -> np.ndarray:
    """Approximate quantile(s) from the sketch (see ``QuantileSketch``)."""
    return self.sketch.quantile(q)

  @property
  def p01(self) -> np.ndarray:
    return self.quantile(0.01)

  @property
  def p50(self) -> np.ndarray:
    return self.quantile(0.5)

  @property
  def p99(self) -> np.ndarray:
    return self.quantile(0.99)

  @property
  def rank_error(self) -> float:
    """Guaranteed bound on the quantiles' rank error, as a fraction."""
    return self.sketch.rank_error / self.count if self.count else 0.0

  def summary(self) -> Dict[str, Any]:
    """The readable statistics (no sketch), JSON-ready."""
    quantiles = self.quantile(QUANTILES)
    return {'path': self.path, 'dtype': self.dtype, 'shape': list(self.shape),
            'count': self.count, 'nan_count': self.nan_count.tolist(),
            'inf_count': self.inf_count.tolist(), 'mean': _to_list(self.mean),
            'std': _to_list(self.std), 'min': _to_list(self.min),
            'max': _to_list(self.max), 'p01': _to_list(quantiles[0]),
            'p50': _to_list(quantiles[1]), 'p99': _to_list(quantiles[2]),
            'rank_error': self.rank_error}

  def to_dict(self) -> Dict[str, Any]:
    return {**self.summary(), 'm2': _to_list(self.m2),
            'sketch': self.sketch.to_dict()}

  @classmethod
  def from_dict(cls, data: Dict[str, Any]) -> 'FieldStats':
    shape = tuple(data['shape'])
    return cls(data['path'], data['dtype'], shape, int(data['count']),
               _from_list(data['mean'], shape), _from_list(data['m2'], shape),
               _from_list(data['min'], shape), _from_list(data['max'], shape),
               sketch_lib.QuantileSketch.from_dict(data['sketch']),
               data.get('nan_count'), data.get('inf_count'))

  def to_json(self) -> str:
    return json.dumps(self.to_dict(), allow_nan=False)

  @classmethod
  def from_json(cls, text: str) -> 'FieldStats':
    return cls.from_dict(nesting.loads(text))

  def __eq__(self, other: Any) -> bool:
    return isinstance(other, FieldStats) and self.to_dict() == other.to_dict()


def _merge_fields(a: Dict[str, FieldStats],
                  b: Dict[str, FieldStats]) -> Dict[str, FieldStats]:
  merged = {k: v.copy() for k, v in a.items()}
  for key, value in b.items():
    merged[key] = merged[key].merge(value) if key in merged else value.copy()
  return dict(sorted(merged.items()))


def _merge_strings(a: Dict[str, strings_lib.StringStats],
                   b: Dict[str, strings_lib.StringStats]
                   ) -> Dict[str, strings_lib.StringStats]:
  merged = {k: v.copy() for k, v in a.items()}
  for key, value in b.items():
    merged[key] = merged[key].merge(value) if key in merged else value.copy()
  return dict(sorted(merged.items()))


def _top_text(stats: strings_lib.StringStats, n: int = 3,
              width: int = 24) -> str:
  """``'pick' 600, 'place' 400, ...`` (long values cut)."""
  parts = []
  for value, count in stats.top(n):
    text = value.decode('utf-8', 'replace')
    if len(text) > width:
      text = text[:width - 3] + '...'
    parts.append(f'{text!r} {count}' + ('' if stats.exact else '+'))
  if len(stats.counters) > n:
    parts.append('...')
  return ', '.join(parts)


def _format(value: Optional[float]) -> str:
  return 'nan' if value is None else f'{value:.4g}'


@dataclasses.dataclass(eq=False)
class DatasetStats:
  """Statistics of an RLDS dataset (see ``rlds_lite.stats.compute``).

  Attributes:
    num_episodes: episodes with at least one step.
    num_steps: steps, last steps included.
    num_terminated: episodes whose last step is terminal.
    num_truncated: the others (ended by a time limit or cut short).
    episode_length: statistics of the episode lengths (in steps).
    episode_return: statistics of the returns (sum of the valid rewards), or
      None without a ``reward`` field.
    fields: statistics of each numeric step field, by path
      (``'observation/pos'``); NaN and infinite values are counted
      (``nan_count``, ``inf_count``, see ``nonfinite``) and left out of the
      other statistics.
    skipped: step fields left out, with the reason (images, varying shapes).
    source: what was summarised (dataset, split, transform, ``last_step``),
      free-form.
    strings: statistics of each string step field (count, distinct values,
      the most frequent), by path.
    last_step_values: per field (``action``, ``reward``, ``discount``), the
      episodes whose last step holds a non-zero value; left out of the
      statistics under ``last_step='invalid'`` (RLDS), counted under
      ``'valid'``.
  """

  num_episodes: int
  num_steps: int
  num_terminated: int
  num_truncated: int
  episode_length: FieldStats
  episode_return: Optional[FieldStats]
  fields: Dict[str, FieldStats]
  skipped: Dict[str, str] = dataclasses.field(default_factory=dict)
  source: Dict[str, Any] = dataclasses.field(default_factory=dict)
  strings: Dict[str, strings_lib.StringStats] = dataclasses.field(
      default_factory=dict)
  last_step_values: Dict[str, int] = dataclasses.field(default_factory=dict)

  def __getitem__(self, path: str) -> Any:
    """The `FieldStats` (or `StringStats` for a string field) of ``path``."""
    if path in self.strings:
      return self.strings[path]
    if path not in self.fields:
      raise KeyError(f'DatasetStats: no statistics of field {path!r} (fields: '
                     f'{sorted(self.fields) + sorted(self.strings)}).')
    return self.fields[path]

  def merge(self, *others: 'DatasetStats') -> 'DatasetStats':
    """Statistics of this dataset and ``others`` together (see ``merge``)."""
    return merge(self, *others)

  @property
  def nonfinite(self) -> Dict[str, Tuple[int, int]]:
    """``{path: (NaN values, infinite values)}`` of the fields holding any.

    ``episode_return`` and ``episode_length`` are named so too (a NaN reward
    makes its episode's return NaN).

    Example:
      >>> s = DatasetStats(1, 2, 1, 0, FieldStats.from_values('length', [2]),
      ...     None, {'a': FieldStats.from_values('a', [np.nan, np.inf])})
      >>> s.nonfinite
      {'a': (1, 1)}
    """
    named = {'episode_length': self.episode_length,
             'episode_return': self.episode_return, **self.fields}
    return {path: (int(field.nan_count.sum()), int(field.inf_count.sum()))
            for path, field in named.items()
            if field is not None and field.nonfinite_count}

  def nonfinite_message(self) -> Optional[str]:
    """One line naming the fields with NaN or infinite values, or None."""
    if not self.nonfinite:
      return None
    def counts(nan, inf):
      return ', '.join(f'{n} {what}' for n, what in ((nan, 'NaN'), (inf, 'inf'))
                       if n)
    listed = ', '.join(f'{path} ({counts(*n)})'
                       for path, n in self.nonfinite.items())
    return (f'non-finite values in {listed}: left out of mean, std, min, max '
            'and quantiles, which are of the finite values (counted in '
            'nan_count and inf_count).')

  def _as_dict(self, field_dict: Callable[[FieldStats], Dict[str, Any]],
               string_dict: Callable[[strings_lib.StringStats],
                                     Dict[str, Any]]) -> Dict[str, Any]:
    return {
        'num_episodes': self.num_episodes, 'num_steps': self.num_steps,
        'num_terminated': self.num_terminated,
        'num_truncated': self.num_truncated,
        'episode_length': field_dict(self.episode_length),
        'episode_return': (field_dict(self.episode_return)
                           if self.episode_return else None),
        'fields': {k: field_dict(v) for k, v in self.fields.items()},
        'strings': {k: string_dict(v) for k, v in self.strings.items()},
        'last_step_values': dict(self.last_step_values),
        'skipped': dict(self.skipped), 'source': dict(self.source)}

  def to_dict(self) -> Dict[str, Any]:
    """Everything (sketches included), JSON-ready."""
    return {'format_version': FORMAT_VERSION,
            **self._as_dict(FieldStats.to_dict,
                            strings_lib.StringStats.to_dict)}

  @classmethod
  def from_dict(cls, data: Dict[str, Any]) -> 'DatasetStats':
    if data.get('format_version') not in (1, 2, FORMAT_VERSION):
      raise ValueError('DatasetStats: unsupported format_version '
                       f'{data.get("format_version")!r}.')
    ret = data['episode_return']
    return cls(data['num_episodes'], data['num_steps'], data['num_terminated'],
               data['num_truncated'],
               FieldStats.from_dict(data['episode_length']),
               FieldStats.from_dict(ret) if ret else None,
               {k: FieldStats.from_dict(v) for k, v in data['fields'].items()},
               dict(data.get('skipped', {})), dict(data.get('source', {})),
               {k: strings_lib.StringStats.from_dict(v)
                for k, v in data.get('strings', {}).items()},
               dict(data.get('last_step_values', {})))

  def to_json(self, indent: Optional[int] = None) -> str:
    """Strict JSON text; ``from_json`` reads it back (sketches included).

    A NaN statistic (no finite value) is ``null``; an infinite one (float64
    overflow only: infinite values are left out) ``"inf"`` or ``"-inf"``.
    """
    return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

  @classmethod
  def from_json(cls, text: str) -> 'DatasetStats':
    return cls.from_dict(nesting.loads(text))

  def summary(self) -> Dict[str, Any]:
    """The readable statistics, JSON-ready (no sketches)."""
    return self._as_dict(FieldStats.summary, strings_lib.StringStats.summary)

  def table(self, max_dims: int = 8) -> str:
    """A readable text table, one row per field element (``max_dims`` shown).

    Columns ``nan`` and ``inf`` (after ``count``) appear when some field
    holds such values.
    """
    lines = [f'{self.num_episodes} episodes, {self.num_steps} steps: '
             f'{self.num_terminated} terminated, {self.num_truncated} '
             'truncated']
    named = [('episode length', self.episode_length)]
    if self.episode_return is not None:
      named.append(('episode return', self.episode_return))
    named.extend(self.fields.items())
    # NaN and inf columns only when some field holds such values.
    counted = any(field.nonfinite_count for _, field in named)
    statistics = ('mean', 'std', 'min', 'p01', 'p50', 'p99', 'max')
    header = ('field', 'count') + (('nan', 'inf') if counted else ()) + (
        statistics)
    rows = []
    for name, field in named:
      summary = field.summary()
      columns = [np.asarray(_from_list(summary[c], field.shape)).reshape(-1)
                 for c in statistics]
      nans, infs = field.nan_count.reshape(-1), field.inf_count.reshape(-1)
      size = columns[0].size
      for i in range(min(size, max_dims)):
        label = name if not field.shape else f'{name}[{i}]'
        rows.append([label, str(field.count)] + (
            [str(nans[i]), str(infs[i])] if counted else []) + [
                _format(None if np.isnan(c[i]) else float(c[i]))
                for c in columns])
      if size > max_dims:  # The rest: their NaN and inf, added up.
        rest = ([str(nans[max_dims:].sum()), str(infs[max_dims:].sum())]
                if counted else [])
        rows.append([f'{name}[{max_dims}:{size}]', '...'] + rest +
                    [''] * len(statistics))
    widths = [max(len(r[i]) for r in [list(header)] + rows)
              for i in range(len(header))]
    def line(cells):
      return '  '.join(c.ljust(w) if i == 0 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(cells, widths)))
    lines += [line(header), line(['-' * w for w in widths])]
    lines += [line(r) for r in rows]
    if self.strings:
      rows = [['string field', 'count', 'distinct', 'most frequent']]
      rows += [[path, str(s.count),
                str(s.distinct) + ('' if s.distinct_exact else ' (approx.)'),
                _top_text(s)] for path, s in self.strings.items()]
      widths = [max(len(r[i]) for r in rows) for i in range(3)]
      rows.insert(1, ['-' * w for w in widths] + ['-------------'])
      lines.append('')
      lines += ['  '.join([r[0].ljust(widths[0]), r[1].rjust(widths[1]),
                           r[2].rjust(widths[2]), r[3]]).rstrip()
                for r in rows]
    if counted:
      lines.append('nan, inf: values left out of mean, std, min, p01-p99 and '
                   'max (they are of the finite values; count includes '
                   'them).')
    if self.last_step_values:
      kept = self.source.get('last_step') == 'valid'
      listed = ', '.join(f'{k} in {v} of {self.num_episodes} episodes'
                         for k, v in sorted(self.last_step_values.items()))
      lines.append(
          f'last steps: non-zero {listed}: ' +
          ('counted (last_step=valid).' if kept else
           "left out (RLDS: invalid); last_step='valid' "
           '(--last-step valid) counts them.'))
    lines += [f'skipped {path}: {why}' for path, why in self.skipped.items()]
    return '\n'.join(lines)

  def __repr__(self) -> str:
    return (f'DatasetStats(num_episodes={self.num_episodes}, '
            f'num_steps={self.num_steps}, '
            f'num_terminated={self.num_terminated}, '
            f'num_truncated={self.num_truncated}, '
            f'fields={sorted(self.fields)})')

  def __str__(self) -> str:
    return self.table()

  def __eq__(self, other: Any) -> bool:
    return isinstance(other, DatasetStats) and (
        self.to_dict() == other.to_dict())


def merge(*stats: DatasetStats) -> DatasetStats:
  """Statistics of several datasets together.

  Counts, min and max are exact; mean and std match a single pass to float64
  rounding; quantiles merge the sketches (their ``rank_error`` adds up).
  Fields present in only some datasets are merged over those.

  Example:
    >>> import numpy as np
    >>> def one(x):
    ...   return DatasetStats(1, 2, 1, 0,
    ...       FieldStats.from_values('length', [2]), None,
    ...       {'action': FieldStats.from_values('action', [x])})
    >>> both = merge(one(1.0), one(3.0))
    >>> both.num_episodes, float(both['action'].mean)
    (2, 2.0)
  """
  if not stats:
    raise ValueError('merge: no statistics given.')
  first, rest = stats[0], stats[1:]
  result = dataclasses.replace(
      first, episode_length=first.episode_length.copy(),
      episode_return=(first.episode_return.copy()
                      if first.episode_return else None),
      fields=_merge_fields(first.fields, {}), skipped=dict(first.skipped),
      source={'merged': [s.source for s in stats]},
      strings=_merge_strings(first.strings, {}),
      last_step_values=dict(first.last_step_values))
  for other in rest:
    result.num_episodes += other.num_episodes
    result.num_steps += other.num_steps
    result.num_terminated += other.num_terminated
    result.num_truncated += other.num_truncated
    result.episode_length = result.episode_length.merge(other.episode_length)
    if other.episode_return is not None:
      result.episode_return = (
          result.episode_return.merge(other.episode_return)
          if result.episode_return else other.episode_return.copy())
    result.fields = _merge_fields(result.fields, other.fields)
    result.strings = _merge_strings(result.strings, other.strings)
    for key, count in other.last_step_values.items():
      result.last_step_values[key] = (
          result.last_step_values.get(key, 0) + count)
    result.skipped.update(other.skipped)
  return result

