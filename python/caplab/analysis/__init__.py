"""Analysis: SLO verdicts, capacity search, the limiting resource, scaling fits, steady state."""
