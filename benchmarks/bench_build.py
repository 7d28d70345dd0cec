"""Benchmark: building TFDS datasets from EnvLogger recordings and episodes.

Not a test. One run records three EnvLogger datasets with the built-in
environments (Catch: float32 [10, 5] boards; Reach: float32 [6] vectors, a
noisy expert; CatchPixels: uint8 64x64x3 images, PNG-encoded) and measures,
on the same recordings and with the same features (inferred by rlds_lite
from the recorded specs, float64 rewards stored exactly):

  (a) conversion, recording -> TFDS dataset:
      ``rlds_lite.tfds.build_from_envlogger`` vs a TFDS
      ``GeneratorBasedBuilder`` whose ``_generate_examples`` is TFDS's own
      ``tfds.rlds.rlds_base.generate_examples`` (TFDS's EnvLogger reader and
      per-step encoding; the path the RLDS docs recommend);
  (b) writing episodes already in memory:
      ``rlds_lite.tfds.EpisodeWriter`` given columnar episodes (``{'steps':
      {field: [T, ...]}}``, its fast path) and given RLDS step lists, vs
      upstream RLDS 0.1.8 ``rlds.tfds.episode_writer.EpisodeWriter`` given
      step lists (its input form).

Every output is read back (``rlds_lite.load(dense=True)``) and checked to
hold the same episodes as the rlds_lite conversion before the numbers count.
Throughput is RLDS steps per second of wall time (best of ``--repeats``;
the contenders take turns, so each sees the same minutes of the machine);
the ratio per CPU-second (process CPU time, all threads) is less sensitive to
other load on the machine.

Needs upstream rlds (``pip install --no-deps rlds==0.1.8``, or the ``bench``
extra); a stub ``reverb`` module is put in ``sys.modules`` before ``import
rlds`` (dm-reverb does not install beside TF 2.21). TFDS's EnvLogger reader
needs EnvLogger's NumPy 2 aliases: ``rlds_lite.envlogger.import_envlogger()``
adds them first.

Usage:
  python benchmarks/bench_build.py [--data-dir DIR] [--repeats 3]
      [--scale 1.0] [--write-results]
"""

import argparse
import datetime
import functools
import os
import platform
import shutil
import sys
import time
import types
from typing import Any, Callable, Dict, List, Tuple

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
os.environ.setdefault('GLOG_minloglevel', '1')

from absl import logging  # pylint: disable=g-import-not-at-top
from etils import epath
import numpy as np
import tensorflow_datasets as tfds

import rlds_lite
from rlds_lite import envlogger
from rlds_lite import envs
from rlds_lite import tfds as rlds_tfds
from rlds_lite.tfds import envlogger_episodes

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = 5.0
CORE_FIELDS = ('observation', 'action', 'reward', 'discount', 'is_first',
               'is_last', 'is_terminal')


# ----------------------------------------------------------------------------
# Recordings.


class _NoisyExpert:
  """Expert plus noise (epsilon-random for discrete actions), seedable."""

  def __init__(self, env: Any, noise: float):
    self._env, self._noise = env, noise
    self._rng = np.random.default_rng(0)

  def seed(self, seed: int) -> None:
    self._rng = np.random.default_rng(seed)

  def __call__(self, timestep):
    action = self._env.expert_policy(timestep)
    spec = self._env.action_spec()
    if hasattr(spec, 'num_values'):
      if self._rng.random() < self._noise:
        return np.int64(self._rng.integers(spec.num_values))
      return action
    noisy = action + self._rng.normal(0.0, self._noise, action.shape)
    return np.clip(noisy, spec.minimum, spec.maximum).astype(spec.dtype)


def datasets(scale: float) -> Dict[str, Tuple[str, Dict[str, Any], float, int]]:
  """``{label: (env name, env kwargs, noise, episodes)}``."""
  return {
      'catch (board 10x5)': ('catch', {}, 0.2, int(2000 * scale)),
      'reach (vector 6)': ('reach', {}, 0.3, int(2000 * scale)),
      'reach, long episodes (vector 6)': (
          'reach', {'time_limit': 500}, 30.0, int(60 * scale)),
      'catch_pixels (64x64x3 PNG)': (
          'catch_pixels', {'height': 64, 'width': 64}, 0.2, int(1000 * scale)),
  }


def record(data_dir: str, label: str, env_name: str, kwargs: Dict[str, Any],
           noise: float, num_episodes: int) -> str:
  path = os.path.join(data_dir, 'recordings',
                      ''.join(c if c.isalnum() else '_' for c in label))
  env = envs.make(env_name, **kwargs)
  envlogger.record(env, _NoisyExpert(env, noise), path, num_episodes, seed=0,
                   progress=False, if_exists='overwrite')
  print(f'  recorded {label}: {num_episodes} episodes -> {path}')
  return path


# ----------------------------------------------------------------------------
# The contenders.


def _ds_config(name: str, features: tfds.features.FeaturesDict
               ) -> tfds.rlds.rlds_base.DatasetConfig:
  steps = features['steps'].feature
  return tfds.rlds.rlds_base.DatasetConfig(
      name=name,
      observation_info=steps['observation'],
      action_info=steps['action'],
      reward_info=steps['reward'],
      discount_info=steps['discount'],
      episode_metadata_info={'episode_id': features['episode_id']})


def tfds_generate_examples_builder(recording: str,
                                   features: tfds.features.FeaturesDict
                                   ) -> type:
  """A GeneratorBasedBuilder on TFDS's ``rlds_base.generate_examples``."""
  config = _ds_config('tfds_path', features)

  class TfdsPath(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    VERSION = tfds.core.Version('1.0.0')

    def _info(self):
      return tfds.rlds.rlds_base.build_info(config, self)

    def _split_generators(self, dl_manager):
      del dl_manager
      return {'train': self._generate_examples(recording)}

    def _generate_examples(self, path):
      return tfds.rlds.rlds_base.generate_examples(epath.Path(path))

  return TfdsPath


def upstream_rlds():
  """``import rlds`` (0.1.8) with a stub ``reverb`` (pattern_map needs it)."""
  if 'reverb' not in sys.modules:
    reverb = types.ModuleType('reverb')
    writer = types.ModuleType('reverb.structured_writer')
    writer.__getattr__ = lambda name: object  # Any annotation resolves.
    reverb.structured_writer = writer
    sys.modules['reverb'] = reverb
  import rlds  # pylint: disable=g-import-not-at-top
  from rlds.tfds import episode_writer  # pylint: disable=g-import-not-at-top
  del rlds
  return episode_writer


def step_lists(episodes: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
  """RLDS episodes whose ``steps`` is a list of step dicts (upstream's form)."""
  out = []
  for episode in episodes:
    steps = episode['steps']
    length = len(steps['is_first'])
    out.append({**{k: v for k, v in episode.items() if k != 'steps'},
                'steps': [{k: v[i] for k, v in steps.items()}
                          for i in range(length)]})
  return out


def run_conversion_ours(recording, features, out_dir, name):
  del features
  return rlds_tfds.build_from_envlogger(recording, name=name,
                                        data_dir=out_dir)


def run_conversion_tfds(recording, features, out_dir, name):
  del name
  builder = tfds_generate_examples_builder(recording, features)(
      data_dir=out_dir)
  builder.download_and_prepare()
  return os.fspath(builder.data_dir)


def run_writer_ours(episodes, features, out_dir, name):
  with rlds_tfds.EpisodeWriter(out_dir, name, features) as writer:
    for episode in episodes:
      writer.add_episode(episode)
  return writer.path


def run_writer_upstream(episodes, features, out_dir, name):
  episode_writer = upstream_rlds()
  path = os.path.join(out_dir, name)
  os.makedirs(path)  # Upstream needs it to exist.
  writer = episode_writer.EpisodeWriter(path, _ds_config(name, features))
  for episode in episodes:
    writer.add_episode(episode)
  writer.close()
  return path


# ----------------------------------------------------------------------------
# Measuring and checking.


def timed(fn: Callable[[], str]) -> Tuple[str, float, float]:
  wall, cpu = time.perf_counter(), time.process_time()
  path = fn()
  return path, time.perf_counter() - wall, time.process_time() - cpu


def dense_episodes(path: str) -> Dict[int, Dict[str, np.ndarray]]:
  """``{episode_id: core step fields}`` of a dataset directory."""
  out = {}
  for episode in rlds_lite.load(path, dense=True):
    out[int(episode['episode_id'])] = {
        k: episode['steps'][k].numpy() for k in CORE_FIELDS}
  return out


def assert_same(reference, path: str, label: str) -> None:
  got = dense_episodes(path)
  if sorted(got) != sorted(reference):
    raise AssertionError(f'{label}: episode ids differ from the reference')
  for key, steps in reference.items():
    for field in CORE_FIELDS:
      if not np.array_equal(got[key][field], steps[field]):
        raise AssertionError(f'{label}: episode {key} field {field} differs')


def measure(contenders, repeats: int, work_dir: str, num_steps: int,
            label: str) -> Dict[str, Dict[str, float]]:
  """Best run of each contender; the contenders take turns, run by run.

  Taking turns (a, b, c, a, b, c, ...) rather than running each contender's
  repeats back to back puts every contender through the same minutes of this
  machine's varying speed.
  """
  best: Dict[str, Dict[str, float]] = {}
  reference = None
  for r in range(repeats):
    for name, fn in contenders:
      out_dir = os.path.join(work_dir, f'{name}_{r}')
      shutil.rmtree(out_dir, ignore_errors=True)
      os.makedirs(out_dir)
      path, wall, cpu = timed(functools.partial(fn, out_dir, f'bench_{r}'))
      if reference is None:
        reference = dense_episodes(path)
      elif r == 0:
        assert_same(reference, path, f'{label}: {name}')
      if name not in best or wall < best[name]['wall']:
        best[name] = {'wall': wall, 'cpu': cpu}
      shutil.rmtree(out_dir, ignore_errors=True)
  for name, result in best.items():
    result['rate'] = num_steps / result['wall']
    result['cpu_rate'] = num_steps / max(result['cpu'], 1e-9)
    print(f'    {name}: {result["rate"]:,.0f} steps/s '
          f'({result["wall"]:.2f}s wall, {result["cpu"]:.2f}s CPU)')
  return best


def measure_read(recording: str, repeats: int, num_steps: int
                 ) -> Dict[str, float]:
  """rlds_lite's reading alone (``read_rlds_episodes``), least CPU of N."""
  best = None
  for _ in range(repeats):
    def read():
      for _ in rlds_tfds.read_rlds_episodes(recording):
        pass
      return ''
    _, wall, cpu = timed(read)
    if best is None or cpu < best['cpu']:
      best = {'wall': wall, 'cpu': cpu}
  best['rate'] = num_steps / best['wall']
  print(f'    read_rlds_episodes only: {best["rate"]:,.0f} steps/s')
  return best


def machine_info() -> str:
  cpus = os.cpu_count()
  model = platform.processor() or platform.machine()
  try:
    with open('/proc/cpuinfo') as f:
      for line in f:
        if line.startswith('model name'):
          model = line.split(':', 1)[1].strip()
          break
  except OSError:
    pass
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  load = os.getloadavg()
  return (f'{model}, {cpus} CPUs, Python {platform.python_version()}, '
          f'TF {tf.__version__}, TFDS {tfds.__version__}; load average at '
          f'start {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}')


COMPARISONS = (
    ('conversion', 'build_from_envlogger', 'tfds rlds_base.generate_examples'),
    ('writer', 'EpisodeWriter (columnar)', 'upstream rlds EpisodeWriter'),
    ('writer', 'EpisodeWriter (step lists)', 'upstream rlds EpisodeWriter'),
)


def report(all_results: Dict[str, Dict[str, Dict[str, float]]],
           steps: Dict[str, int]) -> List[str]:
  lines = [
      '| dataset (RLDS steps) | rlds_lite | steps/s | baseline | steps/s | '
      f'ratio (target {TARGET:.0f}x) | ratio per CPU-second |',
      '|---|---|---:|---|---:|---:|---:|',
  ]
  for label, results in all_results.items():
    for _, ours, theirs in COMPARISONS:
      a, b = results.get(ours), results.get(theirs)
      if not a or not b:
        continue
      ratio = a['rate'] / b['rate']
      mark = 'met' if ratio >= TARGET else 'NOT met'
      lines.append(
          f'| {label} ({steps[label]:,}) | {ours} | {a["rate"]:,.0f} | '
          f'{theirs} | {b["rate"]:,.0f} | {ratio:.1f}x ({mark}) | '
          f'{a["cpu_rate"] / b["cpu_rate"]:.1f}x |')
  lines += [
      '',
      '| dataset | rlds_lite reading alone (`read_rlds_episodes`) steps/s | '
      'share of `build_from_envlogger` CPU time |',
      '|---|---:|---:|',
  ]
  for label, results in all_results.items():
    read, build = results.get('read only'), results.get('build_from_envlogger')
    if read and build:
      lines.append(f'| {label} | {read["rate"]:,.0f} | '
                   f'{100 * read["cpu"] / build["cpu"]:.0f}% |')
  return lines


def write_results(lines: List[str], info: str, notes: List[str]) -> None:
  """Replaces (or appends) the ``## Build`` section of RESULTS.md."""
  path = os.path.join(HERE, 'RESULTS.md')
  header = '## Build'
  section = [header, '',
             f'`python benchmarks/bench_build.py --write-results`, '
             f'{datetime.date.today().isoformat()}; {info}.', ''] + lines + [
                 ''] + notes + ['']
  text = open(path).read() if os.path.exists(path) else '# Benchmarks\n\n'
  if header + '\n' in text:
    start = text.index(header + '\n')
    rest = text.find('\n## ', start + len(header))
    text = text[:start] + '\n'.join(section) + (text[rest + 1:]
                                                if rest >= 0 else '')
  else:
    text = text.rstrip('\n') + '\n\n' + '\n'.join(section)
  with open(path, 'w') as f:
    f.write(text)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--data-dir', default='/tmp/rlds_lite_bench_build')
  parser.add_argument('--repeats', type=int, default=3,
                      help='runs per contender; the fastest is kept')
  parser.add_argument('--scale', type=float, default=1.0,
                      help='multiplies the number of episodes')
  parser.add_argument('--write-results', action='store_true')
  args = parser.parse_args()
  logging.set_verbosity(logging.ERROR)
  envlogger.import_envlogger()  # NumPy 2 aliases for TFDS's reader too.
  start = time.perf_counter()
  info = machine_info()
  print(info)
  shutil.rmtree(args.data_dir, ignore_errors=True)
  all_results, steps = {}, {}
  for label, (env_name, kwargs, noise, num_episodes) in datasets(
      args.scale).items():
    print(f'{label}:')
    recording = record(args.data_dir, label, env_name, kwargs, noise,
                       num_episodes)
    features = envlogger_episodes.features_from_recordings([recording])
    episodes = [e for _, e in rlds_tfds.read_rlds_episodes(recording)]
    listed = step_lists(episodes)
    steps[label] = sum(len(e['steps']['is_first']) for e in episodes)
    work_dir = os.path.join(args.data_dir, 'out', os.path.basename(recording))
    partial = functools.partial
    contenders = [
        ('build_from_envlogger',
         partial(run_conversion_ours, recording, features)),
        ('tfds rlds_base.generate_examples',
         partial(run_conversion_tfds, recording, features)),
        ('EpisodeWriter (columnar)', partial(run_writer_ours, episodes,
                                             features)),
        ('EpisodeWriter (step lists)', partial(run_writer_ours, listed,
                                               features)),
        ('upstream rlds EpisodeWriter', partial(run_writer_upstream, listed,
                                                features)),
    ]
    all_results[label] = measure(contenders, args.repeats, work_dir,
                                 steps[label], label)
    all_results[label]['read only'] = measure_read(
        recording, max(args.repeats, 3), steps[label])
  lines = report(all_results, steps)
  load = os.getloadavg()
  total = time.perf_counter() - start
  notes = [
      'Conversion: EnvLogger recording (riegeli) -> TFDS tfrecord dataset, '
      'reading included. Writer: episodes already decoded in memory -> TFDS '
      'dataset. Same features everywhere (inferred by rlds_lite from the '
      'recorded specs; float64 reward/discount byte-encoded, images PNG); '
      'every output read back and checked equal to the rlds_lite conversion '
      '(all episodes, core step fields). Throughput: RLDS steps per wall '
      f'second, best of {args.repeats} (the contenders take turns, run by '
      'run); the per-CPU-second ratio uses the '
      'process CPU time (all threads). The second table shows the share of '
      'the rlds_lite conversion\'s CPU time spent reading the riegeli files '
      '(EnvLogger\'s native reader, one call per step, then decoding); the rest is '
      'encoding, writing and TFDS builder overhead. PNG encoding dominates '
      'the image dataset on every side.',
      f'Total time {total:.0f}s; load average at the end '
      f'{load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}.',
  ]
  print()
  print('\n'.join(lines))
  print()
  print('\n'.join(notes))
  if args.write_results:
    write_results(lines, info, notes)
    print(f'written to {os.path.join(HERE, "RESULTS.md")}')


if __name__ == '__main__':
  main()
