"""The study file: YAML into typed cells, and errors that name the file, the line and the field.

Each bad file is written out with its lines numbered in the test, so the expected line can be read
off the text itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from caplab.spec import SpecError, Study, load_study

TARGET = "name: orders\ntarget:\n  http:\n    url: http://127.0.0.1:8080/\n"
"""Lines 1–4 of most files below."""


def study_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "study.yaml"
    path.write_text(text)
    return path


def spec_error(path: Path) -> str:
    with pytest.raises(SpecError) as caught:
        load_study(path)
    return str(caught.value)


def load(tmp_path: Path, text: str) -> Study:
    return load_study(study_file(tmp_path, text))


# -- unknown fields -----------------------------------------------------------------------------


def test_a_misspelt_field_is_named_with_its_line_and_a_suggestion(tmp_path: Path) -> None:
    path = study_file(tmp_path, TARGET + "load:\n  rate: 100\n  duraton: 5s\n")
    assert spec_error(path) == f"{path}:7: load.duraton: unknown field (did you mean duration?)"


def test_a_misspelt_nested_field_has_its_full_path(tmp_path: Path) -> None:
    path = study_file(tmp_path, TARGET + "    methd: POST\nload:\n  rate: 1\n")
    assert spec_error(path) == f"{path}:5: target.http.methd: unknown field (did you mean method?)"


def test_a_misspelt_field_in_a_flow_mapping_is_found_on_its_line(tmp_path: Path) -> None:
    text = TARGET + "sut:\n  start: ./server\n  ready: {port: 8080, timout: 3s}\nload:\n  rate: 1\n"
    path = study_file(tmp_path, text)
    assert spec_error(path) == f"{path}:7: sut.ready.timout: unknown field (did you mean timeout?)"


def test_a_misspelt_top_level_section_is_suggested(tmp_path: Path) -> None:
    path = study_file(tmp_path, TARGET + "lod:\n  rate: 1\n")
    assert spec_error(path) == f"{path}:5: lod: unknown field (did you mean load?)"


def test_an_unknown_field_with_nothing_close_has_no_suggestion(tmp_path: Path) -> None:
    path = study_file(tmp_path, TARGET + "load:\n  rate: 1\n  xyzzy: 3\n")
    assert spec_error(path) == f"{path}:7: load.xyzzy: unknown field"


# -- YAML syntax --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line"),
    [
        pytest.param("name: x\n\ttarget: 1\n", 2, id="tab"),
        pytest.param(TARGET.replace("    url", "     url") + "    method: GET\n", 5, id="indentation"),
        pytest.param(TARGET + "load:\n  rate: 1\n  duration: 5s\n   warmup: 1s\n", 8, id="stray-indent"),
    ],
)
def test_a_yaml_syntax_error_names_the_file_and_line(tmp_path: Path, text: str, line: int) -> None:
    path = study_file(tmp_path, text)
    assert spec_error(path).startswith(f"{path}:{line}: YAML syntax error: ")


@pytest.mark.parametrize("text", ["", "- a\n- b\n", "just a string\n"])
def test_a_file_that_is_not_a_mapping_is_refused(tmp_path: Path, text: str) -> None:
    path = study_file(tmp_path, text)
    assert spec_error(path).startswith(f"{path}:1: a study file must be a YAML mapping")


def test_a_missing_file_is_a_spec_error(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    assert spec_error(path) == f"{path}: cannot read: No such file or directory"


# -- wrong types and values ---------------------------------------------------------------------


WRONG_TYPES = {
    "int": ("load:\n  rate: 10\n  repeat: many\n", "7: load.repeat: Input should be a valid integer"),
    "number": ("load:\n  rate: fast\n", "6: load.rate: Input should be a valid number"),
    "duration": ("load:\n  rate: 10\n  duration: soon\n", "7: load.duration: 'soon' is not a duration"),
    "section": ("load: 5\n", "5: load: Input should be a valid dictionary"),
    "negative-rate": ("load:\n  rate: -5\n", "6: load.rate: Input should be greater than 0"),
    "choice": ("load:\n  rate: 1\n  schedule: bursty\n", "7: load.schedule: Input should be 'constant'"),
    "port": ("sut:\n  ready: {port: 99999}\n", "6: sut.ready.port: Input should be less than or equal"),
    "list-item": (
        "load:\n  rate: 1\nslo:\n  - p99 < 5ms\n  - 3\n",
        "9: slo.1: Input should be a valid string",
    ),
}


@pytest.mark.parametrize(("tail", "expected"), list(WRONG_TYPES.values()), ids=list(WRONG_TYPES))
def test_a_wrong_type_names_the_field_and_line(tmp_path: Path, tail: str, expected: str) -> None:
    path = study_file(tmp_path, TARGET + tail)
    assert spec_error(path).startswith(f"{path}:{expected}")


def test_a_missing_target_is_named(tmp_path: Path) -> None:
    path = study_file(tmp_path, "name: orders\nload:\n  rate: 100\n")
    assert spec_error(path) == f"{path}:1: target: required field is missing"


def test_a_missing_nested_field_points_at_its_parent(tmp_path: Path) -> None:
    path = study_file(tmp_path, "name: orders\ntarget:\n  http:\n    method: POST\nload:\n  rate: 1\n")
    assert spec_error(path) == f"{path}:3: target.http.url: required field is missing"


def test_a_missing_name_is_named(tmp_path: Path) -> None:
    path = study_file(tmp_path, "target:\n  http:\n    url: http://127.0.0.1:1/\n")
    assert spec_error(path) == f"{path}:1: name: required field is missing"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            TARGET + "  tcp:\n    url: tcp://127.0.0.1:1\n    framing: line\n",
            "2: target: give exactly one of http:, tcp:, postgres: or mail:",
            id="two-targets",
        ),
        pytest.param(TARGET + "load:\n  rate: 1\n  users: 3\n", "5: load: ", id="rate-and-users"),
        pytest.param(
            "name: x\ntarget:\n  http:\n    url: https://example.org/\n",
            "3: target.http: url must start with http://",
            id="https",
        ),
        pytest.param(
            "name: x\ntarget:\n  tcp:\n    url: tcp://127.0.0.1:1\n",
            "3: target.tcp.framing: required field is missing",
            id="tcp-framing",
        ),
        pytest.param(
            TARGET + "sut:\n  ready: {port: 1, url: 'http://127.0.0.1:1/'}\n",
            "6: sut.ready: give exactly one of url, port or command",
            id="two-ready-checks",
        ),
    ],
)
def test_inconsistent_settings_are_named(tmp_path: Path, text: str, expected: str) -> None:
    path = study_file(tmp_path, text)
    assert spec_error(path).startswith(f"{path}:{expected}")


def test_a_bad_value_under_a_capitalised_key_keeps_the_key_in_its_path(tmp_path: Path) -> None:
    text = TARGET + "    headers:\n      Accept: text/plain\n      X-Retries: 3\nload:\n  rate: 1\n"
    path = study_file(tmp_path, text)
    assert spec_error(path).startswith(
        f"{path}:7: target.http.headers.X-Retries: Input should be a valid string"
    )


def test_an_unknown_field_in_a_capitalised_role_keeps_the_role_in_its_path(tmp_path: Path) -> None:
    text = TARGET + "sut:\n  roles:\n    Web:\n      pidd: 3\nload:\n  rate: 1\n"
    path = study_file(tmp_path, text)
    assert spec_error(path) == f"{path}:8: sut.roles.Web.pidd: unknown field (did you mean pid?)"


# -- durations ----------------------------------------------------------------------------------


def test_durations_take_units_or_bare_seconds(tmp_path: Path) -> None:
    text = TARGET + "load:\n  rate: 1\n  warmup: 500ms\n  duration: 2m\n  timeout: 30s\n"
    load_spec = load(tmp_path, text).cells[0].config.requests[1]
    assert (load_spec.warmup, load_spec.duration, load_spec.timeout) == (0.5, 120.0, 30.0)
    assert (
        load(tmp_path, TARGET + "load:\n  rate: 1\n  duration: 1.5\n").cells[0].config.requests[1].duration
        == 1.5
    )


def test_think_time_and_ready_timeout_are_durations(tmp_path: Path) -> None:
    text = TARGET + "sut:\n  ready: {port: 8080, timeout: 2m}\nload:\n  users: 4\n  think: 100ms\n"
    config = load(tmp_path, text).cells[0].config
    assert config.requests[1].think == pytest.approx(0.1)
    assert config.sut is not None and config.sut.ready is not None
    assert config.sut.ready.timeout == 120.0


def test_a_zero_duration_is_refused(tmp_path: Path) -> None:
    path = study_file(tmp_path, TARGET + "load:\n  rate: 1\n  duration: 0s\n")
    assert spec_error(path) == f"{path}:7: load.duration: Input should be greater than 0"


# -- ready shorthands ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ready", "field", "value"),
    [
        ("8080", "port", 8080),
        ("http://127.0.0.1:8080/health", "url", "http://127.0.0.1:8080/health"),
        ("'test -e /tmp/ready'", "command", "test -e /tmp/ready"),
    ],
)
def test_ready_shorthands(tmp_path: Path, ready: str, field: str, value: object) -> None:
    text = TARGET + f"sut:\n  start: ./server\n  ready: {ready}\nload:\n  rate: 1\n"
    config = load(tmp_path, text).cells[0].config
    assert config.sut is not None and config.sut.ready is not None
    assert getattr(config.sut.ready, field) == value


# -- factors ------------------------------------------------------------------------------------


def test_factors_are_substituted_into_every_cell(tmp_path: Path) -> None:
    text = (
        TARGET
        + "sut:\n  start: ./server --workers {workers} --log /tmp/w{workers}.log\n"
        + "factors:\n  workers: [1, 4]\n  rate: [100, 250.5]\n"
        + "load:\n  rate: '{rate}'\n  duration: 10s\n"
    )
    study = load(tmp_path, text)
    assert study.name == "orders"
    assert study.factor_names == ["workers", "rate"]
    assert [c.index for c in study.cells] == [0, 1, 2, 3]
    assert [c.factors for c in study.cells] == [
        {"workers": 1, "rate": 100},
        {"workers": 1, "rate": 250.5},
        {"workers": 4, "rate": 100},
        {"workers": 4, "rate": 250.5},
    ]
    for cell in study.cells:
        assert cell.config.requests[1].rate == float(cell.factors["rate"])
        assert cell.config.sut is not None
        w = cell.factors["workers"]
        assert cell.config.sut.start == f"./server --workers {w} --log /tmp/w{w}.log"


def test_a_factor_may_fill_a_duration(tmp_path: Path) -> None:
    text = TARGET + "factors:\n  length: [500ms, 2m]\nload:\n  rate: 1\n  duration: '{length}'\n"
    assert [c.config.requests[1].duration for c in load(tmp_path, text).cells] == [0.5, 120.0]


def test_zip_factors_move_together(tmp_path: Path) -> None:
    text = (
        TARGET
        + "factors:\n  workers: [1, 2, 4]\n  zip:\n    rate: [100, 200]\n    timeout: [1s, 2s]\n"
        + "load:\n  rate: '{rate}'\n  timeout: '{timeout}'\n"
        + "sut:\n  start: ./server -w {workers}\n"
    )
    study = load(tmp_path, text)
    assert len(study.cells) == 3 * 2
    assert study.factor_names == ["workers", "rate", "timeout"]
    pairs = {(c.config.requests[1].rate, c.config.requests[1].timeout) for c in study.cells}
    assert pairs == {(100.0, 1.0), (200.0, 2.0)}
    assert [(c.factors["workers"], c.factors["rate"]) for c in study.cells] == [
        (1, 100),
        (1, 200),
        (2, 100),
        (2, 200),
        (4, 100),
        (4, 200),
    ]


def test_a_study_without_factors_is_one_cell(tmp_path: Path) -> None:
    study = load(tmp_path, TARGET + "load:\n  rate: 5\n")
    assert study.factor_names == []
    assert [(c.index, c.factors) for c in study.cells] == [(0, {})]


def test_zip_lists_of_unequal_length_are_refused(tmp_path: Path) -> None:
    text = TARGET + "factors:\n  zip:\n    rate: [10, 20]\n    users: [1]\nload:\n  rate: '{rate}'\n"
    path = study_file(tmp_path, text)
    message = spec_error(path)
    assert message.startswith(f"{path}:5: factors.zip: lists must be non-empty and of equal length")


@pytest.mark.parametrize(
    ("factors", "expected"),
    [
        ("factors: [1, 2]\n", "5: factors: must be a mapping of factor name to a list of values"),
        ("factors:\n  rate: 5\n", "5: factors.rate: must be a non-empty list of values"),
        ("factors:\n  rate: []\n", "5: factors.rate: must be a non-empty list of values"),
        ("factors:\n  rate: [{a: 1}]\n", "5: factors.rate: values must be numbers or strings"),
    ],
)
def test_malformed_factors_are_refused(tmp_path: Path, factors: str, expected: str) -> None:
    path = study_file(tmp_path, TARGET + factors + "load:\n  rate: 1\n")
    assert spec_error(path).startswith(f"{path}:{expected}")


def test_an_unknown_factor_in_a_numeric_field_is_a_clear_error(tmp_path: Path) -> None:
    text = TARGET + "factors:\n  rate: [10, 20]\nload:\n  rate: '{rat}'\n"
    path = study_file(tmp_path, text)
    message = spec_error(path)
    assert message.startswith(f"{path}:8: load.rate: ")
    assert "'{rat}'" in message
    assert "is the factor name right?" in message


def test_a_factor_value_bad_in_one_cell_names_that_cell(tmp_path: Path) -> None:
    text = TARGET + "factors:\n  users: [2, 2.5]\nload:\n  users: '{users}'\n"
    path = study_file(tmp_path, text)
    message = spec_error(path)
    assert message.startswith(f"{path}:8: load.users: ")
    assert message.endswith("(in the cell where users=2.5)")


def test_engine_placeholders_and_unknown_names_in_bodies_are_left_alone(tmp_path: Path) -> None:
    text = (
        "name: orders\ntarget:\n  http:\n    url: http://127.0.0.1:8080/{path}\n    method: POST\n"
        '    body: \'<order id="{seq}" size="{size}" note="{later}"/>\'\n    template: true\n'
        "factors:\n  size: [1, 10]\n  path: [orders]\nload:\n  rate: 1\n"
    )
    bodies = []
    for cell in load(tmp_path, text).cells:
        assert cell.config.target is not None
        http = cell.config.target.http
        assert http is not None
        assert http.url == "http://127.0.0.1:8080/orders"
        bodies.append(http.body)
    assert bodies == [
        '<order id="{seq}" size="1" note="{later}"/>',
        '<order id="{seq}" size="10" note="{later}"/>',
    ]


def test_a_partial_reference_makes_a_string_and_a_whole_one_keeps_the_type(tmp_path: Path) -> None:
    text = (
        "name: 'orders-{n}'\ntarget:\n  http:\n    url: http://127.0.0.1:8080/\n"
        "    headers:\n      X-Shard: 'shard-{n}'\nfactors:\n  n: [3]\nload:\n  users: '{n}'\n"
    )
    config = load(tmp_path, text).cells[0].config
    assert config.requests[1].users == 3
    assert config.name == "orders-3"
    assert config.target is not None and config.target.http is not None
    assert config.target.http.headers == {"X-Shard": "shard-3"}
