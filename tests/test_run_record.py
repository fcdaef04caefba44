"""One run record (issue 49, item 1): `run_flow`, `Workspace.run` and `run_evaluation` take a
request, a start whose kinds exclude each other by type, and hooks; no keyword grows per feature,
and what the nodes need travels in LangGraph's run context, not in `configurable`. And a finished
run is described once (item 5): `flowkit.run_record.FinishedRun`, which the other shapes hold or
derive."""
from __future__ import annotations

import ast
import inspect
from dataclasses import replace
from pathlib import Path

import pytest

from flowkit import compile_flow, run_flow, templates
from flowkit.errors import FlowkitError
from flowkit.eval.runner import run_evaluation
from flowkit.eval.strategy import InFlight, RayWorkers, Serial, strategy_for
from flowkit.run_record import FinishedRun
from flowkit.run_request import Fork, Fresh, Resume, RunHooks, RunRequest
from flowkit.testing import FakeLLM, fake_resources
from flowkit.trace import ListSink
from service import evaluations
from service.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
Q = "Who designed the Corren Lighthouse?"


@pytest.mark.parametrize("fn", [run_flow, Workspace.run, run_evaluation, evaluations.run])
def test_the_run_paths_take_at_most_four_parameters_and_no_kwargs(fn):
    params = inspect.signature(fn).parameters.values()
    assert len(params) <= 4, [p.name for p in params]
    assert not [p for p in params if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]


@pytest.mark.parametrize("method", ["start", "resume"])
def test_the_debugger_takes_the_run_records_not_their_fields_as_keywords(method):
    """A debugged run is asked like any run: `Debugger.start` takes a RunRequest, both take
    RunHooks; no parameter repeats a field of either (`resume`'s `run_id` is the paused run)."""
    from dataclasses import fields

    from service.debug import Debugger
    params = inspect.signature(getattr(Debugger, method)).parameters
    records = {f.name for f in (*fields(RunRequest), *fields(RunHooks))} | {"extra_sink"}
    if method == "resume":
        records.discard("run_id")           # the paused run it goes on with, not a new run's id
    assert not set(params) & records, set(params) & records
    assert not [p for p in params.values() if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    wanted = {"request", "hooks"} if method == "start" else {"hooks"}
    assert wanted <= set(params)


def test_no_configurable_key_of_flowkits_own_in_the_engine():
    """The engine's run state is LangGraph's run context; `configurable` holds LangGraph's own
    `thread_id` only (the exported package's documented `kb` is its users' own setting)."""
    keys: set[str] = set()
    for path in [*(ROOT / "flowkit").rglob("*.py"), *(ROOT / "service").rglob("*.py")]:
        if "export" in path.parts:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict) and any(
                    isinstance(k, ast.Constant) and k.value == "configurable" for k in node.keys):
                inner = node.values[[getattr(k, "value", None) for k in node.keys].index("configurable")]
                if isinstance(inner, ast.Dict):
                    keys |= {k.value for k in inner.keys if isinstance(k, ast.Constant)}
    assert keys <= {"thread_id", "checkpoint_ns"}, keys


def _flow():
    return compile_flow(templates.load_template("naive_rag"))


def _llm():
    return FakeLLM([], default="Mara Velt [d1]")


def test_a_fresh_request_runs_from_the_entry_and_records_no_parent():
    sink = ListSink()
    end = run_flow(_flow(), fake_resources(_llm()), RunRequest(Q, kb="test"), RunHooks(sink=sink))
    assert end.status == "ok" and sink.run is not None
    assert sink.run.parent_run_id is None and sink.run.parent_step is None
    assert sink.steps[0].node_id == "retrieve"


def test_a_fork_starts_at_its_node_with_its_memory_and_records_its_parent():
    sink = ListSink()
    fork = Fork(node="generate", parent_run_id="p1", parent_step=1,
                memory={"documents": [{"id": "d9", "title": "T", "text": "Ada built it."}]})
    end = run_flow(_flow(), fake_resources(_llm()), RunRequest(Q, kb="test", start=fork),
                   RunHooks(sink=sink))
    assert end.status == "ok"
    assert [s.node_id for s in sink.steps][0] == "generate"
    assert sink.steps[0].memory_before["documents"][0]["id"] == "d9"
    assert (sink.run.parent_run_id, sink.run.parent_step) == ("p1", 1)


def test_a_fork_at_a_node_the_flow_lacks_is_refused_before_anything_runs():
    sink = ListSink()
    with pytest.raises(FlowkitError, match="no such node"):
        run_flow(_flow(), fake_resources(_llm()),
                 RunRequest(Q, kb="test", start=Fork("nowhere", "p1", 0)), RunHooks(sink=sink))
    assert sink.run is None and not sink.steps


def test_a_resume_without_the_hook_that_holds_its_pause_is_refused():
    with pytest.raises(FlowkitError, match="resumed run needs the debug hook"):
        run_flow(_flow(), fake_resources(_llm()), RunRequest(Q, kb="test", start=Resume()))


def test_start_kinds_are_types_and_exclude_each_other():
    kinds = [Fresh(), Fork("n", "p", 0), Resume()]
    assert len({type(k) for k in kinds}) == 3
    assert RunRequest(Q).parent_run_id is None
    assert RunRequest(Q, start=Fork("n", "p", 2)).parent_step == 2


def test_the_cli_strategy_is_one_value():
    assert strategy_for() == Serial()
    assert strategy_for(concurrency=3) == InFlight(3)
    assert isinstance(strategy_for(workers=2, make_workspace=dict), RayWorkers)
    with pytest.raises(FlowkitError, match="choose one"):
        strategy_for(workers=2, concurrency=2, make_workspace=dict)
    with pytest.raises(FlowkitError, match="workspace factory"):
        strategy_for(workers=2)
    with pytest.raises(FlowkitError, match="--concurrency must be a whole number"):
        InFlight(0)


# A finished run is described once (issue 49, item 5): flowkit.run_record.FinishedRun. The engine's
# two events join into it, storage's RunInfo and telemetry's RunRecord hold one.

#: fields that say what ran, and fields that say how it ended: a class that declares two of each
#: describes a finished run whole, and that is FinishedRun's job
WHAT_RAN = {"flow_name", "question", "kb", "model_id", "model_hash", "parent_run_id"}
HOW_IT_ENDED = {"status", "answer", "citations", "error", "halt_reason"}
#: classes left with their own copy of the fields, each with why; remove an entry once it holds
#: (or is) a FinishedRun
KNOWN_RUN_COPIES: dict[str, str] = {}


def _declared(node: ast.ClassDef) -> set[str]:
    """The fields a class declares; a table's columns (`Mapped[...]`: the saved form) are not."""
    return {s.target.id for s in node.body
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            and not (isinstance(s.annotation, ast.Subscript)
                     and getattr(s.annotation.value, "id", None) == "Mapped")}


def _run_descriptions() -> list[str]:
    found = []
    for package in ("flowkit", "service", "storage", "studio", "pages"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if isinstance(node, ast.ClassDef):
                    names = _declared(node)
                    if len(names & WHAT_RAN) >= 2 and len(names & HOW_IT_ENDED) >= 2:
                        found.append(f"{path.relative_to(ROOT).as_posix()}:{node.name}")
    return found


def test_a_finished_run_is_described_by_finished_run_alone():
    found = _run_descriptions()
    assert "flowkit/run_record.py:FinishedRun" in found
    extra = set(found) - {"flowkit/run_record.py:FinishedRun"} - set(KNOWN_RUN_COPIES)
    assert not extra, f"a finished run described again (hold a flowkit.run_record.FinishedRun): {extra}"
    assert set(KNOWN_RUN_COPIES) <= set(found), "a known copy is gone: remove its entry"


def test_telemetrys_record_holds_the_finished_run_and_adds_only_its_own():
    from flowkit.telemetry.record import RunRecord
    own = set(RunRecord.__dataclass_fields__)
    assert "run" in own and not own & (WHAT_RAN | HOW_IT_ENDED | set(FinishedRun.__dataclass_fields__))


def test_a_live_run_and_its_stored_copy_are_the_same_finished_run(tmp_path):
    from flowkit.runtime.resources import Settings
    from flowkit.telemetry.record import RunRecord
    from flowkit.testing.fakes import MemoryKB
    ws = Workspace(tmp_path, Settings())
    ws.resources.set_llm(_llm())
    kb: MemoryKB = fake_resources().kbs["test"]
    ws.resources._kbs["test"] = kb
    sink = ListSink()
    end = ws.run(templates.load_template("naive_rag"), RunRequest(Q, kb="test"), RunHooks(sink=sink))
    assert end.status == "ok" and sink.run is not None and sink.result is not None
    live = FinishedRun.of_live(sink.run, sink.result)
    stored = ws.store.get_run(end.run_id).finished()
    times = {"started_at": 0.0, "ended_at": 0.0}
    assert replace(live, **times) == replace(stored, **times)
    assert abs(live.started_at - stored.started_at) < 1e-3
    assert RunRecord.from_stored(ws.store.get_run(end.run_id), []).run == replace(
        stored, ended_at=max(stored.ended_at, stored.started_at))


def test_the_evaluation_scores_a_stored_run_by_its_finished_run():
    """The eval runner reads a stored run through `finished()` only (flowkit.run_record.StoredRun)."""
    from flowkit.cost import Cost
    from flowkit.eval.runner import EvalPlan, FlowEntry, collect_results

    class Stored:
        def finished(self) -> FinishedRun:
            return FinishedRun("e1-0-0", "naive_rag", None, Q, "Mara Velt", "ok", 1.0, 2.5,
                               cost=Cost(2, 1, 40, 1500.0), error=None)

    flow = FlowEntry("naive_rag", templates.load_template("naive_rag"), label="naive")
    plan = EvalPlan("e1", "n", "d", "test", [flow], [{"id": "q1", "question": Q,
                                                      "answers": ["Mara Velt"]}])
    [row] = collect_results(plan, [Stored()], {})["naive"]
    assert (row.run_id, row.prediction, row.status, row.em) == ("e1-0-0", "Mara Velt", "ok", 1.0)
    assert (row.llm_calls, row.tokens, row.seconds) == (2, 40, 1.5)
