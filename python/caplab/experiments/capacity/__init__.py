"""The capacity experiment: the highest load at which the SLO holds, and what limits it there.

`search` is the bracket–bisect–confirm algorithm over plain probes; `trial` turns a load into a
judged trial; `answer` runs both and shapes the result; `procedure` is the study's `search:` cell.
"""

from caplab.experiments.capacity.answer import CapacityAnswer, FindSettings, find_capacity
from caplab.experiments.capacity.procedure import CapacityExperiment
from caplab.experiments.capacity.replicates import combine_replicates
from caplab.experiments.capacity.search import GeneratorSaturated, Probe
from caplab.experiments.capacity.trial import TrialLength

__all__ = [
    "CapacityAnswer",
    "CapacityExperiment",
    "FindSettings",
    "GeneratorSaturated",
    "Probe",
    "TrialLength",
    "combine_replicates",
    "find_capacity",
]
