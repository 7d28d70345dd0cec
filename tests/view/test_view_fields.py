"""rlds_lite.view.fields: which fields are cameras, language and plots."""

import pytest
import tensorflow as tf

from rlds_lite.view import fields


def spec(shape, dtype):
  return tf.TensorSpec(shape, dtype)


CAMERA_CASES = {
    'rgb uint8': (spec([8, 8, 3], tf.uint8), True),
    'rgba uint8': (spec([8, 8, 4], tf.uint8), True),
    'gray uint8 with channel': (spec([8, 8, 1], tf.uint8), True),
    'gray uint8 without channel (a map)': (spec([8, 8], tf.uint8), False),
    'float image (depth)': (spec([8, 8, 1], tf.float32), False),
    'five channels': (spec([8, 8, 5], tf.uint8), False),
    'vector': (spec([3], tf.uint8), False),
}


@pytest.mark.parametrize('leaf, is_camera', CAMERA_CASES.values(),
                         ids=CAMERA_CASES.keys())
def test_camera_fields(leaf, is_camera):
  step = {'observation': {'x': leaf}, 'reward': spec([], tf.float32)}
  assert fields.camera_fields(step) == (['observation/x'] if is_camera else [])


def test_language_fields():
  step = {'language_instruction': spec([], tf.string),
          'observation': {'natural_language_instruction': spec([], tf.string),
                          'natural_language_embedding': spec([512], tf.float32)},
          'task': spec([], tf.string)}
  assert fields.language_fields(step) == [
      'language_instruction', 'observation/natural_language_instruction']


def test_plotted_fields_panels_and_left_out():
  step = {'action': {'arm': spec([7], tf.float32), 'gripper': spec([], tf.int32)},
          'observation': {'image': spec([8, 8, 3], tf.uint8),
                          'joints': spec([7], tf.float64),
                          'depth': spec([8, 8], tf.float32),
                          'points': spec([None, 3], tf.float32)},
          'reward': spec([], tf.float32), 'discount': spec([], tf.float32),
          'is_first': spec([], tf.bool), 'is_last': spec([], tf.bool),
          'is_terminal': spec([], tf.bool), 'success': spec([], tf.bool),
          'language_instruction': spec([], tf.string)}
  panels, left_out = fields.plotted_fields(step)
  assert panels == {'action': ['action/arm', 'action/gripper'],
                    'state': ['observation/joints'], 'reward': ['reward'],
                    'discount': ['discount'], 'other': ['success']}
  assert list(panels) == ['action', 'state', 'reward', 'discount', 'other']
  assert left_out == {
      'observation/depth': '64 elements per step (more than 32)',
      'observation/points': 'shape varies ((None, 3))'}
