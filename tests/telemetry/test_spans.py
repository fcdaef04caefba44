"""A run as OpenInference spans (InMemorySpanExporter): the tree for a flow with a branch and a
loop, the attributes of each kind of span, stored step times, truncation with the full length."""
from __future__ import annotations

from dataclasses import replace

from openinference.semconv.trace import DocumentAttributes, SpanAttributes
from telkit import Q, children, self_rag_run

from flowkit.telemetry.bounds import Limits, full_length_key
from flowkit.telemetry.export import build_spans
from flowkit.telemetry.record import RunRecord
from flowkit.trace import LLMCall

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
DOCS = SpanAttributes.RETRIEVAL_DOCUMENTS


def _spans(record: RunRecord, limits: Limits | None = None) -> tuple[object, list]:
    spans = build_spans([record], limits)
    roots = [s for s in spans if s.parent is None]
    assert len(roots) == 1
    return roots[0], spans


def test_tree_follows_the_steps_of_a_loop_with_a_branch():
    result, sink, model = self_rag_run()
    seq = sink.sequence()
    assert ("search", 2) in seq and ("decide", 1) in seq     # the loop ran twice, the router once
    root, spans = _spans(RunRecord.from_live(sink.run, sink.steps, sink.result))
    assert root.attributes[KIND] == "CHAIN" and root.name == "self_rag"
    nodes = children(spans, root)
    assert [(s.name, s.attributes["flowkit.visit"]) for s in nodes] == seq
    assert all(s.attributes[KIND] == "CHAIN" for s in nodes)
    for span, step in zip(nodes, sink.steps, strict=True):
        kids = children(spans, span)
        llms = [k for k in kids if k.attributes[KIND] == "LLM"]
        rets = [k for k in kids if k.attributes[KIND] == "RETRIEVER"]
        assert len(llms) == len(step.llm_calls) and len(rets) == len(step.retrievals)
        assert len(kids) == len(llms) + len(rets)
        assert [k.attributes[SpanAttributes.INPUT_VALUE] for k in llms] == \
            [c.prompt for c in step.llm_calls]
        for k, r in zip(rets, step.retrievals, strict=True):
            assert [k.attributes[f"{DOCS}.{i}.{DocumentAttributes.DOCUMENT_ID}"]
                    for i in range(len(r.docs))] == [d["id"] for d in r.docs]
        # stored step times: the node span starts when the step started and lasts its ms
        assert span.start_time == round(step.started_at * 1e9)
        assert abs((span.end_time - span.start_time) / 1e6 - step.ms) < 1.0
        assert all(span.start_time <= k.start_time <= k.end_time <= span.end_time for k in kids)
    assert len(spans) == 1 + len(seq) + sum(len(s.llm_calls) + len(s.retrievals) for s in sink.steps)
    # every prompt the model saw is an LLM span's prompt, in order
    llm_prompts = [s.attributes[SpanAttributes.INPUT_VALUE] for n in nodes for s in children(spans, n)
                   if s.attributes[KIND] == "LLM"]
    assert llm_prompts == model.prompts


def test_attributes_of_run_node_llm_and_retriever_spans():
    result, sink, _ = self_rag_run()
    record = RunRecord.from_live(sink.run, sink.steps, sink.result, eval_id="ev1")
    record.run = replace(record.run, flow_version=3)
    root, spans = _spans(record)
    a = root.attributes
    assert a[SpanAttributes.INPUT_VALUE] == Q and a[SpanAttributes.OUTPUT_VALUE] == result.answer
    assert (a["flowkit.flow"], a["flowkit.flow_version"], a["flowkit.run_id"]) == \
        ("self_rag", 3, result.run_id)
    assert a["flowkit.eval_id"] == "ev1" and a[SpanAttributes.SESSION_ID] == "ev1"
    assert a["flowkit.tokens"] == result.cost.tokens and a["flowkit.status"] == "ok"
    search = next(s for s in children(spans, root) if s.name == "search")
    assert search.attributes["flowkit.operator"] == "retrieval.hybrid"
    assert "question" in search.attributes["flowkit.memory.read"]
    assert "documents" in search.attributes["flowkit.memory.written"]
    llm = next(s for s in spans if s.attributes[KIND] == "LLM")
    call = sink.steps[0].llm_calls[0]
    assert llm.attributes[SpanAttributes.LLM_MODEL_NAME] == "fake-llm"
    assert llm.attributes[SpanAttributes.LLM_TOKEN_COUNT_PROMPT] == call.prompt_tokens
    assert llm.attributes[SpanAttributes.LLM_TOKEN_COUNT_COMPLETION] == call.completion_tokens
    assert llm.attributes[SpanAttributes.OUTPUT_VALUE] == call.completion
    assert llm.attributes["flowkit.cache.hit"] is False
    ret = next(s for s in children(spans, search) if s.attributes[KIND] == "RETRIEVER")
    doc = sink.steps[1].retrievals[0].docs[0]
    assert ret.attributes[f"{DOCS}.0.{DocumentAttributes.DOCUMENT_SCORE}"] == doc["score"]
    assert ret.attributes[f"{DOCS}.0.{DocumentAttributes.DOCUMENT_CONTENT}"] == doc["text"]


def test_a_cached_call_says_from_which_run_and_an_error_marks_its_node():
    _, sink, _ = self_rag_run()
    step = sink.steps[0]
    step.llm_calls[0] = LLMCall(prompt="p", completion="c", prompt_tokens=1, completion_tokens=1,
                                ms=900.0, wall_ms=2.0,
                                cached_from={"run_id": "r0ld", "node_id": "decide", "visit": 1})
    sink.steps[3].error = "NodeError: generate failed"
    root, spans = _spans(RunRecord.from_live(sink.run, sink.steps, sink.result))
    llm = next(s for s in spans if s.attributes.get(SpanAttributes.INPUT_VALUE) == "p")
    assert llm.attributes["flowkit.cache.hit"] is True
    assert llm.attributes["flowkit.cache.from_run_id"] == "r0ld"
    assert (llm.end_time - llm.start_time) == 2_000_000           # the time it took here
    bad = next(s for s in spans if s.attributes.get("flowkit.step_index") == 3)
    assert bad.status.status_code.name == "ERROR" and bad.attributes["flowkit.status"] == "error"
    assert bad.attributes["flowkit.error"] == "NodeError: generate failed"
    assert [e.name for e in bad.events] == ["exception"]


def test_long_text_is_truncated_with_its_full_length():
    _, sink, _ = self_rag_run()
    long_prompt = "x" * 10_000
    sink.steps[0].llm_calls[0].prompt = long_prompt
    sink.steps[1].retrievals[0].docs[0]["text"] = "y" * 900
    _, spans = _spans(RunRecord.from_live(sink.run, sink.steps, sink.result),
                      Limits(text=1000, doc_text=100))
    llm = next(s for s in spans if s.attributes.get(full_length_key(SpanAttributes.INPUT_VALUE)))
    assert len(llm.attributes[SpanAttributes.INPUT_VALUE]) == 1000
    assert llm.attributes[full_length_key(SpanAttributes.INPUT_VALUE)] == 10_000
    key = f"{DOCS}.0.{DocumentAttributes.DOCUMENT_CONTENT}"
    ret = next(s for s in spans if s.attributes.get(key, "").startswith("y"))
    assert len(ret.attributes[key]) == 100 and ret.attributes[full_length_key(key)] == 900
    # nothing in any span is longer than the largest limit
    assert max(len(v) for s in spans for v in s.attributes.values() if isinstance(v, str)) <= 2000


def test_a_run_is_the_same_trace_each_time_it_is_built_and_a_fork_links_to_its_parent():
    _, sink, _ = self_rag_run()
    record = RunRecord.from_live(sink.run, sink.steps, sink.result)
    first, second = build_spans([record]), build_spans([record])
    ids = [(s.context.trace_id, s.context.span_id) for s in first]
    assert ids == [(s.context.trace_id, s.context.span_id) for s in second]
    assert len(set(ids)) == len(ids) and len({t for t, _ in ids}) == 1
    root = next(s for s in first if s.parent is None)
    _, fork_sink, _ = self_rag_run()
    fork = RunRecord.from_live(fork_sink.run, fork_sink.steps, fork_sink.result)
    fork.run = replace(fork.run, parent_run_id=record.run.run_id, parent_step=3)
    fork_root = next(s for s in build_spans([fork]) if s.parent is None)
    assert fork_root.context.trace_id != root.context.trace_id
    assert fork_root.attributes["flowkit.parent_run_id"] == record.run.run_id
    [link] = fork_root.links
    assert (link.context.trace_id, link.context.span_id) == \
        (root.context.trace_id, root.context.span_id)
    assert link.attributes["flowkit.link"] == "forked from" and link.attributes["flowkit.parent_step"] == 3
