"""Orchestration operators with fakes: semantic / LLM / hybrid routers, LLM, FLARE, classifier and
budget judges, LLM fusion and weighted-ensemble merges (unit tests; flows are in
test_orchestration_flows.py)."""
from __future__ import annotations

import json
import math
import re
import zlib
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from flowkit.context import RunContext
from flowkit.errors import OperatorInputError, ResourceError
from flowkit.judges import chain_items, judge_text, load_classifier, save_classifier
from flowkit.operators.orchestration.flare import first_sentence, token_words
from flowkit.operators.orchestration.llm_judges import parse_yes_no, yes_probability
from flowkit.operators.orchestration.llm_routers import parse_route
from flowkit.runtime.llm import Completion
from flowkit.spec import Limits
from flowkit.testing import FakeLLM, fake_resources, operator_instance, run_operator

Q = "Where was Mara Velt born?"
DOCS = [{"id": "d1", "title": "A", "text": "Mara Velt was born on Tessel.", "score": 0.3},
        {"id": "d2", "title": "B", "text": "Velt lived in Osterhavn.", "score": 0.9},
        {"id": "d3", "title": "C", "text": "Tessel is her island of birth.", "score": 0.2}]
ROUTES = {"retrieve": ["who designed the lighthouse", "where was the engineer born"],
          "chat": ["hello how are you", "thank you very much"]}


class WordEmbedder:
    """Bag of hashed words, unit-normalised: texts sharing words are similar."""

    model_id = "words-256"

    def __init__(self, dim: int = 256):
        self.dim = dim
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                out[i, zlib.crc32(w.encode()) % self.dim] += 1.0
            n = float(np.linalg.norm(out[i]))
            out[i] /= n or 1.0
        return out


class ProbLLM(FakeLLM):
    """FakeLLM whose listed words come back with probability 0.05 (the others: exp(-0.1))."""

    def __init__(self, rules: list[Any], low: tuple[str, ...] = (), **kw: Any):
        super().__init__(rules, **kw)
        self.low = set(low)

    def complete(self, prompt: str, **kw: Any) -> Completion:
        out = super().complete(prompt, **kw)
        if out.logprobs is not None:
            out.logprobs = [(w, math.log(0.05) if w.strip(".,") in self.low else lp)
                            for w, lp in out.logprobs]
        return out


def op(key: str, **params: Any) -> Any:
    return operator_instance(key, **params)


def call(key: str, memory: dict[str, Any], llm: FakeLLM | None = None, embedder: Any = None,
         visit: int = 1, res: Any = None, **params: Any) -> dict[str, Any]:
    return run_operator(key, memory, llm, resources=res, embedder=embedder, visit=visit, **params)


# ---------------------------------------------------------------- routers

def test_semantic_router_picks_the_closest_examples():
    emb = WordEmbedder()
    out = call("orchestration.semantic_router", {"question": "Who designed the Corren lighthouse?"},
               embedder=emb, routes=ROUTES, default="chat")
    assert out["route"] == "retrieve" and out["judgement"]["verdict"] == "retrieve"
    scores = out["judgement"]["scores"]
    assert set(scores) == {"retrieve", "chat"} and scores["retrieve"] > 0.5 > scores["chat"]
    assert emb.calls == [["Who designed the Corren lighthouse?", *ROUTES["retrieve"],
                          *ROUTES["chat"]]]
    low = call("orchestration.semantic_router", {"question": "Bonjour zzz"}, embedder=emb,
               routes=ROUTES, default="chat", min_similarity=0.3)
    assert low["route"] == "chat" and "< 0.3" in low["judgement"]["reason"]
    assert op("orchestration.semantic_router", routes=ROUTES, default="other").route_labels() == \
        ("retrieve", "chat", "other")


def test_routers_without_routes_are_rejected_naming_the_field():
    from flowkit.testing import flow
    from flowkit.validate import check
    for key in ("orchestration.semantic_router", "orchestration.llm_router",
                "orchestration.hybrid_router"):
        with pytest.raises(ValidationError, match="routes"):
            op(key, routes={})
    with pytest.raises(ValidationError, match="route 'chat' needs at least one example"):
        op("orchestration.semantic_router", routes={"chat": [" "]})
    problems = check(flow("bad", [("r", "orchestration.semantic_router", {"routes": {}})], []))
    bad = [p for p in problems if p.code == "bad_param"]
    assert bad and bad[0].node == "r" and bad[0].field == "params.routes"


def test_llm_router_parses_the_reply_leniently():
    llm = FakeLLM([(r"Message: Hello", "Direct."), (r"Message: Who", "I would pick retrieve"),
                   (r"Message: What", "2"), (r"Message: Tell", "This is a question about facts")],
                  default="no idea")
    routes = {"retrieve": "a question about facts in the knowledge base",
              "direct": "greetings or chit-chat"}
    picks = {q: call("orchestration.llm_router", {"question": q}, llm, routes=routes,
                     default="retrieve")
             for q in ("Hello there", "Who is Velt?", "What now?", "Tell me", "Hmm")}
    assert {q: o["route"] for q, o in picks.items()} == {
        "Hello there": "direct", "Who is Velt?": "retrieve", "What now?": "direct",
        "Tell me": "retrieve", "Hmm": "retrieve"}
    assert picks["Hmm"]["judgement"]["reason"] == "reply named no route: default"
    assert picks["Hello there"]["judgement"]["reply"] == "Direct."
    assert "retrieve: a question about facts in the knowledge base\ndirect: greetings or " \
           "chit-chat" in llm.prompts[0] and "Message: Hello there" in llm.prompts[0]
    assert parse_route("multi_hop!", ["single", "multi-hop"]) == "multi-hop"
    assert parse_route("greetings, I think", ["a", "b"], {"a": "facts", "b": "greetings"}) is None
    assert parse_route("no", ["a", "b"]) is None


def test_hybrid_router_mixes_keywords_similarity_and_the_llm():
    routes = {"retrieve": {"keywords": ["who", "where"], "examples": ROUTES["retrieve"],
                           "description": "facts"},
              "chat": {"keywords": ["hello"], "examples": ROUTES["chat"],
                       "description": "small talk"}}
    q = {"question": "Who was born where?"}
    kw = call("orchestration.hybrid_router", q, routes=routes, keyword_weight=1.0,
              semantic_weight=0.0)           # no embedder given: it must not be used
    assert kw["route"] == "retrieve" and kw["judgement"]["scores"] == {"retrieve": 1.0, "chat": 0.0}
    assert kw["judgement"]["signals"]["keywords"] == {"retrieve": 2, "chat": 0}
    llm = FakeLLM(default="chat")
    by_llm = call("orchestration.hybrid_router", q, llm, routes=routes, keyword_weight=0.0,
                  semantic_weight=0.0, llm_weight=1.0, default="chat")
    assert by_llm["route"] == "chat" and by_llm["judgement"]["reply"] == "chat"
    assert "retrieve: facts\nchat: small talk" in llm.prompts[0]
    emb = WordEmbedder()
    mixed = call("orchestration.hybrid_router", {"question": "hello, who are you"}, llm,
                 embedder=emb, routes=routes, keyword_weight=1.0, semantic_weight=1.0,
                 llm_weight=2.0)
    vecs = emb.embed(["hello, who are you", *ROUTES["retrieve"], *ROUTES["chat"]])
    sims = vecs[1:] @ vecs[0]
    expect = {"retrieve": (1.0 + max(sims[:2])) / 4, "chat": (1.0 + max(sims[2:]) + 2.0) / 4}
    assert mixed["route"] == "chat"
    assert mixed["judgement"]["scores"] == pytest.approx(expect, abs=1e-4)
    with pytest.raises(OperatorInputError, match="params.keyword_weight"):
        call("orchestration.hybrid_router", q, routes=routes, keyword_weight=0.0,
             semantic_weight=0.0, llm_weight=0.0)


# ---------------------------------------------------------------- judges

def test_llm_judge_scores_yes_by_its_probability():
    memory = {"question": Q, "documents": DOCS, "evidence": ["Velt: born on Tessel"],
              "drafts": ["Tessel"]}
    llm = FakeLLM(default="Yes, it is enough.")          # max_tokens 3: 'Yes, it is'
    yes = call("orchestration.llm_judge", memory, llm)
    assert yes == {"route": "done", "judgement": {
        "by": "node", "verdict": "done", "reason": "P(yes) 0.905 vs threshold 0.5",
        "reply": "Yes, it is", "score": 0.9048, "source": "logprobs"}}
    prompt = llm.prompts[0]
    assert "[1] A: Mara Velt was born on Tessel." in prompt and "Draft answer: Tessel" in prompt
    assert "Notes:\n- Velt: born on Tessel" in prompt and "Question: " + Q in prompt
    no = call("orchestration.llm_judge", memory, FakeLLM(default="No."))
    assert no["route"] == "continue" and no["judgement"]["score"] == 0.0952
    strict = call("orchestration.llm_judge", memory, llm, threshold=0.95)
    assert strict["route"] == "continue"
    text = call("orchestration.llm_judge", memory, FakeLLM(default="I think yes"),
                use_logprobs=False)
    assert text["route"] == "done" and text["judgement"]["source"] == "text"
    unclear = call("orchestration.llm_judge", memory, FakeLLM(default="Maybe"))
    assert unclear["route"] == "continue" and unclear["judgement"]["score"] is None
    silent = FakeLLM(default="yes")
    assert call("orchestration.llm_judge", {"question": Q}, silent)["route"] == "continue"
    assert call("orchestration.llm_judge", memory, silent, visit=5)["route"] == "done"
    assert silent.prompts == []
    assert yes_probability([(" No", math.log(0.43))]) == pytest.approx(0.43)
    assert yes_probability([("Yes", math.log(0.6))]) == pytest.approx(0.6)
    assert yes_probability([("Tessel", -0.1)]) is None and yes_probability(None) is None
    assert parse_yes_no("Well, no.") is False and parse_yes_no("yesterday") is None


def test_flare_judge_retrieves_again_with_the_unsure_words_masked():
    reply = "Mara Velt was born in Osterhavn. She liked boats."
    memory = {"question": Q, "documents": DOCS, "drafts": ["old"]}
    unsure = ProbLLM([(r"Answer so far: \(nothing yet\)", reply)], low=("Osterhavn",))
    out = call("orchestration.flare_judge", memory, unsure)
    sentence = "Mara Velt was born in Osterhavn."
    assert out["route"] == "continue" and "answer" not in out
    assert out["queries"] == ["Mara Velt was born in"]
    assert out["drafts"] == ["old", sentence]
    assert out["history"] == [{"flare": "node", "sentence": sentence, "min_prob": 0.05,
                               "low_tokens": ["Osterhavn."], "accepted": False,
                               "query": "Mara Velt was born in"}]
    assert out["judgement"]["score"] == 0.05 and out["judgement"]["query"] == out["queries"][0]
    assert "[1] A: Mara Velt was born on Tessel." in unsure.prompts[0]
    with_q = call("orchestration.flare_judge", memory, unsure, add_question=True)
    assert with_q["queries"] == [f"{Q} Mara Velt was born in"]
    last = call("orchestration.flare_judge", memory, unsure, visit=3, max_rounds=3)
    assert last["route"] == "done" and last["answer"] == sentence
    assert last["history"][0]["accepted"] is True and "kept after 3" in last["judgement"]["reason"]
    sure = call("orchestration.flare_judge", memory, ProbLLM([(r".", "B: " + reply)]))
    assert sure["route"] == "done" and sure["answer"] == sentence   # title 'B:' dropped
    assert sure["judgement"]["reason"] == "every word p >= 0.4" and "queries" not in sure
    empty = call("orchestration.flare_judge", memory, FakeLLM(default=""))
    assert empty["route"] == "continue" and empty["queries"] == [Q] and empty["drafts"] == ["old"]


def test_flare_judge_builds_a_multi_sentence_answer():
    llm = ProbLLM([(r"Answer so far: Mara Velt", "She designed the Corren Lighthouse."),
                   (r"Answer so far: \(nothing", "Mara Velt was born on Tessel. More")])
    first = call("orchestration.flare_judge", {"question": Q, "documents": DOCS}, llm,
                 max_sentences=2)
    assert first["route"] == "continue" and first["queries"] == ["Mara Velt was born on Tessel."]
    second = call("orchestration.flare_judge", {"question": Q, "documents": DOCS,
                                                "history": first["history"],
                                                "drafts": first["drafts"]}, llm, visit=2,
                  max_sentences=2)
    both = "Mara Velt was born on Tessel. She designed the Corren Lighthouse."
    assert second["route"] == "done" and second["answer"] == both
    assert second["drafts"] == ["Mara Velt was born on Tessel.", both]
    ended = call("orchestration.flare_judge", {"question": Q, "documents": DOCS},
                 ProbLLM([(r".", "Tessel.")]), max_sentences=3)
    assert ended["route"] == "done" and ended["answer"] == "Tessel."   # the model ended it
    assert first_sentence("Answer: Corren: It is tall. Yes", ["Corren"]) == ("It is tall.", 16, 27)
    assert token_words("Velt was born", [("V", -0.1), ("elt", -3.0), (" was", -0.1)], 0, 9) == \
        [("Velt", pytest.approx(math.exp(-3.0))), ("was", pytest.approx(math.exp(-0.1)))]


def test_classifier_files_round_trip_without_pickle(tmp_path):
    w = [0.5, -1.0, 2.0]
    js = save_classifier(tmp_path / "judge.json", w, 0.25, 0.6, {"embedder": "words-3"})
    assert json.loads(js.read_text()) == {"embedder": "words-3", "w": w, "b": 0.25,
                                          "threshold": 0.6}
    npz = save_classifier(tmp_path / "judge.npz", w, 0.25, 0.6, {"embedder": "words-3"})
    for path in (js, npz):
        clf = load_classifier(path)
        assert clf.w.tolist() == w and clf.b == 0.25 and clf.threshold == 0.6
        assert clf.meta == {"embedder": "words-3"}
    with np.load(npz, allow_pickle=False) as z:
        assert sorted(z.files) == ["b", "meta", "threshold", "w"]
    np.savez(tmp_path / "evil.npz", w=np.array([object()], dtype=object), b=np.float64(0))
    with pytest.raises(ResourceError, match="cannot read classifier"):
        load_classifier(tmp_path / "evil.npz")
    with pytest.raises(ResourceError, match="threshold must be in"):
        save_classifier(tmp_path / "x.json", w, 0.0, 1.5)
    with pytest.raises(ResourceError, match=".json or .npz"):
        save_classifier(tmp_path / "x.pkl", w, 0.0)
    (tmp_path / "bad.json").write_text('{"w": []}')
    with pytest.raises(ResourceError, match="bad.json"):
        load_classifier(tmp_path / "bad.json")


def test_classifier_judge_decides_on_the_chain(tmp_path):
    emb = WordEmbedder()
    save_classifier(tmp_path / "yes.json", np.zeros(256), 2.0, 0.5, {"embedder": "other"})
    save_classifier(tmp_path / "no.npz", np.zeros(256), -2.0, 0.5, {"embedder": "words-256"})
    memory = {"question": Q, "history": [{"sub_question": "Who is Velt?", "sub_answer": "An "
                                          "engineer"}, {"thought": "ignored"}],
              "drafts": ["An engineer"]}
    assert chain_items(memory) == ["Who is Velt? An engineer"]
    assert chain_items({"drafts": ["Tessel", ""]}) == ["Tessel"]
    res = fake_resources(embedder=emb)
    res.data_dir = tmp_path                           # relative paths are read under the data dir
    yes = call("orchestration.classifier_judge", memory, res=res, model_path="yes.json")
    assert emb.calls == [[judge_text(Q, ["Who is Velt? An engineer"])]]
    assert emb.calls[0][0] == f"{Q} || Who is Velt? An engineer"
    j = yes["judgement"]
    assert yes["route"] == "done" and j["label"] == "Sufficient" and j["score"] == 0.8808
    assert j["chain_length"] == 1 and "trained with embedder other" in j["warning"]
    no = call("orchestration.classifier_judge", memory, res=res,
              model_path=str(tmp_path / "no.npz"))
    assert no["route"] == "continue" and no["judgement"]["label"] == "Insufficient"
    assert "warning" not in no["judgement"]
    low = call("orchestration.classifier_judge", memory, res=res, model_path="no.npz",
               threshold=0.1)
    assert low["route"] == "done" and low["judgement"]["threshold"] == 0.1
    capped = call("orchestration.classifier_judge", memory, res=res, model_path="no.npz",
                  max_chain=1)
    assert capped["route"] == "done" and "chain length 1 >= 1" in capped["judgement"]["reason"]
    never = call("orchestration.classifier_judge", memory, res=res, mode="never", max_chain=2)
    assert never["route"] == "continue" and never["judgement"]["reason"] == "fixed-length chain"
    with pytest.raises(OperatorInputError, match="params.model_path: classifier file not found"):
        call("orchestration.classifier_judge", memory, res=res, model_path="missing.json")
    with pytest.raises(OperatorInputError, match="params.model_path: no weights file"):
        call("orchestration.classifier_judge", memory, res=res, model_path=" ")
    save_classifier(tmp_path / "small.json", [1.0, 2.0], 0.0)
    with pytest.raises(OperatorInputError, match="2 features but the embedder gives 256"):
        call("orchestration.classifier_judge", memory, res=res, model_path="small.json")


def test_budget_judge_reads_rounds_evidence_and_the_flow_limits():
    def judge(memory: dict[str, Any], visit: int = 1, usage: dict[str, float] | None = None,
              **params: Any) -> dict[str, Any]:
        ctx = RunContext(fake_resources(), "test", "node", visit, usage=usage,
                         limits=Limits(max_llm_calls=10, max_steps=20))
        return op("orchestration.budget_judge", **params).run(memory, ctx)

    usage = {"steps": 4, "llm_calls": 8, "tokens": 300, "elapsed_s": 6.0}
    spent = judge({}, usage=usage)
    assert spent["route"] == "done" and spent["judgement"]["budget"] == {
        "steps": 0.2, "llm_calls": 0.8, "tokens": 0.01, "elapsed_s": 0.01}
    assert spent["judgement"]["reason"] == "llm_calls at 80% of the limit"
    assert judge({}, usage={**usage, "llm_calls": 2})["route"] == "continue"
    assert judge({}, usage=usage, budget_fraction=None)["route"] == "continue"
    assert judge({}, visit=3)["judgement"]["reason"] == "round 3 of 3"
    notes = judge({"evidence": ["a", "b"], "documents": DOCS}, max_evidence=2)
    assert notes["route"] == "done" and notes["judgement"]["collected"] == 2
    docs = judge({"documents": DOCS}, max_evidence=3)
    assert docs["judgement"]["reason"] == "3 passages collected >= 3"
    assert judge({"documents": DOCS}, max_evidence=4)["route"] == "continue"


# ---------------------------------------------------------------- merges

def test_llm_fusion_summarises_each_branch_then_fuses():
    llm = FakeLLM([(r"\[1\] A:.*Summarise", "Velt was born on Tessel [1]."),
                   (r"\[1\] C:.*Summarise", "Tessel is her birthplace."),
                   (r"Notes:", "Mara Velt was born on Tessel.")])
    memory = {"question": Q, "drafts": ["old"],
              "branches": [{"documents": DOCS[:2]}, {"documents": DOCS[2:], "drafts": ["Tessel"]}]}
    out = call("orchestration.llm_fusion", memory, llm, top_n=2)
    fused = "Mara Velt was born on Tessel."
    assert out["documents"][0] == {"id": "fusion:node", "title": "Fused summary", "text": fused,
                                   "score": 1.0, "meta": {
                                       "sources": ["d1", "d2", "d3"],
                                       "summaries": ["Velt was born on Tessel.",
                                                     "Tessel is her birthplace."]}}
    assert [d["id"] for d in out["documents"][1:]] == ["d1", "d2", "d3"]
    assert out["candidates"] == [] and out["drafts"] == ["old", "Tessel", fused]
    assert len(llm.prompts) == 3
    assert "- Velt was born on Tessel.\n- Tessel is her birthplace." in llm.prompts[2]
    single = call("orchestration.llm_fusion", {"question": Q, "documents": DOCS}, llm, top_k=1)
    assert single["documents"][0]["text"] == "Velt was born on Tessel."
    assert [d["id"] for d in single["documents"]] == ["fusion:node", "d1"]
    with pytest.raises(OperatorInputError, match="documents: nothing to fuse"):
        call("orchestration.llm_fusion", {"question": Q, "branches": [{}, {}]}, llm)


def test_weighted_ensemble_votes_with_similarity_weights():
    emb = WordEmbedder()
    branches = [{"documents": [DOCS[0]], "answer": "Tessel"},
                {"documents": [DOCS[1]], "drafts": ["x", "Osterhavn [1]"]},
                {"documents": [DOCS[2]], "answer": "the Tessel."}]
    out = call("orchestration.weighted_ensemble", {"question": Q, "branches": branches},
               embedder=emb)
    vecs = emb.embed([Q, *(d["text"] for d in DOCS)])
    z = (vecs[1:] @ vecs[0]) / 0.1
    weights = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    j = out["judgement"]
    assert [w["weight"] for w in j["weights"]] == pytest.approx(weights.tolist(), abs=1e-4)
    assert [w["answer"] for w in j["weights"]] == ["Tessel", "Osterhavn [1]", "the Tessel."]
    assert j["tally"] == pytest.approx({"tessel": weights[0] + weights[2],
                                        "osterhavn": weights[1]}, abs=1e-4)
    assert out["answer"] == "Tessel" and out["citations"] == ["d1", "d3"]
    assert [d["id"] for d in out["documents"]] == [DOCS[i]["id"] for i in np.argsort(-weights)]
    assert out["documents"][0]["score"] == pytest.approx(weights.max(), abs=1e-6)
    per_doc = {"question": Q, "documents": DOCS, "drafts": ["Tessel", "Osterhavn", "Tessel"],
               "scratch": {"per_doc": [{"doc_id": "d2", "answer": "Osterhavn"},
                                       {"doc_id": "d3", "answer": "Tessel"}]}}
    by_scratch = call("orchestration.weighted_ensemble", per_doc, embedder=emb)
    assert [w["doc_ids"] for w in by_scratch["judgement"]["weights"]] == [["d2"], ["d3"]]
    aligned = call("orchestration.weighted_ensemble", {**per_doc, "scratch": {}}, embedder=emb)
    assert aligned["answer"] == "Tessel" and aligned["citations"] == ["d1", "d3"]
    with pytest.raises(OperatorInputError, match="drafts: 4 drafts for 3 documents"):
        call("orchestration.weighted_ensemble", {**per_doc, "scratch": {},
                                                 "drafts": ["a"] * 4}, embedder=emb)
    with pytest.raises(OperatorInputError, match="drafts: no answers to weigh"):
        call("orchestration.weighted_ensemble", {"question": Q, "documents": DOCS}, embedder=emb)
