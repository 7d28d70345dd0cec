"""Tests of rlds_lite.pipeline.robot_memory (plans, estimates) and spread_order."""

import hypothesis
from hypothesis import strategies as st
import numpy as np
import pytest
import tensorflow as tf

from rlds_lite.pipeline import pools
from rlds_lite.pipeline import robot_memory as rm
from rlds_lite.sample_kinds import RobotSamples

SIZES = rm.Sizes(step_bytes=250_000, episode_bytes=3_000_000,
                 mean_episode_steps=120.0, num_episodes=48,
                 sample_bytes=500_000, frames_per_sample=2.0)
KWARGS = dict(batch_size=64, prefetch=2)
KIND = RobotSamples(history=2)
REACHING = RobotSamples(history=4, history_stride=30)
"""A history reaching 90 steps back: every segment decodes ~90 frames more."""


def estimate(decode, segments, pool, open_episodes, sizes=SIZES, kind=KIND):
  return rm.estimate(rm.DecodePlan(decode, segments, pool, open_episodes, None),
                     sizes, kind, **KWARGS)


def test_estimate_formula():
  memory = estimate('per_episode', 16, 48, 48)
  assert memory.pools == 2 * 48 * 17 * 250_000
  assert memory.open_episodes == 1.5 * 48 * 3_000_000
  assert memory.batches == (2 + 2) * 64 * 500_000
  assert memory.runtime == int(0.25 * (memory.pools + memory.open_episodes +
                                        memory.batches) + 32 * 3_000_000)
  assert memory.total == (memory.pools + memory.open_episodes + memory.batches +
                          memory.runtime)
  whole = estimate('per_episode', None, 48, 1)
  assert whole.pools == 2 * 48 * 120 * 250_000
  after = estimate('after_sampling', None, 48, 1)
  assert after.pools == 2 * 48 * 3_000_000
  assert after.batches == (2 + 2 * 2) * 64 * 500_000   # decoded, stacked
  goals = estimate('per_episode', 16, 48, 48,
                   kind=RobotSamples(history=2, goal='future'))
  assert goals.pools == 2 * 48 * (17 + 16) * 250_000


# budget -> (decode, segment_steps, pool): the largest segments of at least
# CHEAP_SEGMENT_STEPS (4) that fit with the whole pool (48); else those with
# the largest pool that fits down to 3/4 of it (36); else segments of 2, each
# with the largest pool that fits. Decoding after sampling needs more here
# than segments of 2. (Estimates, MB: whole episodes 3,862 with 48 pooled;
# segments of 64 2,476; of 16 1,036; of 8 796; of 4 676, 622 with 36
# pooled; of 2 616, 577 with 36.)
@pytest.mark.parametrize('budget,expected', [
    (10**11, ('per_episode', None, 48)),
    (3.5 * 10**9, ('per_episode', 64, 48)),
    (1.1 * 10**9, ('per_episode', 16, 48)),
    (10**9, ('per_episode', 8, 48)),
    (7 * 10**8, ('per_episode', 4, 48)),
    (6.5 * 10**8, ('per_episode', 4, 39)),
    (6.2 * 10**8, ('per_episode', 2, 48)),
    (6 * 10**8, ('per_episode', 2, 39)),
], ids=['whole', 'segments_64', 'segments_16',
        'segments_8_before_a_smaller_pool', 'segments_4',
        'segments_4_smaller_pool', 'segments_2', 'segments_2_smaller_pool'])
def test_pick_table(budget, expected):
  plan = rm.pick(budget, SIZES, KIND, **KWARGS)
  assert (plan.decode, plan.segment_steps, plan.pool_episodes) == expected
  assert plan.memory.total <= budget
  segmented = expected[1] is not None
  open_episodes = min(48, -(-5 * expected[2] // 4)) if segmented else 1
  assert plan.open_episodes == open_episodes   # 1.25 x the pool, segmented
  if expected[2] < 48:   # One more pooled episode would not fit.
    bigger = estimate(expected[0], expected[1], expected[2] + 1,
                      min(48, -(-5 * (expected[2] + 1) // 4))
                      if segmented else 1)
    assert bigger.total > budget


def test_pick_falls_back_to_after_sampling_then_errors():
  sizes = SIZES._replace(sample_bytes=1_000_000, frames_per_sample=4.0)
  assert rm.pick(3 * 10**9, sizes, REACHING, **KWARGS)[:3] == (
      'per_episode', 8, 37)
  plan = rm.pick(10**9, sizes, REACHING, **KWARGS)
  assert plan[:3] == ('after_sampling', None, 48)
  assert rm.pick(9 * 10**8, sizes, REACHING, **KWARGS)[:3] == (
      'after_sampling', None, 42)
  with pytest.raises(ValueError, match='is too small for 36 pooled episodes'):
    rm.pick(8 * 10**8, sizes, REACHING, **KWARGS)
  with pytest.raises(ValueError, match='is too small'):
    rm.pick(5.5 * 10**8, SIZES, KIND, **KWARGS)   # Below segments of 2.


def test_given_choices_are_kept():
  plan = rm.pick(1, SIZES, KIND, decode='after_sampling', **KWARGS)
  assert plan.decode == 'after_sampling'   # Reported, not checked.
  plan = rm.pick(None, SIZES, KIND, segment_steps=8, pool_episodes=12,
                 **KWARGS)
  assert plan[:4] == ('per_episode', 8, 12, 15)
  default = rm.pick(10**11, SIZES._replace(num_episodes=10), KIND, **KWARGS)
  assert default.pool_episodes == 10


def test_reprs():
  plan = rm.pick(6.5 * 10**8, SIZES, KIND, **KWARGS)
  assert repr(plan).startswith(
      "DecodePlan(decode='per_episode', segments of 4 samples, 39 episodes "
      'pooled, 48 open; RobotMemory(total=647.9 MB: pools=97.5 MB, '
      'open_episodes=216.0 MB, batches=128.0 MB, runtime=206.4 MB; ')
  assert 'decoded step 250.0 KB, encoded episode 3.0 MB (120.0 steps)' in repr(
      plan.memory)
  after = rm.DecodePlan('after_sampling', None, 8, 1, None)
  assert repr(after) == ("DecodePlan(decode='after_sampling', 8 encoded "
                         'episodes pooled)')


@hypothesis.given(budget=st.integers(5 * 10**8, 4 * 10**9),
                  history=st.integers(1, 4), stride=st.integers(1, 20))
def test_pick_order_holds_for_any_budget(budget, history, stride):
  # The rule of pick: the whole pool with segments of at least 4 (or whole
  # episodes) before any smaller pool; those before segments of 2 or
  # decoding after sampling; the plan taken always fits.
  kind = RobotSamples(history=history, history_stride=stride)
  try:
    plan = rm.pick(budget, SIZES, kind, **KWARGS)
  except ValueError:
    smallest = estimate('per_episode', 2, 36, 45, kind=kind)
    after = estimate('after_sampling', None, 36, 1, kind=kind)
    assert min(smallest.total, after.total) > budget
    return
  assert plan.memory.total <= budget

  def fits(segments, pool):
    open_episodes = min(48, -(-5 * pool // 4)) if segments else 1
    return estimate('per_episode', segments, pool, open_episodes,
                    kind=kind).total <= budget

  cheap = [None, 64, 32, 16, 8, 4]
  cheap_plan = plan.decode == 'per_episode' and plan.segment_steps in cheap
  if not (cheap_plan and plan.pool_episodes == 48):
    assert not any(fits(s, 48) for s in cheap)
  if not cheap_plan:
    assert not any(fits(s, 36) for s in cheap)
  if cheap_plan:   # No larger segments with the same or a larger pool.
    larger = cheap[:cheap.index(plan.segment_steps)]
    assert not any(fits(s, p) for s in larger
                   for p in range(plan.pool_episodes, 49))


@hypothesis.given(counts=st.lists(st.integers(0, 6), min_size=1, max_size=7),
                  seed=st.integers(0, 1000))
def test_spread_order_deals_episodes_round_robin(counts, seed):
  order = pools.spread_order(tf.constant(counts), tf.constant([seed, 1])).numpy()
  episode = np.repeat(np.arange(len(counts)), counts)
  assert sorted(order.tolist()) == list(range(sum(counts)))
  dealt = episode[order]
  # Round r holds every episode with more than r samples, once each.
  start = 0
  for r in range(max(counts)):
    members = sorted(e for e, c in enumerate(counts) if c > r)
    assert sorted(dealt[start:start + len(members)].tolist()) == members
    start += len(members)


@pytest.mark.parametrize('sample_bytes, expected_pool, logged', [
    # 36 pooled episodes (3/4 of 48) need more than 1 GiB after sampling,
    # fewer fit: the default budget plans for them (a given one refuses).
    (1_500_000, 33, 'holds 33 pooled episodes, not 36'),
    # Even one pooled episode needs more: the smallest plan, said so.
    (3_000_000, 1, 'holds no plan: the smallest needs about'),
], ids=['fewer-pooled', 'nothing-fits'])
def test_the_default_budget_always_finds_a_plan(caplog, sample_bytes,
                                                expected_pool, logged):
  sizes = SIZES._replace(sample_bytes=sample_bytes, frames_per_sample=4.0)
  with caplog.at_level('WARNING', logger='rlds_lite'):
    plan = rm.pick(None, sizes, REACHING, **KWARGS)
  assert plan[:3] == ('after_sampling', None, expected_pool)
  assert [r.getMessage().split('; ')[0] for r in caplog.records] == [
      f'robot_samples_dataset: the default memory_budget (1.1 GB) {logged}'
      + ('' if expected_pool > 1 else
         f' {rm.human_bytes(plan.memory.total)} (1 pooled episode)')]
  if expected_pool > 1:
    assert plan.memory.total <= rm.DEFAULT_MEMORY_BUDGET
    bigger = estimate('after_sampling', None, expected_pool + 1, 1, sizes,
                      REACHING)
    assert bigger.total > rm.DEFAULT_MEMORY_BUDGET
  with pytest.raises(ValueError, match='is too small for 36 pooled episodes'):
    rm.pick(rm.DEFAULT_MEMORY_BUDGET, sizes, REACHING, **KWARGS)   # Given: refused.


def test_the_default_budget_plans_for_noisy_camera_frames(caplog):
  # bench_images.py --frames noisy: 48 episodes x 120 steps, 256x256 +
  # 128x128 JPEG at q95 with a real camera's entropy (439 MB, 9.1 MB per
  # episode): no segments fit 1 GiB (48 open episodes alone are estimated
  # 1.5 * 48 * E = 658 MB); the default call still plans, after sampling,
  # with the pool that fits (a given budget refuses, as before).
  sizes = rm.Sizes(step_bytes=245_760, episode_bytes=9_144_462,
                   mean_episode_steps=120.0, num_episodes=48,
                   sample_bytes=2 * 245_760 + 330, frames_per_sample=2.0)
  with caplog.at_level('WARNING', logger='rlds_lite'):
    plan = rm.pick(None, sizes, KIND, **KWARGS)
  assert plan[:4] == ('after_sampling', None, 23, 1)
  assert plan.memory.total <= rm.DEFAULT_MEMORY_BUDGET
  assert [r.getMessage().split('; ')[0] for r in caplog.records] == [
      'robot_samples_dataset: the default memory_budget (1.1 GB) holds 23 '
      'pooled episodes, not 36']
  assert rm.pick(3 << 30, sizes, KIND, **KWARGS)[:4] == (
      'per_episode', 64, 48, 48)
  with pytest.raises(ValueError, match='is too small for 36 pooled episodes'):
    rm.pick(rm.DEFAULT_MEMORY_BUDGET, sizes, KIND, **KWARGS)
