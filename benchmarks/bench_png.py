"""Microbenchmark: PNG encoding of image batches (rlds_lite.tfds.png vs TF).

Not a test. Encodes batches of frames (as one episode's image column) and
prints microseconds and bytes per frame for:

  - ``tf.image.encode_png`` called eagerly per frame (TFDS's per-step
    ``Image.encode_example`` runs it so, through a graph runner);
  - the ``tf.map_fn`` graph over ``tf.image.encode_png`` rlds_lite used
    before (one call per episode);
  - ``rlds_lite.tfds.png.encode_png_batch`` on 1 and 2 threads (defaults:
    filters None/Sub/Up chosen per row, strategy 'auto': zlib RLE unless
    level-1 string matching makes a batch's first frame > 10% smaller);
  - with ``--variants``: other filter sets, zlib RLE and string matching
    ('lz77') at levels 1 and 6, 1 thread.

Frames: CatchPixels 64x64x3 (rlds_lite.envs, scripted expert, mostly black),
smooth 84x84x3 (gradients, a moving blob, noise 0-7: ``tfds_fixtures.
smooth_image``), noisy 84x84x3 (the same plus noise of +-20) and tiles
84x84x3 (a random 6x6 tile repeated: textures, where RLE does badly). Times
are wall time, the best of ``--repeats`` runs (the machine may be shared),
and process CPU time of that run (it exceeds the wall time when threads
work in parallel); every encoded frame is decoded and compared with its
pixels.

Usage:
  python benchmarks/bench_png.py [--frames N] [--batch T] [--repeats N]
      [--variants]
"""

import argparse
import os
import sys
import time
from typing import Callable, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'tests'))
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

from rlds_lite import envs  # pylint: disable=g-import-not-at-top
from rlds_lite.tfds import png  # pylint: disable=g-import-not-at-top
import tfds_fixtures  # pylint: disable=g-import-not-at-top


def catch_frames(count: int, size: int = 64) -> np.ndarray:
  """``count`` CatchPixels frames of expert episodes, in order."""
  env = envs.CatchPixels(height=size, width=size, seed=0)
  frames = []
  timestep = env.reset()
  while len(frames) < count:
    frames.append(timestep.observation)
    timestep = (env.reset() if timestep.last() else
                env.step(env.expert_policy(timestep)))
  # CatchPixels frames are views of a nearest-neighbour gather whose memory
  # is width-major; stacked as they come, each encoder would pay a transposing
  # copy (~35 us per frame) that a recorded or decoded column does not have.
  return np.ascontiguousarray(np.stack(frames))


def frame_sets(count: int) -> Dict[str, np.ndarray]:
  rng = np.random.default_rng(0)
  smooth = tfds_fixtures.smooth_image(rng, count)
  noise = rng.integers(-20, 21, smooth.shape)
  noisy = np.clip(tfds_fixtures.smooth_image(rng, count) + noise, 0, 255)
  tiles = np.tile(rng.integers(0, 256, (count, 6, 6, 3), dtype=np.uint8),
                  (1, 14, 14, 1))
  return {'catch 64x64x3': catch_frames(count),
          'smooth 84x84x3': smooth,
          'noisy 84x84x3': noisy.astype(np.uint8),
          'tiles 84x84x3': tiles}


def map_fn_encoder(shape) -> Callable[[np.ndarray], List[bytes]]:
  """The graph rlds_lite used before: tf.map_fn over tf.image.encode_png."""
  @tf.function(input_signature=[tf.TensorSpec((None,) + shape, tf.uint8)],
               autograph=False)
  def encode_batch(images):
    return tf.map_fn(tf.image.encode_png, images,
                     fn_output_signature=tf.TensorSpec([], tf.string))
  return lambda batch: list(encode_batch(batch).numpy())


def eager(batch: np.ndarray) -> List[bytes]:
  return [tf.image.encode_png(frame).numpy() for frame in batch]


def measure(encode: Callable[[np.ndarray], List[bytes]], frames: np.ndarray,
            batch: int, repeats: int):
  """(best wall us/frame, its CPU us/frame, mean bytes/frame), pixels checked."""
  best, cpu, files = float('inf'), 0.0, []
  for _ in range(repeats):
    start, start_cpu = time.perf_counter(), time.process_time()
    files = [f for i in range(0, len(frames), batch)
             for f in encode(frames[i:i + batch])]
    wall = time.perf_counter() - start
    if wall < best:
      best, cpu = wall, time.process_time() - start_cpu
  for data, frame in zip(files, frames):
    if not np.array_equal(tf.io.decode_png(data).numpy(), frame):
      raise AssertionError('decoded pixels differ')
  per_frame = 1e6 / len(frames)
  return best * per_frame, cpu * per_frame, np.mean([len(f) for f in files])


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--frames', type=int, default=200)
  parser.add_argument('--batch', type=int, default=50,
                      help='frames per call (an episode)')
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--variants', action='store_true',
                      help='also other filter sets and zlib levels')
  args = parser.parse_args()

  for name, frames in frame_sets(args.frames).items():
    contenders = {
        'tf.image.encode_png, eager': eager,
        'tf.map_fn graph (old)': map_fn_encoder(frames.shape[1:]),
        'encode_png_batch, 1 thread':
            lambda b: png.encode_png_batch(b, threads=1),
        'encode_png_batch, 2 threads':
            lambda b: png.encode_png_batch(b, threads=2),
    }
    if args.variants:
      for filters in (('none',), ('up',), ('sub',), png.DEFAULT_FILTERS,
                      png.FILTERS):
        for strategy, level in (('rle', 1), ('lz77', 1), ('lz77', 6)):
          label = (f'  {"/".join(filters)}, {strategy}'
                   f'{"" if strategy == "rle" else f" level {level}"}')
          contenders[label] = (
              lambda b, f=filters, s=strategy, l=level: png.encode_png_batch(
                  b, filters=f, strategy=s, level=l, threads=1))
    print(f'\n{name}: {len(frames)} frames, batches of {args.batch}')
    print(f'{"":44s} {"wall us":>8s} {"cpu us":>7s} {"bytes":>7s} '
          f'{"vs TF":>6s}  (per frame)')
    reference = None
    for label, encode in contenders.items():
      micros, cpu, size = measure(encode, frames, args.batch, args.repeats)
      reference = reference or size
      print(f'{label:44s} {micros:8.0f} {cpu:7.0f} {size:7.0f} '
            f'{size / reference:6.2f}', flush=True)


if __name__ == '__main__':
  main()
