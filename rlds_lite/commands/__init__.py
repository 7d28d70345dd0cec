"""Subcommands of the ``rlds-lite`` command line, one module each.

Each module listed in ``COMMANDS`` defines ``register(subparsers)``, which adds
its ``argparse`` parser, and ``run(args) -> int``, which returns the exit
status. ``rlds_lite.cli`` imports a module only to register its parser, so a
module keeps heavy imports (TensorFlow, TFDS, matplotlib) inside ``run``.
"""

COMMANDS = (
    'convert',
    'demo',
    'inspect',
    'stats',
    'validate',
    'version',
    'video',
    'view',
)
