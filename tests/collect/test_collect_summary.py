"""Means over the measured window and the per-cell shape the runner stores."""

from __future__ import annotations

import pytest

from caplab.collect import ResourceSample, cell_resources, summarize


def rows(t: float, scope: str, **metrics: float) -> list[ResourceSample]:
    return [ResourceSample(t, scope, metric, value) for metric, value in metrics.items()]


def test_summarize_averages_after_the_warmup() -> None:
    samples = [
        *rows(1.0, "host", cpu_percent=190.0),  # warm-up
        *rows(2.0, "host", cpu_percent=50.0),
        *rows(3.0, "host", cpu_percent=70.0),
        *rows(3.0, "disk:sda", await_ms=4.0),  # present in one interval only
    ]
    assert summarize(samples) == {
        "host": {"cpu_percent": pytest.approx(310 / 3)},
        "disk:sda": {"await_ms": 4.0},
    }
    assert summarize(samples, t_from=1.0) == {"host": {"cpu_percent": 60.0}, "disk:sda": {"await_ms": 4.0}}
    assert summarize(samples, t_from=3.0) == {}


def test_cell_resources_shape() -> None:
    samples: list[ResourceSample] = []
    for t in (1.0, 2.0):
        samples += rows(t, "role:app", cpu_percent=40.0 * t, rss_mb=100.0, read_mb_s=1.0, write_mb_s=2.0)
        samples += rows(
            t,
            "host",
            cpu_percent=120.0,
            cpu_util_percent=60.0,
            mem_used_mb=900.0,
            mem_total_mb=3600.0,
            cores=2.0,
        )
        samples += rows(t, "cpu:0", cpu_percent=60.0)
        samples += rows(t, "disk:sda", busy_percent=30.0, avg_queue=0.5, read_mb_s=1.0, write_mb_s=4.0)
        samples += rows(t, "disk:sdb", busy_percent=80.0, avg_queue=2.0, read_mb_s=2.0, write_mb_s=1.0)
        samples += rows(t, "disk:dm-0", busy_percent=85.0, avg_queue=3.0, read_mb_s=3.0, write_mb_s=5.0)
        samples += rows(t, "net:lo", rx_mb_s=10.0, tx_mb_s=10.0)
        samples += rows(t, "net:eth0", rx_mb_s=1.0, tx_mb_s=2.0, link_mb_s=125.0)
        samples += rows(t, "generator", cpu_percent=15.0, rss_mb=30.0, threads=3.0)
    cell = cell_resources(samples, t_from=0.0)
    assert cell["app"] == {"cpu_percent": 60.0, "rss_mb": 100.0, "read_mb_s": 1.0, "write_mb_s": 2.0}
    assert cell["generator"] == {"cpu_percent": 15.0, "rss_mb": 30.0, "threads": 3.0}
    assert cell["host"] == {
        "cpu_percent": 120.0,
        "cpu_util_percent": 60.0,
        "mem_used_mb": 900.0,
        "mem_percent": 25.0,  # of the host's total: what mem<=80% holds it to
        "disk_busy_percent": 85.0,  # the busiest device, stacked or not
        "disk_avg_queue": 3.0,
        "disk_read_mb_s": 3.0,  # sda + sdb: dm-0's IO is already theirs
        "disk_write_mb_s": 5.0,
        "disk_read_iops": 0.0,
        "disk_write_iops": 0.0,
        "net_rx_mb_s": 11.0,
        "net_tx_mb_s": 12.0,
    }
    assert set(cell) == {"app", "generator", "host"}


def test_cell_resources_leaves_out_what_was_not_sampled() -> None:
    cell = cell_resources(rows(1.0, "host", cpu_percent=10.0, load1=0.5, mem_total_mb=4096.0))
    assert cell == {"host": {"cpu_percent": 10.0, "load1": 0.5}}
    assert cell_resources([]) == {}


def test_a_sample_weighs_the_time_it_covers() -> None:
    """The trial's last sample, taken a few ms after the window's end with the load stopped, must
    not count as a whole interval (it read 0/s and pulled a 400/s rate down to 320/s)."""
    samples = [*(r for t in (0.5, 1.0, 1.5, 2.0, 2.5, 3.0) for r in rows(t, "app", received_per_s=400.0))]
    samples += rows(3.02, "app", received_per_s=0.0)
    mean = summarize(samples, t_from=1.0, t_to=3.0)["app"]["received_per_s"]
    assert mean == pytest.approx(400.0 * 2.0 / 2.02)


def test_each_trial_restarts_the_series_clock() -> None:
    first = [*rows(1.0, "host", cpu_percent=10.0), *rows(2.0, "host", cpu_percent=10.0)]
    second = [*rows(0.5, "host", cpu_percent=90.0), *rows(1.0, "host", cpu_percent=90.0)]
    # Trial one covers 2 s at 10 %, trial two 1 s at 90 %: the mean is over time, not samples.
    assert summarize(first + second)["host"]["cpu_percent"] == pytest.approx((2 * 10 + 1 * 90) / 3)
