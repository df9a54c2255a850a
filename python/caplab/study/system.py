"""One replicate's system under test on the cell's hardware: started under its launch prefix,
ready, each role's processes put on its profile, and stopped whatever happens — the plan's
"start the SUT" and "stop" steps."""

from __future__ import annotations

from caplab.collect import RoleSpec
from caplab.json_types import JsonDict
from caplab.profiles import CellHardware
from caplab.profiles.hardware import interrupts_deferred
from caplab.profiles.placement import Placed
from caplab.study.hardware import Attacher, describe, with_profiles
from caplab.study.plan import CellPlan
from caplab.study.sut import Sut


class RunningSystem:
    """The SUT (None when caplab does not start it) and the attacher that puts its roles'
    processes on their profiles (None when the start command's prefix does it alone)."""

    def __init__(self, plan: CellPlan, hw: CellHardware | None, placed: Placed | None = None) -> None:
        self.plan = plan
        self.hw = hw
        self.placement = placed.system_prefix() if placed is not None else []
        """The argv prefix that puts a command on the system's CPUs (empty: not isolated); the
        start command and the study's actions run under it, the system's own work."""
        launched = plan.hardware.launched if hw is not None else None
        # One shell joins the placement's cpuset and the launched role's groups, then execs the
        # command: the same process chain as without a placement (an attacher matching command
        # lines sees no extra shell holding the start command's words).
        also = placed.system_procs() if placed is not None else []
        own = hw.launch_prefix(launched, also) if hw is not None and launched is not None else []
        prefix = own or self.placement
        spec = plan.sut.spec
        self.sut = Sut(spec, plan.directory, prefix, launched) if spec is not None else None
        attach = dict(plan.hardware.attach)
        self.attacher = Attacher(hw, attach) if hw is not None and spec is not None and attach else None

    def start(self) -> None:
        """Starts the system and waits until it is ready; a failure stops whatever was started."""
        try:
            if self.sut is not None:
                self.sut.start()
                if self.attacher is not None:
                    self.attacher.start()
                self.sut.wait_ready()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stops the attacher and the SUT with Ctrl-C held until both are done, then delivered: a
        second Ctrl-C (or SIGTERM) while a cluster is stopping — a 400-database pgha cell takes
        minutes — would otherwise kill the stop command half-way and leave its servers running."""
        with interrupts_deferred():
            if self.attacher is not None:
                self.attacher.stop()
            if self.sut is not None:
                self.sut.stop()

    def restart(self) -> None:
        """Stops the system and starts it again, ready. The attacher keeps running and puts the
        new processes on their profiles."""
        if self.sut is not None:
            self.sut.restart()

    def alive(self) -> bool:
        return self.sut is None or self.sut.alive()

    def roles(self) -> list[RoleSpec]:
        """The roles the collectors watch, each on its profile; a SUT caplab started and no roles
        declared is the role ``sut``."""
        roles = list(self.plan.sut.roles)
        if not roles and self.sut is not None and self.sut.pid is not None:
            roles.append(RoleSpec(name="sut", pid=self.sut.pid))
        return with_profiles(roles, self.hw)

    def hardware_summary(self) -> JsonDict | None:
        """What the replicate ran on, for the cell's metrics (None without hardware)."""
        if self.hw is None:
            return None
        launched = self.sut.launched_role if self.sut is not None else None
        return describe(self.plan.hardware.cpu_scale, self.hw, launched, self.attacher).to_json()
