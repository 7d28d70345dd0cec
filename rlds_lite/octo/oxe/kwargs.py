"""make_dataset_from_rlds keyword arguments of a registered dataset or mixture, by name (Octo's make_oxe_dataset_kwargs)."""

import importlib
import logging
from typing import Any, Callable, Dict, List, Sequence, Tuple, Union

from rlds_lite.octo.oxe import configs
from rlds_lite.octo.oxe import registry

__all__ = ['make_oxe_dataset_kwargs', 'make_oxe_dataset_kwargs_and_weights',
           'action_normalization_mask']

_NORMALIZATION_TYPES = ('normal', 'bounds')

_E = configs.ActionEncoding
_MASKS = {
    _E.EEF_POS: [True] * 6 + [False],
    _E.JOINT_POS: [True] * 7 + [False],
    _E.JOINT_POS_BIMANUAL: [True] * 6 + [False] + [True] * 6 + [False],
    _E.NAV_2D: [True] * 2,
    _E.JOINT_POS_BIMANUAL_NAV: ([True] * 6 + [False]) * 2 + [True] * 2,
}
"""Which action dimensions are normalised: all but the grippers (Octo's)."""


def action_normalization_mask(encoding: configs.ActionEncoding) -> List[bool]:
  """The action normalisation mask of an action encoding.

  Example:
    >>> action_normalization_mask(configs.ActionEncoding.NAV_2D)
    [True, True]
  """
  return list(_MASKS[encoding])


def _spec(fn: Callable) -> Any:
  """A ModuleSpec dict of an importable function (hashable in cache keys), else the callable."""
  module, name = getattr(fn, '__module__', None), getattr(fn, '__name__', '')
  try:
    if module and getattr(importlib.import_module(module), name, None) is fn:
      return {'module': module, 'name': name, 'args': (), 'kwargs': {}}
  except ImportError:
    pass
  return fn


def _check_normalization(label: str, value: Any) -> None:
  """A ValueError unless value is 'normal' or 'bounds' (or a str Enum of them)."""
  if value not in _NORMALIZATION_TYPES:
    raise ValueError(f'{label}: action_proprio_normalization_type must be one '
                     f'of {list(_NORMALIZATION_TYPES)}, got {value!r}')


def _kept_views(name: str, views: Dict[str, Any],
                load_camera_views: Sequence[str]) -> Dict[str, Any]:
  """The views asked for (a view mapped to None is padding); a ValueError naming missing ones."""
  if isinstance(load_camera_views, str):
    raise TypeError(f'dataset {name!r}: load_camera_views must be a sequence '
                    f'of view names, got the str {load_camera_views!r}')
  missing = sorted(set(load_camera_views) - set(views))
  if missing:
    raise ValueError(f'Cannot load {name} with views {missing} since they are '
                     f'not available (views: {sorted(views)}).')
  return {k: v for k, v in views.items() if k in load_camera_views}


def make_oxe_dataset_kwargs(
    name: str, data_dir: str, load_camera_views: Sequence[str] = ('primary',),
    load_depth: bool = False, load_proprio: bool = False,
    load_language: bool = True,
    force_recompute_dataset_statistics: bool = False,
    action_proprio_normalization_type: str = 'normal') -> Dict[str, Any]:
  """The keyword arguments of make_dataset_from_rlds for a registered dataset.

  Args:
    name: a registered dataset (OXE_DATASET_CONFIGS).
    data_dir: the directory holding it.
    load_camera_views: views to load ('primary', 'secondary', 'wrist').
    load_depth: load the depth images of those views.
    load_proprio, load_language: read 'proprio', 'language_instruction'.
    force_recompute_dataset_statistics: ignore cached statistics.
    action_proprio_normalization_type: 'normal' or 'bounds', passed on.

  Returns:
    {'name', 'data_dir', 'image_obs_keys', ..., 'standardize_fn'}.

  Example:
    >>> kw = make_oxe_dataset_kwargs('bridge_dataset', '/data')
    >>> kw['image_obs_keys'], kw['action_normalization_mask'][-1]
    ({'primary': 'image_0'}, False)
    >>> kw['standardize_fn']['name'], kw['language_key']
    ('bridge_dataset', 'language_instruction')
  """
  config, fn = registry.dataset_entry(name)
  _check_normalization(f'dataset {name!r}', action_proprio_normalization_type)
  kwargs = {'name': name, 'data_dir': data_dir}
  kwargs['image_obs_keys'] = _kept_views(name, config.pop('image_obs_keys'),
                                         load_camera_views)
  depth = config.pop('depth_obs_keys')
  if load_depth:
    kwargs['depth_obs_keys'] = {k: v for k, v in depth.items()
                                if k in load_camera_views}
  kwargs['action_normalization_mask'] = action_normalization_mask(
      config.pop('action_encoding'))
  del config['proprio_encoding']
  if load_proprio:
    kwargs['proprio_obs_key'] = 'proprio'
  if load_language:
    kwargs['language_key'] = 'language_instruction'
  kwargs['action_proprio_normalization_type'] = (
      action_proprio_normalization_type)
  if force_recompute_dataset_statistics:
    kwargs['force_recompute_dataset_statistics'] = True
  kwargs.update(config)  # A user's optional keys (filter_functions, ...).
  kwargs['standardize_fn'] = _spec(fn)
  return kwargs


def _unique(pairs: List[Tuple[str, float]]) -> List[Tuple[str, float]]:
  """The first entry of each dataset; later ones skipped with a warning."""
  seen, kept = set(), []
  for pair in pairs:
    if pair[0] in seen:
      logging.warning('Skipping duplicate: %s.', pair)
      continue
    seen.add(pair[0])
    kept.append(pair)
  return kept


def make_oxe_dataset_kwargs_and_weights(
    data_mix: Union[str, Sequence[Tuple[str, float]]], data_dir: str,
    load_camera_views: Sequence[str] = ('primary',), load_depth: bool = False,
    load_proprio: bool = False, load_language: bool = True,
    force_recompute_dataset_statistics: bool = False,
    action_proprio_normalization_type: str = 'normal'
) -> Tuple[List[Dict[str, Any]], List[float]]:
  """The kwargs list and weights of a mixture, for make_interleaved_dataset.

  A duplicate dataset is skipped with a warning, and so is one without a
  requested view (as Octo); an unknown dataset or mixture is a ValueError.

  Args:
    data_mix: a named mixture (OXE_NAMED_MIXES) or [(dataset, weight)].
    data_dir, load_camera_views, ...: as make_oxe_dataset_kwargs.

  Returns:
    (a make_oxe_dataset_kwargs dict per dataset, their weights).

  Example:
    >>> kwargs, weights = make_oxe_dataset_kwargs_and_weights(
    ...     [('kuka', 0.5), ('toto', 1.0), ('kuka', 2.0)], '/data')
    >>> [kw['name'] for kw in kwargs], weights
    (['kuka', 'toto'], [0.5, 1.0])
  """
  if isinstance(data_mix, str):
    label, pairs = data_mix, registry.mixture_weights(data_mix)
  else:
    label, pairs = 'data_mix', data_mix
  pairs = _unique(registry.checked_weights(label, pairs))
  _check_normalization(f'mixture {label!r}', action_proprio_normalization_type)
  kwargs_list, weights = [], []
  for name, weight in pairs:
    try:
      kwargs_list.append(make_oxe_dataset_kwargs(
          name, data_dir, load_camera_views, load_depth, load_proprio,
          load_language, force_recompute_dataset_statistics,
          action_proprio_normalization_type))
    except ValueError as error:  # A missing view.
      logging.warning('Skipping %s due to error: %s', name, error)
      continue
    weights.append(weight)
  return kwargs_list, weights
