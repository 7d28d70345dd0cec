"""Shared test helpers: build small RLDS datasets and compare datasets exactly."""

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from rlds_lite import rlds_types


def make_steps(length: int,
               terminal: bool = True,
               obs_dim: int = 2,
               nested: bool = False,
               start: int = 0) -> Dict[str, np.ndarray]:
  """Columnar steps of one episode with distinct, predictable values.

  observation[t] = start + t (+ 0.5 in the second dim), action[t] = 10 * (start + t),
  reward[t] = start + t + 0.25, discount 1 (0 on a terminal last step is NOT
  encoded here: RLDS discount belongs to the step's own transition).
  With nested=True the observation is {'pos': [T, obs_dim], 'id': [T]} and
  the action a tuple (int, float).
  """
  t = np.arange(length, dtype=np.float32) + start
  obs = np.stack([t + 0.5 * d for d in range(obs_dim)], axis=-1).astype(np.float32)
  steps = {
      rlds_types.OBSERVATION: obs,
      rlds_types.ACTION: (10 * t).astype(np.int64),
      rlds_types.REWARD: t + 0.25,
      rlds_types.DISCOUNT: np.ones(length, np.float32),
      rlds_types.IS_FIRST: np.arange(length) == 0,
      rlds_types.IS_LAST: np.arange(length) == length - 1,
      rlds_types.IS_TERMINAL: (np.arange(length) == length - 1) & terminal,
  }
  if nested:
    steps[rlds_types.OBSERVATION] = {'pos': obs, 'id': t.astype(np.int32)}
    steps[rlds_types.ACTION] = ((10 * t).astype(np.int64), t * 2)
  return steps


def steps_dataset(steps: Mapping[str, Any]) -> tf.data.Dataset:
  """A dataset of steps from columnar steps (works for zero-length too)."""
  return tf.data.Dataset.from_tensor_slices(dict(steps))


def episodes_dataset(episodes_steps: Sequence[Mapping[str, Any]],
                     metadata: Optional[Mapping[str, Sequence[Any]]] = None
                     ) -> tf.data.Dataset:
  """A dataset of RLDS episodes, each with a nested dataset of steps."""
  episodes = {
      rlds_types.STEPS: [steps_dataset(s) for s in episodes_steps],
      **{k: list(v) for k, v in (metadata or {}).items()},
  }
  return tf.data.Dataset.from_tensor_slices(episodes)


def to_numpy(ds: tf.data.Dataset) -> List[Any]:
  """All elements of ``ds`` as NumPy structures."""
  return list(ds.as_numpy_iterator())


def assert_structures_equal(actual: Any, expected: Any, path: str = '',
                            string_dtypes: bool = False) -> None:
  """Exact equality of nested dicts/tuples/lists of arrays, dtype-aware.

  String arrays compare by value whatever their dtype (object, bytes, str)
  unless ``string_dtypes``, which checks their dtypes too.
  """
  if isinstance(expected, Mapping):
    assert isinstance(actual, Mapping), f'{path}: expected a dict, got {type(actual)}'
    assert set(actual) == set(expected), f'{path}: keys {sorted(actual)} != {sorted(expected)}'
    for k in expected:
      assert_structures_equal(actual[k], expected[k], f'{path}/{k}',
                              string_dtypes)
  elif isinstance(expected, (tuple, list)) and not isinstance(actual, np.ndarray):
    assert len(actual) == len(expected), f'{path}: length {len(actual)} != {len(expected)}'
    for i, (a, e) in enumerate(zip(actual, expected)):
      assert_structures_equal(a, e, f'{path}[{i}]', string_dtypes)
  else:
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.shape == e.shape, f'{path}: shape {a.shape} != {e.shape}'
    if string_dtypes or (e.dtype.kind not in 'OSU' and
                         a.dtype.kind not in 'OSU'):
      assert a.dtype == e.dtype, f'{path}: dtype {a.dtype} != {e.dtype}'
    np.testing.assert_array_equal(a, e, err_msg=path)


def assert_dataset_equals(ds: tf.data.Dataset, expected: Sequence[Any]) -> None:
  """Asserts that ``ds`` yields exactly ``expected`` (NumPy structures)."""
  actual = to_numpy(ds)
  assert len(actual) == len(expected), f'{len(actual)} elements != {len(expected)}'
  for i, (a, e) in enumerate(zip(actual, expected)):
    assert_structures_equal(a, e, f'element {i}')


def _png_camera_dataset(root: Any, image_bytes: Optional[bytes],
                        only_at: Optional[Tuple[int, int]] = None) -> str:
  """3 episodes (4, 1, 6 steps) with a PNG camera, a state, an instruction.

  With ``image_bytes`` the camera holds those bytes, stored as text: in
  every frame, or only in the frame at ``only_at`` = ``(episode, step)``
  (the others hold their PNG files).
  """
  from rlds_lite.tfds import EpisodeWriter  # pylint: disable=g-import-not-at-top
  image = tfds.features.Image(shape=(8, 8, 3), encoding_format='png')
  camera_feature = image if image_bytes is None else tfds.features.Text()
  features = {'steps': {
      'observation': {'camera': camera_feature,
                      'state': tfds.features.Tensor(shape=(3,),
                                                    dtype=np.float32)},
      'action': tfds.features.Tensor(shape=(2,), dtype=np.float32),
      'reward': np.float32,
      'language_instruction': tfds.features.Text()}}
  rng, camera_rng = np.random.default_rng(0), np.random.default_rng(1)
  with EpisodeWriter(str(root), 'cams', features) as writer:
    for episode, length in enumerate((4, 1, 6)):
      camera = camera_rng.integers(0, 255, (length, 8, 8, 3), dtype=np.uint8)
      if image_bytes is not None:
        camera = np.array([image_bytes if only_at in (None, (episode, step))
                           else tf.io.encode_png(frame).numpy()
                           for step, frame in enumerate(camera)], object)
      index = np.arange(length)
      writer.add_episode({'steps': {
          'observation': {'camera': camera,
                          'state': rng.normal(size=(length, 3)).astype(
                              np.float32)},
          'action': rng.normal(size=(length, 2)).astype(np.float32),
          'reward': rng.normal(size=length).astype(np.float32),
          'language_instruction': np.array(['pick'] * length, object),
          'is_first': index == 0, 'is_last': index == length - 1,
          'is_terminal': (index == length - 1) & (length == 4)}})
  return writer.path


def camera_datasets_good_and_undecodable(
    root: Any, only_at: Optional[Tuple[int, int]] = None) -> Tuple[str, str]:
  """Two datasets alike but for their PNG camera's bytes: ``(good, bad)``.

  Both declare the camera a PNG ``Image`` (8x8x3) of 3 episodes (4, 1, 6
  steps); ``bad`` stores ``b'not a png'`` in every frame (or only in the
  frame at ``only_at`` = ``(episode, step)``), so only decoding the camera
  fails: a reader that does not decode it reads the same values from both.
  """
  good = _png_camera_dataset(os.path.join(root, 'good'), None)
  bad = _png_camera_dataset(os.path.join(root, 'bad'), b'not a png', only_at)
  for name, key in (('dataset_info.json', 'features'),
                    ('features.json', 'featuresDict')):
    with open(os.path.join(good, name)) as f:
      declared = json.load(f)
    with open(os.path.join(bad, name)) as f:
      edited = json.load(f)
    edited[key] = declared[key]
    with open(os.path.join(bad, name), 'w') as f:
      json.dump(edited, f)
  return good, bad


def write_camera_dataset(directory: Any, cameras: Mapping[str, Tuple[int, int]],
                         lengths: Sequence[int]) -> str:
  """A TFDS dataset of ``synthetic`` camera episodes (episode ``i``: ``lengths[i]`` steps, seed ``i``): its path."""
  from rlds_lite import synthetic  # pylint: disable=g-import-not-at-top
  from rlds_lite.tfds import EpisodeWriter  # pylint: disable=g-import-not-at-top
  with EpisodeWriter(str(directory), 'cams', synthetic.camera_features(cameras)) as writer:
    for i, length in enumerate(lengths):
      episode = next(synthetic.camera_episodes(1, length, cameras, seed=i))
      episode['episode_id'] = np.int64(i)
      writer.add_episode(episode)
  return writer.path
