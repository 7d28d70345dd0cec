"""The sample kinds random access takes: `rlds_lite.sample_kinds` (one definition for every pipeline).

Example:
  >>> Windows(size=4)
  Windows(size=4, shift=1, stride=1, drop_remainder=True)
"""

from rlds_lite.sample_kinds import check_kind
from rlds_lite.sample_kinds import Decode
from rlds_lite.sample_kinds import Flat
from rlds_lite.sample_kinds import KINDS
from rlds_lite.sample_kinds import RobotSamples
from rlds_lite.sample_kinds import SampleKind
from rlds_lite.sample_kinds import step_indices
from rlds_lite.sample_kinds import Transitions
from rlds_lite.sample_kinds import Windows

__all__ = ['Windows', 'Transitions', 'RobotSamples', 'SampleKind', 'check_kind',
           'step_indices', 'KINDS', 'Decode', 'Flat']
