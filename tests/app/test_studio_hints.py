"""Small studio helpers behind issue 13's hints: what a fork's remaining steps read, whether the
model cited anything, the Compare marks and all-zero charts, template titles, fork numbering."""
from __future__ import annotations

from flowkit import templates
from flowkit.eval.metrics import QuestionResult
from flowkit.spec import to_dict
from flowkit.trace import LLMCall, StepEvent
from service import flows as library
from studio.compare import compare_data
from studio.replay import replay
from studio.run import runview


def _ircot() -> dict:
    return to_dict(templates.load_template("ircot"))


def test_reads_ahead_names_the_readers_of_each_key() -> None:
    spec = _ircot()
    for n in spec["nodes"]:
        if n["id"] == "read":
            n["params"]["use_history"] = True
    readers = replay.reads_ahead(spec, "enough")       # the loop: every node can still run
    assert set(readers["question"]) >= {"reason", "read"}
    assert "read" in readers["history"]                  # read uses its history (use_history)
    assert "candidates" not in readers and "sub_questions" not in readers
    # with use_history off the answer node no longer reads history
    for n in spec["nodes"]:
        if n["id"] == "read":
            n["params"]["use_history"] = False
    assert "read" not in replay.reads_ahead(spec, "read").get("history", [])
    assert replay.reads_ahead(spec, "read") == {k: ["read"] for k in
                                                  replay.reads_ahead(spec, "read")}



def test_a_search_node_reads_only_what_its_params_use() -> None:
    """keep_previous, query_from and add_last_answer decide what a search reads, so the fork
    panel never names a search as a reader of passages it replaces."""
    from flowkit import registry
    cls = registry.get("retrieval.hybrid")
    plain = cls.Params.model_validate({})
    assert cls.active_reads(plain) == ("question",)
    both = cls.Params.model_validate({"query_from": "both", "add_last_answer": True,
                                      "keep_previous": 2})
    assert cls.active_reads(both) == ("question", "queries", "drafts", "documents")
    spec = {"nodes": [{"id": "s", "operator": "retrieval.bm25", "params": {}},
                      {"id": "k", "operator": "retrieval.bm25", "params": {"keep_previous": 2}},
                      {"id": "a", "operator": "generation.answer", "params": {}}],
            "edges": [{"source": "s", "target": "k"}, {"source": "k", "target": "a"}]}
    readers = replay.reads_ahead(spec, "s")
    assert readers["documents"] == ["k", "a"]          # not s: it replaces the passages
    assert "queries" not in readers
    bad = {**spec, "nodes": [{"id": "s", "operator": "retrieval.bm25", "params": {"top_k": -1}}]}
    assert "documents" in replay.reads_ahead(bad, "s")   # invalid params: every read assumed


def _step(completion: str, citations: list[str]) -> StepEvent:
    return StepEvent(run_id="r", index=1, node_id="generate", operator="generation.answer",
                     visit=1, memory_before={"citations": []},
                     memory_after={"citations": citations},
                     llm_calls=[LLMCall(prompt="p", completion=completion, prompt_tokens=1,
                                        completion_tokens=1, ms=1.0)])


def test_model_cited_tells_a_citation_from_a_word_overlap_guess() -> None:
    assert runview.model_cited([_step("Pell [1]", ["a"])]) is True
    assert runview.model_cited([_step("Pell", ["a", "b", "c"])]) is False
    assert runview.model_cited([]) is True


def test_compare_marks_exact_then_accuracy() -> None:
    base = dict(flow="f", question_id="q", question="?", answers=["Pell"], status="ok")
    assert compare_data.mark(QuestionResult(prediction="Pell", em=1.0, acc=1.0, **base)) == "✓"
    assert compare_data.mark(QuestionResult(prediction="It is Pell", em=0.0, acc=1.0,
                                            **base)) == "≈"
    assert compare_data.mark(QuestionResult(prediction="Tessel", **base)) == "✗"
    assert compare_data.mark(None) == ""


def test_template_titles_carry_the_description() -> None:
    title = library.template_title("naive_rag")
    assert title.startswith("naive_rag · Naive RAG")
    assert library.template_title(library.BLANK).startswith(library.BLANK)
    # issue 48, item 9: "Ma et al. 2023" is not the end of a sentence, and a long one is cut at
    # a word with a mark, not mid-word
    rrr = library.template_title("rewrite_retrieve_read")
    assert rrr.startswith("rewrite_retrieve_read · Rewrite-Retrieve-Read (Ma et al. 2023): the")
    assert rrr.endswith("…") and rrr[:-1].split()[-1].isalpha()


def test_fork_chart_numbering_continues_the_parent() -> None:
    steps = [_step("x", []) for _ in range(3)]
    for i, s in enumerate(steps):
        s.index = i
    tok, _ = replay.chart_data(steps, 0, offset=4)
    assert list(tok["step"]) == ["4 generate", "5 generate", "6 generate"]
