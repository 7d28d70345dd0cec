"""One episode as the JSON the viewer's episode page draws.

Example:
  >>> import numpy as np, tensorflow as tf
  >>> steps = {'action': np.array([[0.5, 1.0], [0.0, 0.0]], np.float32),
  ...          'reward': np.array([1.0, 0.0], np.float32),
  ...          'is_first': np.array([True, False]),
  ...          'is_last': np.array([False, True]),
  ...          'is_terminal': np.array([False, True])}
  >>> spec = {k: tf.TensorSpec(v.shape[1:], tf.as_dtype(v.dtype))
  ...         for k, v in steps.items()}
  >>> payload = episode_payload({'steps': steps, 'episode_id': 7}, spec)
  >>> payload['length'], payload['flags']['is_terminal']
  (2, [1])
  >>> [(s['name'], s['values']) for s in payload['panels'][0]['series']]
  [('action[0]', [0.5, None]), ('action[1]', [1.0, None])]
  >>> payload['metadata']
  {'episode_id': 7}
"""

from typing import Any, Dict, List, Tuple

import numpy as np

from rlds_lite import nest_paths
from rlds_lite import rlds_types
from rlds_lite.view import fields
from rlds_lite.view import jsonable


def _element_names(path: str, shape: tuple) -> List[str]:
  if not shape:
    return [path]
  return [f'{path}[{",".join(str(i) for i in index)}]'
          for index in np.ndindex(*shape)]


def _series(path: str, values: np.ndarray,
            invalid: np.ndarray) -> List[Dict[str, Any]]:
  """One series per element of a ``[T, ...]`` field; invalid steps None."""
  length = len(values)
  flat = values.reshape(length, int(np.prod(values.shape[1:], dtype=int)))
  series = []
  for name, column in zip(_element_names(path, values.shape[1:]), flat.T):
    listed = jsonable.json_values(column)
    for t in np.flatnonzero(invalid):
      listed[t] = None
    series.append({'name': name, 'path': path, 'values': listed})
  return series


def _metadata(episode: Dict[str, Any]) -> Dict[str, Any]:
  """Scalar metadata as JSON values; other metadata as dtype and shape."""
  out = {}
  metadata = {k: v for k, v in episode.items() if k != rlds_types.STEPS}
  for path, value in nest_paths.flatten_with_paths(metadata):
    array = np.asarray(value)
    out[path] = (jsonable.json_scalar(array.item()) if array.ndim == 0 else
                 f'{array.dtype.name}{list(array.shape)}')
  return out


def _instructions(steps: Dict[str, Any], step_spec: Any,
                  metadata: Dict[str, Any]) -> List[str]:
  """Distinct non-empty language values: step fields, then metadata."""
  texts = []
  for path in fields.language_fields(step_spec):
    texts += [jsonable.json_scalar(v) for v in np.asarray(
        nest_paths.get_path(steps, path)).reshape(-1)]
  texts += [v for k, v in metadata.items()
            if isinstance(v, str) and fields.is_language_name(k)]
  return list(dict.fromkeys(t for t in texts if t))


def _flags(flat: Dict[str, Any], length: int) -> Dict[str, List[int]]:
  """The steps where each ``is_*`` flag holds (``is_first``/``is_last`` by position if absent)."""
  index = np.arange(length)
  by_position = {rlds_types.IS_FIRST: index == 0,
                 rlds_types.IS_LAST: index == length - 1}
  flags = {}
  for flag in fields.FLAGS:
    values = flat.get(flag)
    if values is None:
      values = by_position.get(flag, np.zeros(length, bool))
    flags[flag] = np.flatnonzero(np.asarray(values, bool)).tolist()
  return flags


def _panels(flat: Dict[str, Any], step_spec: Any, is_last: np.ndarray,
            invalid_on_last: Tuple[str, ...]
            ) -> Tuple[List[Dict[str, Any]], Dict[str, str]]:
  """The plot panels (their series), and the fields left out and why."""
  panels, left_out = fields.plotted_fields(step_spec)
  never = np.zeros(len(is_last), bool)
  payload = []
  for name, paths in panels.items():
    series = []
    for path in paths:
      invalid = is_last if path.split('/')[0] in invalid_on_last else never
      series += _series(path, np.asarray(flat[path]), invalid)
    payload.append({'name': name, 'series': series})
  return payload, left_out


def episode_payload(episode: Dict[str, Any], step_spec: Any,
                    last_step: str = 'invalid') -> Dict[str, Any]:
  """The JSON of a dense NumPy episode for the episode page: panels, flags, cameras, metadata.

  Args:
    step_spec: the per-step spec of the step fields (says which are cameras, language, plots).
    last_step: ``'invalid'`` (RLDS: the last step's action, reward and discount are null) or
      ``'valid'``.
  """
  steps = episode[rlds_types.STEPS]
  flat = dict(nest_paths.flatten_with_paths(steps))
  length = len(next(iter(flat.values()))) if flat else 0
  flags = _flags(flat, length)
  is_last = np.zeros(length, bool)
  is_last[flags[rlds_types.IS_LAST]] = True
  invalid_on_last = fields.INVALID_ON_LAST if last_step == 'invalid' else ()
  panels, left_out = _panels(flat, step_spec, is_last, invalid_on_last)
  metadata = _metadata(episode)
  cameras = [{'key': key, 'height': int(np.shape(flat[key])[1]),
              'width': int(np.shape(flat[key])[2])}
             for key in fields.camera_fields(step_spec)] if length else []
  return {'length': int(length), 'flags': flags, 'panels': panels,
          'not_plotted': left_out,
          'invalid_on_last': list(invalid_on_last),
          'instructions': _instructions(steps, step_spec, metadata),
          'cameras': cameras, 'metadata': metadata}
