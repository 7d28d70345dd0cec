"""Octo's named Open X-Embodiment mixtures, restricted to the datasets registered here.

Octo's weights are kept. Left out (not registered here): from 'rtx' none; from
'oxe_magic_soup' the stanford_hydra, austin_buds, nyu_franka_play,
furniture_bench, ucsd_kitchen, austin_sailor, austin_sirius, bc_z, dlr_edan,
iamlab_cmu_pickup_insert, utaustin_mutex, berkeley_fanuc and cmu_stretch
datasets, so its weights no longer sum as Octo's do; from 'rtx_franka' every
Franka dataset but taco_play, berkeley_cable_routing, viola and toto. 'droid'
(DROID alone) is ours, not Octo's.
"""

from typing import Dict, List, Tuple

__all__ = ['OXE_NAMED_MIXES']

_RTX = [
    ('fractal20220817_data', 0.54087122203),
    ('kuka', 0.8341046294),
    ('bridge_dataset', 1.0),
    ('taco_play', 2.0),
    ('jaco_play', 2.0),
    ('berkeley_cable_routing', 3.0),
    ('roboturk', 1.0),
    ('nyu_door_opening_surprising_effectiveness', 5.0),
    ('viola', 2.0),
    ('berkeley_autolab_ur5', 1.0),
    ('toto', 1.0),
]

_MAGIC_SOUP_REGISTERED = [
    ('fractal20220817_data', 0.54087122203),
    ('kuka', 0.8341046294),
    ('bridge_dataset', 1.0),
    ('taco_play', 2.0),
    ('jaco_play', 1.0),
    ('berkeley_cable_routing', 1.0),
    ('roboturk', 2.0),
    ('nyu_door_opening_surprising_effectiveness', 1.0),
    ('viola', 2.0),
    ('berkeley_autolab_ur5', 2.0),
    ('toto', 1.0),
    ('language_table', 0.1),
]

OXE_NAMED_MIXES: Dict[str, List[Tuple[str, float]]] = {
    'bridge': [('bridge_dataset', 1.0)],
    'droid': [('droid', 1.0)],
    'rtx': _RTX,
    # Octo's RT_X_MIX + OXE_FRANKA_MIX: its registered Franka entries repeat
    # rtx datasets, skipped as duplicates by make_oxe_dataset_kwargs_and_weights.
    'rtx_franka': _RTX + [('taco_play', 1.0), ('berkeley_cable_routing', 1.0),
                          ('viola', 1.0), ('toto', 1.0)],
    'oxe_magic_soup': _MAGIC_SOUP_REGISTERED,
}
"""Mixture name -> [(dataset name, sampling weight)]; ``register_mixture`` adds users' own."""
