"""The study document as a typed, versioned object: what the store holds loads into the types and
back without losing a key, documents written before the version was recorded still load, and a
document of a newer format is refused by name rather than misread."""

from __future__ import annotations

import json

import pytest

from caplab.store import DocumentFormatError, Store, StudyDocument, reading
from caplab.store.document import FORMAT_VERSION
from support.stores import Filled


def _stored_json(store: Store, study_id: int) -> dict[str, object]:
    """The document as the store's queries build it, before any type is applied."""
    with store._read() as conn:
        doc = reading.study_document(conn, study_id)
    doc["study"]["store"] = store.url
    return dict(doc)


def test_the_stored_document_loads_into_the_types_and_back_losslessly(store: Store, filled: Filled) -> None:
    stored = _stored_json(store, filled.study_id)
    typed = store.study_document(filled.study_id)
    assert typed.to_json() == {"format_version": FORMAT_VERSION, **stored}
    assert json.loads(json.dumps(typed.to_json())) == typed.to_json(), "strict JSON as it stands"
    assert StudyDocument.from_json(json.loads(json.dumps(typed.to_json()))) == typed


def test_a_document_written_before_format_version_is_version_1(store: Store, filled: Filled) -> None:
    stored = _stored_json(store, filled.study_id)
    assert "format_version" not in stored
    assert StudyDocument.from_json(stored) == store.study_document(filled.study_id)


def test_keys_this_caplab_does_not_know_are_kept(store: Store, filled: Filled) -> None:
    doc = store.study_document(filled.study_id).to_json()
    doc["study"] = {**doc["study"], "owner": "ops"}  # type: ignore[dict-item]
    cells = doc["cells"]
    assert isinstance(cells, list)
    cells[0] = {**cells[0], "note": "rerun"}
    assert StudyDocument.from_json(doc).to_json() == doc


def test_a_newer_format_version_is_refused_with_a_clear_error(store: Store, filled: Filled) -> None:
    future = {**store.study_document(filled.study_id).to_json(), "format_version": FORMAT_VERSION + 1}
    with pytest.raises(DocumentFormatError, match=rf"format_version {FORMAT_VERSION + 1} .*upgrade caplab"):
        StudyDocument.from_json(future)
    with pytest.raises(DocumentFormatError, match="format_version 'one'"):
        StudyDocument.from_json({**future, "format_version": "one"})


def test_a_key_of_the_wrong_type_is_named_by_its_path(store: Store, filled: Filled) -> None:
    doc = store.study_document(filled.study_id).to_json()
    cells = doc["cells"]
    assert isinstance(cells, list)
    cells[1] = {**cells[1], "index": "two"}
    with pytest.raises(DocumentFormatError, match=r"cells\[1\]\.index: expected int, found 'two'"):
        StudyDocument.from_json(doc)


def test_the_validated_study_is_stored_masked_and_round_trips(store: Store) -> None:
    validated = {
        "name": "v",
        "load": {"duration": 30.0, "repeat": 1},
        "target": {"postgres": {"url": "postgresql://u:secret@db/x"}},
    }
    study_id = store.create_study("v", "name: v", "v.yaml", {}, validated=validated)
    typed = store.study_document(study_id)
    assert typed.study.validated is not None
    assert "secret" not in json.dumps(typed.study.validated), "a password never reaches the store"
    assert typed.study.validated["load"] == {"duration": 30.0, "repeat": 1}
    assert typed.to_json() == {"format_version": FORMAT_VERSION, **_stored_json(store, study_id)}
    assert StudyDocument.from_json(json.loads(json.dumps(typed.to_json()))) == typed


def test_a_study_without_a_validated_copy_has_none_and_no_key(store: Store, filled: Filled) -> None:
    typed = store.study_document(filled.study_id)
    assert typed.study.validated is None
    assert "validated" not in typed.study.to_json()
