"""Benchmark: an Octo mixture of three camera datasets, Octo's recipe against rlds_lite.octo.

Not a test. Writes (once, TFDS's serializer through ``camera_data.py``,
``--frames`` noisy by default) three datasets: ``a`` a 256x256 + 128x128
two-camera robot, 8-d state, 7-d actions, language; ``b`` one 256x256
camera, 8-d proprio, 8-d actions, language; ``c`` one camera, 7-d state,
7-d actions, no language; weights 0.5/0.3/0.2. Contenders take turns, each
in its own process: ``octo_10k`` / ``octo_100k`` (Octo's recipe in plain
tf.data: restructure, chunk window 2 / horizon 4 on encoded frames,
flatten, each dataset repeated, ``sample_from_datasets``, shuffle, decode + lanczos3 resize +
Octo's default augmentation per frame, batch 64) and ``ours`` / ``ours_budget``
(``rlds_lite.octo.make_interleaved_dataset``; ``ours_budget`` at the 10K
recipe's measured growth). ``--stats`` times, in turns, Octo's statistics
recipe, reading every record's bytes (the floor of any whole-record reader),
``octo.make_dataset_from_rlds`` with and without recomputing, and
``octo.statistics.compute_stored`` alone. ``--warmup N`` first takes N
batches timed apart (the start: tracing, the shuffle buffer's or the pools'
fill), then ``--batches`` from a running pipeline, as a long training run
sees it.

Usage:
  python benchmarks/bench_octo.py [--quick] [--scale 4] [--frames smooth]
      [--image-size 128] [--only octo_10k,ours] [--stats] [--batches 200]
      [--no-augment] [--warmup 200]
"""

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from typing import Any, Callable, Dict, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), os.path.join(os.path.dirname(HERE),
                                                    'tests')]
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

import camera_data  # pylint: disable=g-import-not-at-top,wrong-import-position

BATCH, WINDOW, HORIZON = 64, 2, 4
ACTION_DIM = PROPRIO_DIM = 8
PRIMARY, WRIST = (256, 256), (128, 128)
DATASETS = {   # name -> (cameras, state_dim, action_dim, language, weight)
    'a': ({'image_primary': PRIMARY, 'image_wrist': WRIST}, 8, 7, True, 0.5),
    'b': ({'image_primary': PRIMARY}, 8, 8, True, 0.3),
    'c': ({'image_primary': PRIMARY}, 7, 7, False, 0.2),
}
CONTENDERS = ('octo_10k', 'octo_100k', 'ours', 'ours_budget')
BUFFERS = {'octo_10k': 10_000, 'octo_100k': 100_000}


_JITTER = {'random_brightness': [0.1], 'random_contrast': [0.9, 1.1],
           'random_saturation': [0.9, 1.1], 'random_hue': [0.05]}
OCTO_AUGMENT = {
    'primary': {'augment_order': ['random_resized_crop', 'random_brightness',
                                  'random_contrast', 'random_saturation',
                                  'random_hue'],
                'random_resized_crop': {'scale': [0.8, 1.0], 'ratio': [0.9, 1.1]},
                **_JITTER},
    'wrist': {'augment_order': ['random_brightness', 'random_contrast',
                                'random_saturation', 'random_hue'], **_JITTER}}
"""Octo's default augmentation (its configs): the primary camera cropped and jittered, the wrist jittered."""


def build_datasets(data_dir: str, episodes: int, steps: int, frames: str
                   ) -> Dict[str, str]:
  """The three datasets' directories (written once)."""
  paths = {}
  for seed, (name, (cameras, state, action, language, _)) in enumerate(
      DATASETS.items()):
    paths[name] = camera_data.build(
        data_dir, f'bench_octo2_{name}_{frames}_{episodes}x{steps}', episodes,
        steps, cameras, frames, state_dim=state, action_dim=action,
        language=language, seed=seed)
  return paths


def _padded(x, size):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.pad(x, [[0, 0], [0, size - x.shape[-1]]])


def _augment(image, crop: bool, seed):
  """Octo's default augmentation (dlimp's op order) on a uint8 frame."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  size = tf.shape(image)[:2]
  image = tf.image.convert_image_dtype(image, tf.float32)
  if crop:   # random_resized_crop, scale [0.8, 1], ratio [0.9, 1.1].
    s = tf.random.uniform([], 0.8, 1.0)
    r = tf.random.uniform([], 0.9, 1.1)
    h, w = tf.sqrt(s / r), tf.sqrt(s * r)
    h, w = tf.minimum(h, 1.0), tf.minimum(w, 1.0)
    y0 = tf.random.uniform([], 0, 1 - h + 1e-6)
    x0 = tf.random.uniform([], 0, 1 - w + 1e-6)
    image = tf.image.crop_and_resize(image[None], [[y0, x0, y0 + h, x0 + w]],
                                     [0], size)[0]
  image = tf.image.random_brightness(image, 0.1)
  image = tf.image.random_contrast(image, 0.9, 1.1)
  image = tf.image.random_saturation(image, 0.9, 1.1)
  image = tf.image.random_hue(image, 0.05)
  del seed
  return tf.image.convert_image_dtype(tf.clip_by_value(image, 0, 1), tf.uint8)


def octo_pipeline(paths: Dict[str, str], buffer: int,
                  image_size: Optional[int], augment: bool = True):
  """Octo's recipe for the mixture in plain tf.data."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  auto = tf.data.AUTOTUNE
  sizes = {'image_primary': PRIMARY, 'image_wrist': WRIST}
  if image_size:
    sizes = {'image_primary': (image_size, image_size),
             'image_wrist': (image_size // 2, image_size // 2)}

  def one(name: str):
    cameras, _, _, language, _ = DATASETS[name]
    builder = tfds.builder_from_directory(paths[name])
    trajectories = builder.as_dataset(
        split='train', shuffle_files=True,
        read_config=tfds.ReadConfig(enable_ordering_guard=False),
        decoders={'steps': tfds.decode.SkipDecoding()}).repeat()  # As Octo does.

    def restructure(episode):
      steps = episode['steps']
      length = tf.shape(steps['action'])[0]
      obs = {k: steps['observation'].get(k, tf.fill([length], ''))
             for k in sizes}
      obs['proprio'] = _padded(steps['observation']['state'], PROPRIO_DIM)
      obs['timestep'] = tf.range(length)
      text = (steps['language_instruction'] if language
              else tf.fill([length], ''))
      return {'observation': obs, 'task': {'language_instruction': text},
              'action': _padded(steps['action'], ACTION_DIM),
              'dataset_name': tf.fill([length], name),
              'episode_id': tf.fill([length], episode['episode_id'])}

    def chunk(traj):
      length = tf.shape(traj['action'])[0]
      history = tf.range(length)[:, None] + tf.range(-WINDOW + 1, 1)
      mask = history >= 0
      history = tf.maximum(history, 0)
      obs = tf.nest.map_structure(lambda x: tf.gather(x, history),
                                  traj['observation'])
      obs['timestep_pad_mask'] = mask
      actions = tf.minimum(tf.range(length)[:, None] + tf.range(HORIZON),
                           length - 1)
      action = tf.gather(tf.gather(traj['action'], actions), history)
      return {**traj, 'observation': obs, 'action': action}

    del cameras
    return trajectories.map(restructure, num_parallel_calls=auto).map(
        chunk, num_parallel_calls=auto).interleave(
            tf.data.Dataset.from_tensor_slices, cycle_length=auto,
            num_parallel_calls=auto)

  def frames(sample):
    obs = dict(sample['observation'])
    for key, size in sizes.items():
      def decode(encoded, size=size, key=key):
        image = tf.cond(
            tf.strings.length(encoded) > 0,
            lambda: tf.io.decode_image(encoded, 3, expand_animations=False),
            lambda: tf.zeros(size + (3,), tf.uint8))
        image = tf.image.resize(image, size, method='lanczos3',
                                antialias=True)
        image = tf.cast(tf.clip_by_value(tf.round(image), 0, 255), tf.uint8)
        image.set_shape(size + (3,))
        return _augment(image, key == 'image_primary', None) if augment else image
      obs[key] = tf.map_fn(decode, obs[key], fn_output_signature=tf.TensorSpec(
          size + (3,), tf.uint8))
    return {**sample, 'observation': obs}

  mixed = tf.data.Dataset.sample_from_datasets(
      [one(n) for n in DATASETS], [DATASETS[n][4] for n in DATASETS])
  ds = mixed.shuffle(buffer).map(frames, num_parallel_calls=auto).batch(BATCH)
  options = tf.data.Options()
  options.autotune.ram_budget = 1 << 30
  return ds.with_options(options)


def ours_pipeline(paths: Dict[str, str], image_size: Optional[int],
                  budget: Optional[int], augment: bool = True):
  """``rlds_lite.octo.make_interleaved_dataset`` on the same mixture."""
  from rlds_lite import octo  # pylint: disable=g-import-not-at-top
  size = image_size or PRIMARY[0]
  kwargs = [dict(name=p, data_dir=None,
                 image_obs_keys={'primary': 'image_primary',
                                 'wrist': 'image_wrist' if n == 'a' else None},
                 proprio_obs_key='state', language_key='language_instruction'
                 if DATASETS[n][3] else None) for n, p in paths.items()]
  return octo.make_interleaved_dataset(
      kwargs, [DATASETS[n][4] for n in paths], train=True,
      shuffle_buffer_size=10_000, batch_size=BATCH,
      traj_transform_kwargs=dict(window_size=WINDOW, action_horizon=HORIZON,
                                 max_action_dim=ACTION_DIM,
                                 max_proprio_dim=PROPRIO_DIM),
      frame_transform_kwargs=dict(resize_size={
          'primary': (size, size), 'wrist': (size // 2, size // 2)},
          image_augment_kwargs=OCTO_AUGMENT if augment else {}),
      memory_budget=budget)


def rss_mb() -> Dict[str, float]:
  """RssAnon and RssFile of this process (MB)."""
  out = {}
  with open('/proc/self/status') as f:
    for line in f:
      if line.startswith(('RssAnon:', 'RssFile:')):
        out[line.split(':')[0]] = int(line.split()[1]) / 1024
  return out


def run_child(name: str, paths: Dict[str, str], args: Dict[str, Any]):
  """One contender's run, consumed by a Python loop."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.data.Dataset.range(10).map(lambda x: x + 1, num_parallel_calls=2).reduce(
      tf.constant(0, tf.int64), lambda a, b: a + b)
  base = rss_mb()
  if name in BUFFERS:
    ds = octo_pipeline(paths, BUFFERS[name], args['image_size'], args['augment'])
  else:
    ds = ours_pipeline(paths, args['image_size'],
                       args['budget'] if name == 'ours_budget' else None,
                       args['augment'])
  plan_mb = getattr(ds, 'plan', None) and ds.plan.memory / 1e6
  peak = dict.fromkeys(base, 0.0)   # The largest RSS seen after any batch.

  def after_batch():
    nonlocal peak
    now = rss_mb()
    peak = now if sum(now.values()) > sum(peak.values()) else peak
    return now

  ds = iter(ds)
  begin, begin_cpu = time.perf_counter(), time.process_time()
  for _ in range(args['warmup']):
    next(ds)
    after_batch()
  warm = {'warmup_seconds': time.perf_counter() - begin,
          'warmup_cpu': time.process_time() - begin_cpu}
  ds = itertools.islice(ds, args['batches'])
  start, cpu, samples, episodes, datasets = (time.perf_counter(),
                                             time.process_time(), 0, [], [])
  trace = []   # Growth after each quarter of the batches: flat or not.
  for count, batch in enumerate(ds, 1):
    now = after_batch()
    if count % max(1, args['batches'] // 4) == 0:
      trace.append(round(sum(now.values()) - sum(base.values())))
    samples += int(batch['action'].shape[0])
    names = batch['dataset_name'].numpy()
    datasets.append(len(set(names.tolist())))
    # state[0] is the episode's index (normalised by rlds_lite: still distinct).
    ids = np.asarray(batch['observation']['proprio'])[:, -1, 0]
    episodes.append(len(set(zip(names.tolist(), ids.round(4).tolist()))))
  return {**warm, 'samples': samples, 'seconds': time.perf_counter() - start,
          'cpu': time.process_time() - cpu,
          'growth_mb': sum(peak.values()) - sum(base.values()),
          'anon_growth_mb': peak['RssAnon'] - base['RssAnon'],
          'growth_trace_mb': trace, 'plan_mb': plan_mb,
          'episodes': float(np.mean(episodes)) if episodes else None,
          'datasets': float(np.mean(datasets))}


def octo_statistics(path: str) -> Dict[str, Any]:
  """Octo's statistics recipe in plain tf.data: every trajectory's actions and proprio."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  builder = tfds.builder_from_directory(path)
  ds = builder.as_dataset(split='train', decoders={
      'steps': tfds.decode.SkipDecoding()}).map(
          lambda e: (e['steps']['action'], e['steps']['observation']['state']))
  actions, proprio = zip(*[(a, p) for a, p in ds.as_numpy_iterator()])
  out = {}
  for key, rows in (('action', actions), ('proprio', proprio)):
    x = np.concatenate(rows)
    out[key] = {'mean': x.mean(0), 'std': x.std(0), 'max': x.max(0),
                'min': x.min(0), 'p99': np.quantile(x, 0.99, 0),
                'p01': np.quantile(x, 0.01, 0)}
  return out


def _read_all_bytes(path: str) -> None:
  """Every record's bytes, as any reader of whole records (Octo's included) reads them."""
  import glob  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  files = sorted(glob.glob(os.path.join(path, '*.tfrecord*')))
  for _ in tf.data.TFRecordDataset(files, num_parallel_reads=4).batch(64):
    pass


def statistics_times(paths: Dict[str, str]) -> Dict[str, float]:
  """Seconds for all three datasets' statistics: Octo's recipe, ours, and reading the records' bytes."""
  import rlds_lite  # pylint: disable=g-import-not-at-top
  from rlds_lite import octo  # pylint: disable=g-import-not-at-top

  def seconds(fn: Callable[[str], Any]) -> float:
    start = time.perf_counter()
    for path in paths.values():
      fn(path)
    return time.perf_counter() - start

  def ours(force: bool) -> Callable[[str], Any]:
    return lambda path: octo.make_dataset_from_rlds(
        path, None, train=True, proprio_obs_key='state',
        force_recompute_dataset_statistics=force)

  ours(True)(next(iter(paths.values())))  # TF's start-up and first traces.
  out = {}
  for turn in range(2):  # The contenders take turns.
    for name, fn in (('octo_recipe_s', octo_statistics),
                     ('read_all_bytes_s', _read_all_bytes),
                     ('rlds_lite_s', ours(True)),
                     ('rlds_lite_cached_s', ours(False))):
      out.setdefault(name, []).append(round(seconds(fn), 3))
    out.setdefault('rlds_lite_statistics_alone_s', []).append(round(seconds(
        lambda path: octo.statistics.compute_stored(
            rlds_lite.open(path), 'observation/state')), 3))
  return {'runs': out, 'best': {k: min(v) for k, v in out.items()}}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--data-dir', default='/tmp/rlds_lite_bench')
  parser.add_argument('--episodes', type=int, default=48)
  parser.add_argument('--steps', type=int, default=120)
  parser.add_argument('--scale', type=int, default=1,
                      help='episodes per dataset times this')
  parser.add_argument('--frames', default='noisy', choices=camera_data.FRAMES)
  parser.add_argument('--image-size', type=int, default=0)
  parser.add_argument('--batches', type=int, default=200)
  parser.add_argument('--warmup', type=int, default=0,
                      help='batches taken, and timed apart, before --batches')
  parser.add_argument('--budget', type=int, default=0)
  parser.add_argument('--only', default='')
  parser.add_argument('--stats', action='store_true')
  parser.add_argument('--no-augment', action='store_true',
                      help='both sides without augmentation: the readers alone')
  parser.add_argument('--quick', action='store_true')
  parser.add_argument('--child', default='')
  parser.add_argument('--child-args', default='{}')
  args = parser.parse_args()
  if args.quick:
    args.episodes, args.steps, args.batches = 6, 30, 5
  paths = build_datasets(args.data_dir, args.episodes * args.scale,
                         args.steps, args.frames)
  if args.child:
    print(json.dumps(run_child(args.child, paths,
                               json.loads(args.child_args))))
    return
  child = {'image_size': args.image_size or None, 'budget': args.budget,
           'batches': args.batches, 'warmup': args.warmup, 'augment': not args.no_augment}
  for name in CONTENDERS:
    if args.only and name not in args.only.split(','):
      continue
    cmd = [sys.executable, __file__, '--child', name, '--child-args',
           json.dumps(child)] + [a for a in sys.argv[1:]
                                 if a not in ('--stats',)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode:
      print(f'{name}: failed: {out.stderr.strip().splitlines()[-1:]}')
      continue
    r = json.loads(out.stdout.strip().splitlines()[-1])
    if name == 'octo_10k' and not child['budget']:
      child['budget'] = int(1e6 * r['growth_mb'])
    print(f'{name:10s} {r["samples"] / r["seconds"]:8,.0f} samples/s '
          f'{1e6 * r["cpu"] / r["samples"]:7,.0f} us CPU/sample growth '
          f'{r["growth_mb"]:6.0f} MB (anon {r["anon_growth_mb"]:.0f}; by '
          f'quarter {r["growth_trace_mb"]}; planned {r["plan_mb"] or 0:.0f}) '
          f'episodes/batch {r["episodes"]} datasets/batch {r["datasets"]:.2f}'
          + (f' | warm-up {args.warmup} batches: {r["warmup_seconds"]:.1f} s, '
             f'{1e6 * r["warmup_cpu"] / (BATCH * args.warmup):,.0f} us CPU/sample'
             if args.warmup else ''), flush=True)
  if args.stats:
    print(statistics_times(paths))


if __name__ == '__main__':
  main()
