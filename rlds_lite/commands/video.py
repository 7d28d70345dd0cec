"""``rlds-lite video PATH --episode N --out x.gif``: watch one episode.

Every camera (uint8 image field) of the steps side by side, or the fields
given with ``--key``; frames lower than 128 pixels are enlarged by default
(``--scale`` sets the factor), ``--fps`` the speed.
"""

import argparse
import json
import os
from typing import Tuple

from rlds_lite import overwriting
from rlds_lite.commands import dataset_options


def register(subparsers: argparse._SubParsersAction) -> None:  # pylint: disable=protected-access
  parser = subparsers.add_parser(
      'video', help='write the cameras of one episode as a GIF or MP4',
      description='Writes the frames of one episode as an animated GIF (no '
      'dependencies) or an MP4 (needs imageio and imageio-ffmpeg): every '
      'camera (uint8 image field) side by side, or the fields given with '
      '--key. Frames lower than 128 pixels are enlarged (nearest neighbour) '
      'unless --scale is given.')
  dataset_options.add_dataset_arguments(
      parser, json_help='print what was written as JSON for machines')
  parser.add_argument('--episode', type=dataset_options.integer, default=0,
                      help='the episode index in the split (default 0)')
  parser.add_argument('--key', action='append', default=None,
                      help="an image field, e.g. 'observation/image'; repeat "
                      'it (or separate by commas) for cameras side by side '
                      '(default: every uint8 image field)')
  parser.add_argument('--out', required=True, help='the output .gif or .mp4')
  parser.add_argument('--fps', type=float, default=10.0,
                      help='frames per second (default 10)')
  parser.add_argument('--scale', type=dataset_options.integer, default=None,
                      help='enlarge frames this many times (default: small '
                      'frames to at least 128 pixels high, others 1)')


def _episode(args: argparse.Namespace):
  """The requested episode (dense steps), decoded alone; IndexError if out of range."""
  # pylint: disable=g-import-not-at-top
  import tensorflow as tf
  from rlds_lite import diagnosis
  from rlds_lite import source as source_lib
  opened = source_lib.open(args.path, args.split, data_dir=args.data_dir)
  builder, split = opened.builder, opened.split
  if args.episode < 0:
    raise IndexError(f'--episode must be >= 0, got {args.episode}.')
  total = builder.info.splits[split].num_examples  # Slices too.
  if args.episode >= total:
    raise IndexError(f'episode {args.episode} is out of range: split '
                     f'{split!r} has {total} episodes.')
  name, index = _in_plain_split(builder, split, args.episode)
  episodes = opened.with_split(f'{name}[{index}:{index + 1}]').episodes(
      dense=True)
  try:
    for episode in episodes:
      return episode
  except tf.errors.OpError as error:
    problem = diagnosis.episode_error(builder, name, index, error)
    if problem is None:
      raise
    raise problem from None
  raise IndexError(f'split {split!r} yielded no episode {args.episode}.')


def _in_plain_split(builder, split: str, episode: int) -> Tuple[str, int]:
  """``(name, index)`` of episode ``episode`` of ``split`` in its plain split.

  ``split`` may be a slice or slices joined by ``+`` (``'train[10:]'``,
  ``'train+test'``); TFDS resolves them (``tfds.core.ReadInstruction``).
  """
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  splits = builder.info.splits
  if split in splits.keys():
    return split, episode
  parts = tfds.core.ReadInstruction.from_spec(split).to_absolute(splits)
  for part in parts:
    start = part.from_ or 0
    stop = splits[part.splitname].num_examples if part.to is None else part.to
    if episode < stop - start:
      return part.splitname, start + episode
    episode -= max(0, stop - start)
  raise IndexError(f'split {split!r} has no episode {episode}.')


def _keys(args: argparse.Namespace, episode) -> list:
  """The fields to show: --key values, else every camera of the episode."""
  from rlds_lite import video  # pylint: disable=g-import-not-at-top
  keys = [k.strip() for value in args.key or [] for k in value.split(',')
          if k.strip()]
  return keys or video.camera_fields(episode)


def run(args: argparse.Namespace) -> int:
  if args.scale is not None and args.scale < 1:
    return dataset_options.report_error(
        'video', ValueError(f'--scale must be at least 1, got {args.scale}.'))
  if not args.fps > 0:  # NaN too.
    return dataset_options.report_error(
        'video', ValueError(f'--fps must be positive, got {args.fps:g}.'))
  suffix = os.path.splitext(args.out)[1].lower()
  if suffix not in ('.gif', '.mp4'):
    return dataset_options.report_error('video', ValueError(
        f'--out {args.out}: unknown video format {suffix!r} (use .gif or '
        '.mp4).'))
  try:
    overwriting.check_creatable(args.out, writer='--out')
  except OSError as e:
    return dataset_options.report_error('video', e)
  missing = dataset_options.missing_dataset(args.path)
  if missing:
    return dataset_options.report_error('video', missing)
  dataset_options.quiet_logs()
  from rlds_lite import video  # pylint: disable=g-import-not-at-top
  try:
    episode = _episode(args)
    keys = _keys(args, episode)
    frames = video.side_by_side([video.episode_frames(episode, key)
                                 for key in keys])
    scale = args.scale or video.auto_scale(frames.shape[1])
    frames = video.upscale(frames, scale)
    video.episode_to_video({'steps': {'frames': frames}}, 'frames', args.out,
                           fps=args.fps)
  except dataset_options.BAD_INPUT_ERRORS + (OSError,) as e:  # OSError: --out.
    return dataset_options.report_error('video', e)
  num_frames, height, width, _ = frames.shape
  if args.json:
    print(json.dumps({'out': args.out, 'frames': int(num_frames),
                      'height': int(height), 'width': int(width),
                      'fps': args.fps, 'keys': keys, 'scale': scale}))
  else:
    print(f'wrote {args.out}: {num_frames} frames of {height}x{width} '
          f'({", ".join(keys)}, scale {scale}) at {args.fps:g} fps')
  return 0
