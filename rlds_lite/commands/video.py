"""``rlds-lite video PATH --episode N --key observation/image --out x.gif``."""

import argparse
import json

from rlds_lite.commands import dataset_options


def register(subparsers: argparse._SubParsersAction) -> None:  # pylint: disable=protected-access
  parser = subparsers.add_parser(
      'video', help='write an image field of one episode as a GIF or MP4',
      description='Writes the frames of an image step field of one episode '
      'as an animated GIF (no dependencies) or an MP4 (needs imageio and '
      'imageio-ffmpeg).')
  dataset_options.add_dataset_arguments(parser)
  parser.add_argument('--episode', type=int, default=0,
                      help='the episode index in the split (default 0)')
  parser.add_argument('--key', required=True,
                      help="the image field, e.g. 'observation/image'")
  parser.add_argument('--out', required=True, help='the output .gif or .mp4')
  parser.add_argument('--fps', type=float, default=10,
                      help='frames per second (default 10)')


def _episode(args: argparse.Namespace):
  """The requested episode (dense steps); IndexError if out of range."""
  from rlds_lite.checks import sources  # pylint: disable=g-import-not-at-top
  source = sources.open_source(args.path, args.split, args.data_dir)
  if args.episode < 0:
    raise IndexError(f'--episode must be >= 0, got {args.episode}.')
  for episode in source.episodes.skip(args.episode).take(1):
    return episode
  raise IndexError(f'episode {args.episode} is out of range: split '
                   f'{source.split!r} has {source.total} episodes.')


def run(args: argparse.Namespace) -> int:
  dataset_options.quiet_logs()
  from rlds_lite import video  # pylint: disable=g-import-not-at-top
  try:
    episode = _episode(args)
    frames = video.episode_frames(episode, args.key)
    video.episode_to_video({'steps': {'frames': frames}}, 'frames', args.out,
                           fps=args.fps)
  except dataset_options.BAD_INPUT_ERRORS + (OSError,) as e:  # OSError: --out.
    return dataset_options.report_error('video', e)
  num_frames, height, width, _ = frames.shape
  if args.json:
    print(json.dumps({'out': args.out, 'frames': int(num_frames),
                      'height': int(height), 'width': int(width),
                      'fps': args.fps}))
  else:
    print(f'wrote {args.out}: {num_frames} frames of {height}x{width} at '
          f'{args.fps:g} fps')
  return 0
