"""``robot_samples.cut_segments`` against a NumPy reference, named cases."""

import numpy as np
import pytest
import tensorflow as tf

from rlds_lite.pipeline import robot_samples


def reference(frame_steps: np.ndarray, size: int):
  """Segments one by one: distinct frames in order of first use."""
  out = []
  for start in range(0, len(frame_steps), size):
    rows = frame_steps[start:start + size]
    steps = list(dict.fromkeys(rows.reshape(-1).tolist()))
    positions = [[steps.index(s) for s in row] for row in rows.tolist()]
    out.append((steps, positions))
  return out


CASES = {
    # name: (frame steps [N, F], segment size, episode steps)
    'history_2_at_the_start': ([[0, 0], [0, 1], [1, 2], [2, 3]], 2, 4),
    'one_segment': ([[0, 0], [0, 1], [1, 2]], 8, 3),
    'one_step_episode': ([[0, 0]], 4, 1),
    'segment_of_one': ([[0, 0], [0, 1], [1, 2]], 1, 3),
    'uneven_last_segment': ([[0, 1], [1, 2], [2, 3], [3, 4], [4, 4]], 2, 5),
    'goal_frames_out_of_order': ([[0, 0, 5], [0, 1, 3], [1, 2, 5], [2, 3, 3]],
                                 2, 6),
    'strided_history': ([[0, 0], [0, 1], [0, 2], [1, 3]], 3, 4),
    'no_samples': (np.zeros([0, 2], np.int32), 4, 3),
}


@pytest.mark.parametrize('name', sorted(CASES))
def test_cut_segments_matches_the_reference(name):
  frame_steps, size, num_steps = CASES[name]
  frame_steps = np.asarray(frame_steps, np.int32)
  cut = robot_samples.cut_segments(tf.constant(frame_steps), size, num_steps)
  expected = reference(frame_steps, size)
  num_frames = cut['num_frames'].numpy().tolist()
  num_samples = cut['num_samples'].numpy().tolist()
  assert num_frames == [len(steps) for steps, _ in expected]
  assert num_samples == [len(positions) for _, positions in expected]
  width = max(num_frames, default=0)
  assert cut['steps'].shape.as_list() == [len(expected), width]
  assert cut['positions'].shape.as_list() == [len(expected), size,
                                              frame_steps.shape[1]]
  for k, (steps, positions) in enumerate(expected):
    got_steps = cut['steps'][k].numpy().tolist()
    assert got_steps[:num_frames[k]] == steps
    assert got_steps[num_frames[k]:] == [steps[-1]] * (width - len(steps))
    assert cut['positions'][k, :num_samples[k]].numpy().tolist() == positions


def test_cut_segments_decodes_a_frame_shared_by_two_segments_in_both():
  # Sample 2's history reaches back into segment 0: frame 1 is in both.
  cut = robot_samples.cut_segments(tf.constant([[0, 0], [0, 1], [1, 2]]), 2, 3)
  assert cut['steps'].numpy().tolist() == [[0, 1], [1, 2]]
  assert int(tf.reduce_sum(cut['num_frames'])) == 4
