"""Reverb-style patterns (SARS tuples, n-step windows, ...) over RLDS episodes.

Upstream RLDS's ``pattern_map`` API without dm-reverb; how patterns, reference
steps and conditions work: ``docs/patterns.md``.
"""

import collections.abc
import dataclasses
import numbers
from typing import (Any, Callable, Dict, FrozenSet, List, Optional, Sequence,
                    Tuple, Union)

import tensorflow as tf

from rlds_lite import rlds_types
from rlds_lite.transformations import shape_ops

__all__ = [
    'Condition',
    'Pattern',
    'PatternConfig',
    'create_config',
    'pattern_from_transform',
    'pattern_map',
    'pattern_map_from_transform',
    'step_spec',
]

ReferenceStep = Any
"""A step whose fields are indexed relative to the current step."""

PatternTransform = Callable[[ReferenceStep], Any]
"""A function from a reference step to the structure to emit."""

_ALL_STEPS = 2**62
"""A batch size that puts all the steps of an episode in one batch."""

_no_autograph = tf.autograph.experimental.do_not_convert
"""Our own dataset functions need no AutoGraph (it only slows tracing)."""

# ----------------------------------------------------------------------------
# Step specs.


def _leaf_paths(structure: Any) -> List[str]:
  """'a/b'-style paths of the leaves of ``structure``, in tf.nest order."""
  numbered = tf.nest.pack_sequence_as(
      structure, list(range(len(tf.nest.flatten(structure)))))
  paths = {}

  def walk(node: Any, prefix: str) -> None:
    if isinstance(node, collections.abc.Mapping):
      items = node.items()
    elif isinstance(node, (tuple, list)):
      items = enumerate(node)
    else:
      paths[node] = prefix or '<step>'
      return
    for key, child in items:
      walk(child, f'{prefix}/{key}' if prefix else str(key))

  walk(numbered, '')
  return [paths[i] for i in range(len(paths))]


def _check_step_spec(spec: Any, name: str) -> None:
  """Raises TypeError unless every leaf of ``spec`` is a dense TensorSpec."""
  for path, leaf in zip(_leaf_paths(spec), tf.nest.flatten(spec)):
    if not isinstance(leaf, tf.TensorSpec):
      raise TypeError(
          f'{name}: step field {path!r} is a {type(leaf).__name__}; patterns '
          'support dense tensor fields only.')
    if leaf.shape.rank is None:
      raise TypeError(
          f'{name}: step field {path!r} has an unknown rank; patterns need '
          'fields of known rank.')


def _steps_spec(episodes_dataset: tf.data.Dataset, name: str) -> Any:
  """The spec of the ``steps`` entry of an episode, validated."""
  if not isinstance(episodes_dataset, tf.data.Dataset):
    raise TypeError(f'{name} must be a tf.data.Dataset of episodes, got '
                    f'{type(episodes_dataset).__name__}.')
  spec = episodes_dataset.element_spec
  if not isinstance(spec, dict) or rlds_types.STEPS not in spec:
    raise ValueError(
        f'{name} must be a dataset of episodes (dicts with a '
        f'{rlds_types.STEPS!r} entry); its elements are {spec}.')
  return spec[rlds_types.STEPS]


def step_spec(episodes_dataset: tf.data.Dataset) -> Any:
  """The element spec of one step of an episodes dataset (nested or dense steps).

    Example:
      >>> steps = tf.data.Dataset.from_tensor_slices({'reward': [1.0, 2.0]})
      >>> episodes = tf.data.Dataset.from_tensors({'steps': steps})
      >>> step_spec(episodes)
      {'reward': TensorSpec(shape=(), dtype=tf.float32, name=None)}
  """
  spec = _steps_spec(episodes_dataset, 'episodes_dataset')
  if isinstance(spec, tf.data.DatasetSpec):
    return spec.element_spec
  for path, leaf in zip(_leaf_paths(spec), tf.nest.flatten(spec)):
    if not isinstance(leaf, tf.TensorSpec) or not leaf.shape.rank:
      raise ValueError(
          f'episodes_dataset: dense steps field {path!r} must be a [T, ...] '
          f'tensor, got {leaf}.')
  return tf.nest.map_structure(
      lambda s: tf.TensorSpec(s.shape[1:], s.dtype, s.name), spec)


# ----------------------------------------------------------------------------
# Conditions.

_COMPARISONS = {
    '==': tf.equal,
    '!=': tf.not_equal,
    '<': tf.less,
    '<=': tf.less_equal,
    '>': tf.greater,
    '>=': tf.greater_equal,
}
_STEP_INDEX = 'step_index'
_STEPS_SINCE_APPLIED = 'steps_since_applied'
_IS_END_EPISODE = 'is_end_episode'
_DATA = 'data'
_KINDS = (_STEP_INDEX, _STEPS_SINCE_APPLIED, _IS_END_EPISODE, _DATA)


def _is_int(value: Any) -> bool:
  return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _describe_left(kind: str, selector: Any, mod: Optional[int]) -> str:
  if kind == _DATA:
    name = getattr(selector, '__name__', None) if callable(selector) else None
    left = f'data({name or repr(selector)})'
  else:
    left = kind
  return left if mod is None else f'{left} % {mod}'


class ConditionOperand:
  """The left side of a condition; compare it to get a ``Condition``.

  Returned by ``Condition.step_index()``, ``Condition.steps_since_applied()``
  and ``Condition.data(...)``; supports ``% n`` (once) and the comparisons
  ``==, !=, <, <=, >, >=`` with a number.

  Example:
    >>> Condition.step_index() % 3 != 0
    Condition(step_index % 3 != 0)
  """

  __hash__ = None  # == builds a Condition.

  def __init__(self, kind: str, selector: Any = None,
               mod: Optional[int] = None):
    self._kind = kind
    self._selector = selector
    self._mod = mod

  def __mod__(self, n: int) -> 'ConditionOperand':
    if self._mod is not None:
      raise ValueError(f'{self!r} already has a modulo; use one `% n`.')
    if not _is_int(n) or n <= 0:
      raise ValueError(f'the modulo of {self!r} must be a positive int, '
                       f'got {n!r}.')
    return ConditionOperand(self._kind, self._selector, int(n))

  def _compare(self, op: str, value: Any) -> 'Condition':
    return Condition(kind=self._kind, op=op, value=value, mod=self._mod,
                     selector=self._selector)

  def __eq__(self, value: Any) -> 'Condition':  # type: ignore[override]
    return self._compare('==', value)

  def __ne__(self, value: Any) -> 'Condition':  # type: ignore[override]
    return self._compare('!=', value)

  def __lt__(self, value: Any) -> 'Condition':
    return self._compare('<', value)

  def __le__(self, value: Any) -> 'Condition':
    return self._compare('<=', value)

  def __gt__(self, value: Any) -> 'Condition':
    return self._compare('>', value)

  def __ge__(self, value: Any) -> 'Condition':
    return self._compare('>=', value)

  def __bool__(self) -> bool:
    raise TypeError(f'{self!r} is not a condition yet: compare it, e.g. '
                    f'`{self!r} == 0`.')

  def __repr__(self) -> str:
    return _describe_left(self._kind, self._selector, self._mod)


@dataclasses.dataclass(frozen=True, eq=False)
class Condition:
  """A condition on the current step, under which a pattern is applied.

    Built from ``step_index()``, ``steps_since_applied()``,
    ``is_end_episode()`` and ``data(field)``, compared (``==, !=, <, <=, >,
    >=``) with a number, optionally after ``% n``; see ``docs/patterns.md``.

    Example:
      >>> Condition.steps_since_applied() >= 2
      Condition(steps_since_applied >= 2)
      >>> Condition.data('is_terminal') == True
      Condition(data('is_terminal') == True)
  """
  kind: str
  op: str
  value: Union[int, float, bool]
  mod: Optional[int] = None
  selector: Any = None

  def __post_init__(self):
    if self.kind not in _KINDS:
      raise ValueError(f'Condition kind must be one of {_KINDS}, got '
                       f'{self.kind!r}.')
    if self.op not in _COMPARISONS:
      raise ValueError(f'Condition op must be one of {tuple(_COMPARISONS)}, '
                       f'got {self.op!r}.')
    left = _describe_left(self.kind, self.selector, self.mod)
    if self.kind == _DATA:
      if not isinstance(self.value, numbers.Real):
        raise TypeError(f'{left} must be compared with a number, got '
                        f'{self.value!r}.')
    elif not _is_int(self.value):
      raise TypeError(f'{left} must be compared with an int, got '
                      f'{self.value!r}.')

  @staticmethod
  def step_index() -> ConditionOperand:
    """Index of the current step within its episode (0-based).

    Example:
      >>> Condition.step_index() % 2 == 0
      Condition(step_index % 2 == 0)
    """
    return ConditionOperand(_STEP_INDEX)

  @staticmethod
  def steps_since_applied() -> ConditionOperand:
    """Steps since this config last emitted in the current episode.

    Example:
      >>> Condition.steps_since_applied() > 1
      Condition(steps_since_applied > 1)
    """
    return ConditionOperand(_STEPS_SINCE_APPLIED)

  @staticmethod
  def is_end_episode() -> 'Condition':
    """Holds at the last step of each episode.

    Example:
      >>> Condition.is_end_episode()
      Condition(is_end_episode == 1)
    """
    return Condition(kind=_IS_END_EPISODE, op='==', value=1)

  @staticmethod
  def data(field: Union[str, Sequence[Any], Callable[[Any], Any]]
          ) -> ConditionOperand:
    """The value of a scalar field (a key, a path of keys, or a selecting function).

        Example:
          >>> Condition.data(('observation', 'mode')) == 1
          Condition(data(('observation', 'mode')) == 1)
    """
    return ConditionOperand(_DATA, selector=field)

  def __bool__(self) -> bool:
    raise TypeError(
        f'{self!r} is a pattern condition, not a bool (chained comparisons '
        'such as `0 < Condition.step_index() < 5` are not supported: give two '
        'conditions).')

  def __repr__(self) -> str:
    left = _describe_left(self.kind, self.selector, self.mod)
    return f'Condition({left} {self.op} {self.value!r})'


# ----------------------------------------------------------------------------
# Reference steps: trace a transform to learn the history it needs.


class _FieldReference:
  """Stands for one step field while a transform is traced.

  Indexing it records how many steps back it reaches and returns zeros of the
  indexed shape, so the transform can run once without data.
  """

  def __init__(self, index: int, path: str, spec: tf.TensorSpec,
               reach: List[Tuple[int, int]], owner: str):
    self.index = index
    self.path = path
    self.owner = owner
    self._spec = spec
    self._reach = reach

  def __getitem__(self, key: Any) -> tf.Tensor:
    rest = ()
    if isinstance(key, tuple) and key:
      key, rest = key[0], key[1:]
    field = f'{self.owner}: step field {self.path!r}'
    history, length = _history_of(key, field)
    self._reach.append((self.index, history))
    shape = self._spec.shape.as_list()
    if length is not None:
      shape = [length] + shape
    zeros = shape_ops.zeros_from_spec(tf.TensorSpec(shape, self._spec.dtype))
    return zeros[rest] if rest else zeros

  def __repr__(self) -> str:
    return (f'<step field {self.path!r}; index it relative to the current '
            'step, e.g. [-1]>')


def _reference_to_tensor(value, dtype=None, name=None, as_ref=False):
  del dtype, name, as_ref
  raise TypeError(
      f'{value.owner}: step field {value.path!r} was used without indexing '
      'it; index it '
      'relative to the current step first, e.g. x[-1] (current step) or '
      'x[-2:] (last two steps).')


tf.register_tensor_conversion_function(_FieldReference, _reference_to_tensor)


def _history_of(key: Any, field: str) -> Tuple[int, Optional[int]]:
  """(steps of history needed, slice length or None) for one index."""
  if _is_int(key):
    if key >= 0:
      raise ValueError(
          f'{field} was indexed with {key}: indices count back '
          'from the current step and must be negative (x[-1] is the current '
          'step, x[-2] the previous one).')
    return -int(key), None
  if isinstance(key, slice):
    start, stop, step = key.start, key.stop, key.step
    if not _is_int(start) or start >= 0:
      raise ValueError(
          f'{field} was sliced with [{_slice_text(key)}]: slices '
          'must start at a negative index (x[-3:] is the last three steps).')
    if stop is not None and (not _is_int(stop) or not start < stop < 0):
      raise ValueError(
          f'{field} was sliced with [{_slice_text(key)}]: the '
          'stop must be omitted or negative and greater than the start.')
    if step is not None and (not _is_int(step) or step <= 0):
      raise ValueError(
          f'{field} was sliced with [{_slice_text(key)}]: the '
          'slice step must be a positive int.')
    return -int(start), len(range(-start)[key])
  raise TypeError(
      f'{field} must be indexed with an int or a slice relative '
      f'to the current step (e.g. [-1] or [-3:]), got {key!r}.')


def _slice_text(key: slice) -> str:
  parts = ['' if v is None else str(v) for v in (key.start, key.stop)]
  if key.step is not None:
    parts.append(str(key.step))
  return ':'.join(parts)


def _trace(transform_fn: PatternTransform, spec: Any,
           name: str) -> Tuple[int, Any, FrozenSet[int]]:
  """Runs ``transform_fn`` on a reference step.

  Returns:
    The history length, the outputs (tensors) and the flat indices of the
    step fields the transform reads.
  """
  if not callable(transform_fn):
    raise TypeError(f'{name} must be callable, got '
                    f'{type(transform_fn).__name__}.')
  _check_step_spec(spec, name)
  reach: List[Tuple[int, int]] = []
  paths = _leaf_paths(spec)
  reference = tf.nest.pack_sequence_as(spec, [
      _FieldReference(i, path, leaf, reach, name)
      for i, (path, leaf) in enumerate(zip(paths, tf.nest.flatten(spec)))
  ])
  try:
    outputs = transform_fn(reference)
  except (KeyError, IndexError) as e:
    raise ValueError(f'{name} read a step field the steps do not have '
                     f'({e!r}); the step fields are {paths}.') from e
  flat = tf.nest.flatten(outputs)
  if not flat:
    raise ValueError(f'{name} returned nothing to emit ({outputs!r}).')
  converted = []
  for path, leaf in zip(_leaf_paths(outputs), flat):
    if isinstance(leaf, _FieldReference):
      raise ValueError(
          f'{name} returned step field {leaf.path!r} without indexing it '
          f'(at output {path!r}); index it relative to the current step, e.g. '
          'x[-1] (current step) or x[-2:] (last two steps).')
    try:
      converted.append(tf.convert_to_tensor(leaf))
    except (TypeError, ValueError) as e:
      raise TypeError(f'{name} returned a {type(leaf).__name__} at output '
                      f'{path!r}; return tensors.') from e
  if not reach:
    raise ValueError(
        f'{name} indexes no step field; a pattern must read steps relative '
        "to the current one, e.g. step['observation'][-1].")
  return (max(history for _, history in reach),
          tf.nest.pack_sequence_as(outputs, converted),
          frozenset(index for index, _ in reach))


# ----------------------------------------------------------------------------
# Patterns and configs.


@dataclasses.dataclass(frozen=True)
class Pattern:
  """A checked transform and the number of steps of history it reads.

  Build it with ``pattern_from_transform``; ``history_length`` is ``L``, the
  length of the windows the transform is applied to.

  Example:
    >>> spec = {'reward': tf.TensorSpec([], tf.float32)}
    >>> pattern_from_transform(spec, lambda s: s['reward'][-3:]).history_length
    3
  """
  transform_fn: PatternTransform
  history_length: int


def pattern_from_transform(step_structure: Any,
                           transform_fn: PatternTransform) -> Pattern:
  """Checks ``transform_fn`` against a step spec and measures its history.

    ``transform_fn`` is called once on a reference step that records how its
    fields are indexed (``x[-k]``, ``x[-k:]``, ``x[-k:-j]``, ``x[-k::s]``).

    Args:
      step_structure: the step spec, e.g. ``step_spec(episodes_dataset)``.
      transform_fn: function from a reference step to the structure to emit.

    Example:
      >>> spec = {'obs': tf.TensorSpec([2], tf.float32)}
      >>> pattern_from_transform(spec, lambda s: (s['obs'][-2], s['obs'][-1]))
      ... # doctest: +ELLIPSIS
      Pattern(transform_fn=<function <lambda> at ...>, history_length=2)
  """
  history, _, _ = _trace(transform_fn, step_structure, 'transform_fn')
  return Pattern(transform_fn=transform_fn, history_length=history)


@dataclasses.dataclass(frozen=True)
class PatternConfig:
  """A transform and the conditions under which ``pattern_map`` applies it.

  Attributes:
    transform_fn: function from a reference step to the structure to emit.
    conditions: ``Condition``s that must all hold at the current step.

  Example:
    >>> config = PatternConfig(lambda s: s['obs'][-1],
    ...                        [Condition.step_index() % 2 == 0])
    >>> config.conditions
    (Condition(step_index % 2 == 0),)
  """
  transform_fn: PatternTransform
  conditions: Sequence[Condition] = ()

  def __post_init__(self):
    if not callable(self.transform_fn):
      raise TypeError('PatternConfig.transform_fn must be callable, got '
                      f'{type(self.transform_fn).__name__}.')
    conditions = self.conditions
    if isinstance(conditions, (Condition, ConditionOperand)):
      conditions = (conditions,)
    conditions = tuple(conditions)
    for i, condition in enumerate(conditions):
      if isinstance(condition, ConditionOperand):
        raise TypeError(
            f'conditions[{i}] ({condition!r}) is incomplete: compare it, '
            f'e.g. `{condition!r} == 0`.')
      if not isinstance(condition, Condition):
        raise TypeError(
            f'conditions[{i}] must be a rlds_lite Condition (e.g. '
            f'Condition.step_index() % 2 == 0), got '
            f'{type(condition).__name__}.')
    object.__setattr__(self, 'conditions', conditions)


def create_config(pattern: Union[Pattern, PatternTransform],
                  table: Optional[str] = None,
                  conditions: Sequence[Condition] = ()) -> PatternConfig:
  """A ``PatternConfig``; called like reverb's ``create_config`` (``table`` ignored).

    Example:
      >>> create_config(lambda s: s['obs'][-1], table='unused').conditions
      ()
  """
  del table  # Only reverb has tables.
  transform_fn = (pattern.transform_fn if isinstance(pattern, Pattern)
                  else pattern)
  if not callable(transform_fn):
    raise TypeError('pattern must be a Pattern (see pattern_from_transform) '
                    f'or a transform function, got {type(pattern).__name__}.')
  return PatternConfig(transform_fn, conditions)


# ----------------------------------------------------------------------------
# Compiled configs and per-episode masks.


class _FieldMarker:
  """Stands for one step field while a data selector is resolved."""

  def __init__(self, index: int, path: str):
    self.index = index
    self.path = path


def _data_field(condition: Condition, spec: Any, name: str) -> int:
  """Flat index of the scalar step field a data condition reads."""
  paths = _leaf_paths(spec)
  flat_spec = tf.nest.flatten(spec)
  markers = tf.nest.pack_sequence_as(
      spec, [_FieldMarker(i, p) for i, p in enumerate(paths)])
  selector = condition.selector
  try:
    if callable(selector):
      field = selector(markers)
    else:
      keys = (selector,) if isinstance(selector, (str, int)) else selector
      field = markers
      for key in keys:
        field = field[key]
  except (KeyError, IndexError, TypeError) as e:
    raise ValueError(f'{name} ({condition!r}) reads a field the steps do not '
                     f'have; the step fields are {paths}.') from e
  if not isinstance(field, _FieldMarker):
    raise ValueError(f'{name} ({condition!r}) must select one step field, '
                     f'got {field!r}.')
  leaf = flat_spec[field.index]
  if leaf.shape.rank != 0 or not (leaf.dtype.is_integer or leaf.dtype.is_bool
                                  or leaf.dtype.is_floating):
    raise ValueError(
        f'{name} ({condition!r}) must read a scalar bool, integer or float '
        f'field; step field {field.path!r} is {leaf}.')
  return field.index


@dataclasses.dataclass(frozen=True)
class _Compiled:
  """A config ready to run: history, split conditions, traced outputs."""
  transform_fn: PatternTransform
  history: int
  stateless: Tuple[Tuple[Condition, Optional[int]], ...]
  since_applied: Tuple[Condition, ...]
  outputs: Any
  reads: FrozenSet[int]


def _compile(configs: Sequence[PatternConfig], spec: Any) -> List[_Compiled]:
  """Traces each config and checks they all emit the same structure."""
  if isinstance(configs, PatternConfig) or not isinstance(configs, Sequence):
    raise TypeError('configs must be a sequence of PatternConfig, got '
                    f'{type(configs).__name__}.')
  if not configs:
    raise ValueError('configs must contain at least one PatternConfig.')
  compiled = []
  for i, config in enumerate(configs):
    if not isinstance(config, PatternConfig):
      raise TypeError(
          f'configs[{i}] must be a PatternConfig (see create_config), got '
          f'{type(config).__name__}.')
    history, outputs, reads = _trace(config.transform_fn, spec,
                                     f'configs[{i}].transform_fn')
    stateless, since_applied = [], []
    for j, condition in enumerate(config.conditions):
      if condition.kind == _STEPS_SINCE_APPLIED:
        since_applied.append(condition)
      elif condition.kind == _DATA:
        stateless.append((condition, _data_field(
            condition, spec, f'configs[{i}].conditions[{j}]')))
      else:
        stateless.append((condition, None))
    compiled.append(_Compiled(config.transform_fn, history, tuple(stateless),
                              tuple(since_applied), outputs, reads))
  _check_same_outputs(compiled)
  return compiled


def _structure_text(outputs: Any) -> str:
  return repr(tf.nest.map_structure(lambda _: '*', outputs))


def _check_same_outputs(compiled: Sequence[_Compiled]) -> None:
  """Raises ValueError unless all configs emit the same structure/dtypes."""
  first = compiled[0].outputs
  for i, c in enumerate(compiled[1:], 1):
    try:
      tf.nest.assert_same_structure(first, c.outputs)
    except (ValueError, TypeError) as e:
      raise ValueError(
          f'configs[{i}] emits {_structure_text(c.outputs)} but configs[0] '
          f'emits {_structure_text(first)}; all configs must emit the same '
          'structure.') from e
    flat = zip(_leaf_paths(first), tf.nest.flatten(first),
               tf.nest.flatten(c.outputs))
    for path, a, b in flat:
      if a.dtype != b.dtype:
        raise ValueError(
            f'configs[{i}] emits {b.dtype.name} at output {path!r} but '
            f'configs[0] emits {a.dtype.name}; all configs must emit the same '
            'dtypes.')


def _left_value(condition: Condition, field: Optional[int],
                steps: tf.Tensor, num_steps: tf.Tensor,
                current: Dict[int, tf.Tensor]) -> tf.Tensor:
  """The per-step [T] value a stateless condition compares."""
  if condition.kind == _STEP_INDEX:
    return steps
  if condition.kind == _IS_END_EPISODE:
    return tf.cast(tf.equal(steps, num_steps - 1), tf.int64)
  value = current[field]
  if value.dtype.is_floating or isinstance(condition.value, float):
    return tf.cast(value, tf.float64)
  return tf.cast(value, tf.int64)


def _holds(condition: Condition, left: tf.Tensor) -> tf.Tensor:
  if condition.mod is not None:
    left = tf.math.floormod(left, tf.cast(condition.mod, left.dtype))
  return _COMPARISONS[condition.op](left, tf.cast(condition.value, left.dtype))


def _apply_since_applied(compiled: Sequence[_Compiled], steps: tf.Tensor,
                         eligible: tf.Tensor) -> tf.Tensor:
  """Where each config applies [T, C], given steps_since_applied conditions.

  The state is the step each config last applied at (-1 at the start of the
  episode), so steps_since_applied is ``t - last``.
  """

  def step_fn(state, elems):
    last, _ = state
    t, ok = elems
    since = t - last
    holds = []
    for i, c in enumerate(compiled):
      h = ok[i]
      for condition in c.since_applied:
        h = tf.logical_and(h, _holds(condition, since[i]))
      holds.append(h)
    applied = tf.stack(holds)
    return tf.where(applied, t, last), applied

  initial = (tf.fill([len(compiled)], tf.constant(-1, tf.int64)),
             tf.zeros([len(compiled)], tf.bool))
  _, applied = tf.scan(step_fn, (steps, eligible), initializer=initial)
  return applied


@dataclasses.dataclass(frozen=True)
class _Plan:
  """What to compute: configs, window length and the step fields needed.

  Only the fields some transform reads are gathered into windows, and only
  those plus the fields data conditions read flow through the pipeline.
  """
  compiled: Tuple[_Compiled, ...]
  spec: Any
  max_history: int
  window_fields: Tuple[int, ...]
  needed: Tuple[int, ...]

  @classmethod
  def build(cls, compiled: Sequence[_Compiled], spec: Any) -> '_Plan':
    window_fields = sorted(set().union(*(c.reads for c in compiled)))
    condition_fields = {field for c in compiled for _, field in c.stateless
                        if field is not None}
    return cls(tuple(compiled), spec, max(c.history for c in compiled),
               tuple(window_fields),
               tuple(sorted(condition_fields.union(window_fields))))

  def select(self, steps: Any) -> Tuple[tf.Tensor, ...]:
    """The needed fields of ``steps``, in ``needed`` order."""
    flat = tf.nest.flatten(steps)
    return tuple(flat[i] for i in self.needed)

  def needed_specs(self) -> Tuple[tf.TensorSpec, ...]:
    return self.select(self.spec)

  def position(self, field: int) -> int:
    return self.needed.index(field)


def _episode_windows(source: Tuple[tf.Tensor, ...], num_before: int,
                     num_valid_before: tf.Tensor, plan: _Plan) -> dict:
  """All applicable windows of one episode, as ``[N, max_history, ...]``.

    ``source`` holds ``num_before`` rows carried over from earlier episodes
    (the last ``num_valid_before`` real, the others padding), then the
    episode's steps. Returns ``{'window': ..., 'applies': [N, C] bool}`` for
    the N steps where a config applies.
  """
  num_steps = tf.shape(source[0], out_type=tf.int64)[0] - num_before
  steps = tf.range(num_steps, dtype=tf.int64)
  available = tf.minimum(num_valid_before + steps + 1, plan.max_history)
  current = {}  # The current rows of the fields data conditions read.
  masks = []
  for c in plan.compiled:
    mask = available >= c.history
    for condition, field in c.stateless:
      if field is not None and field not in current:
        current[field] = source[plan.position(field)][num_before:]
      left = _left_value(condition, field, steps, num_steps, current)
      mask = tf.logical_and(mask, _holds(condition, left))
    masks.append(mask)
  applies = tf.stack(masks, axis=1)
  if any(c.since_applied for c in plan.compiled):
    applies = _apply_since_applied(plan.compiled, steps, applies)
  keep = tf.reduce_any(applies, axis=1)
  offsets = tf.range(1 - plan.max_history, 1, dtype=tf.int64)
  rows = num_before + tf.boolean_mask(steps, keep)
  index = tf.maximum(rows[:, None] + offsets, 0)
  windows = tuple(tf.gather(source[plan.position(i)], index)
                  for i in plan.window_fields)
  return {'window': windows, 'applies': tf.boolean_mask(applies, keep)}


# ----------------------------------------------------------------------------
# Datasets.


def _dense_episodes(episodes_dataset: tf.data.Dataset) -> tf.data.Dataset:
  """One element per non-empty episode: its steps as ``[T, ...]`` tensors."""
  if isinstance(episodes_dataset.element_spec[rlds_types.STEPS],
                tf.data.DatasetSpec):
    return episodes_dataset.flat_map(_no_autograph(
        lambda episode: episode[rlds_types.STEPS].batch(_ALL_STEPS)))
  return episodes_dataset.map(
      _no_autograph(lambda episode: episode[rlds_types.STEPS]))


def _fit_padding(spec: tf.TensorSpec, carry: tf.Tensor, steps: tf.Tensor,
                 num_valid: tf.Tensor) -> tf.Tensor:
  """The carry, as zeros shaped like ``steps`` if it holds no real step.

  Only needed for fields with unknown dims, whose initial padding cannot
  have the right shape.
  """
  if spec.shape.is_fully_defined():
    return carry
  return tf.cond(
      num_valid > 0, lambda: carry,
      lambda: tf.zeros(tf.concat([tf.shape(carry)[:1], tf.shape(steps)[1:]],
                                 0), carry.dtype))


def _windows(episodes_dataset: tf.data.Dataset, plan: _Plan,
             respect_episode_boundaries: bool) -> tf.data.Dataset:
  """The windows of all episodes: one element per step where configs apply."""
  dense = _dense_episodes(episodes_dataset)
  if respect_episode_boundaries or plan.max_history == 1:
    per_episode = dense.map(_no_autograph(
        lambda steps: _episode_windows(plan.select(steps), 0,
                                       tf.constant(0, tf.int64), plan)))
    return per_episode.unbatch()

  # Windows cross episodes: carry the last K = L - 1 rows over (a fixed-size
  # state, padded with zeros while fewer than K real steps have been seen).
  num_carried = plan.max_history - 1
  specs = plan.needed_specs()

  @_no_autograph
  def with_carry(state, steps):
    carry, num_valid = state
    steps = plan.select(steps)
    carry = tuple(_fit_padding(s, c, x, num_valid)
                  for s, c, x in zip(specs, carry, steps))
    source = tuple(tf.concat([c, x], 0) for c, x in zip(carry, steps))
    windows = _episode_windows(source, num_carried, num_valid, plan)
    new_carry = tuple(
        tf.ensure_shape(x[tf.shape(x)[0] - num_carried:], c.shape)
        for c, x in zip(carry, source))
    num_steps = tf.shape(steps[0], out_type=tf.int64)[0]
    new_valid = tf.minimum(num_valid + num_steps, num_carried)
    return (new_carry, new_valid), windows

  padding = tuple(
      tf.zeros([num_carried] + [d or 0 for d in s.shape.as_list()], s.dtype)
      for s in specs)
  return dense.scan((padding, tf.constant(0, tf.int64)),
                    with_carry).unbatch()


class _UnreadField:
  """Stands in a window for a field no transform read when traced."""

  def __init__(self, path: str):
    self.path = path

  def _fail(self, *args, **kwargs):
    del args, kwargs
    raise ValueError(
        f'step field {self.path!r} was not read when transform_fn was traced '
        'on a reference step; transform_fn must read the same fields '
        'whatever the data.')

  __getitem__ = _fail


tf.register_tensor_conversion_function(
    _UnreadField, _UnreadField._fail)  # pylint: disable=protected-access


def _window_step(plan: _Plan, window: Tuple[tf.Tensor, ...]) -> Any:
  """The window with the structure of a step (unread fields stand-ins)."""
  flat = [_UnreadField(path) for path in _leaf_paths(plan.spec)]
  for i, tensor in zip(plan.window_fields, window):
    flat[i] = tensor
  return tf.nest.pack_sequence_as(plan.spec, flat)


def _check_output_specs(specs: Sequence[Any]) -> None:
  """Raises ValueError unless config outputs can share one element spec."""
  paths = _leaf_paths(specs[0])
  for i, spec in enumerate(specs[1:], 1):
    for path, a, b in zip(paths, tf.nest.flatten(specs[0]),
                          tf.nest.flatten(spec)):
      if (a.shape.rank != b.shape.rank or
          (a.shape.rank and not a.shape[1:].is_compatible_with(b.shape[1:]))):
        raise ValueError(
            f'configs[{i}] emits shape {b.shape} at output {path!r} but '
            f'configs[0] emits {a.shape}; configs may differ only in the '
            'leading dimension.')


def _emit(windows: tf.data.Dataset, plan: _Plan) -> tf.data.Dataset:
  """Applies the transforms; each step emits its applicable configs in order."""
  compiled = plan.compiled
  if len(compiled) == 1:
    transform_fn = compiled[0].transform_fn
    return windows.map(
        lambda e: transform_fn(_window_step(plan, e['window'])))
  outputs = windows.map(lambda e: {
      'outputs': tuple(c.transform_fn(_window_step(plan, e['window']))
                       for c in compiled),
      'applies': e['applies'],
  })
  specs = outputs.element_spec['outputs']
  _check_output_specs(specs)
  if all(tf.nest.flatten(s) == tf.nest.flatten(specs[0]) for s in specs):
    stacked = outputs.map(_no_autograph(lambda e: {
        'outputs': tf.nest.map_structure(lambda *x: tf.stack(x), *e['outputs']),
        'applies': e['applies'],
    }))
    return stacked.unbatch().filter(
        _no_autograph(lambda e: e['applies'])).map(
            _no_autograph(lambda e: e['outputs']))

  @_no_autograph
  def in_order(e):
    emitted = None
    for output, applies in zip(e['outputs'], tf.unstack(e['applies'])):
      one = tf.data.Dataset.from_tensors(output).filter(
          _no_autograph(lambda *_, applies=applies: applies))
      emitted = one if emitted is None else emitted.concatenate(one)
    return emitted

  return outputs.flat_map(in_order)


def pattern_map(episodes_dataset: tf.data.Dataset,
                configs: Sequence[PatternConfig],
                respect_episode_boundaries: bool = True) -> tf.data.Dataset:
  """Applies pattern configs to every step of every episode.

    At each step, every config with enough history whose conditions all hold
    emits ``transform_fn(window)``, in the order of ``configs``.

    Args:
      episodes_dataset: dataset of episodes (nested or dense steps).
      configs: ``PatternConfig``s, all emitting the same structure and dtypes.
      respect_episode_boundaries: if True, a window never mixes episodes.

    Example:
      >>> steps = tf.data.Dataset.from_tensor_slices({'obs': [0, 1, 2, 3]})
      >>> episodes = tf.data.Dataset.from_tensors({'steps': steps})
      >>> configs = [PatternConfig(lambda s: s['obs'][-2:]),
      ...            PatternConfig(lambda s: s['obs'][-2:] * 10,
      ...                          [Condition.step_index() % 2 == 1])]
      >>> [x.tolist() for x in pattern_map(episodes, configs).as_numpy_iterator()]
      [[0, 1], [0, 10], [1, 2], [2, 3], [20, 30]]
  """
  spec = step_spec(episodes_dataset)
  if not isinstance(respect_episode_boundaries, bool):
    raise TypeError('respect_episode_boundaries must be a bool, got '
                    f'{type(respect_episode_boundaries).__name__}.')
  plan = _Plan.build(_compile(configs, spec), spec)
  windows = _windows(episodes_dataset, plan, respect_episode_boundaries)
  return _emit(windows, plan)


def pattern_map_from_transform(
    episodes_dataset: tf.data.Dataset,
    transform_fn: PatternTransform,
    conditions: Optional[Sequence[Condition]] = None,
    respect_episode_boundaries: bool = True) -> tf.data.Dataset:
  """Applies one transform to every step with enough history (one ``pattern_map`` config).

    Example (3-step windows of observations):
      >>> steps = tf.data.Dataset.from_tensor_slices({'obs': [0, 1, 2, 3]})
      >>> episodes = tf.data.Dataset.from_tensors({'steps': steps})
      >>> ds = pattern_map_from_transform(episodes, lambda s: s['obs'][-3:])
      >>> [x.tolist() for x in ds.as_numpy_iterator()]
      [[0, 1, 2], [1, 2, 3]]
  """
  config = PatternConfig(transform_fn, () if conditions is None else conditions)
  return pattern_map(episodes_dataset, [config], respect_episode_boundaries)
