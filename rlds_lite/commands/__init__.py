"""Subcommands of the ``rlds-lite`` command line, one module each (``COMMANDS``).

Each defines ``register(subparsers)`` and ``run(args) -> int``, importing
nothing heavy before ``run``; see docs/cli.md ("Adding a command").
"""

COMMANDS = (
    'build',
    'chunk',
    'convert',
    'demo',
    'episodes',
    'filter',
    'inspect',
    'merge',
    'record',
    'serve',
    'stats',
    'validate',
    'version',
    'video',
    'view',
)
