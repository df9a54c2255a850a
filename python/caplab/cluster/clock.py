"""One agreed start instant for every agent, and each agent's clock offset from the driver's.

The driver asks each agent for its clock and times the round trip; the agent's offset is its
reading less the driver's clock at the round trip's middle (the NTP estimate, good to half the
round trip). The start is an instant on the driver's clock a little in the future; each agent
waits until that instant translated to its own clock, so agents on nodes whose clocks disagree
still start together.
"""

from __future__ import annotations

from dataclasses import dataclass

START_LEAD_S = 0.5
"""How far in the future the agreed start lies beyond the slowest round trip: room for every
agent to receive its plan before the instant passes. Each agent has just answered its clock
readings (``2 * slowest`` covers the trip itself), so this is the driver's own jitter in sending
the plans: half a second, paid before every trial of a search on agents, is ample; an agent
that still starts late says by how much (``start_late_ms``)."""


@dataclass(frozen=True)
class ClockReading:
    """One agent's clock against the driver's: ``offset_s`` is agent minus driver."""

    offset_s: float
    round_trip_s: float

    @staticmethod
    def measure(sent_at: float, agent_time: float, received_at: float) -> ClockReading:
        """From the driver's clock before and after asking, and the agent's answer."""
        return ClockReading(agent_time - (sent_at + received_at) / 2, received_at - sent_at)

    def to_agent(self, driver_instant: float) -> float:
        """The same instant on the agent's clock."""
        return driver_instant + self.offset_s


def agreed_start(now: float, readings: list[ClockReading], lead_s: float = START_LEAD_S) -> float:
    """The start instant on the driver's clock: ``lead_s`` plus the slowest round trip from now."""
    slowest = max((r.round_trip_s for r in readings), default=0.0)
    return now + lead_s + 2 * slowest
