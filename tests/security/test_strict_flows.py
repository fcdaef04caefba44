"""Issue 28, low findings: a flow file is read strictly. Duplicate keys are refused with the key
and its place named; booleans and strings are refused where numbers are expected (in limits and
in operator params); blank and control-character names and labels are validation problems."""
from __future__ import annotations

import json
from typing import Any

import pytest

from flowkit import templates
from flowkit.errors import SpecError
from flowkit.spec import from_dict, loads
from flowkit.validate import CODES, check, errors, validate_bytes


def doc(**changes: Any) -> dict[str, Any]:
    """A small valid flow document (naive retrieve-then-answer), with top-level changes."""
    base: dict[str, Any] = {
        "name": "strict", "nodes": [
            {"id": "ret", "operator": "retrieval.bm25", "params": {"top_k": 3}},
            {"id": "gen", "operator": "generation.answer"}],
        "edges": [{"source": "ret", "target": "gen"}]}
    return {**base, **changes}


def test_the_base_document_is_valid() -> None:
    spec, problems = validate_bytes(json.dumps(doc()))
    assert spec is not None and not errors(problems), problems


@pytest.mark.parametrize("text,field", [
    ('{"name": "a", "name": "b", "nodes": []}', "name"),
    ('{"name": "a", "nodes": [{"id": "r", "operator": "retrieval.bm25", '
     '"params": {"top_k": 3, "top_k": 900}}]}', "nodes[0].params.top_k"),
    ('{"name": "a", "nodes": [], "limits": {"max_steps": 5, "max_steps": 9}}',
     "limits.max_steps"),
])
def test_duplicate_keys_are_refused_with_the_key_and_place(text: str, field: str) -> None:
    with pytest.raises(SpecError) as caught:
        loads(text, "dup.json")
    err = caught.value
    assert err.code == "duplicate_key" and err.field == field and err.source == "dup.json"
    assert "more than once" in str(err)
    _, problems = validate_bytes(text, "dup.json")
    assert [(p.code, p.field) for p in problems] == [("duplicate_key", field)]
    assert problems[0].hint and "duplicate_key" in CODES


@pytest.mark.parametrize("value", [True, "10", 10.5, None])
def test_limits_refuse_what_is_not_an_integer(value: Any) -> None:
    with pytest.raises(SpecError) as caught:
        from_dict(doc(limits={"max_steps": value}))
    assert caught.value.field == "limits.max_steps", caught.value


@pytest.mark.parametrize("value", [True, "1.5"])
def test_a_float_limit_refuses_booleans_and_strings_but_takes_an_integer(value: Any) -> None:
    with pytest.raises(SpecError):
        from_dict(doc(limits={"timeout_s": value}))
    assert from_dict(doc(limits={"timeout_s": 5})).limits.timeout_s == 5.0


@pytest.mark.parametrize("value", [True, "5"])
def test_params_refuse_booleans_and_strings_where_numbers_are_expected(value: Any) -> None:
    data = doc()
    data["nodes"][0]["params"] = {"top_k": value}
    spec, problems = validate_bytes(json.dumps(data))
    assert spec is not None
    bad = [p for p in problems if p.code == "bad_param"]
    assert [(p.node, p.field) for p in bad] == [("ret", "params.top_k")], problems
    assert "got" in bad[0].message


def test_every_template_still_loads_and_validates() -> None:
    for name, spec in templates.all_templates().items():
        again = loads(json.dumps(spec.model_dump(mode="json")), name)
        assert not errors(check(again)), (name, errors(check(again)))


@pytest.mark.parametrize("name", ["   ", "\n", "a\nb", "x\x00y", "tab\there", "\u2028"])
def test_blank_or_control_character_flow_names_are_problems(name: str) -> None:
    spec, problems = validate_bytes(json.dumps(doc(name=name)))
    assert spec is not None
    bad = [p for p in problems if p.code == "bad_name"]
    assert [(p.node, p.field) for p in bad] == [(None, "name")], problems
    assert bad[0].hint and bad[0].severity == "error" and "bad_name" in CODES


@pytest.mark.parametrize("label", ["  ", "two\nlines", "nul\x00"])
def test_blank_or_control_character_labels_are_problems(label: str) -> None:
    data = doc()
    data["nodes"][1]["label"] = label
    data["edges"][0]["label"] = "x\ty"
    _, problems = validate_bytes(json.dumps(data))
    bad = [(p.node, p.field) for p in problems if p.code == "bad_name"]
    assert bad == [("gen", "nodes[1].label"), (None, "edges[0].label")], problems


def test_ordinary_names_and_an_empty_label_pass() -> None:
    data = doc(name="Näive RAG – v2")
    data["nodes"][1]["label"] = ""
    _, problems = validate_bytes(json.dumps(data))
    assert not [p for p in problems if p.code == "bad_name"]
