"""One test per validation code: each names the code, the node and the field."""
from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowkit import ValidationError, compile_flow
from flowkit.testing import flow
from flowkit.validate import CODES, check, upstream_writes, validate_document

R, D, G = "retrieval.bm25", "retrieval.dense", "generation.answer"
J, RT, M = "orchestration.rule_judge", "orchestration.keyword_router", "orchestration.rrf"


def problems(spec, code):
    found = [p for p in check(spec) if p.code == code]
    assert found, f"expected {code}, got {[str(p) for p in check(spec)]}"
    return found


def test_valid_flow_has_no_problems():
    assert check(flow("ok", [("r", R), ("g", G)], ["r>g"])) == []


def test_spec_invalid():
    spec, found = validate_document({"name": "x", "nodes": [{"id": "a"}]})
    assert spec is None and found[0].code == "spec_invalid"
    assert "nodes.0.operator" in found[0].message


def test_empty_flow():
    assert problems(flow("e", [], []), "empty_flow")[0].field == "nodes"


def test_duplicate_node():
    p = problems(flow("d", [("a", R), ("a", G)], ["a>a"]), "duplicate_node")[0]
    assert p.node == "a" and p.field == "nodes[1].id"


def test_bad_name():
    p = problems(flow(" \t ", [("a", R), ("g", G)], ["a>g"]), "bad_name")[0]
    assert p.node is None and p.field == "name" and p.hint


def test_unknown_operator():
    p = problems(flow("u", [("a", "retrieval.telepathy")], []), "unknown_operator")[0]
    assert p.node == "a" and p.field == "operator" and "retrieval.bm25" in p.hint


def test_bad_param_names_the_field_and_value():
    p = problems(flow("b", [("a", R, {"top_k": 0})], []), "bad_param")[0]
    assert p.node == "a" and p.field == "params.top_k"
    assert "greater than or equal to 1" in p.message and "got 0" in p.message
    p = problems(flow("b", [("a", R, {"topk": 3})], []), "bad_param")[0]
    assert p.field == "params.topk"


def test_unknown_node_in_edge():
    p = problems(flow("n", [("a", R)], ["a>ghost"]), "unknown_node")[0]
    assert p.field == "edges[0].target" and "ghost" in p.message


def test_no_entry_when_several_roots():
    p = problems(flow("n", [("a", R), ("b", R), ("g", G)], ["a>g", "b>g"]), "no_entry")[0]
    assert "a, b" in p.message


def test_no_exit():
    assert problems(flow("x", [("a", R), ("b", G)], ["a>b", "b>a"], entry="a"), "no_exit")


def test_unreachable():
    p = problems(flow("u", [("a", R), ("g", G), ("lost", G)], ["a>g"], entry="a"),
                 "unreachable")[0]
    assert p.node == "lost"


def test_unread_key():
    p = problems(flow("k", [("chunk", "indexing.chunk_fixed")], []), "unread_key")[0]
    assert p.node == "chunk" and p.field == "reads.documents" and "retrieval" in p.hint


def test_cycle_without_judge():
    spec = flow("c", [("a", R), ("b", G), ("end", G)], ["a>b", "b>a", "b>end"], entry="a")
    p = problems(spec, "cycle_without_judge")[0]
    assert "a, b" in p.message


def test_cycle_through_a_judge_is_fine():
    spec = flow("c", [("a", R), ("b", G), ("j", J)], ["a>b", "b>j", "j>a:continue"], entry="a")
    assert not [p for p in check(spec) if p.severity == "error"]


def test_missing_edge_label():
    spec = flow("m", [("a", R), ("g", G), ("j", J)], ["a>g", "g>j", "j>a"], entry="a")
    p = problems(spec, "missing_edge_label")[0]
    assert p.node == "j" and p.field == "edges[2].label" and "continue" in p.hint


def test_unknown_route_label():
    spec = flow("m", [("a", R), ("g", G), ("j", J)], ["a>g", "g>j", "j>a:again"], entry="a")
    p = problems(spec, "unknown_route_label")[0]
    assert "again" in p.message and "continue, done" in p.hint


def test_unwired_route_is_a_warning():
    spec = flow("w", [("r", RT, {"routes": {"x": ["a"]}, "default": "y"}), ("g", G)], ["r>g:x"])
    p = problems(spec, "unwired_route")[0]
    assert p.severity == "warning" and "'y'" in p.message


def test_label_on_plain_edge_is_a_warning():
    p = problems(flow("l", [("a", R), ("g", G)], ["a>g:yes"]), "label_on_plain_edge")[0]
    assert p.severity == "warning" and p.field == "edges[0].label"


def test_fan_in_without_merge():
    spec = flow("f", [("s", R), ("a", R), ("b", D), ("g", G)], ["s>a", "s>b", "a>g", "b>g"])
    p = problems(spec, "fan_in_without_merge")[0]
    assert p.node == "g" and "orchestration.rrf" in p.hint


def test_nested_fanout():
    spec = flow("n", [("s", R), ("a", R), ("b", D), ("c", R), ("d", R), ("m", M), ("g", G)],
                ["s>a", "s>b", "a>c", "a>d", "b>m", "c>m", "d>m", "m>g"])
    assert problems(spec, "nested_fanout")[0].node == "a"


def test_merge_from_router():
    spec = flow("mr", [("s", R), ("r", RT, {"routes": {"go": ["x"]}, "default": "go"}),
                       ("b", D), ("m", M), ("g", G)],
                ["s>r", "s>b", "r>m:go", "b>m", "m>g"])
    assert problems(spec, "merge_from_router")[0].node == "m"


def test_every_code_is_tested():
    import inspect
    import sys
    source = inspect.getsource(sys.modules[__name__])
    for code in CODES:
        assert f'"{code}"' in source, f"no test for validation code {code}"


def test_compile_reports_every_problem_at_once():
    spec = flow("many", [("a", R, {"top_k": 0}), ("b", "nope.op"), ("g", G)], ["a>g", "a>ghost"])
    with pytest.raises(ValidationError) as info:
        compile_flow(spec)
    codes = {p.code for p in info.value.problems}
    assert {"bad_param", "unknown_operator", "unknown_node"} <= codes
    assert "node 'a', field 'params.top_k'" in str(info.value)


def _without(name: str, node: str):
    from flowkit.templates import load_template
    spec = load_template(name)
    return spec.model_copy(update={
        "nodes": [n for n in spec.nodes if n.id != node],
        "edges": [e for e in spec.edges if node not in (e.source, e.target)]})


def test_no_answer_path_naive_rag_without_generate():
    p = problems(_without("naive_rag", "generate"), "no_answer_path")[0]
    assert p.severity == "error" and p.field == "nodes"
    assert "flow 'naive_rag'" in p.message and "generation.answer" in p.hint


def test_no_answer_path_agent_without_final_node():
    p = problems(_without("agent_unirag", "final"), "no_answer_path")[0]
    assert p.severity == "error" and "'plan'" in p.message


def test_an_unreachable_answer_node_does_not_count():
    spec = flow("side", [("a", R), ("b", R), ("g", G)], ["a>b"], entry="a")
    assert problems(spec, "no_answer_path")[0].message.startswith("flow 'side'")
    fine = flow("ok", [("a", R), ("g", G), ("j", J)], ["a>g", "g>j", "j>a:continue"], entry="a")
    assert "no_answer_path" not in {p.code for p in check(fine)}   # 'done' unwired: j is an end


def test_every_template_has_an_answer_path():
    from flowkit.templates import all_templates
    for name, spec in all_templates().items():
        assert not [p for p in check(spec) if p.severity == "error"], name


MMR = "post_retrieval.mmr"


def test_dead_end_beside_the_answer_path_is_a_warning_naming_the_node():
    spec = flow("side", [("retrieve", R), ("generate", G), ("mmr", MMR)],
                ["retrieve>generate", "retrieve>mmr"])
    (p,) = problems(spec, "dead_end")
    assert p.severity == "warning" and p.node == "mmr" and p.field == "edges[1]"
    assert "'mmr' leads to no answer" in p.message and "'documents'" in p.message
    assert "between 'retrieve' and 'generate'" in p.hint
    assert not [q for q in check(spec) if q.severity == "error"]


def test_dead_end_names_the_whole_branch_once():
    spec = flow("side", [("retrieve", R), ("generate", G), ("mmr", MMR),
                         ("order", "post_retrieval.reorder")],
                ["retrieve>generate", "retrieve>mmr", "mmr>order"])
    (p,) = problems(spec, "dead_end")
    assert p.node == "mmr" and "'order'" in p.message


def test_dead_end_after_the_answer_is_written():
    spec = flow("late", [("retrieve", R), ("generate", G), ("mmr", MMR)],
                ["retrieve>generate", "generate>mmr"])
    (p,) = problems(spec, "dead_end")
    assert p.node == "mmr" and "after 'generate' wrote the answer" in p.hint


def test_a_loop_back_to_the_answer_is_no_dead_end():
    spec = flow("loop", [("a", R), ("g", G), ("j", J)], ["a>g", "g>j", "j>a:continue"], entry="a")
    assert "dead_end" not in {p.code for p in check(spec)}


def test_deleting_the_edge_into_the_answer_node_names_the_missing_path():
    spec = _without_edges("naive_rag", ("retrieve", "generate"))
    found = check(spec)
    assert "no_entry" not in {p.code for p in found}, [str(p) for p in found]
    (p,) = [p for p in found if p.code == "no_answer_path"]
    assert p.severity == "error" and p.node == "generate" and p.field == "edges"
    assert "no path from the entry 'retrieve' to an answer" in p.message
    assert "no edge leads to 'generate'" in p.message
    assert p.hint == "draw an edge from 'retrieve' to 'generate'"


def test_a_cut_off_answer_chain_names_its_head_and_the_last_reached_node():
    spec = flow("cut", [("a", R), ("m", MMR), ("o", "post_retrieval.reorder"), ("g", G)],
                ["a>m", "o>g"])
    (p,) = problems(spec, "no_answer_path")
    assert "no edge leads to 'g', which writes 'answer' (through 'o')" in p.message
    assert p.hint == "draw an edge from 'm' to 'o'"
    assert {q.node for q in check(spec) if q.code == "unreachable"} == {"o", "g"}


def test_every_template_is_free_of_dead_ends():
    from flowkit.templates import all_templates
    for name, spec in all_templates().items():
        assert [str(p) for p in check(spec) if p.code == "dead_end"] == [], name


def _without_edges(name: str, *pairs: tuple[str, str]):
    from flowkit.templates import load_template
    spec = load_template(name)
    return spec.model_copy(update={"edges": [e for e in spec.edges
                                             if (e.source, e.target) not in pairs]})


# ---- reading a flow file: every refusal has a code and a field, and quotes little -------------
def _template_doc() -> dict:
    import json

    from flowkit.templates import _dir
    return json.loads((_dir() / "naive_rag.json").read_text())


def refused(raw, code):
    from flowkit.validate import validate_bytes
    spec, found = validate_bytes(raw if isinstance(raw, bytes) else __import__("json").dumps(raw))
    assert spec is None and [p.code for p in found] == [code], [str(p) for p in found]
    assert found[0].field and found[0].severity == "error"
    return found[0]


def test_unreadable(tmp_path):
    from flowkit.validate import validate_file
    spec, found = validate_file(str(tmp_path / "missing.json"))
    assert spec is None and found[0].code == "unreadable"


def test_file_too_large():
    from flowkit.spec import MAX_FILE_BYTES
    assert refused(b" " * (MAX_FILE_BYTES + 1), "file_too_large").field == "file"


def test_not_utf8():
    assert "offset 0" in refused(b"\xff\xfe{}", "not_utf8").message


def test_bad_json():
    assert "line 1" in refused(b'{"name": ', "bad_json").message


def test_duplicate_key():
    p = refused(b'{"name": "a", "nodes": [{"id": "x", "id": "y"}]}', "duplicate_key")
    assert p.field == "nodes[0].id" and "'id'" in p.message


def test_too_deep_is_caught_before_the_parser_recurses():
    p = refused(b"[" * 5000 + b"]" * 5000, "too_deep")
    assert "64" in p.message
    doc = _template_doc()
    nested: object = 1
    for _ in range(40):
        nested = [nested]
    doc["nodes"][0]["params"] = {"a": nested}                  # 40 levels: not a depth problem
    assert validate_document(doc)[1][0].code == "bad_param"
    assert "[[[[" not in refused(b'[[[[' + b'"' * 10, "bad_json").message   # never echoes input


def test_non_finite_number():
    doc = _template_doc()
    doc["layout"]["retrieve"]["x"] = float("inf")
    refused(doc, "non_finite_number")
    assert validate_document(doc)[1][0].field == "layout.retrieve.x"
    refused(b'{"name": "x", "limits": {"timeout_s": 1e999}}', "non_finite_number")


def test_number_too_long():
    # found by the fuzz test: the code was raised but missing from the documented codes
    p = refused(b'{"name": "x", "limits": {"timeout_s": ' + b"9" * 5000 + b"}}",
                "number_too_long")
    assert "5,000 digits" in p.message


def test_bad_text():
    doc = _template_doc()
    doc["description"] = "ok \ud800"
    assert refused(doc, "bad_text").field == "description"


def test_string_too_long_quotes_little():
    doc = _template_doc()
    doc["nodes"][0]["label"] = "y" * 50_000
    p = refused(doc, "string_too_long")
    assert p.field == "nodes[0].label" and len(str(p)) < 300


def test_too_many_nodes_is_quick():
    import json
    import time
    doc = _template_doc()
    doc["nodes"] = [{"id": f"n{i}", "operator": "retrieval.bm25"} for i in range(10_000)]
    t = time.monotonic()
    assert refused(json.dumps(doc).encode(), "too_many_nodes").field == "nodes"
    assert time.monotonic() - t < 2.0


def test_too_many_edges():
    doc = _template_doc()
    doc["edges"] = [{"source": "retrieve", "target": "generate"}] * 2001
    assert refused(doc, "too_many_edges").field == "edges"


@pytest.mark.parametrize("version", [-1, 0, True, "1", 1.0, 99])
def test_bad_schema_version(version):
    doc = _template_doc()
    doc["schema_version"] = version
    assert refused(doc, "bad_schema_version").field == "schema_version"


def test_long_values_are_quoted_short():
    p = problems(flow("q", [("a", "retrieval." + "z" * 5000)], []), "unknown_operator")[0]
    assert len(p.message) < 120
    p = problems(flow("b", [("a", R, {"top_k": "9" * 5000})], []), "bad_param")[0]
    assert len(p.message) < 200


# ---- upstream writes: one pass over the components, as the per-node ancestor search said -------
@settings(max_examples=300, deadline=None)
@given(st.integers(1, 9).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n),
    st.lists(st.lists(st.sampled_from("abcde"), max_size=2), min_size=n, max_size=n))))
def test_upstream_writes_match_the_ancestors(case: tuple[int, list[tuple[int, int]],
                                                         list[list[str]]]) -> None:
    n, edges, writes = case
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    got = upstream_writes(g, {i: tuple(w) for i, w in enumerate(writes)})
    for i in range(n):
        expected = {k for a in nx.ancestors(g, i) for k in writes[a]}
        assert got[i] == expected, (i, edges, writes)
