"""A study's target with ``also:`` URLs (an interface engine's other channels, each a port of its
own): every URL becomes a target of the cell's plan, with the target's framing, and the load is
shared round-robin among them; a URL of another scheme is refused naming the target and its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from caplab.engine import build_plan
from caplab.spec import SpecError, load_study
from caplab.study.runner import load_spec_for

STUDY = """name: channels
target:
  tcp:
    url: tcp://127.0.0.1:7860
    also: [{also}]
    framing: mllp
    body: "MSH|^~\\\\&|A"
load: {{rate: 100, duration: 2s}}
"""


def test_also_urls_become_the_plans_other_targets_with_the_framing(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(STUDY.format(also="'tcp://127.0.0.1:7861', 'tcp://127.0.0.1:7862'"))
    [cell] = load_study(path).cells
    plan = build_plan(load_spec_for(cell.config, tmp_path))
    assert [t.url for t in plan.targets] == [f"tcp://127.0.0.1:{p}" for p in (7860, 7861, 7862)]
    assert {t.framing for t in plan.targets} == {"mllp"}
    assert '"extra_targets": [{"url": "tcp://127.0.0.1:7861", "framing": "mllp"}' in plan.to_json()


def test_an_also_url_of_another_scheme_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(STUDY.format(also="'http://127.0.0.1:7861/'"))
    with pytest.raises(SpecError) as caught:
        load_study(path)
    assert "s.yaml:3: target.tcp: also: 'http://127.0.0.1:7861/' must start with tcp://" in str(caught.value)
