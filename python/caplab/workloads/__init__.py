"""Workloads the engine's protocol drivers run that need preparing outside the engine: PostgreSQL's
transaction scripts, the password and the scale."""
