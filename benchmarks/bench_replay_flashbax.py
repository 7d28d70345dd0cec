"""bench_replay.py's flashbax worker: run by a venv with ``flashbax`` (JAX on the CPU).

flashbax buffers are pure functions over a state, jitted here (``add`` with
the state donated). Where it applies: ``make_item_buffer`` (uniform steps),
``make_prioritised_item_buffer`` (priority exponent 0.6; it gives sample
probabilities but no importance weights: those are computed here as
``(p / p_min)**-0.4`` over the batch), ``make_trajectory_buffer``
(``sample_sequence_length=8, period=1``: its sequences cross episode
boundaries, flashbax knows no episodes). Each keeps its own arrays, so the
worker holds one buffer at a time, filling it (untimed) when a case needs it;
no ``add_one``: flashbax's ``add`` takes a whole jitted update of the state.
"""

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import replay_workloads as rw  # pylint: disable=g-import-not-at-top


class Flashbax:
  """flashbax's item, prioritised item and trajectory buffers, one at a time."""

  def __init__(self, workload: dict, config: dict):
    del config
    import jax  # pylint: disable=g-import-not-at-top
    import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
    import flashbax as fbx  # pylint: disable=g-import-not-at-top
    self.jax, self.jnp, self.fbx = jax, jnp, fbx
    self.w = w = workload
    self.pool = [{k: jnp.asarray(v) for k, v in steps.items()} for steps in rw.episode_pool(w)]
    self.baseline = rw.rss_bytes()
    self.key = jax.random.PRNGKey(0)
    self.priorities = jnp.asarray(np.random.default_rng(0).uniform(0.1, 2.0, rw.BATCH),
                                  jnp.float32)
    self.kind, self.buffer, self.state = None, None, None
    start = time.perf_counter()
    self._use('item')
    self.setup_info = {'fill_count': w['capacity'], 'fill_seconds': time.perf_counter() - start}
    self.cases = {
        'insert': lambda: self._timed_extend('item'),
        'insert_prioritized': lambda: self._timed_extend('prioritized'),
        'insert_slices': lambda: self._timed_extend('slices'),
        'uniform': lambda: self._sampling('item', self._sample),
        'prioritized': lambda: self._sampling('prioritized', self._prioritized_step),
        'slices': lambda: self._sampling('slices', self._sample),
    }

  def _make(self, kind):
    fbx, w, batch = self.fbx, self.w, rw.BATCH
    if kind == 'item':
      return fbx.make_item_buffer(max_length=w['capacity'], min_length=batch,
                                  sample_batch_size=batch, add_sequences=True)
    if kind == 'prioritized':
      return fbx.make_prioritised_item_buffer(max_length=w['capacity'], min_length=batch,
                                              sample_batch_size=batch, add_sequences=True,
                                              priority_exponent=0.6)
    return fbx.make_trajectory_buffer(add_batch_size=1, sample_batch_size=rw.SLICES,
                                      sample_sequence_length=rw.SLICE_LEN, period=1,
                                      min_length_time_axis=rw.SLICE_LEN, max_size=w['capacity'])

  def _use(self, kind):
    """Makes ``kind`` the buffer held (filled to capacity), freeing the one before."""
    if kind == self.kind:
      return
    jax = self.jax
    self.buffer = self.state = None
    buffer = self._make(kind)
    example = {k: v[0] for k, v in self.pool[0].items()}
    self.state = buffer.init(example)
    self.add = jax.jit(buffer.add, donate_argnums=0)
    self.sample_fn = jax.jit(buffer.sample)
    if kind == 'prioritized':
      self.set_priorities = jax.jit(buffer.set_priorities, donate_argnums=0)
    self.buffer, self.kind = buffer, kind
    self._extend(self.w['capacity'])

  def _extend(self, steps):
    for i in range(steps // self.w['episode_len']):
      episode = self.pool[i % len(self.pool)]
      if self.kind == 'slices':
        episode = {k: v[None] for k, v in episode.items()}
      self.state = self.add(self.state, episode)
    self.jax.block_until_ready(self.state)

  def _timed_extend(self, kind):
    self._use(kind)
    start = time.perf_counter()
    self._extend(self.w['insert'])
    return self.w['insert'], time.perf_counter() - start

  def _sample(self):
    self.key, key = self.jax.random.split(self.key)
    return self.jax.block_until_ready(self.sample_fn(self.state, key))

  def _prioritized_step(self):
    sample = self._sample()
    weights = (sample.probabilities / sample.probabilities.min()) ** -0.4
    self.state = self.set_priorities(self.state, sample.indices, self.priorities)
    self.jax.block_until_ready((self.state, weights))

  def _sampling(self, kind, step):
    self._use(kind)
    step()   # Warm-up: compiles (twice: an update changes the state's weak types).
    step()
    return rw.timed(step)

  def memory(self):
    self._use('item')
    rss = rw.rss_bytes()
    stored = sum(leaf.nbytes for leaf in self.jax.tree_util.tree_leaves(self.state.experience))
    return {'storage_bytes': int(stored), 'held_steps': self.w['capacity'],
            'raw_bytes': self.w['capacity'] * rw.raw_bytes_per_step(self.w),
            'rss_growth': rss['RssAnon'] - self.baseline['RssAnon'], 'rss': rss}


if __name__ == '__main__':
  rw.serve(Flashbax)
