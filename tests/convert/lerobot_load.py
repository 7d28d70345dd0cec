"""Loads a LeRobotDataset with lerobot's own reader; saves every frame as .npz.

Run by test_convert_lerobot_compat.py with the Python of a venv that has
lerobot (``RLDS_LITE_LEROBOT_PYTHON``)::

  python lerobot_load.py ROOT REPO_ID OUT.npz

Frames come from ``LeRobotDataset(repo_id, root=ROOT, video_backend='pyav')``
(``ds[i]`` for every i); images and video frames are turned back from
lerobot's float CHW [0, 1] tensors into uint8 HWC arrays. Also saved: the
tasks (``task``), and ``meta/*`` summaries.
"""

import json
import os
import sys

os.environ.setdefault('HF_HUB_OFFLINE', '1')


def main(root: str, repo_id: str, out: str) -> None:
  import numpy as np  # pylint: disable=g-import-not-at-top
  from lerobot.datasets import lerobot_dataset  # pylint: disable=g-import-not-at-top
  dataset = lerobot_dataset.LeRobotDataset(repo_id, root=root,
                                           video_backend='pyav')
  camera_keys = set(dataset.meta.camera_keys)
  columns = {}
  for i in range(len(dataset)):
    item = dataset[i]
    for key, value in item.items():
      if key in camera_keys:
        value = (value.numpy().transpose(1, 2, 0) * 255).round().astype(
            np.uint8)
      elif hasattr(value, 'numpy'):
        value = value.numpy()
      columns.setdefault(key, []).append(value)
  arrays = {key: np.stack(values) if not isinstance(values[0], str)
            else np.array(values) for key, values in columns.items()}
  arrays['meta/summary'] = np.array(json.dumps({
      'fps': dataset.fps, 'num_episodes': dataset.num_episodes,
      'num_frames': dataset.num_frames,
      'video_keys': dataset.meta.video_keys,
      'image_keys': dataset.meta.image_keys,
      'stats_keys': sorted(dataset.meta.stats),
      'episode_lengths': [int(x) for x in dataset.meta.episodes['length']],
  }))
  np.savez(out, **arrays)


if __name__ == '__main__':
  main(*sys.argv[1:4])
