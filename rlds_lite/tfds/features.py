"""The TFDS features of an RLDS dataset, from features, configs, specs or an example episode."""

from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import nest_paths
from rlds_lite import rlds_types
from rlds_lite.tfds import config_generator
from rlds_lite.tfds import encoding

__all__ = ['episode_features', 'features_from_config', 'features_from_env_specs',
           'features_from_episode', 'is_example_episode', 'rlds_features']

_FLAGS = (rlds_types.IS_FIRST, rlds_types.IS_LAST, rlds_types.IS_TERMINAL)
DatasetConfig = tfds.rlds.rlds_base.DatasetConfig


def rlds_features(step_features: Mapping[str, Any],
                  episode_features: Optional[Mapping[str, Any]] = None
                  ) -> tfds.features.FeaturesDict:
  """RLDS features ``{'steps': Dataset({flags, **step_features}), **episode_features}``.

    Example:
      >>> rlds_features({'reward': np.float32})['steps'].feature['is_last']
      Tensor(shape=(), dtype=bool)
  """
  episode_features = dict(episode_features or {})
  if rlds_types.STEPS in episode_features:
    raise ValueError(f'An episode metadata field cannot be called '
                     f'{rlds_types.STEPS!r}.')
  steps = {flag: np.bool_ for flag in _FLAGS}
  steps.update(step_features)
  return tfds.features.FeaturesDict({
      rlds_types.STEPS: tfds.features.Dataset(steps),
      **episode_features,
  })


def features_from_config(config: DatasetConfig) -> tfds.features.FeaturesDict:
  """The features of an RLDS ``DatasetConfig`` (as ``rlds_base.build_info``).

    Example:
      >>> config = DatasetConfig(name='x', observation_info=np.float32)
      >>> sorted(features_from_config(config)['steps'].feature.keys())
      ['is_first', 'is_last', 'is_terminal', 'observation']
  """
  steps = dict(config.step_metadata_info or {})
  for key, info in ((rlds_types.OBSERVATION, config.observation_info),
                    (rlds_types.ACTION, config.action_info),
                    (rlds_types.REWARD, config.reward_info),
                    (rlds_types.DISCOUNT, config.discount_info)):
    if info is not None:
      steps[key] = info
  return rlds_features(steps, config.episode_metadata_info)


def _is_feature_like(value: Any) -> bool:
  """Whether ``value`` is already a TFDS feature (or a dtype TFDS accepts)."""
  if isinstance(value, (tfds.features.FeatureConnector, tf.DType, np.dtype)):
    return True
  return isinstance(value, type) and issubclass(value, (np.generic, bool, int,
                                                        float, str, bytes))


def _to_feature(value: Any, name: Optional[str], use_images: bool,
                image_encoding: str, tensor_encoding: str) -> Any:
  """A feature kept as is, or inferred from a spec/array (nested)."""
  if _is_feature_like(value):
    return value
  if isinstance(value, Mapping):
    return tfds.features.FeaturesDict({
        k: _to_feature(v, k, use_images, image_encoding, tensor_encoding)
        for k, v in value.items()
    })
  return config_generator.extract_feature_from_data(
      value, use_images, image_encoding, name,
      tensor_encoding=tensor_encoding)


def _top_level_name(key: str) -> Optional[str]:
  """Core step fields are inferred as unnamed (top-level images detected)."""
  return None if key in rlds_types.CORE_STEP_FIELDS else key


def _check_steps_feature(features: tfds.features.FeaturesDict) -> None:
  if (rlds_types.STEPS not in features.keys() or
      not isinstance(features[rlds_types.STEPS], tfds.features.Dataset)):
    raise ValueError(
        'features_or_spec: an RLDS FeaturesDict needs a '
        f"{rlds_types.STEPS!r} entry of type tfds.features.Dataset; got keys "
        f'{sorted(features.keys())}.')
  step = features[rlds_types.STEPS].feature
  missing = [flag for flag in (rlds_types.IS_FIRST, rlds_types.IS_LAST)
             if not isinstance(step, tfds.features.FeaturesDict) or
             flag not in step.keys()]
  if missing:
    raise ValueError(f'features_or_spec: the steps feature lacks the RLDS '
                     f'flags {missing}.')


def _unreadable(feature: Any, path: str) -> Optional[Tuple[str, Any]]:
  if isinstance(feature, tfds.features.FeaturesDict):
    for key in sorted(feature.keys()):
      found = _unreadable(feature[key], f'{path}/{key}' if path else key)
      if found:
        return found
    return None
  if isinstance(feature, tfds.features.Sequence):
    return _unreadable(feature.feature, path)
  if (isinstance(feature, tfds.features.Tensor) and 0 in feature.shape and
      feature.to_json_content().encoding == 'none'):
    return path, feature.shape
  return None


def _slash_key(feature: Any, path: str) -> Optional[str]:
  if isinstance(feature, (tfds.features.Dataset, tfds.features.Sequence)):
    return _slash_key(feature.feature, path)
  if not isinstance(feature, tfds.features.FeaturesDict):
    return None
  for key in sorted(feature.keys()):
    name = f'{path}/{key}' if path else key
    if '/' in key:
      return name
    found = _slash_key(feature[key], name)
    if found:
      return found
  return None


def slash_key_problem(features: tfds.features.FeaturesDict
                      ) -> Optional[str]:
  """What is wrong with a feature key holding a ``/`` (read as nesting), or None.

  Example:
    >>> slash_key_problem(tfds.features.FeaturesDict({'steps':
    ...     tfds.features.Dataset({'a/b': np.float32})}))
    "key 'steps/a/b' holds a '/', which rlds_lite reads as nesting (fields are named by paths such as 'observation/image'); rename it or nest it"
  """
  found = _slash_key(features, '')
  return None if found is None else nest_paths.slash_key_problem(found)


def unreadable_step_field(features: tfds.features.FeaturesDict
                          ) -> Optional[Tuple[str, Any]]:
  """``(path, shape)`` of a zero-size plain step field TFDS cannot read back (SIGFPE), or None.

  Example:
    >>> unreadable_step_field(tfds.features.FeaturesDict({'steps':
    ...     tfds.features.Dataset({'x': tfds.features.Tensor(
    ...         shape=(2, 0), dtype=np.float32)})}))
    ('x', (2, 0))
  """
  if rlds_types.STEPS not in features.keys():
    return None
  return _unreadable(features[rlds_types.STEPS].feature, '')


def _as_array(value: Any) -> np.ndarray:
  """A column or metadata value (array, tensor, list, scalar) as an array."""
  if isinstance(value, (tf.Tensor, tf.Variable)):
    value = value.numpy()
  if isinstance(value, (np.ndarray, np.generic)):
    return np.asarray(value)
  if isinstance(value, (str, bytes)):
    return np.asarray(value, dtype=object)
  array = np.asarray(value)
  if array.dtype.kind in 'SU':  # Python strings: bytes objects, as TF's.
    return np.asarray(value, dtype=object)
  return array


def _is_strings(array: np.ndarray) -> bool:
  """Whether an array holds strings (kinds S, U, T, or str/bytes objects)."""
  if array.dtype.kind in 'SUT':
    return True
  return array.dtype.kind == 'O' and array.size > 0 and all(
      isinstance(x, (str, bytes)) for x in array.ravel())


def _value_feature(array: np.ndarray, path: str, name: Optional[str], *,
                   use_images: bool, image_encoding: str,
                   tensor_encoding: str) -> Any:
  """The feature of one value of ``array``'s dtype and shape (no squeezing).

  Strings: ``Text()`` for a scalar (as Open X-Embodiment's
  ``language_instruction``), a ``tf.string`` ``Tensor`` otherwise.
  """
  if _is_strings(array):
    if array.shape == ():
      return tfds.features.Text()
    return tfds.features.Tensor(shape=array.shape, dtype=tf.string)
  if (use_images and array.dtype == np.uint8 and array.ndim == 3 and
      array.shape[-1] in (1, 3, 4)):
    # A uint8 [H, W, C] value is a camera frame whatever its name (LeRobot's
    # cameras are observation/images/front): lossless, and far smaller and
    # faster to write than int64 lists.
    return tfds.features.Image(shape=array.shape, dtype=tf.uint8,
                               encoding_format=image_encoding)
  if array.dtype.kind == 'O':
    kinds = sorted({type(x).__name__ for x in array.ravel()}) or ['nothing']
    raise ValueError(
        f'{path}: an object array of {", ".join(kinds)} values has no TFDS '
        'feature to infer (only strings do); give this field a feature.')
  try:
    return config_generator.extract_feature_from_data(
        tf.TensorSpec(array.shape, array.dtype), use_images, image_encoding,
        name, squeeze_scalars=False, tensor_encoding=tensor_encoding)
  except (ValueError, TypeError) as e:
    raise ValueError(f'{path}: {e}') from e


def _column_features(columns: Any, path: str, name: Optional[str],
                     options: Dict[str, Any]) -> Any:
  """Features of a (nested) dict of ``[T, ...]`` step columns."""
  if isinstance(columns, Mapping):
    top = path == rlds_types.STEPS
    return {str(k): _column_features(
        v, f'{path}/{k}', _top_level_name(str(k)) if top else str(k), options)
            for k, v in columns.items() if not (top and k in _FLAGS)}
  array = _as_array(columns)
  if array.ndim == 0:
    raise ValueError(f'{path}: a step column needs a leading [T] axis; got a '
                     'scalar.')
  if not len(array):
    raise ValueError(f'{path}: the example episode has no steps; features '
                     'cannot be inferred from it.')
  if array.dtype.kind == 'O' and not _is_strings(array):
    try:  # A list of per-step arrays of one shape.
      array = np.stack([np.asarray(x) for x in array])
    except ValueError:
      pass  # Shapes differ: named as an object column below.
  return _value_feature(_as_array(array[0]), path, name, **options)


def _metadata_feature(value: Any, path: str, options: Dict[str, Any]) -> Any:
  """The feature of one episode metadata value (nested dicts allowed)."""
  if isinstance(value, Mapping):
    return {str(k): _metadata_feature(v, f'{path}/{k}', options)
            for k, v in value.items()}
  return _value_feature(_as_array(value), path, path.split('/')[-1],
                        **options)


def is_example_episode(value: Any) -> bool:
  """Whether ``value`` is an episode (data), not a description of features.

  Example:
    >>> is_example_episode({'steps': {'reward': np.zeros(3),
    ...                               'is_last': [False, False, True]}})
    True
    >>> is_example_episode({'steps': {'reward': np.float32,
    ...                               'is_last': np.bool_}})
    False
  """
  if not isinstance(value, Mapping) or rlds_types.STEPS not in value:
    return False
  steps = value[rlds_types.STEPS]
  if isinstance(steps, (list, tuple)):
    return bool(steps) and all(isinstance(s, Mapping) for s in steps)
  if not isinstance(steps, Mapping):
    return False
  for flag in _FLAGS:
    column = steps.get(flag)
    if isinstance(column, (list, tuple, np.ndarray, tf.Tensor)) and (
        np.ndim(column) == 1):
      return True
  return False


def features_from_episode(episode: Mapping[str, Any],
                          *,
                          use_images: bool = True,
                          image_encoding: str = 'png',
                          tensor_encoding: str = 'none'
                          ) -> tfds.features.FeaturesDict:
  """The RLDS features of episodes like ``episode`` (dtypes exact, images and strings detected).

  Steps as columns, step dicts or a dataset (``T >= 1``); the rules: docs/recording.md.

  Example:
    >>> episode = {'steps': {'observation': np.zeros((3, 2), np.float32),
    ...                      'language_instruction': ['pick', 'pick', 'pick'],
    ...                      'is_terminal': [False, False, True]},
    ...            'episode_id': 7}
    >>> features = features_from_episode(episode)
    >>> step = features['steps'].feature
    >>> step['observation'], step['language_instruction']
    (Tensor(shape=(2,), dtype=float32), Text(shape=(), dtype=string))
  """
  if not isinstance(episode, Mapping) or rlds_types.STEPS not in episode:
    raise ValueError(f'features_from_episode: an episode is a dict with a '
                     f'{rlds_types.STEPS!r} entry; got '
                     f'{type(episode).__name__}.')
  columns = encoding.columnar_steps(episode[rlds_types.STEPS])
  if not columns:
    raise ValueError('features_from_episode: the example episode has no '
                     'steps; features cannot be inferred from it.')
  options = {'use_images': use_images, 'image_encoding': image_encoding,
             'tensor_encoding': tensor_encoding}
  step_features = _column_features(columns, rlds_types.STEPS, None, options)
  metadata = {k: _metadata_feature(v, k, options)
              for k, v in episode.items() if k != rlds_types.STEPS}
  return rlds_features(step_features, metadata)


def episode_features(features_or_spec: Any,
                     *,
                     use_images: bool = True,
                     image_encoding: str = 'png',
                     tensor_encoding: str = 'none'
                     ) -> tfds.features.FeaturesDict:
  """The RLDS ``FeaturesDict`` described by features, a config, specs or an example episode.

  ``features_or_spec`` is a ``FeaturesDict`` (kept), a ``DatasetConfig``, an example episode
  (`features_from_episode`) or ``{'steps': ..., **episode_metadata}`` of features, dtypes or
  specs; the other arguments apply when inferring.

  Example:
    >>> spec = {'steps': {'observation': tf.TensorSpec([2], tf.float64),
    ...                   'is_first': tf.TensorSpec([], tf.bool),
    ...                   'is_last': tf.TensorSpec([], tf.bool)}}
    >>> observation = episode_features(spec)['steps'].feature['observation']
    >>> observation.shape, observation.to_json_content().encoding
    ((2,), 'bytes')
  """
  if isinstance(features_or_spec, tfds.features.FeaturesDict):
    _check_steps_feature(features_or_spec)
    return features_or_spec
  if isinstance(features_or_spec, DatasetConfig):
    return features_from_config(features_or_spec)
  if is_example_episode(features_or_spec):
    return features_from_episode(features_or_spec, use_images=use_images,
                                 image_encoding=image_encoding,
                                 tensor_encoding=tensor_encoding)
  if not isinstance(features_or_spec, Mapping):
    raise TypeError(
        'features_or_spec must be a tfds.features.FeaturesDict, a '
        'tfds.rlds.rlds_base.DatasetConfig or a dict of features/specs with a '
        f'{rlds_types.STEPS!r} entry; got {type(features_or_spec).__name__}.')
  if rlds_types.STEPS not in features_or_spec:
    raise ValueError(f'features_or_spec has no {rlds_types.STEPS!r} entry; its '
                     f'keys: {sorted(features_or_spec)}.')
  steps = features_or_spec[rlds_types.STEPS]
  if isinstance(steps, tfds.features.Dataset):
    steps = steps.feature
  steps = getattr(steps, 'element_spec', steps)
  if isinstance(steps, tfds.features.FeaturesDict):
    steps = {k: steps[k] for k in steps.keys()}
  if not isinstance(steps, Mapping):
    raise ValueError(
        f'features_or_spec[{rlds_types.STEPS!r}] must describe a dict of step '
        f'fields, got {type(steps).__name__}.')
  step_features = {
      k: _to_feature(v, _top_level_name(k), use_images, image_encoding,
                     tensor_encoding)
      for k, v in steps.items()
  }
  metadata = {
      k: _to_feature(v, k, use_images, image_encoding, tensor_encoding)
      for k, v in features_or_spec.items()
      if k != rlds_types.STEPS
  }
  return rlds_features(step_features, metadata)


def features_from_env_specs(observation_spec: Any,
                            action_spec: Any,
                            reward_spec: Any = None,
                            discount_spec: Any = None,
                            *,
                            step_metadata: Optional[Mapping[str, Any]] = None,
                            episode_metadata: Optional[Mapping[str, Any]] = None,
                            use_images: bool = True,
                            image_encoding: str = 'png',
                            tensor_encoding: str = 'none'
                            ) -> tfds.features.FeaturesDict:
  """RLDS features from dm_env specs (reward and discount: float64 scalars by default).

  Example:
    >>> from dm_env import specs
    >>> features = features_from_env_specs(specs.Array((2,), np.float32),
    ...                                    specs.DiscreteArray(3))
    >>> step = features['steps'].feature
    >>> step['action'].dtype, step['reward'].dtype
    (tf.int32, tf.float64)
  """
  default = tf.TensorSpec([], tf.float64)
  steps = {
      rlds_types.OBSERVATION: observation_spec,
      rlds_types.ACTION: action_spec,
      rlds_types.REWARD: default if reward_spec is None else reward_spec,
      rlds_types.DISCOUNT: default if discount_spec is None else discount_spec,
  }
  for key in step_metadata or {}:
    if key in steps or key in _FLAGS:
      raise ValueError(f'step_metadata field {key!r} collides with an RLDS '
                       'step field.')
  steps.update(step_metadata or {})
  return episode_features({rlds_types.STEPS: steps, **(episode_metadata or {})},
                          use_images=use_images, image_encoding=image_encoding,
                          tensor_encoding=tensor_encoding)
