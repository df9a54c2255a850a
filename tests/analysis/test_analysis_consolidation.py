"""Consolidation verdicts on figures whose answers are worked by hand, the Exchange paper's among
them (test 2a: CPU 36 % + 71 % on two 2-core servers apart, 107 % of two cores halved on one 4-core
server → 53 % predicted, 53 % together; memory 6,153 MB predicted, 5,069 MB actual)."""

from __future__ import annotations

import pytest

from caplab.analysis.consolidation import compare, comparison_line


def test_the_papers_cpu_is_additive_and_its_memory_sub_additive() -> None:
    cpu = compare("CPU", "%", [53.0, 52.0, 54.0], [53.0, 55.0, 51.0])
    assert cpu.predicted == pytest.approx(53.0) and cpu.actual == pytest.approx(53.0)
    assert cpu.ratio == pytest.approx(1.0) and cpu.verdict == "additive"
    assert cpu.interval is not None and cpu.interval[0] < 1 < cpu.interval[1]
    memory = compare("memory", "MB", [6150.0, 6153.0, 6156.0], [5065.0, 5069.0, 5073.0])
    assert memory.ratio == pytest.approx(5069 / 6153) and memory.verdict == "sub-additive"
    assert memory.interval is not None and memory.interval[1] < 1
    assert comparison_line(memory).startswith("memory predicted 6,153 MB, actual 5,069 MB (ratio 0.82 [")


def test_contention_is_super_additive_and_noise_is_not_a_verdict() -> None:
    contended = compare("CPU", "%", [40.0, 41.0, 39.0], [60.0, 61.0, 59.0])
    assert contended.verdict == "super-additive"
    # 25 % more on average, but the trials scatter so widely the interval holds 1: no claim.
    noisy = compare("CPU", "%", [40.0, 10.0, 70.0], [50.0, 5.0, 95.0])
    assert noisy.interval is not None and noisy.interval[0] < 1 < noisy.interval[1]
    assert noisy.verdict == "additive"


def test_one_trial_each_gives_a_ratio_without_an_interval() -> None:
    single = compare("CPU", "%", [40.0], [60.0])
    assert single.interval is None and single.verdict == "super-additive"
    assert compare("CPU", "%", [0.0], [3.0]).verdict == "not measured"
