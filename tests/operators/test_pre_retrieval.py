"""Pre-retrieval operators with a scripted LLM (rewrite, HyDE, step-back, multi-query,
decomposition, verification questions), and all of them on the real stack."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pydantic
import pytest

from flowkit import ListSink, compile_flow, run_flow
from flowkit.operators.pre_retrieval.rewrite import clean_line, on_topic, question_items
from flowkit.operators.pre_retrieval.sql import attach_database, detach_database
from flowkit.registry import get
from flowkit.run_request import RunHooks, RunRequest
from flowkit.testing import FakeLLM, fake_resources, flow, operator_instance, run_operator

Q = "Who designed the Corren Lighthouse?"


def op(key: str, **params: Any) -> Any:
    return operator_instance(key, **params)


def call(key: str, memory: dict[str, Any], llm: FakeLLM, **params: Any) -> dict[str, Any]:
    return run_operator(key, memory, llm, **params)


def test_parsing_helpers():
    assert clean_line('2. Sub-question 1: "When was it lit?"') == "When was it lit?"
    assert clean_line("- Search query: Corren architect") == "Corren architect"
    assert on_topic("history of lighthouses", Q) and not on_topic("Paris is in France", Q)
    items = question_items("1. Who built the Corren Lighthouse? 2. Who designed the Corren "
                           "Lighthouse?\nThe answer is: Mara Velt\nWho paid for Corren?\n"
                           "Where is Paris?", 5, [Q], skip=[Q])
    assert items == ["Who built the Corren Lighthouse?", "Who paid for Corren?"]


def test_rewrite_writes_one_query_with_fallbacks():
    llm = FakeLLM([(r"Question: Who designed", "Search query: Corren Lighthouse architect\nmore")])
    assert call("pre_retrieval.rewrite", {"question": Q}, llm) == \
        {"queries": ["Corren Lighthouse architect"]}
    assert "Question: Who designed the Corren Lighthouse?" in llm.prompts[0]
    assert call("pre_retrieval.rewrite", {"question": Q}, llm, keep_question=True) == \
        {"queries": [Q, "Corren Lighthouse architect"]}
    drift = FakeLLM(default="The town hall of Brill has a painted ceiling.")
    assert call("pre_retrieval.rewrite", {"question": Q}, drift) == {"queries": [Q]}
    assert call("pre_retrieval.rewrite", {"question": Q}, FakeLLM(default="")) == {"queries": [Q]}


def test_hyde_searches_with_passages():
    passage = "The Corren Lighthouse was designed by the engineer Mara Velt in 1880."
    llm = FakeLLM([(r"encyclopedia passage", f"Passage: {passage}")])
    assert call("pre_retrieval.hyde", {"question": Q}, llm) == {"queries": [Q, passage]}
    assert call("pre_retrieval.hyde", {"question": Q}, llm, keep_question=False) == \
        {"queries": [passage]}
    replies = iter([passage, passage, "The Corren lighthouse stands on Tessel; Velt drew it."])
    sampled = FakeLLM([(r"Question:", lambda _p: next(replies))])
    out = call("pre_retrieval.hyde", {"question": Q}, sampled, passages=3, keep_question=False)
    assert out == {"queries": [passage, "The Corren lighthouse stands on Tessel; Velt drew it."]}
    assert len(sampled.prompts) == 3
    off = FakeLLM(default="Paris is the capital of France and has many museums.")
    assert call("pre_retrieval.hyde", {"question": Q}, off, keep_question=False) == {"queries": [Q]}


def test_step_back_writes_question_and_step_back_question():
    llm = FakeLLM([(r"more general question", "General question: What is the history of the "
                    "lighthouses on the Halvard coast?\nAnswer: many")])
    assert call("pre_retrieval.step_back", {"question": Q}, llm) == {
        "queries": [Q, "What is the history of the lighthouses on the Halvard coast?"]}
    assert call("pre_retrieval.step_back", {"question": Q}, FakeLLM(default=Q)) == {"queries": [Q]}
    statement = FakeLLM(default="The Corren Lighthouse is a tower on Tessel. It was lit in 1884.")
    assert call("pre_retrieval.step_back", {"question": Q}, statement) == {
        "queries": [Q, "The Corren Lighthouse is a tower on Tessel."]}


def test_multi_query_lists_and_tops_up():
    llm = FakeLLM([(r"in 3 different ways", "1. Who was the architect of the Corren Lighthouse?\n"
                    "2. Who designed the Corren Lighthouse?\n3. Who planned the Corren light?\n"
                    "4. Who drew the Corren Lighthouse?"),
                   (r"other words", "Rephrased question: Who built the Corren Lighthouse?")])
    out = call("pre_retrieval.multi_query", {"question": Q}, llm)
    assert out == {"queries": [Q, "Who was the architect of the Corren Lighthouse?",
                               "Who planned the Corren light?", "Who drew the Corren Lighthouse?"]}
    assert len(llm.prompts) == 1
    short = FakeLLM([(r"in 3 different ways", f"1. {Q}\n2. Which architect made the Corren "
                      "Lighthouse?"), (r"other words", "Who built the Corren Lighthouse?")])
    out = call("pre_retrieval.multi_query", {"question": Q}, short, include_question=False)
    assert out == {"queries": ["Which architect made the Corren Lighthouse?",
                               "Who built the Corren Lighthouse?"]}
    assert len(short.prompts) == 3          # list, then two top-ups (the second one repeats)
    nothing = FakeLLM(default=Q)
    assert call("pre_retrieval.multi_query", {"question": Q}, nothing, include_question=False,
                top_up=False) == {"queries": [Q]}


def test_decompose_least_to_most():
    q = "In what year was the Corren Lighthouse first lit, and who designed it?"
    llm = FakeLLM([(r"sub-questions", "Sub-question 1: Who designed the Corren Lighthouse?\n"
                    "Sub-question 2: When was the Corren Lighthouse first lit?\n"
                    "The answer is: 1884")])
    subs = ["Who designed the Corren Lighthouse?", "When was the Corren Lighthouse first lit?"]
    assert call("pre_retrieval.decompose", {"question": q}, llm) == \
        {"sub_questions": subs, "queries": subs}
    out = call("pre_retrieval.decompose", {"question": q}, llm, keep_question=True,
               max_subquestions=2)
    assert out["sub_questions"] == [subs[0], q] and out["queries"] == [subs[0], q]
    garbage = FakeLLM(default="Paris is lovely.")
    assert call("pre_retrieval.decompose", {"question": q}, garbage) == \
        {"sub_questions": [q], "queries": [q]}


def test_verification_questions_check_the_draft():
    draft = "Mara Velt designed the Corren Lighthouse in 1884."
    llm = FakeLLM([(r"Draft answer: Mara Velt", "1. Did Mara Velt design the Corren Lighthouse?\n"
                    "2. When was the Corren Lighthouse built?\n3. Is Paris in France?"),
                   (r"facts needed", "Who is the architect of the Corren Lighthouse?")])
    memory = {"question": Q, "answer": draft, "sub_questions": ["Where is Tessel?"]}
    out = call("pre_retrieval.verification_questions", memory, llm)
    new = ["Did Mara Velt design the Corren Lighthouse?", "When was the Corren Lighthouse built?"]
    assert out == {"queries": new, "sub_questions": ["Where is Tessel?", *new]}
    assert "Draft answer: Mara Velt designed the Corren Lighthouse in 1884." in llm.prompts[0]
    from_drafts = call("pre_retrieval.verification_questions",
                       {"question": Q, "drafts": ["old", draft]}, llm, n=1)
    assert from_drafts["queries"] == new[:1]
    no_draft = call("pre_retrieval.verification_questions", {"question": Q}, llm)
    assert no_draft["queries"] == ["Who is the architect of the Corren Lighthouse?"]
    silent = FakeLLM(default="")
    assert call("pre_retrieval.verification_questions", {"question": Q, "answer": draft},
                silent)["queries"] == ["Is it true that Mara Velt designed the Corren Lighthouse "
                                       "in 1884?"]


def test_params_are_bounded_and_documented():
    for key in ("rewrite", "hyde", "step_back", "multi_query", "decompose",
                "verification_questions", "text_to_sql"):
        cls = get(f"pre_retrieval.{key}")
        assert cls is not None and cls.summary()
        for name, field in cls.Params.model_fields.items():
            assert field.description, f"{key}.{name} has no description"
    with pytest.raises(pydantic.ValidationError):
        op("pre_retrieval.multi_query", n=0)
    with pytest.raises(pydantic.ValidationError):
        op("pre_retrieval.hyde", passages=9)


def test_rewrite_then_search_in_a_flow():
    llm = FakeLLM([(r"search query", "Mara Velt birthplace island")])
    spec = flow("rr", [("rw", "pre_retrieval.rewrite"),
                       ("ret", "retrieval.bm25", {"top_k": 1, "query_from": "queries"}),
                       ("gen", "generation.answer")],
                ["rw>ret", "ret>gen"])
    sink = ListSink()
    result = run_flow(compile_flow(spec), fake_resources(llm),
                      RunRequest("Where was Mara Velt born?", kb="test"), RunHooks(sink=sink))
    assert result.status == "ok", result.error
    assert sink.sequence() == [("rw", 1), ("ret", 1), ("gen", 1)]
    assert [r.query for r in sink.steps[1].retrievals] == ["Mara Velt birthplace island"]
    assert [d["id"] for d in result.memory["documents"]] == ["d2"]


@pytest.mark.real
def test_pre_retrieval_operators_on_the_real_stack(real_resources, tmp_path: Path):
    """Every pre-retrieval operator in small flows on the sample knowledge base with the real
    model: each writes usable queries that the search after it runs."""
    q = "In what year was the Corren Lighthouse first lit, and who designed it?"
    ops = [("rewrite", {"max_tokens": 16}), ("hyde", {"max_tokens": 32}),
           ("step_back", {"max_tokens": 20}),
           ("multi_query", {"n": 2, "max_tokens": 40, "top_up": False}),
           ("decompose", {"max_tokens": 40}),
           ("verification_questions", {"n": 2, "max_tokens": 40})]
    found: set[str] = set()
    for key, params in ops:
        spec = flow(key, [("pre", f"pre_retrieval.{key}", params),
                          ("ret", "retrieval.bm25", {"top_k": 3, "query_from": "queries"}),
                          ("gen", "generation.answer", {"max_tokens": 8})],
                    ["pre>ret", "ret>gen"])
        sink = ListSink()
        result = run_flow(compile_flow(spec), real_resources, RunRequest(q, kb="sample"),
                          RunHooks(sink=sink))
        assert result.status == "ok", (key, result.error)
        queries = result.memory["queries"]
        assert queries and all(isinstance(x, str) and x.strip() for x in queries), key
        assert [r.query for r in sink.steps[1].retrievals] == list(dict.fromkeys(queries)), key
        assert result.memory["documents"], key
        found |= {d["meta"].get("doc_id") for d in result.memory["documents"]}
        if key == "step_back":
            assert queries[0] == q
        if key == "decompose":
            assert result.memory["sub_questions"] == queries
    assert "art-09" in found          # the Corren Lighthouse article

    db = tmp_path / "lights.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE lighthouses (name TEXT, island TEXT, first_lit INTEGER)")
    conn.executemany("INSERT INTO lighthouses VALUES (?, ?, ?)",
                     [("Corren Lighthouse", "Tessel", 1884), ("Skallow Light", "Skallow", 1902)])
    conn.commit()
    conn.close()
    path = attach_database(real_resources.data_dir, "sample", db)
    try:
        before = path.read_bytes()
        spec = flow("sql", [("sql", "pre_retrieval.text_to_sql", {"max_tokens": 40, "retries": 0,
                                                                  "on_error": "empty"}),
                            ("gen", "generation.answer", {"max_tokens": 8})], ["sql>gen"])
        result = run_flow(compile_flow(spec), real_resources,
                          RunRequest("When was the Corren Lighthouse first lit?", kb="sample"))
        assert result.status == "ok", result.error
        scratch = result.memory["scratch"]
        assert scratch["sql"].upper().startswith(("SELECT", "WITH"))
        assert scratch.get("error") or scratch["columns"]
        docs = result.memory["documents"]
        assert len(docs) == len(scratch["rows"]) and all(d["id"].startswith("sql:") for d in docs)
        if docs and "name" in scratch["columns"]:
            assert any("Corren Lighthouse" in d["text"] for d in docs)
        assert path.read_bytes() == before
    finally:
        assert detach_database(real_resources.data_dir, "sample")
