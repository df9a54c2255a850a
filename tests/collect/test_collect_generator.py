"""The generator scope is this process: CPU it burns shows there, a child's CPU does not."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import time

from caplab.collect import GeneratorCollector, ResourceSample


def get(samples: list[ResourceSample], metric: str) -> float:
    (v,) = [s.value for s in samples if s.scope == "generator" and s.metric == metric]
    return v


def burn(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_cpu_burned_in_this_process_and_its_threads_is_the_generators() -> None:
    gen = GeneratorCollector()
    # The collector counts all of this process's CPU: a full garbage collection of the test run's
    # heap inside the window (0.1-0.2 s after the whole suite's imports) would be counted too.
    gc.collect()
    gc.disable()
    try:
        gen.start()
        began = gen.sampled_at
        burn(0.2)
        worker = threading.Thread(target=burn, args=(0.2,))  # an engine thread counts the same way
        worker.start()
        worker.join()
        subprocess.run([sys.executable, "-c", "pass"], check=True)  # a child is not the generator
        samples = gen.sample(1.0)
    finally:
        gc.enable()
    cpu_s = get(samples, "cpu_percent") / 100 * (gen.sampled_at - began)  # over its own window
    # 0.4 s burned; the rest is this process's own work around it (the fork, the thread), and
    # /proc reports CPU in 10 ms ticks.
    assert 0.38 <= cpu_s <= 0.5, cpu_s
    assert get(samples, "rss_mb") > 5
    assert get(samples, "threads") >= 1


DAEMON = (
    "import sys, time\n"
    "sys.stdout.write('ready\\n'); sys.stdout.flush(); sys.stdin.readline()\n"
    "end = time.thread_time() + 0.3\n"
    "while time.thread_time() < end:\n    pass\n"
    "sys.stdout.write('done\\n'); sys.stdout.flush(); time.sleep(30)\n"
)


def test_caplabs_own_daemons_are_the_generators_cost() -> None:
    """A child running ``caplab.profiles.…`` (the link delay, a device model) is caplab's work: its
    CPU is the generator's, shown apart as daemon_cpu_percent; the system's children are not."""
    child = subprocess.Popen(
        [sys.executable, "-c", DAEMON, "caplab.profiles.fake"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        assert child.stdout.readline().strip() == "ready"
        gen = GeneratorCollector()
        gen.start()
        began = gen.sampled_at
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "done"
        samples = gen.sample(1.0)
    finally:
        child.kill()
        child.wait()
    daemon_s = get(samples, "daemon_cpu_percent") / 100 * (gen.sampled_at - began)
    assert 0.28 <= daemon_s <= 0.36, daemon_s
    assert get(samples, "cpu_percent") >= get(samples, "daemon_cpu_percent")
