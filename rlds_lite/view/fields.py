"""Which step fields the viewer shows how: cameras, language, plots (docs/view.md).

Example:
  >>> import tensorflow as tf
  >>> spec = {'observation': {'image': tf.TensorSpec([8, 8, 3], tf.uint8),
  ...                         'pos': tf.TensorSpec([3], tf.float32)},
  ...         'action': tf.TensorSpec([2], tf.float32),
  ...         'is_last': tf.TensorSpec([], tf.bool),
  ...         'language_instruction': tf.TensorSpec([], tf.string)}
  >>> camera_fields(spec), language_fields(spec)
  (['observation/image'], ['language_instruction'])
  >>> plotted_fields(spec)
  ({'action': ['action'], 'state': ['observation/pos']}, {})
"""

from typing import Any, Dict, List, Tuple

import tensorflow as tf

from rlds_lite import nest_paths
from rlds_lite import rlds_types
from rlds_lite import video
from rlds_lite.catalog import build as catalog_build

MAX_PLOTTED_ELEMENTS = 32
"""Numeric fields with more elements per step are not plotted."""

PANELS = ('action', 'state', 'reward', 'discount', 'other')
FLAGS = (rlds_types.IS_FIRST, rlds_types.IS_LAST, rlds_types.IS_TERMINAL)
INVALID_ON_LAST = (rlds_types.ACTION, rlds_types.REWARD, rlds_types.DISCOUNT)


def camera_fields(step_spec: Any) -> List[str]:
  """Paths of the uint8 ``[H, W, C]`` (C in 1, 3, 4) step fields."""
  specs = dict(nest_paths.flatten_with_paths(step_spec))
  return [path for path in video.image_fields(step_spec)
          if specs[path].dtype == tf.uint8 and specs[path].shape.rank == 3]


def is_language_name(path: str) -> bool:
  """A name like ``language_instruction`` (the episode catalog's rule).

  Example:
    >>> is_language_name('steps/natural_language_instruction')
    True
  """
  return catalog_build.is_language_name(path)


def is_language(path: str, spec: tf.TensorSpec) -> bool:
  """A string field with a language name (`is_language_name`)."""
  return spec.dtype == tf.string and is_language_name(path)


def language_fields(step_spec: Any) -> List[str]:
  """Paths of the language step fields."""
  return [path for path, spec in nest_paths.flatten_with_paths(step_spec)
          if is_language(path, spec)]


def panel_of(path: str) -> str:
  """The plot panel of a numeric step field.

  Example:
    >>> panel_of('observation/joints'), panel_of('reward'), panel_of('x')
    ('state', 'reward', 'other')
  """
  top = path.split('/')[0]
  if top == rlds_types.OBSERVATION:
    return 'state'
  return top if top in PANELS else 'other'


def plotted_fields(step_spec: Any) -> Tuple[Dict[str, List[str]], Dict[str, str]]:
  """``({panel: [paths]}, {path: why not plotted})`` of the step fields, in `PANELS` order."""
  panels: Dict[str, List[str]] = {}
  left_out = {}
  cameras = camera_fields(step_spec)
  for path, spec in nest_paths.flatten_with_paths(step_spec):
    if path in FLAGS or path in cameras or spec.dtype == tf.string:
      continue
    if not (spec.dtype.is_integer or spec.dtype.is_floating or
            spec.dtype == tf.bool):
      left_out[path] = f'not numeric ({spec.dtype.name})'
    elif not spec.shape.is_fully_defined():
      left_out[path] = f'shape varies ({spec.shape})'
    elif spec.shape.num_elements() > MAX_PLOTTED_ELEMENTS:
      left_out[path] = (f'{spec.shape.num_elements()} elements per step '
                        f'(more than {MAX_PLOTTED_ELEMENTS})')
    else:
      panels.setdefault(panel_of(path), []).append(path)
  return {p: panels[p] for p in PANELS if p in panels}, left_out
