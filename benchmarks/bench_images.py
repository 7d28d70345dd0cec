"""Benchmark: camera-image training batches (the Octo / OpenVLA workload).

Not a test. Writes (once) a robot-camera RLDS dataset with TFDS's own
serializer (``tfds.dataset_builders.store_as_tfds_dataset``, through
``camera_data.py``): ``--episodes`` x ``--steps`` steps, ``--frames``
smooth (a rendered scene, ~25 KB per step) or noisy (textured, with sensor
noise: a real camera's entropy, ~76 KB per step), a 256x256 and a 128x128
JPEG camera
(``tfds.features.Image(encoding_format='jpeg')``, TFDS's quality 95), an
8-d state, a 7-d action and a language instruction (``tfds.features.Text``).
Then the contenders take turns, run by run, each run in its own process
(for its peak RSS), making batches of 64 samples of a 2-frame observation
history and a 4-action chunk:

  octo            the Octo recipe in plain tf.data, as ``octo/data/
                  dataset.py`` builds it: dense trajectories
                  (``SkipDecoding``) -> history window 2 and action horizon
                  4 gathered on the *encoded* frames (``chunk_act_obs``) ->
                  flatten (``interleave``) -> ``shuffle(--shuffle-buffer)``
                  -> per-sample decode of every frame (``decode_image``
                  over the history axis, + resize when ``--image-size``)
                  -> ``batch(64)``, with Octo's ``ram_budget`` option;
  rlds            the upstream RLDS recipe: nested TFDS steps (decoded step
                  by step), ``rlds.transformations.batch(size=5, shift=1)``
                  windows -> history 2 / actions 4 picked -> shuffle ->
                  batch (complete windows only);
  ours            ``rlds_lite.pipeline.robot_samples_dataset`` with its
                  defaults (``decode='auto'``, 1 GiB plan);
  ours_budget     the same with ``memory_budget`` = the Octo recipe's RSS
                  growth measured in this run's first turn, as the table
                  reports it (the larger of its in-graph and Python-loop
                  runs); ``ours_budget_0.8x``: 0.8 times that (about the
                  Octo recipe's in-graph growth alone);
  floor           the decode floor: every frame of the split decoded once,
                  16 frames per ``map`` element (one ``map_fn`` each) on
                  both cores, nothing else (``floor_per_frame``: one frame
                  per element, for reference);
  floor_samples   the floor of any pipeline that outputs these samples:
                  every frame decoded once, each episode's samples gathered
                  from its frames once (their histories written), no
                  shuffling, no batching;
  floor_pooled    the floor of a pipeline like rlds_lite's default, which
                  decodes each frame about once and mixes many episodes
                  per batch from decoded frames held in memory: segments of
                  16 samples decoded together (17 frames), 48 segments of
                  different episodes concatenated into a pool, their
                  histories gathered in a random order 64 at a time; no
                  other fields, no planning.

Each contender runs twice per turn, each run in a fresh process after one
untimed pass over the data (tracing, graph rewrites, first reads), timed
over ``--passes`` passes (3: an epoch of this dataset is ~2 s, and one
pass also counts what a pipeline pays once per iterator, which training
with ``repeat()`` pays once): consumed in-graph (``Dataset.reduce`` counting samples) and by a Python loop (as a training loop would, keeping
the episode ids of every batch for the distinct-episodes count). Reported:
samples/s both ways, CPU-seconds per sample (process CPU time of the
in-graph run, all threads), distinct episodes per batch, peak RSS and RSS
growth over the TensorFlow runtime (peak minus the RSS after TF started a
trivial pipeline), decodes per sample (frames of the 256 and 128 cameras
decoded per sample, from the recipe / the plan), and each pipeline's
fraction of the decode floor for the decodes it performs.

Usage:
  python benchmarks/bench_images.py [--quick] [--repeats N] [--passes N]
      [--only a,b] [--image-size 128] [--frames noisy|smooth] [--write-results]
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'tests'))
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

import bench_fast_path  # pylint: disable=g-import-not-at-top,wrong-import-position
import camera_data  # pylint: disable=g-import-not-at-top,wrong-import-position

BATCH = 64
HISTORY = 2
HORIZON = 4
CAMERAS = {'image_primary': (256, 256), 'image_wrist': (128, 128)}
CONTENDERS = ('octo', 'rlds', 'ours', 'ours_budget', 'ours_budget_0.8x', 'floor',
              'floor_samples', 'floor_pooled', 'floor_per_frame')
BUDGET_FACTORS = {'ours_budget': 1.0, 'ours_budget_0.8x': 0.8}
TARGETS = {'ours': 2.5, 'ours_budget': 1.5}
"""Targets (issue 16): samples/s vs the Octo recipe; judged here per CPU-second."""


def camera_size(name: str, image_size: Optional[int]
                ) -> Optional[Tuple[int, int]]:
  """The output size of camera ``name``: the primary camera resized to
  ``image_size`` (None: stored size), the others by the same factor (the
  wrist camera to half of it, as Octo's 256 / 128)."""
  if not image_size:
    return None
  h, w = CAMERAS[name]
  primary = CAMERAS['image_primary'][0]
  return (h * image_size // primary, w * image_size // primary)


# ------------------------------------------------------------------ dataset


def build_dataset(data_dir: str, episodes: int, steps: int,
                  frames: str = 'smooth') -> str:
  """Writes the camera dataset with TFDS's serializer (once); its directory."""
  name = (f'bench_cameras_{episodes}x{steps}' if frames == 'smooth' else
          f'bench_cameras_{frames}_{episodes}x{steps}')
  return camera_data.build(data_dir, name, episodes, steps, CAMERAS, frames)


# ---------------------------------------------------------------- contenders


def _resize_like_dlimp(image, size):
  """dlimp's ``resize_image``: lanczos3, antialiased, rounded to uint8."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  image = tf.image.resize(image, size, method='lanczos3', antialias=True)
  return tf.cast(tf.clip_by_value(tf.round(image), 0, 255), tf.uint8)


def octo_pipeline(path: str, buffer: int, image_size: Optional[int]):
  """Octo's recipe (octo/data/dataset.py + traj/obs_transforms) in tf.data."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  auto = tf.data.AUTOTUNE
  builder = tfds.builder_from_directory(path)
  trajectories = builder.as_dataset(
      split='train', shuffle_files=True,
      read_config=tfds.ReadConfig(enable_ordering_guard=False),
      decoders={'steps': tfds.decode.SkipDecoding()})

  def restructure(episode):   # make_dataset_from_rlds's restructure.
    steps = episode['steps']
    length = tf.shape(steps['action'])[0]
    observation = dict(steps['observation'])
    observation['timestep'] = tf.range(length)
    return {'observation': observation,
            'task': {'language_instruction': steps['language_instruction']},
            'action': steps['action'],
            'episode_id': tf.fill([length], episode['episode_id'])}

  def chunk_act_obs(traj):   # traj_transforms.chunk_act_obs, window 2.
    length = tf.shape(traj['action'])[0]
    history = tf.range(length)[:, None] + tf.range(-HISTORY + 1, 1)
    pad_mask = history >= 0
    history = tf.maximum(history, 0)
    observation = tf.nest.map_structure(lambda x: tf.gather(x, history),
                                        traj['observation'])
    observation['timestep_pad_mask'] = pad_mask
    chunk = tf.minimum(tf.range(length)[:, None] + tf.range(HORIZON),
                       length - 1)
    action = tf.gather(tf.gather(traj['action'], chunk), history)
    return {**traj, 'observation': observation, 'action': action}

  def decode_and_resize(frame):   # obs_transforms.decode_and_resize, vmapped.
    observation = dict(frame['observation'])
    for name in CAMERAS:
      size = camera_size(name, image_size)

      def decode(encoded, size=size):
        image = tf.io.decode_image(encoded, expand_animations=False,
                                   dtype=tf.uint8)
        return _resize_like_dlimp(image, size) if size else image

      observation[name] = tf.map_fn(
          decode, observation[name],
          fn_output_signature=tf.TensorSpec(
              (size or CAMERAS[name]) + (3,), tf.uint8))
    return {**frame, 'observation': observation}

  dataset = trajectories.map(restructure, num_parallel_calls=auto)
  dataset = dataset.map(chunk_act_obs, num_parallel_calls=auto)
  dataset = dataset.interleave(tf.data.Dataset.from_tensor_slices,
                               cycle_length=auto, num_parallel_calls=auto)
  dataset = dataset.shuffle(buffer)
  dataset = dataset.map(decode_and_resize, num_parallel_calls=auto)
  dataset = dataset.batch(BATCH)
  options = tf.data.Options()
  options.autotune.ram_budget = 1 << 30   # dataset.with_ram_budget(1)
  return dataset.with_options(options)


def rlds_pipeline(path: str, buffer: int, image_size: Optional[int]):
  """The upstream RLDS recipe: nested steps, ``batch`` windows, shuffle."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  rlds = bench_fast_path.import_upstream_rlds()
  episodes = bench_fast_path.upstream_episodes(path)
  size = HISTORY + HORIZON - 1

  def with_id(episode):
    return episode['steps'].map(
        lambda step: {**step, 'episode_id': episode['episode_id']})

  def sample(window):
    observation = tf.nest.map_structure(lambda x: x[:HISTORY],
                                        window['observation'])
    if image_size:
      for name in CAMERAS:
        observation[name] = _resize_like_dlimp(
            observation[name], camera_size(name, image_size))
    return {'observation': observation,
            'action': window['action'][HISTORY - 1:],
            'language_instruction': window['language_instruction'][
                HISTORY - 1],
            'episode_id': window['episode_id'][0]}

  windows = episodes.flat_map(lambda e: rlds.transformations.batch(
      with_id(e), size=size, shift=1, drop_remainder=True))
  return windows.map(sample).shuffle(buffer).batch(BATCH)


def _sizes(image_size: Optional[int]
           ) -> Optional[Dict[str, Tuple[int, int]]]:
  """robot_samples_dataset's ``image_size``: every camera's output size."""
  if not image_size:
    return None
  return {f'observation/{name}': camera_size(name, image_size)
          for name in CAMERAS}


def ours_pipeline(path: str, image_size: Optional[int],
                  budget: Optional[int] = None):
  import rlds_lite  # pylint: disable=g-import-not-at-top
  from rlds_lite import pipeline  # pylint: disable=g-import-not-at-top
  kind = rlds_lite.RobotSamples(history=HISTORY, action_chunk=HORIZON,
                                last_step='valid')
  return pipeline.robot_samples_dataset(
      rlds_lite.open(path), kind, BATCH, episode_fields='episode_id', seed=0,
      frames=pipeline.FrameDecoding(image_size=_sizes(image_size)),
      memory_budget=budget)


def ours_plan(path: str, image_size: Optional[int],
              budget: Optional[int] = None):
  import rlds_lite  # pylint: disable=g-import-not-at-top
  from rlds_lite import pipeline  # pylint: disable=g-import-not-at-top
  return pipeline.plan_robot_samples(
      rlds_lite.open(path), rlds_lite.RobotSamples(history=HISTORY,
                                                   action_chunk=HORIZON),
      BATCH, frames=pipeline.FrameDecoding(image_size=_sizes(image_size)),
      memory_budget=budget)


def floor_samples_pipeline(path: str, image_size: Optional[int]):
  """Decode once + write each sample's history once: no shuffle, no batch."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from rlds_lite import images  # pylint: disable=g-import-not-at-top
  episodes, specs = images.load_encoded(path)

  def samples(episode):
    observation = episode['steps']['observation']
    length = tf.shape(episode['steps']['action'])[0]
    history = tf.maximum(tf.range(length)[:, None] + tf.range(-HISTORY + 1, 1),
                         0)
    out = {}
    for name in CAMERAS:
      size = camera_size(name, image_size)
      frames = images.decode_frames(observation[name],
                                    specs[f'observation/{name}'], size)
      out[name] = tf.gather(frames, history)
    return out

  return episodes.map(samples, num_parallel_calls=tf.data.AUTOTUNE)


def floor_pooled_pipeline(path: str, image_size: Optional[int],
                          segment: int = 16, pool: int = 48):
  """Decode once per segment, pool, shuffle, batch: nothing else.

  The least work of a pipeline that decodes each frame about once and mixes
  many episodes per batch from decoded frames held in memory (as rlds_lite's
  default does): each episode cut into segments of ``segment`` samples
  (their ``segment + 1`` frames decoded together, both cameras), ``pool``
  segments of different episodes concatenated, their samples' histories
  gathered in a random order, ``BATCH`` at a time. No actions, no other
  fields, no planning.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from rlds_lite import images  # pylint: disable=g-import-not-at-top
  from rlds_lite.pipeline import pools  # pylint: disable=g-import-not-at-top
  episodes, specs = images.load_encoded(path)

  def segments(episode):
    observation = episode['steps']['observation']
    length = tf.shape(episode['steps']['action'], out_type=tf.int64)[0]

    def one(k):
      first = tf.maximum(k * segment - (HISTORY - 1), 0)
      stop = tf.minimum((k + 1) * segment, length)
      anchors = tf.range(k * segment, stop)
      history = tf.maximum(anchors[:, None] + tf.range(-HISTORY + 1, 1, dtype=tf.int64), 0)
      return ({name: observation[name][first:stop] for name in CAMERAS},
              tf.cast(history - first, tf.int32))

    return tf.data.Dataset.range((length + segment - 1) // segment).map(one)

  def decode(frames, history):
    out = {}
    for name in CAMERAS:
      size = camera_size(name, image_size)
      out[name] = images.decode_frames(frames[name],
                                       specs[f'observation/{name}'], size)
    return out, history

  def pooled(window, seed):
    frames = pools.concat_rows(tf.data.Dataset.zip(window[0]))
    history = pools.concat_rows(window[1])
    samples = window[1].map(lambda h: tf.shape(h)[0]).batch(
        pool).get_single_element()
    frame_counts = window[0][next(iter(CAMERAS))].map(
        lambda f: tf.shape(f)[0]).batch(pool).get_single_element()
    history += tf.repeat(tf.cumsum(frame_counts, exclusive=True),
                         samples)[:, None]
    history = tf.gather(history, pools.random_order(tf.shape(history)[0],
                                                     seed))
    num = tf.cast(tf.shape(history)[0], tf.int64)

    def gather(i):
      rows = history[i * BATCH:(i + 1) * BATCH]
      return {name: tf.gather(frames[name], rows) for name in CAMERAS}

    return tf.data.Dataset.range((num + BATCH - 1) // BATCH).map(
        gather, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)

  decoded = episodes.interleave(segments, cycle_length=pool).map(
      decode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  return tf.data.Dataset.zip(decoded.window(pool), pools.pool_seeds(0)).flat_map(
      pooled).prefetch(1)


def floor_pipeline(path: str, frames_per_element: int,
                   image_size: Optional[int]):
  """Every frame of the split decoded once, in parallel, nothing else."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from rlds_lite import images  # pylint: disable=g-import-not-at-top
  episodes, specs = images.load_encoded(path)

  def frames(episode):
    observation = episode['steps']['observation']
    return tf.data.Dataset.from_tensor_slices(
        {name: observation[name] for name in CAMERAS}).batch(
            frames_per_element)

  def decode(chunk):
    out = {}
    for name in CAMERAS:
      spec = specs[f'observation/{name}']
      size = camera_size(name, image_size)
      out[name] = images.decode_frames(chunk[name], spec, size)
    return out

  return episodes.flat_map(frames).map(decode,
                                       num_parallel_calls=tf.data.AUTOTUNE)


# ------------------------------------------------------------------ running


def tf_runtime_rss_mb() -> float:
  """RSS once TF has run a trivial pipeline (the runtime's own memory)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.data.Dataset.range(10).map(lambda x: x + 1, num_parallel_calls=2).reduce(
      tf.constant(0, tf.int64), lambda a, b: a + b)
  with open('/proc/self/status') as f:
    for line in f:
      if line.startswith('VmRSS:'):
        return int(line.split()[1]) / 1024
  return 0.0


def run_child(name: str, mode: str, path: str, args: Dict[str, Any]
              ) -> Dict[str, Any]:
  """One run of one contender, consumed in-graph or by a Python loop."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  base = tf_runtime_rss_mb()
  size = args['image_size']
  if name == 'octo':
    ds = octo_pipeline(path, args['shuffle_buffer'], size)
  elif name == 'rlds':
    ds = rlds_pipeline(path, args['shuffle_buffer'], size)
  elif name == 'ours':
    ds = ours_pipeline(path, size)
  elif name in BUDGET_FACTORS:
    try:
      ds = ours_pipeline(path, size, int(args['budget'] * BUDGET_FACTORS[name]))
    except ValueError as e:   # The budget is too small for any plan.
      return {'error': str(e).split(' (DecodePlan')[0]}
  elif name == 'floor':
    ds = floor_pipeline(path, 16, size)
  elif name == 'floor_per_frame':
    ds = floor_pipeline(path, 1, size)
  elif name == 'floor_samples':
    ds = floor_samples_pipeline(path, size)
  elif name == 'floor_pooled':
    ds = floor_pooled_pipeline(path, size)
  else:
    raise ValueError(name)
  floor = name.startswith('floor')
  if floor:   # Elements hold the decoded frames: they are computed.
    count_fn = lambda n, x: n + tf.shape(x['image_primary'])[0]
  else:
    count_fn = lambda n, b: n + tf.shape(b['action'])[0]
  ds.reduce(tf.constant(0, tf.int32), count_fn)   # The untimed pass.
  ds = ds.repeat(args['passes'])   # Timed passes: a steady state.
  start, cpu = time.perf_counter(), time.process_time()
  distinct = []
  if mode == 'graph' or floor:
    samples = int(ds.reduce(tf.constant(0, tf.int32), count_fn))
  else:
    samples = 0
    ids = []
    for batch in ds:
      samples += int(batch['action'].shape[0])
      ids.append(batch['episode_id'])
    for batch_ids in ids:
      distinct.append(len(np.unique(np.asarray(batch_ids).reshape(
          batch_ids.shape[0], -1)[:, 0])))
  result = {'samples': samples, 'seconds': time.perf_counter() - start,
            'cpu': time.process_time() - cpu,
            'rss_mb': bench_fast_path.peak_rss_mb(), 'base_rss_mb': base}
  if distinct:
    result['distinct'] = float(np.mean(distinct[:-1] or distinct))
  return result


def spawn(name: str, mode: str, path: str, args: Dict[str, Any]
          ) -> Dict[str, Any]:
  cmd = [sys.executable, os.path.abspath(__file__), '--child', name,
         '--mode', mode, '--path', path, '--child-args', json.dumps(args)]
  out = subprocess.run(cmd, check=False, capture_output=True, text=True)
  if out.returncode:
    sys.exit(f'{name} ({mode}) failed:\n{out.stderr[-3000:]}')
  result = json.loads([l for l in out.stdout.splitlines()
                       if l.startswith('{')][-1])
  if 'error' in result:
    print(f'  {name:16s} {mode:6s} {result["error"]}', flush=True)
    return result
  print(f'  {name:16s} {mode:6s} {result["samples"] / result["seconds"]:9,.0f}'
        f' /s  {1e6 * result["cpu"] / result["samples"]:7,.0f} us CPU/sample '
        f' peak {result["rss_mb"]:6.0f} MB  growth '
        f'{result["rss_mb"] - result["base_rss_mb"]:5.0f} MB'
        + (f'  {result["distinct"]:.1f} episodes/batch'
           if 'distinct' in result else ''), flush=True)
  return result


def decodes_per_sample(name: str, plan: Any, steps: int) -> Optional[float]:
  """Frames of each camera decoded per sample (by the recipe or the plan)."""
  if name == 'octo':
    return float(HISTORY)
  if name == 'rlds':
    return steps / (steps - (HISTORY + HORIZON - 2))   # every step once
  if name == 'floor_pooled':
    return (16 + HISTORY - 1) / 16
  if name.startswith('floor'):
    return 1.0
  if plan is None:
    return None
  if plan.decode == 'after_sampling':
    return float(HISTORY)   # at most: identical frames of a batch once
  if plan.segment_steps is None:
    return 1.0
  # Segments in a random rotation carry shared frames to the next one: an
  # episode decodes its history's reach again where the rotation starts
  # (unless it starts at the first segment), about (n - 1) / n times.
  segments = -(-steps // plan.segment_steps)
  return 1 + (HISTORY - 1) * (segments - 1) / segments / steps


def rate(r: Dict[str, Any]) -> float:
  return r['samples'] / r['seconds']


def cpu_per_sample(r: Dict[str, Any]) -> float:
  return 1e6 * r['cpu'] / r['samples']


def growth_mb(runs: Dict[str, Any]) -> float:
  """RSS growth of a contender: the larger of its in-graph and loop runs."""
  return max(r['rss_mb'] - r['base_rss_mb'] for r in runs.values())


def budget_line(results, budget: Optional[int]) -> str:
  """Whether the budgeted contenders stayed within their budgets.

  The budget is the Octo recipe's growth in the first turn; its growth
  over all its runs is given beside it, as the same allocator noise.
  """
  parts = []
  for name, factor in BUDGET_FACTORS.items():
    if results.get(name) and budget:
      limit = budget * factor / 1e6
      growth = growth_mb(results[name])
      parts.append(f'{name} grew {growth:.0f} MB under a budget of '
                   f'{limit:.0f} MB ({"within it" if growth <= limit else "OVER it"})')
  if parts and results.get('octo'):
    parts.append('the Octo recipe grew up to '
                 f'{growth_mb(results["octo"]):.0f} MB over all its runs')
  return ('Budgets: ' + '; '.join(parts) + '.') if parts else ''


def report(results, plans, args, steps) -> List[str]:
  """The table: wall rates (best runs) and CPU (least CPU per sample).

  On a loaded machine the wall rates swing with the load; the CPU per
  sample of a pipeline is steadier, so the ratios are given both ways, and
  the share of the decode floor from CPU: the floor's CPU per frame pair
  times the decodes per sample, over the pipeline's CPU per sample.
  """
  octo = results.get('octo', {}).get('graph')
  floor = results.get('floor', {}).get('graph')
  lines = [
      '| pipeline | samples/s in-graph | samples/s Python loop | CPU us/sample '
      '| vs Octo (wall, in-graph) | vs Octo (CPU) | distinct episodes/batch | '
      'peak RSS MB | RSS growth MB | decodes/sample per camera | '
      'share of the decode floor (CPU) |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|']
  for name in CONTENDERS:
    runs = results.get(name)
    if not runs:
      continue
    graph, loop = runs['graph'], runs.get('loop')
    cpu = graph['min_cpu_us']
    decodes = decodes_per_sample(name, plans.get(name), steps)
    vs = cpu_vs = share = '-'
    if octo and not name.startswith('floor'):
      vs = f'{rate(graph) / rate(octo):.2f}x'
      cpu_vs = f'{octo["min_cpu_us"] / cpu:.2f}x'
      if name in TARGETS:
        met = octo['min_cpu_us'] / cpu >= TARGETS[name]
        cpu_vs += f' ({TARGETS[name]}x {"met" if met else "NOT met"})'
    if floor and decodes:
      share = f'{100 * floor["min_cpu_us"] * decodes / cpu:.0f}%'
    distinct = f'{loop["distinct"]:.1f}' if loop and 'distinct' in loop else '-'
    peak = max(graph['rss_mb'], loop['rss_mb'] if loop else 0)
    growth = growth_mb(runs)
    lines.append(
        f'| {name} | {rate(graph):,.0f} | '
        f'{f"{rate(loop):,.0f}" if loop else "-"} | {cpu:,.0f} | {vs} | '
        f'{cpu_vs} | {distinct} | {peak:.0f} | {growth:.0f} | '
        f'{"-" if decodes is None else round(decodes, 3)} | {share} |')
  return lines


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--data-dir', default='/tmp/rlds_lite_bench')
  parser.add_argument('--episodes', type=int, default=48)
  parser.add_argument('--steps', type=int, default=120)
  parser.add_argument('--shuffle-buffer', type=int, default=3000)
  parser.add_argument('--image-size', type=int, default=0,
                      help='resize the primary camera to this size (the wrist '
                      'camera to half of it); 0: stored sizes')
  parser.add_argument('--frames', default='smooth', choices=camera_data.FRAMES,
                      help='camera frames: smooth (~25 KB per step) or noisy '
                      '(a real camera\'s entropy, ~76 KB per step)')
  parser.add_argument('--repeats', type=int, default=2)
  parser.add_argument('--passes', type=int, default=3,
                      help='timed passes over the data per run (after the '
                      'untimed one)')
  parser.add_argument('--quick', action='store_true',
                      help='12 episodes x 40 steps, 1 repeat')
  parser.add_argument('--only', default='')
  parser.add_argument('--budget', type=int, default=0,
                      help='ours_budget memory budget in bytes (default: the '
                      "Octo recipe's RSS growth in this run)")
  parser.add_argument('--write-results', action='store_true')
  parser.add_argument('--child', default='')
  parser.add_argument('--mode', default='graph')
  parser.add_argument('--path', default='')
  parser.add_argument('--child-args', default='{}')
  args = parser.parse_args()
  if args.child:
    print(json.dumps(run_child(args.child, args.mode, args.path,
                               json.loads(args.child_args))))
    return
  if args.quick:
    args.episodes, args.steps, args.repeats, args.passes = 12, 40, 1, 1
    args.shuffle_buffer = min(args.shuffle_buffer, 1000)
  info = bench_fast_path.machine_info()
  print(f'Machine: {info}', flush=True)
  started = time.perf_counter()
  path = build_dataset(args.data_dir, args.episodes, args.steps, args.frames)
  print(f'Dataset ready in {time.perf_counter() - started:.0f}s: {path}',
        flush=True)
  names = [n for n in CONTENDERS
           if not args.only or n in args.only.split(',')]
  child = {'shuffle_buffer': args.shuffle_buffer, 'passes': args.passes,
           'image_size': args.image_size or None, 'budget': args.budget or None}
  runs = {name: {'graph': [], 'loop': []} for name in names}
  errors = {}
  for repeat in range(args.repeats):
    for name in names:
      if name in BUDGET_FACTORS and child['budget'] is None:
        # The Octo recipe's RSS growth in the first turn, as the table
        # reports growth: the larger of its two runs (in-graph, loop).
        octo = runs.get('octo', {})
        octo = octo.get('graph', []) + octo.get('loop', [])
        if not octo:
          continue
        child['budget'] = int(1e6 * max(r['rss_mb'] - r['base_rss_mb']
                                        for r in octo))
      if name in errors:
        continue
      for mode in ('graph',) if name.startswith('floor') else ('graph', 'loop'):
        result = spawn(name, mode, path, child)
        if 'error' in result:
          errors[name] = result['error']
          break
        runs[name][mode].append(result)
  results = {name: {mode: max(r, key=rate) for mode, r in modes.items() if r}
             for name, modes in runs.items()}
  for name in results:   # RSS: the largest of the runs; CPU: the least.
    for mode, r in runs[name].items():
      if r:
        results[name][mode] = dict(results[name][mode])
        results[name][mode]['rss_mb'] = max(x['rss_mb'] for x in r)
        results[name][mode]['base_rss_mb'] = min(x['base_rss_mb'] for x in r)
        results[name][mode]['min_cpu_us'] = min(cpu_per_sample(x) for x in r)
  import rlds_lite  # pylint: disable=g-import-not-at-top,unused-import
  size = args.image_size or None
  plans = {}
  if 'ours' in names:
    plans['ours'] = ours_plan(path, size)
  for name, factor in BUDGET_FACTORS.items():
    if name in names and child['budget'] and name not in errors:
      plans[name] = ours_plan(path, size, int(child['budget'] * factor))
  lines = report(results, plans, args, args.steps)
  for name, error in errors.items():
    lines.append(f'| {name} | {error} |' + ' - |' * 9)
  load = os.getloadavg()
  notes = [
      f'Dataset: {args.episodes} episodes x {args.steps} steps, a 256x256 and '
      f'a 128x128 JPEG camera, {args.frames} frames (TFDS quality 95; '
      f'{camera_data.dir_bytes(path) / 1e6:.0f} MB), '
      '8-d state, 7-d action, a language instruction; written by '
      "TFDS's serializer. Samples: a 2-frame history and a 4-action chunk "
      f'at every step; batches of {BATCH}; Octo and RLDS shuffle buffers of '
      f'{args.shuffle_buffer} samples; image size '
      f'{"stored" if not size else f"{size} (primary), {size // 2} (wrist)"}.',
      f'Plans: ours {plans.get("ours")!r}; ours_budget (budget '
      f'{child["budget"] or 0:,} bytes = the Octo recipe\'s RSS growth) '
      f'{plans.get("ours_budget")!r}; ours_budget_0.8x '
      f'{plans.get("ours_budget_0.8x")!r}.',
      'Method: each run in its own process after one untimed pass, timed '
      f'over {args.passes} passes, the '
      f'contenders taking turns, run by run, {args.repeats} runs each. '
      'samples/s: the fastest run; CPU us/sample: the least process CPU '
      'time (all threads) per sample of the in-graph runs; RSS: the largest. '
      'In-graph: `Dataset.reduce` counting samples; Python loop: `for batch '
      'in ds`, keeping the episode ids. RSS growth: peak RSS minus the RSS '
      'after TF ran a trivial pipeline. Decode floor: every frame of the '
      'split decoded once (both cameras), 16 frames per map element, '
      'parallel map (its "samples" are frame pairs); share of the floor = '
      'the floor\'s CPU per frame pair x decodes per sample / the '
      'pipeline\'s CPU per sample. floor_samples: decode once and write '
      'every sample\'s history once (no shuffle, no batch): the least work '
      'any pipeline making these samples does. floor_pooled: segments of 16 '
      'samples decoded together, 48 of them pooled, histories gathered in a '
      'random order: the least work of a pipeline that decodes each frame '
      'about once and mixes episodes from decoded frames. Octo decodes each frame once '
      'per sample holding it (2 per camera); the RLDS recipe decodes each '
      'step once (nested steps) but copies 5 steps per window and holds '
      'decoded windows in its shuffle buffer, complete windows only '
      f'({args.steps - HISTORY - HORIZON + 2} samples per episode).',
      budget_line(results, child['budget']),
      f'Total time {time.perf_counter() - started:.0f}s; load average at the '
      f'end {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}.',
  ]
  notes = [note for note in notes if note]
  print('\n'.join([''] + lines + [''] + notes))
  if args.write_results:
    write_results(lines, info, notes, args.frames)


def write_results(lines: List[str], info: str, notes: List[str],
                  frames: str = 'smooth') -> None:
  path = os.path.join(HERE, 'RESULTS.md')
  header = ('## Camera images (issue 16)' if frames == 'smooth' else
            f'## Camera images, {frames} frames')
  section = [header, '',
             f'`python benchmarks/bench_images.py --frames {frames}`, '
             f'{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} '
             f'UTC; {info}.', ''] + lines + [''] + notes + ['']
  text = open(path).read()
  if header in text:
    start = text.index(header)
    rest = text.find('\n## ', start + len(header))
    text = text[:start] + '\n'.join(section) + (text[rest + 1:]
                                                if rest >= 0 else '')
  else:
    text = text.rstrip('\n') + '\n\n' + '\n'.join(section)
  with open(path, 'w') as f:
    f.write(text)


if __name__ == '__main__':
  main()
