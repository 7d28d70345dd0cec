"""Tests of the RLDS names, step/episode builders and the package surface."""

import typing

import pytest
import tensorflow as tf

import rlds_lite as rlds
from rlds_lite import rlds_types
from rlds_lite import tfds as rlds_tfds


def test_constants_match_upstream_names():
  assert (rlds.STEPS, rlds.OBSERVATION, rlds.ACTION, rlds.REWARD, rlds.DISCOUNT,
          rlds.IS_FIRST, rlds.IS_LAST, rlds.IS_TERMINAL, rlds.ALIGNMENT) == (
              'steps', 'observation', 'action', 'reward', 'discount',
              'is_first', 'is_last', 'is_terminal', 'alignment')
  assert rlds.CORE_STEP_FIELDS == frozenset(
      ['observation', 'action', 'reward', 'discount', 'is_first', 'is_last',
       'is_terminal'])
  assert rlds.MANDATORY_STEP_FIELDS == frozenset(['is_first', 'is_last'])
  assert (rlds.EPISODE_ID, rlds.AGENT_ID, rlds.ENVIRONMENT_CONFIG,
          rlds.EXPERIMENT_ID, rlds.INVALID) == (
              'episode_id', 'agent_id', 'environment_config', 'experiment_id',
              'invalid')
  assert rlds.metadata.EPISODE_ID == 'episode_id'
  assert rlds.Step is rlds.BatchedStep and rlds.Episode is rlds.BatchedEpisode


# Upstream's public names (google-research/rlds: rlds/__init__.py and the
# __init__.py of rlds/tfds, rlds/metadata and rlds/transformations), each of
# which RLDS code may use.
UPSTREAM_NAMES = {
    rlds: 'ACTION ALIGNMENT BatchedEpisode BatchedStep build_episode '
          'build_step CORE_STEP_FIELDS DISCOUNT Episode EpisodeFilterFn '
          'IS_FIRST IS_LAST IS_TERMINAL metadata OBSERVATION REWARD Step '
          'StepFilterFn StepMapFn STEPS StepsToStepsFn transformations',
    rlds_types: 'is_valid_rlds_dataset',
    rlds.transformations:
        'add_alignment_to_step AlignmentType shift_keys concat_if_terminal '
        'concatenate mean_and_std sar_fields_mask truncate_after_condition '
        'batch BATCH_AUTO_TUNE apply_nested_steps episode_length final_step '
        'map_nested_steps map_steps sum_dataset sum_nested_steps pattern_map '
        'pattern_map_from_transform step_spec uniform_from_spec '
        'zero_dataset_like zeros_from_spec',
    rlds.metadata: 'AGENT_ID ENVIRONMENT_CONFIG EPISODE_ID EXPERIMENT_ID '
                   'INVALID',
    rlds_tfds: 'extract_feature_from_data generate_config_from_spec',
}


@pytest.mark.parametrize('module', UPSTREAM_NAMES, ids=lambda m: m.__name__)
def test_every_upstream_name_is_there(module):
  missing = [name for name in UPSTREAM_NAMES[module].split()
             if not hasattr(module, name)]
  assert not missing


def test_function_types_are_upstreams():
  assert rlds.StepFilterFn == typing.Callable[[rlds.Step], bool]
  assert rlds.EpisodeFilterFn == typing.Callable[[rlds.Episode], bool]
  assert rlds.StepsToStepsFn == typing.Callable[[tf.data.Dataset],
                                                tf.data.Dataset]
  assert rlds.StepMapFn == typing.Callable[[rlds.Step], rlds.Step]


def test_is_valid_rlds_dataset_at_upstreams_place():
  steps = {'is_first': [True, False], 'is_last': [False, True]}
  good = tf.data.Dataset.from_tensors(
      {'steps': tf.data.Dataset.from_tensor_slices(steps)})
  assert rlds_types.is_valid_rlds_dataset(good)
  assert not rlds_types.is_valid_rlds_dataset(tf.data.Dataset.range(3))


@pytest.mark.parametrize('kwargs, expected', [
    (dict(observation=1, action=2, reward=3.0, discount=1.0, is_terminal=False,
          is_first=True, is_last=False),
     {'observation': 1, 'action': 2, 'reward': 3.0, 'discount': 1.0,
      'is_terminal': False, 'is_first': True, 'is_last': False}),
    (dict(observation=None, action=None, reward=None, discount=None,
          is_terminal=None, is_first=True, is_last=True),
     {'is_first': True, 'is_last': True}),
    (dict(observation=[1, 2], action=None, reward=None, discount=None,
          is_terminal=[False, True], is_first=[True, False],
          is_last=[False, True], metadata={'t': [0, 1]}),
     {'observation': [1, 2], 'is_terminal': [False, True],
      'is_first': [True, False], 'is_last': [False, True], 't': [0, 1]}),
    (dict(observation=0, action=0, reward=0, discount=0, is_terminal=True,
          is_first=False, is_last=True),
     {'observation': 0, 'action': 0, 'reward': 0, 'discount': 0,
      'is_terminal': True, 'is_first': False, 'is_last': True}),
], ids=['full', 'flags_only', 'batched_with_metadata', 'zeros_kept'])
def test_build_step(kwargs, expected):
  assert rlds.build_step(**kwargs) == expected


@pytest.mark.parametrize('key', ['is_first', 'observation', 'discount'])
def test_build_step_rejects_metadata_named_like_a_field(key):
  # Upstream RLDS raises 'Invalid Step Metadata: it contains step key <key>';
  # code matching that text keeps working.
  with pytest.raises(ValueError) as error:
    rlds.build_step(None, None, None, None, None, True, True, {key: 1})
  assert str(error.value) == (f'Invalid Step Metadata: it contains step key '
                              f"{key} ('{key}' is a step field; rename it).")


def test_build_episode():
  steps = tf.data.Dataset.range(2)
  episode = rlds.build_episode(steps, {'episode_id': 3})
  assert episode == {'steps': steps, 'episode_id': 3}
  assert rlds.build_episode([1]) == {'steps': [1]}
  with pytest.raises(ValueError) as error:  # Upstream RLDS's message.
    rlds.build_episode(steps, {'steps': 1})
  assert str(error.value) == (
      'Invalid Episode Metadata: it contains an episode key (steps)')


def test_build_step_in_a_graph_builds_a_dataset_of_steps():
  ds = tf.data.Dataset.range(3).map(lambda i: rlds_types.build_step(
      observation=i, action=None, reward=tf.cast(i, tf.float32), discount=None,
      is_terminal=None, is_first=tf.equal(i, 0), is_last=tf.equal(i, 2)))
  assert [s['is_last'] for s in ds.as_numpy_iterator()] == [False, False, True]


def test_no_private_tensorflow_imports():
  import pathlib  # pylint: disable=g-import-not-at-top
  package = pathlib.Path(rlds.__file__).parent
  offenders = [str(p) for p in package.rglob('*.py')
               if 'tensorflow.python' in p.read_text() or 'import reverb' in p.read_text()]
  assert offenders == []
