"""A run as OpenTelemetry spans in the OpenInference conventions (what Phoenix reads natively).

    <flow>            CHAIN      the run: flow, version, question (input), answer (output)
      <node id>       CHAIN      one per node visit: operator, visit, memory keys read/written
        retrieve      RETRIEVER  one per search: query (input), documents' ids, scores, text
        llm           LLM        one per model call: model, prompt, completion, tokens, cache

Times come from the stored step times: a node span starts at its step's start and lasts its ms;
model calls follow one another inside it (each its own ms); searches, whose times are not
recorded, share the step's time before its first model call (`flowkit.timing = "estimated"`).
With the provider's `RunIds`, trace and span ids derive from the run id (a run sent twice is the
same trace), and a fork's root span links to its parent run's root span.

A run sent in parts (`RunRecord.part`: a debug run between pauses, an exported package's nodes)
builds its node spans under its root's id, which need not be built yet (an exported package's
root comes with its last part). A debug run that pauses live sends its root at its first pause
(status paused) and each later segment as a continuation span under it:

    <flow>                   CHAIN   start -> first pause: flowkit.status "paused"
      <node id> ...                  the first segment's node visits
      <flow> (continued)     CHAIN   one per later segment: resumed -> its pause or the run's end;
        <node id> ...                the run's attributes as of then (the last: status, answer,
                                     totals); an abort is one with no nodes, status cancelled

so a collector always has the root of what it was sent (a run may stay paused for days, or for
good). A stored run sent after the fact has one root over the whole run, its pauses as events.
A debug run's pauses and memory edits are events (`events`); a stored `user.edit` step (an edit
made at a pause) is the `memory edit` event of the node span after it, not a span of its own, and
a stored run's pauses (`RunRecord.pauses`, from the trace store's pause history, never steps) are
the `pause` events of the node visits they paused at, as they were live; one whose node never ran
(the run was aborted there, or is still paused) is an event of the root span.
"""
from __future__ import annotations

from openinference.semconv.trace import (
    ChoiceAttributes,
    DocumentAttributes,
    MessageAttributes,
    OpenInferenceMimeTypeValues,
    OpenInferenceSpanKindValues,
    PromptAttributes,
    SpanAttributes,
)
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode, Tracer

from ..registry import get as get_operator
from ..trace import USER_EDIT, LLMCall, Retrieval, StepEvent, diff
from .bounds import AttrValue, Limits, as_json, put_text
from .events import FORK, MemoryEdit, PauseMark
from .ids import RunIds, root_context, root_link
from .record import RunRecord

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
_OK_STATUSES = ("ok", "budget_exceeded", "paused")
#: the name of a continuation span is the flow's name and this
CONTINUED = "(continued)"


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def emit_run(tracer: Tracer, record: RunRecord, limits: Limits | None = None,
             ids: RunIds | None = None) -> int:
    """Build the spans of `record` on `tracer` (ended, with the stored times); with `ids` (the
    tracer's provider's generator) the ids derive from the run id. Returns how many spans."""
    if ids is None:
        return _emit(tracer, record, limits or Limits())
    with ids.for_run(record.run.run_id, record.part, record.root):
        return _emit(tracer, record, limits or Limits())


def _emit(tracer: Tracer, record: RunRecord, lim: Limits) -> int:
    run = record.run
    if not record.root:
        parent = trace.set_span_in_context(trace.NonRecordingSpan(root_context(run.run_id)))
        if record.continuation:
            return _emit_continuation(tracer, parent, record, lim)
        return _emit_steps(tracer, parent, record, lim, None)
    links = []
    if run.parent_run_id:      # a fork: linked to the run it was forked from
        links.append(root_link(run.parent_run_id, {
            "flowkit.link": "forked from",
            "flowkit.parent_step": run.parent_step if run.parent_step is not None else -1}))
    root = tracer.start_span(run.flow_name or "flowkit run", start_time=_ns(run.started_at),
                             attributes=_run_attributes(record, lim), links=links)
    count = 1 + _emit_steps(tracer, trace.set_span_in_context(root), record, lim, root)
    if run.status not in _OK_STATUSES:
        root.set_status(Status(StatusCode.ERROR, (run.error or run.status)[:200]))
    root.end(end_time=_ns(run.ended_at))
    return count


def _emit_continuation(tracer: Tracer, parent: trace.Context, record: RunRecord,
                       lim: Limits) -> int:
    """A continuation (`RunRecord.continuation`): a span under the run's root, `<flow>
    (continued)`, over this part's time with the run's attributes as of its end (its status, the
    answer and totals once the run ended), and this part's node spans under it."""
    run = record.run
    attrs = _run_attributes(record, lim)
    attrs["flowkit.part"] = record.part
    span = tracer.start_span(f"{run.flow_name or 'flowkit run'} {CONTINUED}", context=parent,
                             start_time=_ns(run.started_at), attributes=attrs)
    count = 1 + _emit_steps(tracer, trace.set_span_in_context(span), record, lim, span)
    if run.status not in _OK_STATUSES:
        span.set_status(Status(StatusCode.ERROR, (run.error or run.status)[:200]))
    span.end(end_time=_ns(run.ended_at))
    return count


def _run_attributes(r: RunRecord, lim: Limits) -> dict[str, AttrValue]:
    run = r.run
    attrs: dict[str, AttrValue] = {
        KIND: OpenInferenceSpanKindValues.CHAIN.value,
        SpanAttributes.INPUT_MIME_TYPE: OpenInferenceMimeTypeValues.TEXT.value,
        SpanAttributes.OUTPUT_MIME_TYPE: OpenInferenceMimeTypeValues.TEXT.value,
        "flowkit.run_id": run.run_id, "flowkit.flow": run.flow_name, "flowkit.status": run.status,
        "flowkit.kb": run.kb, "flowkit.model_id": run.model_id, "flowkit.model_hash": run.model_hash,
        "flowkit.steps": r.total_steps if r.total_steps is not None else len(r.steps),
        "flowkit.llm_calls": run.cost.calls,
        "flowkit.tokens": run.cost.tokens, "flowkit.cached_calls": run.cost.cached,
        "flowkit.citations": [str(c) for c in run.citations],
    }
    put_text(attrs, SpanAttributes.INPUT_VALUE, run.question, lim.text)
    put_text(attrs, SpanAttributes.OUTPUT_VALUE, run.answer, lim.text)
    if run.flow_version is not None:
        attrs["flowkit.flow_version"] = run.flow_version
    if run.error:
        put_text(attrs, "flowkit.error", run.error, lim.text)
    if run.halt_reason:
        attrs["flowkit.halt_reason"] = run.halt_reason
    if run.parent_run_id:
        attrs["flowkit.parent_run_id"] = run.parent_run_id
        attrs["flowkit.parent_step"] = run.parent_step if run.parent_step is not None else -1
    if run.eval_id:
        attrs["flowkit.eval_id"] = run.eval_id
        attrs[SpanAttributes.SESSION_ID] = run.eval_id
    return attrs


def _emit_steps(tracer: Tracer, parent: trace.Context, record: RunRecord, lim: Limits,
                root: Span | None) -> int:
    """The node spans of `record` under `parent`, with its pauses and edits as events: each on
    the span of its node visit (an edit without a node: the next node span); a fork's edits,
    and any whose visit has no span here, go on `root`, else on the first node span."""
    pauses = list(record.pauses)
    edits = list(record.edits)
    first: Span | None = None
    count = 0
    for step in record.steps:
        if step.operator == USER_EDIT:        # a stored edit at a pause: an event of the next node
            edits.append(_stored_edit(step))
            continue
        span = _emit_step(tracer, parent, record, step, lim, pauses, edits)
        first = first or span
        count += 1 + _emit_children(tracer, span, record, step, lim)
    holder = root or first
    if holder is not None:
        for mark in pauses:
            mark.add_to(holder)
        for edit in edits:
            edit.add_to(holder, lim)
    return count


def _stored_edit(step: StepEvent) -> MemoryEdit:
    changes = {k: c["after"] for k, c in diff(step.memory_before, step.memory_after).items()}
    return MemoryEdit(changes=changes, at=step.started_at, node=None)


def _emit_step(tracer: Tracer, parent: trace.Context, record: RunRecord, step: StepEvent,
               lim: Limits, pauses: list[PauseMark], edits: list[MemoryEdit]) -> Span:
    """The span of one node visit (not yet ended: its children follow), carrying the pauses
    at this visit and the edits made before it (both taken out of the lists)."""
    begin = _ns(step.started_at or record.run.started_at)
    end = begin + _ns(step.ms / 1000.0)
    span = tracer.start_span(step.node_id, context=parent, start_time=begin,
                             attributes=_step_attributes(step, lim))
    for mark in [p for p in pauses if (p.node, p.visit) == (step.node_id, step.visit)]:
        mark.add_to(span)
        pauses.remove(mark)
    here = (step.node_id, step.visit)
    for edit in [e for e in edits if e.source != FORK and (e.node is None
                                                            or (e.node, e.visit) == here)]:
        edit.add_to(span, lim)
        edits.remove(edit)
    if step.error:
        span.set_status(Status(StatusCode.ERROR, step.error[:200]))
        span.add_event("exception", {"exception.type": "NodeError",
                                     "exception.message": step.error[: lim.text]},
                       timestamp=end)
    return span


def _emit_children(tracer: Tracer, span: Span, record: RunRecord, step: StepEvent,
                   lim: Limits) -> int:
    """The RETRIEVER and LLM spans of one node visit; ends the node's span."""
    begin = _ns(step.started_at or record.run.started_at)
    end = begin + _ns(step.ms / 1000.0)
    ctx = trace.set_span_in_context(span)
    search_until = max(begin, end - sum(_call_ns(c) for c in step.llm_calls))
    count = 0
    if step.retrievals:
        share = (search_until - begin) // len(step.retrievals)
        for i, r in enumerate(step.retrievals):
            count += _emit_retrieval(tracer, ctx, r, begin + i * share, begin + (i + 1) * share, lim)
    at = search_until
    for call in step.llm_calls:
        took = _call_ns(call)
        _emit_llm(tracer, ctx, record, call, at, at + took, lim)
        at += took
        count += 1
    span.end(end_time=max(end, at))
    return count


def _step_attributes(step: StepEvent, lim: Limits) -> dict[str, AttrValue]:
    changed = diff(step.memory_before, step.memory_after)
    op = get_operator(step.operator)
    reads = [k for k in (op.reads + op.optional_reads if op else ()) if k in step.memory_before]
    attrs: dict[str, AttrValue] = {
        KIND: OpenInferenceSpanKindValues.CHAIN.value,
        SpanAttributes.GRAPH_NODE_ID: step.node_id,
        SpanAttributes.GRAPH_NODE_NAME: step.operator,
        SpanAttributes.INPUT_MIME_TYPE: OpenInferenceMimeTypeValues.JSON.value,
        SpanAttributes.OUTPUT_MIME_TYPE: OpenInferenceMimeTypeValues.JSON.value,
        "flowkit.node_id": step.node_id, "flowkit.operator": step.operator,
        "flowkit.visit": step.visit, "flowkit.step_index": step.index,
        "flowkit.memory.read": reads, "flowkit.memory.written": sorted(changed),
        "flowkit.status": "error" if step.error else "ok",
        "flowkit.tokens": step.tokens, "flowkit.ms": step.ms,
    }
    put_text(attrs, SpanAttributes.INPUT_VALUE,
             as_json({k: step.memory_before.get(k) for k in reads}), lim.memory)
    put_text(attrs, SpanAttributes.OUTPUT_VALUE,
             as_json({k: c["after"] for k, c in changed.items()}), lim.memory)
    if step.branch:
        attrs["flowkit.branch"] = step.branch
    if step.error:
        put_text(attrs, "flowkit.error", step.error, lim.text)
    return attrs


def _call_ns(call: LLMCall) -> int:
    """What the call took here: its wall time (a cache hit's lookup), else its ms."""
    return _ns((call.wall_ms if call.wall_ms is not None else call.ms) / 1000.0)


def _emit_llm(tracer: Tracer, parent: trace.Context, record: RunRecord, call: LLMCall,
              begin: int, end: int, lim: Limits) -> None:
    attrs: dict[str, AttrValue] = {
        KIND: OpenInferenceSpanKindValues.LLM.value,
        SpanAttributes.LLM_MODEL_NAME: record.run.model_id or "unknown",
        SpanAttributes.LLM_TOKEN_COUNT_PROMPT: call.prompt_tokens,
        SpanAttributes.LLM_TOKEN_COUNT_COMPLETION: call.completion_tokens,
        SpanAttributes.LLM_TOKEN_COUNT_TOTAL: call.prompt_tokens + call.completion_tokens,
        SpanAttributes.LLM_FINISH_REASON: call.finish_reason,
        f"{SpanAttributes.LLM_INPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_ROLE}": "user",
        f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_ROLE}": "assistant",
        SpanAttributes.INPUT_MIME_TYPE: OpenInferenceMimeTypeValues.TEXT.value,
        SpanAttributes.OUTPUT_MIME_TYPE: OpenInferenceMimeTypeValues.TEXT.value,
        "flowkit.cache.hit": call.cached_from is not None, "flowkit.ms": call.ms,
    }
    for key in (SpanAttributes.INPUT_VALUE,
                f"{SpanAttributes.LLM_PROMPTS}.0.{PromptAttributes.PROMPT_TEXT}",
                f"{SpanAttributes.LLM_INPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_CONTENT}"):
        put_text(attrs, key, call.prompt, lim.text)
    for key in (SpanAttributes.OUTPUT_VALUE,
                f"{SpanAttributes.LLM_CHOICES}.0.{ChoiceAttributes.COMPLETION_TEXT}",
                f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_CONTENT}"):
        put_text(attrs, key, call.completion, lim.text)
    if call.cached_from:
        for k in ("run_id", "node_id", "visit"):
            if call.cached_from.get(k) is not None:
                attrs[f"flowkit.cache.from_{k}"] = call.cached_from[k]
    span: Span = tracer.start_span("llm", context=parent, start_time=begin, attributes=attrs)
    span.end(end_time=end)


def _emit_retrieval(tracer: Tracer, parent: trace.Context, r: Retrieval, begin: int, end: int,
                    lim: Limits) -> int:
    attrs: dict[str, AttrValue] = {
        KIND: OpenInferenceSpanKindValues.RETRIEVER.value,
        SpanAttributes.INPUT_MIME_TYPE: OpenInferenceMimeTypeValues.TEXT.value,
        "flowkit.retrieval.method": r.method, "flowkit.retrieval.documents": len(r.docs),
        "flowkit.timing": "estimated",
    }
    put_text(attrs, SpanAttributes.INPUT_VALUE, r.query, lim.text)
    for i, doc in enumerate(r.docs[: lim.docs]):
        prefix = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{i}."
        attrs[prefix + DocumentAttributes.DOCUMENT_ID] = str(doc.get("id"))
        score = doc.get("score")
        if isinstance(score, int | float):
            attrs[prefix + DocumentAttributes.DOCUMENT_SCORE] = float(score)
        put_text(attrs, prefix + DocumentAttributes.DOCUMENT_CONTENT, str(doc.get("text") or ""),
                 lim.doc_text)
        if doc.get("title"):
            attrs[prefix + DocumentAttributes.DOCUMENT_METADATA] = as_json({"title": doc["title"]})
    span = tracer.start_span(r.method or "retrieve", context=parent, start_time=begin,
                             attributes=attrs)
    span.end(end_time=end)
    return 1
