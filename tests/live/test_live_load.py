"""`caplab load --web 0` as a browser sees it: the page's address on stderr first, the intervals
streamed as they are measured, and the finished state carrying the run's own figures."""

from __future__ import annotations

import json
import signal
import socket
import statistics
import urllib.request

import pytest

from caplab.systems.process import RunningServer
from support import live
from support.studies import caplab

RATE = 200.0


@pytest.mark.slow
def test_a_load_streams_its_intervals_and_ends_with_its_own_figures(
    caplab_cmd: list[str], plain_server: RunningServer
) -> None:
    url = f"http://{plain_server.address}/"
    run = live.start([*caplab_cmd, "load", url, "--rate", f"{RATE:g}", "-d", "3s", "--interval", "500ms",
                      "--web", "0", "--json"])  # fmt: skip
    try:
        run.wait_for_page()
        with urllib.request.urlopen(run.url, timeout=5) as page:
            assert b"EventSource" in page.read()
        seen = live.until_done(run.port)
        out, err = run.finish()
    finally:
        if run.process.poll() is None:
            run.process.kill()
    assert run.process.returncode == 0, err
    result = json.loads(out)
    throughputs = live.measured_throughputs(seen)
    assert len(throughputs) >= 3, [e.name for e in seen]
    # Intervals of 100 completions each: their mean is the window's rate, give or take one per interval.
    assert statistics.fmean(throughputs) == pytest.approx(result["throughput"], rel=0.05)
    done = seen[-1].data
    assert done["status"] == "complete"
    assert done["result"]["throughput"] == pytest.approx(result["throughput"])
    assert done["result"]["completed"] == result["completed"]
    assert [c["state"] for c in done["cells"]] == ["complete"]
    assert err.splitlines()[0] == f"live: {run.url}"


@pytest.mark.slow
def test_ctrl_c_still_exits_130_and_the_page_is_told(
    caplab_cmd: list[str], plain_server: RunningServer
) -> None:
    run = live.start([*caplab_cmd, "load", f"http://{plain_server.address}/", "--rate", "100", "-d", "30s",
                      "--interval", "250ms", "--web", "0", "--json"])  # fmt: skip
    try:
        run.wait_for_page()
        seen: list[live.Event] = []
        for event in live.events(run.port):
            seen.append(event)
            if event.name == "interval" and len(seen) == 3:
                run.process.send_signal(signal.SIGINT)
            if event.name == "done":
                break
        out, err = run.finish()
    finally:
        if run.process.poll() is None:
            run.process.kill()
    assert run.process.returncode == 130, err
    assert json.loads(out)["interrupted"] is True
    assert seen[-1].name == "done" and seen[-1].data["status"] == "interrupted"


def test_a_web_port_in_use_is_a_usage_error(caplab_cmd: list[str], plain_server: RunningServer) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = caplab("load", f"http://{plain_server.address}/", "--rate", "10", "--web", str(port))
    assert done.returncode == 2 and f"--web {port}" in done.stderr, done.stderr
