"""bench_replay.py's TorchRL worker: run by the TorchRL venv's Python (torch, tensordict, torchrl 0.14).

One ``LazyTensorStorage`` per workload, shared by a uniform (``RandomSampler``),
a prioritized (``PrioritizedSampler``) and slice buffers (``SliceSampler``,
``slice_len=8``, ``strict_length=True``: with ``traj_key='episode'`` and
``cache_values`` on or off, and with ``end_key='is_last'``), all
``TensorDictReplayBuffer`` with ``batch_size=256``. Steps carry an int64
``episode`` id (the trajectory key) beside the RLDS fields.
"""

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import replay_workloads as rw  # pylint: disable=g-import-not-at-top


class TorchRL:
  """TorchRL's buffers on one LazyTensorStorage."""

  def __init__(self, workload: dict, config: dict):
    del config
    import torch  # pylint: disable=g-import-not-at-top
    from tensordict import TensorDict  # pylint: disable=g-import-not-at-top
    from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer  # pylint: disable=g-import-not-at-top
    from torchrl.data.replay_buffers import samplers  # pylint: disable=g-import-not-at-top
    torch.set_num_threads(1)
    self.torch = torch
    self.w = w = workload
    self.pool = [TensorDict({k: torch.from_numpy(v) for k, v in steps.items()},
                            batch_size=[w['episode_len']]) for steps in rw.episode_pool(w)]
    for td in self.pool:
      td['episode'] = torch.zeros([w['episode_len']], dtype=torch.int64)
    self.baseline = rw.rss_bytes()   # After the episodes to insert are made.
    self.next_episode = 0
    self.storage = LazyTensorStorage(w['capacity'])
    batch = rw.BATCH

    def buffer(sampler):
      return TensorDictReplayBuffer(storage=self.storage, sampler=sampler, batch_size=batch)

    self.uniform = buffer(samplers.RandomSampler())
    self.prioritized = buffer(samplers.PrioritizedSampler(w['capacity'], alpha=0.6, beta=0.4))
    self.slices = buffer(samplers.SliceSampler(slice_len=rw.SLICE_LEN, traj_key='episode',
                                               strict_length=True, cache_values=True))
    self.slices_nocache = buffer(samplers.SliceSampler(
        slice_len=rw.SLICE_LEN, traj_key='episode', strict_length=True, cache_values=False))
    self.slices_endkey = buffer(samplers.SliceSampler(
        slice_len=rw.SLICE_LEN, end_key='is_last', strict_length=True, cache_values=True))
    start = time.perf_counter()
    self._extend(self.prioritized, w['capacity'])
    self.setup_info = {'fill_count': w['capacity'],
                       'fill_seconds': time.perf_counter() - start}
    self.priorities = torch.from_numpy(np.random.default_rng(0).uniform(0.1, 2.0, batch).astype(np.float32))
    self.steps = [self.pool[0][t] for t in range(w['episode_len'])]
    self.cases = {
        'insert': lambda: self._timed_extend(self.uniform),
        'insert_prioritized': lambda: self._timed_extend(self.prioritized),
        'insert_slices': lambda: self._timed_extend(self.slices),
        'add_one': self._add_one,
        'uniform': lambda: self._sampling(self.uniform.sample),
        'prioritized': lambda: self._sampling(self._prioritized_step),
        'slices': lambda: self._sampling(self.slices.sample),
        'slices_nocache': lambda: self._sampling(self.slices_nocache.sample),
        'slices_endkey': lambda: self._sampling(self.slices_endkey.sample),
    }

  def _extend(self, buffer, steps: int) -> None:
    for i in range(steps // self.w['episode_len']):
      td = self.pool[i % len(self.pool)]
      td['episode'].fill_(self.next_episode)
      self.next_episode += 1
      buffer.extend(td)

  def _timed_extend(self, buffer):
    start = time.perf_counter()
    self._extend(buffer, self.w['insert'])
    return self.w['insert'], time.perf_counter() - start

  def _add_one(self):
    n = self.w['add_one']
    start = time.perf_counter()
    for i in range(n):
      self.uniform.add(self.steps[i % len(self.steps)])
    return n, time.perf_counter() - start

  def _prioritized_step(self):
    td = self.prioritized.sample()
    self.prioritized.update_priority(td['index'], self.priorities)

  def _sampling(self, step):
    step()   # Warm-up (and the slice samplers' caches).
    return rw.timed(step)

  def memory(self):
    rss = rw.rss_bytes()
    held = len(self.storage)
    stored = self.storage._storage  # pylint: disable=protected-access
    return {'storage_bytes': int(stored.bytes()), 'held_steps': held,
            'raw_bytes': held * rw.raw_bytes_per_step(self.w),
            'rss_growth': rss['RssAnon'] - self.baseline['RssAnon'], 'rss': rss}


if __name__ == '__main__':
  rw.serve(TorchRL)
