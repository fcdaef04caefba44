"""Orchestration operators inside real flow topologies: routers with labelled edges, loops through
each judge (a 'continue' edge back, an entry set), fan-out to two branches joined by each merge;
and one run of every new operator on the real stack."""
from __future__ import annotations

import math
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flowkit import ListSink, compile_flow, run_flow
from flowkit.judges import judge_text, save_classifier
from flowkit.run_request import RunHooks, RunRequest
from flowkit.runtime.llm import Completion
from flowkit.testing import FakeLLM, fake_resources, flow

Q = "Where was Mara Velt born?"
ROUTES = {"retrieve": ["who designed the lighthouse", "where was the engineer born"],
          "chat": ["hello how are you", "thank you very much"]}


class WordEmbedder:
    """Bag of hashed words, unit-normalised (as in test_orchestration.py)."""

    model_id = "words-256"

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 256), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                out[i, zlib.crc32(w.encode()) % 256] += 1.0
            out[i] /= float(np.linalg.norm(out[i])) or 1.0
        return out


class ProbLLM(FakeLLM):
    """FakeLLM whose listed words come back with probability 0.05."""

    def __init__(self, rules: list[Any], low: tuple[str, ...] = ()):
        super().__init__(rules)
        self.low = set(low)

    def complete(self, prompt: str, **kw: Any) -> Completion:
        out = super().complete(prompt, **kw)
        if out.logprobs is not None:
            out.logprobs = [(w, math.log(0.05) if w.strip(".,") in self.low else lp)
                            for w, lp in out.logprobs]
        return out


def run(spec: Any, res: Any, question: str = Q) -> tuple[Any, list[tuple[str, int]]]:
    sink = ListSink()
    result = run_flow(compile_flow(spec), res, RunRequest(question, kb="test"), RunHooks(sink=sink))
    return result, sink.sequence()


def replies(*texts: str) -> Any:
    """A FakeLLM reply function giving `texts` in turn (the last one repeats)."""
    it: Iterator[str] = iter(texts)
    last = [texts[-1]]

    def reply(prompt: str) -> str:
        last[0] = next(it, last[0])
        return last[0]
    return reply


ROUTER_PARAMS = {
    "orchestration.semantic_router": {"routes": ROUTES},
    "orchestration.llm_router": {"routes": {"retrieve": "facts", "chat": "small talk"}},
    "orchestration.hybrid_router": {"routes": {
        "retrieve": {"keywords": ["where", "who"], "examples": ROUTES["retrieve"]},
        "chat": {"keywords": ["hello"], "examples": ROUTES["chat"]}}, "llm_weight": 1.0},
}


@pytest.mark.parametrize("key", sorted(ROUTER_PARAMS))
def test_router_follows_the_labelled_edge(key):
    llm = FakeLLM([(r"Message: Hello", "chat"), (r"Message:", "retrieve"),
                   (r"Question:", "Tessel [1]")], default="Hi!")
    res = fake_resources(llm, embedder=WordEmbedder())
    spec = flow("route", [("r", key, ROUTER_PARAMS[key]), ("ret", "retrieval.bm25", {"top_k": 2}),
                          ("gen", "generation.answer"), ("chat", "generation.answer")],
                ["r>ret:retrieve", "r>chat:chat", "ret>gen"])
    result, seq = run(spec, res)
    assert result.status == "ok", result.error
    assert seq == [("r", 1), ("ret", 1), ("gen", 1)] and result.answer == "Tessel"
    assert result.memory["route"] == "retrieve"
    result, seq = run(spec, res, "Hello, how are you?")
    assert result.status == "ok", result.error
    assert seq == [("r", 1), ("chat", 1)] and result.memory["route"] == "chat"


def loop(judge: str, params: dict[str, Any], first: str = "ret") -> Any:
    """ret -> gen -> judge, 'continue' back to ret; entry ret."""
    return flow("loop", [("ret", "retrieval.bm25", {"top_k": 2, "query_from": "both"}),
                         ("gen", "generation.answer"), ("j", judge, params)],
                ["ret>gen", "gen>j", "j>ret:continue"], entry=first)


def test_llm_judge_loop_ends_when_the_model_says_yes():
    llm = FakeLLM([(r"enough to answer", replies("No.", "Yes.")), (r"Question:", "Tessel [1]")])
    result, seq = run(loop("orchestration.llm_judge", {}), fake_resources(llm))
    assert result.status == "ok", result.error
    assert seq == [("ret", 1), ("gen", 1), ("j", 1), ("ret", 2), ("gen", 2), ("j", 2)]
    assert result.memory["judgement"]["score"] == 0.9048 and result.memory["route"] == "done"


def test_budget_judge_loop_stops_at_a_share_of_the_llm_limit():
    llm = FakeLLM([(r"Question:", "Tessel [1]")])
    spec = flow("loop", [("ret", "retrieval.bm25", {"top_k": 2}), ("gen", "generation.answer"),
                         ("j", "orchestration.budget_judge", {"max_visits": 10,
                                                              "budget_fraction": 0.5})],
                ["ret>gen", "gen>j", "j>ret:continue"], limits={"max_llm_calls": 6}, entry="ret")
    result, seq = run(spec, fake_resources(llm))
    assert result.status == "ok", result.error      # ended by the judge, not by the hard limit
    assert seq == [("ret", 1), ("gen", 1), ("j", 1), ("ret", 2), ("gen", 2), ("j", 2),
                   ("ret", 3), ("gen", 3), ("j", 3)]
    assert result.memory["judgement"]["budget"]["llm_calls"] == 0.5


def test_classifier_judge_loop_over_a_chain(tmp_path: Path):
    llm = FakeLLM([(r"Next question:", replies("Who is Mara Velt?", "Where is Tessel?",
                                               "What is Velt?")),
                   (r"Answer the question in a few words", "an engineer")])
    res = fake_resources(llm, embedder=WordEmbedder())
    nodes = [("next", "pre_retrieval.next_subquestion"),
             ("ret", "retrieval.bm25", {"top_k": 2, "query_from": "queries"}),
             ("sub", "generation.sub_answer"), ("final", "generation.answer")]
    edges = ["next>ret", "ret>sub", "sub>j", "j>next:continue", "j>final:done"]
    fixed = flow("chain", [*nodes, ("j", "orchestration.classifier_judge",
                                    {"mode": "never", "max_chain": 3})], edges, entry="next")
    result, seq = run(fixed, res)
    assert result.status == "ok", result.error
    assert [s for s in seq if s[0] == "j"] == [("j", 1), ("j", 2), ("j", 3)]
    assert len(result.memory["history"]) == 3
    # weights that call the chain sufficient once it mentions 'engineer'
    emb = WordEmbedder()
    w = 6.0 * emb.embed([judge_text(Q, ["Who is Mara Velt? an engineer"])])[0]
    save_classifier(tmp_path / "judge.json", w, -3.0, 0.5, {"embedder": emb.model_id})
    trained = flow("chain", [*nodes, ("j", "orchestration.classifier_judge",
                                      {"model_path": str(tmp_path / "judge.json"),
                                       "max_chain": 3})], edges, entry="next")
    result, seq = run(trained, res)
    assert result.status == "ok", result.error
    assert seq == [("next", 1), ("ret", 1), ("sub", 1), ("j", 1), ("final", 1)]
    assert result.memory["judgement"]["label"] == "Sufficient"


def test_flare_loop_searches_with_the_masked_sentence():
    llm = ProbLLM([(r"born on the island of Tessel", "Mara Velt was born on Tessel."),
                   (r"Next sentence:", "Mara Velt was born in Osterhavn.")], low=("Osterhavn",))
    spec = flow("flare", [("ret", "retrieval.bm25", {"top_k": 1, "query_from": "queries"}),
                          ("j", "orchestration.flare_judge", {"top_n": 1})],
                ["ret>j", "j>ret:continue"], entry="ret")
    result, seq = run(spec, fake_resources(llm), "Who designed the Corren Lighthouse?")
    assert result.status == "ok", result.error
    assert seq == [("ret", 1), ("j", 1), ("ret", 2), ("j", 2)]
    assert result.answer == "Mara Velt was born on Tessel."
    assert result.memory["queries"] == ["Mara Velt was born in"]
    assert [h["accepted"] for h in result.memory["history"]] == [False, True]


def fan(merge: str, params: dict[str, Any], answer_in_branches: bool) -> Any:
    """q fans out to two searches (each answering, if asked) joined by the merge."""
    nodes: list[Any] = [("q", "retrieval.bm25", {"top_k": 1}),
                        ("a", "retrieval.bm25", {"top_k": 1}),
                        ("b", "retrieval.dense", {"top_k": 1,
                                                  "where": {"title": "Corren Lighthouse"}}),
                        ("m", merge, params)]
    edges = ["q>a", "q>b"]
    if answer_in_branches:
        nodes += [("ga", "generation.answer"), ("gb", "generation.answer")]
        edges += ["a>ga", "b>gb", "ga>m", "gb>m"]
    else:
        nodes += [("g", "generation.answer")]
        edges += ["a>m", "b>m", "m>g"]
    return flow("fan", nodes, edges)


def test_weighted_ensemble_joins_two_answering_branches():
    llm = FakeLLM([(r"\[1\] Mara Velt", "Tessel [1]"), (r"\[1\] Corren", "Corrow [1]")])
    result, seq = run(fan("orchestration.weighted_ensemble", {}, True),
                      fake_resources(llm, embedder=WordEmbedder()))
    assert result.status == "ok", result.error
    assert seq[:3] == [("q", 1), ("a", 1), ("b", 1)] and seq[-1] == ("m", 1)
    assert sorted(seq[3:5]) == [("ga", 1), ("gb", 1)]
    j = result.memory["judgement"]
    assert sorted(w["answer"] for w in j["weights"]) == ["Corrow", "Tessel"]
    assert result.answer == "Tessel" and result.citations == ["d2"]
    assert [d["id"] for d in result.memory["documents"]] == ["d2", "d1"]
    assert j["score"] > 0.5 and sum(w["weight"] for w in j["weights"]) == pytest.approx(1.0)


def test_weighted_ensemble_after_answers_per_document():
    llm = FakeLLM([(r"Passage: Mara Velt", "Tessel"), (r"Passage: Corren", "Corrow")])
    spec = flow("replug", [("ret", "retrieval.bm25", {"top_k": 3}),
                           ("pd", "generation.answer_per_document", {"top_n": 3}),
                           ("m", "orchestration.weighted_ensemble")], ["ret>pd", "pd>m"])
    result, seq = run(spec, fake_resources(llm, embedder=WordEmbedder()))
    assert result.status == "ok", result.error
    assert seq == [("ret", 1), ("pd", 1), ("m", 1)] and result.answer == "Tessel"
    assert [w["doc_ids"] for w in result.memory["judgement"]["weights"]] == [["d2"], ["d1"]]


def test_llm_fusion_joins_two_branches_before_the_answer():
    llm = FakeLLM([(r"Summarise", replies("Velt was born on Tessel.", "Tessel has a festival.")),
                   (r"Notes:", "Mara Velt was born on Tessel, an island with a festival."),
                   (r"Question:", "Tessel [1]")])
    result, seq = run(fan("orchestration.llm_fusion", {}, False), fake_resources(llm))
    assert result.status == "ok", result.error
    assert seq == [("q", 1), ("a", 1), ("b", 1), ("m", 1), ("g", 1)]
    docs = result.memory["documents"]
    assert docs[0]["id"] == "fusion:m" and docs[0]["text"].startswith("Mara Velt was born")
    assert [d["id"] for d in docs[1:]] == ["d2", "d1"]
    assert result.answer == "Tessel" and result.citations == ["fusion:m"]
    assert result.memory["candidates"] == []


@pytest.mark.real
def test_orchestration_operators_on_the_real_stack(real_resources, tmp_path):
    """Every new orchestration operator in a small flow on the sample knowledge base with the
    real model and embedder: three routers in a row before a REPLUG ensemble over two answering
    branches; LLM fusion of two branches in a loop closed by the LLM judge; FLARE in a loop that
    also passes a budget judge and a trained classifier judge."""
    res, question = real_resources, "Who designed the Corren Lighthouse?"

    def go(spec: Any) -> tuple[Any, list[tuple[str, int]], dict[str, Any]]:
        sink = ListSink()
        result = run_flow(compile_flow(spec), res, RunRequest(question, kb="sample"),
                          RunHooks(sink=sink))
        assert result.status == "ok", result.error
        return result, sink.sequence(), {s.node_id: s.memory_after for s in sink.steps}

    short = {"max_tokens": 8, "top_n": 1, "passage_chars": 300}
    routed, seq, after = go(flow("routers", [
        ("lr", "orchestration.llm_router", {"max_tokens": 6}),
        ("sr", "orchestration.semantic_router"),
        ("hr", "orchestration.hybrid_router", {"llm_weight": 0.5, "max_tokens": 6}),
        ("q", "retrieval.dense", {"top_k": 1}), ("a", "retrieval.bm25", {"top_k": 2}),
        ("b", "retrieval.dense", {"top_k": 2}), ("ga", "generation.answer", short),
        ("gb", "generation.answer", short), ("m", "orchestration.weighted_ensemble")],
        ["lr>sr:retrieve", "lr>sr:direct", "sr>hr:retrieve", "sr>hr:direct", "hr>q:retrieve",
         "hr>q:direct", "q>a", "q>b", "a>ga", "b>gb", "ga>m", "gb>m"]))
    assert seq[:3] == [("lr", 1), ("sr", 1), ("hr", 1)] and seq[-1] == ("m", 1)
    assert after["lr"]["judgement"]["reply"] and after["hr"]["judgement"]["reply"]
    assert after["sr"]["judgement"]["verdict"] == "retrieve"      # close to its examples
    assert set(after["hr"]["judgement"]["scores"]) == {"retrieve", "direct"}
    judgement = routed.memory["judgement"]
    assert len(judgement["weights"]) == 2 and routed.answer == judgement["verdict"]
    assert sum(w["weight"] for w in judgement["weights"]) == pytest.approx(1.0, abs=1e-3)
    assert any(d["id"].startswith("art-09") for d in routed.memory["documents"])  # the lighthouse

    fused, seq, after = go(flow("fusion", [
        ("q", "retrieval.dense", {"top_k": 1}), ("a", "retrieval.bm25", {"top_k": 1}),
        ("b", "retrieval.dense", {"top_k": 1}),
        ("m", "orchestration.llm_fusion", {"top_n": 1, "max_tokens": 16, "passage_chars": 300}),
        ("j", "orchestration.llm_judge", {"top_n": 2, "passage_chars": 300, "max_rounds": 2}),
        ("g", "generation.answer", short)],
        ["q>a", "q>b", "a>m", "b>m", "m>j", "j>q:continue", "j>g:done"], entry="q"))
    assert fused.memory["documents"][0]["id"] == "fusion:m" and fused.memory["documents"][0]["text"]
    assert seq[-2][0] == "j" and seq[-1][0] == "g"
    assert fused.memory["judgement"]["verdict"] == "done"

    emb = res.embedder
    pos, neg = emb.embed([judge_text(question, ["Mara Velt designed the Corren Lighthouse."]),
                          judge_text(question, [])]).astype(np.float64)
    model = save_classifier(tmp_path / "judge.npz", 8.0 * (pos - neg),
                            -4.0 * float((pos - neg) @ (pos + neg)), 0.5,
                            {"embedder": emb.model_id})
    flare, seq, after = go(flow("flare", [
        ("ret", "retrieval.dense", {"top_k": 2, "query_from": "both"}),
        ("fl", "orchestration.flare_judge", {"threshold": 0.999, "max_tokens": 12,
                                             "max_rounds": 2, "top_n": 2, "passage_chars": 300}),
        ("bj", "orchestration.budget_judge", {"max_visits": 2}),
        ("cj", "orchestration.classifier_judge", {"model_path": str(model), "max_chain": 2})],
        ["ret>fl", "fl>bj:continue", "bj>cj:continue", "cj>ret:continue"], entry="ret"))
    assert seq[:4] == [("ret", 1), ("fl", 1), ("bj", 1), ("cj", 1)]
    first = flare.memory["history"][0]
    assert first["accepted"] is False and first["low_tokens"] and first["min_prob"] < 0.999
    cj = after["cj"]["judgement"]
    assert 0.0 <= cj["score"] <= 1.0 and cj["chain_length"] == 1 and "warning" not in cj
    if seq[-1] == ("cj", 1):        # the classifier found the first draft sufficient
        assert cj["label"] == "Sufficient" and cj["score"] >= 0.5
    else:                           # else FLARE's second (last) round keeps its sentence
        assert seq[4:] == [("ret", 2), ("fl", 2)] and cj["label"] == "Insufficient"
        assert flare.memory["queries"] == [first["query"]]
        assert flare.answer == flare.memory["history"][-1]["sentence"]


def _concat_flow(top_k: int) -> Any:
    return flow("concat", [("q", "retrieval.dense", {"top_k": 1}),
                           ("a", "retrieval.bm25", {"top_k": 2}),
                           ("b", "retrieval.dense", {"top_k": 2}),
                           ("m", "orchestration.concat", {"top_k": top_k}),
                           ("g", "generation.answer", {"top_n": 3, "max_tokens": 16})],
                ["q>a", "q>b", "a>m", "b>m", "m>g"], entry="q")


def test_concat_merge_keeps_branch_order_without_repeats():
    sink = ListSink()
    result = run_flow(compile_flow(_concat_flow(3)), fake_resources(FakeLLM(default="Tessel [1]"),
                                                                       kb="sample"), RunRequest(Q, kb="sample"), RunHooks(sink=sink))
    assert result.status == "ok", result.error
    after = {s.node_id: s.memory_after for s in sink.steps}
    a_ids = [d["id"] for d in after["a"]["documents"]]
    b_ids = [d["id"] for d in after["b"]["documents"]]
    merged = [d["id"] for d in after["m"]["documents"]]
    expected = list(dict.fromkeys(a_ids + b_ids))[:3]
    assert merged == expected and len(set(merged)) == len(merged)


@pytest.mark.real
def test_concat_merge_on_the_real_stack(real_resources):
    sink = ListSink()
    result = run_flow(compile_flow(_concat_flow(4)), real_resources,
                      RunRequest("Who designed the Corren Lighthouse?", kb="sample"),
                      RunHooks(sink=sink))
    assert result.status == "ok", result.error
    assert [n for n, _ in sink.sequence()][-2:] == ["m", "g"]
    merged = sink.steps[-2].memory_after["documents"]
    assert 1 <= len(merged) <= 4 and len({d["id"] for d in merged}) == len(merged)
    assert any(d["id"].startswith("art-09") for d in merged) and result.answer
