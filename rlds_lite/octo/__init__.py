"""Octo's and OpenVLA's data pipeline as a drop-in: Open X-Embodiment mixtures on rlds_lite (docs/octo.md).

``from rlds_lite import octo`` in place of ``octo.data``: the same functions,
arguments and element structure, frames decoded once per sample use, the
mixture's memory planned.

Names are imported on first use.
"""

from typing import Any

from rlds_lite import lazy_names

_NAMES = {
    'apply_frame_transforms': 'frames',
    'apply_trajectory_transforms': 'trajectory',
    'make_dataset_from_rlds': 'reading',
    'make_interleaved_dataset': 'mixture',
    'make_single_dataset': 'mixture',
    'MixturePlan': 'mixture',
    'NormalizationType': 'statistics',
    'get_dataset_statistics': 'statistics',
    'combine_dataset_statistics': 'statistics',
    'make_oxe_dataset_kwargs': 'oxe',
    'make_oxe_dataset_kwargs_and_weights': 'oxe',
    'OXE_DATASET_CONFIGS': 'oxe',
    'OXE_NAMED_MIXES': 'oxe',
    'OXE_STANDARDIZATION_TRANSFORMS': 'oxe',
    'register_dataset': 'oxe',
    'register_mixture': 'oxe',
}
"""Public names of the package and the module that defines each."""

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
  """Imports a public name (or a module of the package) on first use."""
  return lazy_names.attribute(__name__, _NAMES, name)
