"""The Open X-Embodiment registry: dataset configurations, standardize functions and named mixtures in Octo's format, and users' own."""

from rlds_lite.octo.oxe.configs import OXE_DATASET_CONFIGS
from rlds_lite.octo.oxe.kwargs import make_oxe_dataset_kwargs
from rlds_lite.octo.oxe.kwargs import make_oxe_dataset_kwargs_and_weights
from rlds_lite.octo.oxe.mixes import OXE_NAMED_MIXES
from rlds_lite.octo.oxe.registry import register_dataset
from rlds_lite.octo.oxe.registry import register_mixture
from rlds_lite.octo.oxe.standardize import OXE_STANDARDIZATION_TRANSFORMS

__all__ = [
    'make_oxe_dataset_kwargs', 'make_oxe_dataset_kwargs_and_weights',
    'OXE_DATASET_CONFIGS', 'OXE_NAMED_MIXES', 'OXE_STANDARDIZATION_TRANSFORMS',
    'register_dataset', 'register_mixture',
]
