"""``rlds-lite demo``: the main job on built-in data (see ``rlds_lite.demo``).

With ``--json`` the summary (the contents of ``summary.json``) goes to stdout
and the progress lines to stderr.
"""

import argparse
import json
import os
import sys
from typing import Optional

from rlds_lite.commands import dataset_options
from rlds_lite.commands import quiet


def register(subparsers: argparse._SubParsersAction) -> None:  # pylint: disable=protected-access
  demo = subparsers.add_parser(
      'demo',
      help='record Catch with EnvLogger, build a TFDS dataset, train and '
      'evaluate a behaviour-cloning policy',
      description='Records episodes of a built-in environment (expert with '
      'epsilon noise) with EnvLogger, builds a TFDS dataset, loads it with '
      'tfds.load, trains a Keras behaviour-cloning policy, evaluates it '
      'against a random policy and writes a table, plot and summary.')
  demo.add_argument('--out', default='demo_output',
                    help='work directory (default ./demo_output)')
  demo.add_argument('--env', default='catch', choices=['catch', 'catch_pixels'],
                    help='built-in environment (default catch)')
  demo.add_argument('--episodes', type=dataset_options.integer, default=500,
                    help='episodes to record (default 500)')
  demo.add_argument('--epsilon', type=float, default=0.2,
                    help='probability of a random action while recording '
                    '(default 0.2)')
  demo.add_argument('--epochs', type=dataset_options.integer, default=10,
                    help='training epochs (default 10)')
  demo.add_argument('--eval-episodes', type=dataset_options.integer,
                    default=200,
                    help='evaluation episodes per policy (default 200)')
  demo.add_argument('--seed', type=dataset_options.seed_integer, default=0)
  demo.add_argument('--json', action='store_true',
                    help='print the summary as JSON (progress lines go to '
                    'stderr)')
  demo.add_argument('--no-progress', action='store_true',
                    help='hide the progress bars (shown on a terminal only)')


def _argument_problem(args: argparse.Namespace) -> Optional[str]:
  """What is wrong with the demo's arguments, or None."""
  for flag, value, minimum in (('--episodes', args.episodes, 2),
                               ('--epochs', args.epochs, 1),
                               ('--eval-episodes', args.eval_episodes, 1)):
    if value < minimum:
      return f'{flag} must be at least {minimum}'
  if not 0.0 <= args.epsilon <= 1.0:
    return '--epsilon must be between 0 and 1'
  return _out_problem(args.out)


def _out_problem(out: str) -> Optional[str]:
  """Why ``--out`` cannot be the work directory, or None.

  Example:
    >>> _out_problem(__file__).endswith('is a file; give a directory')
    True
  """
  path = os.path.abspath(os.path.expanduser(out))
  if os.path.exists(path) and not os.path.isdir(path):
    return f'--out {out!r} is a file; give a directory'
  parent = os.path.dirname(path)
  while not os.path.exists(parent):
    parent = os.path.dirname(parent)
  if not os.path.isdir(parent):
    return f'--out {out!r}: {parent!r} is a file, not a directory'
  if not os.access(path if os.path.exists(path) else parent, os.W_OK):
    return f'--out {out!r} is not writable'
  return None


def run(args: argparse.Namespace) -> int:
  problem = _argument_problem(args)
  if problem:
    print(f'rlds-lite demo: {problem}.', file=sys.stderr)
    return 2
  quiet.import_tensorflow()
  # pylint: disable=g-import-not-at-top
  from rlds_lite import demo
  from rlds_lite import progress
  shown = progress.shown(False if args.no_progress else None)
  config = demo.DemoConfig(
      env_name=args.env, num_episodes=args.episodes, epsilon=args.epsilon,
      epochs=args.epochs, eval_episodes=args.eval_episodes, seed=args.seed)
  figures = demo.run(args.out, config, progress=shown,
                     out=sys.stderr if args.json else sys.stdout)
  if args.json:
    print(json.dumps(figures, indent=1))
  return 0
