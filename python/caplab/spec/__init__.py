"""The study file: YAML validated into typed models, with errors that name file, line and field.

A study declares a target, optionally how to start the system under test, factors whose product
is the test matrix, and the load. Any string may reference a factor as ``{name}``; each cell of
the matrix is substituted and validated on its own, so ``rate: "{rate}"`` is checked as a number
for every value the factor takes. Unknown ``{names}`` are left alone (``{seq}`` is the engine's).

    study.yaml:7: load.duraton: unknown field (did you mean duration?)

The model computes nothing: what a cell's hardware is (``caplab.profiles.design``) and what it
costs (``caplab.analysis.cost``) are worked out from it elsewhere. One module per concept: the
target, the system under test, the load, actions, search and goal, hardware, cost, job, the
whole cell (``study``), the claims judged once it has run (``findings``); the factor matrix, the
cross-field checks, the error wording and the loader beside them. This package re-exports what the
rest of caplab imports.
"""

from typing import TYPE_CHECKING

from caplab.lazy import on_first_use

if TYPE_CHECKING:
    from caplab.spec.actions import ActionSpec, RecoverySpec
    from caplab.spec.cost import ConfigurationPriceSpec, CostSpec, ProfilePriceSpec
    from caplab.spec.errors import SpecError
    from caplab.spec.factors import substitute
    from caplab.spec.fields import Scalar, Strict
    from caplab.spec.findings import Finding
    from caplab.spec.hardware import (
        ConsolidationSpec,
        DeviceSpec,
        LinkSpec,
        ProfileSpec,
        ScaleSpec,
        StorageBaselineSpec,
        VolumeSpec,
    )
    from caplab.spec.job import CounterItems, JobSpec, PhaseSpec
    from caplab.spec.load import LoadSection, UsageActionSpec, UsageSpec
    from caplab.spec.loader import load_study, load_usage
    from caplab.spec.replicates import Order, ReplicatesSpec
    from caplab.spec.search import GoalSpec, SearchSpec
    from caplab.spec.study import Cell, Study, StudyConfig
    from caplab.spec.sut import RESERVED_ROLES, MetricsSpec, ReadySpec, RoleSpecModel, SutSpec
    from caplab.spec.target import (
        DATABASE_INDEX,
        DatabaseListSpec,
        HttpTarget,
        MailTargetSpec,
        PostgresTargetSpec,
        TargetSpec,
        TcpTarget,
        spread,
    )

_WHERE = {
    "ActionSpec": "caplab.spec.actions",
    "RecoverySpec": "caplab.spec.actions",
    "ConfigurationPriceSpec": "caplab.spec.cost",
    "CostSpec": "caplab.spec.cost",
    "ProfilePriceSpec": "caplab.spec.cost",
    "SpecError": "caplab.spec.errors",
    "substitute": "caplab.spec.factors",
    "Scalar": "caplab.spec.fields",
    "Strict": "caplab.spec.fields",
    "Finding": "caplab.spec.findings",
    "ConsolidationSpec": "caplab.spec.hardware",
    "DeviceSpec": "caplab.spec.hardware",
    "LinkSpec": "caplab.spec.hardware",
    "ProfileSpec": "caplab.spec.hardware",
    "ScaleSpec": "caplab.spec.hardware",
    "StorageBaselineSpec": "caplab.spec.hardware",
    "VolumeSpec": "caplab.spec.hardware",
    "CounterItems": "caplab.spec.job",
    "JobSpec": "caplab.spec.job",
    "PhaseSpec": "caplab.spec.job",
    "LoadSection": "caplab.spec.load",
    "UsageActionSpec": "caplab.spec.load",
    "UsageSpec": "caplab.spec.load",
    "load_study": "caplab.spec.loader",
    "load_usage": "caplab.spec.loader",
    "Order": "caplab.spec.replicates",
    "ReplicatesSpec": "caplab.spec.replicates",
    "GoalSpec": "caplab.spec.search",
    "SearchSpec": "caplab.spec.search",
    "Cell": "caplab.spec.study",
    "Study": "caplab.spec.study",
    "StudyConfig": "caplab.spec.study",
    "MetricsSpec": "caplab.spec.sut",
    "RESERVED_ROLES": "caplab.spec.sut",
    "ReadySpec": "caplab.spec.sut",
    "RoleSpecModel": "caplab.spec.sut",
    "SutSpec": "caplab.spec.sut",
    "DATABASE_INDEX": "caplab.spec.target",
    "DatabaseListSpec": "caplab.spec.target",
    "HttpTarget": "caplab.spec.target",
    "MailTargetSpec": "caplab.spec.target",
    "PostgresTargetSpec": "caplab.spec.target",
    "TargetSpec": "caplab.spec.target",
    "TcpTarget": "caplab.spec.target",
    "spread": "caplab.spec.target",
}
"""Where each name lives, loaded on first use (caplab/lazy.py): the CLI imports ``SpecError`` on
every `caplab load`, and the models (pydantic) were 140 ms of its start-up.
``tests/test_cli_startup.py`` checks this table against ``__all__``."""


__getattr__ = on_first_use(__name__, _WHERE)


__all__ = [
    "DATABASE_INDEX",
    "RESERVED_ROLES",
    "ActionSpec",
    "Cell",
    "ConfigurationPriceSpec",
    "ConsolidationSpec",
    "CostSpec",
    "CounterItems",
    "DatabaseListSpec",
    "DeviceSpec",
    "Finding",
    "GoalSpec",
    "HttpTarget",
    "JobSpec",
    "LinkSpec",
    "LoadSection",
    "MailTargetSpec",
    "MetricsSpec",
    "Order",
    "PhaseSpec",
    "PostgresTargetSpec",
    "ProfilePriceSpec",
    "ProfileSpec",
    "ReadySpec",
    "RecoverySpec",
    "ReplicatesSpec",
    "RoleSpecModel",
    "Scalar",
    "ScaleSpec",
    "SearchSpec",
    "SpecError",
    "StorageBaselineSpec",
    "Strict",
    "Study",
    "StudyConfig",
    "SutSpec",
    "TargetSpec",
    "TcpTarget",
    "UsageActionSpec",
    "UsageSpec",
    "VolumeSpec",
    "load_study",
    "load_usage",
    "spread",
    "substitute",
]
