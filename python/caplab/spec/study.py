"""One cell's configuration, a cell of the matrix, and the study they make."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from caplab.grammar.findings import Finding
from caplab.spec.actions import ActionSpec, RecoverySpec
from caplab.spec.cost import CostSpec
from caplab.spec.fields import Scalar, Strict
from caplab.spec.hardware import (
    ConsolidationSpec,
    DeviceSpec,
    LinkSpec,
    ProfileSpec,
    ScaleSpec,
    StorageBaselineSpec,
    VolumeSpec,
)
from caplab.spec.job import JobSpec
from caplab.spec.load import LoadSection
from caplab.spec.replicates import Order, ReplicatesField
from caplab.spec.search import GoalSpec, SearchSpec, SloText
from caplab.spec.sut import SutSpec
from caplab.spec.target import TargetSpec

CPU_LIST = r"^\d+(-\d+)?(,\d+(-\d+)?)*$"


class IsolationSpec(Strict):
    """The CPUs of this host the generator (caplab, its collectors and daemons) and the system's
    roles run on, apart: ``{generator: "0", system: "1-3"}``."""

    generator: str = Field(pattern=CPU_LIST)
    system: str = Field(pattern=CPU_LIST)


class StudyConfig(Strict):
    """One cell's fully substituted configuration."""

    name: str = Field(min_length=1)
    description: str | None = None
    target: TargetSpec | None
    """Required (``None`` only for a job study, which sends no requests)."""
    sut: SutSpec | None = None
    load: LoadSection | None
    """Required, like ``target``, unless the study is a job."""
    job: JobSpec | None = None
    slo: list[SloText] = Field(default_factory=list)
    search: SearchSpec | None = None
    goal: GoalSpec | None = None
    storage_baseline: StorageBaselineSpec | None = None
    cost: CostSpec | None = None
    profiles: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")], ProfileSpec] = Field(
        default_factory=dict
    )
    scale: ScaleSpec = Field(default_factory=ScaleSpec)
    volumes: dict[str, VolumeSpec] = Field(default_factory=dict)
    devices: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]+$")], DeviceSpec] = Field(
        default_factory=dict
    )
    """Device models (seek, rotation, cache, RAID, flash) served to loop devices."""
    links: dict[str, LinkSpec] = Field(default_factory=dict)
    hosts: dict[
        Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")], Annotated[str, Field(pattern=r"^https?://")]
    ] = Field(default_factory=dict)
    """Remote hosts by name, each a node_exporter's metrics URL: their CPU, memory, disks and network
    on the load's clock (``node:NAME``); roles name one with ``host:``."""
    actions: list[ActionSpec] = Field(default_factory=list)
    """Faults and role changes during each trial; how the load recovered is measured from the
    interval series (a fixed load only: a search's trials must be alike)."""
    recovery: RecoverySpec | None = None
    """The recovery SLO each trial's failover is judged by (with ``actions:``)."""
    consolidation: ConsolidationSpec | None = None
    paper: dict[str, Any] | None = None
    """A seed paper's own figures, to be shown beside the study's (labelled as its hardware)."""
    placement: Literal["apart", "together"] | None = None
    """The cell's placement when the study has ``consolidation:`` (a factor caplab adds)."""
    isolation: Literal["shared"] | IsolationSpec | None = None
    """Where the generator and the system run on this host: by default (None) the generator on the
    first CPU and the system on the rest, where there are two or more and a cpuset controller;
    ``shared``: both on every CPU; or the CPUs of each (caplab.profiles.placement)."""
    replicates: ReplicatesField = 1
    """How many times each cell runs, each with a fresh start of the system: the cell's interval
    comes from these, since runs vary more than trials within one run. A count, or
    ``{min: 3, max: 10, until: 5%}``: replicates until the capacity's interval is that narrow."""
    order: Order | None = None
    """The order of the study's runs (`caplab.study.schedule`); by default ``interleaved`` when a
    cell has more than one replicate, else ``sequential``."""
    seed: int | None = Field(default=None, ge=0, le=2**63 - 1)
    """The seed of an interleaved order; by default one is drawn, and the stored study records it."""
    cluster: str | None = Field(default=None, pattern=r"^(local|ray://\S+)$")
    """Every trial's load on load agents of a Ray cluster (``ray://HEAD:10001``, or ``local``: a
    Ray started on this machine for the run), the results merged; ``caplab run --cluster``
    overrides it."""
    agents: int | None = Field(default=None, ge=1, le=256)
    """How many load agents share each trial's load (with ``cluster:``)."""

    @model_validator(mode="before")
    @classmethod
    def _job_sends_no_load(cls, data: Any) -> Any:
        """A job study has no target or load: they are None, not missing, for it alone."""
        if isinstance(data, dict) and data.get("job") is not None:
            given = [k for k in ("target", "load") if data.get(k) is not None]
            if given:
                raise ValueError(f"a job: study sends no requests: leave out {' and '.join(given)}:")
            return {"target": None, "load": None} | data
        return data

    @model_validator(mode="after")
    def _load_or_job(self) -> StudyConfig:
        if self.job is None and (self.target is None or self.load is None):
            raise ValueError("target: and load: are required (or a job: section, for a batch job)")
        if self.job is not None and (self.search is not None or self.actions):
            raise ValueError("a job: study runs its phases: no search: or actions: with it")
        if self.job is not None and self.cluster is not None:
            raise ValueError("a job: study sends no load: no cluster: for it")
        if self.agents is not None and self.cluster is None:
            raise ValueError("agents: needs cluster: (ray://HEAD:10001 or local)")
        return self

    @property
    def requests(self) -> tuple[TargetSpec, LoadSection]:
        """The target and load of a study that sends requests (every study but a job)."""
        if self.target is None or self.load is None:
            raise ValueError("a job study sends no requests")
        return self.target, self.load

    def role_profiles(self) -> dict[str, str]:
        """``{role: profile name}``: the SUT's own, or the consolidation's for the cell's placement."""
        c = self.consolidation
        if c is not None and self.placement == "apart":
            return dict(c.apart)
        if c is not None and self.placement == "together":
            return {role: c.together for role in c.apart}
        return self.sut.role_profiles() if self.sut else {}

    @property
    def slos(self) -> list[str]:
        """The SLO: top-level ``slo:`` and ``search.slo`` together."""
        return [*self.slo, *(self.search.slo if self.search else [])]


@dataclass(frozen=True)
class Cell:
    index: int
    factors: dict[str, Scalar]
    config: StudyConfig


@dataclass(frozen=True)
class Study:
    path: Path
    text: str
    name: str
    factor_names: list[str]
    cells: list[Cell]
    findings: list[Finding] = field(default_factory=list)
    """The study's claims over its results (``findings:``), judged once it has run."""

    @property
    def directory(self) -> Path:
        return self.path.parent
