"""The OOM killer at a role's memory limit: the one death of the system during a trial that is the
load's failure (too much for the memory the profile gives), not the cell's. A search records such a
trial as failed and goes on with the system started afresh; any other death ends the cell."""

from __future__ import annotations

from caplab.experiments.base import SystemFault
from caplab.profiles import CellHardware
from caplab.study.hardware import oom_kills


class OomWatch:
    """Counts OOM kills per role on a memory limit from a baseline: the kills since the system
    (re)started are this run's."""

    def __init__(self, hw: CellHardware | None) -> None:
        self.hw = hw
        self.baseline = oom_kills(hw) if hw is not None else {}
        self.fault: SystemFault | None = None
        """The first kill seen since the baseline, kept once found."""

    def killed(self) -> str | None:
        """Why the trial failed if the OOM killer killed a process of a role on a memory limit."""
        fault = self.check()
        return fault.reason if fault is not None else None

    def check(self) -> SystemFault | None:
        if self.hw is None or self.fault is not None:
            return self.fault
        for role, kills in oom_kills(self.hw).items():
            new = kills - self.baseline.get(role, 0)
            if new > 0:
                limit = self.hw.profiles[role].memory
                size = f" of {limit.limit_bytes / 2**20:,.0f} MB" if limit is not None else ""
                self.fault = SystemFault(
                    f"role {role} ran out of memory: the OOM killer killed {new}"
                    f" process(es) at its profile's limit{size}",
                    f"memory:{role}",
                )
        return self.fault

    def restarted(self) -> None:
        """The system was started afresh: the count starts from here."""
        if self.hw is not None:
            self.baseline = oom_kills(self.hw)
        self.fault = None
