"""Helpers of the debug tests: flows of each topology shape, a scripted model, a debugged run
driven to its end, and a Workspace whose model is a FakeLLM and whose knowledge base is in memory."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from flowkit import ListSink, compile_flow, run_flow
from flowkit.breakpoints import check_breakpoints
from flowkit.debug import Pause, hook_for, read_pause
from flowkit.run_request import Resume, RunHooks, RunRequest
from flowkit.testing import FakeLLM, MemoryKB, flow
from flowkit.trace import RunEnd
from service.workspace import Workspace

Q = "Where was Mara Velt born?"
DOCS = [
    {"id": "d1", "title": "Corren Lighthouse", "text": "The Corren Lighthouse was designed by Mara Velt."},
    {"id": "d2", "title": "Mara Velt", "text": "Mara Velt was born on the island of Tessel."},
    {"id": "d3", "title": "Tessel", "text": "Tessel holds a lantern festival every November."},
]


def answer_from_passages(prompt: str) -> str:
    """The scripted model answers from the passages it is shown: 'Corren' when they say Corren."""
    return "Corren [1]" if "born on Corren" in prompt else "Tessel [1]"


def llm() -> FakeLLM:
    return FakeLLM([(r"Question:", answer_from_passages)])


SHAPES = {
    "linear": flow("linear", [("ret", "retrieval.bm25", {"top_k": 2}), ("gen", "generation.answer")],
                   ["ret>gen"]),
    "router": flow("router", [
        ("route", "orchestration.keyword_router",
         {"routes": {"retrieve": ["born", "where"]}, "default": "direct"}),
        ("ret", "retrieval.bm25", {"top_k": 2}),
        ("gen", "generation.answer"),
        ("closed", "generation.answer", {"max_tokens": 8}),
    ], ["route>ret:retrieve", "route>closed:direct", "ret>gen"]),
    "loop": flow("loop", [
        ("ret", "retrieval.bm25", {"top_k": 2, "add_last_answer": True}),
        ("gen", "generation.answer"),
        ("judge", "orchestration.rule_judge", {"max_rounds": 3}),
        ("final", "generation.answer", {"max_tokens": 16}),
    ], ["ret>gen", "gen>judge", "judge>ret:continue", "judge>final:done"], entry="ret"),
    "fan": flow("fan", [
        ("fanout", "retrieval.bm25", {"top_k": 1}),
        ("bm25", "retrieval.bm25", {"top_k": 2}),
        ("dense", "retrieval.dense", {"top_k": 3}),
        ("merge", "orchestration.rrf", {"top_k": 3}),
        ("gen", "generation.answer"),
    ], ["fanout>bm25", "fanout>dense", "bm25>merge", "dense>merge", "merge>gen"]),
}


def drive(compiled: Any, res: Any, bps: list[Any], modes: list[str] | None = None,
          question: str = Q, kb: str = "test") -> tuple[RunEnd, ListSink, list[Pause]]:
    """Run with breakpoints and go on from every pause (with `modes` in turn, then continue)
    until the run ends; every segment writes to one sink, as the store does. Each continue goes
    on from the pause LangGraph's checkpointer holds (which must be the one the hook saw)."""
    checked = check_breakpoints(compiled, bps)
    sink = ListSink()
    saver = InMemorySaver()
    hook = hook_for(compiled, checked, checkpointer=saver)
    end = run_flow(compiled, res, RunRequest(question, kb=kb), RunHooks(sink=sink, debug=hook))
    pauses: list[Pause] = []
    todo = list(modes or [])
    while end.status == "paused":
        assert hook.paused is not None
        stored = read_pause(compiled, saver, end.run_id)
        assert stored is not None and stored.to_dict() == hook.paused.to_dict()
        pauses.append(stored)
        hook = hook_for(compiled, checked, todo.pop(0) if todo else "continue", resume=stored,
                        checkpointer=saver)
        end = run_flow(compiled, res, RunRequest(question, kb=kb, run_id=end.run_id,
                                                 start=Resume()),
                       RunHooks(sink=sink, debug=hook))
        assert len(pauses) < 100
    assert read_pause(compiled, saver, end.run_id) is None and not list(saver.list(None))
    return end, sink, pauses


def straight(compiled: Any, res: Any, question: str = Q, kb: str = "test"
             ) -> tuple[RunEnd, ListSink]:
    sink = ListSink()
    return run_flow(compiled, res, RunRequest(question, kb=kb), RunHooks(sink=sink)), sink


def compiled(name: str) -> Any:
    return compile_flow(SHAPES[name])


def make_workspace(data_dir: Path, model: FakeLLM | None = None) -> Workspace:
    ws = Workspace(data_dir)
    ws.resources.set_llm(model or llm())
    ws.resources._kbs["test"] = MemoryKB("test", DOCS)
    return ws
