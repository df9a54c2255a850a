"""A generator starved of CPU must never be mistaken for the system's limit.

knownserver answers in microseconds (no work per request), so a 2 ms p99 is easy for it. The
generator runs in a cgroup with a small CPU quota: its sends leave late by a good part of those
2 ms, so its trials fail. The search must say that the generator limited it (capacity is at least
what passed, or unknown), and name the generator, never the server, as the limit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from caplab.profiles import CellHardware, Profile
from caplab.systems.process import RunningServer
from support.require import require_profiles

pytestmark = pytest.mark.slow  # a whole search under a CPU quota

STARVED = Profile.build("generator", cpus=0.15)
IMPORTED_FIRST = (
    "import sys\n"
    "import caplab.cli, caplab.cli.capacity\n"
    "print('imported', file=sys.stderr, flush=True)\n"
    "sys.stdin.readline()\n"
    "sys.argv[0] = 'caplab'\n"
    "caplab.cli.main()\n"
)
"""`python -m caplab ARGS`, its command's modules imported before it waits for a line on stdin: the
test moves it onto the starved profile in between. Importing them on 0.15 of a CPU took 10 s of
the test's wall time, and the generator under test only starts after."""


def test_a_starved_generator_is_named_as_the_limit_not_the_server(
    plain_server: RunningServer, tmp_path: Path
) -> None:
    require_profiles(STARVED)
    with CellHardware(tmp_path, {"generator": STARVED}) as hardware:
        command = [
            sys.executable, "-c", IMPORTED_FIRST, "find-capacity", f"http://{plain_server.address}/",
            "--slo", "p99<=2ms", "--sut-pid", str(plain_server.process.pid), "--threads", "1",
            "--start", "1000", "--max", "4000", "--trial", "1s", "--confirm", "1s", "--repeats", "1",
            "--warmup", "500ms", "--json",
        ]  # fmt: skip
        proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            assert proc.stderr is not None and proc.stderr.readline() == "imported\n"
            hardware.attach("generator", proc.pid)  # every thread, and what starts after
            stdout, stderr = proc.communicate("go\n", timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 1, stderr
    answer = json.loads(stdout)
    why = (answer["message"], answer["trials"])
    assert answer["found"] is False and answer["generator_saturated"] is True, why
    assert answer["capacity_rps"] is None
    assert answer["limit"]["kind"] == "generator", answer["limit"]
    assert "server" not in answer["limit"]["summary"]
    # Where it stops depends on how often the quota bites; that it names the generator does not.
    assert "the generator was the limit at" in answer["message"], answer["message"]
    floor = answer["capacity_at_least"]
    assert floor is None or answer["message"].startswith(
        f"capacity ≥ {floor:,.0f}/s (the generator's limit here)"
    )
