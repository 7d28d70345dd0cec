"""Octo's Open X-Embodiment dataset configurations (cameras, depth, proprio and action encodings) by dataset name."""

import enum
from typing import Dict, Optional

__all__ = ['ActionEncoding', 'ProprioEncoding', 'OXE_DATASET_CONFIGS', 'VIEWS']

VIEWS = ('primary', 'secondary', 'wrist')
"""The camera views of Octo's configurations."""


class ProprioEncoding(enum.IntEnum):
  """What a dataset's 'proprio' holds (Octo's values).

  Example:
    >>> ProprioEncoding(1).name
    'POS_EULER'
  """
  NONE = -1  # No proprio: one zero per step.
  POS_EULER = 1  # EEF xyz + roll-pitch-yaw (+ gripper).
  POS_QUAT = 2  # EEF xyz + quaternion (+ gripper).
  JOINT = 3  # Joint angles (+ gripper).
  JOINT_BIMANUAL = 4  # 2 x (6 joint angles + gripper).
  POS_NAV = 5  # xy + yaw.


class ActionEncoding(enum.IntEnum):
  """What a dataset's 'action' holds (Octo's values); it decides the normalisation mask.

  Example:
    >>> ActionEncoding.EEF_POS.value
    1
  """
  EEF_POS = 1  # EEF delta xyz + roll-pitch-yaw + gripper (1 open, 0 closed).
  JOINT_POS = 2  # 7 joint deltas + gripper.
  JOINT_POS_BIMANUAL = 3  # 2 x (6 joint positions + gripper).
  NAV_2D = 4  # (dx, dy) waypoint.
  JOINT_POS_BIMANUAL_NAV = 5  # JOINT_POS_BIMANUAL + base linear, angular velocity.


def _config(primary: Optional[str] = None, secondary: Optional[str] = None,
            wrist: Optional[str] = None, *, depth: Dict[str, str] = {},
            proprio: ProprioEncoding,
            action: ActionEncoding = ActionEncoding.EEF_POS) -> dict:
  """One configuration in Octo's layout: every view named, None where absent."""
  images = {'primary': primary, 'secondary': secondary, 'wrist': wrist}
  return {
      'image_obs_keys': images,
      'depth_obs_keys': {view: depth.get(view) for view in VIEWS},
      'proprio_encoding': proprio,
      'action_encoding': action,
  }


_P = ProprioEncoding

OXE_DATASET_CONFIGS = {
    # Berkeley's own up-to-date bridge copy, as Octo (not OXE's 'bridge').
    'bridge_dataset': _config('image_0', 'image_1', proprio=_P.POS_EULER),
    'fractal20220817_data': _config('image', proprio=_P.POS_QUAT),
    'kuka': _config('image', proprio=_P.POS_QUAT),
    'taco_play': _config('rgb_static', None, 'rgb_gripper', proprio=_P.POS_EULER,
                         depth={'primary': 'depth_static',
                                'wrist': 'depth_gripper'}),
    'jaco_play': _config('image', None, 'image_wrist', proprio=_P.POS_EULER),
    'berkeley_cable_routing': _config('image', 'top_image', 'wrist45_image',
                                      proprio=_P.JOINT),
    'roboturk': _config('front_rgb', proprio=_P.NONE),
    'nyu_door_opening_surprising_effectiveness': _config(
        None, None, 'image', proprio=_P.NONE),
    'viola': _config('agentview_rgb', None, 'eye_in_hand_rgb', proprio=_P.JOINT),
    'berkeley_autolab_ur5': _config('image', None, 'hand_image',
                                    proprio=_P.POS_QUAT,
                                    depth={'primary': 'depth'}),
    'toto': _config('image', proprio=_P.JOINT),
    'language_table': _config('rgb', proprio=_P.POS_EULER),
    # DROID (OpenVLA's layout): 6 cartesian velocities + gripper; proprio is
    # cartesian_position (xyz + euler) + gripper_position.
    'droid': _config('exterior_image_1_left', 'exterior_image_2_left',
                     'wrist_image_left', proprio=_P.POS_EULER),
}
"""Dataset name -> Octo's configuration: ``image_obs_keys`` and
``depth_obs_keys`` (view -> observation key or None), ``proprio_encoding``,
``action_encoding``. ``register_dataset`` adds users' own."""
