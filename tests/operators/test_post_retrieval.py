"""Post-retrieval operators with a scripted LLM and a bag-of-words embedder."""
from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest

from flowkit import ListSink, compile_flow, run_flow
from flowkit.errors import OperatorInputError
from flowkit.operators.post_retrieval._util import parse_ranking, parse_score, yes_probability
from flowkit.operators.post_retrieval.rerank import lost_in_the_middle
from flowkit.registry import all_operators
from flowkit.run_request import RunHooks, RunRequest
from flowkit.testing import FakeLLM, fake_resources, flow, run_operator

Q = "Where was Mara Velt born?"
DOCS = [{"id": "d1", "title": "Lighthouse",
         "text": "The Corren Lighthouse was designed by Mara Velt.", "score": 0.9},
        {"id": "d2", "title": "Velt", "text": "Mara Velt was born on the island of Tessel.",
         "score": 0.5},
        {"id": "d3", "title": "Festival", "text": "Tessel holds a lantern festival every November.",
         "score": 0.2}]
KEYS = ("mmr", "embed_rerank", "llm_rerank", "reorder", "llm_compress", "selective_context",
        "llm_critique", "score_threshold", "dedupe")


class BagEmbedder:
    """Unit vectors of hashed word counts: texts sharing words are similar."""

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 256), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                out[i, sum(map(ord, w)) % 256] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


def call(key: str, memory: dict[str, Any], llm: FakeLLM | None = None,
         **params: Any) -> dict[str, Any]:
    return run_operator(f"post_retrieval.{key}", memory, llm, embedder=BagEmbedder(), **params)


def ids(out: dict[str, Any]) -> list[str]:
    return [d["id"] for d in out["documents"]]


def test_every_operator_is_registered_with_described_bounded_params():
    for key in KEYS:
        cls = all_operators()[f"post_retrieval.{key}"]
        assert cls.summary() and "documents" in cls.reads and "documents" in cls.writes
        for name, field in cls.Params.model_fields.items():
            assert field.description, (key, name)
            schema = cls.Params.model_json_schema()["properties"][name]
            if schema.get("type") in ("integer", "number"):
                assert ("minimum" in schema or "exclusiveMinimum" in schema) and "maximum" in schema


def test_embed_rerank_sorts_by_cosine_and_keeps_prior_scores():
    out = call("embed_rerank", {"question": Q, "documents": DOCS}, top_k=2)
    assert ids(out) == ["d2", "d1"]
    e = BagEmbedder().embed([Q, "Velt: " + DOCS[1]["text"]])
    assert out["documents"][0]["score"] == pytest.approx(float(e[0] @ e[1]), abs=1e-5)
    assert out["documents"][0]["meta"]["prior_score"] == 0.5
    assert "meta" not in DOCS[1]                      # the input passage is not mutated
    by_queries = call("embed_rerank", {"question": Q, "documents": DOCS,
                                       "queries": ["lantern festival November"]},
                      query_from="queries", top_k=1)
    assert ids(by_queries) == ["d3"]


def test_mmr_trades_relevance_for_diversity():
    dup = {"id": "d2b", "title": "Velt", "text": "Mara Velt was born on the island of Tessel!"}
    docs = [DOCS[1], dup, DOCS[0], DOCS[2]]
    relevance_only = call("mmr", {"question": Q, "documents": docs}, lambda_mult=1.0, top_k=2)
    assert ids(relevance_only) == ["d2", "d2b"]
    diverse = call("mmr", {"question": Q, "documents": docs}, lambda_mult=0.5, top_k=3)
    assert ids(diverse)[0] == "d2" and "d2b" not in ids(diverse)[:2]
    first = diverse["documents"][0]
    assert first["meta"]["mmr"] == pytest.approx(0.5 * first["score"], abs=1e-5)


def test_reorder_puts_the_best_at_both_ends():
    assert lost_in_the_middle(5) == [0, 2, 4, 3, 1]
    docs = [{"id": f"r{i}", "text": "x", "score": s} for i, s in enumerate([0.1, 0.9, 0.5, 0.7])]
    out = call("reorder", {"documents": docs}, rank_by="score")
    assert ids(out) == ["r1", "r2", "r0", "r3"]          # ranks 1, 3, 4, 2
    assert [d["meta"]["rank"] for d in out["documents"]] == [1, 3, 4, 2]
    assert ids(call("reorder", {"documents": docs}, top_k=3)) == ["r0", "r2", "r1"]


def test_llm_rerank_pointwise_uses_yes_logprobs():
    llm = FakeLLM([(r"Passage: Velt:", "Yes"), (r"Passage: Lighthouse:", "No, it is not."),
                   (r"Passage: Festival:", "hmm")], logprob=math.log(0.8))
    out = call("llm_rerank", {"question": Q, "documents": DOCS, "scratch": {"x": 1}}, llm, top_k=3)
    assert len(llm.prompts) == 3 and "Does the passage contain the answer" in llm.prompts[0]
    assert ids(out) == ["d2", "d1", "d3"]
    assert [d["score"] for d in out["documents"]] == pytest.approx([0.8, 0.2, 0.0], abs=1e-6)
    assert out["documents"][2]["meta"]["llm_parsed"] is False
    assert out["scratch"]["x"] == 1 and out["scratch"]["llm_rerank"]["unparsed"] == 1
    graded = call("llm_rerank", {"question": Q, "documents": DOCS},
                  FakeLLM([(r"Festival", "9"), (r"Velt:", "Score: 7/10")], default="2"),
                  scale="0-10", top_k=2)
    assert ids(graded) == ["d3", "d2"] and graded["documents"][1]["score"] == 0.7


def test_llm_rerank_listwise_parses_and_completes_the_order():
    llm = FakeLLM([(r"Rank the 3 passages", "[3] > [1] > 7")])
    out = call("llm_rerank", {"question": Q, "documents": DOCS}, llm, mode="listwise", top_k=3)
    assert "[1] Lighthouse: The Corren" in llm.prompts[0]
    assert ids(out) == ["d3", "d1", "d2"]
    assert [d["meta"]["llm_rank"] for d in out["documents"]] == [1, 2, 3]
    assert out["scratch"]["llm_rerank"]["order"] == ["d3", "d1", "d2"]
    many = [{"id": f"m{i}", "text": f"passage {i}"} for i in range(6)]
    windows = FakeLLM([(r".", "2 > 1")])
    out = call("llm_rerank", {"question": Q, "documents": many}, windows, mode="listwise",
               window=4, top_n=6, top_k=6)
    assert len(windows.prompts) == 2                  # windows [2:6] then [0:4]
    assert ids(out) == ["m1", "m0", "m3", "m2", "m4", "m5"]
    assert parse_ranking("Ranking:\n2 > 3 > 2 > 9", 3) == [1, 2, 0]
    assert parse_ranking("no idea", 2) == [0, 1]
    assert parse_score("about 11 or 8") == 0.8 and parse_score("none") is None
    assert yes_probability("Yes", [(" Yes", math.log(0.6))]) == pytest.approx(0.6)
    assert yes_probability("no.", None) == 0.0 and yes_probability("perhaps", None) is None


def test_llm_compress_keeps_only_real_sentences():
    doc = {"id": "c1", "title": "Velt", "score": 0.4,
           "text": "Mara Velt was an engineer. She was born on the island of Tessel in 1841. "
                   "She designed the Corren Lighthouse. Her brother was a sailor."}
    llm = FakeLLM([(r"Passage: Velt", "She was born on the island of Tessel in 1841. "
                                      "She loved the sea very much.")])
    out = call("llm_compress", {"question": Q, "documents": [doc, DOCS[2]]}, llm)
    assert len(llm.prompts) == 1                      # the one-sentence passage needs no call
    d = out["documents"][0]
    assert d["text"] == "She was born on the island of Tessel in 1841."
    assert d["meta"]["kept_sentences"] == 1 and d["meta"]["of_sentences"] == 4
    assert d["meta"]["original_chars"] == len(doc["text"]) and d["score"] == 0.4
    assert out["documents"][1]["text"] == DOCS[2]["text"]
    assert out["scratch"]["compression"]["fallbacks"] == 0
    stats = out["scratch"]["compression"]
    assert stats["chars_after"] < stats["chars_before"]
    fuzzy = call("llm_compress", {"question": Q, "documents": [doc]},
                 FakeLLM([(r".", "- she was born on the island of Tessel in 1841")]))
    assert fuzzy["documents"][0]["text"] == "She was born on the island of Tessel in 1841."
    fallback = call("llm_compress", {"question": "Who designed the Corren Lighthouse?",
                                     "documents": [doc]}, FakeLLM(default="None"))
    assert fallback["documents"][0]["text"] == "She designed the Corren Lighthouse."
    assert fallback["scratch"]["compression"]["fallbacks"] == 1


def test_selective_context_drops_the_least_informative_sentences():
    common = "The island is in the sea."
    docs = [{"id": f"s{i}", "text": f"{common} Filler text number {i} is here."} for i in range(4)]
    doc = {"id": "t", "text": f"{common} Mara Velt built Corren Lighthouse in 1841."}
    out = call("selective_context", {"documents": [doc], "candidates": [docs]}, keep_ratio=0.5)
    d = out["documents"][0]
    assert d["text"] == "Mara Velt built Corren Lighthouse in 1841."
    assert d["meta"]["kept_units"] == 1 and d["meta"]["of_units"] == 2
    assert out["scratch"]["compression"]["estimator"] == "unigram-df"
    # the 5 passages in memory plus the 3 chunks sampled from the knowledge base
    assert out["scratch"]["compression"]["corpus_texts"] == 8
    # memory only (kb_sample=0): the fake knowledge base also names Velt, which would make it common
    words = call("selective_context", {"documents": [doc], "candidates": [docs]}, unit="word",
                 keep_ratio=0.3, kb_sample=0)["documents"][0]["text"]
    assert "The" not in words.split() and "Velt" in words and len(words.split()) <= 4
    phrases = call("selective_context", {"documents": [{"id": "p", "text": "The island is in the "
                                                     "sea, and Velt built Corren in 1841."}],
                                         "candidates": [docs]}, unit="phrase", keep_ratio=0.6,
                   kb_sample=0)
    assert phrases["documents"][0]["text"] == "and Velt built Corren in 1841."
    assert phrases["documents"][0]["meta"]["of_units"] == 2
    everything = call("selective_context", {"documents": [doc]}, keep_ratio=1.0)
    assert everything["documents"][0]["text"] == doc["text"]


def test_selective_context_uses_model_logprobs_when_the_llm_has_them():
    text = "Tessel is big. Velt was born there."

    class ScoringLLM(FakeLLM):
        def token_logprobs(self, t: str) -> list[tuple[str, float]]:
            toks = re.findall(r"\s*\S+", t)
            return [(tok, -5.0 if "Tessel" in tok or "big" in tok else -0.1) for tok in toks]

    out = call("selective_context", {"documents": [{"id": "x", "text": text}]}, ScoringLLM())
    assert out["documents"][0]["text"] == "Tessel is big."
    assert out["scratch"]["compression"]["estimator"] == "llm"


def test_llm_critique_drops_irrelevant_passages_and_judges():
    llm = FakeLLM([(r"Passage: Velt:", "Yes"), (r"Passage: Lighthouse:", "No")], default="No",
                  logprob=math.log(0.9))
    out = call("llm_critique", {"question": Q, "documents": DOCS}, llm)
    assert ids(out) == ["d2"] and out["documents"][0]["meta"]["relevant"] is True
    assert out["documents"][0]["score"] == pytest.approx(0.9)
    assert out["judgement"] == {"by": "node", "verdict": "relevant", "score": pytest.approx(0.9),
                                "reason": "1 of 3 passages judged relevant"}
    assert [c["kept"] for c in out["scratch"]["critique"]] == [False, True, False]
    none = call("llm_critique", {"question": Q, "documents": DOCS}, FakeLLM(default="No"),
                min_keep=2)
    assert none["judgement"]["verdict"] == "irrelevant" and len(none["documents"]) == 2
    assert all(d["meta"]["relevant"] is False for d in none["documents"])


def test_score_threshold_filters_by_score_and_fraction():
    assert ids(call("score_threshold", {"documents": DOCS}, threshold=0.4)) == ["d1", "d2"]
    assert ids(call("score_threshold", {"documents": DOCS}, threshold=0.5,
                    scale="minmax")) == ["d1"]
    assert ids(call("score_threshold", {"documents": DOCS}, threshold=0.0,
                    top_fraction=0.5)) == ["d1", "d2"]
    assert ids(call("score_threshold", {"documents": DOCS}, threshold=5.0, min_keep=1)) == ["d1"]
    none = call("score_threshold", {"documents": DOCS}, threshold=5.0, min_keep=0)
    assert none["documents"] == []
    with pytest.raises(OperatorInputError, match="documents: the passages carry no scores"):
        call("score_threshold", {"documents": [{"id": "a", "text": "x"}]})


def test_dedupe_drops_same_ids_and_near_duplicates():
    near = {"id": "d2x", "text": "Mara Velt was born on the island of Tessel in spring."}
    out = call("dedupe", {"documents": [*DOCS, DOCS[0], near]}, threshold=0.6)
    assert ids(out) == ["d1", "d2", "d3"]
    assert out["scratch"]["dedupe"] == [
        {"id": "d1", "duplicate_of": "d1", "jaccard": 1.0},
        {"id": "d2x", "duplicate_of": "d2", "jaccard": 0.7778}]
    loose = call("dedupe", {"documents": [*DOCS, near]}, threshold=0.9)
    assert ids(loose) == ["d1", "d2", "d3", "d2x"]


@pytest.mark.parametrize("key", KEYS)
def test_no_documents_is_an_input_error(key: str):
    with pytest.raises(OperatorInputError, match="documents: no documents"):
        call(key, {"question": Q, "documents": []})


def test_post_retrieval_chain_in_a_flow():
    llm = FakeLLM([(r"contain the answer", "Yes"), (r"Is the passage relevant", "Yes"),
                   (r"Question:", "unknown")])
    spec = flow("post", [("ret", "retrieval.bm25", {"top_k": 3}), ("dd", "post_retrieval.dedupe"),
                         ("rr", "post_retrieval.llm_rerank", {"top_k": 3}),
                         ("cr", "post_retrieval.llm_critique"),
                         ("ro", "post_retrieval.reorder"), ("gen", "generation.answer")],
                ["ret>dd", "dd>rr", "rr>cr", "cr>ro", "ro>gen"])
    result = run_flow(compile_flow(spec), fake_resources(llm), RunRequest(Q, kb="test"))
    assert result.status == "ok", result.error
    assert result.cost.calls == 5 and ids(result.memory) == ["d2", "d1"]   # bm25 finds two
    assert result.memory["judgement"]["verdict"] == "relevant"


@pytest.mark.real
def test_post_retrieval_operators_on_the_real_stack(real_resources):
    """Every post-retrieval operator in one flow on the sample KB (real model, embedder, Chroma)."""
    nodes = [("ret", "retrieval.bm25", {"top_k": 5}),
             ("dd", "post_retrieval.dedupe"),
             ("st", "post_retrieval.score_threshold", {"threshold": 0.2, "scale": "max"}),
             ("er", "post_retrieval.embed_rerank", {"top_k": 4}),
             ("mmr", "post_retrieval.mmr", {"top_k": 3, "lambda_mult": 0.7}),
             ("lw", "post_retrieval.llm_rerank", {"mode": "listwise", "passage_chars": 150}),
             ("pw", "post_retrieval.llm_rerank", {"top_n": 2, "max_tokens": 1,
                                                  "passage_chars": 200}),
             ("cr", "post_retrieval.llm_critique", {"top_n": 2, "max_tokens": 1,
                                                    "passage_chars": 200}),
             ("lc", "post_retrieval.llm_compress", {"top_n": 2, "max_tokens": 32,
                                                    "passage_chars": 300}),
             ("sc", "post_retrieval.selective_context", {"keep_ratio": 0.6}),
             ("ro", "post_retrieval.reorder"),
             ("gen", "generation.answer", {"max_tokens": 8, "top_n": 2})]
    edges = [f"{a[0]}>{b[0]}" for a, b in zip(nodes, nodes[1:])]
    sink = ListSink()
    result = run_flow(compile_flow(flow("post", nodes, edges)), real_resources,
                      RunRequest("Who designed the Corren Lighthouse?", kb="sample"),
                      RunHooks(sink=sink))
    assert result.status == "ok", result.error
    assert sink.sequence() == [(n[0], 1) for n in nodes]
    after = {s.node_id: s.memory_after for s in sink.steps}
    retrieved = {d["id"]: d["text"] for d in after["ret"]["documents"]}
    assert after["er"]["documents"][0]["id"] == "art-09#0"          # the Corren Lighthouse article
    assert -1.0 <= after["er"]["documents"][0]["score"] <= 1.0
    assert len(after["mmr"]["documents"]) == 3
    assert sorted(d["id"] for d in after["lw"]["documents"]) == \
        sorted(d["id"] for d in after["mmr"]["documents"])
    assert all(0.0 <= d["score"] <= 1.0 for d in after["pw"]["documents"])
    assert after["cr"]["judgement"]["verdict"] in ("relevant", "irrelevant")
    assert 1 <= len(after["cr"]["documents"]) <= 2
    for d in after["lc"]["documents"]:                # extractive: only the passage's own words
        assert d["text"] and all(s in retrieved[d["id"]] for s in d["text"].split(". "))
    final = result.memory["documents"]
    assert final and {d["id"] for d in final} <= set(retrieved)
    # the real model scores tokens: selective context's LLM estimator runs (one call a passage)
    assert result.memory["scratch"]["compression"]["estimator"] == "llm"
    assert sum(len(d["text"]) for d in final) < sum(len(retrieved[d["id"]]) for d in final)
    assert result.cost.calls <= 10
