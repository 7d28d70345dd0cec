"""Shuffled batches of Octo-shaped samples (`rlds_lite.RobotSamples`) from camera datasets, frames decoded.

``robot_samples_dataset`` decodes each frame a sample uses as few times as
the memory allows, per segment of an episode or per batch
(``robot_memory``; docs/pooling.md), and deals the samples out of pools.

Example:
  >>> import tempfile
  >>> from rlds_lite import synthetic
  >>> path = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=3,
  ...                                 length=5, cameras={'image': (32, 32)})
  >>> kind = sample_kinds.RobotSamples(history=2, action_chunk=3,
  ...                                   last_step='valid')
  >>> ds = robot_samples_dataset(path, kind, 4, seed=0,
  ...                            frames=FrameDecoding(image_size=(16, 16)))
  >>> batch = next(iter(ds))
  >>> batch['observation']['image'].shape, batch['action'].shape
  (TensorShape([4, 2, 16, 16, 3]), TensorShape([4, 3, 7]))
  >>> sum(int(b['action'].shape[0]) for b in ds)   # every step once
  15
"""

import dataclasses
import logging
import os
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import tensorflow as tf

from rlds_lite import op_context
from rlds_lite import option_objects
from rlds_lite import decoding
from rlds_lite import nest_paths
from rlds_lite import rlds_types
from rlds_lite import sample_kinds
from rlds_lite import source as source_lib
from rlds_lite.dense import indexing
from rlds_lite.dense import last_step as last_step_lib
from rlds_lite.dense import robot as samples_lib
from rlds_lite.images import decode as decode_lib
from rlds_lite.pipeline import inputs
from rlds_lite.pipeline import pools
from rlds_lite.pipeline import robot_carry
from rlds_lite.pipeline import robot_memory

__all__ = ['plan_robot_samples', 'robot_samples_dataset']

PathLike = Union[str, os.PathLike]
Specs = Dict[str, decode_lib.ImageSpec]
_LOG = logging.getLogger('rlds_lite')
_graph_fn = tf.autograph.experimental.do_not_convert
_STEPS, _INDEX, _VALUES = 'steps', 'index', 'values'
_NO_FRAMES = '_no_frames'
"""A placeholder step column (``[T]`` uint8) for episodes without images."""


# ----------------------------------------------------------------- the input


def _opened(source: Any, split: Optional[str], data_dir: Optional[PathLike]
            ) -> Any:
  """A `rlds_lite.Source` of a TFDS name or directory; a dataset as it is."""
  if isinstance(source, tf.data.Dataset):
    return source
  if not isinstance(source, (str, os.PathLike, source_lib.Source)):
    raise TypeError(f'source must be a TFDS name, a dataset directory or '
                    f'a tf.data.Dataset of episodes, got {type(source).__name__}.')
  return source_lib.as_source(source, split, data_dir=data_dir)


def _source(source: Any, shuffle: bool, seed: Optional[int],
            specs: Optional[Specs], observation_key: str
            ) -> Tuple[tf.data.Dataset, Specs]:
  """``(episodes, image specs)`` of an opened TFDS split, or a dataset."""
  if isinstance(source, tf.data.Dataset):
    episodes = inputs.dense_episodes(source)
    step_spec = episodes.element_spec[rlds_types.STEPS]
    found = {}
    for path, leaf in nest_paths.flatten_with_paths(step_spec):
      if path in (specs or {}):
        found[path] = _checked_spec(specs[path], leaf, path)
      elif ((path + '/').startswith(observation_key + '/') and
            leaf.dtype == tf.uint8 and leaf.shape.rank == 4 and
            None not in leaf.shape[1:]):
        found[path] = decode_lib.ImageSpec(tuple(leaf.shape[1:]), None)
    for path in specs or {}:
      if path not in found:
        fields = [p for p, _ in nest_paths.flatten_with_paths(step_spec)]
        raise ValueError(f'image_specs names {path!r}, which is not a '
                         f'step field; the steps have {fields}.')
    return episodes, found
  if specs:
    raise ValueError(f'image_specs describes the image fields of a '
                     'tf.data.Dataset source; a TFDS dataset declares its own '
                     '(its Image features). Leave image_specs out.')
  read_config = tfds_read_config(seed) if shuffle else None
  episodes = source.episodes(dense=True, encoded_images=True,
                             shuffle_files=shuffle, read_config=read_config)
  return episodes, source.image_specs


def _checked_spec(spec: Any, leaf: tf.TensorSpec, path: str
                  ) -> decode_lib.ImageSpec:
  """``image_specs[path]`` checked against the field's ``[T, ...]`` spec.

  Encoded frames are strings; raw frames have the spec's shape where it is
  known (an encoded frame's size is checked as it is decoded).
  """
  if not isinstance(spec, decode_lib.ImageSpec):
    raise TypeError(f'image_specs[{path!r}] must be an '
                    f'rlds_lite.images.ImageSpec, got {type(spec).__name__}.')
  if spec.encoding is None and leaf.dtype == tf.string:
    shape = tuple(spec.shape)
    raise ValueError(
        f'image_specs says {path!r} holds raw frames, but it is '
        f'{leaf.dtype.name} {leaf.shape} (encoded frames); give their '
        f"encoding: ImageSpec({shape}, 'jpeg') or ImageSpec({shape}, 'png').")
  if spec.encoding is None:
    decode_lib.check_raw_frames(leaf.shape, spec, path)
  elif leaf.dtype != tf.string:
    raise ValueError(
        f'image_specs says {path!r} holds {spec.encoding} frames, but '
        f'it is {leaf.dtype.name} {leaf.shape}; for raw frames use '
        f'ImageSpec({tuple(spec.shape)}, None).')
  return spec


def tfds_read_config(seed: Optional[int]) -> Any:
  """A ``tfds.ReadConfig`` shuffling files with ``seed`` (new every epoch).

  Files are interleaved one episode at a time: TFDS's default blocks of 16
  make its parallel interleave buffer up to 32 serialized episodes per open
  file (measured: ~100 MB of RSS for 3 MB camera episodes).
  """
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  return tfds.ReadConfig(shuffle_seed=seed, shuffle_reshuffle_each_iteration=True,
                         interleave_block_length=1, enable_ordering_guard=False)


def _image_paths(specs: Specs, observation_key: str) -> List[str]:
  """The image paths relative to the observation; other images are an error."""
  relative = []
  for path in specs:
    head, _, rest = path.partition('/')
    if head != observation_key:
      raise ValueError(f'image field {path!r} is not part of the '
                       f'{observation_key!r} field; only observation frames '
                       'are decoded (drop the field or rename it).')
    relative.append(rest)
  return relative


def _split_off(tree: Any, relative: str) -> Tuple[Any, Any]:
  """``(tree without the leaf at relative path, the leaf)``; '' is the root."""
  if not relative:
    return None, tree
  head, _, rest = relative.partition('/')
  kept = dict(tree)
  remaining, leaf = _split_off(tree[head], rest)
  if remaining is None:
    del kept[head]
  else:
    kept[head] = remaining
  return (kept or None), leaf


def _put(tree: Any, relative: str, value: Any) -> Any:
  """A copy of ``tree`` (dicts) with ``value`` at ``relative``."""
  if not relative:
    return value
  head, _, rest = relative.partition('/')
  out = dict(tree or {})
  out[head] = _put(out.get(head), rest, value)
  return out


# ------------------------------------------------------------------ planning


class _Layout:
  """How an episode becomes samples: the arguments, the image fields."""

  def __init__(self, specs: Specs, kind: sample_kinds.RobotSamples,
               episode_fields: Tuple[str, ...], frames: 'FrameDecoding'):
    self.specs = specs
    self.kind = kind
    self.relative = _image_paths(specs, kind.observation_key)
    self.observation_key = kind.observation_key
    self.action_key = kind.action_key
    self.goal_key = kind.goal_key
    self.index_key = kind.index_key
    self.episode_fields = episode_fields
    self.history = kind.history
    self.goal = kind.goal
    self.method = decode_lib.check_method(frames.resize_method)
    image_size = frames.image_size
    self.sizes = {}
    for path in specs:
      size = image_size.get(path) if isinstance(image_size, dict) else image_size
      self.sizes[path] = decode_lib.check_size(size, 'image_size')
    if isinstance(image_size, dict):
      unknown = sorted(set(image_size) - set(specs))
      if unknown:
        raise ValueError(f'image_size names {unknown}, which are not '
                         f'image fields ({sorted(specs)}).')

  def plan(self, episode: Dict[str, Any], seed: tf.Tensor
           ) -> Tuple[Dict[str, tf.Tensor], tf.Tensor, Dict[str, Any]]:
    """``(frames, index, values)`` of an episode's samples.

    ``frames``: the encoded frame columns ``{path: [T]}``; ``index``: the
    frame steps of every sample, ``[N, history (+1 goal)]``; ``values``:
    ``robot_samples``'s output without the frames.
    """
    steps = dict(episode[rlds_types.STEPS])
    length = indexing.episode_length(steps)
    obs_key, action_key = self.observation_key, self.action_key
    observation = steps.pop(obs_key)
    actions = steps.pop(action_key)
    columns = {}
    for path, relative in zip(self.specs, self.relative):
      observation, columns[path] = _split_off(observation, relative)
    index = samples_lib.robot_sample_indices(length, self.kind, seed=seed)
    values = indexing.gather_steps(steps, index.anchors)
    if observation is not None:
      values[obs_key] = indexing.gather_steps(observation, index.history)
      if self.kind.history_pad == 'zero':
        values[obs_key] = _zeroed(values[obs_key], index.history_mask)
      if self.goal is not None:
        values[self.goal_key] = indexing.gather_steps(observation, index.goals)
    values[obs_key + '_pad_mask'] = index.history_mask
    policy = last_step_lib.as_last_step(self.kind.last_step)
    has_action = last_step_lib.num_valid_actions(length, policy) > 0
    values[action_key] = indexing.gather_steps(
        actions, index.actions, index.action_mask | has_action)
    if self.kind.action_pad == 'zero':
      values[action_key] = _zeroed(values[action_key], index.action_mask)
    values[action_key + '_pad_mask'] = index.action_mask
    frame_steps = index.history
    if self.goal is not None:
      values[samples_lib.GOAL_INDEX] = index.goals
      frame_steps = tf.concat([frame_steps, index.goals[:, tf.newaxis]], 1)
    if not columns:   # No image field: the pools still need the steps.
      columns[_NO_FRAMES] = tf.zeros([length], tf.uint8)
    if self.index_key is not None:
      values[self.index_key] = index.anchors
    values.update(inputs.episode_values(episode, self.episode_fields,
                                        tf.shape(index.anchors)[0]))
    return columns, frame_steps, values

  @property
  def reach(self) -> int:
    """Steps a history reaches back: frames two segments may share."""
    return (self.history - 1) * self.kind.history_stride

  def decode(self, encoded: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
    """``{path: [n] encoded}`` frames of the image fields, decoded."""
    return {path: decode_lib.decode_frames(encoded[path], spec,
                                           self.sizes[path],
                                           method=self.method, field=path)
            for path, spec in self.specs.items()}

  def decode_specs(self) -> Tuple[Specs, Dict[str, Any]]:
    """Specs and sizes of the frames in a batch of samples, by batch path."""
    specs, sizes = {}, {}
    keys = [self.observation_key] + ([self.goal_key] if self.goal else [])
    for path, relative in zip(self.specs, self.relative):
      for key in keys:
        batch_path = f'{key}/{relative}' if relative else key
        specs[batch_path] = self.specs[path]
        sizes[batch_path] = self.sizes[path]
    return specs, sizes

  def assemble(self, frames: Dict[str, tf.Tensor], index: tf.Tensor,
               values: Dict[str, Any]) -> Dict[str, Any]:
    """Samples: the frames at ``index`` put into ``values``' observation."""
    out = dict(values)
    history = self.history
    history_index = index if self.goal is None else index[:, :history]
    for path, relative in zip(self.specs, self.relative):
      out[self.observation_key] = _put(out.get(self.observation_key), relative,
                                       tf.gather(frames[path], history_index))
      if self.goal is not None:
        out[self.goal_key] = _put(out.get(self.goal_key), relative,
                                  tf.gather(frames[path], index[:, history]))
    return self.zero_history_frames(out)

  def zero_history_frames(self, batch: Dict[str, Any]) -> Dict[str, Any]:
    """``history_pad='zero'``: decoded history frames before the episode
    zeroed (encoded ones are left for after their decoding)."""
    if self.kind.history_pad != 'zero':
      return batch
    out = dict(batch)
    mask = out[self.observation_key + '_pad_mask']
    for relative in self.relative:
      frames = _split_off(out[self.observation_key], relative)[1]
      if frames.dtype != tf.string:
        out[self.observation_key] = _put(out[self.observation_key], relative,
                                         _zeroed(frames, mask))
    return out


def _zeroed(values: Any, mask: tf.Tensor) -> Any:
  """``values`` (leaves ``[N, K, ...]``) with zeros where ``mask`` ``[N, K]`` is False."""
  return tf.nest.map_structure(
      lambda v: tf.where(indexing.broadcast_mask(mask, v), v, tf.zeros_like(v)),
      values)


_NUM_FRAMES, _NUM_SAMPLES = 'num_frames', 'num_samples'
_CARRY, _IMPORT_STEPS = 'carry', 'import_steps'


def cut_segments(frame_steps: tf.Tensor, segment_steps: tf.Tensor,
                 num_steps: tf.Tensor) -> Dict[str, tf.Tensor]:
  """Consecutive samples cut into segments, each with its distinct frames.

  ``frame_steps`` ``[N, F]`` are the steps of the frames each sample uses;
  segment ``k`` holds samples ``[k * segment_steps, (k + 1) *
  segment_steps)``. All segments are cut at once (one ``tf.unique`` over
  ``(segment, step)`` keys: a segment's distinct frames are consecutive ids,
  in order of first use), padded to the longest segment.

  Returns:
    ``steps``: ``[num_segments, max_frames]`` step of each distinct frame
    (padded by repeating the segment's last one), ``num_frames``
    ``[num_segments]``, ``positions`` ``[num_segments, segment_steps, F]``
    (each sample's frames as positions in its segment's frames; rows past
    ``num_samples`` are padding) and ``num_samples`` ``[num_segments]``.

  Example:
    >>> cut = cut_segments(tf.constant([[0, 0], [0, 1], [1, 2]]), 2, 3)
    >>> cut['steps'].numpy().tolist(), cut['num_frames'].numpy().tolist()
    ([[0, 1], [1, 2]], [2, 2])
    >>> cut['positions'].numpy().tolist(), cut['num_samples'].numpy().tolist()
    ([[[0, 0], [0, 1]], [[0, 1], [0, 1]]], [2, 1])
  """
  count = tf.shape(frame_steps)[0]
  per_sample = tf.shape(frame_steps)[1]
  size = tf.maximum(tf.cast(segment_steps, tf.int32), 1)
  num = (count + size - 1) // size
  segment = tf.range(count) // size
  span = tf.cast(tf.maximum(num_steps, 1), tf.int64)   # key: segment, step
  keys = (tf.cast(segment, tf.int64)[:, tf.newaxis] * span +
          tf.cast(frame_steps, tf.int64))
  unique, ids = tf.unique(tf.reshape(keys, [-1]))
  num_frames = tf.math.bincount(tf.cast(unique // span, tf.int32),
                                minlength=num, maxlength=num, dtype=tf.int32)
  first = tf.cumsum(num_frames, exclusive=True)
  positions = tf.reshape(ids, [count, per_sample]) - tf.gather(
      first, segment)[:, tf.newaxis]
  width = tf.reduce_max(tf.concat([num_frames, [0]], 0))
  slot = tf.minimum(tf.range(width)[tf.newaxis, :],
                    tf.maximum(num_frames, 1)[:, tf.newaxis] - 1)
  last = tf.size(unique) - 1
  steps = tf.gather(tf.cast(unique % span, tf.int32),
                    tf.minimum(first[:, tf.newaxis] + slot, last))
  return {'steps': steps, _NUM_FRAMES: num_frames,
          'positions': _padded_rows(positions, num, size),
          _NUM_SAMPLES: tf.minimum(count - tf.range(num) * size, size)}


def _padded_rows(rows: tf.Tensor, num: tf.Tensor, size: tf.Tensor
                 ) -> tf.Tensor:
  """``rows`` ``[N, ...]`` as ``[num, size, ...]`` (last rows repeated)."""
  take = tf.minimum(tf.range(num * size), tf.maximum(tf.shape(rows)[0], 1) - 1)
  shape = tf.concat([[num, size], tf.shape(rows)[1:]], 0)
  return tf.reshape(tf.gather(rows, take), shape)


def _segments(layout: _Layout, segment_steps: Optional[int], shuffle: bool,
              carry: bool) -> Any:
  """episode, seed, number -> ``(frame columns, segment rows)``, cut at once.

  The columns are the episode's encoded frames ``{path: [T]}`` (kept whole:
  string tensors are copied by every gather and slice, so a segment's frames
  are gathered only when it is decoded); the rows, one per segment, padded
  (``cut_segments``), hold each segment's frame steps, positions and values.
  With ``shuffle`` the segments come in a random order; with ``carry`` in a
  random rotation, each importing the frames it shares with the one before
  (``robot_carry.plan_carry``; ``number`` keys the episode's segments).
  ``_decode_segment`` trims a row back and decodes its frames.
  """

  @_graph_fn
  def segments(episode: Dict[str, Any], seed: tf.Tensor, number: tf.Tensor
               ) -> Tuple[Dict[str, tf.Tensor], Dict[str, Any]]:
    plan_seed, order_seed = tf.unstack(
        tf.random.experimental.stateless_split(seed, 2))
    columns, frame_steps, values = layout.plan(episode, plan_seed)
    count = tf.shape(frame_steps)[0]
    size = count if segment_steps is None else tf.constant(segment_steps)
    size = tf.maximum(size, 1)
    num_steps = tf.shape(next(iter(columns.values())))[0]
    cut = cut_segments(frame_steps, size, num_steps)
    num = tf.shape(cut[_NUM_FRAMES])[0]
    rows = {_STEPS: cut['steps'], _NUM_FRAMES: cut[_NUM_FRAMES],
            _INDEX: cut['positions'], _NUM_SAMPLES: cut[_NUM_SAMPLES],
            _VALUES: tf.nest.map_structure(
                lambda v: _padded_rows(v, num, size), values)}
    if carry:
      order = robot_carry.rotation_order(num, order_seed)
      plan = robot_carry.plan_carry(cut['steps'], cut[_NUM_FRAMES],
                                    cut['positions'], order, layout.reach)
      key, pred = robot_carry.segment_keys(number, num,
                                           plan[robot_carry.NUM_IMPORTS])
      rows.update({_STEPS: plan['own_steps'], _NUM_FRAMES: plan['num_own'],
                   _INDEX: plan['positions']})
      rows[_CARRY] = {
          robot_carry.KEY: key, robot_carry.PRED: pred,
          _IMPORT_STEPS: plan['import_steps'],
          **{name: plan[name] for name in (
              robot_carry.NUM_IMPORTS, robot_carry.EXPORTS,
              robot_carry.NUM_EXPORTS)}}
    elif shuffle:
      order = pools.random_order(num, order_seed)
    else:
      order = tf.range(num)
    return columns, tf.nest.map_structure(lambda x: tf.gather(x, order), rows)

  return segments


@_graph_fn
def _segment_rows(columns: Dict[str, tf.Tensor], rows: Dict[str, Any]
                  ) -> tf.data.Dataset:
  """An episode's segments, one element each: ``(columns, row)``."""
  return tf.data.Dataset.zip(tf.data.Dataset.from_tensors(columns).repeat(),
                             tf.data.Dataset.from_tensor_slices(rows))


def _trimmed(columns: Dict[str, tf.Tensor], row: Dict[str, Any]
             ) -> Dict[str, Any]:
  """A segment: its frames (still encoded), sample positions and values."""
  frames, samples = row[_NUM_FRAMES], row[_NUM_SAMPLES]
  steps = row[_STEPS][:frames]
  segment = {
      _STEPS: {p: tf.gather(c, steps) for p, c in columns.items()},
      # Rows of their own: slices of the row would reach the pools' rebatch
      # as views of it (see pools.own_rows).
      _INDEX: pools.own_rows(row[_INDEX][:samples]),
      _VALUES: tf.nest.map_structure(lambda v: pools.own_rows(v[:samples]),
                                     row[_VALUES]),
  }
  if _CARRY in row:   # One row each (pools concatenate them per pool).
    carry = dict(row[_CARRY])
    imports = carry.pop(_IMPORT_STEPS)
    carry[robot_carry.IMPORTS] = {p: tf.gather(c, imports)
                                  for p, c in columns.items()}
    segment[_CARRY] = tf.nest.map_structure(
        lambda x: pools.own_rows(x[tf.newaxis]), carry)
  return segment


def _decode_segment(layout: _Layout):
  """``(columns, row)`` -> the segment with its frames decoded (each once)."""

  @_graph_fn
  def decode(columns: Dict[str, tf.Tensor], row: Dict[str, Any]
             ) -> Dict[str, Any]:
    segment = _trimmed(columns, row)
    frames = layout.decode(segment[_STEPS])
    if _NO_FRAMES in segment[_STEPS]:
      frames[_NO_FRAMES] = segment[_STEPS][_NO_FRAMES]
    return {**segment, _STEPS: frames}

  return decode


def _decode_batch(layout: _Layout):
  """A batch of samples with encoded frames -> decoded (each distinct once)."""
  specs, sizes = layout.decode_specs()

  @_graph_fn
  def decode(batch: Dict[str, Any]) -> Dict[str, Any]:
    return layout.zero_history_frames(decode_lib.decode_images(
        batch, specs, sizes, method=layout.method, dedupe=True))

  return decode


# ---------------------------------------------------------- the public API


def _value_bytes(step_spec: Any, specs: Specs, history: int,
                 action_chunk: int) -> int:
  """Bytes of a sample's fields other than frames (about; for the estimate).

  A step's other fields, counted ``history + action_chunk`` times (the
  history of the observation, the chunk of actions, the rest once).
  """
  total = 0
  for path, leaf in nest_paths.flatten_with_paths(step_spec):
    if path not in specs:
      total += pools.sample_bytes({path: leaf})
  return max(total, 1) * (history + action_chunk)


def _feature_value_bytes(step_feature: Any, specs: Specs, history: int,
                         action_chunk: int) -> int:
  """`_value_bytes` of a TFDS step feature (decoded specs, rank + 1)."""
  spec = decoding.dense_steps_spec(step_feature.get_tensor_spec())
  return _value_bytes(spec, specs, history, action_chunk)


@dataclasses.dataclass(frozen=True)
class FrameDecoding:
  """How ``robot_samples_dataset`` decodes, pools and buffers camera frames.

  Attributes:
    image_size: the output ``(height, width)`` of every camera, or a dict
      ``{'observation/image_wrist': (h, w), ...}`` (None: stored size).
      JPEG frames are decoded at 1/2, 1/4 or 1/8 scale when that gives the
      size (DCT scaling), else at the nearest larger such scale and resized.
    resize_method: the ``tf.image.resize`` method
      (``rlds_lite.images.RESIZE_METHODS``).
    segment_steps: ``'per_episode'``: samples of an episode decoded together
      (None: whole episodes, or ``'auto'``'s choice).
    pool_episodes: episodes (segments) mixed per pool (default
      ``min(batch_size, 64, episodes)``).
    prefetch: batches prefetched.
    num_parallel_calls: parallelism of decoding and gathering.
    image_specs: for a ``tf.data.Dataset`` source, ``{path: ImageSpec}`` of
      its encoded image fields (a TFDS dataset declares its own).

  Example:
    >>> FrameDecoding(image_size=(128, 128)).resize_method
    'bilinear'
  """
  image_size: Any = None
  resize_method: str = 'bilinear'
  segment_steps: Optional[int] = None
  pool_episodes: Optional[int] = None
  prefetch: int = 1
  num_parallel_calls: Optional[int] = tf.data.AUTOTUNE
  image_specs: Optional[Specs] = None


_KIND_FIELDS = tuple(f.name for f in dataclasses.fields(sample_kinds.RobotSamples))
_FRAME_FIELDS = tuple(f.name for f in dataclasses.fields(FrameDecoding))
_SOURCE_FIELDS = ('split', 'data_dir', 'num_steps')


class _Call(NamedTuple):
  """One call's arguments, the legacy keywords sorted into their objects."""
  source: Any
  kind: sample_kinds.RobotSamples
  frames: FrameDecoding
  num_steps: Optional[int]


def _sorted_call(op: str, source: Any, kind: Any, frames: Any,
                 legacy: Dict[str, Any]) -> _Call:
  """The source opened once, and the kind and frames, old keywords too.

  The keywords of before sample kinds (``history=2, image_size=...,
  split=...``) still work, warning once (``DeprecationWarning``). ``op``
  names the call where Python would (``op() got ...``) and in the warning.
  """
  if isinstance(kind, str):  # The old second positional argument.
    legacy = {**legacy, 'split': kind}
    kind = None
  unknown = sorted(set(legacy) - set(_KIND_FIELDS + _FRAME_FIELDS +
                                     _SOURCE_FIELDS))
  if unknown:
    raise TypeError(f'{op}() got an unexpected keyword argument '
                    f'{unknown[0]!r}')
  kind_args = {k: v for k, v in legacy.items() if k in _KIND_FIELDS}
  frame_args = {k: v for k, v in legacy.items() if k in _FRAME_FIELDS}
  if kind_args and kind is not None:
    raise TypeError(f'pass the sample arguments in the kind '
                    f'(RobotSamples(...)), not beside it: {sorted(kind_args)}.')
  if frame_args and frames is not None:
    raise TypeError(f'pass {sorted(frame_args)} in frames='
                    'FrameDecoding(...), not beside it.')
  if kind_args or frame_args:
    option_objects.warn_once(
        (op, 'kind_and_frames'), f'{op}: the sample and frame keywords are '
        'now RobotSamples(...) and frames=FrameDecoding(...); the old keywords '
        'will go in a later release.')
  if kind is None or frames is None:
    legacy_kind, legacy_frames = kind_and_frames({**kind_args, **frame_args})
    kind = legacy_kind if kind is None else kind
    frames = legacy_frames if frames is None else frames
  if not isinstance(kind, sample_kinds.RobotSamples):
    raise TypeError(f'kind must be a RobotSamples(...), got '
                    f'{type(kind).__name__}.')
  opened = _opened(source, legacy.get('split'), legacy.get('data_dir'))
  return _Call(opened, kind, frames, legacy.get('num_steps'))


def kind_and_frames(keywords: Dict[str, Any]
                    ) -> Tuple[sample_kinds.RobotSamples, FrameDecoding]:
  """The `RobotSamples` and `FrameDecoding` of flat keywords (``history=2, image_size=...``).

  Called inside a public function, its errors are named by that function.

  Example:
    >>> kind, frames = kind_and_frames(dict(history=2, image_size=(64, 64)))
    >>> kind.history, frames.image_size
    (2, (64, 64))
  """
  frame_args = {k: v for k, v in keywords.items() if k in _FRAME_FIELDS}
  kind_args = {k: v for k, v in keywords.items() if k not in frame_args}
  return sample_kinds.RobotSamples(**kind_args), FrameDecoding(**frame_args)


@op_context.named('plan_robot_samples')
def plan_robot_samples(source: Any, kind: Any = None,
                       batch_size: Optional[int] = None, *,
                       decode: str = 'auto',
                       memory_budget: Union[int, str, None] = None,
                       frames: Optional[FrameDecoding] = None,
                       **legacy: Any) -> robot_memory.DecodePlan:
  """The ``DecodePlan`` ``robot_samples_dataset`` would use (and its memory).

  For a TFDS source the estimate uses the split's bytes and step count
  (``Source.num_steps``: one pass, cached). For a dataset of episodes the
  sizes are unknown: the plan is the defaults (or what is given).

  Example:
    >>> import tempfile
    >>> from rlds_lite import synthetic
    >>> path = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=4,
    ...                                 length=20)
    >>> kind = sample_kinds.RobotSamples(history=2)
    >>> plan_robot_samples(path, kind, 8)  # doctest: +ELLIPSIS
    DecodePlan(decode='per_episode', whole episodes, 4 episodes pooled, 1 open; RobotMemory(total=...
    >>> plan_robot_samples(path, kind, 8, memory_budget='50MB')[:2]
    ('per_episode', 4)
  """
  call = _sorted_call('plan_robot_samples', source, kind, frames, legacy)
  batch_size = _batch_size(batch_size, 'plan_robot_samples')
  return _plan(call, batch_size, decode, memory_budget, None)


def _batch_size(batch_size: Any, op: str) -> int:
  """``batch_size`` checked; ``op`` names the call as Python would."""
  if batch_size is None:
    raise TypeError(f'{op}() missing 1 required argument: \'batch_size\'')
  return inputs.check_positive_int(batch_size, 'batch_size')


def _plan(call: _Call, batch_size: int, decode: str,
          memory_budget: Union[int, str, None], value_bytes: Optional[int]
          ) -> robot_memory.DecodePlan:
  """The plan for an opened split (or a dataset of episodes)."""
  kind, frames, source = call.kind, call.frames, call.source
  if decode not in robot_memory.DECODES:
    raise ValueError(f'decode must be one of {robot_memory.DECODES}, '
                     f'got {decode!r}.')
  segment_steps, pool_episodes = frames.segment_steps, frames.pool_episodes
  if segment_steps is not None:
    segment_steps = inputs.check_positive_int(segment_steps, 'segment_steps')
    if decode == 'after_sampling':
      raise ValueError(f"segment_steps applies to decode='per_episode' "
                       "(or 'auto'), not 'after_sampling'.")
  if pool_episodes is not None:
    pool_episodes = inputs.check_positive_int(pool_episodes, 'pool_episodes')
  budget = robot_memory.parse_budget(memory_budget)
  if isinstance(source, tf.data.Dataset):
    if budget is not None:
      raise ValueError(
          f'memory_budget needs a TFDS dataset (a name or directory) to '
          'read its sizes; with a dataset of episodes pass decode= and '
          'segment_steps= / pool_episodes= instead.')
    mode = 'per_episode' if decode == 'auto' else decode
    pool = pool_episodes or robot_memory.MAX_POOL_EPISODES
    pool = min(pool, batch_size) if pool_episodes is None else pool
    whole = mode == 'per_episode' and segment_steps is None
    return robot_memory.DecodePlan(
        mode, segment_steps if mode == 'per_episode' else None, pool,
        1 if whole else pool, None)
  specs = source.image_specs
  num_steps = source.num_steps if call.num_steps is None else call.num_steps
  if value_bytes is None:
    value_bytes = _feature_value_bytes(source.steps_feature.feature, specs,
                                       kind.history, kind.action_chunk)
  sizes = robot_memory.dataset_sizes(source.builder, source.split, num_steps,
                                     specs, frames.image_size, kind.history,
                                     kind.goal, value_bytes)
  return robot_memory.pick(
      budget, sizes, kind, batch_size=batch_size, prefetch=frames.prefetch,
      decode=decode, segment_steps=segment_steps, pool_episodes=pool_episodes)


@op_context.named('robot_samples_dataset')
def robot_samples_dataset(
    source: Any,
    kind: Any = None,
    batch_size: Optional[int] = None,
    *,
    decode: str = 'auto',
    memory_budget: Union[int, str, None] = None,
    frames: Optional[FrameDecoding] = None,
    episode_fields: Union[str, Sequence[str]] = (),
    shuffle: bool = True,
    seed: Optional[int] = None,
    drop_last_batch: bool = False,
    **legacy: Any) -> tf.data.Dataset:
  """Shuffled batches of observation histories and action chunks, frames decoded.

  The samples of ``rlds_lite.dense.robot_samples`` for ``kind``, each once per
  pass; frames are decoded per segment of an episode or per batch, as
  ``decode`` says (``'auto'``: planned for ``memory_budget``, logged;
  ``plan_robot_samples`` returns the plan; docs/pooling.md).

  Args:
    source: a `rlds_lite.Source`, a TFDS name or directory, or a
      ``tf.data.Dataset`` of dense episodes (raw ``[T, h, w, c]`` uint8
      frames, or encoded ones described by ``frames.image_specs``).
    kind: a `rlds_lite.RobotSamples`.
    batch_size: samples per batch.
    decode: ``'auto'``, ``'per_episode'`` or ``'after_sampling'``.
    memory_budget: bytes (or ``'512MB'``) for ``'auto'``; a TFDS source only.
    frames: a `FrameDecoding` (size, resizing, segments, pools, prefetch).
    episode_fields: episode metadata copied into every sample.
    shuffle: shuffle (else episode order).
    seed: the seed of all shuffling and sampling (None: random).
    drop_last_batch: drop a last batch smaller than ``batch_size``.
    **legacy: the keywords of before `RobotSamples` (``history=``,
      ``image_size=``, ``split=``, ...), warning once.

  Example:
    >>> import tempfile
    >>> from rlds_lite import synthetic
    >>> path = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=2,
    ...                                 length=6)
    >>> kind = sample_kinds.RobotSamples(history=2, action_chunk=3)
    >>> ds = robot_samples_dataset(path, kind, 4, seed=0,
    ...                            frames=FrameDecoding(image_size=(64, 64)))
    >>> batch = next(iter(ds))
    >>> batch['observation']['image_primary'].shape.as_list()
    [4, 2, 64, 64, 3]
    >>> batch['action'].shape.as_list(), batch['action_pad_mask'].shape[1]
    ([4, 3, 7], 3)
  """
  op = 'robot_samples_dataset'
  call = _sorted_call(op, source, kind, frames, legacy)
  kind, frames = call.kind, call.frames
  batch_size = _batch_size(batch_size, op)
  prefetch = inputs.check_non_negative_int(frames.prefetch, 'prefetch')
  seed = inputs.check_seed(seed)
  episodes, specs = _source(call.source, shuffle, seed, frames.image_specs,
                            kind.observation_key)
  episode_fields = _episode_fields(episodes, kind, episode_fields)
  layout = _Layout(specs, kind, episode_fields, frames)
  plan = _plan(call, batch_size, decode, memory_budget,
               _value_bytes(episodes.element_spec[rlds_types.STEPS], specs,
                            kind.history, kind.action_chunk))
  if drop_last_batch and not isinstance(call.source, tf.data.Dataset):
    _check_a_full_batch(call.source, call.num_steps, batch_size)
  _LOG.info('%s: %r', op, plan)
  seeds = pools.pool_seeds(seed)
  make = _per_episode if plan.decode == 'per_episode' else _after_sampling
  batches = make(episodes, seeds, layout, plan, batch_size, shuffle, seed,
                 drop_last_batch, frames.num_parallel_calls)
  return batches.prefetch(prefetch) if prefetch else batches


def _episode_fields(episodes: tf.data.Dataset,
                    kind: sample_kinds.RobotSamples,
                    episode_fields: Union[str, Sequence[str]]
                    ) -> Tuple[str, ...]:
  """The checked episode fields; none may take a name the samples have."""
  step_fields = list(episodes.element_spec[rlds_types.STEPS])
  indexing.require_fields(episodes.element_spec[rlds_types.STEPS],
                          [kind.observation_key, kind.action_key])
  reserved = step_fields + [kind.observation_key + '_pad_mask',
                            kind.action_key + '_pad_mask', kind.goal_key,
                            samples_lib.GOAL_INDEX]
  if kind.index_key is not None:
    if kind.index_key in reserved:
      raise ValueError(f'index_key {kind.index_key!r} is the name of a '
                       'field of the samples; choose another.')
    reserved.append(kind.index_key)
  return inputs.check_episode_fields(episodes, episode_fields, reserved)


def _check_a_full_batch(source: source_lib.Source, num_steps: Optional[int],
                        batch_size: int) -> None:
  """Raises if ``drop_last_batch`` would leave no batch: fewer steps than one.

  A sample is anchored at a step, so a split of ``N`` steps has at most
  ``N`` samples (a pass would end without a batch, and a ``repeat()`` of it
  would never give one).
  """
  if num_steps is None:
    num_steps = source.num_steps
  if num_steps < batch_size:
    raise ValueError(
        f'drop_last_batch=True gives no batch: split {source.split!r} has '
        f'{num_steps} steps, so fewer samples than batch_size {batch_size}. '
        'Use a smaller batch_size or drop_last_batch=False.')


def _sampler(layout: _Layout, frames_per_sample: int,
             gather_size: Optional[int] = None,
             link: Optional[pools.PoolLink] = None) -> pools.Sampler:
  """Pools' view of a segment (or an episode's plan): steps, index, values."""

  def plan(element: Dict[str, Any]) -> pools.Plan:
    return element[_STEPS], element[_INDEX], element[_VALUES]

  def samples(element: Dict[str, Any]) -> Dict[str, Any]:
    return layout.assemble(*plan(element))

  def assemble(frames: Dict[str, tf.Tensor], index: tf.Tensor,
               values: Dict[str, Any]) -> Dict[str, Any]:
    # The pools' parts are views of a pool; values passed on unchanged get
    # rows of their own before the last rebatch (see pools.own_rows).
    return layout.assemble(frames, index,
                           tf.nest.map_structure(pools.own_rows, values))

  return pools.Sampler(samples, plan, assemble,
                       steps_per_sample=frames_per_sample,
                       gather_size=gather_size, link=link)


def _per_episode(episodes, seeds, layout, plan, batch_size, shuffle, seed,
                 drop_last_batch, num_parallel_calls):
  """Segments decoded once each, pooled decoded (see the module docstring)."""
  interleaved = plan.open_episodes > 1 and shuffle
  # Frames shared by segments are carried when that saves decodes: encoded
  # frames, a history that reaches back, segments out in turn (rotation).
  encoded = any(spec.encoding for spec in layout.specs.values())
  carry = (interleaved and plan.segment_steps is not None and
           layout.reach > 0 and encoded)
  cut = tf.data.Dataset.zip(episodes, seeds, tf.data.Dataset.counter()).map(
      _segments(layout, plan.segment_steps, shuffle, carry),
      num_parallel_calls=num_parallel_calls, deterministic=True)
  if interleaved:
    segments = cut.interleave(_segment_rows, cycle_length=plan.open_episodes,
                              block_length=1)
  else:
    segments = cut.flat_map(_segment_rows)
  decoded = segments.map(_decode_segment(layout),
                         num_parallel_calls=num_parallel_calls,
                         deterministic=True)
  link = None
  if carry:
    link = robot_carry.pool_link(lambda element: element[_CARRY],
                                 layout.decode, decoded.element_spec[_STEPS])
  frames = layout.history + (1 if layout.goal is not None else 0)
  return pools.pooled_batches(
      decoded, _sampler(layout, frames, link=link), batch_size,
      shuffle=shuffle, seed=seed, drop_last_batch=drop_last_batch,
      pooling=_pooling(plan, num_parallel_calls))


def _pooling(plan: robot_memory.DecodePlan,
             num_parallel_calls: Optional[int]) -> pools.Pooling:
  """The pools of a plan: its episodes, dealt out episode by episode."""
  return pools.Pooling(pool='samples', pool_episodes=plan.pool_episodes,
                       spread_episodes=True,
                       num_parallel_calls=num_parallel_calls,
                       deterministic=True, prefetch=0)


def _after_sampling(episodes, seeds, layout, plan, batch_size, shuffle, seed,
                    drop_last_batch, num_parallel_calls):
  """Encoded episodes pooled; each batch decoded after sampling."""

  @_graph_fn
  def planned(episode: Dict[str, Any], episode_seed: tf.Tensor
              ) -> Dict[str, Any]:
    columns, frame_steps, values = layout.plan(
        episode, tf.reshape(episode_seed, [2]))
    return {_STEPS: columns, _INDEX: frame_steps, _VALUES: values}

  plans = tf.data.Dataset.zip(episodes, seeds).map(
      planned, num_parallel_calls=num_parallel_calls, deterministic=True)
  frames = layout.history + (1 if layout.goal is not None else 0)
  # A batch at a time: the frames are strings, which the gather size of
  # pooled_batches counts as 32 bytes (it would gather a whole pool's
  # encoded frames at once: measured ~300 MB for 48 camera episodes).
  encoded = pools.pooled_batches(
      plans, _sampler(layout, frames, gather_size=batch_size), batch_size,
      shuffle=shuffle, seed=seed, drop_last_batch=drop_last_batch,
      pooling=_pooling(plan, num_parallel_calls))
  return encoded.map(_decode_batch(layout),
                     num_parallel_calls=num_parallel_calls, deterministic=True)
