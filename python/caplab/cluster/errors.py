"""What can go wrong with load agents, importable without Ray (the command line catches these)."""

from __future__ import annotations

from caplab.engine import WorkerFailed


class ClusterUnreachable(Exception):
    """The Ray cluster cannot be reached or started; the message says which and why."""


class AgentsFailed(WorkerFailed):
    """An agent could not start (placement, a caplab version other than the driver's), or a
    trial lost one; the message names the agents. A load agent is a load-generating worker: what
    fails a trial whose engine thread failed fails it for a lost agent too."""
