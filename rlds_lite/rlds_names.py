"""The field names of the RLDS format (``rlds_types`` re-exports them)."""

OBSERVATION = 'observation'
ACTION = 'action'
REWARD = 'reward'
DISCOUNT = 'discount'
IS_FIRST = 'is_first'
IS_LAST = 'is_last'
IS_TERMINAL = 'is_terminal'

CORE_STEP_FIELDS = frozenset(
    [OBSERVATION, ACTION, REWARD, IS_TERMINAL, IS_FIRST, IS_LAST, DISCOUNT])
"""All the step fields RLDS names (two of them, the flags, are mandatory)."""

MANDATORY_STEP_FIELDS = frozenset([IS_FIRST, IS_LAST])
"""The step fields the RLDS format requires on every step."""

STEPS = 'steps'
ALIGNMENT = 'alignment'
