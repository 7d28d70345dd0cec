"""``rlds-lite chunk PATH``: convert a dataset to the chunk layout (random access)."""

import argparse
import json

from rlds_lite.commands import dataset_options


def register(subparsers: argparse._SubParsersAction) -> None:  # pylint: disable=protected-access
  parser = subparsers.add_parser(
      'chunk', help='convert a dataset for random access (records of a few '
      'steps; rlds_lite.random_access)',
      description='Writes the chunk dataset of an RLDS dataset (a TFDS '
      'dataset whose records hold --chunk-steps consecutive steps of one '
      'episode; frames stay encoded), for rlds_lite.random_access: uniformly '
      'shuffled batches in bounded memory, resumable from (seed, position). '
      'Default output: <name>_chunks/<version> beside the source. An '
      'existing output is an error (exit 2) unless --overwrite.')
  parser.add_argument('path', metavar='PATH',
                      help='a prepared TFDS RLDS dataset directory, or a '
                      'registered TFDS dataset name')
  parser.add_argument('--out', default=None, metavar='DIR',
                      help='the chunk dataset directory (default: '
                      '<name>_chunks/<version> beside PATH)')
  parser.add_argument('--chunk-steps', type=dataset_options.integer,
                      default=None, metavar='C',
                      help='steps per record (default: about 64 KiB a '
                      'record, at most 16 steps)')
  parser.add_argument('--split', action='append', default=None,
                      help='a split to convert (repeat it; default: all)')
  parser.add_argument('--data-dir', default=None,
                      help='where TFDS looks for prepared datasets (names '
                      'only)')
  parser.add_argument('--overwrite', action='store_true',
                      help='replace an existing output (once the new one is '
                      'complete)')
  parser.add_argument('--json', action='store_true',
                      help='print JSON for machines')
  parser.add_argument('--no-progress', action='store_true',
                      help='hide the progress bar (shown on a terminal only)')


def run(args: argparse.Namespace) -> int:
  # pylint: disable=g-import-not-at-top
  if args.chunk_steps is not None and args.chunk_steps < 1:
    return dataset_options.report_error(
        'chunk', ValueError(f'--chunk-steps must be positive, got '
                            f'{args.chunk_steps}.'))
  if args.out:
    from rlds_lite import overwriting
    overwriting.check_creatable(args.out, writer='chunk')
  missing = dataset_options.missing_dataset(args.path)
  if missing:
    return dataset_options.report_error('chunk', missing)
  dataset_options.quiet_logs()
  from rlds_lite.random_access import conversion
  from rlds_lite.random_access import storage
  try:
    path = conversion.convert(
        args.path, args.out, splits=args.split, chunk_steps=args.chunk_steps,
        data_dir=args.data_dir, overwrite=args.overwrite,
        progress=dataset_options.progress_option(args))
  except dataset_options.BAD_INPUT_ERRORS + (FileExistsError,) as e:
    message = dataset_options.one_line(e).removeprefix('convert: ')
    return dataset_options.report_error('chunk', ValueError(message),
                                        {'overwrite=True': '--overwrite'})
  import tensorflow_datasets as tfds
  info = tfds.builder_from_directory(path).info
  chunk_steps = info.metadata['layout']['chunk_steps']
  splits = {}
  for split in info.metadata['splits']:
    chunks = storage.ChunkStorage(path, split)
    splits[split] = {'episodes': chunks.num_episodes,
                     'steps': chunks.num_steps, 'chunks': chunks.num_chunks}
  if args.json:
    print(json.dumps({'path': path, 'chunk_steps': chunk_steps,
                      'splits': splits}, indent=1))
  else:
    parts = ', '.join(f'{name}: {s["episodes"]} episodes, {s["steps"]} steps '
                      f'in {s["chunks"]} chunks' for name, s in splits.items())
    print(f'wrote {path} (chunks of {chunk_steps} steps; {parts})')
  return 0
