"""The Open X-Embodiment registry: each dataset's standardize fn on its public features, kwargs, mixtures, users' entries."""

import logging
import zlib

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite import octo
from rlds_lite.octo import oxe
from rlds_lite.octo.oxe import configs
from rlds_lite.octo.oxe import mixes
from rlds_lite.octo.oxe import standardize

T = 4
PNG = tf.io.encode_png(tf.zeros([2, 2, 3], tf.uint8))
WV = np.arange(T * 3, dtype=np.float32).reshape(T, 3) / 10
RD = np.arange(T * 3, dtype=np.float32).reshape(T, 3) / 100


def images(*keys):
  return {k: tf.fill([T], PNG) for k in keys}


def floats(width, scale=1.0):
  return tf.constant(np.arange(T * width, dtype=np.float32).reshape(T, width)
                     * scale)


def col(values):
  return tf.constant(values, tf.float32)[:, None]


def instruction(text='pick'):
  return tf.fill([T], text)


def rt1_action(gripper):
  return {'world_vector': tf.constant(WV), 'rotation_delta': tf.constant(RD),
          'gripper_closedness_action': gripper}


def rt1_expected(gripper):
  return np.concatenate([WV, RD, np.array(gripper, np.float32)[:, None]], 1)


def zlib_rows(rows):
  return tf.constant([zlib.compress(np.asarray(r, np.float32).tobytes())
                      for r in rows])


def language_codes(text):
  codes = np.zeros([T, 16], np.int32)
  codes[:, :len(text)] = [ord(c) for c in text]
  return tf.constant(codes)


STATE = np.arange(T * 7, dtype=np.float32).reshape(T, 7) ** 2
POSE = np.arange(T * 7, dtype=np.float32).reshape(T, 7)

# name -> (trajectory, expected action, expected proprio, expected language).
CASES = {
    'bridge_dataset': (
        {'observation': {**images('image_0', 'image_1', 'image_2', 'image_3'),
                         'state': tf.constant(STATE)},
         'action': tf.concat([floats(6), col([1.0, 0.5, 0.0, 1.0])], 1),
         'language_instruction': instruction()},
        np.concatenate([STATE[1:, :6] - STATE[:-1, :6],
                        [[1.0], [0.0], [0.0]]], 1),
        STATE[:-1], [b'pick'] * 3),
    'fractal20220817_data': (
        {'observation': {**images('image'),
                         'base_pose_tool_reached': tf.constant(POSE),
                         'gripper_closed': col([0, 1, 1, 0]),
                         'natural_language_instruction': instruction()},
         'action': rt1_action(col([0, 1, 0, -1]))},
        rt1_expected([1, 0, 0, 1]),
        np.concatenate([POSE, [[0], [1], [1], [0]]], 1), [b'pick'] * T),
    'kuka': (
        {'observation': {
            **images('image'),
            'clip_function_input/base_pose_tool_reached': zlib_rows(POSE),
            'gripper_closed': zlib_rows([[0], [0], [1], [1]]),
            'natural_language_instruction': instruction()},
         'action': rt1_action(col([0.5, 0, -0.5, 0]))},
        rt1_expected([0, 0, 1, 1]),
        np.concatenate([POSE, [[0], [0], [1], [1]]], 1), [b''] * T),
    'taco_play': (
        {'observation': {**images('rgb_static', 'rgb_gripper', 'depth_static',
                                  'depth_gripper'),
                         'robot_obs': floats(15),
                         'natural_language_instruction': instruction()},
         'action': {'rel_actions_world': tf.concat(
             [floats(6, 0.1), col([-1, 0.5, 1, 2])], 1)}},
        np.concatenate([np.arange(24, dtype=np.float32).reshape(T, 6) * 0.1,
                        [[0], [0.5], [1], [1]]], 1),
        np.arange(60, dtype=np.float32).reshape(T, 15)[:, [0, 1, 2, 3, 4, 5, 7]],
        [b'pick'] * T),
    'jaco_play': (
        {'observation': {**images('image', 'image_wrist'),
                         'end_effector_cartesian_pos': tf.constant(POSE),
                         'natural_language_instruction': instruction()},
         'action': {'world_vector': tf.constant(WV),
                    'gripper_closedness_action': col([0, 0, 0, 0])}},
        np.concatenate([WV, np.zeros_like(WV), np.ones([T, 1])], 1), POSE,
        [b'pick'] * T),
    'berkeley_cable_routing': (
        {'observation': {**images('image', 'top_image', 'wrist45_image',
                                  'wrist225_image'),
                         'robot_state': tf.constant(POSE),
                         'natural_language_instruction': instruction()},
         'action': {'world_vector': tf.constant(WV),
                    'rotation_delta': tf.constant(RD)}},
        rt1_expected([0, 0, 0, 0]), POSE, [b''] * T),
    'roboturk': (
        {'observation': {**images('front_rgb'),
                         'natural_language_instruction': instruction()},
         'action': rt1_action(col([-1, 0.25, 1, 2]))},
        rt1_expected([1, 0.75, 0, 0]), np.zeros([T, 1]), [b''] * T),
    'nyu_door_opening_surprising_effectiveness': (
        {'observation': {**images('image'),
                         'natural_language_instruction': instruction()},
         'action': rt1_action(col([-1, 0, 0, 1]))},
        rt1_expected([1, 1, 1, 0]), np.zeros([T, 1]), [b''] * T),
    'viola': (
        {'observation': {**images('agentview_rgb', 'eye_in_hand_rgb'),
                         'joint_states': tf.constant(POSE),
                         'gripper_states': col([0.1, 0.2, 0.3, 0.4]),
                         'natural_language_instruction': instruction()},
         'action': rt1_action(tf.constant([0, 1, 0.5, -1], tf.float32))},
        rt1_expected([1, 0, 0.5, 1]),
        np.concatenate([POSE, [[0.1], [0.2], [0.3], [0.4]]], 1), [b''] * T),
    'berkeley_autolab_ur5': (
        {'observation': {**images('image', 'hand_image', 'image_with_depth'),
                         'robot_state': floats(15),
                         'natural_language_instruction': instruction()},
         'action': rt1_action(tf.constant([0, 0, 1, 0], tf.float32))},
        rt1_expected([1, 1, 0, 0]),
        np.arange(60, dtype=np.float32).reshape(T, 15)[:, 6:14],
        [b'pick'] * T),
    'toto': (
        {'observation': {**images('image'), 'state': tf.constant(POSE),
                         'natural_language_instruction': instruction()},
         'action': {'world_vector': tf.constant(WV),
                    'rotation_delta': tf.constant(RD),
                    'open_gripper': tf.constant([True, False, False, True])}},
        rt1_expected([1, 0, 0, 1]), POSE, [b''] * T),
    'language_table': (
        {'observation': {**images('rgb'), 'effector_translation': floats(2),
                         'effector_target_translation': floats(2),
                         'instruction': language_codes('push the star')},
         'action': floats(2, 0.5)},
        np.concatenate([np.arange(8).reshape(T, 2) * 0.5, np.zeros([T, 4]),
                        np.ones([T, 1])], 1),
        np.arange(8).reshape(T, 2), [b'push the star'] * T),
    'droid': (
        {'observation': {**images('exterior_image_1_left',
                                  'exterior_image_2_left', 'wrist_image_left'),
                         'cartesian_position': floats(6),
                         'gripper_position': col([0, 0.5, 1, 1]),
                         'joint_position': floats(7)},
         'action_dict': {'cartesian_velocity': floats(6, 0.01),
                         'gripper_position': col([0, 0.25, 1, 0.5]),
                         'joint_velocity': floats(7)},
         'action': floats(8), 'language_instruction': instruction('wipe')},
        np.concatenate([np.arange(24).reshape(T, 6) * 0.01,
                        [[1], [0.75], [0], [0.5]]], 1),
        np.concatenate([np.arange(24).reshape(T, 6), [[0], [0.5], [1], [1]]],
                       1), [b'wipe'] * T),
}


def test_every_registered_dataset_has_a_case():
  assert sorted(CASES) == sorted(oxe.OXE_DATASET_CONFIGS)
  assert sorted(CASES) == sorted(oxe.OXE_STANDARDIZATION_TRANSFORMS)


def run_in_graph(fn, traj):
  return next(iter(tf.data.Dataset.from_tensors(traj).map(fn)))


@pytest.mark.parametrize('name', sorted(CASES))
@pytest.mark.parametrize('mode', ['eager', 'graph'])
def test_standardize(name, mode):
  traj, action, proprio, language = CASES[name]
  fn = oxe.OXE_STANDARDIZATION_TRANSFORMS[name]
  out = fn(traj) if mode == 'eager' else run_in_graph(fn, traj)
  assert out['action'].dtype == tf.float32
  np.testing.assert_allclose(out['action'].numpy(), action, rtol=1e-6)
  assert out['observation']['proprio'].dtype == tf.float32
  np.testing.assert_allclose(out['observation']['proprio'].numpy(), proprio,
                             rtol=1e-6)
  assert out['language_instruction'].numpy().tolist() == language
  config = oxe.OXE_DATASET_CONFIGS[name]
  if config['action_encoding'] == configs.ActionEncoding.EEF_POS:
    assert out['action'].shape[-1] == 7
  named = {**config['image_obs_keys'], **config['depth_obs_keys']}
  for key in filter(None, named.values()):
    assert out['observation'][key].shape[0] == len(language), key


def test_standardize_leaves_its_input_alone():
  traj = CASES['fractal20220817_data'][0]
  oxe.OXE_STANDARDIZATION_TRANSFORMS['fractal20220817_data'](traj)
  assert 'proprio' not in traj['observation']
  assert isinstance(traj['action'], dict)


def test_standardize_names_the_dataset_and_missing_key():
  traj = {'observation': {'image': tf.fill([T], PNG)},
          'action': {'world_vector': tf.constant(WV)}}
  with pytest.raises(KeyError) as error:
    oxe.OXE_STANDARDIZATION_TRANSFORMS['fractal20220817_data'](traj)
  assert error.value.args[0] == (
      "fractal20220817_data: the trajectory has no field "
      "'action/gripper_closedness_action' (its standardize_fn expects the "
      "dataset's public features)")


@pytest.mark.parametrize('values, expected', [
    ([1.0, 0.5, 0.0, 0.3], [1.0, 0.0, 0.0, 0.3]),  # Trailing in-between kept.
    ([0.0, 0.2, 0.8, 1.0], [0.0, 1.0, 1.0, 1.0]),  # Takes the state reached.
    ([0.97, 0.04, 0.05, 0.95], [1.0, 0.0, 0.95, 0.95]),  # Thresholds strict.
    ([1.0], [1.0]),
])
def test_binarize_gripper_actions(values, expected):
  out = standardize.binarize_gripper_actions(tf.constant(values))
  np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize('values, expected', [
    ([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]),  # No command: open throughout.
    ([0.0, 1.0, 0.0, -1.0], [1.0, 0.0, 0.0, 1.0]),
    ([0.0, -1.0, 0.0], [0.0, 1.0, 1.0]),  # First opens: closed before.
    ([0.05, 0.2, -0.05, -0.2], [1.0, 0.0, 0.0, 1.0]),  # |x| <= 0.1: no command.
])
def test_rel2abs_gripper_actions(values, expected):
  out = standardize.rel2abs_gripper_actions(tf.constant(values))
  np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


def test_invert_gripper_actions():
  out = standardize.invert_gripper_actions(tf.constant([0.0, 0.25, 1.0]))
  np.testing.assert_allclose(out.numpy(), [1.0, 0.75, 0.0])


def test_kwargs_of_one_dataset():
  kw = oxe.make_oxe_dataset_kwargs(
      'taco_play', '/data', load_camera_views=('primary', 'wrist'),
      load_depth=True, load_proprio=True, force_recompute_dataset_statistics=True,
      action_proprio_normalization_type='bounds')
  assert kw == {
      'name': 'taco_play', 'data_dir': '/data',
      'image_obs_keys': {'primary': 'rgb_static', 'wrist': 'rgb_gripper'},
      'depth_obs_keys': {'primary': 'depth_static', 'wrist': 'depth_gripper'},
      'action_normalization_mask': [True] * 6 + [False],
      'proprio_obs_key': 'proprio', 'language_key': 'language_instruction',
      'action_proprio_normalization_type': 'bounds',
      'force_recompute_dataset_statistics': True,
      'standardize_fn': {'module': 'rlds_lite.octo.oxe.standardize',
                         'name': 'taco_play', 'args': (), 'kwargs': {}},
  }


def test_kwargs_defaults_and_padding_views():
  kw = oxe.make_oxe_dataset_kwargs('bridge_dataset', '/d',
                                   ('primary', 'wrist'), load_language=False)
  assert kw['image_obs_keys'] == {'primary': 'image_0', 'wrist': None}
  assert 'depth_obs_keys' not in kw and 'proprio_obs_key' not in kw
  assert 'language_key' not in kw
  assert 'force_recompute_dataset_statistics' not in kw
  assert kw['action_proprio_normalization_type'] == 'normal'


@pytest.mark.parametrize('encoding, mask', [
    (configs.ActionEncoding.EEF_POS, [True] * 6 + [False]),
    (configs.ActionEncoding.JOINT_POS, [True] * 7 + [False]),
    (configs.ActionEncoding.JOINT_POS_BIMANUAL,
     [True] * 6 + [False] + [True] * 6 + [False]),
    (configs.ActionEncoding.NAV_2D, [True, True]),
    (configs.ActionEncoding.JOINT_POS_BIMANUAL_NAV,
     [True] * 6 + [False] + [True] * 6 + [False] + [True, True]),
])
def test_normalization_masks(encoding, mask):
  oxe.register_dataset('enc', {
      'image_obs_keys': {'primary': 'image'}, 'depth_obs_keys': {},
      'proprio_encoding': 'NONE' and -1, 'action_encoding': encoding.value},
      lambda t: t, overwrite=True)
  try:
    kw = oxe.make_oxe_dataset_kwargs('enc', '/d')
    assert kw['action_normalization_mask'] == mask
  finally:
    del oxe.OXE_DATASET_CONFIGS['enc'], oxe.OXE_STANDARDIZATION_TRANSFORMS['enc']


@pytest.mark.parametrize('call, kind, message', [
    (lambda: oxe.make_oxe_dataset_kwargs('brige', '/d'), ValueError,
     "unknown dataset 'brige'; known: " + ', '.join(sorted(CASES))),
    (lambda: oxe.make_oxe_dataset_kwargs('kuka', '/d', ('primary', 'left')),
     ValueError, "Cannot load kuka with views ['left'] since they are not "
     "available (views: ['primary', 'secondary', 'wrist'])."),
    (lambda: oxe.make_oxe_dataset_kwargs('kuka', '/d', 'primary'), TypeError,
     "dataset 'kuka': load_camera_views must be a sequence of view names, got "
     "the str 'primary'"),
    (lambda: oxe.make_oxe_dataset_kwargs(
        'kuka', '/d', action_proprio_normalization_type='minmax'), ValueError,
     "dataset 'kuka': action_proprio_normalization_type must be one of "
     "['normal', 'bounds'], got 'minmax'"),
])
def test_kwargs_errors(call, kind, message):
  with pytest.raises(kind) as error:
    call()
  assert str(error.value) == message


def test_named_mix_kwargs_and_weights(caplog):
  with caplog.at_level(logging.WARNING):
    kwargs, weights = oxe.make_oxe_dataset_kwargs_and_weights('rtx_franka', '/d')
  assert [kw['name'] for kw in kwargs] == [n for n, _ in mixes.OXE_NAMED_MIXES['rtx']]
  assert weights == [w for _, w in mixes.OXE_NAMED_MIXES['rtx']]
  assert [r.getMessage() for r in caplog.records] == [
      "Skipping duplicate: ('taco_play', 1.0).",
      "Skipping duplicate: ('berkeley_cable_routing', 1.0).",
      "Skipping duplicate: ('viola', 1.0).",
      "Skipping duplicate: ('toto', 1.0)."]


def test_mix_skips_a_dataset_without_a_view(caplog):
  oxe.register_dataset('two_views', {
      'image_obs_keys': {'primary': 'image', 'left': 'left'},
      'depth_obs_keys': {}, 'proprio_encoding': -1, 'action_encoding': 1},
      lambda t: t)
  try:
    with caplog.at_level(logging.WARNING):
      kwargs, weights = oxe.make_oxe_dataset_kwargs_and_weights(
          [('two_views', 2.0), ('kuka', 1.0)], '/d', ('left',))
  finally:
    del oxe.OXE_DATASET_CONFIGS['two_views']
    del oxe.OXE_STANDARDIZATION_TRANSFORMS['two_views']
  assert [kw['name'] for kw in kwargs] == ['two_views'] and weights == [2.0]
  assert kwargs[0]['image_obs_keys'] == {'left': 'left'}
  assert [r.getMessage() for r in caplog.records] == [
      "Skipping kuka due to error: Cannot load kuka with views ['left'] since "
      "they are not available (views: ['primary', 'secondary', 'wrist'])."]


@pytest.mark.parametrize('mix, message', [
    ('soup', "unknown mixture 'soup'; known: bridge, droid, oxe_magic_soup, "
             'rtx, rtx_franka'),
    ([('kuka', 1.0), ('kukaa', 1.0)],
     "mixture 'data_mix': unknown dataset 'kukaa'; known: "
     + ', '.join(sorted(CASES))),
    ([('kuka', -1.0)], "mixture 'data_mix': entry 0 ('kuka', -1.0) must be "
                       '(registered dataset name, weight >= 0)'),
    ([('kuka',)], "mixture 'data_mix': entry 0 ('kuka',) must be "
                  '(registered dataset name, weight >= 0)'),
])
def test_mix_errors(mix, message):
  with pytest.raises(ValueError) as error:
    oxe.make_oxe_dataset_kwargs_and_weights(mix, '/d')
  assert str(error.value) == message


def test_named_mixes_use_registered_datasets_only():
  for name, pairs in oxe.OXE_NAMED_MIXES.items():
    assert {d for d, _ in pairs} <= set(oxe.OXE_DATASET_CONFIGS), name
  assert dict(oxe.OXE_NAMED_MIXES['oxe_magic_soup'])['language_table'] == 0.1


def my_standardize(traj):
  return {**traj, 'language_instruction': tf.fill([T], 'mine')}


def test_register_dataset_and_mixture_round_trip():
  config = {'image_obs_keys': {'primary': 'cam', 'wrist': None},
            'depth_obs_keys': {'primary': None}, 'proprio_encoding': 3,
            'action_encoding': configs.ActionEncoding.JOINT_POS,
            'filter_functions': ()}
  local = lambda traj: my_standardize(traj)
  oxe.register_dataset('my_robot', config, local)
  try:
    assert oxe.OXE_DATASET_CONFIGS['my_robot']['proprio_encoding'] is (
        configs.ProprioEncoding.JOINT)
    oxe.register_mixture('mine', [('my_robot', 1), ('bridge_dataset', 0.5)])
    kwargs, weights = octo.make_oxe_dataset_kwargs_and_weights(
        'mine', '/d', ('primary', 'wrist'), load_proprio=True)
    assert weights == [1.0, 0.5]
    mine = kwargs[0]
    assert mine['image_obs_keys'] == {'primary': 'cam', 'wrist': None}
    assert mine['action_normalization_mask'] == [True] * 7 + [False]
    assert mine['filter_functions'] == ()
    assert mine['standardize_fn'] is local  # Not importable by name.
    with pytest.raises(ValueError) as error:
      oxe.register_mixture('mine', [('kuka', 1.0)])
    assert str(error.value) == ("mixture 'mine' is already registered; pass "
                                'overwrite=True to replace it')
    oxe.register_mixture('mine', [('kuka', 1.0)], overwrite=True)
    assert oxe.OXE_NAMED_MIXES['mine'] == [('kuka', 1.0)]
  finally:
    del oxe.OXE_DATASET_CONFIGS['my_robot']
    del oxe.OXE_STANDARDIZATION_TRANSFORMS['my_robot']
    oxe.OXE_NAMED_MIXES.pop('mine', None)


GOOD = {'image_obs_keys': {'primary': 'image'}, 'depth_obs_keys': {},
        'proprio_encoding': -1, 'action_encoding': 1}


@pytest.mark.parametrize('name, config, fn, kind, message', [
    ('kuka', GOOD, my_standardize, ValueError,
     "dataset 'kuka' is already registered; pass overwrite=True to replace it"),
    ('', GOOD, my_standardize, TypeError,
     "dataset name must be a non-empty str, got ''"),
    ('x', {**GOOD, 'imgs': {}}, my_standardize, ValueError,
     "dataset 'x': config keys missing [], unknown ['imgs']; required "
     "['image_obs_keys', 'depth_obs_keys', 'proprio_encoding', "
     "'action_encoding'], optional ['filter_functions', 'skip_norm', "
     "'ignore_errors', 'dataset_statistics']"),
    ('x', {k: v for k, v in GOOD.items() if k != 'action_encoding'},
     my_standardize, ValueError,
     "dataset 'x': config keys missing ['action_encoding'], unknown []; "
     "required ['image_obs_keys', 'depth_obs_keys', 'proprio_encoding', "
     "'action_encoding'], optional ['filter_functions', 'skip_norm', "
     "'ignore_errors', 'dataset_statistics']"),
    ('x', {**GOOD, 'action_encoding': 9}, my_standardize, ValueError,
     "dataset 'x': config 'action_encoding' is 9, not one of ['EEF_POS', "
     "'JOINT_POS', 'JOINT_POS_BIMANUAL', 'NAV_2D', 'JOINT_POS_BIMANUAL_NAV']"),
    ('x', {**GOOD, 'image_obs_keys': ['image']}, my_standardize, TypeError,
     "dataset 'x': config 'image_obs_keys' must be a dict of view -> "
     "observation key or None, got list"),
    ('x', {**GOOD, 'depth_obs_keys': {'primary': 3}}, my_standardize,
     TypeError, "dataset 'x': config 'depth_obs_keys' entry 'primary': 3 must "
     'be an observation key (str) or None'),
    ('x', GOOD, 'my_standardize', TypeError,
     "dataset 'x': standardize_fn must be callable, got str"),
    ('x', [], my_standardize, TypeError,
     "dataset 'x': config must be a dict, got list"),
])
def test_register_dataset_refusals(name, config, fn, kind, message):
  with pytest.raises(kind) as error:
    oxe.register_dataset(name, config, fn)
  assert str(error.value) == message
  assert 'x' not in oxe.OXE_DATASET_CONFIGS
  assert oxe.OXE_STANDARDIZATION_TRANSFORMS['kuka'] is standardize.kuka


def test_register_mixture_refusals():
  with pytest.raises(TypeError) as error:
    oxe.register_mixture('m', 'kuka')
  assert str(error.value) == ("mixture 'm': weights must be a list of "
                              '(dataset, weight) pairs, got str')
  with pytest.raises(ValueError) as error:
    oxe.register_mixture('m', [('kuka', True)])
  assert str(error.value) == ("mixture 'm': entry 0 ('kuka', True) must be "
                              '(registered dataset name, weight >= 0)')
  assert 'm' not in oxe.OXE_NAMED_MIXES


def test_the_octo_package_exports_the_registry():
  for name in ('make_oxe_dataset_kwargs', 'make_oxe_dataset_kwargs_and_weights',
               'OXE_DATASET_CONFIGS', 'OXE_NAMED_MIXES',
               'OXE_STANDARDIZATION_TRANSFORMS', 'register_dataset',
               'register_mixture'):
    assert getattr(octo, name) is getattr(oxe, name)
  assert sorted(oxe.__all__) == sorted(
      n for n, m in octo._NAMES.items() if m == 'oxe')
