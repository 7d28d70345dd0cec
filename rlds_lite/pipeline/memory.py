"""How much memory a pipeline of a TFDS split would hold: ``shuffled_steps`` or ``robot_samples_dataset``.

Example:
  >>> from rlds_lite import synthetic
  >>> path = synthetic.dataset(40, seed=0)
  >>> estimate_memory(path, batch_size=8, memory_budget='20MB').total < 20e6
  True
"""

from typing import Any, Dict, Optional, Union

from rlds_lite import op_context
from rlds_lite.pipeline import robot_memory
from rlds_lite.pipeline import robot_samples as robot_lib
from rlds_lite.pipeline import shuffling

__all__ = ['estimate_memory']


def estimate_memory(name_or_dir: Any, split: Optional[str] = None, *,
                    batch_size: int,
                    robot_samples: Optional[Dict[str, Any]] = None,
                    **knobs: Any
                    ) -> Union[shuffling.ShuffleMemory, robot_memory.RobotMemory]:
  """The memory ``shuffled_steps`` (or, with ``robot_samples``, ``robot_samples_dataset``) would hold.

  Args:
    name_or_dir: a `rlds_lite.Source`, a TFDS name or a dataset directory.
    split: the split (default: the Source's, or ``'train'``).
    batch_size: samples per batch.
    robot_samples: ``robot_samples_dataset``'s sample arguments
      (``dict(history=2, action_chunk=4, image_size=...)``): the result is
      the ``RobotMemory`` of its plan (``plan_robot_samples``).
    **knobs: ``shuffling.estimate_memory``'s keywords (``knobs=ShuffleKnobs(...)``,
      ``memory_budget``, ``fields``, ``num_steps``), or with ``robot_samples``
      ``memory_budget`` and ``num_steps``.

  Example:
    >>> import tempfile
    >>> from rlds_lite import synthetic
    >>> cameras = synthetic.camera_dataset(tempfile.mkdtemp(), num_episodes=4,
    ...                                    length=10, cameras={'image': (64, 64)})
    >>> estimate_memory(cameras, batch_size=8,
    ...                 robot_samples=dict(history=2)).step_bytes   # 64 * 64 * 3
    12288
  """
  if robot_samples is None:
    return shuffling.estimate_memory(name_or_dir, split,
                                     batch_size=batch_size, **knobs)
  with op_context.named('estimate_memory'):
    kind, frames = robot_lib.kind_and_frames(robot_samples)
  return robot_lib.plan_robot_samples(name_or_dir, kind, batch_size,
                                      frames=frames, split=split,
                                      **knobs).memory
