"""Load agents on Ray: one plan split across several engines, started at one agreed instant, and
their results merged exactly.

The splitting (`split`), the clock agreement (`clock`), the merging (`merge`) and the agent itself
(`agent`) are plain Python, testable without Ray; `ray_agents` is the thin layer that places
agents on a Ray cluster, watches them and stops them.
"""
