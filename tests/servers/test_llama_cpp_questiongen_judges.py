"""Question generation and the graders with `backend: openai` on llama.cpp's `llama-server`
(`llama_cpp_server_url`, SmolLM2, 2 slots): small on purpose (two questions, one item), each
checked against the sample knowledge base, and each served again from the completion cache."""
from __future__ import annotations

from typing import Any

import pytest

from flowkit.eval.graders import Item
from flowkit.eval.grading import GradingSession
from flowkit.eval.metrics import doc_id_of
from flowkit.eval.questiongen.generate import Request, generate
from flowkit.runtime.completion_cache import MemoryCompletionCache
from flowkit.runtime.llm import LLMSettings
from flowkit.runtime.resources import Resources, Settings

pytestmark = pytest.mark.real


def _resources(url: str, real_resources: Any) -> Resources:
    """The session's sample KB and embedder, the model on the server."""
    res = Resources(real_resources.data_dir, Settings(llm=LLMSettings(
        backend="openai", base_url=url, model_name="default", n_ctx=4096)))
    res.set_embedder(real_resources.embedder)
    return res


def _chunks(res: Resources) -> dict[str, dict[str, Any]]:
    kb = res.kb("sample")
    return {c["id"]: c for c in kb.chunks(limit=int(kb.count()), offset=0)}


def test_generated_questions_cite_chunks_of_the_kb(llama_cpp_server_url: str,
                                                   real_resources: Any) -> None:
    res = _resources(llama_cpp_server_url, real_resources)
    cache = MemoryCompletionCache()
    request = Request(n=2, kinds=("single",), max_tries=8)
    got = generate(res, "sample", request, cache=cache)
    assert 1 <= len(got.questions) == got.progress.kept <= 2, got.progress.to_dict()
    assert got.progress.cost.computed > 0 and got.progress.cost.tokens > 0     # counted, not 0
    chunks = _chunks(res)
    for q in got.questions:
        assert q["question"].strip().endswith("?") and q["answers"], q
        assert q["supporting_chunk_ids"], q
        for cid in q["supporting_chunk_ids"]:
            assert cid in chunks, (cid, q)                       # a chunk that exists in the KB
            assert doc_id_of(cid) in q["supporting_doc_ids"]
        text = " ".join(chunks[cid]["text"] for cid in q["supporting_chunk_ids"])
        assert any(a in text for a in q["answers"]), q           # its gold answer is in them
    again = generate(res, "sample", request, cache=cache)
    assert again.questions == got.questions and again.progress.cost.computed == 0


def test_graders_give_parsed_verdicts(llama_cpp_server_url: str, real_resources: Any) -> None:
    """A wrong answer, graded by the judges that need no reference: each reply is read as a
    verdict (not counted `unparsed`), and grading again is served from the cache."""
    res = _resources(llama_cpp_server_url, real_resources)
    passage = _chunks(res)["art-01#0"]
    item = Item(question="What is a chain of six inhabited islands in the Gannet Sea?",
                answer="Paris", passages=({"id": passage["id"], "title": passage["title"],
                                           "text": passage["text"]},))
    session = GradingSession(res, cache=MemoryCompletionCache())
    graders = ("groundedness", "answer_relevance", "context_relevance")
    graded = {g: session.grade(g, item) for g in graders}
    for name, g in graded.items():
        assert g.verdict.parsed and g.verdict.score is not None, (name, g.verdict)
        assert g.cost.computed >= 1 and g.cost.tokens > 0, (name, g.cost)
    assert graded["context_relevance"].verdict.detail and \
        len(graded["context_relevance"].verdict.detail) == 1
    for name in graders:
        again = session.grade(name, item)
        assert again.verdict == graded[name].verdict and again.cost.computed == 0, name
