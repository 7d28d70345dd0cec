"""Benchmark: random-access sampling against pools, shuffle buffers and Grain.

Not a test. Datasets (written once under ``--data-dir``), at 1x and 8x size:

  vectors   200 (1x) / 1600 (8x) episodes x 500 steps (minus 0-2), observation
            float32[17], action float32[6] (``tests/tfds_fixtures``); samples:
            4-step windows, batches of 256;
  images    the camera dataset of ``bench_images.py``: 48 (1x) / 384 (8x)
            episodes x 120 steps, a 256x256 and a 128x128 JPEG camera, state,
            action, language; samples: Octo-shaped (2-frame history, 4-action
            chunk, last step valid), batches of 64.

Contenders, each run in its own process (for its peak RSS), taking turns run
by run:

  pooled    rlds_lite's pooled pipeline: ``pipeline.windows_dataset`` on
            ``rlds_lite.load(dense=True)`` (vectors), or
            ``pipeline.robot_samples_dataset`` (images), repeated;
  shuffle   a shuffle buffer of (at least) the sampler's quality: every
            sample of the dataset in the buffer (a uniform shuffle; no buffer
            reaches the spread order's episodes per batch), then ``batch``
            (images: frames kept encoded in the buffer, decoded per batch, as
            the Octo recipe does);
  grain     Grain reading TFDS's ``data_source`` of whole episodes (the
            dataset rewritten as array_record), samples cut in a Grain
            ``map`` (one episode parsed per sample; frames left encoded by a
            ``SkipDecoding`` decoder and only the sample's decoded), batched
            by Grain;
  random    ``rlds_lite.random_access.sample_batches`` on the chunk dataset
            (``convert`` with its default record size: 16 steps of vectors,
            2 steps of the cameras), spread order;
  random_uniform  the same with ``order='uniform'``.

Measured, each consumed by a Python loop as a training loop would: samples/s
(``--batches`` batches after the first), CPU-seconds per sample (process CPU
time, all threads), distinct episodes per batch, peak RSS and RSS growth over
the TensorFlow runtime (peak minus the RSS after TF ran a trivial pipeline),
the chunk shards' memory-mapped pages in that RSS at the end (from
``/proc/self/smaps``: page cache, which the kernel may reclaim; at most
``mapped_budget``, 64 MiB by default), time to the first batch (building the pipeline
included), and resume exactness (random: the next 3 batches of a
``SampleIterator`` restored from a saved state equal those of the run that
saved it; pooled: the same with ``pipeline.ResumableIterator``, with the
checkpoint's size).

Usage:
  python benchmarks/bench_random_access.py [--quick] [--repeats N]
      [--only random,pooled] [--datasets vectors,images] [--scales 1,8]
      [--write-results]
"""

import rlds_lite
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, 'tests'))
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')


CONTENDERS = ('pooled', 'shuffle', 'grain', 'random', 'random_uniform')
VECTORS = dict(episodes=200, steps=500, batch=256, window=4)
IMAGES = dict(episodes=48, steps=120, batch=64, history=2, chunk=4)


# ------------------------------------------------------------------ datasets


def vectors_dataset(data_dir: str, scale: int) -> str:
  import tfds_fixtures  # pylint: disable=g-import-not-at-top
  episodes = VECTORS['episodes'] * scale

  def make():
    return tfds_fixtures.vector_features(), {
        'train': tfds_fixtures.vector_episodes(episodes, VECTORS['steps'])}

  return tfds_fixtures.build_if_missing(data_dir, f'ra_vectors_{scale}x', make)


def images_dataset(data_dir: str, scale: int) -> str:
  import bench_images  # pylint: disable=g-import-not-at-top
  return bench_images.build_dataset(data_dir, IMAGES['episodes'] * scale,
                                    IMAGES['steps'])


def array_record_copy(path: str) -> str:
  """The dataset's records rewritten as array_record (for tfds.data_source)."""
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  from rlds_lite import loading  # pylint: disable=g-import-not-at-top
  from rlds_lite.catalog import records  # pylint: disable=g-import-not-at-top
  from rlds_lite.tfds import EpisodeWriter, FileOptions  # pylint: disable=g-import-not-at-top
  out_dir = os.path.dirname(os.path.dirname(path))
  name = os.path.basename(os.path.dirname(path)) + '_ar'
  target = os.path.join(out_dir, name, '1.0.0')
  if os.path.exists(os.path.join(target, 'dataset_info.json')):
    return target
  builder = tfds.builder_from_directory(path)
  files = records.split_files(rlds_lite.open(path).builder, 'train')
  with EpisodeWriter(out_dir, name, builder.info.features,
                     options=FileOptions(file_format='array_record')) as writer:
    for record in records.iterate_records(files):
      writer.add_serialized_episode(record)
  return writer.path


def chunk_copy(path: str) -> Dict[str, Any]:
  from rlds_lite import random_access  # pylint: disable=g-import-not-at-top
  target = os.path.dirname(path.rstrip('/')) + '_chunks/1.0.0'
  if os.path.exists(os.path.join(target, 'dataset_info.json')):
    return {'path': target, 'seconds': None}
  start = time.perf_counter()
  random_access.convert(path, target, progress=False)
  return {'path': target, 'seconds': time.perf_counter() - start}


# ---------------------------------------------------------------- contenders


def kind_of(dataset: str):
  from rlds_lite import random_access  # pylint: disable=g-import-not-at-top
  if dataset == 'vectors':
    return random_access.Windows(VECTORS['window'])
  return random_access.RobotSamples(IMAGES['history'], IMAGES['chunk'],
                                    last_step='valid')


def batch_size(dataset: str) -> int:
  return VECTORS['batch'] if dataset == 'vectors' else IMAGES['batch']


def pooled(dataset: str, paths: Dict[str, str]):
  import rlds_lite  # pylint: disable=g-import-not-at-top
  from rlds_lite import pipeline  # pylint: disable=g-import-not-at-top
  if dataset == 'vectors':
    episodes = rlds_lite.load(paths['source'], dense=True).repeat()
    return pipeline.windows_dataset(episodes,
                                    rlds_lite.Windows(VECTORS['window']),
                                    VECTORS['batch'], seed=0,
                                    episode_fields='episode_id')
  kind = rlds_lite.RobotSamples(history=IMAGES['history'],
                                action_chunk=IMAGES['chunk'], last_step='valid')
  return pipeline.robot_samples_dataset(
      rlds_lite.open(paths['source']), kind, IMAGES['batch'],
      episode_fields='episode_id', seed=0).repeat()


def shuffle_buffer(dataset: str, paths: Dict[str, str]):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import rlds_lite  # pylint: disable=g-import-not-at-top
  from rlds_lite import dense, images  # pylint: disable=g-import-not-at-top
  from rlds_lite import random_access  # pylint: disable=g-import-not-at-top
  kind = kind_of(dataset)
  size = len(random_access.SampleIndex.build(
      kind, random_access.ChunkStorage(paths['chunks'])))
  if dataset == 'vectors':
    episodes = rlds_lite.load(paths['source'], dense=True)

    def samples(episode):
      out = dense.windows(episode['steps'], VECTORS['window'])
      n = tf.shape(out['observation'])[0]
      out['episode_id'] = tf.fill([n], episode['episode_id'])
      return tf.data.Dataset.from_tensor_slices(out)

    return episodes.repeat().flat_map(samples).shuffle(
        size, seed=0).batch(VECTORS['batch'])
  episodes, specs = images.load_encoded(paths['source'])

  def robot(episode):
    out = dense.robot_samples(episode['steps'], rlds_lite.RobotSamples(
        history=IMAGES['history'], action_chunk=IMAGES['chunk'],
        last_step='valid'))
    n = tf.shape(out['action'])[0]
    out['episode_id'] = tf.fill([n], episode['episode_id'])
    return tf.data.Dataset.from_tensor_slices(out)

  def decode(batch):
    observation = dict(batch['observation'])
    for key in ('image_primary', 'image_wrist'):
      spec = specs[f'observation/{key}']
      frames = tf.reshape(observation[key], [-1])
      decoded = images.decode_frames(frames, spec)
      observation[key] = tf.reshape(
          decoded, tf.concat([tf.shape(observation[key]), spec.shape], 0))
    return {**batch, 'observation': observation}

  return episodes.repeat().flat_map(robot).shuffle(size, seed=0).batch(
      IMAGES['batch']).map(decode, num_parallel_calls=tf.data.AUTOTUNE)


def grain_pipeline(dataset: str, paths: Dict[str, str]):
  """Grain over TFDS's data_source of whole episodes; samples cut in a map."""
  import grain  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  from rlds_lite import random_access  # pylint: disable=g-import-not-at-top
  index = random_access.SampleIndex.build(
      kind_of(dataset), random_access.ChunkStorage(paths['chunks']))
  episode_of, start_of = index.episode.astype(np.int64), index.start.astype(
      np.int64)
  builder = tfds.builder_from_directory(paths['array_record'])
  if dataset == 'vectors':
    source = builder.as_data_source(split='train')
    size = VECTORS['window']

    def cut(i):   # TFDS gives the episode's steps as a sequence of steps.
      steps = source[int(episode_of[i])]['steps']
      t = int(start_of[i])
      window = [steps[k] for k in range(t, t + size)]
      return {key: np.stack([step[key] for step in window])
              for key in ('observation', 'action', 'reward')} | {
                  'episode_id': episode_of[i]}
  else:
    cameras = ('image_primary', 'image_wrist')
    source = builder.as_data_source(split='train', decoders={'steps': {
        'observation': {c: tfds.decode.SkipDecoding() for c in cameras}}})
    history, chunk = IMAGES['history'], IMAGES['chunk']

    def cut(i):   # TFDS gives the episode's steps as a sequence of steps.
      steps = source[int(episode_of[i])]['steps']
      t, length = int(start_of[i]), len(steps)
      frames = [steps[int(f)]['observation']
                for f in np.maximum(np.arange(t - history + 1, t + 1), 0)]
      actions = [steps[int(a)]['action']
                 for a in np.minimum(np.arange(t, t + chunk), length - 1)]
      observation = {c: np.stack([tf.io.decode_jpeg(f[c]).numpy()
                                  for f in frames]) for c in cameras}
      observation['state'] = np.stack([f['state'] for f in frames])
      return {'observation': observation, 'action': np.stack(actions),
              'episode_id': episode_of[i]}

  return (grain.MapDataset.range(len(index)).shuffle(seed=0).repeat()
          .map(cut).batch(batch_size(dataset)).to_iter_dataset(
              grain.ReadOptions(num_threads=2, prefetch_buffer_size=4)))


def random_pipeline(dataset: str, paths: Dict[str, str], order: str):
  from rlds_lite import random_access  # pylint: disable=g-import-not-at-top
  return random_access.sample_batches(
      paths['chunks'], kind_of(dataset), batch_size(dataset), seed=0,
      epochs=random_access.Epochs(order=order),
      outputs=random_access.Outputs(sample_info=True))


# ------------------------------------------------------------------ running


def memory_mb() -> Dict[str, float]:
  out = {}
  with open('/proc/self/status') as f:
    for line in f:
      key = line.split(':')[0]
      if key in ('VmHWM', 'VmRSS', 'RssAnon', 'RssFile'):
        out[key] = int(line.split()[1]) / 1024
  return out


def mapped_mb(directory: str) -> float:
  """RSS of this process's mappings of files under ``directory`` (smaps)."""
  total, inside = 0, False
  directory = os.path.realpath(directory)
  with open('/proc/self/smaps') as f:
    for line in f:
      parts = line.split()
      if '-' in parts[0] and len(parts) >= 5 and not line.startswith(' '):
        inside = len(parts) >= 6 and parts[5].startswith(directory)
      elif inside and parts[0] == 'Rss:':
        total += int(parts[1])
  return total / 1024


def episode_ids(batch: Any, dataset: str, name: str):
  import numpy as np  # pylint: disable=g-import-not-at-top
  if name.startswith('random'):
    return np.asarray(batch['episode_index'])
  return np.asarray(batch['episode_id']).reshape(-1)


def resume_check(name: str, dataset: str, paths: Dict[str, str]
                 ) -> Dict[str, Any]:
  """Save after 2 batches, restore in a new iterator: are the next 3 equal?"""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from rlds_lite import pipeline, random_access  # pylint: disable=g-import-not-at-top
  work = tempfile.mkdtemp()
  if name.startswith('random'):
    order = 'uniform' if name.endswith('uniform') else 'spread'
    make = lambda: random_access.SampleIterator(  # pylint: disable=g-long-lambda
        paths['chunks'], kind_of(dataset), batch_size(dataset), seed=0,
        epochs=random_access.Epochs(order=order),
        outputs=random_access.Outputs(sample_info=True))
    key = lambda b: np.asarray(b['sample_id'])  # pylint: disable=g-long-lambda
    it = make()
    next(it), next(it)
    path = it.save(os.path.join(work, 'state.json'))
    want = [key(next(it)) for _ in range(3)]
    again = make()
    again.restore(path)
    got = [key(next(again)) for _ in range(3)]
    size = os.path.getsize(path)
  elif name == 'pooled':
    make = lambda: pipeline.ResumableIterator(pooled(dataset, paths))  # pylint: disable=g-long-lambda
    key = lambda b: np.asarray(b['episode_id']).reshape(-1)  # pylint: disable=g-long-lambda
    it = make()
    next(it), next(it)
    path = it.save(os.path.join(work, 'ckpt'))
    want = [key(next(it)) for _ in range(3)]
    again = make()
    again.restore(path)
    got = [key(next(again)) for _ in range(3)]
    size = sum(os.path.getsize(os.path.join(work, f))
               for f in os.listdir(work))
  else:
    return {}
  del tf
  return {'resume_exact': all(np.array_equal(a, b) for a, b in zip(want, got)),
          'state_bytes': size}


def run_child(name: str, dataset: str, paths: Dict[str, str], batches: int
              ) -> Dict[str, Any]:
  import numpy as np  # pylint: disable=g-import-not-at-top
  base = bench_images_rss()
  start = time.perf_counter()
  if name == 'pooled':
    ds = pooled(dataset, paths)
  elif name == 'shuffle':
    ds = shuffle_buffer(dataset, paths)
  elif name == 'grain':
    ds = grain_pipeline(dataset, paths)
  else:
    ds = random_pipeline(dataset, paths,
                         'uniform' if name.endswith('uniform') else 'spread')
  iterator = iter(ds)
  first = next(iterator)
  first_batch = time.perf_counter() - start
  distinct = [len(np.unique(episode_ids(first, dataset, name)))]
  samples = 0
  t0, c0 = time.perf_counter(), time.process_time()
  for _ in range(batches):
    batch = next(iterator)
    ids = episode_ids(batch, dataset, name)
    samples += len(ids)
    distinct.append(len(np.unique(ids)))
  seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
  memory = memory_mb()
  result = {'samples': samples, 'seconds': seconds, 'cpu': cpu,
            'first_batch': first_batch, 'distinct': float(np.mean(distinct)),
            'rss_mb': memory['VmHWM'], 'base_rss_mb': base,
            'rss_file_mb': mapped_mb(paths['chunks'])}
  del iterator, ds
  result.update(resume_check(name, dataset, paths))
  return result


def bench_images_rss() -> float:
  import bench_images  # pylint: disable=g-import-not-at-top
  return bench_images.tf_runtime_rss_mb()


def spawn(name: str, dataset: str, paths: Dict[str, str], batches: int
          ) -> Dict[str, Any]:
  cmd = [sys.executable, os.path.abspath(__file__), '--child', name,
         '--child-dataset', dataset, '--paths', json.dumps(paths),
         '--batches', str(batches)]
  out = subprocess.run(cmd, check=False, capture_output=True, text=True)
  if out.returncode:
    sys.exit(f'{name} ({dataset}) failed:\n{out.stderr[-3000:]}')
  result = json.loads([line for line in out.stdout.splitlines()
                       if line.startswith('{')][-1])
  print(f'  {dataset:8s} {name:15s} {result["samples"] / result["seconds"]:9,.0f}'
        f' /s {1e6 * result["cpu"] / result["samples"]:7,.1f} us CPU/sample'
        f' {result["distinct"]:6.1f} episodes/batch  peak '
        f'{result["rss_mb"]:6.0f} MB growth '
        f'{result["rss_mb"] - result["base_rss_mb"]:5.0f} MB (shard pages '
        f'{result["rss_file_mb"]:4.0f})  first batch '
        f'{result["first_batch"]:5.1f} s'
        + (f'  resume {"exact" if result["resume_exact"] else "DIFFERS"} '
           f'({result["state_bytes"]:,} B)' if 'resume_exact' in result
           else ''), flush=True)
  return result


# ------------------------------------------------------------------ report


def rate(r: Dict[str, Any]) -> float:
  return r['samples'] / r['seconds']


def best(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
  return max(runs, key=rate)


def report(results, info) -> List[str]:
  lines = ['| dataset | scale | contender | samples/s | us CPU/sample | '
           'distinct episodes/batch | peak RSS MB | RSS growth MB | chunk '
           'shard pages in RSS MB | first batch s | resume |',
           '|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|']
  for (dataset, scale), by_name in results.items():
    for name, runs in by_name.items():
      r = best(runs)
      resume = ('' if 'resume_exact' not in r else
                ('exact' if all(x['resume_exact'] for x in runs) else
                 'DIFFERS') + f' ({r["state_bytes"]:,} B)')
      lines.append(
          f'| {dataset} | {scale}x | {name} | {rate(r):,.0f} | '
          f'{1e6 * r["cpu"] / r["samples"]:.1f} | {r["distinct"]:.1f} | '
          f'{r["rss_mb"]:.0f} | {r["rss_mb"] - r["base_rss_mb"]:.0f} | '
          f'{r["rss_file_mb"]:.0f} | {r["first_batch"]:.1f} | {resume} |')
  lines.append('')
  lines.append('Targets (random = spread order):')
  for (dataset, scale), by_name in results.items():
    if 'random' not in by_name:
      continue
    r = best(by_name['random'])
    size = batch_size(dataset)
    episodes = info[(dataset, scale)]['episodes']
    want = 0.95 * min(size, episodes)
    lines.append(f'- {dataset} {scale}x: distinct episodes {r["distinct"]:.1f}'
                 f' vs >= {want:.1f}: {"met" if r["distinct"] >= want else "NOT met"}')
    for other, target in (('pooled', 0.7 if dataset == 'vectors' else 0.9),
                          ('grain', 2.0)):
      if other in by_name:
        ratio = rate(r) / rate(best(by_name[other]))
        lines.append(f'  - throughput vs {other}: {ratio:.2f}x (target '
                     f'{target}x: {"met" if ratio >= target else "NOT met"});'
                     f' per CPU-second '
                     f'{best(by_name[other])["cpu"] / best(by_name[other])["samples"] / (r["cpu"] / r["samples"]):.2f}x')
  for dataset in {d for d, _ in results}:
    runs = {s: best(by_name['random']) for (d, s), by_name in results.items()
            if d == dataset and 'random' in by_name}
    if len(runs) == 2:
      small, large = (runs[s] for s in sorted(runs))
      grow = [r['rss_mb'] - r['base_rss_mb'] for r in (small, large)]
      anon = [g - r['rss_file_mb'] for g, r in zip(grow, (small, large))]
      lines.append(f'- {dataset} RSS growth of random, {min(runs)}x -> '
                   f'{max(runs)}x: {grow[0]:.0f} -> {grow[1]:.0f} MB '
                   f'({grow[1] / max(grow[0], 1):.2f}x); without the chunk '
                   f'shards\' mapped pages (page cache, dropped past '
                   f'mapped_budget) {anon[0]:.0f} -> {anon[1]:.0f} MB '
                   f'({anon[1] / max(anon[0], 1):.2f}x); target: within 10%')
  return lines


def write_results(lines: List[str], header: str, notes: List[str]) -> None:
  path = os.path.join(HERE, 'RESULTS.md')
  with open(path) as f:
    text = f.read()
  section = '## Random access (issue 20)'
  body = '\n'.join([section, '', header, ''] + lines + [''] + notes) + '\n'
  if section in text:
    start = text.index(section)
    rest = text.find('\n## ', start + len(section))
    text = text[:start] + body + (text[rest + 1:] if rest >= 0 else '')
  else:
    text = text.rstrip('\n') + '\n\n' + body
  with open(path, 'w') as f:
    f.write(text)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--data-dir', default='/tmp/rlds_lite_bench')
  parser.add_argument('--repeats', type=int, default=2)
  parser.add_argument('--batches', type=int, default=0,
                      help='batches timed per run (default: 300 vectors, '
                      '200 images; grain: a tenth)')
  parser.add_argument('--quick', action='store_true',
                      help='1x and 2x instead of 1x and 8x, fewer batches, '
                      'one repeat')
  parser.add_argument('--only', default='')
  parser.add_argument('--datasets', default='vectors,images')
  parser.add_argument('--scales', default='')
  parser.add_argument('--write-results', action='store_true')
  parser.add_argument('--child', default='')
  parser.add_argument('--child-dataset', default='')
  parser.add_argument('--paths', default='{}')
  args = parser.parse_args()
  if args.child:
    print(json.dumps(run_child(args.child, args.child_dataset,
                               json.loads(args.paths), args.batches)))
    return
  scales = [int(s) for s in (args.scales or ('1,2' if args.quick else '1,8'))
            .split(',')]
  repeats = 1 if args.quick else args.repeats
  names = [n for n in CONTENDERS if not args.only or n in args.only.split(',')]
  datasets = args.datasets.split(',')
  start = time.time()
  load_start = os.getloadavg()
  paths, info = {}, {}
  for dataset in datasets:
    for scale in scales:
      source = (vectors_dataset if dataset == 'vectors' else images_dataset)(
          args.data_dir, scale)
      chunks = chunk_copy(source)
      paths[(dataset, scale)] = {'source': source, 'chunks': chunks['path'],
                                 'array_record': array_record_copy(source)}
      info[(dataset, scale)] = {
          'episodes': (VECTORS if dataset == 'vectors' else IMAGES)[
              'episodes'] * scale, 'convert_seconds': chunks['seconds']}
      print(f'{dataset} {scale}x: {source} (chunks: {chunks["path"]}, '
            f'converted in {chunks["seconds"]} s)', flush=True)
  results: Dict[Any, Dict[str, List[Dict[str, Any]]]] = {}
  for rep in range(repeats):
    print(f'turn {rep + 1}/{repeats}', flush=True)
    for dataset in datasets:
      for scale in scales:
        for name in names:
          batches = args.batches or (300 if dataset == 'vectors' else 200)
          if args.quick:
            batches = max(batches // 4, 5)
          if name == 'grain':
            batches = max(batches // 10, 3)
          result = spawn(name, dataset, paths[(dataset, scale)], batches)
          results.setdefault((dataset, scale), {}).setdefault(
              name, []).append(result)
  lines = report(results, info)
  print('\n'.join(lines))
  if args.write_results:
    header = (f'`python benchmarks/bench_random_access.py '
              f'{" ".join(sys.argv[1:])}`, '
              f'{datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC; '
              f'{os.cpu_count()} CPUs; load average {load_start[0]:.1f} at '
              f'the start, {os.getloadavg()[0]:.1f} at the end; '
              f'{time.time() - start:.0f} s.')
    timed = [f'{d} {s}x {v["convert_seconds"]:.1f} s'
             for (d, s), v in info.items() if v['convert_seconds'] is not None]
    notes = [('Conversion to chunk datasets (default record size): ' +
              ', '.join(timed) + '.') if timed else
             'Conversion to chunk datasets: not timed (they existed from an '
             'earlier run).']
    write_results(lines, header, notes)


if __name__ == '__main__':
  main()
