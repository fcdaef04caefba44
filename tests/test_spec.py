"""FlowSpec: load, dump, canonical form, errors that name the place."""
from __future__ import annotations

import json

import pytest

from flowkit import SpecError, dumps, load, loads
from flowkit.spec import canonical, fingerprint
from flowkit.templates import load_template, names


def test_round_trip_is_stable():
    spec = load_template("naive_rag")
    text = dumps(spec)
    assert dumps(loads(text)) == text
    assert json.loads(text)["schema_version"] == 1


def test_layout_is_kept_apart_from_what_the_compiler_reads():
    spec = load_template("naive_rag")
    moved = spec.model_validate({**spec.model_dump(), "layout": {"retrieve": {"x": 999, "y": 1}}})
    assert "layout" not in canonical(spec)
    assert fingerprint(spec) == fingerprint(moved)
    changed = spec.model_copy(update={"description": "other"})
    assert fingerprint(changed) != fingerprint(spec)


def test_malformed_json_names_line_and_column(tmp_path):
    f = tmp_path / "bad.json"
    f.write_text('{"name": "x",\n "nodes": [}')
    with pytest.raises(SpecError, match=r"bad.json: not valid JSON at line 2, column 12"):
        load(f)


def test_wrong_shape_names_the_field():
    with pytest.raises(SpecError, match=r"nodes\.0\.id"):
        loads('{"name": "x", "nodes": [{"id": "has space", "operator": "retrieval.bm25"}]}')
    with pytest.raises(SpecError, match="extra_field"):
        loads('{"name": "x", "extra_field": 1}')
    with pytest.raises(SpecError, match="must be a JSON object"):
        loads("[1, 2]")


def test_newer_schema_version_is_refused():
    with pytest.raises(SpecError, match="schema_version 99 is newer"):
        loads('{"name": "x", "schema_version": 99}')


def test_missing_file():
    with pytest.raises(SpecError, match="cannot read flow file"):
        load("/nonexistent/flow.json")


def test_templates_load():
    assert "naive_rag" in names()
    for n in names():
        assert load_template(n).name == n
