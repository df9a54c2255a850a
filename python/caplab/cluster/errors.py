"""What can go wrong with load agents, importable without Ray (the command line catches these)."""

from __future__ import annotations


class ClusterUnreachable(Exception):
    """The Ray cluster cannot be reached or started; the message says which and why."""


class AgentsFailed(Exception):
    """An agent could not start (placement, a caplab version other than the driver's), or a
    trial lost one; the message names the agents."""
