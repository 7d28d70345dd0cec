"""``robot_carry.plan_carry`` against a NumPy reference, named cases.

The reference cuts segments one by one (each segment's distinct frames in
order of first use), then lets every segment whose predecessor comes out
before it (a rotation of the time order) import the frames it shares with
that predecessor, at most ``width`` of them; the rest it decodes itself.
"""

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite.pipeline import robot_carry
from rlds_lite.pipeline import robot_samples


def reference(frame_steps: np.ndarray, size: int, start: int, width: int):
  """Per segment (time order): (imports, own, each sample's frame steps)."""
  segments = []
  for first in range(0, len(frame_steps), size):
    rows = frame_steps[first:first + size]
    segments.append((list(dict.fromkeys(rows.reshape(-1).tolist())),
                     rows.tolist()))
  out = []
  for k, (frames, rows) in enumerate(segments):
    imports = []
    if k > 0 and k != start:
      previous = segments[k - 1][0]
      imports = [s for s in frames if s in previous][:width]
    own = [s for s in frames if s not in imports]
    out.append((imports, own, rows))
  return out


CASES = {
    # name: (frame steps [N, F], segment size, rotation start, width)
    'history_2_at_the_start': ([[0, 0], [0, 1], [1, 2], [2, 3]], 2, 0, 1),
    'rotation_starts_mid_episode': ([[0, 0], [0, 1], [1, 2], [2, 3], [3, 4],
                                     [4, 5]], 2, 1, 1),
    'rotation_starts_at_the_last': ([[0, 0], [0, 1], [1, 2], [2, 3]], 2, 1, 1),
    'one_segment': ([[0, 0], [0, 1], [1, 2]], 8, 0, 1),
    'one_step_episode': ([[0, 0]], 4, 0, 1),
    # History 3 in segments of one: a segment passes on a frame it imported.
    'segments_of_one_history_3': ([[0, 0, 0], [0, 0, 1], [0, 1, 2],
                                   [1, 2, 3]], 1, 0, 2),
    'uneven_last_segment': ([[0, 1], [1, 2], [2, 3], [3, 4], [4, 4]], 2, 0, 1),
    # A goal frame shared too: only `width` shared frames are imported.
    'goal_frames_past_the_width': ([[0, 0, 5], [0, 1, 5], [1, 2, 5],
                                    [2, 3, 5]], 2, 0, 1),
    'strided_history': ([[0, 0], [0, 2], [1, 3], [2, 4]], 2, 0, 2),
    'no_samples': (np.zeros([0, 2], np.int32), 4, 0, 1),
}


def resolve(codes, imports, own):
  """Frame steps of codes (own ``j`` -> ``j``, import slot ``i`` -> negative)."""
  full = imports + own
  return [full[c + len(imports)] if c < 0 else own[c] for c in codes]


@pytest.mark.parametrize('name', sorted(CASES))
def test_plan_carry_matches_the_reference(name):
  frame_steps, size, start, width = CASES[name]
  frame_steps = np.asarray(frame_steps, np.int32)
  num_steps = int(frame_steps.max(initial=0)) + 1
  cut = robot_samples.cut_segments(tf.constant(frame_steps), size, num_steps)
  num = int(tf.shape(cut['num_frames'])[0])
  order = (start + np.arange(num)) % max(num, 1)
  plan = tf.nest.map_structure(lambda x: x.numpy(), robot_carry.plan_carry(
      cut['steps'], cut['num_frames'], cut['positions'], tf.constant(order),
      width))
  expected = reference(frame_steps, size, start, width)
  assert plan['num_imports'].tolist() == [len(i) for i, _, _ in expected]
  assert plan['num_own'].tolist() == [len(o) for _, o, _ in expected]
  num_samples = cut['num_samples'].numpy()
  for k, (imports, own, rows) in enumerate(expected):
    assert plan['import_steps'][k, :len(imports)].tolist() == imports
    assert plan['own_steps'][k, :len(own)].tolist() == own
    for row, codes in zip(rows, plan['positions'][k, :num_samples[k]]):
      assert resolve(codes.tolist(), imports, own) == row
    # What k exports is what k + 1 imports, as codes in k's frames.
    successor = expected[k + 1][0] if k + 1 < len(expected) else []
    assert plan['num_exports'][k] == len(successor)
    exports = plan['exports'][k, :len(successor)].tolist()
    assert resolve(exports, imports, own) == successor


def test_each_frame_decoded_once_but_at_the_rotation_start():
  # 8 samples, history 2, segments of 2, rotation starting at segment 2:
  # only segment 2 decodes the frame it shares with segment 1.
  steps = np.array([[max(t - 1, 0), t] for t in range(8)], np.int32)
  cut = robot_samples.cut_segments(tf.constant(steps), 2, 8)
  plan = robot_carry.plan_carry(cut['steps'], cut['num_frames'],
                                cut['positions'], tf.constant([2, 3, 0, 1]), 1)
  assert int(tf.reduce_sum(cut['num_frames'])) == 11   # Without the carry.
  assert plan['num_own'].numpy().tolist() == [2, 2, 3, 2]
  assert int(tf.reduce_sum(plan['num_own'])) == 9


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_rotation_order_is_a_rotation(seed):
  order = robot_carry.rotation_order(7, tf.constant([seed, 5])).numpy()
  assert sorted(order.tolist()) == list(range(7))
  assert np.all(np.diff(order) % 7 == 1)
  assert robot_carry.rotation_order(0, tf.constant([seed, 5])).shape == [0]
