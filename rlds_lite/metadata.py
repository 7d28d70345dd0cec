"""Names of the optional episode-metadata fields RLDS proposes."""

EPISODE_ID = 'episode_id'
"""Unique identifier of the episode (ideally unique across datasets too)."""
AGENT_ID = 'agent_id'
"""Identifier of the agent(s) that generated the episode."""
ENVIRONMENT_CONFIG = 'environment_config'
"""Configuration of the environment the episode was generated in."""
EXPERIMENT_ID = 'experiment_id'
"""Identifier of the experiment that generated the episode."""
INVALID = 'invalid'
"""Flag for incomplete episodes (e.g. preemption) to discard at read time."""
