"""`make bench` rewrites only its own section of bench/RESULTS.md: the before/after comparisons
written there by hand survive every run."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).parent.parent / "bench"


def results_file() -> ModuleType:
    spec = importlib.util.spec_from_file_location("results_file", BENCH / "results_file.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HAND = "## Open model at high rates, before and after\n\n| before | after |\n|---|---|\n| 1 | 2 |\n"


def test_a_run_replaces_its_own_section_and_keeps_the_hand_written_ones(tmp_path: Path) -> None:
    rf = results_file()
    path = tmp_path / "RESULTS.md"
    path.write_text(f"{rf.BEGIN}\n# old figures\n{rf.END}\n\n{HAND}")
    rf.write_results(path, "# new figures\n", "2026-11-25 12:00 UTC")
    text = path.read_text()
    assert "# new figures" in text and "# old figures" not in text
    assert text.endswith(HAND) and "_Generated 2026-11-25 12:00 UTC._" in text
    rf.write_results(path, "# newer figures\n", "2026-11-26 12:00 UTC")
    text = path.read_text()
    assert text.count(rf.BEGIN) == 1 and "# new figures" not in text and text.endswith(HAND)


def test_a_file_without_markers_gets_the_section_appended(tmp_path: Path) -> None:
    rf = results_file()
    path = tmp_path / "RESULTS.md"
    path.write_text(HAND)
    rf.write_results(path, "# figures\n", "2026-11-25 12:00 UTC")
    text = path.read_text()
    assert text.startswith(HAND) and text.rstrip().endswith(rf.END)
    missing = tmp_path / "none.md"
    rf.write_results(missing, "# figures\n", "now")
    assert missing.read_text().startswith(rf.BEGIN + "\n# figures")


def test_the_committed_results_mark_the_generated_section_before_the_hand_written_ones() -> None:
    rf = results_file()
    text = (BENCH / "RESULTS.md").read_text()
    assert text.count(rf.BEGIN) == 1 and text.count(rf.END) == 1
    assert "before and after" in text[text.index(rf.END) :]


def test_each_script_rewrites_its_own_section_and_a_rerun_adds_no_copy(tmp_path: Path) -> None:
    """The capacity and cluster benches had been appended to the file by the Makefile (`>>`), so
    every `make bench` left one more copy of their sections; each now has markers of its own."""
    rf = results_file()
    path = tmp_path / "RESULTS.md"
    path.write_text(HAND)
    rf.write_results(path, "# run figures\n", "t1")
    rf.write_results(path, "# capacity figures\n", "t1", "bench/capacity.py")
    rf.write_results(path, "# capacity figures again\n", "t2", "bench/capacity.py")
    text = path.read_text()
    begin, end = rf.markers("bench/capacity.py")
    assert text.count(begin) == 1 and text.count(end) == 1
    assert "# capacity figures again" in text and "# capacity figures\n" not in text
    assert "# run figures" in text and text.startswith(HAND)
