"""Indexing operators with fakes: sentence chunkers, metadata, small-to-big, hierarchical, graph."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from flowkit import ListSink, compile_flow, run_flow
from flowkit.context import RunContext
from flowkit.errors import FlowkitError, OperatorInputError, ResourceError
from flowkit.ingest import make_chunker
from flowkit.operators.indexing.graph import load_graph, parse_triples, pattern_triples
from flowkit.operators.indexing.hierarchical import load_summaries
from flowkit.registry import get
from flowkit.run_request import RunHooks, RunRequest
from flowkit.runtime.kb import Chunk
from flowkit.testing import FakeLLM, MemoryKB, fake_resources, flow, operator_instance
from flowkit.text import split_sentences

TEXT = ("Mara Velt was born on Tessel. She studied in Osterhavn. Dr. Velt designed the Corren "
        "Lighthouse. It was first lit in 1884. The light is automatic now.")
DOCS = [{"id": "velt", "title": "Mara Velt", "text": TEXT, "source": "bio.txt"},
        {"id": "tessel", "title": "Tessel", "text": "Tessel holds Lamp Night every November.",
         "source": "isles.txt"}]


def op(key: str, **params: Any) -> Any:
    return operator_instance(key, **params)


def ctx_for(res: Any, kb: str = "test") -> RunContext:
    return RunContext(res, kb, "node", 1)


class StubKB(MemoryKB):
    """A MemoryKB with a folder and add(), standing in for KnowledgeBase at ingest."""

    def __init__(self, name: str, docs: list[dict[str, Any]], folder: Path):
        super().__init__(name, docs)
        self.dir = folder

    def add(self, chunks: list[Chunk]) -> int:
        fresh = MemoryKB(self.name, [{"id": c.id, "text": c.text, **c.meta} for c in chunks])
        self.docs = [d for d in self.docs if d["id"] not in {c.id for c in chunks}] + fresh.docs
        return len(chunks)


def ingest_stub(key: str, llm: FakeLLM, folder: Path, **params: Any) -> tuple[Any, Any]:
    """Chunk DOCS with the operator, store them in a StubKB, run after_ingest; (resources, kb)."""
    chunker = op(key, **params)
    kb = StubKB("test", [], folder)
    kb.add(chunker.chunk(DOCS))
    res = fake_resources(llm, docs=[])
    res.kbs["test"] = kb
    chunker.after_ingest(kb, res, DOCS)
    return res, kb


def test_split_sentences_keeps_abbreviations():
    assert split_sentences(TEXT) == ["Mara Velt was born on Tessel.", "She studied in Osterhavn.",
                                     "Dr. Velt designed the Corren Lighthouse.",
                                     "It was first lit in 1884.", "The light is automatic now."]


def test_chunk_sliding_windows_and_ingest_chunks():
    sliding = op("indexing.chunk_sliding", window=3, stride=2)
    assert sliding.split(TEXT) == [
        "Mara Velt was born on Tessel. She studied in Osterhavn. Dr. Velt designed the Corren Lighthouse.",
        "Dr. Velt designed the Corren Lighthouse. It was first lit in 1884. The light is automatic now."]
    chunks = sliding.chunk(DOCS)
    assert [c.id for c in chunks] == ["velt#0", "velt#1", "tessel#0"]
    assert chunks[1].meta == {"title": "Mara Velt", "source": "bio.txt", "doc_id": "velt",
                              "position": 1, "chunks_in_doc": 2}


def test_chunk_params_that_make_no_sense_are_rejected():
    with pytest.raises(ValidationError, match="stride .* must not exceed window"):
        get("indexing.chunk_sliding").Params(window=2, stride=3)
    with pytest.raises(ValidationError):
        get("indexing.chunk_sentences").Params(max_words=5)
    with pytest.raises(ValidationError, match="child_words .* must be smaller than parent_words"):
        get("indexing.small_to_big").Params(parent_words=40, child_words=40)
    with pytest.raises(ValidationError, match="built in"):
        get("indexing.metadata").Params(fields={"doc_id": "x"})
    with pytest.raises(ValidationError, match="letters, digits"):
        get("indexing.metadata").Params(fields={"bad name": "x"})
    with pytest.raises(FlowkitError, match="chunker indexing.chunk_sliding"):
        make_chunker("indexing.chunk_sliding", {"window": 1, "stride": 4})


def test_chunk_sentences_packs_whole_sentences_in_a_flow():
    spec = flow("s", [("ret", "retrieval.bm25", {"top_k": 1}),
                      ("chunk", "indexing.chunk_sentences", {"max_words": 12, "overlap_sentences": 1}),
                      ("gen", "generation.answer")],
                ["ret>chunk", "chunk>gen"])
    res = fake_resources(docs=[DOCS[0]])
    result = run_flow(compile_flow(spec), res,
                      RunRequest("Who designed the Corren Lighthouse?", kb="test"))
    assert result.status == "ok", result.error
    texts = [d["text"] for d in result.memory["documents"]]
    assert texts == ["Mara Velt was born on Tessel. She studied in Osterhavn.",
                     "She studied in Osterhavn. Dr. Velt designed the Corren Lighthouse.",
                     "Dr. Velt designed the Corren Lighthouse. It was first lit in 1884.",
                     "It was first lit in 1884. The light is automatic now."]
    assert all(len(t.split()) <= 12 and t.endswith(".") for t in texts)
    assert [d["meta"]["parent_id"] for d in result.memory["documents"]] == ["velt"] * 4


def test_metadata_attaches_fields_and_filters():
    meta_op = op("indexing.metadata", size=12, overlap=2, title_prefix=True,
                 fields={"shelf": "people", "year": 1990})
    chunks = meta_op.chunk(DOCS)
    assert chunks[0].text.startswith("Mara Velt was born")         # already starts with its title
    assert chunks[1].text.startswith("Mara Velt: Dr. Velt designed")
    assert chunks[0].meta == {"title": "Mara Velt", "source": "bio.txt", "doc_id": "velt",
                              "position": 0, "chunks_in_doc": 3, "word_count": 12,
                              "shelf": "people", "year": 1990}
    res = fake_resources(docs=[{"id": c.id, "text": c.text, **c.meta} for c in chunks] +
                         [{"id": "x#0", "text": "Mara Velt statue", "shelf": "art"}])
    spec = flow("m", [("ret", "retrieval.bm25", {"top_k": 5, "where": {"shelf": "people"}}),
                      ("meta", "indexing.metadata", {"size": 200, "overlap": 0,
                                                     "fields": {"checked": True}}),
                      ("gen", "generation.answer")], ["ret>meta", "meta>gen"])
    result = run_flow(compile_flow(spec), res, RunRequest("Mara Velt", kb="test"))
    assert result.status == "ok", result.error
    docs = result.memory["documents"]
    assert docs and all(d["meta"]["shelf"] == "people" and d["meta"]["checked"] is True for d in docs)
    assert all(d["meta"]["position"] == 0 and d["meta"]["word_count"] == len(d["text"].split())
               for d in docs)


def test_small_to_big_chunks_carry_parents_and_run_expands():
    s2b = op("indexing.small_to_big", parent_words=12, child_words=6, child_overlap=2)
    chunks = s2b.chunk(DOCS[:1])
    assert [c.meta["parent_id"] for c in chunks][:3] == ["velt#p0", "velt#p0", "velt#p1"]
    assert chunks[0].meta["parent_text"] == "Mara Velt was born on Tessel. She studied in Osterhavn."
    assert chunks[0].text == "Mara Velt was born on Tessel."
    assert all(c.meta["level"] == "small" and c.text in c.meta["parent_text"] for c in chunks)
    docs = [{"id": c.id, "text": c.text, "title": "Mara Velt", "score": s,
             "meta": c.meta} for c, s in zip(chunks, (0.2, 0.9, 0.5))]
    docs.append({"id": "other", "text": "plain", "score": 0.1, "meta": {}})
    out = s2b.run({"documents": docs}, ctx_for(fake_resources()))["documents"]
    assert [(d["id"], d["score"]) for d in out] == [("velt#p0", 0.9), ("velt#p1", 0.5),
                                                    ("other", 0.1)]
    assert out[0]["text"] == chunks[0].meta["parent_text"]
    assert out[0]["meta"]["small_ids"] == ["velt#0", "velt#1"]
    with pytest.raises(OperatorInputError, match="carries a parent passage"):
        s2b.run({"documents": [docs[-1]]}, ctx_for(fake_resources()))
    with pytest.raises(OperatorInputError, match="documents"):
        s2b.run({"documents": []}, ctx_for(fake_resources()))


def test_hierarchical_summaries_then_chunks(tmp_path):
    llm = FakeLLM([(r"Title: Mara Velt", "An engineer who designed the Corren Lighthouse."),
                   (r"Title: Tessel", "")])
    res, kb = ingest_stub("indexing.hierarchical", llm, tmp_path, size=10, overlap=0)
    assert len(llm.prompts) == 2 and "Summarise" in llm.prompts[0]
    summaries = load_summaries(tmp_path)
    assert summaries["velt"]["summary"] == "An engineer who designed the Corren Lighthouse."
    assert summaries["tessel"]["summary"] == "Tessel holds Lamp Night every November."  # fallback
    levels = {d["id"]: d["meta"]["level"] for d in kb.docs}
    assert levels["velt#summary"] == "summary" and levels["velt#0"] == "chunk"
    spec = flow("h", [("hier", "indexing.hierarchical", {"top_docs": 1, "top_k": 2}),
                      ("gen", "generation.answer")], ["hier>gen"])
    sink = ListSink()
    result = run_flow(compile_flow(spec), res,
                      RunRequest("Who designed the Corren Lighthouse?", kb="test"),
                      RunHooks(sink=sink))
    assert result.status == "ok", result.error
    docs = result.memory["documents"]
    assert len(docs) == 2 and {d["meta"]["doc_id"] for d in docs} == {"velt"}
    assert all(d["meta"]["level"] == "chunk" for d in docs)
    assert [r.method for r in sink.steps[0].retrievals] == ["dense:summaries", "dense:doc_id=velt"]
    with pytest.raises(ResourceError, match="no document summaries"):
        op("indexing.hierarchical").run({"question": "q"}, ctx_for(fake_resources()))


def test_parse_triples_is_robust():
    reply = ("1. Mara Velt | designed | the Corren Lighthouse.\nnonsense line\n"
             "Subject: Mara Velt\nRelation: born on\nObject: Tessel\n(Tessel, hosts, Lamp Night)\n"
             "Velt -> likes -> Paris\n- Mara Velt | designed | Mara Velt\n"
             "Subject: Corren Lighthouse | born on | Tessel")
    source = "Mara Velt designed the Corren Lighthouse. Born on Tessel. Tessel hosts Lamp Night."
    assert parse_triples(reply, source) == [("Mara Velt", "designed", "Corren Lighthouse"),
                                            ("Mara Velt", "born on", "Tessel"),
                                            ("Tessel", "hosts", "Lamp Night"),
                                            ("Corren Lighthouse", "born on", "Tessel")]
    assert ("Mara Velt", "was born on", "Tessel") in pattern_triples(TEXT, "Mara Velt")


def test_knowledge_graph_ingest_and_neighbourhood(tmp_path):
    llm = FakeLLM([(r"Text: Mara", "Mara Velt | designed | Corren Lighthouse\nMara Velt | met | Zeus"),
                   (r"Text: Tessel", "garbage")])
    res, kb = ingest_stub("indexing.knowledge_graph", llm, tmp_path, size=100, extraction="both")
    graph = load_graph(tmp_path)
    assert graph is not None and json.loads((tmp_path / "graph.json").read_text())["links"]
    edges = {(u, v, d["relation"], d["via"], d["chunk_id"]) for u, v, d in graph.edges(data=True)}
    assert ("mara velt", "corren lighthouse", "designed", "llm", "velt#0") in edges
    assert "zeus" not in graph                               # not in the chunk: dropped
    assert ("tessel", "lamp night", "holds", "pattern", "tessel#0") in edges
    spec = flow("g", [("kg", "indexing.knowledge_graph", {"top_k": 2}), ("gen", "generation.answer")],
                ["kg>gen"])
    result = run_flow(compile_flow(spec), res, RunRequest("What did Mara Velt design?", kb="test"))
    assert result.status == "ok", result.error
    assert [d["id"] for d in result.memory["documents"]] == ["velt#0"]
    assert result.memory["evidence"][0] == "Mara Velt | designed | Corren Lighthouse"
    two = op("indexing.knowledge_graph", hops=2, top_k=3).run(
        {"question": "Where is Lamp Night?"}, ctx_for(res))
    assert [d["id"] for d in two["documents"]][0] == "tessel#0"
    fallback = op("indexing.knowledge_graph").run({"question": "zzz qqq?"}, ctx_for(res))
    assert fallback["documents"] == [] and fallback["evidence"] == []
    with pytest.raises(ResourceError, match="has no graph"):
        op("indexing.knowledge_graph").run({"question": "q"}, ctx_for(fake_resources()))


@pytest.mark.real
def test_indexing_operators_on_the_real_stack(real_resources, tmp_path):
    """Every indexing operator in a small flow: the chunkers on kb "sample"; metadata filters,
    small-to-big, hierarchical and graph on KBs ingested here (real model, embedder, Chroma)."""
    from flowkit.ingest import SAMPLE_DIR, ingest
    from flowkit.runtime.resources import Resources

    sink = ListSink()
    spec = flow("chunkers", [("ret", "retrieval.hybrid", {"top_k": 2}),
                             ("sent", "indexing.chunk_sentences", {"max_words": 40}),
                             ("meta", "indexing.metadata", {"size": 60, "overlap": 10,
                                                            "fields": {"shelf": "sample"}}),
                             ("slide", "indexing.chunk_sliding", {"window": 2, "stride": 1}),
                             ("gen", "generation.answer", {"max_tokens": 8})],
                ["ret>sent", "sent>meta", "meta>slide", "slide>gen"])
    result = run_flow(compile_flow(spec), real_resources,
                      RunRequest("Who designed the Corren Lighthouse?", kb="sample"),
                      RunHooks(sink=sink))
    assert result.status == "ok", result.error
    after = {s.node_id: s.memory_after["documents"] for s in sink.steps}
    sent = after["sent"]
    assert len(sent) > 2 and all(len(d["text"].split()) <= 40 for d in sent)
    assert sum(d["text"].endswith(".") for d in sent) >= len(sent) - 2   # whole sentences
    assert [d["meta"]["shelf"] for d in after["meta"]] == ["sample"] * len(sent)
    assert after["meta"][0]["meta"]["doc_id"] == after["ret"][0]["meta"]["doc_id"]
    assert len(after["slide"]) >= len(sent) and after["slide"][0]["meta"]["shelf"] == "sample"

    res = Resources(tmp_path / "data", real_resources.settings)
    res.set_llm(real_resources.llm)
    res.set_embedder(real_resources.embedder)
    lines = (SAMPLE_DIR / "articles.jsonl").read_text().splitlines()
    picked = [ln for ln in lines if json.loads(ln)["id"] in ("art-04", "art-09", "art-10")]
    others = [ln for ln in lines if json.loads(ln)["id"] in ("art-11", "art-16", "art-26")]
    (tmp_path / "a.jsonl").write_text("\n".join(picked))
    (tmp_path / "b.jsonl").write_text("\n".join(others))
    both = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]

    ingest(res, "meta", [both[0]], "indexing.metadata", {"fields": {"shelf": "people"}})
    ingest(res, "meta", [both[1]], "indexing.metadata", {"fields": {"shelf": "things"}})
    for method in ("retrieval.dense", "retrieval.bm25"):
        spec = flow("w", [("ret", method, {"top_k": 5, "where": {"shelf": "things"}}), ("gen", "generation.answer", {"max_tokens": 8})],
                    ["ret>gen"])
        got = run_flow(compile_flow(spec), res,
                       RunRequest("Corren Lighthouse Mara Velt", kb="meta"))
        assert got.status == "ok", got.error
        docs = got.memory["documents"]
        assert docs and {d["meta"]["shelf"] for d in docs} == {"things"}
        assert {d["meta"]["doc_id"] for d in docs} <= {"art-11", "art-16", "art-26"}

    ingest(res, "s2b", both, "indexing.small_to_big",
           {"parent_words": 60, "child_words": 20, "child_overlap": 5})
    spec = flow("s2b", [("ret", "retrieval.dense", {"top_k": 4}),
                        ("big", "indexing.small_to_big", {"top_k": 3}), ("gen", "generation.answer", {"max_tokens": 8})],
                ["ret>big", "big>gen"])
    got = run_flow(compile_flow(spec), res,
                   RunRequest("When was the Corren Lighthouse first lit?", kb="s2b"))
    assert got.status == "ok", got.error
    parents = got.memory["documents"]
    # the operator's guarantee, not one CPU's ranking: each parent is the parent of retrieved
    # children, ranked by its best child (dense ranking here is the embedder's, same machine)
    best_child = res.kb("s2b").dense("When was the Corren Lighthouse first lit?", 4)[0]
    assert parents[0]["id"] == best_child["meta"]["parent_id"]
    assert parents[0]["text"] == best_child["meta"]["parent_text"]
    assert len({d["id"] for d in parents}) == len(parents) <= 3
    assert all("#p" in d["id"] and len(d["text"].split()) > 20 for d in parents)

    ingest(res, "hier", both, "indexing.hierarchical", {"size": 50, "overlap": 10,
                                                        "summary_tokens": 32})
    assert len(load_summaries(res.kb("hier").dir)) == 6
    spec = flow("h", [("hier", "indexing.hierarchical", {"top_docs": 1, "top_k": 2}),
                      ("gen", "generation.answer", {"max_tokens": 12})], ["hier>gen"])
    question = "Who was the first keeper of the Corren Lighthouse?"
    got = run_flow(compile_flow(spec), res, RunRequest(question, kb="hier"))
    assert got.status == "ok", got.error
    # which article ranks first depends on the summaries the model wrote on this CPU; what the
    # operator guarantees: the leaves come from the top summary's document, its best chunks
    kb = res.kb("hier")
    top = kb.dense(question, 1, {"level": "summary"})
    assert top and top[0]["meta"]["doc_id"] in {"art-04", "art-09", "art-10", "art-11", "art-16",
                                                "art-26"}
    leaves = got.memory["documents"]
    assert leaves and len(leaves) <= 2
    assert {d["meta"]["doc_id"] for d in leaves} == {top[0]["meta"]["doc_id"]}
    assert all(d["meta"]["level"] == "chunk" for d in leaves)
    best = [h["id"] for h in kb.dense(question, 3, {"doc_id": top[0]["meta"]["doc_id"]})
            if h["meta"]["level"] != "summary"][:2]
    assert [d["id"] for d in leaves] == best

    ingest(res, "kg", both, "indexing.knowledge_graph", {"triple_tokens": 40})
    graph = load_graph(res.kb("kg").dir)
    assert graph is not None and graph.number_of_edges() > 10
    spec = flow("g", [("kg", "indexing.knowledge_graph", {"top_k": 2}),
                      ("gen", "generation.answer", {"max_tokens": 12})], ["kg>gen"])
    got = run_flow(compile_flow(spec), res,
                   RunRequest("Who designed the Corren Lighthouse?", kb="kg"))
    assert got.status == "ok", got.error
    # the triples are the model's words on this CPU; the guarantee: the passages are the chunks
    # the graph's edges came from, and the evidence is triples
    sources = {str(d.get("chunk_id")) for _, _, d in graph.edges(data=True)}
    docs = got.memory["documents"]
    assert docs and len(docs) <= 2
    if got.memory["evidence"]:          # seeds found: graph passages, not the dense fallback
        assert {d["id"] for d in docs} <= sources
        assert all(t.count(" | ") == 2 for t in got.memory["evidence"])
    assert got.answer
