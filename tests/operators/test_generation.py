"""Generation operators with a scripted LLM: per-document answers, knowledge and model verification."""
from __future__ import annotations

from typing import Any

import pytest

from flowkit import ListSink, compile_flow, run_flow
from flowkit.errors import OperatorInputError
from flowkit.operators.generation.verify import parse_label, parse_yes_no
from flowkit.run_request import RunHooks, RunRequest
from flowkit.testing import FakeLLM, fake_resources, flow, operator_instance, run_operator
from flowkit.text import normalize_answer

Q = "Where was Mara Velt born?"
DOCS = [{"id": "d1", "title": "A", "text": "Mara Velt was born on Tessel.", "score": 0.3},
        {"id": "d2", "title": "B", "text": "Velt lived in Osterhavn.", "score": 0.9},
        {"id": "d3", "title": "C", "text": "Tessel is her island of birth.", "score": 0.2}]


def op(key: str, **params: Any) -> Any:
    return operator_instance(key, **params)


def call(key: str, memory: dict[str, Any], llm: FakeLLM, **params: Any) -> dict[str, Any]:
    return run_operator(key, memory, llm, **params)


def test_answer_per_document_votes_over_drafts():
    llm = FakeLLM([(r"Passage: A: ", "Tessel. [1]"), (r"Passage: B: ", "Osterhavn"),
                   (r"Passage: C: ", "the  tessel")])
    out = call("generation.answer_per_document", {"question": Q, "documents": DOCS,
                                                  "scratch": {"kept": 1}}, llm)
    assert len(llm.prompts) == 3 and "Mara Velt was born on Tessel." in llm.prompts[0]
    assert out["drafts"] == ["Tessel.", "Osterhavn", "the  tessel"]
    assert out["scratch"]["per_doc"] == [{"doc_id": "d1", "answer": "Tessel."},
                                         {"doc_id": "d2", "answer": "Osterhavn"},
                                         {"doc_id": "d3", "answer": "the  tessel"}]
    assert out["scratch"]["kept"] == 1 and out["scratch"]["vote"]["tally"] == {"tessel": 2.0,
                                                                               "osterhavn": 1.0}
    assert out["answer"] == "Tessel." and out["citations"] == ["d1", "d3"]
    by_score = call("generation.answer_per_document", {"question": Q, "documents": DOCS}, llm,
                    vote="score")
    assert by_score["answer"] == "Osterhavn" and by_score["citations"] == ["d2"]
    assert normalize_answer("The Tessel!") == "tessel"


def test_answer_per_document_in_a_flow_and_errors():
    llm = FakeLLM([(r"Passage:", "Tessel")])
    spec = flow("p", [("ret", "retrieval.bm25", {"top_k": 2}),
                      ("gen", "generation.answer_per_document", {"top_n": 2})], ["ret>gen"])
    result = run_flow(compile_flow(spec), fake_resources(llm), RunRequest(Q, kb="test"))
    assert result.status == "ok", result.error
    assert result.answer == "Tessel" and result.cost.calls == 2
    assert result.memory["drafts"] == ["Tessel", "Tessel"]
    with pytest.raises(OperatorInputError, match="documents: no documents"):
        call("generation.answer_per_document", {"question": Q, "documents": []}, llm)


def test_labels_are_parsed_robustly():
    assert parse_label("SUPPORTED.") == "SUPPORTED"
    assert parse_label("The claim is not supported") == "NOT ENOUGH INFO"
    assert parse_label("refuted: it says Osterhavn") == "REFUTED"
    assert parse_label("Not enough info") == "NOT ENOUGH INFO"
    assert parse_label("Tessel is an island") is None
    assert parse_yes_no("Yes, it is.") is True and parse_yes_no("No.") is False
    assert parse_yes_no("Maybe") is None


def test_verify_knowledge_labels_each_claim():
    llm = FakeLLM([(r"Claim: Mara Velt was born on Tessel", "SUPPORTED"),
                   (r"Claim: She died in Paris", "Refuted."),
                   (r"Claim: Tessel is small", "hmm")])
    memory = {"question": Q, "documents": DOCS, "evidence": ["old"],
              "answer": "Mara Velt was born on Tessel [1]. She died in Paris. Tessel is small."}
    out = call("generation.verify_knowledge", memory, llm)
    j = out["judgement"]
    assert [(c["claim"], c["label"], c["by"]) for c in j["claims"]] == [
        ("Mara Velt was born on Tessel.", "SUPPORTED", "llm"),
        ("She died in Paris.", "REFUTED", "llm"),
        ("Tessel is small.", "NOT ENOUGH INFO", "overlap")]       # 'small' is in no passage
    assert j["verdict"] == "REFUTED" and j["score"] == pytest.approx(1 / 3, abs=1e-3)
    assert out["evidence"] == ["old", "SUPPORTED: Mara Velt was born on Tessel.",
                               "REFUTED: She died in Paris.", "NOT ENOUGH INFO: Tessel is small."]
    assert "[1] A: Mara Velt was born on Tessel." in llm.prompts[0]
    ok = call("generation.verify_knowledge", {**memory, "answer": "Tessel"}, FakeLLM(default="?"))
    assert ok["judgement"]["verdict"] == "SUPPORTED" and ok["judgement"]["claims"][0]["by"] == "overlap"
    with pytest.raises(OperatorInputError, match="answer: no answer"):
        call("generation.verify_knowledge", {**memory, "answer": " "}, llm)
    with pytest.raises(OperatorInputError, match="documents"):
        call("generation.verify_knowledge", {**memory, "documents": []}, llm)


def test_verify_model_regenerates_until_supported():
    llm = FakeLLM([(r"Answer: Paris\nIs the answer", "No."),
                   (r"previous answer \"Paris\"", "Osterhavn [2]"),
                   (r"Answer: Osterhavn\nIs the answer", "no"),
                   (r"previous answer \"Osterhavn\"", "Tessel [1]"),
                   (r"Answer: Tessel\nIs the answer", "Yes")])
    memory = {"question": Q, "documents": DOCS, "answer": "Paris", "drafts": ["Paris"]}
    out = call("generation.verify_model", memory, llm, max_retries=3)
    assert out["answer"] == "Tessel" and out["citations"] == ["d1"]
    assert out["drafts"] == ["Paris", "Osterhavn", "Tessel"]
    j = out["judgement"]
    assert j["verdict"] == "supported" and j["retries"] == 2 and j["score"] == 1.0
    assert [(r["answer"], r["supported"]) for r in j["rounds"]] == [
        ("Paris", False), ("Osterhavn", False), ("Tessel", True)]
    assert len(llm.prompts) == 5
    bounded = call("generation.verify_model", memory, llm, max_retries=1)
    assert bounded["answer"] == "Osterhavn" and bounded["judgement"]["verdict"] == "unsupported"
    assert bounded["judgement"]["retries"] == 1
    kept = call("generation.verify_model", {**memory, "answer": "Tessel"}, llm)
    assert kept == {"answer": "Tessel", "drafts": ["Paris"], "judgement": kept["judgement"]}
    assert kept["judgement"]["rounds"][0]["by"] == "llm"
    with pytest.raises(OperatorInputError, match="answer"):
        call("generation.verify_model", {k: v for k, v in memory.items() if k != "answer"}, llm)
    # the generator wrote nothing: unsupported without a judge call, then regenerated
    empty_llm = FakeLLM([(r"previous answer \"\"", "Tessel [1]"),
                         (r"Answer: Tessel\nIs the answer", "Yes")])
    empty = call("generation.verify_model", {**memory, "answer": ""}, empty_llm)
    assert empty["answer"] == "Tessel" and empty["judgement"]["verdict"] == "supported"
    assert [r["by"] for r in empty["judgement"]["rounds"]] == ["empty answer", "llm"]
    assert len(empty_llm.prompts) == 2


def test_verification_flow_records_every_call():
    llm = FakeLLM([(r"Label:", "SUPPORTED"), (r"Reply yes or no", "yes"),
                   (r"Question:.*Answer:$", "Tessel [1]")])
    spec = flow("v", [("ret", "retrieval.bm25", {"top_k": 2}), ("gen", "generation.answer"),
                      ("vk", "generation.verify_knowledge"), ("vm", "generation.verify_model")],
                ["ret>gen", "gen>vk", "vk>vm"])
    sink = ListSink()
    result = run_flow(compile_flow(spec), fake_resources(llm), RunRequest(Q, kb="test"),
                      RunHooks(sink=sink))
    assert result.status == "ok", result.error
    assert sink.sequence() == [("ret", 1), ("gen", 1), ("vk", 1), ("vm", 1)]
    assert result.answer == "Tessel" and result.cost.calls == 3
    assert result.memory["judgement"]["verdict"] == "supported"
    assert result.memory["evidence"] == ["SUPPORTED: Tessel"]


@pytest.mark.real
def test_generation_operators_on_the_real_stack(real_resources):
    """Per-document answers, knowledge verification and model verification in one flow on the
    sample knowledge base with the real model."""
    spec = flow("gen", [("ret", "retrieval.hybrid", {"top_k": 3}),
                        ("per_doc", "generation.answer_per_document", {"top_n": 3, "max_tokens": 12}),
                        ("vk", "generation.verify_knowledge", {"top_n": 2, "max_claims": 2}),
                        ("vm", "generation.verify_model", {"top_n": 2, "max_retries": 1,
                                                           "max_tokens": 12})],
                ["ret>per_doc", "per_doc>vk", "vk>vm"])
    sink = ListSink()
    result = run_flow(compile_flow(spec), real_resources,
                      RunRequest("Who designed the Corren Lighthouse?", kb="sample"),
                      RunHooks(sink=sink))
    assert result.status == "ok", result.error
    assert sink.sequence() == [("ret", 1), ("per_doc", 1), ("vk", 1), ("vm", 1)]
    mem = result.memory
    per_doc = mem["scratch"]["per_doc"]
    assert [p["doc_id"] for p in per_doc] == [d["id"] for d in mem["documents"]][:3]
    # each per-document answer is grounded in its passage or empty (the words are one CPU's)
    texts = {d["id"]: d["text"].lower() for d in mem["documents"]}
    assert any(p["answer"] for p in per_doc)
    assert all(not p["answer"] or any(w.strip(".,").lower() in texts[p["doc_id"]]
                                      for w in p["answer"].split()) for p in per_doc), per_doc
    vk = sink.steps[2].memory_after
    assert vk["judgement"]["verdict"] in ("SUPPORTED", "REFUTED", "NOT ENOUGH INFO")
    assert vk["evidence"] and all(": " in e for e in vk["evidence"])
    judgement = mem["judgement"]
    assert judgement["verdict"] in ("supported", "unsupported") and judgement["rounds"]
    assert len(mem["drafts"]) == 3 + judgement["retries"]
    assert result.answer and result.cost.calls == 3 + len(vk["judgement"]["claims"]) + \
        len(judgement["rounds"]) + judgement["retries"]
