"""Options and reporting shared by ``rlds-lite filter`` and ``merge`` (``--out``, ...)."""

import argparse
import json
import os
from typing import Dict, Optional, Tuple

from rlds_lite.commands import dataset_options


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
  """--out, --val-fraction, --seed, --name.

  Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_output_arguments(parser)
    >>> args = parser.parse_args(['--out', '/tmp/x', '--val-fraction', '0.1'])
    >>> args.out, args.val_fraction, args.seed
    ('/tmp/x', 0.1, 0)
  """
  parser.add_argument('--out', required=True, metavar='DIR',
                      help='a new directory for the new dataset (its TFDS '
                      'data_dir: the dataset goes to DIR/NAME/VERSION)')
  parser.add_argument('--val-fraction', type=float, default=None, metavar='F',
                      help="write 'train' and 'validation' splits, with "
                      'round(F * N) episodes in validation')
  parser.add_argument('--seed', type=dataset_options.seed_integer, default=0,
                      help='seeds the validation choice (default 0)')
  parser.add_argument('--name', default=None,
                      help="the new dataset's name (default: the source's)")


def out_dir_error(out: str, val_fraction: Optional[float] = None) -> str:
  """The message for an existing --out or a bad --val-fraction, or ''.

  Example:
    >>> out_dir_error('/no/such/directory')
    ''
    >>> out_dir_error('/')
    "'/' already exists; choose a new output directory (nothing was written)."
    >>> out_dir_error('/no/such/directory', 1.5)
    '--val-fraction must be between 0 and 1 (exclusive), got 1.5.'
  """
  if val_fraction is not None and not 0 < val_fraction < 1:
    return ('--val-fraction must be between 0 and 1 (exclusive), got '
            f'{val_fraction}.')
  if os.path.exists(os.path.expanduser(out)):
    return (f'{out!r} already exists; choose a new output directory (nothing '
            'was written).')
  return ''


def report_error(command: str, error: BaseException) -> int:
  """`dataset_options.report_error` without the ``command:`` prefix twice.

  Example:
    >>> report_error('merge', ValueError('merge: different features.'))
    2
  """
  message = dataset_options.one_line(error).removeprefix(f'{command}: ')
  return dataset_options.report_error(command, ValueError(message),
                                      {'val_fraction': '--val-fraction'})


def written(path: str) -> Tuple[Dict[str, int], int]:
  """Episodes per split of the dataset written at ``path``, and in its sources."""
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  info = tfds.builder_from_directory(path).info
  sizes = {name: int(split.num_examples) for name, split in info.splits.items()}
  sources = info.metadata['rlds_lite']['sources']
  return sizes, sum(source['num_episodes'] for source in sources)


def summary_line(path: str, sizes: Dict[str, int], total: int) -> str:
  """``wrote N of M episodes to PATH (split: n, ...)``.

  Example:
    >>> summary_line('/d/toy/1.0.0', {'train': 9, 'validation': 1}, 20)
    'wrote 10 of 20 episodes to /d/toy/1.0.0 (train: 9, validation: 1)'
  """
  count = sum(sizes.values())
  splits = ', '.join(f'{name}: {n}' for name, n in sizes.items())
  return f'wrote {count} of {total} episodes to {path} ({splits})'


def report(path: str, as_json: bool) -> None:
  """Prints the summary line, or JSON with ``--json``."""
  sizes, total = written(path)
  if as_json:
    print(json.dumps({'path': path, 'splits': sizes,
                      'source_episodes': total}, indent=1))
  else:
    print(summary_line(path, sizes, total))
