"""The ``--beam``, ``--beam-runner`` and ``--beam-option K=V`` flags of the commands that run on Apache Beam."""

import argparse


def add_beam_arguments(parser: argparse.ArgumentParser, what: str) -> None:
  """Adds the Beam flags to ``parser``; ``what`` says what runs on Beam."""
  parser.add_argument('--beam', action='store_true',
                      help=f'run on Apache Beam, {what} (DirectRunner in '
                      'this process unless --beam-runner/--beam-option say '
                      'more)')
  parser.add_argument('--beam-runner', default=None, metavar='RUNNER',
                      help='the Beam runner (DirectRunner, DataflowRunner, '
                      'FlinkRunner, SparkRunner, PortableRunner, ...)')
  parser.add_argument('--beam-option', action='append', default=[],
                      metavar='K=V', help='a Beam pipeline option (repeat '
                      'it), e.g. direct_num_workers=2, project=P, '
                      'flink_master=HOST:8081 (docs/distributed.md)')


def beam_of(args: argparse.Namespace):
  """The `rlds_lite.beam_runs.Beam` of the flags, its options checked; None without them.

  Example:
    >>> beam_of(argparse.Namespace(beam=False, beam_runner=None,
    ...                            beam_option=['direct_num_workers=2']))
    Beam(runner='DirectRunner', pipeline_options=('direct_num_workers=2',))
  """
  if not (args.beam or args.beam_runner or args.beam_option):
    return None
  from rlds_lite import beam_runs  # pylint: disable=g-import-not-at-top
  beam = beam_runs.Beam(args.beam_runner or 'DirectRunner',
                        tuple(args.beam_option))
  beam.options()
  return beam
