"""Each Open X-Embodiment dataset's trajectory in Octo's standard form (EEF deltas, gripper 1 open / 0 closed, 'proprio', 'language_instruction')."""

from typing import Any, Callable, Dict, Optional, Tuple, Union

import tensorflow as tf

__all__ = [
    'binarize_gripper_actions', 'rel2abs_gripper_actions',
    'invert_gripper_actions', 'OXE_STANDARDIZATION_TRANSFORMS',
]

Trajectory = Dict[str, Any]


def binarize_gripper_actions(actions: tf.Tensor) -> tf.Tensor:
  """Continuous gripper values [T] to 1 (open, > 0.95) / 0 (closed, < 0.05).

  A value in between takes the state reached after it; in-between values at
  the end take the last value (Octo's rule).

  Example:
    >>> binarize_gripper_actions(tf.constant([1.0, 0.5, 0.0, 0.3])).numpy()
    array([1. , 0. , 0. , 0.3], dtype=float32)
  """
  actions = tf.cast(actions, tf.float32)
  is_open = tf.cast(actions > 0.95, tf.float32)
  between = tf.logical_and(actions >= 0.05, actions <= 0.95)
  step = lambda later, i: tf.where(between[i], later, is_open[i])
  return tf.scan(step, tf.range(tf.shape(actions)[0]), actions[-1],
                 reverse=True)


def rel2abs_gripper_actions(actions: tf.Tensor) -> tf.Tensor:
  """Relative gripper commands [T] (> 0.1 close, < -0.1 open) to absolute 1 open / 0 closed.

  Steps without a command keep the last state; before the first command the
  gripper is in the opposite state of it (open when there is none).

  Example:
    >>> rel2abs_gripper_actions(tf.constant([0.0, 1.0, 0.0, -1.0])).numpy()
    array([1., 0., 0., 1.], dtype=float32)
  """
  actions = tf.cast(actions, tf.float32)
  state = tf.where(actions < -0.1, 1, tf.where(actions > 0.1, -1, 0))
  first = state[tf.argmax(tf.cast(state != 0, tf.int32), axis=0)]
  start = tf.where(first == 0, 1, -first)
  step = lambda last, i: tf.where(state[i] == 0, last, state[i])
  held = tf.scan(step, tf.range(tf.shape(actions)[0]), start)
  return tf.cast(held, tf.float32) / 2 + 0.5


def invert_gripper_actions(actions: tf.Tensor) -> tf.Tensor:
  """1 - actions: a gripper in 1 closed / 0 open made 1 open / 0 closed.

  Example:
    >>> invert_gripper_actions(tf.constant([0.0, 1.0])).numpy()
    array([1., 0.], dtype=float32)
  """
  return 1 - tf.cast(actions, tf.float32)


def _get(traj: Trajectory, path: Union[str, Tuple[str, ...]],
         dataset: str) -> Any:
  """The field at 'a/b' (or at the keys of a tuple) of a trajectory; a KeyError naming dataset and key if absent."""
  value, parts = traj, path.split('/') if isinstance(path, str) else path
  for part in parts:
    if not isinstance(value, dict) or part not in value:
      raise KeyError(f"{dataset}: the trajectory has no field "
                     f"'{'/'.join(parts)}' "
                     "(its standardize_fn expects the dataset's public "
                     'features)')
    value = value[part]
  return value


def _f32(*parts: tf.Tensor) -> tf.Tensor:
  """Parts [T, k] (or [T]) concatenated on the last axis as float32."""
  parts = [tf.cast(p, tf.float32) for p in parts]
  return tf.concat([p[:, None] if p.shape.rank == 1 else p for p in parts],
                   axis=-1)


def _standard(traj: Trajectory, action: tf.Tensor, proprio: tf.Tensor,
              language: Optional[tf.Tensor], renames: Dict[str, str] = {}
             ) -> Trajectory:
  """A new trajectory: action, observation/proprio (and renamed keys), language_instruction."""
  observation = dict(traj['observation'])
  for old, new in renames.items():
    observation[new] = observation.pop(old)
  observation['proprio'] = proprio
  out = {**traj, 'observation': observation, 'action': action}
  if language is None:  # An uninformative instruction: deleted, as Octo.
    language = tf.fill([tf.shape(action)[0]], '')
  out['language_instruction'] = language
  return out


def _rt1_action(traj: Trajectory, name: str, gripper: tf.Tensor) -> tf.Tensor:
  """world_vector, rotation_delta and a gripper column (RT-1's action layout)."""
  return _f32(_get(traj, 'action/world_vector', name),
              _get(traj, 'action/rotation_delta', name), gripper)


def _instruction(traj: Trajectory, name: str) -> tf.Tensor:
  """observation/natural_language_instruction."""
  return _get(traj, 'observation/natural_language_instruction', name)


def _no_proprio(action: tf.Tensor) -> tf.Tensor:
  """One zero per step (ProprioEncoding.NONE)."""
  return tf.zeros([tf.shape(action)[0], 1], tf.float32)


def bridge_dataset(traj: Trajectory) -> Trajectory:
  """Bridge: actions relabelled as reached state deltas, gripper binarised, last step dropped.

  Example:
    >>> t = {'observation': {'state': tf.constant([[0.] * 7, [1.] * 7])},
    ...      'action': tf.constant([[0.] * 6 + [1.], [0.] * 6 + [0.]]),
    ...      'language_instruction': tf.constant(['a', 'a'])}
    >>> bridge_dataset(t)['action'].numpy().tolist()
    [[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]]
  """
  name = 'bridge_dataset'
  action, state = _get(traj, 'action', name), _get(traj, 'observation/state', name)
  gripper = binarize_gripper_actions(action[:, -1])
  moves = tf.cast(state[1:, :6] - state[:-1, :6], tf.float32)
  out = _standard(traj, action, tf.cast(state, tf.float32),
                  _get(traj, 'language_instruction', name))
  out = tf.nest.map_structure(lambda x: x[:-1], out)
  out['action'] = _f32(moves, gripper[:-1])
  return out


def fractal20220817_data(traj: Trajectory) -> Trajectory:
  """RT-1 (fractal): relative gripper made absolute; proprio base_pose_tool_reached + gripper_closed.

  Example:
    >>> len(OXE_STANDARDIZATION_TRANSFORMS['fractal20220817_data'].__doc__) > 0
    True
  """
  name = 'fractal20220817_data'
  gripper = rel2abs_gripper_actions(
      _get(traj, 'action/gripper_closedness_action', name)[:, 0])
  proprio = _f32(_get(traj, 'observation/base_pose_tool_reached', name),
                 _get(traj, 'observation/gripper_closed', name))
  return _standard(traj, _rt1_action(traj, name, gripper), proprio,
                   _instruction(traj, name))


def _zlib_floats(value: tf.Tensor, width: int) -> tf.Tensor:
  """ZLIB-compressed float32 bytes [T] to [T, width]."""
  raw = tf.io.decode_raw(tf.io.decode_compressed(value, 'ZLIB'), tf.float32)
  return tf.reshape(raw, [-1, width])


def kuka(traj: Trajectory) -> Trajectory:
  """Kuka (QT-Opt): RT-1's action; proprio decoded from its ZLIB state strings; no language.

  Example:
    >>> OXE_STANDARDIZATION_TRANSFORMS['kuka'] is kuka
    True
  """
  name = 'kuka'
  gripper = rel2abs_gripper_actions(
      _get(traj, 'action/gripper_closedness_action', name)[:, 0])
  pose = _get(traj, ('observation', 'clip_function_input/base_pose_tool_reached'),
              name)  # One feature whose name holds a '/'.
  closed = _get(traj, 'observation/gripper_closed', name)
  proprio = _f32(_zlib_floats(pose, 7), _zlib_floats(closed, 1))
  _instruction(traj, name)
  return _standard(traj, _rt1_action(traj, name, gripper), proprio, None)


def taco_play(traj: Trajectory) -> Trajectory:
  """TACO play: rel_actions_world, gripper clipped to [0, 1]; proprio robot_obs[:6] + [7].

  Example:
    >>> OXE_STANDARDIZATION_TRANSFORMS['taco_play'] is taco_play
    True
  """
  name = 'taco_play'
  rel = tf.cast(_get(traj, 'action/rel_actions_world', name), tf.float32)
  robot = _get(traj, 'observation/robot_obs', name)
  action = _f32(rel[:, :6], tf.clip_by_value(rel[:, -1:], 0, 1))
  return _standard(traj, action, _f32(robot[:, :6], robot[:, 7:8]),
                   _instruction(traj, name))


def jaco_play(traj: Trajectory) -> Trajectory:
  """Jaco play: world_vector, zero rotation, absolute gripper; proprio end_effector_cartesian_pos.

  Example:
    >>> OXE_STANDARDIZATION_TRANSFORMS['jaco_play'] is jaco_play
    True
  """
  name = 'jaco_play'
  move = _get(traj, 'action/world_vector', name)
  gripper = rel2abs_gripper_actions(
      _get(traj, 'action/gripper_closedness_action', name)[:, 0])
  action = _f32(move, tf.zeros_like(move), gripper)
  proprio = _f32(_get(traj, 'observation/end_effector_cartesian_pos', name))
  return _standard(traj, action, proprio, _instruction(traj, name))


def berkeley_cable_routing(traj: Trajectory) -> Trajectory:
  """Cable routing: world_vector, rotation_delta, gripper 0; proprio robot_state; no language.

  Example:
    >>> OXE_STANDARDIZATION_TRANSFORMS['berkeley_cable_routing'].__name__
    'berkeley_cable_routing'
  """
  name = 'berkeley_cable_routing'
  move = _get(traj, 'action/world_vector', name)
  action = _rt1_action(traj, name, tf.zeros_like(move[:, :1]))
  _instruction(traj, name)
  return _standard(traj, action, _f32(_get(traj, 'observation/robot_state',
                                           name)), None)


def _inverted_clipped(traj: Trajectory, name: str) -> tf.Tensor:
  """1 - clip(gripper_closedness_action, 0, 1) as one column [T, 1]."""
  gripper = tf.cast(_get(traj, 'action/gripper_closedness_action', name),
                    tf.float32)
  gripper = tf.reshape(gripper, [tf.shape(gripper)[0], 1])
  return invert_gripper_actions(tf.clip_by_value(gripper, 0, 1))


def roboturk(traj: Trajectory) -> Trajectory:
  """RoboTurk: gripper clipped and inverted; no proprio; no language.

  Example:
    >>> OXE_STANDARDIZATION_TRANSFORMS['roboturk'] is roboturk
    True
  """
  name = 'roboturk'
  action = _rt1_action(traj, name, _inverted_clipped(traj, name))
  _instruction(traj, name)
  return _standard(traj, action, _no_proprio(action), None)


def nyu_door_opening_surprising_effectiveness(traj: Trajectory) -> Trajectory:
  """NYU door opening: relative gripper made absolute; no proprio; no language.

  Example:
    >>> callable(nyu_door_opening_surprising_effectiveness)
    True
  """
  name = 'nyu_door_opening_surprising_effectiveness'
  gripper = rel2abs_gripper_actions(
      _get(traj, 'action/gripper_closedness_action', name)[:, 0])
  action = _rt1_action(traj, name, gripper)
  _instruction(traj, name)
  return _standard(traj, action, _no_proprio(action), None)


def viola(traj: Trajectory) -> Trajectory:
  """VIOLA: gripper clipped and inverted; proprio joint_states + gripper_states; no language.

  Example:
    >>> OXE_STANDARDIZATION_TRANSFORMS['viola'] is viola
    True
  """
  name = 'viola'
  action = _rt1_action(traj, name, _inverted_clipped(traj, name))
  proprio = _f32(_get(traj, 'observation/joint_states', name),
                 _get(traj, 'observation/gripper_states', name))
  _instruction(traj, name)
  return _standard(traj, action, proprio, None)


def berkeley_autolab_ur5(traj: Trajectory) -> Trajectory:
  """Berkeley UR5: image_with_depth renamed depth; absolute gripper; proprio robot_state[6:14].

  Example:
    >>> OXE_STANDARDIZATION_TRANSFORMS['berkeley_autolab_ur5'].__name__
    'berkeley_autolab_ur5'
  """
  name = 'berkeley_autolab_ur5'
  _get(traj, 'observation/image_with_depth', name)
  gripper = rel2abs_gripper_actions(
      _get(traj, 'action/gripper_closedness_action', name))
  proprio = _f32(_get(traj, 'observation/robot_state', name)[:, 6:14])
  return _standard(traj, _rt1_action(traj, name, gripper), proprio,
                   _instruction(traj, name), {'image_with_depth': 'depth'})


def toto(traj: Trajectory) -> Trajectory:
  """TOTO: open_gripper as the gripper column; proprio state; no language.

  Example:
    >>> OXE_STANDARDIZATION_TRANSFORMS['toto'] is toto
    True
  """
  name = 'toto'
  action = _rt1_action(traj, name, _get(traj, 'action/open_gripper', name))
  _instruction(traj, name)
  return _standard(traj, action, _f32(_get(traj, 'observation/state', name)),
                   None)


def language_table(traj: Trajectory) -> Trajectory:
  """Language Table: 2-D action padded to 7 (gripper open); instruction decoded from its code points.

  Example:
    >>> OXE_STANDARDIZATION_TRANSFORMS['language_table'] is language_table
    True
  """
  name = 'language_table'
  move = tf.cast(_get(traj, 'action', name), tf.float32)
  action = _f32(move, tf.zeros_like(move), tf.zeros_like(move),
                tf.ones_like(move[:, :1]))
  codes = tf.cast(_get(traj, 'observation/instruction', name), tf.int32)
  text = tf.strings.unicode_encode(codes, output_encoding='UTF-8')
  language = tf.strings.split(text, '\x00')[:, :1].to_tensor()[:, 0]
  proprio = _f32(_get(traj, 'observation/effector_translation', name))
  return _standard(traj, action, proprio, language)


def droid(traj: Trajectory) -> Trajectory:
  """DROID: action_dict cartesian_velocity + inverted gripper_position; proprio cartesian_position + gripper_position.

  Example:
    >>> OXE_STANDARDIZATION_TRANSFORMS['droid'] is droid
    True
  """
  name = 'droid'
  velocity = _get(traj, 'action_dict/cartesian_velocity', name)
  gripper = _get(traj, 'action_dict/gripper_position', name)
  action = _f32(velocity[:, :6], invert_gripper_actions(gripper))
  proprio = _f32(_get(traj, 'observation/cartesian_position', name),
                 _get(traj, 'observation/gripper_position', name))
  return _standard(traj, action, proprio,
                   _get(traj, 'language_instruction', name))


OXE_STANDARDIZATION_TRANSFORMS: Dict[str, Callable[[Trajectory], Trajectory]] = {
    fn.__name__: fn for fn in (
        bridge_dataset, fractal20220817_data, kuka, taco_play, jaco_play,
        berkeley_cable_routing, roboturk,
        nyu_door_opening_surprising_effectiveness, viola,
        berkeley_autolab_ur5, toto, language_table, droid)
}
"""Dataset name -> its standardize_fn (a trajectory dict to a trajectory dict)."""
