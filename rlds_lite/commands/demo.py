"""``rlds-lite demo``: the main job on built-in data (see ``rlds_lite.demo``)."""

import argparse
import os
import sys
from typing import Optional

from absl import logging


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
  demo.add_argument('--episodes', type=int, default=500,
                    help='episodes to record (default 500)')
  demo.add_argument('--epsilon', type=float, default=0.2,
                    help='probability of a random action while recording '
                    '(default 0.2)')
  demo.add_argument('--epochs', type=int, default=10,
                    help='training epochs (default 10)')
  demo.add_argument('--eval-episodes', type=int, default=200,
                    help='evaluation episodes per policy (default 200)')
  demo.add_argument('--seed', type=int, default=0)
  demo.add_argument('--no-progress', action='store_true',
                    help='hide the progress bars')


def _argument_problem(args: argparse.Namespace) -> Optional[str]:
  """What is wrong with the demo's arguments, or None."""
  for flag, value, minimum in (('--episodes', args.episodes, 2),
                               ('--epochs', args.epochs, 1),
                               ('--eval-episodes', args.eval_episodes, 1)):
    if value < minimum:
      return f'{flag} must be at least {minimum}'
  if not 0.0 <= args.epsilon <= 1.0:
    return '--epsilon must be between 0 and 1'
  return None


def _quiet_native_logs() -> None:
  """Hides INFO logs of EnvLogger's native code and TFDS deprecation notes."""
  os.environ.setdefault('GLOG_minloglevel', '1')
  logging.set_verbosity(logging.ERROR)


def run(args: argparse.Namespace) -> int:
  problem = _argument_problem(args)
  if problem:
    print(f'rlds-lite demo: {problem}', file=sys.stderr)
    return 2
  _quiet_native_logs()
  from rlds_lite import demo  # pylint: disable=g-import-not-at-top
  demo.run(args.out, env_name=args.env, num_episodes=args.episodes,
           epsilon=args.epsilon, epochs=args.epochs,
           eval_episodes=args.eval_episodes, seed=args.seed,
           progress=not args.no_progress)
  return 0
