"""Debug runs exported live (through the service, to an in-memory exporter): one trace per run
however often it paused, each pause a `pause` event on the node span it paused at, each memory
edit (at a pause, in a fork, stored) a `memory edit` event with the keys and bounded values."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "debug"))
from debugkit import DOCS, SHAPES, Q, llm

from flowkit.run_request import RunRequest
from flowkit.runtime.resources import Settings
from flowkit.telemetry.bounds import full_length_key
from flowkit.telemetry.export import LiveExport, build_spans
from flowkit.telemetry.ids import trace_id_of
from flowkit.telemetry.record import RunRecord
from flowkit.telemetry.settings import TelemetrySettings, live_target
from flowkit.testing import MemoryKB
from service.debug import Debugger
from service.workspace import Workspace

LONG_QUESTION = "Where was Mara Velt born? " + "and more " * 400      # past the memory limit


@pytest.fixture
def traced(tmp_path: Path) -> tuple[Workspace, InMemorySpanExporter]:
    """A workspace (scripted model, in-memory KB 'test') exporting live to memory."""
    tel = TelemetrySettings(enabled=True, otlp_endpoint="http://127.0.0.1:9")
    ws = Workspace(tmp_path, Settings(telemetry=tel))
    ws.resources.set_llm(llm())
    ws.resources._kbs["test"] = MemoryKB("test", DOCS)
    target = live_target(tel, {})
    assert target is not None
    memory = InMemorySpanExporter()
    ws.telemetry._live = LiveExport(target, exporter=memory, schedule_delay_ms=50)
    yield ws, memory
    ws.close()


def spans_of(ws: Workspace, memory: InMemorySpanExporter, run_id: str) -> list[Any]:
    live = ws.telemetry.live(ws.resources.settings.telemetry)
    assert live is not None and live.flush(10)
    return [s for s in memory.get_finished_spans() if s.context.trace_id == trace_id_of(run_id)]


def root_of(spans: list[Any]) -> Any:
    roots = [s for s in spans if s.parent is None]
    assert len(roots) == 1, [s.name for s in roots]
    return roots[0]


def kids_of(spans: list[Any], parent: Any) -> list[Any]:
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


def continuations(spans: list[Any], root: Any) -> list[Any]:
    """The continuation spans under `root` (a debug run's segments after its first pause)."""
    found = [s for s in kids_of(spans, root) if s.name.endswith(" (continued)")]
    return sorted(found, key=lambda s: s.start_time)


def node_spans(spans: list[Any], root: Any) -> list[Any]:
    """The node spans under `root` and under its continuations, in step order."""
    parents = [root, *continuations(spans, root)]
    kids = [s for p in parents for s in kids_of(spans, p) if "flowkit.node_id" in s.attributes]
    return sorted(kids, key=lambda s: s.attributes["flowkit.step_index"])


def events(span: Any, name: str) -> list[dict[str, Any]]:
    return [dict(e.attributes) for e in span.events if e.name == name]


def test_a_paused_edited_and_continued_run_is_one_trace_with_its_pause_and_edit(traced):
    ws, memory = traced
    dbg = Debugger(ws)
    end = dbg.start(SHAPES["loop"], RunRequest(Q, kb="test"), ["gen@2?len(drafts) == 1"])
    assert end.status == "paused"
    waiting = spans_of(ws, memory, end.run_id)
    root = root_of(waiting)                   # the root is sent at the pause: no orphans
    assert root.name == "loop" and root.attributes["flowkit.status"] == "paused"
    assert root.status.is_ok and root.attributes["flowkit.steps"] == 4
    assert root.attributes["input.value"] == Q
    assert [s.name for s in node_spans(waiting, root)] == ["ret", "gen", "judge", "ret"]
    dbg.set_value(end.run_id, "question", LONG_QUESTION)
    done = dbg.resume(end.run_id)
    assert done.status == "ok"

    spans = spans_of(ws, memory, end.run_id)
    assert root_of(spans).context == root.context
    (cont,) = continuations(spans, root)      # the resumed segment: under the root
    assert cont.name == "loop (continued)" and cont.attributes["flowkit.status"] == "ok"
    assert cont.attributes["flowkit.run_id"] == end.run_id
    assert cont.attributes["output.value"] == done.answer
    stored = ws.store.get_run(end.run_id)
    assert cont.attributes["flowkit.steps"] == stored.steps
    assert root.start_time <= min(s.start_time for s in spans)
    assert root.end_time <= cont.start_time
    assert all(s.parent.span_id == cont.context.span_id for s in node_spans(spans, root)[4:])
    nodes = node_spans(spans, root)
    real = [s for s in ws.store.steps(end.run_id) if s.operator != "user.edit"]
    assert [(s.name, s.attributes["flowkit.visit"]) for s in nodes] == \
        [(s.node_id, s.visit) for s in real]
    assert len({s.context.span_id for s in spans}) == len(spans)

    paused_at = [s for s in nodes if events(s, "pause")]
    assert [(s.name, s.attributes["flowkit.visit"]) for s in paused_at] == [("gen", 2)]
    pause = events(paused_at[0], "pause")[0]
    assert pause["flowkit.pause.breakpoint"] == "gen@2?len(drafts) == 1"
    assert pause["flowkit.pause.when"] == "before" and pause["flowkit.pause.mode"] == "continue"
    assert pause["flowkit.pause.resumed_at"] >= pause["flowkit.pause.paused_at"]
    assert pause["flowkit.pause.seconds"] == pytest.approx(
        pause["flowkit.pause.resumed_at"] - pause["flowkit.pause.paused_at"], abs=1e-5)

    edit = events(paused_at[0], "memory edit")
    assert len(edit) == 1 and edit[0]["flowkit.edit.keys"] == ("question",)
    key = "flowkit.edit.value.question"
    assert edit[0][key].startswith('"Where was Mara Velt born?') and edit[0][key].endswith("…")
    assert edit[0][full_length_key(key)] == len(LONG_QUESTION) + 2       # as JSON: the quotes
    assert sum(len(events(s, "memory edit")) for s in spans) == 1


def test_each_pause_is_an_event_on_its_own_node_span(traced):
    ws, memory = traced
    dbg = Debugger(ws)
    end = dbg.start(SHAPES["loop"], RunRequest(Q, kb="test"), ["gen"])
    runs = 0
    while end.status == "paused":
        end = dbg.resume(end.run_id, "step" if runs == 0 else "continue")
        runs += 1
    spans = spans_of(ws, memory, end.run_id)
    root = root_of(spans)
    marks = [(s.name, s.attributes["flowkit.visit"], e["flowkit.pause.reason"],
              e["flowkit.pause.mode"])
             for s in node_spans(spans, root) for e in events(s, "pause")]
    assert marks[0] == ("gen", 1, "breakpoint gen", "step")
    assert marks[1][:2] == ("judge", 1) and marks[1][2] == "step"       # the step paused again
    assert len(marks) == runs and runs >= 3


def test_a_run_whose_breakpoint_never_hits_is_sent_as_a_plain_run(traced):
    ws, memory = traced
    end = Debugger(ws).start(SHAPES["linear"], RunRequest(Q, kb="test"), ["gen@5"])
    assert end.status == "ok"
    spans = spans_of(ws, memory, end.run_id)
    root = root_of(spans)
    assert [s.name for s in node_spans(spans, root)] == ["ret", "gen"]
    assert not [e for s in spans for e in s.events if e.name == "pause"]


def test_a_forks_edits_are_an_event_of_its_root_linked_to_the_parent(traced):
    ws, memory = traced
    parent = ws.run(SHAPES["linear"], RunRequest(Q, kb="test"))
    docs = [{"id": "x1", "title": "Mara Velt", "text": "Mara Velt was born on Corren.",
             "score": 1.0}]
    fork = ws.fork(parent.run_id, 1, memory_changes={"documents": docs})
    assert fork.answer.startswith("Corren")
    spans = spans_of(ws, memory, fork.run_id)
    root = root_of(spans)
    assert root.attributes["flowkit.parent_run_id"] == parent.run_id
    assert [link.context.trace_id for link in root.links] == [trace_id_of(parent.run_id)]
    edit = events(root, "memory edit")
    assert len(edit) == 1 and edit[0]["flowkit.edit.keys"] == ("documents",)
    assert edit[0]["flowkit.edit.source"] == "fork"
    assert "born on Corren" in edit[0]["flowkit.edit.value.documents"]
    assert not [s for s in spans if events(s, "memory edit") and s is not root]


def test_a_stored_edit_is_an_event_of_the_next_node_not_a_span(traced):
    ws, _ = traced
    dbg = Debugger(ws)
    end = dbg.start(SHAPES["linear"], RunRequest(Q, kb="test"), ["gen"])
    dbg.set_value(end.run_id, "question", "Where was Mara Velt really born?")
    dbg.resume(end.run_id)
    record = RunRecord.from_stored(ws.store.get_run(end.run_id), ws.store.steps(end.run_id))
    spans = build_spans([record])
    assert sorted(s.name for s in spans if s.parent is not None
                  and s.parent.span_id == root_of(spans).context.span_id) == ["gen", "ret"]
    gen = next(s for s in spans if s.name == "gen")
    edit = events(gen, "memory edit")
    assert edit and edit[0]["flowkit.edit.keys"] == ("question",)
    assert edit[0]["flowkit.edit.value.question"] == '"Where was Mara Velt really born?"'


def test_a_paused_and_continued_run_arrives_in_phoenix_with_its_pause(phoenix, tmp_path):
    from telkit import fake_workspace
    ws = fake_workspace(tmp_path, phoenix.url, llm())
    ws.resources._kbs["test"] = MemoryKB("test", DOCS)
    try:
        dbg = Debugger(ws)
        end = dbg.start(SHAPES["loop"], RunRequest(Q, kb="test"), ["gen@2"])
        assert end.status == "paused"
        dbg.set_value(end.run_id, "question", "Where was Mara Velt born, again?")
        assert dbg.resume(end.run_id).status == "ok"
        live = ws.telemetry.live(ws.resources.settings.telemetry)
        assert live is not None and live.flush(30)
        real = [s for s in ws.store.steps(end.run_id) if s.operator != "user.edit"]
        count = 2 + len(real) + sum(len(s.llm_calls) + len(s.retrievals) for s in real)
        roots = phoenix.wait_for(1, attribute=f"flowkit.run_id:{end.run_id}", parent_id="null")
        assert len(roots) == 1, phoenix.log.read_text()[-1500:]
        spans = phoenix.wait_for(count, trace_id=roots[0]["context"]["trace_id"])
        assert len(spans) == count
        marked = [(s["name"], s["attributes"]["flowkit.visit"], e)
                  for s in spans for e in s.get("events") or [] if e["name"] == "pause"]
        assert [(n, v) for n, v, _ in marked] == [("gen", 2)]
        attrs = marked[0][2]["attributes"]
        assert attrs["flowkit.pause.breakpoint"] == "gen@2"
        assert attrs["flowkit.pause.seconds"] >= 0
        edits = [e for s in spans for e in s.get("events") or [] if e["name"] == "memory edit"]
        assert len(edits) == 1 and edits[0]["attributes"]["flowkit.edit.keys"] == ["question"]
        (cont,) = [s for s in spans if s["parent_id"] == roots[0]["context"]["span_id"]
                   and s["name"] == "loop (continued)"]
        assert roots[0]["attributes"]["flowkit.status"] == "paused"
        assert cont["attributes"]["flowkit.status"] == "ok"
        assert cont["attributes"]["output.value"] == ws.store.get_run(end.run_id).record.answer
    finally:
        ws.close()


def test_an_aborted_paused_run_ends_in_a_cancelled_continuation_under_its_root(traced):
    ws, memory = traced
    dbg = Debugger(ws)
    end = dbg.start(SHAPES["loop"], RunRequest(Q, kb="test"), ["gen@2"])
    dbg.abort(end.run_id, "tester")
    spans = spans_of(ws, memory, end.run_id)
    root = root_of(spans)
    assert root.attributes["flowkit.status"] == "paused"
    (cont,) = continuations(spans, root)
    assert cont.attributes["flowkit.status"] == "cancelled" and not cont.status.is_ok
    assert cont.attributes["flowkit.steps"] == ws.store.get_run(end.run_id).steps == 4
    assert [s.name for s in node_spans(spans, root)] == ["ret", "gen", "judge", "ret"]
    assert not kids_of(spans, cont)


def test_pauses_are_stored_and_sent_after_the_fact_as_the_same_events(traced):
    from service.telemetry import record_of
    ws, memory = traced
    dbg = Debugger(ws)
    end = dbg.start(SHAPES["loop"], RunRequest(Q, kb="test"), ["gen@2", "judge@3?len(drafts) >= 1"])
    dbg.set_value(end.run_id, "question", "Where was Mara Velt born, again?")
    end = dbg.resume(end.run_id, "step")              # pauses once more, before the judge
    assert end.status == "paused"
    end = dbg.resume(end.run_id)
    while end.status == "paused":
        end = dbg.resume(end.run_id)
    live = spans_of(ws, memory, end.run_id)
    sent = build_spans([record_of(ws, end.run_id)])

    def marks(spans: list[Any]) -> list[tuple[str, int, dict[str, Any]]]:
        return sorted((s.name, s.attributes.get("flowkit.visit", 0), e)
                      for s in spans for e in events(s, "pause"))
    assert len(marks(live)) == dbg.show(end.run_id).pauses >= 3
    assert marks(sent) == marks(live)                    # same spans, same attributes
    steps = ws.store.steps(end.run_id)                   # replay's steps: node visits and edits
    assert [s.operator for s in steps if s.node_id.startswith("_") and s.node_id != "_finish"] \
        == ["user.edit"]
    history = dbg.repo.get(end.run_id).history
    assert [(h["node"], h["visit"], h["mode"]) for h in history][:2] == [("gen", 2, "step"),
                                                                         ("judge", 2, "continue")]


def test_a_paused_run_sent_now_carries_its_pause_still_open(traced):
    from service.telemetry import record_of
    ws, _ = traced
    dbg = Debugger(ws)
    end = dbg.start(SHAPES["loop"], RunRequest(Q, kb="test"), ["gen@2"])
    spans = build_spans([record_of(ws, end.run_id)])
    root = root_of(spans)
    (mark,) = events(root, "pause")                  # the node it waits at has not run: the root
    assert (mark["flowkit.pause.node"], mark["flowkit.pause.visit"]) == ("gen", 2)
    assert mark["flowkit.pause.mode"] == "still paused" and "flowkit.pause.seconds" not in mark
    assert mark["flowkit.pause.breakpoint"] == "gen@2"


def test_an_aborted_runs_last_pause_is_on_its_root_live_and_after_the_fact(traced):
    from service.telemetry import record_of
    ws, memory = traced
    dbg = Debugger(ws)
    end = dbg.start(SHAPES["loop"], RunRequest(Q, kb="test"), ["gen@2"])
    dbg.abort(end.run_id, "tester")
    for spans in (spans_of(ws, memory, end.run_id), build_spans([record_of(ws, end.run_id)])):
        root = root_of(spans)
        (mark,) = [e for s in spans for e in events(s, "pause")]
        holder = (continuations(spans, root) or [root])[-1]  # live: the abort's continuation
        assert mark in events(holder, "pause")
        assert mark["flowkit.pause.mode"] == "abort" and mark["flowkit.pause.seconds"] >= 0
