"""The search-space file is validated like a flow: bad ranges, unknown params, operators, nodes
and models, and spaces with too many candidates are refused, each error naming what and where."""
from __future__ import annotations

import json

import pytest

from flowkit.errors import FlowkitError
from flowkit.search.candidates import Candidate, build_spec, identity
from flowkit.search.space import SpaceError, axis_values, load_space, size
from flowkit.search.splits import parse_range, split
from service import search

from .conftest import space_doc


def problems(world, **over):
    world.space.write_text(json.dumps(space_doc(world.flow, **over)))
    with pytest.raises(SpaceError) as info:
        search.load(world.ws, str(world.space))
    return info.value.problems, str(info.value)


def test_a_good_space_loads_and_counts_its_points(world):
    space, flows = search.load(world.ws, str(world.space))
    assert size(space, flows) == 4 and list(flows) == [str(world.flow)]


@pytest.mark.parametrize(("param", "expect"), [
    ({"node": "ret", "param": "top_k", "low": 8, "high": 2},
     "params[0] (node 'ret', param 'top_k'): bad range: low 8 must be below high 2"),
    ({"node": "ret", "param": "top_k", "low": 1, "high": 500},
     "params[0] (node 'ret', param 'top_k'): value 101 is not valid for retrieval.bm25"),
    ({"node": "ret", "param": "top_kk", "choices": [1]},
     "params[0] (node 'ret', param 'top_kk'): unknown param for retrieval.bm25"),
    ({"node": "nope", "param": "top_k", "choices": [1]},
     "params[0] (node 'nope', param 'top_k'): unknown node"),
    ({"node": "ret", "param": "top_k", "low": 0.5, "high": 2},
     "a decimal range needs a step"),
    ({"node": "ret", "param": "top_k", "choices": [1], "low": 1},
     "give choices or a range"),
])
def test_bad_params_are_refused_naming_where(world, param, expect):
    probs, text = problems(world, params=[param])
    assert any(expect in p for p in probs), probs
    assert "the search space has" in text and str(world.space) in text


def test_bad_operators_models_and_fields(world):
    probs, _ = problems(world, operators=[{"node": "ret", "choices": ["retrieval.bm25",
                                                                      "retrieval.nope"]}])
    assert probs == ["operators[0] (node 'ret'): unknown operator 'retrieval.nope'"]
    probs, _ = problems(world, operators=[{"node": "ret", "choices": ["retrieval.dense",
                                                                      "generation.answer"]}])
    assert any("'generation.answer' is a generation step, not in the slot of 'retrieval.bm25'"
               in p for p in probs), probs
    probs, _ = problems(world, models=["default", "no-such-model"])
    assert probs[0].startswith("models[1]: unknown model 'no-such-model'")
    probs, _ = problems(world, colour="red")
    assert probs == ["colour: Extra inputs are not permitted"]


def test_too_many_candidates_are_refused(world):
    probs, _ = problems(world, max_candidates=65)
    assert probs == ["max_candidates: Input should be less than or equal to 64"]
    wide = [{"node": "ret", "param": "top_k", "low": 1, "high": 100},
            {"node": "gen", "param": "max_tokens", "low": 1, "high": 600},
            {"node": "gen", "param": "top_n", "low": 1, "high": 20}]
    probs, _ = problems(world, params=wide)
    assert len(probs) == 1 and probs[0].startswith("space: too many candidates: the space has "
                                                   "1200000 points"), probs


def test_an_unreadable_space_is_refused(world):
    world.space.write_text("{not json")
    with pytest.raises(SpaceError, match="not JSON"):
        load_space(world.space)


def test_ranges_swaps_and_identity(world):
    space, flows = search.load(world.ws, str(world.space))
    assert axis_values(space.params[1]) == [1, 2]
    base = flows[str(world.flow)]
    swapped = build_spec(space, base, Candidate(str(world.flow), operators={"ret": "retrieval.dense"},
                                                params={"ret.top_k": 1}))
    assert swapped.node("ret").operator == "retrieval.dense" and swapped.node("ret").params == {"top_k": 1}
    same = build_spec(space, base, Candidate(str(world.flow), params={"ret.top_k": 2}))
    assert identity(same, "default") == identity(base, "default")
    assert identity(same, "default") != identity(same, "smollm2-135m")


def test_question_ranges():
    assert parse_range("2-4,9", 10) == [1, 2, 3, 8]
    qs = [{"id": str(i)} for i in range(10)]
    s, c = split(qs, "4-10", "1-3")
    assert [q["id"] for q in c] == ["0", "1", "2"] and len(s) == 7
    with pytest.raises(FlowkitError, match="must not overlap"):
        split(qs, "1-5", "5-6")
    with pytest.raises(FlowkitError, match="goes past the dataset's 10 questions"):
        parse_range("1-11", 10)


def test_a_flow_file_is_found_beside_the_space(world, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                    # not the space's folder
    world.space.write_text(json.dumps(space_doc(world.flow.name)))
    space, flows = search.load(world.ws, str(world.space))
    assert list(flows) == ["good.json"] and flows["good.json"].name == "good"


@pytest.mark.parametrize("text, expect", [
    ("[" * 30000 + "]" * 30000, "nested deeper than"),              # under the size cap
    ('{"name": "a", "name": "b", "flows": ["naive_rag"]}', "more than once"),  # duplicate key
    ('{"name": "a", "flows": ["naive_rag"], "seed": NaN}', "not valid JSON"),
    ('{"name": "\\"); import os; os.system(\\"id\\") #", "flows": ["naive_rag"]}', "name"),
])
def test_a_hostile_space_file_is_one_clear_error(tmp_path, text, expect):
    path = tmp_path / "space.json"
    path.write_text(text)
    with pytest.raises(SpaceError, match=expect):
        load_space(path)
    bad = tmp_path / "bytes.json"
    bad.write_bytes(b'{"name": "\xff"}')
    with pytest.raises(SpaceError, match="UTF-8"):
        load_space(bad)
