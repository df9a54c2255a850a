"""CollectorSet: one interface over many collectors; a failing one costs only its own figures."""

from __future__ import annotations

import logging

import pytest

from caplab.collect import CollectorSet, ResourceSample, RoleSpec, default_collectors


class Counting:
    """A collector that reports how many times it was sampled."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.n = 0
        self.stopped = False

    def start(self) -> None:
        self.n = 0

    def sample(self, t: float) -> list[ResourceSample]:
        self.n += 1
        return [ResourceSample(t, self.name, "n", float(self.n))]

    def stop(self) -> None:
        self.stopped = True


class Broken(Counting):
    def __init__(self, name: str, phase: str) -> None:
        super().__init__(name)
        self.phase = phase

    def start(self) -> None:
        if self.phase == "start":
            raise OSError("no /proc here")

    def sample(self, t: float) -> list[ResourceSample]:
        if self.phase == "sample":
            raise RuntimeError("counter went away")
        return super().sample(t)


def test_a_failing_collector_is_reported_once_and_the_rest_carry_on(caplog: pytest.LogCaptureFixture) -> None:
    good = Counting("good")
    at_start, at_sample = Broken("bad_start", "start"), Broken("bad_sample", "sample")
    collectors = CollectorSet([at_start, good, at_sample])
    with caplog.at_level(logging.WARNING):
        collectors.start()
        samples = collectors.sample(1.0) + collectors.sample(2.0)
        collectors.stop()
    assert samples == [ResourceSample(1.0, "good", "n", 1.0), ResourceSample(2.0, "good", "n", 2.0)]
    assert at_start.n == 0  # never sampled without a baseline
    assert set(collectors.errors) == {"bad_start", "bad_sample"}
    assert collectors.errors["bad_start"] == "start: OSError: no /proc here"
    assert len([r for r in caplog.records if "bad_sample" in r.getMessage()]) == 1
    assert "collector bad_sample failed 2 time(s); first: sample: RuntimeError: counter went away" in (
        collectors.warnings
    )
    assert good.stopped and at_start.stopped


def test_default_collectors_cover_host_disks_network_generator_and_roles() -> None:
    collectors = default_collectors([RoleSpec("nothing", match="caplab-no-such-process-anywhere")])
    collectors.start()
    samples = collectors.sample(0.5)
    collectors.stop()
    scopes = {s.scope for s in samples}
    assert {"host", "generator", "net:lo", "role:nothing"} <= scopes
    assert any(scope.startswith("cpu:") for scope in scopes)
    assert not collectors.errors
    assert collectors.warnings == [
        "role 'nothing' (match 'caplab-no-such-process-anywhere') matched no process at 1 of 1 samples"
    ]
