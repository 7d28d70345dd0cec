"""The registry of dataset configurations, standardize functions and named mixtures: look-ups that name what is known, and users' own entries checked."""

import copy
import numbers
from typing import Callable, Dict, List, Sequence, Tuple

from rlds_lite.octo.oxe import configs
from rlds_lite.octo.oxe import mixes
from rlds_lite.octo.oxe import standardize

__all__ = ['register_dataset', 'register_mixture', 'dataset_entry',
           'mixture_weights', 'checked_weights']

_REQUIRED = ('image_obs_keys', 'depth_obs_keys', 'proprio_encoding',
             'action_encoding')
_OPTIONAL = ('filter_functions', 'skip_norm', 'ignore_errors',
             'dataset_statistics')
"""Extra keys a configuration may carry: passed on to make_dataset_from_rlds."""


def _known(names) -> str:
  """Names, sorted, for a message."""
  return ', '.join(sorted(names))


def dataset_entry(name: str) -> Tuple[dict, Callable]:
  """A deep copy of a registered dataset's configuration, and its standardize_fn.

  Example:
    >>> config, fn = dataset_entry('bridge_dataset')
    >>> config['image_obs_keys']['primary'], fn.__name__
    ('image_0', 'bridge_dataset')
    >>> dataset_entry('brige')
    Traceback (most recent call last):
    ...
    ValueError: unknown dataset 'brige'; known: berkeley_autolab_ur5, ...
  """
  if name not in configs.OXE_DATASET_CONFIGS:
    raise ValueError(f"unknown dataset {name!r}; known: "
                     f'{_known(configs.OXE_DATASET_CONFIGS)}')
  return (copy.deepcopy(configs.OXE_DATASET_CONFIGS[name]),
          standardize.OXE_STANDARDIZATION_TRANSFORMS[name])


def mixture_weights(name: str) -> List[Tuple[str, float]]:
  """A named mixture's (dataset, weight) list.

  Example:
    >>> mixture_weights('bridge')
    [('bridge_dataset', 1.0)]
    >>> mixture_weights('soup')
    Traceback (most recent call last):
    ...
    ValueError: unknown mixture 'soup'; known: bridge, droid, oxe_magic_soup, rtx, rtx_franka
  """
  if name not in mixes.OXE_NAMED_MIXES:
    raise ValueError(f"unknown mixture {name!r}; known: "
                     f'{_known(mixes.OXE_NAMED_MIXES)}')
  return list(mixes.OXE_NAMED_MIXES[name])


def _views(name: str, config: dict, key: str) -> Dict[str, object]:
  """config[key] checked: a dict of view name -> observation key or None."""
  views = config[key]
  if not isinstance(views, dict):
    raise TypeError(f'dataset {name!r}: config {key!r} must be a dict of view '
                    f'-> observation key or None, got {type(views).__name__}')
  for view, obs_key in views.items():
    if not isinstance(view, str) or not (obs_key is None or
                                         isinstance(obs_key, str)):
      raise TypeError(f'dataset {name!r}: config {key!r} entry {view!r}: '
                      f'{obs_key!r} must be an observation key (str) or None')
  return dict(views)


def _encoding(name: str, config: dict, key: str, enum_type) -> object:
  """config[key] as a member of enum_type (a member or its int value)."""
  try:
    return enum_type(config[key])
  except ValueError:
    raise ValueError(f'dataset {name!r}: config {key!r} is {config[key]!r}, '
                     f'not one of {[e.name for e in enum_type]}') from None


def _checked_config(name: str, config: dict) -> dict:
  """A user's configuration checked key by key; encodings as enum members."""
  if not isinstance(config, dict):
    raise TypeError(f'dataset {name!r}: config must be a dict, got '
                    f'{type(config).__name__}')
  missing = [key for key in _REQUIRED if key not in config]
  unknown = sorted(set(config) - set(_REQUIRED) - set(_OPTIONAL))
  if missing or unknown:
    raise ValueError(f'dataset {name!r}: config keys missing {missing}, '
                     f'unknown {unknown}; required {list(_REQUIRED)}, '
                     f'optional {list(_OPTIONAL)}')
  checked = copy.deepcopy(config)
  checked['image_obs_keys'] = _views(name, config, 'image_obs_keys')
  checked['depth_obs_keys'] = _views(name, config, 'depth_obs_keys')
  checked['proprio_encoding'] = _encoding(name, config, 'proprio_encoding',
                                          configs.ProprioEncoding)
  checked['action_encoding'] = _encoding(name, config, 'action_encoding',
                                         configs.ActionEncoding)
  return checked


def _refuse_taken(kind: str, name: str, table: dict, overwrite: bool) -> None:
  """A ValueError if name is registered and overwrite is False; a TypeError for a non-str name."""
  if not isinstance(name, str) or not name:
    raise TypeError(f'{kind} name must be a non-empty str, got {name!r}')
  if name in table and not overwrite:
    raise ValueError(f'{kind} {name!r} is already registered; pass '
                     'overwrite=True to replace it')


def register_dataset(name: str, config: dict, standardize_fn: Callable, *,
                     overwrite: bool = False) -> None:
  """Registers a dataset for make_oxe_dataset_kwargs and mixtures.

  Args:
    name: the TFDS name (as make_dataset_from_rlds reads it).
    config: Octo's layout: 'image_obs_keys', 'depth_obs_keys' (view ->
      observation key or None), 'proprio_encoding', 'action_encoding'.
    standardize_fn: trajectory dict -> trajectory dict with 'action',
      'observation'/'proprio' and 'language_instruction'.
    overwrite: replace a registered name.

  Example:
    >>> register_dataset('my_robot', {
    ...     'image_obs_keys': {'primary': 'image', 'wrist': None},
    ...     'depth_obs_keys': {}, 'proprio_encoding': 2,
    ...     'action_encoding': 1}, lambda traj: traj)
    >>> configs.OXE_DATASET_CONFIGS['my_robot']['action_encoding']
    <ActionEncoding.EEF_POS: 1>
    >>> register_dataset('my_robot', {}, lambda traj: traj)
    Traceback (most recent call last):
    ...
    ValueError: dataset 'my_robot' is already registered; pass overwrite=True to replace it
    >>> _ = configs.OXE_DATASET_CONFIGS.pop('my_robot')
    >>> _ = standardize.OXE_STANDARDIZATION_TRANSFORMS.pop('my_robot')
  """
  _refuse_taken('dataset', name, configs.OXE_DATASET_CONFIGS, overwrite)
  checked = _checked_config(name, config)
  if not callable(standardize_fn):
    raise TypeError(f'dataset {name!r}: standardize_fn must be callable, got '
                    f'{type(standardize_fn).__name__}')
  configs.OXE_DATASET_CONFIGS[name] = checked
  standardize.OXE_STANDARDIZATION_TRANSFORMS[name] = standardize_fn


def checked_weights(label: str, weights: Sequence) -> List[Tuple[str, float]]:
  """A mixture's (dataset, weight) pairs checked: registered names, weights >= 0.

  Example:
    >>> checked_weights('mix', [('kuka', 1)])
    [('kuka', 1.0)]
    >>> checked_weights('mix', [('kuka', -1)])
    Traceback (most recent call last):
    ...
    ValueError: mixture 'mix': entry 0 ('kuka', -1) must be (registered dataset name, weight >= 0)
  """
  if isinstance(weights, (str, bytes, dict)) or not isinstance(weights,
                                                                Sequence):
    raise TypeError(f'mixture {label!r}: weights must be a list of (dataset, '
                    f'weight) pairs, got {type(weights).__name__}')
  pairs = []
  for i, entry in enumerate(weights):
    ok = (isinstance(entry, (tuple, list)) and len(entry) == 2 and
          isinstance(entry[0], str) and isinstance(entry[1], numbers.Real) and
          not isinstance(entry[1], bool) and entry[1] >= 0)
    if not ok:
      raise ValueError(f'mixture {label!r}: entry {i} {entry!r} must be '
                       '(registered dataset name, weight >= 0)')
    if entry[0] not in configs.OXE_DATASET_CONFIGS:
      raise ValueError(f'mixture {label!r}: unknown dataset {entry[0]!r}; '
                       f'known: {_known(configs.OXE_DATASET_CONFIGS)}')
    pairs.append((entry[0], float(entry[1])))
  return pairs


def register_mixture(name: str, weights: Sequence[Tuple[str, float]], *,
                     overwrite: bool = False) -> None:
  """Registers a named mixture of registered datasets.

  Example:
    >>> register_mixture('my_mix', [('bridge_dataset', 1.0), ('kuka', 0.5)])
    >>> mixture_weights('my_mix')
    [('bridge_dataset', 1.0), ('kuka', 0.5)]
    >>> register_mixture('rtx', [('kuka', 1.0)])
    Traceback (most recent call last):
    ...
    ValueError: mixture 'rtx' is already registered; pass overwrite=True to replace it
    >>> _ = mixes.OXE_NAMED_MIXES.pop('my_mix')
  """
  _refuse_taken('mixture', name, mixes.OXE_NAMED_MIXES, overwrite)
  mixes.OXE_NAMED_MIXES[name] = checked_weights(name, weights)
