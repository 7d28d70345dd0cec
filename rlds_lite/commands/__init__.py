"""Subcommands of the ``rlds-lite`` command line, one module each.

Each module listed in ``COMMANDS`` defines ``register(subparsers)``, which adds
its ``argparse`` parser, and ``run(args) -> int``, which returns the exit
status. ``rlds_lite.cli`` imports every module to register its parser, so a
module imports nothing heavy at its top or in ``register`` (TensorFlow, TFDS,
matplotlib, ``rlds_lite.convert``, even ``absl``): ``--help`` must stay
instant (``tests/test_cli.py`` checks that no TensorFlow is imported). In
``run``, a command first checks what it can without TensorFlow (its numbers,
its output, a missing dataset path: ``dataset_options.missing_dataset``), so
bad input answers as fast as ``--help``; it calls
``quiet.import_tensorflow()`` before its first TensorFlow import (its C++
log lines are hidden unless ``--verbose``), prints JSON with ``--json``, and
shows progress as ``rlds_lite.progress`` does (``--no-progress`` hides it).
"""

COMMANDS = (
    'chunk',
    'convert',
    'demo',
    'episodes',
    'filter',
    'inspect',
    'merge',
    'stats',
    'validate',
    'version',
    'video',
    'view',
)
