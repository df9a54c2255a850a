"""Dividing one plan among N load agents: an open model's rate divided evenly, a closed model's
users divided with the remainder spread over the first agents, each agent its own seed."""

from __future__ import annotations

import dataclasses

from caplab.engine import ClosedLoad, OpenLoad, Plan, Segment, UsageProblem

SEED_STRIDE = 0x9E3779B97F4A7C15
"""Agents' seeds are spread by the golden-ratio constant so that no two agents draw the same
Poisson arrivals, whatever the plan's seed."""


def agent_name(index: int) -> str:
    """How an agent is named in messages and results: ``agent-1`` … ``agent-N``."""
    return f"agent-{index + 1}"


def agent_seed(seed: int, index: int) -> int:
    """Agent ``index``'s seed: distinct per agent, reproducible from the plan's seed (the engine
    takes an unsigned 64-bit seed)."""
    return (seed + index * SEED_STRIDE) % (1 << 64)


def shares(total: int, agents: int) -> list[int]:
    """``total`` divided into ``agents`` whole shares, the remainder one each to the first."""
    base, remainder = divmod(total, agents)
    return [base + (1 if i < remainder else 0) for i in range(agents)]


def split_plan(plan: Plan, agents: int) -> list[Plan]:
    """One plan per agent whose loads add up to ``plan``'s. Raises UsageProblem when the load
    cannot be divided (fewer closed users than agents)."""
    if agents < 1:
        raise UsageProblem(f"--agents must be at least 1, not {agents}")
    if isinstance(plan.load, ClosedLoad) and plan.load.users < agents:
        n = plan.load.users
        raise UsageProblem(f"{n} user{'s' if n > 1 else ''} cannot be split among {agents} agents")
    users = shares(plan.load.users, agents) if isinstance(plan.load, ClosedLoad) else None
    limits = shares(plan.max_requests, agents) if plan.max_requests is not None else None
    plans = []
    for i in range(agents):
        load: OpenLoad | ClosedLoad
        if isinstance(plan.load, OpenLoad):
            profile = tuple(
                Segment(s.duration_s, s.rate_start / agents, s.rate_end / agents) for s in plan.load.profile
            )
            load = OpenLoad(profile, plan.load.arrivals)
        else:
            assert users is not None
            load = ClosedLoad(users[i], plan.load.think)
        plans.append(
            dataclasses.replace(
                plan,
                load=load,
                seed=agent_seed(plan.seed, i),
                max_requests=max(1, limits[i]) if limits is not None else None,
                max_in_flight=_divided_ceiling(plan.max_in_flight, agents),
            )
        )
    return plans


def _divided_ceiling(limit: int | None, agents: int) -> int | None:
    """A per-agent share of a limit on outstanding requests, never below one."""
    return None if limit is None else max(1, -(-limit // agents))
