"""Durations as people type them (caplab.units)."""

from __future__ import annotations

import pytest

from caplab.units import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("500ms", 0.5),
        ("30s", 30.0),
        ("2m", 120.0),
        ("1h", 3600.0),
        ("1.5s", 1.5),
        ("250us", 250e-6),
        ("250µs", 250e-6),
        ("3", 3.0),
        ("0", 0.0),
        (" 10 s ", 10.0),
        (7, 7.0),
        (0.25, 0.25),
    ],
)
def test_parse_duration(text: str | float, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)
    assert isinstance(parse_duration(text), float)


@pytest.mark.parametrize("text", ["xyz", "", "-1s", "1e3", ".5s", "10 sec", "5d", "1m30s", "ms"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)


@pytest.mark.parametrize("value", [-1, -0.5])
def test_parse_duration_rejects_negative_numbers(value: float) -> None:
    with pytest.raises(ValueError, match=">= 0"):
        parse_duration(value)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.5, "500ms"),
        (0.001, "1ms"),
        (1.0, "1s"),
        (30.0, "30s"),
        (1.5, "1.5s"),
        (119.0, "119s"),
        (300.0, "5m"),
    ],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize("text", ["500ms", "30s", "1.5s", "5m"])
def test_format_then_parse_round_trips(text: str) -> None:
    assert format_duration(parse_duration(text)) == text
