"""The study file's two small languages, as syntax: an SLO (``p99<=50ms``, ``cpu[web]<=75%``) and
a trigger condition (``p99 > 50ms``, ``replay_lag_ms > 100``).

Parsing a text yields a term — what it names, the comparison and the bound in the unit it is
judged in — or an error that says what would parse. Nothing here evaluates: ``analysis/slo.py`` and
``analysis/trigger.py`` hold a term against a trial's figures. The split lets ``spec`` check a
study's texts where the file gives them (file:line) without importing ``analysis``
(tests/test_layering.py)."""

from caplab.grammar.condition import ConditionTerm, TriggerError, parse_condition
from caplab.grammar.slo import SloError, SloTerm, parse_slo

__all__ = ["ConditionTerm", "SloError", "SloTerm", "TriggerError", "parse_condition", "parse_slo"]
