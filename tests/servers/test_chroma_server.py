"""The same knowledge base on a real Chroma server (`chroma run`, chromadb.HttpClient) as embedded:
ingest, dense and hybrid retrieval, a flow run, listing and deletion."""
from __future__ import annotations

import chromadb

from flowkit import compile_flow, run_flow
from flowkit.ingest import SAMPLE_DIR, ingest
from flowkit.run_request import RunHooks, RunRequest
from flowkit.runtime.resources import Resources, Settings
from flowkit.templates import load_template
from flowkit.testing import FakeLLM, HashEmbedder
from flowkit.trace import ListSink

QUESTION = "Who designed the Corren Lighthouse?"


def _resources(data_dir, **settings) -> Resources:
    res = Resources(data_dir, Settings(**settings))
    res.set_embedder(HashEmbedder())
    res.set_llm(FakeLLM(default="Mara Velt [1]"))
    return res


def test_a_kb_on_the_chroma_server_answers_like_the_embedded_one(tmp_path, chroma_endpoint) -> None:
    host, port = chroma_endpoint
    server = _resources(tmp_path / "server", chroma_host=host, chroma_port=port)
    local = _resources(tmp_path / "local")
    files = [SAMPLE_DIR / "articles.jsonl"]
    n_server = ingest(server, "srvkb", files)
    n_local = ingest(local, "srvkb", files)
    assert n_server == n_local > 10
    remote = chromadb.HttpClient(host=host, port=port)
    assert remote.get_collection("kb_srvkb").count() == n_server       # the vectors live there
    assert server.kb_names() == ["srvkb"] and server.kb("srvkb").count() == n_server

    got = [d["id"] for d in server.kb("srvkb").dense(QUESTION, 5)]
    want = [d["id"] for d in local.kb("srvkb").dense(QUESTION, 5)]
    assert got == want
    flow = compile_flow(load_template("naive_rag"))     # hybrid: BM25 + dense, fused
    a, b = ListSink(), ListSink()
    ra = run_flow(flow, server, RunRequest(QUESTION, kb="srvkb"), RunHooks(sink=a))
    rb = run_flow(flow, local, RunRequest(QUESTION, kb="srvkb"), RunHooks(sink=b))
    assert ra.status == rb.status == "ok" and ra.answer == rb.answer
    assert [d["id"] for d in a.steps[0].retrievals[-1].docs] == \
        [d["id"] for d in b.steps[0].retrievals[-1].docs]

    server.kb("srvkb").drop()
    assert server.kb_names() == []
    assert "kb_srvkb" not in [c.name for c in remote.list_collections()]
